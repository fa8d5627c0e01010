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
// InferShapes. Intermediate tensors are freed after their last use. The
// narrow floats (f16, bf16, f8*, f4e2m1) and the sub-byte integers (i4, u4,
// i2, u2) are storage types: every op but cast reads them in their
// ComputeType (f32, i32), computes there and rounds or wraps each result
// to its type.
//
// Errors (bad inputs, an op's error such as integer division by zero, a
// malformed graph) are returned, never crashes; they name the input or the
// node and op.
absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph, absl::Span<const Tensor> inputs,
                                              const OpRegistry& registry = OpRegistry::Global());

// The graph with its float arithmetic widened to float64: every f32 and
// narrow float value (inputs, weights and constants exactly) becomes f64, and
// so does every dtype attribute naming one (OpDef::dtype_attrs: cast's
// "to"). bit_cast, which reads and writes bits, keeps its declared types:
// casts to and from them are added around it. Value ids are kept.
Graph WidenedToFloat64(const Graph& graph, const OpRegistry& registry = OpRegistry::Global());
// An f32 or narrow float tensor as f64, exactly; any other as it is.
Tensor WidenedToFloat64(const Tensor& tensor);

// Interprets the graph's float32 computation in float64 (WidenedToFloat64),
// on inputs typed as the graph declares them: the truth that a float32
// computation approximates, up to float64's own rounding. Outputs that the
// graph declares f32 or a narrow float come back f64.
absl::StatusOr<std::vector<Tensor>> InterpretInFloat64(
    const Graph& graph, absl::Span<const Tensor> inputs,
    const OpRegistry& registry = OpRegistry::Global());

struct BoundedOutputs {
  std::vector<Tensor> values;  // as InterpretInFloat64 computes them
  // Per output, f64 of its shape: per element, how far a float32 (or
  // float64, where the graph says f64) implementation's result may
  // legitimately be from the value. Each op's error model (OpDef::bound,
  // ir/ops/error_bound.h) bounds its own rounding and carries its inputs'
  // bounds through, so the bounds grow where the computation cancels.
  std::vector<Tensor> bounds;
};

// InterpretInFloat64 with error bounds, for a graph of primitive ops
// (decompose composite ops first: their bounds are an Unimplemented error).
absl::StatusOr<BoundedOutputs> InterpretWithErrorBounds(
    const Graph& graph, absl::Span<const Tensor> inputs,
    const OpRegistry& registry = OpRegistry::Global());

}  // namespace loom

#endif  // LOOM_IR_INTERPRETER_H_
