#include "ir/parallel.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

namespace loom {

void RunInParts(int64_t count, int64_t parts,
                const std::function<void(int64_t first, int64_t last)>& run) {
  parts = std::max<int64_t>(1, parts);
  std::vector<std::thread> helpers;
  for (int64_t p = 1; p < parts; ++p) {
    const int64_t first = count * p / parts, last = count * (p + 1) / parts;
    try {
      helpers.emplace_back(run, first, last);
    } catch (const std::system_error&) {
      run(first, last);
    }
  }
  run(0, count / parts);
  for (std::thread& helper : helpers) helper.join();
}

int64_t HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

int64_t PartsForElements(int64_t elements) {
  constexpr int64_t kElementsPerPart = int64_t{1} << 17;
  return std::max<int64_t>(1, std::min(elements / kElementsPerPart, HardwareThreads()));
}

}  // namespace loom
