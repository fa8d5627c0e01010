#include "passes/decompose.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "passes/decomposition.h"

namespace loom {

namespace {

// Every decomposition, by the op it replaces, gathered from the op
// families' tables (passes/decomposition.h).
const std::vector<std::pair<std::string, DecomposeFn>>& Decompositions() {
  static const auto* table = [] {
    auto* all = new std::vector<std::pair<std::string, DecomposeFn>>;
    for (absl::Span<const Decomposition> family :
         {SoftmaxDecompositions(), ActivationDecompositions(),
          NormDecompositions(), TensorOpDecompositions(),
          RnnDecompositions()}) {
      for (const Decomposition& d : family) all->emplace_back(d.op, d.fn);
    }
    return all;
  }();
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
