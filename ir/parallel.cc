#include "ir/parallel.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
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

void MapPages(void* begin, void* end) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  constexpr uintptr_t kPage = 4096;
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = reinterpret_cast<uintptr_t>(end) & ~(kPage - 1);
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
#endif
}

void CopyInParts(void* to, const void* from, int64_t bytes) {
  if (bytes <= 0) return;  // `from` may be null then
  char* out = static_cast<char*>(to);
  const char* in = static_cast<const char*>(from);
  RunInParts(bytes, PartsForElements(bytes / 4), [=](int64_t first, int64_t last) {
    MapPages(out + first, out + last);
    std::memcpy(out + first, in + first, last - first);
  });
}

}  // namespace loom
