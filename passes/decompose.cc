#include "passes/decompose.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"

namespace loom {

// Builds the nodes that replace one composite node. Node names are derived
// from the composite's ("sm" -> "sm/max"), made unique among the graph's
// node names; fresh values get unique names through Graph::AddIntermediate.
class DecompositionBuilder {
 public:
  DecompositionBuilder(Graph& graph, const Node& node,
                       absl::flat_hash_set<std::string>& node_names,
                       std::vector<Node>& out)
      : graph_(graph), node_(node), node_names_(node_names), out_(out) {}

  // Appends a node `<composite>/<suffix>` that writes a fresh value and
  // returns that value.
  ValueId Add(absl::string_view suffix, std::string op,
              std::vector<ValueId> inputs, Attrs attrs = {}) {
    const ValueId output =
        graph_.AddIntermediate(absl::StrCat(node_.name, "/", suffix));
    Emit(suffix, std::move(op), std::move(inputs), output, std::move(attrs));
    return output;
  }

  // Appends a node `<composite>/<suffix>` that writes `output`, one of the
  // composite's own outputs.
  void AddWriting(absl::string_view suffix, std::string op,
                  std::vector<ValueId> inputs, ValueId output,
                  Attrs attrs = {}) {
    Emit(suffix, std::move(op), std::move(inputs), output, std::move(attrs));
  }

 private:
  void Emit(absl::string_view suffix, std::string op,
            std::vector<ValueId> inputs, ValueId output, Attrs attrs) {
    out_.push_back(Node{UniqueNodeName(absl::StrCat(node_.name, "/", suffix)),
                        std::move(op),
                        std::move(inputs),
                        {output},
                        std::move(attrs)});
  }

  std::string UniqueNodeName(std::string base) {
    std::string name = base;
    for (int i = 1; node_names_.contains(name); ++i) {
      name = absl::StrCat(base, ".", i);
    }
    node_names_.insert(name);
    return name;
  }

  Graph& graph_;
  const Node& node_;
  absl::flat_hash_set<std::string>& node_names_;
  std::vector<Node>& out_;
};

namespace {

absl::Status CheckArity(const Node& node, size_t inputs, size_t outputs) {
  if (node.inputs.size() == inputs && node.outputs.size() == outputs) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "expected %d inputs and %d outputs, got %d and %d", inputs, outputs,
      node.inputs.size(), node.outputs.size()));
}

Attrs ReduceAttrs(int64_t axis) {
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{axis});
  attrs.Set("keepdims", int64_t{1});
  return attrs;
}

// softmax(x) = exp(x - max(x)) / sum(exp(x - max(x))) along `axis`;
// subtracting the max keeps exp from overflowing.
absl::Status DecomposeSoftmax(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  // The reductions count a negative axis from the end, as softmax does.
  const int64_t axis = node.attrs.GetInt("axis", -1);

  const ValueId max = b.Add("max", "reduce_max", {x}, ReduceAttrs(axis));
  const ValueId shifted = b.Add("sub", "sub", {x, max});
  const ValueId exp = b.Add("exp", "exp", {shifted});
  const ValueId sum = b.Add("sum", "reduce_sum", {exp}, ReduceAttrs(axis));
  b.AddWriting("div", "div", {exp, sum}, node.outputs[0]);
  return absl::OkStatus();
}

// Every decomposition, by the op it replaces. New op families add a
// function above and a row here.
const std::vector<std::pair<std::string, DecomposeFn>>& Decompositions() {
  static const auto* table =
      new std::vector<std::pair<std::string, DecomposeFn>>{
          {"softmax", DecomposeSoftmax},
      };
  return *table;
}

DecomposeFn FindDecomposition(absl::string_view op) {
  for (const auto& [name, fn] : Decompositions()) {
    if (name == op) return fn;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> DecomposableOps() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : Decompositions()) ops.push_back(name);
  std::sort(ops.begin(), ops.end());
  return ops;
}

absl::StatusOr<std::unique_ptr<DecomposePass>> DecomposePass::Create(
    const proto::DecomposeOptions& options) {
  absl::flat_hash_map<std::string, DecomposeFn> selected;
  if (options.ops().empty()) {
    for (const auto& [name, fn] : Decompositions()) selected.emplace(name, fn);
  }
  for (const std::string& op : options.ops()) {
    DecomposeFn fn = FindDecomposition(op);
    if (fn == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "decompose does not know op '", op,
          "'; it knows: ", absl::StrJoin(DecomposableOps(), ", ")));
    }
    selected.emplace(op, fn);
  }
  return absl::WrapUnique(new DecomposePass(std::move(selected)));
}

absl::StatusOr<bool> DecomposePass::Run(Module& module) {
  Graph& graph = module.graph;
  absl::flat_hash_set<std::string> node_names;
  for (const Node& node : graph.nodes()) node_names.insert(node.name);

  std::vector<Node> nodes;
  nodes.reserve(graph.nodes().size());
  bool changed = false;
  for (const Node& node : graph.nodes()) {
    auto it = decompositions_.find(node.op);
    if (it == decompositions_.end()) {
      nodes.push_back(node);
      continue;
    }
    DecompositionBuilder builder(graph, node, node_names, nodes);
    absl::Status status = it->second(node, builder);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("node '", node.name, "' (", node.op,
                                       "): ", status.message()));
    }
    changed = true;
  }
  if (!changed) return false;

  graph.ReplaceNodes(std::move(nodes));
  absl::Status inferred = InferShapes(graph);
  if (!inferred.ok()) return inferred;
  return true;
}

LOOM_REGISTER_PASS("decompose", "decompose", [](const proto::PassSpec& spec) {
  absl::StatusOr<std::unique_ptr<DecomposePass>> pass =
      DecomposePass::Create(spec.decompose());
  if (!pass.ok()) return absl::StatusOr<std::unique_ptr<Pass>>(pass.status());
  return absl::StatusOr<std::unique_ptr<Pass>>(*std::move(pass));
});

}  // namespace loom
