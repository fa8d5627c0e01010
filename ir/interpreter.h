#ifndef LOOM_IR_INTERPRETER_H_
#define LOOM_IR_INTERPRETER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/tensor.h"

namespace loom {

// Runs `graph` node by node with each op's reference implementation (plain
// loops straight from the op's definition, never loom's decompositions or
// lowering): the oracle for every numerical test.
//
// `inputs` are in the order of graph.inputs() and must match their declared
// types; weights and constants come from graph.initializer(). Returns the
// values of graph.outputs(), in order. Each node's output types are inferred
// from its actual inputs, so the graph need not have been through
// InferShapes. Intermediate tensors are freed after their last use.
//
// Errors (bad inputs, an op's error such as integer division by zero, a
// malformed graph) are returned, never crashes; they name the input or the
// node and op.
absl::StatusOr<std::vector<Tensor>> Interpret(
    const Graph& graph, absl::Span<const Tensor> inputs,
    const OpRegistry& registry = OpRegistry::Global());

}  // namespace loom

#endif  // LOOM_IR_INTERPRETER_H_
