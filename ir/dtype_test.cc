#include "ir/dtype.h"

#include <cmath>
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
  EXPECT_EQ(ContiguousStrides({k2To40, k2To40, 2}), (std::vector<int64_t>{int64_t{1} << 41, 2, 1}));
  EXPECT_EQ(ContiguousStrides({2, k2To40, k2To40}), (std::vector<int64_t>{kInt64Max, k2To40, 1}));
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

TEST(DTypeTest, NamesSizesAndProtoRoundTrip) {
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(*DTypeFromName(DTypeName(dtype)), dtype);
    EXPECT_EQ(*DTypeFromProto(DTypeToProto(dtype)), dtype);
  }
  EXPECT_EQ(DTypeName(DType::kU16), "u16");
  EXPECT_EQ(DTypeSize(DType::kI8), 1);
  EXPECT_EQ(DTypeSize(DType::kU16), 2);
  EXPECT_EQ(DTypeSize(DType::kU32), 4);
  EXPECT_EQ(DTypeSize(DType::kU64), 8);
  EXPECT_TRUE(IsInteger(DType::kU8) && IsUnsigned(DType::kU8));
  EXPECT_TRUE(IsInteger(DType::kI16) && !IsUnsigned(DType::kI16));
  EXPECT_FALSE(IsInteger(DType::kBool) || IsUnsigned(DType::kBool));
  EXPECT_THAT(DTypeFromName("u128").status().message(), HasSubstr("u8, u16, u32, u64"));
}

TEST(DTypeTest, IntegerBits) {
  EXPECT_EQ(IntegerMinBits(DType::kI16), -32768);
  EXPECT_EQ(IntegerMaxBits(DType::kU32), 4294967295);
  EXPECT_EQ(IntegerMaxBits(DType::kU64), -1);
  EXPECT_TRUE(IntegerLess(1, -1, DType::kU64));
  EXPECT_FALSE(IntegerLess(1, -1, DType::kI64));
  EXPECT_EQ(FloatToIntegerBits(1e300, DType::kU64), -1);
  EXPECT_EQ(FloatToIntegerBits(0x1p63, DType::kU64), kInt64Min);  // 2^63
  EXPECT_EQ(FloatToIntegerBits(-0.5, DType::kU32), 0);
  EXPECT_EQ(FloatToIntegerBits(-1e9, DType::kI16), -32768);
  EXPECT_EQ(FloatToIntegerBits(-1e300, DType::kI64), kInt64Min);
  EXPECT_EQ(FloatToIntegerBits(NAN, DType::kI8), 0);
  EXPECT_EQ(IntegerBitsToDouble(-1, DType::kU64), 0x1p64);
  EXPECT_EQ(IntegerBitsToDouble(-1, DType::kI64), -1.0);
  EXPECT_EQ(IntegerClipBoundBits(2.5, /*is_lower=*/true, DType::kU8), 3);
  EXPECT_EQ(IntegerClipBoundBits(-7, /*is_lower=*/true, DType::kU8), 0);
  EXPECT_EQ(IntegerClipBoundBits(1e10, /*is_lower=*/false, DType::kI8), 127);
  EXPECT_EQ(IntegerClipBoundBits(NAN, /*is_lower=*/false, DType::kI8), -128);
}

TEST(DTypeTest, HalfFloatTypes) {
  EXPECT_EQ(DTypeName(DType::kF16), "f16");
  EXPECT_EQ(*DTypeFromName("bf16"), DType::kBF16);
  EXPECT_EQ(DTypeSize(DType::kF16), 2);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_TRUE(IsFloat(DType::kF16) && IsHalfFloat(DType::kBF16) && !IsHalfFloat(DType::kF32));
  EXPECT_FALSE(IsInteger(DType::kF16) || IsInteger(DType::kBF16));
}

// Bits and values of f16 (1 sign, 5 exponent, 10 mantissa bits) and bf16
// (1, 8, 7): rounding to nearest, ties to even, at every scale.
TEST(DTypeTest, HalfFloatBitsRoundToNearestEven) {
  constexpr DType kF16 = DType::kF16;
  EXPECT_EQ(NarrowFloatBits(1.0, kF16), 0x3c00);
  EXPECT_EQ(NarrowFloatBits(-2.5, kF16), 0xc100);
  EXPECT_EQ(NarrowFloatBits(65504.0, kF16), 0x7bff);  // the largest finite
  EXPECT_EQ(NarrowFloatBits(65519.99, kF16), 0x7bff);
  EXPECT_EQ(NarrowFloatBits(65520.0, kF16), 0x7c00);  // the tie rounds to infinity
  EXPECT_EQ(NarrowFloatBits(-1e300, kF16), 0xfc00);
  EXPECT_EQ(NarrowFloatBits(1.0 + 0x1p-11, kF16), 0x3c00);  // a tie, to even
  EXPECT_EQ(NarrowFloatBits(1.0 + 3 * 0x1p-11, kF16), 0x3c02);
  EXPECT_EQ(NarrowFloatBits(1.0 + 0x1p-11 + 0x1p-30, kF16), 0x3c01);
  EXPECT_EQ(NarrowFloatBits(0x1p-24, kF16), 0x0001);  // the smallest subnormal
  EXPECT_EQ(NarrowFloatBits(0x1p-25, kF16), 0x0000);  // a tie, to even (zero)
  EXPECT_EQ(NarrowFloatBits(3 * 0x1p-25, kF16), 0x0002);
  EXPECT_EQ(NarrowFloatBits(0x1p-14 - 0x1p-25, kF16), 0x0400);  // up into the normals
  EXPECT_EQ(NarrowFloatBits(-0.0, kF16), 0x8000);
  EXPECT_EQ(NarrowFloatBits(NAN, kF16), 0x7e00);
  EXPECT_EQ(NarrowFloatBits(-NAN, kF16), 0xfe00);
  EXPECT_EQ(NarrowFloatBits(INFINITY, DType::kBF16), 0x7f80);
  EXPECT_EQ(NarrowFloatBits(1.0 + 0x1p-8, DType::kBF16), 0x3f80);  // a tie, to even
  EXPECT_EQ(NarrowFloatBits(1.0 + 3 * 0x1p-8, DType::kBF16), 0x3f82);
  EXPECT_EQ(NarrowFloatBits(3.3895313892515355e38, DType::kBF16), 0x7f7f);  // the largest
  EXPECT_EQ(NarrowFloatBits(0x1p-133, DType::kBF16), 0x0001);
  EXPECT_EQ(NarrowFloatBits(NAN, DType::kBF16), 0x7fc0);
}

TEST(DTypeTest, HalfFloatValuesRoundTrip) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int bits = 0; bits < 0x10000; ++bits) {
      const double value = NarrowFloatValue(static_cast<uint16_t>(bits), dtype);
      if (std::isnan(value)) {
        EXPECT_EQ(std::signbit(value), (bits & 0x8000) != 0);
        continue;
      }
      ASSERT_EQ(NarrowFloatBits(value, dtype), bits) << DTypeName(dtype) << " " << value;
    }
  }
  EXPECT_EQ(NarrowFloatValue(0x0001, DType::kF16), 0x1p-24);
  EXPECT_EQ(NarrowFloatValue(0x7bff, DType::kF16), 65504.0);
  EXPECT_EQ(NarrowFloatValue(0xfc00, DType::kF16), -INFINITY);
  EXPECT_EQ(NarrowFloatValue(0x3f80, DType::kBF16), 1.0);
}

}  // namespace
}  // namespace loom
