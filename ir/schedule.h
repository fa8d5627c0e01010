#ifndef LOOM_IR_SCHEDULE_H_
#define LOOM_IR_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
struct Kernel {
  std::string name;
  std::vector<int> nodes;  // indexes into LoopProgram::nodes
  int outer_loops = 0;
  // Temporaries written and read only inside this kernel (so, by the rule
  // above, only within the outer iteration that wrote them). They need no
  // memory: a writer with no inner pointwise loops produces one element per
  // outer iteration, which passes in a register; any other writer's slice
  // of one outer iteration (at most a few hundred KiB) lives in a local
  // array (CPU) or shared memory (GPU).
  std::vector<BufferId> internal;
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

// Why two compute nodes were or were not fused (XLA's FusionDecision).
struct FusionDecision {
  int producer = -1;  // LoopProgram node indexes; for siblings, the earlier
  int consumer = -1;
  bool fused = false;
  // A short fixed phrase: the kind of fusion ("vertical", "horizontal") or
  // the reason for refusing it ("iteration spaces differ", ...), so that
  // decisions can be counted by reason.
  std::string reason;
  std::string detail;  // specifics, e.g. the two iteration spaces
};

// What the scheduler produces and the backends consume: kernels in
// execution order.
struct Schedule {
  std::vector<Kernel> kernels;
  std::vector<FusionDecision> decisions;  // every candidate the fuser weighed
  std::optional<MemoryPlan> memory;
};

std::string PrintSchedule(const Schedule& schedule, const LoopProgram& program);

}  // namespace loom

#endif  // LOOM_IR_SCHEDULE_H_
