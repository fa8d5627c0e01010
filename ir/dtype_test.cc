#include "ir/dtype.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t k2To40 = int64_t{1} << 40;

TEST(SizeArithmeticTest, CheckedMulRefusesWhatDoesNotFit) {
  EXPECT_EQ(CheckedMul(k2To40, 1 << 20), int64_t{1} << 60);
  EXPECT_EQ(CheckedMul(k2To40, k2To40), std::nullopt);
  EXPECT_EQ(CheckedMul(kInt64Min, -1), std::nullopt);
  EXPECT_EQ(CheckedMul(-3, 4), -12);
}

TEST(SizeArithmeticTest, SaturatingMulNeverReadsSmall) {
  EXPECT_EQ(SaturatingMul(k2To40, k2To40), kInt64Max);
  EXPECT_EQ(SaturatingMul(-k2To40, k2To40), kInt64Min);
  EXPECT_EQ(SaturatingMul(6, 7), 42);
}

TEST(SizeArithmeticTest, ProductsOfDims) {
  EXPECT_EQ(CheckedProduct({}), 1);
  EXPECT_EQ(CheckedProduct({2, 3, 4}), 24);
  EXPECT_EQ(CheckedProduct({k2To40, k2To40}), std::nullopt);
  // A zero makes the product 0 however large the others (2^80 here).
  EXPECT_EQ(CheckedProduct({k2To40, k2To40, 0}), 0);
  EXPECT_EQ(NumElements({k2To40, k2To40}), kInt64Max);
  EXPECT_EQ(NumElements({k2To40, k2To40, 0}), 0);
  EXPECT_EQ(NumBytes(DType::kF64, {2, 3}), 48);
  EXPECT_EQ(NumBytes(DType::kF32, {k2To40, 1 << 23}), kInt64Max);
  EXPECT_EQ(ContiguousStrides({k2To40, k2To40, 2}),
            (std::vector<int64_t>{int64_t{1} << 41, 2, 1}));
  EXPECT_EQ(ContiguousStrides({2, k2To40, k2To40}),
            (std::vector<int64_t>{kInt64Max, k2To40, 1}));
}

TEST(SizeArithmeticTest, ShapeLimitsNameTheOverflow) {
  EXPECT_TRUE(CheckShapeLimits({k2To40}).ok());
  EXPECT_TRUE(CheckShapeLimits({0, k2To40}).ok());
  EXPECT_THAT(std::string(CheckShapeLimits({k2To40, 2}).message()),
              HasSubstr("shape [1099511627776,2] is too large: 2199023255552 elements"));
  EXPECT_THAT(std::string(CheckShapeLimits({k2To40, k2To40}).message()),
              HasSubstr("is too large: its element count overflows int64"));
  EXPECT_THAT(std::string(CheckShapeLimits({k2To40, k2To40, 0}).message()),
              HasSubstr("overflows int64"));
  EXPECT_THAT(std::string(CheckShapeLimits({4, -3}).message()),
              HasSubstr("shape [4,-3] has a negative dimension"));
}

}  // namespace
}  // namespace loom
