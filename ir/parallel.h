#ifndef LOOM_IR_PARALLEL_H_
#define LOOM_IR_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace loom {

// Runs `run(first, last)` over [0, count) cut into `parts` contiguous
// parts of about equal size, each on a thread of its own but the first,
// which the calling thread runs; returns when all are done. A part whose
// thread cannot be started runs on the calling thread: nothing is thrown.
void RunInParts(int64_t count, int64_t parts,
                const std::function<void(int64_t first, int64_t last)>& run);

// The machine's hardware threads, at least 1.
int64_t HardwareThreads();

}  // namespace loom

#endif  // LOOM_IR_PARALLEL_H_
