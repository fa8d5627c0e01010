#ifndef LOOM_SCHEDULER_FUSE_H_
#define LOOM_SCHEDULER_FUSE_H_

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"
#include "scheduler/fuse_options.pb.h"

namespace loom {

// Fuses the kernels of `schedule` (one compute node each, in dependency
// order) into kernels whose members share outer loops (Kernel):
//  - vertical: a consumer with the producers of what it reads, sharing as
//    many leading loops as a common refinement of both iteration spaces
//    allows (scheduler/refine.h: GroupNorm's statistics over (n, g) and
//    its normalisation over (n, c, h, w) share (n, g) once c splits into
//    (g, c_in_group)), provided every value read inside the kernel was
//    written in the same outer iteration. With equal iteration spaces
//    this is the classic fusion of a reduction with its epilogue or of a
//    pointwise chain.
//  - horizontal: siblings over the same iteration space that read the same
//    buffer.
// Members whose loops were refined are rewritten in `program` (their loops
// split, their index expressions substituted), which is why it is not
// const. Pointwise producers read once are already inlined by lowering,
// which covers prologues. A fusion is refused when a consumer of one group
// would have to run before the merged kernel (which is what any cycle
// needs; decided from the kernels' places in a topological order kept
// valid by every merge, never from ancestor sets or a search), when the
// kernel would grow past options.max_nodes_per_kernel, or when the data
// would have to cross outer iterations; each candidate's decision and
// reason is recorded. Temporaries written and read only inside one kernel
// become Kernel::internal (kept in registers or a per-iteration local
// array). Nothing is recomputed. `schedule` is taken by value and freed
// once its order is read (an unrolled recurrence's kernel per node would
// otherwise live on beside the fuser's tables).
absl::StatusOr<Schedule> FuseSchedule(LoopProgram& program, Schedule schedule,
                                      const proto::FuseOptions& options);

}  // namespace loom

#endif  // LOOM_SCHEDULER_FUSE_H_
