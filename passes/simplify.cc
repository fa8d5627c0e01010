#include "passes/simplify.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/lazy_tensor.h"
#include "ir/op_registry.h"
#include "ir/parallel.h"
#include "ir/shared_weights.h"
#include "ir/status_macros.h"
#include "passes/lower.h"

namespace loom {
namespace {

// Doubles compare and hash by their bits: exact, and NaN payloads stay
// distinct (as do 0.0 and -0.0).
uint64_t Bits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

size_t HashAttr(absl::string_view name, const AttrValue& value) {
  size_t hash = absl::HashOf(name, value.index());
  std::visit(
      [&hash](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          hash = absl::HashOf(hash, Bits(v));
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          for (double x : v) hash = absl::HashOf(hash, Bits(x));
        } else {
          hash = absl::HashOf(hash, v);
        }
      },
      value);
  return hash;
}

bool SameAttr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    return Bits(*x) == Bits(std::get<double>(b));
  }
  if (const auto* x = std::get_if<std::vector<double>>(&a)) {
    const auto& y = std::get<std::vector<double>>(b);
    return std::equal(x->begin(), x->end(), y.begin(), y.end(),
                      [](double p, double q) { return Bits(p) == Bits(q); });
  }
  return a == b;
}

// Nodes compute the same when they have the same op, output count, inputs
// in order (after earlier replacements) and attributes, by name whatever
// order they were set in (a node sets each name once).
size_t CseHash(const Node& node) {
  // Attributes combine by a sum, which does not depend on their order.
  size_t attrs = 0;
  for (const auto& [name, value] : node.attrs.entries()) {
    attrs += HashAttr(name, value);
  }
  return absl::HashOf(node.op, node.outputs.size(), node.inputs, attrs);
}

bool SameComputation(const Node& a, const Node& b) {
  if (a.op != b.op || a.outputs.size() != b.outputs.size() || a.inputs != b.inputs ||
      a.attrs.entries().size() != b.attrs.entries().size()) {
    return false;
  }
  for (const auto& [name, value] : a.attrs.entries()) {
    const AttrValue* other = b.attrs.Find(name);
    if (other == nullptr || !SameAttr(value, *other)) return false;
  }
  return true;
}

// Finds, for each node in turn, the first earlier node that computes the
// same. Two such nodes read the same inputs, so a node is only compared with
// the earlier nodes whose last input (by value id) is its own: they are
// linked in a list per value, usually short and recently touched. The nodes
// of a value that ends many lists (a weight every step reads, say) move to a
// hash set instead, so that no list grows long.
class CseTable {
 public:
  explicit CseTable(const Graph& graph)
      : graph_(graph),
        next_(graph.nodes().size(), kNoNode),
        head_(graph.values().size(), kNoNode),
        length_(graph.values().size(), 0),
        hashed_(0, EntryHash(), EntryEq{&graph}) {}

  // The id of the first node computing what `id` computes, or `id` itself
  // when it is the first (and then it is remembered).
  NodeId FindOrAdd(NodeId id) {
    const Node& node = graph_.node(id);
    if (node.inputs.empty()) return FindOrAddHashed(id);
    const ValueId last = *std::max_element(node.inputs.begin(), node.inputs.end());
    if (length_[last] > kMaxListLength) return FindOrAddHashed(id);
    for (NodeId other = head_[last]; other != kNoNode; other = next_[other]) {
      if (SameComputation(graph_.node(other), node)) return other;
    }
    next_[id] = head_[last];
    head_[last] = id;
    if (++length_[last] > kMaxListLength) {
      for (NodeId other = head_[last]; other != kNoNode; other = next_[other]) {
        FindOrAddHashed(other);
      }
    }
    return id;
  }

 private:
  static constexpr uint8_t kMaxListLength = 8;

  NodeId FindOrAddHashed(NodeId id) {
    return hashed_.insert({CseHash(graph_.node(id)), id}).first->id;
  }

  // A node of `hashed_` with its CseHash, computed once.
  struct Entry {
    size_t hash;
    NodeId id;
  };
  struct EntryHash {
    size_t operator()(const Entry& e) const { return e.hash; }
  };
  struct EntryEq {
    const Graph* graph;
    bool operator()(const Entry& a, const Entry& b) const {
      return a.id == b.id ||
             (a.hash == b.hash && SameComputation(graph->node(a.id), graph->node(b.id)));
    }
  };

  const Graph& graph_;
  // The list of value v: head_[v], next_[head_[v]], ... (most recent first).
  std::vector<NodeId> next_;
  std::vector<NodeId> head_;
  // The length of each value's list, up to kMaxListLength + 1: past
  // kMaxListLength, the value's nodes are in `hashed_`.
  std::vector<uint8_t> length_;
  absl::flat_hash_set<Entry, EntryHash, EntryEq> hashed_;
};

// Marks each node that repeats an earlier one as removed (keep[i] false)
// and rewires its readers to the earlier node's outputs, in place: node
// inputs change only when some node is removed.
//
// The passes here index vectors by value id, so a bad id is a broken
// invariant, reported rather than read out of bounds: the first node (in
// order) with one, else a graph output. The check rides along this walk
// over the nodes rather than taking one of its own; nodes before the bad one
// may have been rewired by then, to values that compute the same.
absl::Status EliminateCommonSubexpressions(Graph& graph, std::vector<bool>& keep) {
  const ValueId num_values = static_cast<ValueId>(graph.values().size());
  auto bad = [num_values](ValueId id) { return id < 0 || id >= num_values; };
  // What each value is replaced by; made at the first duplicate (most
  // graphs have none).
  std::vector<ValueId> replacement;
  std::vector<bool> is_graph_output(graph.values().size(), false);
  bool bad_graph_output = false;
  for (ValueId id : graph.outputs()) {
    if (bad(id)) {
      bad_graph_output = true;
    } else {
      is_graph_output[id] = true;
    }
  }
  CseTable table(graph);
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    Node& node = graph.mutable_node(id);
    if (std::any_of(node.inputs.begin(), node.inputs.end(), bad) ||
        std::any_of(node.outputs.begin(), node.outputs.end(), bad)) {
      return absl::InternalError(
          absl::StrCat("node '", node.name, "' uses a value id out of range"));
    }
    if (!replacement.empty()) {
      for (ValueId& input : node.inputs) input = replacement[input];
    }
    const NodeId first = table.FindOrAdd(id);
    if (first == id || std::any_of(node.outputs.begin(), node.outputs.end(),
                                   [&](ValueId v) { return is_graph_output[v]; })) {
      continue;
    }
    if (replacement.empty()) {
      replacement.resize(graph.values().size());
      std::iota(replacement.begin(), replacement.end(), 0);
    }
    const Node& canonical = graph.node(first);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      replacement[node.outputs[i]] = canonical.outputs[i];
    }
    keep[id] = false;
  }
  if (bad_graph_output) {
    return absl::InternalError("a graph output's value id is out of range");
  }
  return absl::OkStatus();
}

// Marks the kept nodes whose outputs reach no graph output as removed.
void EliminateDeadNodes(const Graph& graph, std::vector<bool>& keep) {
  std::vector<bool> live(graph.values().size(), false);
  for (ValueId output : graph.outputs()) live[output] = true;
  for (size_t i = graph.nodes().size(); i-- > 0;) {
    const Node& node = graph.node(static_cast<NodeId>(i));
    if (!keep[i] || std::none_of(node.outputs.begin(), node.outputs.end(),
                                 [&](ValueId v) { return live[v]; })) {
      keep[i] = false;
      continue;
    }
    for (ValueId input : node.inputs) live[input] = true;
  }
}

// The elements of `in` (`strides`: its stride for each output axis) in
// the output's order, copied in tiles of the output's last two axes so that
// reads and writes both stay within a few pages (a weight transposed for a
// GEMM reads across its rows). Large tensors are cut into bands of tile
// rows, one part a thread, its pages mapped at once: lstm_l6_h256's twelve
// 1 MiB weights took 4.8 ms of its simplify on one thread, most of it in
// the new pages' faults.
template <typename T>
void PermuteElements(const T* in, const Shape& out_shape, const std::vector<int64_t>& strides,
                     T* out) {
  constexpr int64_t kTile = 32;
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  const int64_t rows = rank >= 2 ? out_shape[rank - 2] : 1;
  const int64_t cols = rank >= 1 ? out_shape[rank - 1] : 1;
  const int64_t row_stride = rank >= 2 ? strides[rank - 2] : 0;
  const int64_t col_stride = rank >= 1 ? strides[rank - 1] : 0;
  const int64_t outer = rank >= 2 ? NumElements(Shape(out_shape.begin(), out_shape.end() - 2)) : 1;
  const int64_t bands_per_matrix = (rows + kTile - 1) / kTile;
  // Where band `band` starts in `out`: the bands of a part are one range.
  const auto band_start = [&](int64_t band) {
    return out +
           (band / bands_per_matrix * rows + std::min(rows, band % bands_per_matrix * kTile)) *
               cols;
  };
  const auto copy_bands = [&](int64_t first, int64_t last) {
    MapPages(band_start(first), band_start(last));
    for (int64_t band = first; band < last; ++band) {
      const int64_t o = band / bands_per_matrix, i0 = band % bands_per_matrix * kTile;
      int64_t base = 0;
      for (int64_t d = rank - 3, rest = o; d >= 0; --d) {
        base += rest % out_shape[d] * strides[d];
        rest /= out_shape[d];
      }
      T* const tile_out = out + o * rows * cols;
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i) {
          for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) {
            tile_out[i * cols + j] = in[base + i * row_stride + j * col_stride];
          }
        }
      }
    }
  };
  const int64_t bands = outer * bands_per_matrix;
  RunInParts(bands, std::min(bands, PartsForElements(NumElements(out_shape))), copy_bands);
}

// The strides by which `transpose` reads an input of shape `in_shape`
// (contiguous) into a tensor of `type`, one per output axis, or none where
// its perm does not permute `in_shape`'s axes into `type`'s shape or the
// element size is not one Permuted copies (the lowering reports what is
// wrong with it).
std::optional<std::vector<int64_t>> PermutedStrides(const Node& transpose, const Shape& in_shape,
                                                    const TensorType& type) {
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  std::vector<int64_t> perm = transpose.attrs.GetInts("perm");
  if (!transpose.attrs.Has("perm")) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank || type.shape.size() != perm.size()) {
    return std::nullopt;
  }
  const int64_t size = DTypeSize(type.dtype);
  if (size != 1 && size != 2 && size != 4 && size != 8) return std::nullopt;
  const std::vector<int64_t> in_strides = ContiguousStrides(in_shape);
  std::vector<int64_t> strides;
  for (size_t d = 0; d < perm.size(); ++d) {
    if (perm[d] < 0 || perm[d] >= rank || in_shape[perm[d]] != type.shape[d]) return std::nullopt;
    strides.push_back(in_strides[perm[d]]);
  }
  return strides;
}

// The data at `in` read by `strides` (PermutedStrides) into a tensor of
// `type`.
Tensor Permuted(const void* in, const TensorType& type, const std::vector<int64_t>& strides) {
  Tensor out = Tensor::Uninitialized(type);  // PermuteElements writes every element
  switch (DTypeSize(type.dtype)) {
    case 1:
      PermuteElements(static_cast<const uint8_t*>(in), type.shape, strides, out.data_as<uint8_t>());
      break;
    case 2:
      PermuteElements(static_cast<const uint16_t*>(in), type.shape, strides,
                      out.data_as<uint16_t>());
      break;
    case 4:
      PermuteElements(static_cast<const uint32_t*>(in), type.shape, strides,
                      out.data_as<uint32_t>());
      break;
    default:  // 8, as PermutedStrides admits
      PermuteElements(static_cast<const uint64_t*>(in), type.shape, strides,
                      out.data_as<uint64_t>());
      break;
  }
  return out;
}

// `slice` evaluated on `data` read as of shape `shape` (a reshape's), or
// none where it fails (the lowering reports what is wrong with it).
std::optional<Tensor> EvaluateSlice(const Node& slice, const Tensor& data, const Shape& shape,
                                    const TensorType& type) {
  const OpDef* def = OpRegistry::Global().Find(std::string(slice.op));
  if (def == nullptr) return std::nullopt;
  Tensor reshaped;
  const Tensor* in = &data;
  if (shape != data.shape()) {
    reshaped = Tensor(TensorType{data.dtype(), shape});
    std::memcpy(reshaped.data(), data.data(), reshaped.num_bytes());
    in = &reshaped;
  }
  Tensor out(type);
  if (!def->eval(slice, absl::MakeConstSpan(&in, 1), absl::MakeSpan(&out, 1)).ok()) {
    return std::nullopt;
  }
  return out;
}

// The data of a weight's view: the initializer's, read as of `shape`, or
// a slice's, evaluated (owned by `sliced`, which moves with it).
struct WeightView {
  const Tensor* data = nullptr;
  Shape shape;
  std::unique_ptr<Tensor> sliced;
};

// The data of `value` from an initializer through views (reshape,
// unsqueeze, squeeze, slice), or none. The initializer is read in place,
// never copied whole: a reshape moves no data, and only a slice is
// evaluated.
std::optional<WeightView> ViewOfWeight(const Graph& graph, ValueId value) {
  std::vector<const Node*> views;
  while (graph.value(value).producer != kNoNode) {
    const Node& view = graph.node(graph.value(value).producer);
    const bool reshapes = view.op == "reshape" || view.op == "unsqueeze" || view.op == "squeeze";
    if ((!reshapes && view.op != "slice") || view.inputs.size() != 1 || view.outputs.size() != 1) {
      return std::nullopt;
    }
    views.push_back(&view);
    value = view.inputs[0];
  }
  if (!graph.HasInitializer(value)) return std::nullopt;
  WeightView result;
  result.data = &graph.initializer(value);
  result.shape = result.data->shape();
  for (auto view = views.rbegin(); view != views.rend(); ++view) {
    const TensorType& type = graph.value((*view)->outputs[0]).type;
    if ((*view)->op != "slice") {
      if (NumElements(type.shape) != NumElements(result.shape)) return std::nullopt;
    } else {
      std::optional<Tensor> sliced = EvaluateSlice(**view, *result.data, result.shape, type);
      if (!sliced.has_value()) return std::nullopt;
      result.sliced = std::make_unique<Tensor>(*std::move(sliced));
      result.data = result.sliced.get();
    }
    result.shape = type.shape;
  }
  return result;
}

// The initializer that `value` is through reshapes alone (which move no
// data), or null.
std::shared_ptr<const LazyTensor> ReshapedWeight(const Graph& graph, ValueId value) {
  const int64_t elements = NumElements(graph.value(value).type.shape);
  while (graph.value(value).producer != kNoNode) {
    const Node& view = graph.node(graph.value(value).producer);
    const bool reshapes = view.op == "reshape" || view.op == "unsqueeze" || view.op == "squeeze";
    if (!reshapes || view.inputs.size() != 1 || view.outputs.size() != 1) return nullptr;
    value = view.inputs[0];
  }
  if (!graph.HasInitializer(value) || NumElements(graph.value(value).type.shape) != elements) {
    return nullptr;
  }
  return graph.shared_initializer(value);
}

// The data of `transpose`'s output, from a weight's view, or null. Through
// reshapes alone it is made where it is first read (and shared with the
// other graphs of the process that transpose the same weight alike), so
// that a compile whose kernels are cached moves no weight; through a slice
// it is made here, where the slice's evaluation may still fail (a lazy
// tensor has no way to report it).
std::shared_ptr<const LazyTensor> FoldedWeightTranspose(const Graph& graph, const Node& transpose) {
  const TensorType& type = graph.value(transpose.outputs[0]).type;
  std::optional<std::vector<int64_t>> strides =
      PermutedStrides(transpose, graph.value(transpose.inputs[0]).type.shape, type);
  if (!strides.has_value()) return nullptr;
  if (std::shared_ptr<const LazyTensor> weight = ReshapedWeight(graph, transpose.inputs[0])) {
    return SharedDerivedTensor(
        weight,
        absl::StrCat("transpose by ", absl::StrJoin(*strides, ","), " to ", TypeToString(type)),
        type, [type, strides = *strides](const Tensor& data) {
          return Permuted(data.data(), type, strides);
        });
  }
  std::optional<WeightView> view = ViewOfWeight(graph, transpose.inputs[0]);
  if (!view.has_value()) return nullptr;
  return std::make_shared<const LazyTensor>(Permuted(view->data->data(), type, *strides));
}

// The data of `concat`'s output, from weights' views, or none.
std::optional<Tensor> EvaluateWeightConcat(const Graph& graph, const Node& concat) {
  const OpDef* def = OpRegistry::Global().Find(std::string(concat.op));
  if (def == nullptr || concat.outputs.size() != 1) return std::nullopt;
  std::vector<WeightView> views;
  for (ValueId input : concat.inputs) {
    std::optional<WeightView> view = ViewOfWeight(graph, input);
    if (!view.has_value()) return std::nullopt;
    views.push_back(*std::move(view));
  }
  // Each part read where it is; only one whose shape a reshape changed is
  // copied into a tensor of that shape.
  std::vector<Tensor> reshaped;
  reshaped.reserve(views.size());
  std::vector<const Tensor*> in;
  for (const WeightView& view : views) {
    if (view.shape == view.data->shape()) {
      in.push_back(view.data);
      continue;
    }
    Tensor& part = reshaped.emplace_back(TensorType{view.data->dtype(), view.shape});
    std::memcpy(part.data(), view.data->data(), part.num_bytes());
    in.push_back(&part);
  }
  Tensor out(graph.value(concat.outputs[0]).type);
  if (!def->eval(concat, in, absl::MakeSpan(&out, 1)).ok()) return std::nullopt;
  return out;
}

// Node `id`'s output becomes a weight of `data`, which the nodes after it
// read instead (`replacement` maps each value to the one read for it,
// empty while nothing is replaced); the node is dropped.
absl::Status ReplaceByWeight(Graph& graph, NodeId id, std::shared_ptr<const LazyTensor> data,
                             std::vector<ValueId>& replacement, std::vector<bool>& keep) {
  const ValueId out = graph.node(id).outputs[0];
  LOOM_ASSIGN_OR_RETURN(ValueId folded,
                        graph.AddInitializer(absl::StrCat(graph.value(out).name, "/folded"),
                                             ValueKind::kWeight, std::move(data)));
  if (replacement.empty()) {
    replacement.resize(graph.values().size() - 1);
    std::iota(replacement.begin(), replacement.end(), 0);
  }
  replacement.push_back(folded);
  replacement[out] = folded;
  keep[id] = false;
  return absl::OkStatus();
}

// A concat of weights' views (an exporter's reordering of an LSTM's gates,
// slices of its weights concatenated) is computed here, once, as a weight
// of its own, rather than at every run: products that read it then read a
// weight (lower.h, kSmallOperandElements).
absl::Status FoldWeightConcats(Graph& graph, std::vector<bool>& keep) {
  std::vector<bool> is_output(graph.values().size(), false);
  for (ValueId id : graph.outputs()) is_output[id] = true;
  std::vector<ValueId> replacement;
  const NodeId num_nodes = static_cast<NodeId>(graph.nodes().size());
  for (NodeId id = 0; id < num_nodes; ++id) {
    Node& node = graph.mutable_node(id);
    if (!replacement.empty()) {
      for (ValueId& input : node.inputs) input = replacement[input];
    }
    if (!keep[id] || node.op != "concat" || node.outputs.size() != 1 ||
        is_output[node.outputs[0]]) {
      continue;
    }
    std::optional<Tensor> data = EvaluateWeightConcat(graph, node);
    if (data.has_value()) {
      LOOM_RETURN_IF_ERROR(ReplaceByWeight(
          graph, id, std::make_shared<const LazyTensor>(*std::move(data)), replacement, keep));
    }
  }
  return absl::OkStatus();
}

// Whether `node` reads `value` in the order of the value's own elements:
// a GEMM's second operand (the library packs it as it wants), an
// elementwise or broadcast op (its loops run in the output's order).
bool ReadsInOrder(const Graph& graph, const Node& node, ValueId value) {
  if (IsGemmOperand(graph, node, value)) return true;
  const OpDef* def = OpRegistry::Global().Find(node.op);
  return def != nullptr &&
         (def->pattern == OpPattern::kElementwise || def->pattern == OpPattern::kBroadcast);
}

// A weight's view (reshape, slice) transposed into readers that read it in
// order (ReadsInOrder) is computed here, once, as a weight of its own, so
// that they read it in the order it is stored instead of transposing it at
// every run. An LSTM's input projection ([32, 256] x [256, 1024] through
// dnnl_sgemm): 67 us with the weight as stored ('T'), 41 us pre-transposed
// ('N'); a recurrence's step kept as a loop sums R^T's rows (loom_vecmats).
absl::Status FoldWeightTransposes(Graph& graph, std::vector<bool>& keep) {
  const NodeId num_nodes = static_cast<NodeId>(graph.nodes().size());
  // Per value: 1 for a transpose's output read only in order so far,
  // 2 once something else reads it or nothing does; 0 for other values.
  std::vector<uint8_t> state(graph.values().size(), 0);
  constexpr uint8_t kCandidate = 1, kRefused = 2;
  bool any = false;
  for (NodeId id = 0; id < num_nodes; ++id) {
    const Node& node = graph.node(id);
    if (!keep[id]) continue;
    for (ValueId input : node.inputs) {
      if (state[input] == kCandidate && !ReadsInOrder(graph, node, input)) state[input] = kRefused;
    }
    if (node.op == "transpose" && node.inputs.size() == 1 && node.outputs.size() == 1) {
      state[node.outputs[0]] = kCandidate;
      any = true;
    }
  }
  if (!any) return absl::OkStatus();
  for (ValueId id : graph.outputs()) state[id] = kRefused;
  std::vector<ValueId> replacement;
  for (NodeId id = 0; id < num_nodes; ++id) {
    Node& node = graph.mutable_node(id);
    if (!replacement.empty()) {
      for (ValueId& input : node.inputs) input = replacement[input];
    }
    if (!keep[id] || node.op != "transpose" || node.inputs.size() != 1 ||
        node.outputs.size() != 1 || state[node.outputs[0]] != kCandidate) {
      continue;
    }
    if (std::shared_ptr<const LazyTensor> data = FoldedWeightTranspose(graph, node)) {
      LOOM_RETURN_IF_ERROR(ReplaceByWeight(graph, id, std::move(data), replacement, keep));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> SimplifyPass::Run(Module& module) {
  Graph& graph = module.graph;
  const size_t num_nodes = graph.nodes().size();
  std::vector<bool> keep(num_nodes, true);
  LOOM_RETURN_IF_ERROR(EliminateCommonSubexpressions(graph, keep));
  LOOM_RETURN_IF_ERROR(FoldWeightConcats(graph, keep));
  LOOM_RETURN_IF_ERROR(FoldWeightTransposes(graph, keep));
  EliminateDeadNodes(graph, keep);
  if (static_cast<size_t>(std::count(keep.begin(), keep.end(), true)) == num_nodes) {
    return false;
  }
  graph.RemoveNodes(keep);
  return true;
}

LOOM_REGISTER_PASS("simplify", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<SimplifyPass>());
});

}  // namespace loom
