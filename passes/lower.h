#ifndef LOOM_PASSES_LOWER_H_
#define LOOM_PASSES_LOWER_H_

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace loom {

// Lowers a graph of primitive ops into loop IR: every op that computes
// becomes a compute node writing its own buffer; views (reshape,
// transpose, squeeze, unsqueeze, expand, slice, split) become index
// remappings in the loads of their consumers; weights and constants become
// buffers bound from the graph's data, one-element constants are inlined.
// tile is a view too
// (indices modulo the input's dims); pad writes its buffer twice (a fill,
// then the interior); gather is an indirect load and needs its indices as a
// graph constant or weight, each checked here; argmax / argmin are arg
// reductions; cumsum is a sum over the axis masked by loop positions. An op
// with no lowering (e.g. softmax before `decompose`), runtime gather
// indices or an out-of-range one are InvalidArgumentErrors naming the node.
absl::StatusOr<LoopProgram> LowerGraph(const Graph& graph);

// LowerGraph for a graph the caller is done with (the `lower` pass): each
// block of its nodes is freed once lowered, so that the nodes and the loop
// program they become are never both held whole (an unrolled recurrence's
// nodes take more memory than its program). On return, failed or not, the
// graph has no nodes; it keeps its values and its inputs, weights,
// constants and outputs, which the runtime binds.
absl::StatusOr<LoopProgram> LowerGraphReleasingNodes(Graph& graph);

}  // namespace loom

#endif  // LOOM_PASSES_LOWER_H_
