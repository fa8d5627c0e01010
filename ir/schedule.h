#ifndef LOOM_IR_SCHEDULE_H_
#define LOOM_IR_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "ir/loop_ir.h"

namespace loom {

// One kernel launch: compute nodes of the LoopProgram run together, in this
// order, by one emitted function. Members of a fused kernel share their
// first `outer_loops` pointwise loops (equal extents, the same variables
// x0..x{outer_loops-1}); inside one iteration of those, each member in turn
// runs its remaining pointwise loops and then its reduction loops. A buffer
// written by a member and read by a later one is read only within the
// outer iteration that wrote it (the fuser's legality rule), so the outer
// loops may run in any order or in parallel.
//
// A schedule has a kernel per compute node before fusion (a million at the
// scale loom targets) and most fused kernels are small, so the lists keep
// a few entries inline rather than on the heap.
struct Kernel {
  std::string name;
  absl::InlinedVector<int, 4> nodes;  // indexes into LoopProgram::nodes
  int outer_loops = 0;
  // Temporaries written and read only inside this kernel (so, by the rule
  // above, only within the outer iteration that wrote them). They need no
  // memory: a writer with no inner pointwise loops produces one element per
  // outer iteration, which passes in a register; any other writer's slice
  // of one outer iteration (at most a few hundred KiB) lives in a local
  // array (CPU) or shared memory (GPU).
  absl::InlinedVector<BufferId, 4> internal;
  // How many kernels, this one and those right after it, run as one chain
  // of tasks (ir/gemm_chain.h), set on the first kernel of a chain: a
  // backend may interleave their iterations, so the memory plan keeps every
  // buffer they touch live through all of them. 1 for a kernel on its own.
  int chain_length = 1;
  // The outer loop that runs in order, its iterations one after another on
  // one thread, where each reads what the one before wrote (the kernel of a
  // LoopRegion: 1, its iterations inside its rows); -1 when the outer loops
  // may run in any order or in parallel. Nothing fuses with such a kernel.
  int ordered_loop = -1;
};

// Where each buffer lives at run time (the plan-memory pass). Temporaries
// share one arena; inputs, weights and outputs are bound by the runtime.
struct MemoryPlan {
  // Byte offset into the arena of each buffer; -1 for buffers outside the
  // arena (inputs, weights, outputs) and for internal buffers (no storage).
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;
  // Bytes of all temporaries if each had its own storage (before planning).
  int64_t unplanned_bytes = 0;
};

// The kind of a fusion, or the reason for refusing one.
enum class FusionReason : uint8_t {
  // Fused:
  kVertical,    // a consumer with a producer of what it reads
  kHorizontal,  // siblings that read the same buffer
  // Refused:
  kIterationSpacesDiffer,
  kKernelTooLarge,
  kConsumerRunsBetween,  // fusing could create a cycle
  kDataCrossesIterations,
  kExternCall,     // one is a library call (ExternOp), which runs alone
  kInOrderedLoop,  // one is in a loop that runs in order (Kernel::ordered_loop)
};

// The reason as a short fixed phrase ("vertical", "iteration spaces
// differ", ...), by which the report counts decisions.
absl::string_view FusionReasonText(FusionReason reason);

// Why two compute nodes were or were not fused (XLA's FusionDecision). The
// fuser weighs a few hundred thousand candidates in a program of a million
// nodes, so a decision holds numbers, not text: DescribeFusion spells out
// the specifics of the few decisions someone asks about.
struct FusionDecision {
  int32_t producer = -1;  // LoopProgram node indexes; for siblings, the earlier
  int32_t consumer = -1;
  FusionReason reason = FusionReason::kVertical;
  // The specifics of a refusal, by reason:
  //  - kIterationSpacesDiffer: where the two spaces begin in
  //    Schedule::refused_spaces;
  //  - kKernelTooLarge: the nodes the kernel would have, and the limit;
  //  - kConsumerRunsBetween: the node that reads one and runs before the
  //    other;
  //  - kExternCall: the node that is a library call;
  //  - kInOrderedLoop: the node in the loop.
  int32_t specifics[2] = {-1, -1};

  bool fused() const {
    return reason == FusionReason::kVertical || reason == FusionReason::kHorizontal;
  }
};

// What the scheduler produces and the backends consume: kernels in
// execution order.
struct Schedule {
  std::vector<Kernel> kernels;
  std::vector<FusionDecision> decisions;  // every candidate the fuser weighed
  std::optional<MemoryPlan> memory;
  // The iteration spaces named by kIterationSpacesDiffer decisions, each as
  // its number of loops followed by their extents.
  std::vector<int64_t> refused_spaces;
};

// The specifics of a decision in words, e.g. "[1,4] vs [6,4]" or "65 nodes
// > 64"; empty for a fusion.
std::string DescribeFusion(const FusionDecision& decision, const Schedule& schedule,
                           const LoopProgram& program);

std::string PrintSchedule(const Schedule& schedule, const LoopProgram& program);

}  // namespace loom

#endif  // LOOM_IR_SCHEDULE_H_
