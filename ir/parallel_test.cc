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

// Every byte arrives, in copies of one part and of several, at offsets
// that are not page boundaries.
TEST(CopyInPartsTest, CopiesEveryByte) {
  for (int64_t bytes : {0, 1, 4097, 3 << 20}) {
    std::vector<unsigned char> from(bytes + 3), to(bytes + 5, 0);
    for (int64_t i = 0; i < bytes + 3; ++i) from[i] = static_cast<unsigned char>(i * 7 + 1);
    CopyInParts(to.data() + 5, from.data() + 3, bytes);
    for (int64_t i = 0; i < bytes; ++i) ASSERT_EQ(to[i + 5], from[i + 3]) << bytes << " " << i;
    for (int64_t i = 0; i < 5; ++i) ASSERT_EQ(to[i], 0) << bytes;
  }
}

}  // namespace
}  // namespace loom
