#ifndef LOOM_PASSES_LOWER_H_
#define LOOM_PASSES_LOWER_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace loom {

// Lowers a graph of primitive ops into loop IR: every op that computes
// becomes a compute node writing its own buffer; views (reshape, transpose,
// squeeze, unsqueeze, expand, slice) become index remappings in the loads of
// their consumers; weights and constants become buffers bound from the
// graph's data, one-element constants are inlined. An op with no lowering
// (e.g. softmax before `decompose`) is an InvalidArgumentError naming the
// node.
absl::StatusOr<LoopProgram> LowerGraph(const Graph& graph);

}  // namespace loom

#endif  // LOOM_PASSES_LOWER_H_
