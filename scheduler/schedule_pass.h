#ifndef LOOM_SCHEDULER_SCHEDULE_PASS_H_
#define LOOM_SCHEDULER_SCHEDULE_PASS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Orders the compute nodes by their buffer dependencies (a node runs after
// every earlier node that writes a buffer it reads; writes to one buffer
// keep their program order, and a write waits for the earlier reads of its
// buffer) and makes one kernel per compute node. Every such dependency
// points forward in program order, so the order is the program's own, but
// that a copy into a buffer that other nodes write too (a concat's input
// into its part) runs right after the last node it depends on. Fusion
// comes later.
absl::StatusOr<Schedule> ScheduleProgram(const LoopProgram& program);

// The name of the kernel at `index` in a schedule: "kernel_<index>".
std::string KernelName(int index);

// Lists of ints in compressed sparse row form: list i is
// items[offsets[i] .. offsets[i+1]).
struct IntLists {
  std::vector<int> offsets = {0};
  std::vector<int> items;

  int size() const { return static_cast<int>(offsets.size()) - 1; }
  absl::Span<const int> operator[](int i) const {
    return absl::MakeConstSpan(items).subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
};

// The buffers each compute node loads, each once, in the order of their
// first loads.
IntLists LoadedBuffers(const LoopProgram& program);

// The dependency edges ScheduleProgram orders by: the nodes that depend on
// node i are list i, in increasing order, each once. A reader depends on
// the last earlier writer of each buffer it loads (and so, through the
// chain of writers, on all of them); a writer on the previous writer of its
// buffer and on the reads of that buffer since. Every edge goes from an
// earlier node to a later one. `loaded` is LoadedBuffers(program).
IntLists Dependencies(const LoopProgram& program, const IntLists& loaded);

}  // namespace loom

#endif  // LOOM_SCHEDULER_SCHEDULE_PASS_H_
