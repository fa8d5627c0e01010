#ifndef LOOM_SCHEDULER_FUSE_H_
#define LOOM_SCHEDULER_FUSE_H_

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/pipeline.pb.h"
#include "ir/schedule.h"

namespace loom {

// Fuses the kernels of `schedule` (one compute node each, in dependency
// order) into kernels whose members share their pointwise loops:
//  - vertical: a consumer with the producer's iteration space that reads
//    the producer's buffer only at the point being computed (this covers a
//    reduction with its pointwise epilogue);
//  - horizontal: siblings over the same iteration space that read the same
//    buffer.
// Pointwise producers read once are already inlined by lowering, which
// covers prologues. A fusion is refused when a consumer of one group would
// have to run before the merged kernel (which is what any cycle needs;
// decided from the kernels' places in a topological order kept valid by
// every merge, never from ancestor sets or a search), when the kernel would
// grow past
// options.max_nodes_per_kernel, or when the data would have to cross loop
// iterations; each candidate's decision and reason is recorded. Buffers
// that end up written and read only inside one kernel become
// Kernel::internal. Nothing is recomputed.
absl::StatusOr<Schedule> FuseSchedule(const LoopProgram& program,
                                      const Schedule& schedule,
                                      const proto::FuseOptions& options);

}  // namespace loom

#endif  // LOOM_SCHEDULER_FUSE_H_
