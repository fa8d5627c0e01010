#ifndef LOOM_SCHEDULER_SCHEDULE_PASS_H_
#define LOOM_SCHEDULER_SCHEDULE_PASS_H_

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Orders the compute nodes by their buffer dependencies (a node runs after
// every node that writes a buffer it reads; ties keep program order) and
// makes one kernel per compute node. Fusion comes later.
absl::StatusOr<Schedule> ScheduleProgram(const LoopProgram& program);

}  // namespace loom

#endif  // LOOM_SCHEDULER_SCHEDULE_PASS_H_
