#ifndef LOOM_IR_SCHEDULE_H_
#define LOOM_IR_SCHEDULE_H_

#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace loom {

// One kernel launch: compute nodes of the LoopProgram run together, in this
// order, by one emitted function.
struct Kernel {
  std::string name;
  std::vector<int> nodes;  // indexes into LoopProgram::nodes
};

// What the scheduler produces and the backends consume: kernels in
// execution order.
struct Schedule {
  std::vector<Kernel> kernels;
};

std::string PrintSchedule(const Schedule& schedule, const LoopProgram& program);

}  // namespace loom

#endif  // LOOM_IR_SCHEDULE_H_
