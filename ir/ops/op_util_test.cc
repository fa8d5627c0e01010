#include "ir/ops/op_util.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BroadcastShapesTest, AlignsFromTheRight) {
  EXPECT_EQ(*BroadcastShapes({2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(*BroadcastShapes({}, {5}), (Shape{5}));
  EXPECT_EQ(*BroadcastShapes({0, 1}, {1, 3}), (Shape{0, 3}));
  absl::StatusOr<Shape> bad = BroadcastShapes({2, 3}, {3, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("cannot broadcast shapes [2,3] and [3,3]"));
}

TEST(BroadcastStridesTest, ZeroWhereBroadcast) {
  EXPECT_THAT(BroadcastStrides({3, 1}, {2, 3, 4}), ElementsAre(0, 1, 0));
  EXPECT_THAT(BroadcastStrides({2, 3}, {2, 3}), ElementsAre(3, 1));
}

TEST(NormalizeAxesTest, NegativeDuplicateAndOutOfRange) {
  EXPECT_THAT(*NormalizeAxes({-1, 0}, 3), ElementsAre(2, 0));
  EXPECT_FALSE(NormalizeAxes({1, -2}, 3).ok());
  EXPECT_FALSE(NormalizeAxis(3, 3).ok());
  EXPECT_FALSE(NormalizeAxis(-4, 3).ok());
  EXPECT_EQ(*NormalizeAxis(-3, 3), 0);
}

TEST(StridedWalkTest, TracksEveryOperand) {
  // A transposed read of a [2, 3] tensor and a reversed slice of a [4].
  StridedWalk walk({3, 2}, {{1, 3}, {0, -1}}, {0, 3});
  std::vector<int64_t> first, second;
  for (int i = 0; i < 6; ++i, walk.Next()) {
    first.push_back(walk.offset(0));
    second.push_back(walk.offset(1));
  }
  EXPECT_THAT(first, ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(second, ElementsAre(3, 2, 3, 2, 3, 2));
  // After the last element the walk starts over.
  EXPECT_EQ(walk.offset(0), 0);
}

}  // namespace
}  // namespace loom
