#include "passes/sink_transposes.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using Perm = std::vector<int64_t>;

// A value that is transpose(source, perm).
struct Transposed {
  ValueId source = -1;
  Perm perm;
};

Perm Inverse(const Perm& perm) {
  Perm inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return inverse;
}

// transpose(transpose(x, first), second) == transpose(x, Compose(first, second)).
Perm Compose(const Perm& first, const Perm& second) {
  Perm composed(second.size());
  for (size_t i = 0; i < second.size(); ++i) composed[i] = first[second[i]];
  return composed;
}

bool IsIdentity(const Perm& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// The shape of transpose(x, perm) for x of `shape`.
Shape Permuted(const Shape& shape, const Perm& perm) {
  Shape permuted(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) permuted[i] = shape[perm[i]];
  return permuted;
}

// An operand this many times smaller than an op's result may be read
// through a transposed view wherever the op runs.
constexpr int64_t kSmallOperand = 16;

// Whether at most one of the dims of `shape` is not 1: a vector along one
// dim, which a transpose only reshapes.
bool IsVectorLike(const Shape& shape) {
  return std::count_if(shape.begin(), shape.end(), [](int64_t d) { return d != 1; }) <= 1;
}

// Axis `axis` of a value of `rank` (negative counts from the end), or -1
// where it is out of range.
int64_t NormalizedAxis(int64_t axis, int64_t rank) {
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

class Sinker {
 public:
  explicit Sinker(Graph& graph) : graph_(graph), registry_(OpRegistry::Global()) {
    for (const Node& node : graph.nodes()) names_.insert(node.name);
    outputs_.insert(graph.outputs().begin(), graph.outputs().end());
  }

  absl::StatusOr<bool> Run() {
    const size_t num_nodes = graph_.nodes().size();
    for (size_t i = 0; i < num_nodes; ++i) {
      Node node = std::move(graph_.mutable_node(i));
      for (ValueId& input : node.inputs) input = Resolve(input);
      if (!Sink(node)) out_.push_back(std::move(node));
    }
    if (!changed_) {
      // Nothing moved: put the nodes back as they were.
      for (size_t i = 0; i < num_nodes; ++i) graph_.mutable_node(i) = std::move(out_[i]);
      return false;
    }
    graph_.ReplaceNodes(std::move(out_));
    LOOM_RETURN_IF_ERROR(InferShapes(graph_));
    return true;
  }

 private:
  // Handles `node` (its inputs resolved): false where it stays as it is,
  // for the caller to append.
  bool Sink(Node& node) {
    if (node.op == "transpose") return Transpose(node);
    const OpDef* def = registry_.Find(node.op);
    if (def == nullptr || node.outputs.size() != 1) return false;
    if (def->pattern == OpPattern::kElementwise || def->pattern == OpPattern::kBroadcast) {
      return Pointwise(node);
    }
    if (node.op == "pad") return Pad(node);
    if (node.op == "slice") return Slice(node);
    if (node.op == "concat") return Concat(node);
    if (def->pattern == OpPattern::kReduction) return Reduction(node);
    return false;
  }

  // Records a transpose, or merges it into the transpose it reads.
  bool Transpose(Node& node) {
    const ValueId input = node.inputs[0], output = node.outputs[0];
    Perm perm = node.attrs.GetInts("perm");
    if (!node.attrs.Has("perm")) {
      for (int64_t d = Rank(input) - 1; d >= 0; --d) perm.push_back(d);
    }
    const Transposed* inner = Find(input);
    if (inner == nullptr) {
      transposed_[output] = {input, std::move(perm)};
      return false;
    }
    const Transposed merged = {inner->source, Compose(inner->perm, perm)};
    changed_ = true;
    if (IsIdentity(merged.perm) && !outputs_.contains(output)) {
      replaced_[output] = merged.source;
      return true;
    }
    node.inputs[0] = merged.source;
    node.attrs.Set("perm", AttrInts(merged.perm));
    transposed_[output] = merged;
    return false;
  }

  // An elementwise or broadcasting op on the sources of its transposed
  // operands.
  bool Pointwise(Node& node) {
    if (node.attrs.Has("axis") || node.attrs.Has("axes")) return false;
    const int64_t rank = Rank(node.outputs[0]);
    const Perm* perm = nullptr;
    for (ValueId input : node.inputs) {
      const Transposed* t = Find(input);
      if (t != nullptr && static_cast<int64_t>(t->perm.size()) == rank) {
        perm = &t->perm;
        break;
      }
    }
    if (perm == nullptr) return false;
    const Perm p = *perm, inverse = Inverse(p);
    const int64_t output_elements = NumElements(graph_.value(node.outputs[0]).type.shape);
    // Each operand: the source, itself (one element), or a view of it
    // transposed by the inverse: a vector, a weight, or a tensor at most
    // 1 / kSmallOperand of the result (a squeeze-excite's scales over a
    // batch). Others (a full tensor computed in the old layout) keep the op
    // where it is, which would otherwise read that tensor across its rows.
    for (ValueId input : node.inputs) {
      const Transposed* t = Find(input);
      const Shape& shape = graph_.value(input).type.shape;
      const bool same = t != nullptr && t->perm == p;
      const bool movable = static_cast<int64_t>(shape.size()) <= rank &&
                           (IsVectorLike(shape) || graph_.HasInitializer(input) ||
                            NumElements(shape) * kSmallOperand <= output_elements);
      if (!same && !movable) return false;
    }
    ValueIds inputs;
    for (ValueId input : node.inputs) {
      const Transposed* t = Find(input);
      const Shape& shape = graph_.value(input).type.shape;
      if (t != nullptr && t->perm == p) {
        inputs.push_back(t->source);
      } else if (NumElements(shape) == 1) {
        inputs.push_back(input);
      } else {
        inputs.push_back(TransposedOperand(node.name, input, rank, inverse));
      }
    }
    node.inputs = std::move(inputs);
    Replace(node, p);
    return true;
  }

  // pad of a transposed value: on its source, the pads permuted.
  bool Pad(Node& node) {
    const Transposed* t = node.inputs.size() == 1 ? Find(node.inputs[0]) : nullptr;
    if (t == nullptr) return false;
    const int64_t rank = static_cast<int64_t>(t->perm.size());
    const std::vector<int64_t> pads = node.attrs.GetInts("pads");
    if (static_cast<int64_t>(pads.size()) != 2 * rank) return false;
    std::vector<int64_t> permuted(pads.size());
    for (int64_t i = 0; i < rank; ++i) {
      permuted[t->perm[i]] = pads[i];
      permuted[rank + t->perm[i]] = pads[rank + i];
    }
    const Perm p = t->perm;
    node.inputs[0] = t->source;
    node.attrs.Set("pads", AttrInts(permuted));
    Replace(node, p);
    return true;
  }

  // slice of a transposed value: on its source, along the axes its axes
  // are there.
  bool Slice(Node& node) {
    const Transposed* t = node.inputs.size() == 1 ? Find(node.inputs[0]) : nullptr;
    if (t == nullptr) return false;
    const Perm p = t->perm;
    const int64_t rank = static_cast<int64_t>(p.size());
    std::vector<int64_t> axes = node.attrs.GetInts("axes");
    if (!node.attrs.Has("axes")) {
      for (size_t a = 0; a < node.attrs.GetInts("starts").size(); ++a) axes.push_back(a);
    }
    for (int64_t& axis : axes) {
      const int64_t a = NormalizedAxis(axis, rank);
      if (a < 0) return false;
      axis = p[a];
    }
    node.inputs[0] = t->source;
    node.attrs.Set("axes", AttrInts(axes));
    Replace(node, p);
    return true;
  }

  // concat of values all transposed alike: on their sources, along the
  // axis that the concat's axis is there.
  bool Concat(Node& node) {
    const Transposed* first = node.inputs.empty() ? nullptr : Find(node.inputs[0]);
    if (first == nullptr) return false;
    const Perm p = first->perm;
    const int64_t axis =
        NormalizedAxis(node.attrs.GetInt("axis", 0), static_cast<int64_t>(p.size()));
    if (axis < 0) return false;
    ValueIds sources;
    for (ValueId input : node.inputs) {
      const Transposed* t = Find(input);
      if (t == nullptr || t->perm != p) return false;
      sources.push_back(t->source);
    }
    node.inputs = std::move(sources);
    node.attrs.Set("axis", p[axis]);
    Replace(node, p);
    return true;
  }

  // A reduction of a transposed value over listed axes: on its source, over
  // those axes there. Without keepdims the dims left keep their order
  // where the source has them in the same order, and are transposed back
  // otherwise.
  bool Reduction(Node& node) {
    const Transposed* t = node.inputs.size() == 1 ? Find(node.inputs[0]) : nullptr;
    if (t == nullptr || !node.attrs.Has("axes")) return false;
    const Perm p = t->perm;
    const int64_t rank = static_cast<int64_t>(p.size());
    std::vector<bool> reduced(rank, false);
    for (int64_t axis : node.attrs.GetInts("axes")) {
      const int64_t a = NormalizedAxis(axis, rank);
      if (a < 0) return false;
      reduced[a] = true;
    }
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < rank; ++a) {
      if (reduced[a]) axes.push_back(p[a]);
    }
    std::sort(axes.begin(), axes.end());
    node.inputs[0] = t->source;
    node.attrs.Set("axes", AttrInts(axes));
    if (node.attrs.GetInt("keepdims", 0) != 0) {  // the reductions' default (ir/ops)
      Replace(node, p);
      return true;
    }
    // The source dims left, in the output's order and in their own.
    std::vector<int64_t> left;
    for (int64_t a = 0; a < rank; ++a) {
      if (!reduced[a]) left.push_back(p[a]);
    }
    std::vector<int64_t> sorted = left;
    std::sort(sorted.begin(), sorted.end());
    changed_ = true;
    if (left == sorted) {
      out_.push_back(std::move(node));
      return true;
    }
    Perm back(left.size());
    for (size_t k = 0; k < left.size(); ++k) {
      back[k] = std::find(sorted.begin(), sorted.end(), left[k]) - sorted.begin();
    }
    Replace(node, back);
    return true;
  }

  // Appends `node` writing a fresh value (its output's shape transposed by
  // p's inverse) and the transpose of that by p into its output.
  void Replace(Node& node, const Perm& p) {
    const ValueId output = node.outputs[0];
    const TensorType& type = graph_.value(output).type;
    const ValueId moved =
        graph_.AddIntermediate(absl::StrCat(graph_.value(output).name, "/sunk"),
                               TensorType{type.dtype, Permuted(type.shape, Inverse(p))});
    const std::string name = node.name;
    node.outputs[0] = moved;
    node.name = UniqueName(absl::StrCat(name, "/sunk"));
    out_.push_back(std::move(node));
    Attrs attrs;
    attrs.Set("perm", AttrInts(p));
    out_.push_back(Node{UniqueName(name), "transpose", {moved}, {output}, std::move(attrs)});
    transposed_[output] = {moved, p};
    changed_ = true;
  }

  // `input` (of rank `rank` or less) as an operand of the op moved past a
  // transpose: reshaped to `rank` dims, then transposed by `inverse`.
  ValueId TransposedOperand(absl::string_view node_name, ValueId input, int64_t rank,
                            const Perm& inverse) {
    const TensorType type = graph_.value(input).type;
    ValueId operand = input;
    Shape shape = type.shape;
    if (static_cast<int64_t>(shape.size()) < rank) {
      shape.insert(shape.begin(), rank - shape.size(), 1);
      operand = Emit(node_name, "reshape", operand, TensorType{type.dtype, shape}, "shape",
                     AttrInts(shape));
    }
    return Emit(node_name, "transpose", operand, TensorType{type.dtype, Permuted(shape, inverse)},
                "perm", AttrInts(inverse));
  }

  // Appends `op` of `input` with one ints attribute; returns its new value.
  ValueId Emit(absl::string_view node_name, OpName op, ValueId input, TensorType type,
               AttrName attr, AttrInts value) {
    const ValueId output = graph_.AddIntermediate(
        absl::StrCat(graph_.value(input).name, "/", absl::string_view(op)), std::move(type));
    Attrs attrs;
    attrs.Set(attr, std::move(value));
    out_.push_back(Node{UniqueName(absl::StrCat(node_name, "/", absl::string_view(op))),
                        op,
                        {input},
                        {output},
                        std::move(attrs)});
    return output;
  }

  std::string UniqueName(std::string base) {
    if (names_.insert(base).second) return base;
    for (int k = 1;; ++k) {
      std::string name = absl::StrCat(base, ".", k);
      if (names_.insert(name).second) return name;
    }
  }

  ValueId Resolve(ValueId value) const {
    const auto it = replaced_.find(value);
    return it == replaced_.end() ? value : it->second;
  }
  const Transposed* Find(ValueId value) const {
    const auto it = transposed_.find(value);
    return it == transposed_.end() ? nullptr : &it->second;
  }
  int64_t Rank(ValueId value) const {
    return static_cast<int64_t>(graph_.value(value).type.shape.size());
  }

  Graph& graph_;
  const OpRegistry& registry_;
  NodeList out_;
  absl::flat_hash_set<std::string> names_;
  absl::flat_hash_set<ValueId> outputs_;
  absl::flat_hash_map<ValueId, Transposed> transposed_;
  absl::flat_hash_map<ValueId, ValueId> replaced_;
  bool changed_ = false;
};

}  // namespace

absl::StatusOr<bool> SinkTransposesPass::Run(Module& module) {
  const Graph& graph = module.graph;
  const bool any = std::any_of(graph.nodes().begin(), graph.nodes().end(),
                               [](const Node& node) { return node.op == "transpose"; });
  if (!any) return false;
  return Sinker(module.graph).Run();
}

LOOM_REGISTER_PASS("sink-transposes", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<SinkTransposesPass>());
});

}  // namespace loom
