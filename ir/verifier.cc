#include "ir/verifier.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

bool InRange(const Graph& graph, ValueId id) {
  return id >= 0 && id < static_cast<ValueId>(graph.values().size());
}

absl::string_view KindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kInput:
      return "graph input";
    case ValueKind::kWeight:
      return "weight";
    case ValueKind::kConstant:
      return "constant";
    case ValueKind::kIntermediate:
      return "intermediate value";
  }
  return "?";
}

bool HasNegativeDim(const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) return true;
  }
  return false;
}

// Graph inputs, weights and constants: defined before any node runs.
absl::Status CheckArguments(const Graph& graph, std::vector<bool>& defined) {
  const std::pair<const std::vector<ValueId>*, ValueKind> groups[] = {
      {&graph.inputs(), ValueKind::kInput},
      {&graph.weights(), ValueKind::kWeight},
      {&graph.constants(), ValueKind::kConstant},
  };
  for (const auto& [ids, kind] : groups) {
    for (ValueId id : *ids) {
      if (!InRange(graph, id)) {
        return absl::InternalError(
            absl::StrCat("the ", KindName(kind), " list names invalid value id ", id));
      }
      const Value& value = graph.value(id);
      if (value.kind != kind) {
        return absl::InternalError(absl::StrCat("value '", value.name, "' is listed as a ",
                                                KindName(kind), " but is a ",
                                                KindName(value.kind)));
      }
      if (defined[id]) {
        return absl::InvalidArgumentError(
            absl::StrCat("value '", value.name, "' is defined more than once"));
      }
      if (HasNegativeDim(value.type.shape)) {
        return absl::InvalidArgumentError(
            absl::StrCat(KindName(kind), " '", value.name,
                         "' has a negative dimension: ", TypeToString(value.type)));
      }
      if (absl::Status s = CheckShapeLimits(value.type.shape); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(KindName(kind), " '", value.name, "': ", s.message()));
      }
      if (kind != ValueKind::kInput && graph.shared_initializer(id)->type() != value.type) {
        return absl::InternalError(
            absl::StrCat(KindName(kind), " '", value.name, "' has type ", TypeToString(value.type),
                         " but its data is ", TypeToString(graph.shared_initializer(id)->type())));
      }
      defined[id] = true;
    }
  }
  return absl::OkStatus();
}

// Every intermediate value has at most one writer, and each value's
// recorded producer is its writer.
absl::Status CheckProducers(const Graph& graph) {
  std::vector<NodeId> writer(graph.values().size(), kNoNode);
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    const Node& node = graph.node(id);
    for (ValueId output : node.outputs) {
      if (!InRange(graph, output)) {
        return AddNodeContext(
            node, absl::InternalError(absl::StrCat("writes invalid value id ", output)));
      }
      const Value& value = graph.value(output);
      if (value.kind != ValueKind::kIntermediate) {
        return AddNodeContext(
            node, absl::InvalidArgumentError(absl::StrCat("writes value '", value.name,
                                                          "', which is a ", KindName(value.kind))));
      }
      if (writer[output] != kNoNode) {
        return AddNodeContext(node, absl::InvalidArgumentError(
                                        absl::StrCat("writes value '", value.name, "', which ",
                                                     DescribeNode(graph.node(writer[output])),
                                                     " also writes (a value has one producer)")));
      }
      writer[output] = id;
    }
  }
  for (ValueId id = 0; id < static_cast<ValueId>(writer.size()); ++id) {
    const Value& value = graph.value(id);
    if (value.kind == ValueKind::kIntermediate && value.producer != writer[id]) {
      return absl::InternalError(absl::StrCat(
          "value '", value.name, "' records producer ", value.producer, " but is written by ",
          writer[id] == kNoNode ? std::string("no node") : absl::StrCat("node ", writer[id])));
    }
  }
  return absl::OkStatus();
}

// Every input is defined before the node runs: this makes the graph acyclic.
absl::Status CheckNodeInputs(const Graph& graph, const Node& node,
                             const std::vector<bool>& defined) {
  for (ValueId input : node.inputs) {
    if (!InRange(graph, input)) {
      return AddNodeContext(node,
                            absl::InternalError(absl::StrCat("reads invalid value id ", input)));
    }
    if (!defined[input]) {
      return AddNodeContext(node, absl::InvalidArgumentError(absl::StrCat(
                                      "reads value '", graph.value(input).name,
                                      "' before it is defined (nodes must be in topological "
                                      "order)")));
    }
  }
  return absl::OkStatus();
}

// The stored output types must be what the op's shape function infers.
// `input_types` is scratch space kept across nodes (see InferShapes).
absl::Status CheckNodeTypes(const Graph& graph, const Node& node, const OpDef& def,
                            std::vector<TensorType>& input_types) {
  const size_t num_inputs = node.inputs.size();
  if (input_types.size() < num_inputs) input_types.resize(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    input_types[i] = graph.value(node.inputs[i]).type;
  }
  absl::StatusOr<OutputTypes> inferred =
      def.infer(node, absl::MakeConstSpan(input_types.data(), num_inputs));
  if (!inferred.ok()) return AddNodeContext(node, inferred.status());
  if (inferred->size() != node.outputs.size()) {
    return AddNodeContext(node, absl::InternalError("shape function returned the wrong number "
                                                    "of outputs"));
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const Value& value = graph.value(node.outputs[i]);
    if (value.type != (*inferred)[i]) {
      return AddNodeContext(
          node, absl::InternalError(absl::StrCat("output '", value.name, "' is stored as ",
                                                 TypeToString(value.type), " but the op infers ",
                                                 TypeToString((*inferred)[i]))));
    }
  }
  return absl::OkStatus();
}

// With `check_ops` false, skips what InferShapes checks itself: each
// node's signature and the types its shape function gives.
absl::Status Verify(const Graph& graph, const OpRegistry& registry, bool check_ops) {
  std::vector<bool> defined(graph.values().size(), false);
  absl::Status status = CheckArguments(graph, defined);
  if (status.ok()) status = CheckProducers(graph);
  if (!status.ok()) return status;
  std::vector<TensorType> input_types;
  for (const Node& node : graph.nodes()) {
    if (status = CheckNodeInputs(graph, node, defined); !status.ok()) {
      return status;
    }
    if (check_ops) {
      LOOM_ASSIGN_OR_RETURN(const OpDef* def, FindCheckedOpDef(node, registry));
      LOOM_RETURN_IF_ERROR(CheckNodeTypes(graph, node, *def, input_types));
    }
    for (ValueId output : node.outputs) defined[output] = true;
  }
  for (ValueId output : graph.outputs()) {
    if (!InRange(graph, output)) {
      return absl::InternalError(absl::StrCat("graph output names invalid value id ", output));
    }
    if (!defined[output]) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", graph.value(output).name, "' is never defined"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyGraph(const Graph& graph, const OpRegistry& registry) {
  return Verify(graph, registry, /*check_ops=*/true);
}

absl::Status VerifyGraphStructure(const Graph& graph, const OpRegistry& registry) {
  return Verify(graph, registry, /*check_ops=*/false);
}

absl::Status VerifyModule(const Module& module) {
  if (module.loops.has_value()) return VerifyLoopProgram(*module.loops);
  return VerifyGraph(module.graph);
}

}  // namespace loom
