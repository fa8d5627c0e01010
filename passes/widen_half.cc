#include "passes/widen_half.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/graph.h"

namespace loom {
namespace {

bool IsStoredValue(const Graph& graph, ValueId id) {
  return IsStorageType(graph.value(id).type.dtype);
}

bool NeedsWidening(const Graph& graph, const Node& node) {
  if (node.op == "cast" || node.op == "bit_cast") return false;  // they read the bits
  auto stored = [&](ValueId id) { return IsStoredValue(graph, id); };
  return absl::c_any_of(node.inputs, stored) || absl::c_any_of(node.outputs, stored);
}

// A cast of `from` to `to` into the fresh value `into`.
Node CastNode(std::string name, ValueId from, ValueId into, DType to) {
  Node cast{std::move(name), "cast", {from}, {into}, {}};
  cast.attrs.Set("to", std::string(DTypeName(to)));
  return cast;
}

class Widener {
 public:
  explicit Widener(Graph& graph) : graph_(graph) {}

  // Appends `node` to nodes_, widened when it computes on a storage type.
  void Add(Node node) {
    if (!NeedsWidening(graph_, node)) {
      nodes_.push_back(std::move(node));
      return;
    }
    for (ValueId& input : node.inputs) {
      if (IsStoredValue(graph_, input)) input = Widened(input, node.name);
    }
    std::vector<Node> narrowing;
    for (ValueId& output : node.outputs) {
      if (!IsStoredValue(graph_, output)) continue;
      const TensorType& type = graph_.value(output).type;
      const ValueId wide =
          graph_.AddIntermediate(graph_.value(output).name, {ComputeType(type.dtype), type.shape});
      narrowing.push_back(CastNode(absl::StrCat(node.name, "/narrow"), wide, output, type.dtype));
      output = wide;
    }
    nodes_.push_back(std::move(node));
    for (Node& cast : narrowing) nodes_.push_back(std::move(cast));
  }

  NodeList Take() { return std::move(nodes_); }

 private:
  // The copy of the stored value `id` in its ComputeType, cast before its
  // first reader.
  ValueId Widened(ValueId id, const std::string& reader) {
    auto [it, inserted] = widened_.try_emplace(id, -1);
    if (inserted) {
      const TensorType& type = graph_.value(id).type;
      const DType wide = ComputeType(type.dtype);
      it->second = graph_.AddIntermediate(graph_.value(id).name, {wide, type.shape});
      nodes_.push_back(CastNode(absl::StrCat(reader, "/widen"), id, it->second, wide));
    }
    return it->second;
  }

  Graph& graph_;
  NodeList nodes_;
  absl::flat_hash_map<ValueId, ValueId> widened_;
};

}  // namespace

absl::StatusOr<bool> WidenHalfPass::Run(Module& module) {
  Graph& graph = module.graph;
  if (!absl::c_any_of(graph.nodes(), [&](const Node& n) { return NeedsWidening(graph, n); })) {
    return false;
  }
  Widener widener(graph);
  for (const Node& node : graph.nodes()) widener.Add(node);
  graph.ReplaceNodes(widener.Take());
  return true;
}

LOOM_REGISTER_PASS("widen-half", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<WidenHalfPass>());
});

}  // namespace loom
