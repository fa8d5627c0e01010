#ifndef LOOM_SCHEDULER_SCHEDULE_PASS_H_
#define LOOM_SCHEDULER_SCHEDULE_PASS_H_

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Orders the compute nodes by their buffer dependencies (a node runs after
// every earlier node that writes a buffer it reads; writes to one buffer
// keep their program order, and a write waits for the earlier reads of its
// buffer; ties keep program order) and makes one kernel per compute node.
// Fusion comes later.
absl::StatusOr<Schedule> ScheduleProgram(const LoopProgram& program);

// The dependency edges ScheduleProgram orders by, as (from, to) positions in
// program.nodes, sorted and without duplicates. A reader depends on the
// last earlier writer of each buffer it loads (and so, through the chain of
// writers, on all of them); a writer on the previous writer of its buffer
// and on the reads of that buffer since.
std::vector<std::pair<int, int>> DependencyEdges(const LoopProgram& program);

}  // namespace loom

#endif  // LOOM_SCHEDULER_SCHEDULE_PASS_H_
