#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tensor F32(Shape shape, const std::vector<double>& values) {
  return MakeTensor(DType::kF32, std::move(shape), values);
}

Tensor Ones(Shape shape) {
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, 1);
  return t;
}

// Runs `op` and returns its output's shape and values.
struct Result {
  Shape shape;
  std::vector<double> values;
};
Result Evaluate(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  absl::StatusOr<Tensor> y = RunOp(op, inputs, attrs);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  return {y->shape(), ToDoubles(*y)};
}

// --- conv --------------------------------------------------------------------

// ONNX's test_basic_conv_with_padding / _without_padding: a 3x3 box sum.
TEST(ConvTest, BoxSumWithAndWithoutPadding) {
  const Tensor x = Iota(DType::kF32, {1, 1, 5, 5});
  const Tensor w = Ones({1, 1, 3, 3});
  Result padded = Evaluate("conv", {x, w}, MakeAttrs({{"pads", Ints{1, 1, 1, 1}}}));
  EXPECT_EQ(padded.shape, (Shape{1, 1, 5, 5}));
  EXPECT_THAT(padded.values,
              ElementsAreArray({12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                                117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84}));
  Result valid = Evaluate("conv", {x, w});
  EXPECT_EQ(valid.shape, (Shape{1, 1, 3, 3}));
  EXPECT_THAT(valid.values, ElementsAre(54, 63, 72, 99, 108, 117, 144, 153, 162));
}

// ONNX's test_conv_with_strides_and_asymmetric_padding.
TEST(ConvTest, StridesAndAsymmetricPadding) {
  Result y = Evaluate("conv", {Iota(DType::kF32, {1, 1, 7, 5}), Ones({1, 1, 3, 3})},
                      MakeAttrs({{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 0}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 2}));
  EXPECT_THAT(y.values, ElementsAre(21, 33, 99, 117, 189, 207, 171, 183));
}

// y[o] = 2 x[o] - x[o + 2] + 10.
TEST(ConvTest, OneDimensionalDilatedWithBias) {
  Result y =
      Evaluate("conv", {F32({1, 1, 5}, {1, 2, 3, 4, 5}), F32({1, 1, 2}, {2, -1}), F32({1}, {10})},
               MakeAttrs({{"dilations", Ints{2}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 3}));
  EXPECT_THAT(y.values, ElementsAre(9, 10, 11));
}

TEST(ConvTest, SumsOverInputChannels) {
  Result y = Evaluate("conv", {F32({1, 2, 1, 2}, {1, 2, 3, 4}), F32({1, 2, 1, 1}, {1, 10})});
  EXPECT_EQ(y.shape, (Shape{1, 1, 1, 2}));
  EXPECT_THAT(y.values, ElementsAre(31, 42));
}

TEST(ConvTest, GroupsSeeOnlyTheirChannels) {
  Result y = Evaluate("conv", {F32({1, 2, 2}, {1, 2, 3, 4}), F32({2, 1, 1}, {10, 100})},
                      MakeAttrs({{"group", int64_t{2}}}));
  EXPECT_THAT(y.values, ElementsAre(10, 20, 300, 400));
}

// Two output channels per input channel: m0, m1 read channel 0, m2, m3
// channel 1.
TEST(ConvTest, DepthwiseWithMultiplier) {
  Result y = Evaluate(
      "conv", {F32({1, 2, 3}, {1, 2, 3, 4, 5, 6}), F32({4, 1, 2}, {1, 0, 0, 1, 1, 1, 1, -1})},
      MakeAttrs({{"group", int64_t{2}}}));
  EXPECT_EQ(y.shape, (Shape{1, 4, 2}));
  EXPECT_THAT(y.values, ElementsAre(1, 2, 2, 3, 9, 11, -1, -1));
}

// A 2x2x2 box over ones padded by one: 8 inside, 1 at a corner.
TEST(ConvTest, ThreeDimensionalPadded) {
  Result y = Evaluate("conv", {Ones({1, 1, 3, 3, 3}), Ones({1, 1, 2, 2, 2})},
                      MakeAttrs({{"pads", Ints{1, 1, 1, 1, 1, 1}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 4, 4}));
  EXPECT_EQ(y.values[0], 1);
  EXPECT_EQ(y.values[(1 * 4 + 1) * 4 + 1], 8);
  EXPECT_EQ(y.values[(0 * 4 + 1) * 4 + 1], 4);  // a face
}

TEST(ConvTest, BatchesAreIndependent) {
  Result y = Evaluate("conv", {F32({2, 1, 2}, {1, 2, 3, 4}), F32({1, 1, 2}, {1, 1})});
  EXPECT_EQ(y.shape, (Shape{2, 1, 1}));
  EXPECT_THAT(y.values, ElementsAre(3, 7));
}

TEST(ConvTest, Errors) {
  const Tensor x = Ones({1, 2, 4, 4});
  EXPECT_THAT(RunOpError("conv", {Ones({2, 4}), Ones({1, 2})}),
              HasSubstr("node 'test_node' (conv): x must have rank >= 3 "
                        "([N, C, spatial...]), got [2,4]"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({1, 2, 3})}),
              HasSubstr("(conv): the weight [1,2,3] must have x's rank 4"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({1, 3, 3, 3})}),
              HasSubstr("(conv): the weight [1,3,3,3] has 3 input channels per "
                        "group; x [1,2,4,4] with group 1 has 2"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({3, 1, 3, 3})}, MakeAttrs({{"group", int64_t{2}}})),
              HasSubstr("(conv): attribute 'group' (2) must be positive and "
                        "divide the input channels (2) and the output channels (3)"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({1, 2, 3, 3})}, MakeAttrs({{"strides", Ints{1}}})),
              HasSubstr("(conv): attribute 'strides' [1] has 1 entries; expected 2"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({1, 2, 3, 3})}, MakeAttrs({{"dilations", Ints{1, 0}}})),
              HasSubstr("(conv): attribute 'dilations' [1,0] has an entry outside [1, 2^40]"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({1, 2, 3, 3})}, MakeAttrs({{"pads", Ints{0, -1, 0, 0}}})),
              HasSubstr("(conv): attribute 'pads' [0,-1,0,0] has an entry outside"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({1, 2, 5, 3})}),
              HasSubstr("(conv): the kernel spans 5 positions along spatial dim 0, "
                        "more than the 4 of the padded input [1,2,4,4]"));
  EXPECT_THAT(RunOpError("conv", {x, Ones({2, 2, 3, 3}), Ones({3})}),
              HasSubstr("(conv): the bias must have shape [2], got [3]"));
  EXPECT_THAT(RunOpError("conv", {MakeTensor(DType::kI32, {1, 1, 2}, {1, 2}),
                                  MakeTensor(DType::kI32, {1, 1, 1}, {1})}),
              HasSubstr("(conv): input 0 has dtype i32"));
}

// --- max_pool ----------------------------------------------------------------

// --- conv_transpose ----------------------------------------------------------

// ONNX's test_convtranspose_1d and test_convtranspose: every input element
// adds itself to the kernel's span of outputs (a ones kernel, 2 channels).
TEST(ConvTransposeTest, OnesKernelSpreadsEachElement) {
  Result y = Evaluate("conv_transpose", {F32({1, 1, 3}, {0, 1, 2}), Ones({1, 2, 3})});
  EXPECT_EQ(y.shape, (Shape{1, 2, 5}));
  EXPECT_THAT(y.values, ElementsAre(0, 1, 3, 3, 2, 0, 1, 3, 3, 2));
  y = Evaluate("conv_transpose", {Iota(DType::kF32, {1, 1, 3, 3}), Ones({1, 1, 3, 3})});
  EXPECT_EQ(y.shape, (Shape{1, 1, 5, 5}));
  EXPECT_THAT(y.values, ElementsAreArray({0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                          27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8}));
}

// x [1, 2] with w [1, 10], stride 2: the full result is 1 10 2 20.
TEST(ConvTransposeTest, StridesPadsOutputPaddingAndBias) {
  const Tensor x = F32({1, 1, 2}, {1, 2});
  const Tensor w = F32({1, 1, 2}, {1, 10});
  EXPECT_THAT(Evaluate("conv_transpose", {x, w}, MakeAttrs({{"strides", Ints{2}}})).values,
              ElementsAre(1, 10, 2, 20));
  // One position cropped at the begin, one added at the end (bias only).
  Result y = Evaluate(
      "conv_transpose", {x, w, F32({1}, {0.5})},
      MakeAttrs({{"strides", Ints{2}}, {"pads", Ints{1, 0}}, {"output_padding", Ints{1}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 4}));
  EXPECT_THAT(y.values, ElementsAre(10.5, 2.5, 20.5, 0.5));
  // A negative pad adds positions that only the bias reaches.
  y = Evaluate("conv_transpose", {x, w, F32({1}, {0.5})},
               MakeAttrs({{"strides", Ints{2}}, {"pads", Ints{-1, 0}}}));
  EXPECT_THAT(y.values, ElementsAre(0.5, 1.5, 10.5, 2.5, 20.5));
  // Dilation 2 places kernel position 1 two outputs on: 1 2 10 20.
  EXPECT_THAT(Evaluate("conv_transpose", {x, w}, MakeAttrs({{"dilations", Ints{2}}})).values,
              ElementsAre(1, 2, 10, 20));
}

TEST(ConvTransposeTest, GroupsAndChannelSums) {
  const Tensor x = F32({1, 2, 1}, {1, 2});
  const Tensor w = F32({2, 1, 1}, {10, 100});
  Result grouped = Evaluate("conv_transpose", {x, w}, MakeAttrs({{"group", int64_t{2}}}));
  EXPECT_EQ(grouped.shape, (Shape{1, 2, 1}));
  EXPECT_THAT(grouped.values, ElementsAre(10, 200));
  Result summed = Evaluate("conv_transpose", {x, w});
  EXPECT_EQ(summed.shape, (Shape{1, 1, 1}));
  EXPECT_THAT(summed.values, ElementsAre(210));
  // Two batch entries, two output channels per group of one input channel.
  Result batched =
      Evaluate("conv_transpose", {F32({2, 2, 1}, {1, 2, 3, 4}), F32({2, 2, 1}, {1, 2, 3, 4})},
               MakeAttrs({{"group", int64_t{2}}}));
  EXPECT_EQ(batched.shape, (Shape{2, 4, 1}));
  EXPECT_THAT(batched.values, ElementsAre(1, 2, 6, 8, 3, 6, 12, 16));
}

TEST(ConvTransposeTest, ThreeDimensional) {
  Result y = Evaluate("conv_transpose", {Ones({1, 1, 2, 1, 1}), Ones({1, 1, 2, 1, 2})},
                      MakeAttrs({{"strides", Ints{1, 1, 2}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 3, 1, 2}));
  EXPECT_THAT(y.values, ElementsAre(1, 1, 2, 2, 1, 1));
}

TEST(ConvTransposeTest, Errors) {
  const Tensor x = Ones({1, 2, 3});
  EXPECT_THAT(RunOpError("conv_transpose", {x, Ones({3, 1, 2})}),
              HasSubstr("(conv_transpose): the weight [3,1,2] ([C, M/group, kernel...]) has 3 "
                        "input channels; x [1,2,3] has 2"));
  EXPECT_THAT(
      RunOpError("conv_transpose", {x, Ones({2, 1, 2})}, MakeAttrs({{"group", int64_t{3}}})),
      HasSubstr("(conv_transpose): attribute 'group' (3) must be positive and divide"));
  EXPECT_THAT(RunOpError("conv_transpose", {x, Ones({2, 1, 2}), Ones({2})}),
              HasSubstr("(conv_transpose): the bias must have shape [1], got [2]"));
  EXPECT_THAT(RunOpError("conv_transpose", {x, Ones({2, 1, 2})}, MakeAttrs({{"pads", Ints{2, 2}}})),
              HasSubstr("(conv_transpose): the output would have 0 positions along spatial "
                        "dim 0"));
  EXPECT_THAT(
      RunOpError("conv_transpose", {x, Ones({2, 1, 2})}, MakeAttrs({{"output_padding", Ints{-1}}})),
      HasSubstr("(conv_transpose): attribute 'output_padding' [-1] has an entry outside"));
  EXPECT_THAT(RunOpError("conv_transpose", {x, Ones({2, 1})}),
              HasSubstr("(conv_transpose): the weight [2,1] must have x's rank 3"));
  EXPECT_THAT(RunOpError("conv_transpose", {Ones({2, 3}), Ones({2, 3})}),
              HasSubstr("(conv_transpose): x must have rank >= 3"));
}

TEST(MaxPoolTest, StridedWindows) {
  Result y = Evaluate("max_pool", {Iota(DType::kF32, {1, 1, 4, 4})},
                      MakeAttrs({{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_THAT(y.values, ElementsAre(5, 7, 13, 15));
}

// Padding never wins, even over negative values.
TEST(MaxPoolTest, PaddingIsIgnored) {
  Result y = Evaluate("max_pool", {Iota(DType::kF32, {1, 1, 3, 3}, -9, 1)},
                      MakeAttrs({{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 3, 3}));
  EXPECT_THAT(y.values, ElementsAre(-5, -4, -4, -2, -1, -1, -2, -1, -1));
}

// Taps o and o + 2.
TEST(MaxPoolTest, Dilations) {
  Result y = Evaluate("max_pool", {F32({1, 1, 5}, {5, 1, 4, 2, 3})},
                      MakeAttrs({{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}}));
  EXPECT_THAT(y.values, ElementsAre(5, 2, 4));
}

TEST(MaxPoolTest, NaNPropagates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Result y = Evaluate("max_pool", {F32({1, 1, 4}, {1, nan, 3, 4})},
                      MakeAttrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}));
  ASSERT_EQ(y.values.size(), 2u);
  EXPECT_TRUE(std::isnan(y.values[0]));
  EXPECT_EQ(y.values[1], 4);
}

// Integers exactly; a padded position never wins (u8's minimum is 0).
TEST(MaxPoolTest, Integers) {
  absl::StatusOr<Tensor> y =
      RunOp("max_pool", {MakeIntTensor(DType::kU8, {1, 1, 4}, {200, 255, 3, 0})},
            MakeAttrs({{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}, {"strides", Ints{2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kU8);
  EXPECT_THAT(ToInts(*y), ElementsAre(200, 255, 0));
  const int64_t big = (int64_t{1} << 62) + 1;
  y = RunOp("max_pool", {MakeIntTensor(DType::kI64, {1, 1, 2}, {big, big - 1})},
            MakeAttrs({{"kernel_shape", Ints{2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(big));
  EXPECT_THAT(RunOpError("average_pool", {MakeIntTensor(DType::kU8, {1, 1, 2}, {1, 2})},
                         MakeAttrs({{"kernel_shape", Ints{2}}})),
              HasSubstr("(average_pool): input 0 has dtype u8, expected a float dtype"));
}

// Indices: flat in x (n, c and the row-major spatial position), the first
// maximum of the window, never a padding position; with storage_order 1
// the spatial position in column-major order.
TEST(MaxPoolTest, Indices) {
  // x[n, c] = [[4, 9, 9], [1, 9, 0]] + 10 (n * 2 + c).
  Tensor x(DType::kF32, {2, 2, 2, 3});
  const double plane[] = {4, 9, 9, 1, 9, 0};
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 6; ++i) x.SetDouble(p * 6 + i, plane[i] + 10 * p);
  }
  const Attrs attrs = MakeAttrs({{"kernel_shape", Ints{2, 2}}, {"pads", Ints{0, 1, 0, 0}}});
  absl::StatusOr<std::vector<Tensor>> y = RunOpOutputs("max_pool", {x}, attrs, 2);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[1].dtype(), DType::kI64);
  EXPECT_EQ((*y)[1].shape(), (Shape{2, 2, 1, 3}));
  EXPECT_THAT(ToDoubles((*y)[0]), ElementsAre(4, 9, 9, 14, 19, 19, 24, 29, 29, 34, 39, 39));
  EXPECT_THAT(ToInts((*y)[1]), ElementsAre(0, 1, 1, 6, 7, 7, 12, 13, 13, 18, 19, 19));
  Attrs column_major = attrs;
  column_major.Set("storage_order", int64_t{1});
  y = RunOpOutputs("max_pool", {x}, column_major, 2);
  ASSERT_TRUE(y.ok()) << y.status();
  // (h, w) = (0, 1) is 1 * 2 + 0 = 2 in column-major order.
  EXPECT_THAT(ToInts((*y)[1]), ElementsAre(0, 2, 2, 6, 8, 8, 12, 14, 14, 18, 20, 20));
}

TEST(MaxPoolTest, IndexOfNaNAndOfMinusInfinity) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  absl::StatusOr<std::vector<Tensor>> y =
      RunOpOutputs("max_pool", {F32({1, 1, 6}, {1, nan, nan, -inf, -inf, -inf})},
                   MakeAttrs({{"kernel_shape", Ints{3}}, {"strides", Ints{3}}}), 2);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts((*y)[1]), ElementsAre(1, 3));
  EXPECT_THAT(RunOpOutputs("max_pool", {F32({1, 1, 2}, {1, 2})},
                           MakeAttrs({{"kernel_shape", Ints{1}}, {"storage_order", int64_t{2}}}), 2)
                  .status()
                  .message(),
              HasSubstr("'storage_order' 0 or 1"));
}

// --- average_pool ------------------------------------------------------------

TEST(AveragePoolTest, PadsCountedOrNot) {
  const Tensor x = F32({1, 1, 3}, {1, 2, 3});
  Result excluded =
      Evaluate("average_pool", {x}, MakeAttrs({{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}}));
  EXPECT_EQ(excluded.shape, (Shape{1, 1, 4}));
  EXPECT_THAT(excluded.values, ElementsAre(1, 1.5, 2.5, 3));
  Result included = Evaluate(
      "average_pool", {x},
      MakeAttrs(
          {{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}, {"count_include_pad", int64_t{1}}}));
  EXPECT_THAT(included.values, ElementsAre(0.5, 1.5, 2.5, 1.5));
}

// ONNX's test_averagepool_2d_ceil.
TEST(AveragePoolTest, CeilMode) {
  Result y = Evaluate(
      "average_pool", {Iota(DType::kF32, {1, 1, 4, 4}, 1)},
      MakeAttrs(
          {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_THAT(y.values, ElementsAre(6, 7.5, 12, 13.5));
}

// The ceiling's extra window holds x[4] only; what it reaches past the
// input is never counted.
TEST(AveragePoolTest, CeilModeNeverCountsBeyondThePadding) {
  const Tensor x = F32({1, 1, 5}, {1, 2, 3, 4, 5});
  const Attrs ceil = MakeAttrs({{"kernel_shape", Ints{2}},
                                {"strides", Ints{2}},
                                {"ceil_mode", int64_t{1}},
                                {"count_include_pad", int64_t{1}}});
  EXPECT_THAT(Evaluate("average_pool", {x}, ceil).values, ElementsAre(1.5, 3.5, 5));
  EXPECT_THAT(
      Evaluate(
          "max_pool", {x},
          MakeAttrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}}))
          .values,
      ElementsAre(2, 4, 5));
  EXPECT_THAT(
      Evaluate("average_pool", {x}, MakeAttrs({{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}))
          .values,
      ElementsAre(1.5, 3.5));
}

// A last window that would start in the end padding is dropped.
TEST(AveragePoolTest, CeilModeDropsAWindowInTheEndPadding) {
  Result y = Evaluate("average_pool", {F32({1, 1, 4}, {1, 2, 3, 4})},
                      MakeAttrs({{"kernel_shape", Ints{2}},
                                 {"strides", Ints{2}},
                                 {"pads", Ints{0, 1}},
                                 {"ceil_mode", int64_t{1}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 2}));
}

TEST(AveragePoolTest, ThreeDimensional) {
  Result y = Evaluate("average_pool", {Iota(DType::kF32, {1, 2, 2, 2, 2})},
                      MakeAttrs({{"kernel_shape", Ints{2, 2, 2}}}));
  EXPECT_EQ(y.shape, (Shape{1, 2, 1, 1, 1}));
  EXPECT_THAT(y.values, ElementsAre(3.5, 11.5));
}

TEST(PoolTest, Errors) {
  const Tensor x = Ones({1, 1, 4, 4});
  EXPECT_THAT(RunOpError("max_pool", {x}),
              HasSubstr("(max_pool): missing required attribute 'kernel_shape'"));
  EXPECT_THAT(RunOpError("max_pool", {x}, MakeAttrs({{"kernel_shape", Ints{2}}})),
              HasSubstr("(max_pool): attribute 'kernel_shape' [2] has 1 entries; "
                        "expected 2"));
  EXPECT_THAT(RunOpError("average_pool", {x},
                         MakeAttrs({{"kernel_shape", Ints{2, 2}}, {"ceil_mode", int64_t{2}}})),
              HasSubstr("(average_pool): attribute 'ceil_mode' must be 0 or 1, got 2"));
  EXPECT_THAT(RunOpError("average_pool", {Ones({4, 4})}, MakeAttrs({{"kernel_shape", Ints{2, 2}}})),
              HasSubstr("(average_pool): x must have rank >= 3"));
  EXPECT_THAT(RunOpError("max_pool", {x}, MakeAttrs({{"kernel_shape", Ints{5, 2}}})),
              HasSubstr("(max_pool): the kernel spans 5 positions along spatial dim 0"));
}

}  // namespace
}  // namespace loom
