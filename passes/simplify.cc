#include "passes/simplify.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

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
  if (a.op != b.op || a.outputs.size() != b.outputs.size() ||
      a.inputs != b.inputs ||
      a.attrs.entries().size() != b.attrs.entries().size()) {
    return false;
  }
  for (const auto& [name, value] : a.attrs.entries()) {
    const AttrValue* other = b.attrs.Find(name);
    if (other == nullptr || !SameAttr(value, *other)) return false;
  }
  return true;
}

// A set of node ids that hashes and compares the nodes themselves, without
// building a key per node. Hashes are computed once per node (Add).
class CseTable {
 public:
  explicit CseTable(const Graph& graph)
      : graph_(graph),
        hashes_(graph.nodes().size()),
        first_(graph.nodes().size(), HashById{&hashes_}, EqById{&graph}) {}

  // The id of the first node computing what `id` computes, or `id` itself
  // when it is the first (and then it is remembered).
  NodeId FindOrAdd(NodeId id) {
    hashes_[id] = CseHash(graph_.node(id));
    return *first_.insert(id).first;
  }

 private:
  struct HashById {
    const std::vector<size_t>* hashes;
    size_t operator()(NodeId id) const { return (*hashes)[id]; }
  };
  struct EqById {
    const Graph* graph;
    bool operator()(NodeId a, NodeId b) const {
      return a == b || SameComputation(graph->node(a), graph->node(b));
    }
  };

  const Graph& graph_;
  std::vector<size_t> hashes_;
  absl::flat_hash_set<NodeId, HashById, EqById> first_;
};

// The passes below index vectors by value id; a bad id is a broken invariant,
// reported rather than read out of bounds.
absl::Status CheckValueIds(const Graph& graph) {
  const ValueId num_values = static_cast<ValueId>(graph.values().size());
  auto bad = [num_values](ValueId id) { return id < 0 || id >= num_values; };
  for (const Node& node : graph.nodes()) {
    if (std::any_of(node.inputs.begin(), node.inputs.end(), bad) ||
        std::any_of(node.outputs.begin(), node.outputs.end(), bad)) {
      return absl::InternalError(
          absl::StrCat("node '", node.name, "' uses a value id out of range"));
    }
  }
  if (std::any_of(graph.outputs().begin(), graph.outputs().end(), bad)) {
    return absl::InternalError("a graph output's value id is out of range");
  }
  return absl::OkStatus();
}

// Marks each node that repeats an earlier one as removed (keep[i] false)
// and rewires its readers to the earlier node's outputs, in place: node
// inputs change only when some node is removed.
void EliminateCommonSubexpressions(Graph& graph, std::vector<bool>& keep) {
  std::vector<ValueId> replacement(graph.values().size());
  std::iota(replacement.begin(), replacement.end(), 0);
  std::vector<bool> is_graph_output(graph.values().size(), false);
  for (ValueId id : graph.outputs()) is_graph_output[id] = true;
  CseTable table(graph);
  bool replaced_any = false;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    Node& node = graph.mutable_node(id);
    if (replaced_any) {
      for (ValueId& input : node.inputs) input = replacement[input];
    }
    const NodeId first = table.FindOrAdd(id);
    if (first == id ||
        std::any_of(node.outputs.begin(), node.outputs.end(),
                    [&](ValueId v) { return is_graph_output[v]; })) {
      continue;
    }
    const Node& canonical = graph.node(first);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      replacement[node.outputs[i]] = canonical.outputs[i];
    }
    keep[id] = false;
    replaced_any = true;
  }
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

}  // namespace

absl::StatusOr<bool> SimplifyPass::Run(Module& module) {
  Graph& graph = module.graph;
  if (absl::Status ids = CheckValueIds(graph); !ids.ok()) return ids;
  const size_t num_nodes = graph.nodes().size();
  std::vector<bool> keep(num_nodes, true);
  EliminateCommonSubexpressions(graph, keep);
  EliminateDeadNodes(graph, keep);
  if (static_cast<size_t>(std::count(keep.begin(), keep.end(), true)) ==
      num_nodes) {
    return false;
  }
  graph.RemoveNodes(keep);
  return true;
}

LOOM_REGISTER_PASS("simplify", "", [](const proto::PassSpec&) {
  return absl::StatusOr<std::unique_ptr<Pass>>(
      std::make_unique<SimplifyPass>());
});

}  // namespace loom
