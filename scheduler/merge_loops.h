#ifndef LOOM_SCHEDULER_MERGE_LOOPS_H_
#define LOOM_SCHEDULER_MERGE_LOOPS_H_

#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Merges neighbouring loops that walk every buffer as one loop would (the
// `merge-loops` pass, run after fusion): loops x_i and x_{i+1} of a node,
// of extents E_i and E_{i+1}, become one loop v = E_{i+1} * x_i + x_{i+1}
// of extent E_i * E_{i+1} when each of the node's indexes is affine with
// the coefficient of x_i E_{i+1} times that of x_{i+1} (then its c * E *
// x_i + c * x_{i+1} is c * v). The merged loop runs the same iterations in
// the same order. So a kernel over [C, 7, 7] whose rows lie back to back
// in every buffer it touches runs as [C, 49], and its innermost loop, the
// one the compiler vectorises, is 49 long rather than 7.
//
// Only loops of one kind merge: a kernel's shared outer loops (where every
// member's indexes allow it), a member's own pointwise loops, or its
// reduction loops. A kernel with a library call (ExternOp) is left as it
// is: the call's loops describe the call. Returns whether it merged any.
bool MergeLoops(LoopProgram& program, Schedule& schedule);

}  // namespace loom

#endif  // LOOM_SCHEDULER_MERGE_LOOPS_H_
