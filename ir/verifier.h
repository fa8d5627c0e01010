#ifndef LOOM_IR_VERIFIER_H_
#define LOOM_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/graph.h"
#include "ir/module.h"
#include "ir/op_registry.h"

namespace loom {

// Checks a graph whose types have been inferred (InferShapes):
// - every value id it names is in range;
// - graph inputs, weights and constants are values of that kind, with no
//   negative dimension, and an initializer's data has its value's type;
// - every node reads only values defined before it (graph inputs,
//   initializers or outputs of earlier nodes), which makes the graph
//   acyclic, and every intermediate value has exactly one producer;
// - every graph output is a defined value;
// - every node passes CheckNodeSignature;
// - re-running each node's shape function on its stored input types
//   reproduces its stored output types.
// Errors name the node (or value) and the cause: InvalidArgument for what a
// user's graph can get wrong, Internal for a broken invariant (bad ids,
// stale producers, stored types that disagree with the shape function).
absl::Status VerifyGraph(const Graph& graph, const OpRegistry& registry = OpRegistry::Global());

// VerifyGraph without the checks that InferShapes makes itself (each
// node's signature, and re-running its shape function), for a graph that
// InferShapes has just typed.
absl::Status VerifyGraphStructure(const Graph& graph,
                                  const OpRegistry& registry = OpRegistry::Global());

// The module's IR, checked: the graph as VerifyGraph does, or the loop
// program (VerifyLoopProgram) once lowering has consumed the graph's nodes
// (the graph is then only its interface).
absl::Status VerifyModule(const Module& module);

}  // namespace loom

#endif  // LOOM_IR_VERIFIER_H_
