#include "passes/decompose.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {

namespace {

// Every decomposition, by the op it replaces, gathered from the op
// families' tables (passes/decomposition.h).
const std::vector<std::pair<std::string, DecomposeFn>>& Decompositions() {
  static const auto* table = [] {
    auto* all = new std::vector<std::pair<std::string, DecomposeFn>>;
    for (absl::Span<const Decomposition> family :
         {SoftmaxDecompositions(), ActivationDecompositions(), NormDecompositions(),
          TensorOpDecompositions(), RnnDecompositions(), ConvDecompositions(),
          ConvTransposeDecompositions(), ResizeDecompositions(), InverseTrigDecompositions(),
          SequenceDecompositions(), EinsumDecompositions()}) {
      for (const Decomposition& d : family) all->emplace_back(d.op, d.fn);
    }
    return all;
  }();
  return *table;
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
  absl::flat_hash_map<std::string, DecomposeFn> all;
  for (const auto& [name, fn] : Decompositions()) all.emplace(name, fn);
  if (options.rnn() == proto::DecomposeOptions::LOOP ||
      options.rnn() == proto::DecomposeOptions::AUTO) {
    const RnnForm form =
        options.rnn() == proto::DecomposeOptions::LOOP ? RnnForm::kLoop : RnnForm::kAuto;
    for (const Decomposition& d : RnnDecompositions(form)) all[d.op] = d.fn;
  }
  if (options.conv_calls()) {
    for (const Decomposition& d : ConvCallDecompositions()) all[d.op] = d.fn;
  }
  if (options.channels_last_conv_calls()) {
    for (const Decomposition& d : ChannelsLastConvCallDecompositions()) all[d.op] = d.fn;
  }
  absl::flat_hash_map<std::string, DecomposeFn> selected;
  if (options.ops().empty()) selected = all;
  for (const std::string& op : options.ops()) {
    DecomposeFn fn = Find(all, op);
    if (fn == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("decompose does not know op '", op,
                       "'; it knows: ", absl::StrJoin(DecomposableOps(), ", ")));
    }
    selected.emplace(op, fn);
  }
  return std::make_unique<DecomposePass>(std::move(selected), std::move(all));
}

DecomposeFn DecomposePass::Find(const absl::flat_hash_map<std::string, DecomposeFn>& table,
                                absl::string_view op) {
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

namespace {

// Moves the old nodes [from, to) to the end of the new list `nodes`.
void MoveNodes(Graph& graph, size_t from, size_t to, NodeList& nodes, std::vector<bool>& emitted) {
  for (size_t i = from; i < to; ++i) {
    nodes.push_back(std::move(graph.mutable_node(i)));
    emitted.push_back(false);
  }
}

// Undoes MoveNodes after a failed decomposition: the old nodes in `nodes`
// (those not emitted) go back to their places, between the composites,
// which never left.
void RestoreNodes(Graph& graph, const std::vector<size_t>& composites, NodeList& nodes,
                  const std::vector<bool>& emitted) {
  size_t old = 0;
  size_t next_composite = 0;
  for (size_t k = 0; k < emitted.size(); ++k) {
    if (emitted[k]) continue;
    while (next_composite < composites.size() && composites[next_composite] == old) {
      ++old;
      ++next_composite;
    }
    graph.mutable_node(old++) = std::move(nodes[k]);
  }
}

// Composites that one decomposition replaces usually decompose alike (the
// layers of a stacked RNN): once one has emitted `emitted_nodes` nodes and
// added `added_values` values, room is made for the `left` others at its
// size (and for the `old_nodes_left` old nodes still to come), so that the
// values and the name set do not regrow, moving all they hold, once per
// composite (the node list never moves its nodes). A sixteenth more is kept
// spare: a decomposition's own reservation (see
// DecompositionBuilder::Reserve) may ask for a few more than it emits, which
// would double the tables.
void ReserveForLikeComposites(size_t left, size_t emitted_nodes, size_t added_values,
                              size_t old_nodes_left, NodeList& nodes, Graph& graph,
                              NameSet& names) {
  if (left == 0) return;
  auto with_spare = [left](size_t n) { return (n + n / 16) * left; };
  const size_t needed = nodes.size() + with_spare(emitted_nodes) + old_nodes_left;
  nodes.reserve(needed);
  graph.ReserveIntermediates(with_spare(added_values));
  names.Reserve(with_spare(emitted_nodes));
}

// One sweep over the graph's nodes: node i is replaced by its decomposition
// when pick(i) returns one. On return emitted[i] says whether node i of the
// new node list came from a decomposition. Returns whether anything was
// decomposed; the caller infers the new nodes' shapes. The new list is
// started at the first composite, and decompositions append to it directly;
// the old nodes move into it (none is copied). On an error the graph's
// nodes are as they were.
template <typename Pick>
absl::StatusOr<bool> DecomposeSweep(Graph& graph, NameSet& names, Pick pick,
                                    std::vector<bool>& emitted) {
  const size_t num_nodes = graph.nodes().size();
  // How many composites each decomposition has left to replace.
  absl::flat_hash_map<DecomposeFn, size_t> left;
  for (size_t i = 0; i < num_nodes; ++i) {
    if (const DecomposeFn fn = pick(i); fn != nullptr) ++left[fn];
  }
  NodeList nodes;
  std::vector<bool> emitted_now;
  std::vector<size_t> composites;
  size_t next = 0;  // the first old node not yet moved or replaced
  for (size_t i = 0; i < num_nodes; ++i) {
    const DecomposeFn fn = pick(i);
    if (fn == nullptr) continue;
    // Decompositions that emit many nodes reserve room for them; most
    // others fit in the margin.
    if (composites.empty()) nodes.reserve(num_nodes + num_nodes / 4);
    MoveNodes(graph, next, i, nodes, emitted_now);
    const size_t first_emitted = nodes.size();
    const size_t first_value = graph.values().size();
    const Node& node = graph.nodes()[i];
    DecompositionBuilder builder(graph, node, names, nodes);
    absl::Status status = fn(node, builder);
    if (!status.ok()) {
      RestoreNodes(graph, composites, nodes, emitted_now);
      return absl::Status(status.code(), absl::StrCat("node '", node.name, "' (", node.op,
                                                      "): ", status.message()));
    }
    emitted_now.resize(nodes.size(), true);
    composites.push_back(i);
    next = i + 1;
    ReserveForLikeComposites(--left[fn], nodes.size() - first_emitted,
                             graph.values().size() - first_value, num_nodes - next, nodes, graph,
                             names);
  }
  if (composites.empty()) return false;
  MoveNodes(graph, next, num_nodes, nodes, emitted_now);
  graph.ReplaceNodes(std::move(nodes));
  emitted = std::move(emitted_now);
  return true;
}

// Adds to `names` the node names that a decomposition's new names could collide
// with. Those are all "<composite>/<suffix>" (made unique with ".N"), so only
// names with a '/' can: the others, which in a graph written by hand or by
// a generator are nearly all, stay out of the set.
void AddNamesWithSlash(const Graph& graph, NameSet& names) {
  for (const Node& node : graph.nodes()) {
    if (absl::StrContains(node.name, '/')) names.Insert(node.name);
  }
}

// Infers the types of the nodes a sweep emitted (emitted[i]): every other
// node reads what it read before, so its types stand. The emitted nodes
// also write the composites' outputs (values below `first_new`); should one
// of those come out with another type than it had, its readers may change
// too, and the whole graph is inferred again.
absl::Status InferEmittedShapes(Graph& graph, const std::vector<bool>& emitted, ValueId first_new) {
  std::vector<std::pair<ValueId, TensorType>> rewritten;
  for (size_t i = 0; i < emitted.size(); ++i) {
    if (!emitted[i]) continue;
    for (ValueId id : graph.nodes()[i].outputs) {
      if (id < first_new) rewritten.emplace_back(id, graph.value(id).type);
    }
  }
  LOOM_RETURN_IF_ERROR(InferShapesOfNodes(graph, emitted));
  for (const auto& [id, type] : rewritten) {
    if (graph.value(id).type != type) return InferShapes(graph);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> DecomposePass::Run(Module& module) {
  Graph& graph = module.graph;
  NameSet names;
  AddNamesWithSlash(graph, names);

  // The first sweep decomposes the selected ops. A decomposition may emit
  // composite ops: later sweeps decompose the nodes the previous one
  // emitted (with every decomposition, selected or not, since lowering
  // needs primitives), after shape inference has typed them.
  constexpr int kMaxSweeps = 8;
  OpLookupCache<DecomposeFn> found_in_all;
  auto find_in_all = [&](OpName op) {
    return found_in_all.Get(op, [&](OpName op) { return Find(all_, op); });
  };
  std::vector<bool> emitted;
  ValueId first_new = static_cast<ValueId>(graph.values().size());
  absl::StatusOr<bool> changed = DecomposeSweep(
      graph, names, [&](size_t i) { return Find(selected_, graph.nodes()[i].op); }, emitted);
  if (!changed.ok() || !*changed) return changed;
  for (int sweep = 1;; ++sweep) {
    if (absl::Status s = InferEmittedShapes(graph, emitted, first_new); !s.ok()) {
      return s;
    }
    bool composite_left = false;
    for (size_t i = 0; i < emitted.size(); ++i) {
      composite_left |= emitted[i] && find_in_all(graph.nodes()[i].op);
    }
    if (!composite_left) return true;
    if (sweep == kMaxSweeps) {
      return absl::InternalError(
          absl::StrCat("decompositions still emit composite ops after ", kMaxSweeps, " sweeps"));
    }
    const std::vector<bool> previous = emitted;
    first_new = static_cast<ValueId>(graph.values().size());
    LOOM_RETURN_IF_ERROR(
        DecomposeSweep(
            graph, names,
            [&](size_t i) { return previous[i] ? find_in_all(graph.nodes()[i].op) : nullptr; },
            emitted)
            .status());
  }
}

LOOM_REGISTER_PASS_WITH_OPTIONS("decompose", "decompose", proto::DecomposeOptions,
                                [](const proto::DecomposeOptions& options)
                                    -> absl::StatusOr<std::unique_ptr<Pass>> {
                                  return DecomposePass::Create(options);
                                });

}  // namespace loom
