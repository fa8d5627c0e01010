#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Floats = std::vector<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor F32(Shape shape, const std::vector<double>& values) {
  return MakeTensor(DType::kF32, std::move(shape), values);
}

struct Result {
  Shape shape;
  std::vector<double> values;
};
Result Resize(const Tensor& x, const Attrs& attrs) {
  absl::StatusOr<Tensor> y = RunOp("resize", {x}, attrs);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  return {y->shape(), ToDoubles(*y)};
}

// ONNX's test_resize_upsample_scales_nearest: half_pixel, round_prefer_floor.
TEST(ResizeTest, NearestUpsample) {
  Result y = Resize(F32({1, 1, 2, 2}, {1, 2, 3, 4}), MakeAttrs({{"scales", Floats{1, 1, 2, 3}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 6}));
  EXPECT_THAT(y.values, ElementsAreArray<double>({1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                  3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

// Sources x / 1.25 = 0, 0.8, 1.6, 2.4, 3.2, 4 (asymmetric), rounded by each
// nearest_mode; ties at 0.5 from x / 2 = 0, 0.5, 1, 1.5.
TEST(ResizeTest, NearestModes) {
  const Tensor x = F32({5}, {10, 11, 12, 13, 14});
  auto run = [&](const char* mode, double scale) {
    return Resize(x, MakeAttrs({{"scales", Floats{scale}},
                                {"coordinate_transformation_mode", std::string("asymmetric")},
                                {"nearest_mode", std::string(mode)}}))
        .values;
  };
  EXPECT_THAT(run("round_prefer_floor", 1.25), ElementsAre(10, 11, 12, 12, 13, 14));
  EXPECT_THAT(run("floor", 1.25), ElementsAre(10, 10, 11, 12, 13, 14));
  EXPECT_THAT(run("ceil", 1.25), ElementsAre(10, 11, 12, 13, 14, 14));
  EXPECT_THAT(run("round_prefer_floor", 2), ElementsAre(10, 10, 11, 11, 12, 12, 13, 13, 14, 14));
  EXPECT_THAT(run("round_prefer_ceil", 2), ElementsAre(10, 11, 11, 12, 12, 13, 13, 14, 14, 14));
}

// ONNX's test_resize_upsample_scales_linear (half_pixel, edges clamped).
TEST(ResizeTest, BilinearHalfPixel) {
  Result y = Resize(F32({1, 1, 2, 2}, {1, 2, 3, 4}),
                    MakeAttrs({{"mode", std::string("linear")}, {"scales", Floats{1, 1, 2, 2}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 4}));
  EXPECT_THAT(y.values, ElementsAreArray<double>({1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75,
                                                  3.25, 3.5, 3, 3.25, 3.75, 4}));
}

// ONNX's test_resize_downsample_scales_linear_align_corners: the output
// width is the float 0.6 * 4 = 2.4, so x = 1 maps to 3 / 1.4.
TEST(ResizeTest, LinearAlignCornersUsesTheFloatWidth) {
  Result y = Resize(F32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                    MakeAttrs({{"mode", std::string("linear")},
                               {"coordinate_transformation_mode", std::string("align_corners")},
                               {"scales", Floats{1, 1, 0.6f, 0.6f}}}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 1, 2}));
  EXPECT_THAT(y.values, ElementsAre(1, DoubleNear(1 + 3 / (2.4000000953674316 - 1), 1e-6)));
}

// A NaN or infinity in a tap of weight 0 does not reach the output: the
// integer sources 0 and 1 of asymmetric x / 2 have taps (c - 1, c) weighted
// (0, 1).
TEST(ResizeTest, ZeroWeightTapsAreNotRead) {
  Result y = Resize(F32({3}, {1, kInf, 5}),
                    MakeAttrs({{"mode", std::string("linear")},
                               {"coordinate_transformation_mode", std::string("asymmetric")},
                               {"scales", Floats{2}}}));
  EXPECT_THAT(y.values, ElementsAre(1, kInf, kInf, kInf, 5, 5));
}

// Keys' weights at r = 0.5 (a = -0.75): -0.09375, 0.59375, 0.59375,
// -0.09375; a unit impulse at 2 seen from 2.5 and from 1.5.
TEST(ResizeTest, CubicWeights) {
  Result y = Resize(F32({6}, {0, 0, 1, 0, 0, 0}),
                    MakeAttrs({{"mode", std::string("cubic")},
                               {"coordinate_transformation_mode", std::string("asymmetric")},
                               {"scales", Floats{2}}}));
  ASSERT_EQ(y.values.size(), 12u);
  EXPECT_EQ(y.values[1], -0.09375);  // 0.5: taps -1..2 -> 0, 0, 1, 2 (clamped)
  EXPECT_EQ(y.values[2], 0);         // 1: taps -1..2 weighted 0, 0, 1, 0 (ratio 1)
  EXPECT_EQ(y.values[3], 0.59375);   // 1.5
  EXPECT_EQ(y.values[4], 1);         // 2
  EXPECT_EQ(y.values[5], 0.59375);   // 2.5
  EXPECT_EQ(y.values[7], -0.09375);  // 3.5
}

// r = 0.25: weights -0.10546875, 0.87890625, 0.26171875, -0.03515625 over
// taps -1, 0, 1, 2 of [1, 3]: clamped, or with exclude_outside only taps 0
// and 1, rescaled to sum to 1.
TEST(ResizeTest, CubicExcludeOutside) {
  const Tensor x = F32({2}, {1, 3});
  Attrs attrs = MakeAttrs({{"mode", std::string("cubic")},
                           {"coordinate_transformation_mode", std::string("asymmetric")},
                           {"scales", Floats{4}}});
  EXPECT_DOUBLE_EQ(Resize(x, attrs).values[1], 1.453125);
  attrs.Set("exclude_outside", int64_t{1});
  EXPECT_NEAR(Resize(x, attrs).values[1], (0.87890625 + 3 * 0.26171875) / 1.140625, 1e-6);
}

// Sources 1.5 + 1.5 x: 1.5, 3, 4.5 (outside [0, 3]: the extrapolation
// value), and along the other dim the whole input.
TEST(ResizeTest, TfCropAndResize) {
  Result y =
      Resize(F32({2, 4}, {0, 10, 20, 30, 40, 50, 60, 70}),
             MakeAttrs({{"mode", std::string("linear")},
                        {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                        {"sizes", Ints{2, 3}},
                        {"roi", Floats{0, 0.5, 1, 1.5}},
                        {"extrapolation_value", -1.0}}));
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_THAT(y.values, ElementsAre(15, 30, -1, 55, 70, -1));
}

// sizes set the scale to size / input: 3 / 4 along dim 0; an output of one
// position reads -0.5 with pytorch_half_pixel (ONNX's reference).
TEST(ResizeTest, SizesAndPytorchHalfPixel) {
  Result y =
      Resize(Iota(DType::kF32, {4, 4}, 1),
             MakeAttrs({{"mode", std::string("linear")},
                        {"coordinate_transformation_mode", std::string("pytorch_half_pixel")},
                        {"sizes", Ints{3, 1}}}));
  EXPECT_EQ(y.shape, (Shape{3, 1}));
  EXPECT_THAT(y.values,
              ElementsAre(DoubleNear(1 + 4 / 6.0, 1e-6), 7, DoubleNear(13 - 4 / 6.0, 1e-6)));
}

TEST(ResizeTest, Errors) {
  const Tensor x = F32({1, 2}, {1, 2});
  EXPECT_THAT(RunOpError("resize", {x}, {}),
              HasSubstr("one of the attributes 'scales' and 'sizes' must be given"));
  EXPECT_THAT(RunOpError("resize", {x}, MakeAttrs({{"scales", Floats{1}}})),
              HasSubstr("'scales' has 1 entries; the input [1,2] needs 2"));
  EXPECT_THAT(RunOpError("resize", {x}, MakeAttrs({{"scales", Floats{1, -2}}})),
              HasSubstr("must hold finite values > 0"));
  EXPECT_THAT(RunOpError("resize", {x}, MakeAttrs({{"sizes", Ints{1, -2}}})),
              HasSubstr("has an entry outside [0, 2^40]"));
  EXPECT_THAT(
      RunOpError("resize", {x}, MakeAttrs({{"sizes", Ints{1, 2}}, {"mode", std::string("area")}})),
      HasSubstr("attribute 'mode' \"area\" is not one of nearest, linear, cubic"));
  EXPECT_THAT(RunOpError("resize", {x},
                         MakeAttrs({{"sizes", Ints{1, 2}},
                                    {"coordinate_transformation_mode", std::string("center")}})),
              HasSubstr("is not one of half_pixel"));
  EXPECT_THAT(
      RunOpError("resize", {x}, MakeAttrs({{"sizes", Ints{1, 2}}, {"roi", Floats{0, 0, 1}}})),
      HasSubstr("'roi' has 3 entries"));
  EXPECT_THAT(RunOpError("resize", {F32({0, 2}, {})}, MakeAttrs({{"sizes", Ints{1, 2}}})),
              HasSubstr("is empty"));
  EXPECT_THAT(RunOpError("resize", {MakeIntTensor(DType::kI32, {2}, {1, 2})},
                         MakeAttrs({{"sizes", Ints{4}}})),
              HasSubstr("node 'test_node' (resize)"));
}

}  // namespace
}  // namespace loom
