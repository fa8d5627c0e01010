#ifndef LOOM_SCHEDULER_DROP_UNIT_LOOPS_H_
#define LOOM_SCHEDULER_DROP_UNIT_LOOPS_H_

#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Removes the loops of extent 1 from the members of every kernel (the
// `drop-unit-loops` pass, run after fusion): such a loop's variable
// becomes 0 in every index, the later variables are renumbered, and a
// kernel's shared outer loops shrink by those it dropped. A reduction
// keeps one loop (the loop IR gives every reduction at least one), and a
// library call (ExternOp) keeps its loops, which describe the call. So
// neither backend prints a loop that runs once, and the plans, the dumps
// and the emitted code of both agree. Returns whether it dropped any.
bool DropUnitLoops(LoopProgram& program, Schedule& schedule);

}  // namespace loom

#endif  // LOOM_SCHEDULER_DROP_UNIT_LOOPS_H_
