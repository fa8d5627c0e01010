#ifndef LOOM_TOOLS_RANDOM_GRAPH_H_
#define LOOM_TOOLS_RANDOM_GRAPH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.pb.h"

namespace loom::gen {

// `loom gen --kind=random`: a random DAG of about `target_nodes` primitive
// f32 ops, the same for a seed on every machine, whose values stay finite on
// inputs in [-1, 1]. More than 10 million nodes is an InvalidArgument error.
absl::StatusOr<proto::Graph> GenerateRandomGraph(uint64_t seed, int target_nodes);

}  // namespace loom::gen

#endif  // LOOM_TOOLS_RANDOM_GRAPH_H_
