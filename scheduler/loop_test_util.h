#ifndef LOOM_SCHEDULER_LOOP_TEST_UTIL_H_
#define LOOM_SCHEDULER_LOOP_TEST_UTIL_H_

// Building blocks of the loop programs the scheduler's tests write by hand.

#include "ir/loop_ir.h"

namespace loom {

// An f32 load of `buffer` at `index`.
inline ScalarOp Load(BufferId buffer, Expr index) {
  ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
  load.buffer = buffer;
  load.index = index;
  return load;
}

}  // namespace loom

#endif  // LOOM_SCHEDULER_LOOP_TEST_UTIL_H_
