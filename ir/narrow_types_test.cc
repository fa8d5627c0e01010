// The 8- and 4-bit floats and the sub-byte integers (ir/dtype.h): their
// conversions against ONNX's Cast (saturate=0, ml_dtypes' astype) and
// Tensor's one-a-byte storage.

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace loom {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr DType kFloat8s[] = {DType::kF8E4M3FN, DType::kF8E4M3FNUZ, DType::kF8E5M2,
                              DType::kF8E5M2FNUZ, DType::kF8E8M0};

TEST(NarrowTypesTest, NamesComputeTypesAndClasses) {
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(DTypeFromName(DTypeName(dtype)).value(), dtype) << DTypeName(dtype);
    EXPECT_EQ(DTypeFromProto(DTypeToProto(dtype)).value(), dtype) << DTypeName(dtype);
  }
  for (DType dtype : kFloat8s) {
    EXPECT_TRUE(IsFloat(dtype) && IsNarrowFloat(dtype) && IsStorageType(dtype));
    EXPECT_EQ(ComputeType(dtype), DType::kF32);
    EXPECT_EQ(DTypeSize(dtype), 1);
  }
  EXPECT_TRUE(IsNarrowFloat(DType::kF4E2M1) && !IsHalfFloat(DType::kF4E2M1));
  for (DType dtype : {DType::kI4, DType::kU4, DType::kI2, DType::kU2}) {
    EXPECT_TRUE(IsInteger(dtype) && IsSubByteInteger(dtype) && IsStorageType(dtype));
    EXPECT_EQ(ComputeType(dtype), DType::kI32);
    EXPECT_EQ(DTypeSize(dtype), 1);  // unpacked
  }
  EXPECT_EQ(ComputeType(DType::kI8), DType::kI8);
  EXPECT_EQ(IntegerMinBits(DType::kI4), -8);
  EXPECT_EQ(IntegerMaxBits(DType::kI4), 7);
  EXPECT_EQ(IntegerMaxBits(DType::kU4), 15);
  EXPECT_EQ(IntegerMinBits(DType::kI2), -2);
  EXPECT_EQ(IntegerMaxBits(DType::kU2), 3);
  EXPECT_TRUE(IsUnsigned(DType::kU2) && !IsUnsigned(DType::kI2));
}

// Every code of every 8-bit float (and of f4e2m1) converts to its value
// and back to itself; the NaN codes to NaN (back to the type's NaN).
TEST(NarrowTypesTest, EveryCodeRoundTrips) {
  for (DType dtype : {DType::kF8E4M3FN, DType::kF8E4M3FNUZ, DType::kF8E5M2, DType::kF8E5M2FNUZ,
                      DType::kF8E8M0, DType::kF4E2M1}) {
    const int codes = dtype == DType::kF4E2M1 ? 16 : 256;
    int nans = 0;
    for (int code = 0; code < codes; ++code) {
      const double value = NarrowFloatValue(code, dtype);
      if (std::isnan(value)) {
        ++nans;
        EXPECT_TRUE(std::isnan(NarrowFloatValue(NarrowFloatBits(value, dtype), dtype)));
        continue;
      }
      EXPECT_EQ(NarrowFloatBits(value, dtype), code) << DTypeName(dtype) << " " << value;
    }
    // FN: +-NaN; FNUZ: 0x80 alone; E5M2: 3 NaN mantissas a sign; E8M0: 0xff.
    const int expected_nans = dtype == DType::kF8E4M3FN ? 2
                              : dtype == DType::kF8E5M2 ? 6
                              : dtype == DType::kF4E2M1 ? 0
                                                        : 1;
    EXPECT_EQ(nans, expected_nans) << DTypeName(dtype);
  }
}

TEST(NarrowTypesTest, LargestValues) {
  EXPECT_EQ(NarrowFloatMax(DType::kF8E4M3FN), 448);
  EXPECT_EQ(NarrowFloatMax(DType::kF8E4M3FNUZ), 240);
  EXPECT_EQ(NarrowFloatMax(DType::kF8E5M2), 57344);
  EXPECT_EQ(NarrowFloatMax(DType::kF8E5M2FNUZ), 57344);
  EXPECT_EQ(NarrowFloatMax(DType::kF4E2M1), 6);
  EXPECT_EQ(NarrowFloatMax(DType::kF8E8M0), std::ldexp(1.0, 127));
  EXPECT_EQ(NarrowFloatValue(0x01, DType::kF8E4M3FN), std::ldexp(1.0, -9));  // subnormal
  EXPECT_EQ(NarrowFloatValue(0x01, DType::kF8E5M2FNUZ), std::ldexp(1.0, -17));
  EXPECT_EQ(NarrowFloatValue(0x7c, DType::kF8E5M2), kInf);
  EXPECT_EQ(NarrowFloatValue(0x0f, DType::kF4E2M1), -6);
}

TEST(NarrowTypesTest, RoundsToNearestEven) {
  const DType fn = DType::kF8E4M3FN;
  EXPECT_EQ(NarrowFloatBits(1.0 + 1.0 / 16, fn), 0x38);  // a tie, down to 1 (even)
  EXPECT_EQ(NarrowFloatBits(1.0 + 3.0 / 16, fn), 0x3a);  // a tie, up to 1.25 (even)
  EXPECT_EQ(NarrowFloatBits(1.0 + 1.0 / 16 + 1e-9, fn), 0x39);
  EXPECT_EQ(NarrowFloatBits(std::ldexp(1.0, -10), fn), 0x00);   // half the smallest subnormal
  EXPECT_EQ(NarrowFloatBits(std::ldexp(3.0, -10), fn), 0x02);   // 1.5 of it: to 2, even
  EXPECT_EQ(NarrowFloatBits(-std::ldexp(1.0, -11), fn), 0x80);  // -0 kept
  EXPECT_EQ(NarrowFloatBits(0.4789254665374756, fn), NarrowFloatBits(0.46875, fn));
  EXPECT_EQ(NarrowFloatBits(1.75 * 2, DType::kF4E2M1), 0x6);  // 3.5: a tie, to 4
  EXPECT_EQ(NarrowFloatBits(0.25, DType::kF4E2M1), 0x0);      // a tie, to 0
  EXPECT_EQ(NarrowFloatBits(2.5, DType::kF8E5M2), NarrowFloatBits(2.5, DType::kF8E5M2));
  EXPECT_EQ(NarrowFloatValue(NarrowFloatBits(2.5, DType::kF8E5M2), DType::kF8E5M2), 2.5);
  EXPECT_EQ(NarrowFloatValue(NarrowFloatBits(2.75, DType::kF8E5M2), DType::kF8E5M2), 3);
}

// Past the largest finite value (after rounding), as ONNX's saturate=0
// table says: infinity in E5M2, NaN in the FN and FNUZ types; f4e2m1
// saturates; FNUZ has neither -0 nor a signed NaN.
TEST(NarrowTypesTest, OverflowNaNAndZero) {
  EXPECT_EQ(NarrowFloatBits(464, DType::kF8E4M3FN), 0x7e);  // a tie, down to 448
  EXPECT_EQ(NarrowFloatBits(465, DType::kF8E4M3FN), 0x7f);  // NaN
  EXPECT_EQ(NarrowFloatBits(-kInf, DType::kF8E4M3FN), 0xff);
  EXPECT_EQ(NarrowFloatBits(-kNaN, DType::kF8E4M3FN), 0xff);
  EXPECT_EQ(NarrowFloatBits(1e6, DType::kF8E4M3FNUZ), 0x80);
  EXPECT_EQ(NarrowFloatBits(-kNaN, DType::kF8E4M3FNUZ), 0x80);
  EXPECT_EQ(NarrowFloatBits(-0.0, DType::kF8E4M3FNUZ), 0x00);
  EXPECT_EQ(NarrowFloatBits(-1e-30, DType::kF8E5M2FNUZ), 0x00);
  EXPECT_EQ(NarrowFloatBits(61440, DType::kF8E5M2), 0x7c);  // a tie, up to infinity
  EXPECT_EQ(NarrowFloatBits(61439, DType::kF8E5M2), 0x7b);
  EXPECT_EQ(NarrowFloatBits(-kInf, DType::kF8E5M2), 0xfc);
  EXPECT_EQ(NarrowFloatBits(kNaN, DType::kF8E5M2), 0x7e);
  EXPECT_EQ(NarrowFloatBits(7, DType::kF4E2M1), 0x7);
  EXPECT_EQ(NarrowFloatBits(-kInf, DType::kF4E2M1), 0xf);
  EXPECT_EQ(NarrowFloatBits(kNaN, DType::kF4E2M1), 0x0);
}

// f8e8m0 as ONNX's Cast by default: up to a power of two, saturating.
TEST(NarrowTypesTest, E8M0RoundsUpAndSaturates) {
  const DType e8m0 = DType::kF8E8M0;
  EXPECT_EQ(NarrowFloatBits(0.0, e8m0), 0x00);  // 2^-127, the smallest
  EXPECT_EQ(NarrowFloatBits(0.25, e8m0), 0x7d);
  EXPECT_EQ(NarrowFloatBits(1.1, e8m0), 0x80);
  EXPECT_EQ(NarrowFloatBits(0.124, e8m0), 0x7c);
  EXPECT_EQ(NarrowFloatBits(std::ldexp(1.5, 127), e8m0), 0xfe);  // saturated
  EXPECT_EQ(NarrowFloatBits(kInf, e8m0), 0xff);
  EXPECT_EQ(NarrowFloatBits(kNaN, e8m0), 0xff);
  EXPECT_EQ(NarrowFloatBits(3e-39, e8m0), 0x00);  // below 2^-127
  EXPECT_EQ(NarrowFloatBits(1e-38, e8m0), 0x01);  // up to 2^-126
  EXPECT_EQ(NarrowFloatValue(0x00, e8m0), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(NarrowFloatValue(0xff, e8m0)));
}

// Floats to the sub-byte integers as ONNX's reference (ml_dtypes):
// truncated, 0 outside the range; integers wrap.
TEST(NarrowTypesTest, SubByteIntegersTruncateAndWrap) {
  EXPECT_EQ(FloatToIntegerBits(7.9, DType::kI4), 7);
  EXPECT_EQ(FloatToIntegerBits(-8.5, DType::kI4), -8);
  EXPECT_EQ(FloatToIntegerBits(-9, DType::kI4), 0);
  EXPECT_EQ(FloatToIntegerBits(8, DType::kI4), 0);
  EXPECT_EQ(FloatToIntegerBits(kInf, DType::kU4), 0);
  EXPECT_EQ(FloatToIntegerBits(kNaN, DType::kI2), 0);
  EXPECT_EQ(FloatToIntegerBits(-2.5, DType::kI2), -2);
  EXPECT_EQ(FloatToIntegerBits(2.5, DType::kI2), 0);
  EXPECT_EQ(FloatToIntegerBits(-0.5, DType::kU2), 0);
  EXPECT_EQ(IntegerClipBoundBits(100, /*is_lower=*/false, DType::kI4), 7);
  Tensor t(DType::kI4, {3});
  t.SetInt(0, 9);
  t.SetInt(1, -9);
  t.SetDouble(2, -3.7);
  EXPECT_EQ(t.GetInt(0), -7);
  EXPECT_EQ(t.GetInt(1), 7);
  EXPECT_EQ(t.GetDouble(2), -3);
  EXPECT_EQ(t.data_as<int8_t>()[0], -7);  // one a byte, sign-extended
  Tensor u(DType::kU2, {2});
  u.SetInt(0, -1);
  u.SetInt(1, 6);
  EXPECT_EQ(u.GetInt(0), 3);
  EXPECT_EQ(u.GetInt(1), 2);
}

TEST(NarrowTypesTest, TensorsHoldOneByteOfBitsAnElement) {
  Tensor t(DType::kF8E5M2, {2});
  EXPECT_EQ(t.num_bytes(), 2);
  t.SetDouble(0, -2.0);
  t.SetDouble(1, 1e9);
  EXPECT_EQ(t.data_as<uint8_t>()[0], 0xc0);
  EXPECT_EQ(t.GetDouble(0), -2.0);
  EXPECT_EQ(t.GetDouble(1), kInf);
  Tensor converted = ConvertedFloats(t, DType::kF8E4M3FN);
  EXPECT_EQ(converted.GetDouble(0), -2.0);
  EXPECT_TRUE(std::isnan(converted.GetDouble(1)));
}

}  // namespace
}  // namespace loom
