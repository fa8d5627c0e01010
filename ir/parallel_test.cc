#include "ir/parallel.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace loom {
namespace {

// Every position is run once, whatever the parts, a part of nothing
// included.
TEST(RunInPartsTest, RunsEveryPositionOnce) {
  for (int64_t count : {0, 1, 7, 1000}) {
    for (int64_t parts : {0, 1, 3, 8}) {
      std::vector<std::atomic<int>> runs(count);
      RunInParts(count, parts, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) ++runs[i];
      });
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(runs[i], 1) << count << " " << parts << " " << i;
    }
  }
}

TEST(RunInPartsTest, HardwareThreadsIsAtLeastOne) { EXPECT_GE(HardwareThreads(), 1); }

}  // namespace
}  // namespace loom
