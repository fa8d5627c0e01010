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

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace loom {
namespace {

// Appends `text` length-prefixed, so that no two sequences of strings
// encode alike.
void AppendString(std::string& key, absl::string_view text) {
  absl::StrAppend(&key, text.size(), ":", text);
}

// Doubles by their bits: exact, and NaN payloads stay distinct.
void AppendDouble(std::string& key, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  absl::StrAppend(&key, absl::Hex(bits), ",");
}

void AppendAttr(std::string& key, const AttrValue& value) {
  absl::StrAppend(&key, value.index(), "=");
  std::visit(
      [&key](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          absl::StrAppend(&key, v, ",");
        } else if constexpr (std::is_same_v<T, double>) {
          AppendDouble(key, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          AppendString(key, v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          absl::StrAppend(&key, v.size(), "[");
          for (int64_t x : v) absl::StrAppend(&key, x, ",");
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          absl::StrAppend(&key, v.size(), "[");
          for (double x : v) AppendDouble(key, x);
        } else {
          absl::StrAppend(&key, v.size(), "[");
          for (const std::string& x : v) AppendString(key, x);
        }
      },
      value);
}

// Equal keys mean equal computations: op, output count, inputs in order and
// attributes (by name, whatever order they were set in).
std::string CseKey(const Node& node) {
  std::string key;
  AppendString(key, node.op);
  absl::StrAppend(&key, node.outputs.size(), "(");
  for (ValueId input : node.inputs) absl::StrAppend(&key, input, ",");
  absl::StrAppend(&key, ")");

  std::vector<const std::pair<std::string, AttrValue>*> attrs;
  for (const auto& entry : node.attrs.entries()) attrs.push_back(&entry);
  std::sort(attrs.begin(), attrs.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* attr : attrs) {
    AppendString(key, attr->first);
    AppendAttr(key, attr->second);
  }
  return key;
}

bool DefinesAny(const Node& node, const absl::flat_hash_set<ValueId>& values) {
  return std::any_of(node.outputs.begin(), node.outputs.end(),
                     [&](ValueId v) { return values.contains(v); });
}

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

// The graph's nodes with duplicates dropped and their readers rewired to the
// first occurrence.
std::vector<Node> EliminateCommonSubexpressions(const Graph& graph) {
  std::vector<ValueId> replacement(graph.values().size());
  std::iota(replacement.begin(), replacement.end(), 0);
  const absl::flat_hash_set<ValueId> graph_outputs(graph.outputs().begin(),
                                                   graph.outputs().end());
  absl::flat_hash_map<std::string, size_t> first_with_key;
  std::vector<Node> kept;
  kept.reserve(graph.nodes().size());
  for (const Node& original : graph.nodes()) {
    Node node = original;
    for (ValueId& input : node.inputs) input = replacement[input];
    auto [first, inserted] =
        first_with_key.try_emplace(CseKey(node), kept.size());
    if (!inserted && !DefinesAny(node, graph_outputs)) {
      const Node& canonical = kept[first->second];
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        replacement[node.outputs[i]] = canonical.outputs[i];
      }
      continue;
    }
    kept.push_back(std::move(node));
  }
  return kept;
}

// `nodes` without those whose outputs reach no graph output.
std::vector<Node> EliminateDeadNodes(const Graph& graph,
                                     std::vector<Node> nodes) {
  std::vector<bool> live(graph.values().size(), false);
  for (ValueId output : graph.outputs()) live[output] = true;
  std::vector<bool> keep(nodes.size(), false);
  for (size_t i = nodes.size(); i-- > 0;) {
    const Node& node = nodes[i];
    if (std::none_of(node.outputs.begin(), node.outputs.end(),
                     [&](ValueId v) { return live[v]; })) {
      continue;
    }
    keep[i] = true;
    for (ValueId input : node.inputs) live[input] = true;
  }
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(nodes[i]));
  }
  return kept;
}

}  // namespace

absl::StatusOr<bool> SimplifyPass::Run(Module& module) {
  Graph& graph = module.graph;
  if (absl::Status ids = CheckValueIds(graph); !ids.ok()) return ids;
  std::vector<Node> kept =
      EliminateDeadNodes(graph, EliminateCommonSubexpressions(graph));
  if (kept.size() == graph.nodes().size()) return false;
  graph.ReplaceNodes(std::move(kept));
  return true;
}

LOOM_REGISTER_PASS("simplify", "", [](const proto::PassSpec&) {
  return absl::StatusOr<std::unique_ptr<Pass>>(
      std::make_unique<SimplifyPass>());
});

}  // namespace loom
