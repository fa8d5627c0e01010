// resize through the whole CPU path (decomposed into gathers at constant
// index tables, views and weighted sums, lowered, fused, emitted as C++,
// compiled and run), compared with the reference interpreter: every mode,
// coordinate transformation and nearest rounding, upsampling and
// downsampling, sizes and scales, 1-D to 4-D, f32 and f64, and NaN and
// infinities in the input. Each test builds one graph of many nodes, so
// the native compiler runs once per test.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

using Floats = std::vector<double>;
using Ints = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

Attrs ResizeAttrs(const std::string& mode, const std::string& coordinates) {
  return MakeAttrs({{"mode", mode}, {"coordinate_transformation_mode", coordinates}});
}

TEST(ResizeEndToEndTest, NearestModes) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 3, 5, 7});
  for (const char* coordinates : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                  "tf_half_pixel_for_nn"}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      Attrs attrs = ResizeAttrs("nearest", coordinates);
      attrs.Set("nearest_mode", std::string(nearest));
      attrs.Set("scales", Floats{1, 1, 1.7, 0.6});
      b.Output(b.Op("resize", {x}, attrs));
      attrs.Set("scales", Floats{1, 1, 2, 3});  // integer factors: views
      b.Output(b.Op("resize", {x}, attrs));
    }
  }
  // Downsampling by 2 (a strided slice) and sizes on every dim.
  b.Output(b.Op("resize", {x},
                MakeAttrs({{"scales", Floats{1, 1, 0.5, 0.5}},
                           {"coordinate_transformation_mode", std::string("asymmetric")}})));
  b.Output(b.Op("resize", {x}, MakeAttrs({{"sizes", Ints{3, 2, 9, 4}}})));
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(ResizeEndToEndTest, LinearAndCubic) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 3, 6, 5});
  const ValueId x1 = b.Input("x1", DType::kF64, {3, 11});
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 2, 4, 5, 3});
  for (const char* mode : {"linear", "cubic"}) {
    for (const char* coordinates :
         {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
      Attrs attrs = ResizeAttrs(mode, coordinates);
      attrs.Set("scales", Floats{1, 1, 2, 2});
      b.Output(b.Op("resize", {x}, attrs));
      attrs.Set("scales", Floats{1, 1, 0.8, 1.5});
      b.Output(b.Op("resize", {x}, attrs));
      attrs.Set("scales", Floats{1, 0.4});
      b.Output(b.Op("resize", {x1}, attrs));
    }
    Attrs excluded = ResizeAttrs(mode, "half_pixel");
    excluded.Set("exclude_outside", int64_t{1});
    excluded.Set("cubic_coeff_a", -0.5);
    excluded.Set("sizes", Ints{1, 2, 7, 3, 6});
    b.Output(b.Op("resize", {x3}, excluded));
    Attrs crop = ResizeAttrs(mode, "tf_crop_and_resize");
    crop.Set("sizes", Ints{2, 3, 5, 4});
    crop.Set("roi", Floats{0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2});
    crop.Set("extrapolation_value", 7.5);
    b.Output(b.Op("resize", {x}, crop));
  }
  EndToEndOptions options;
  options.fill = [](size_t i, Tensor& t) {
    if (i != 0) return;
    const double specials[] = {kNan, kInf, -kInf};
    for (int k = 0; k < 3; ++k) t.SetDouble(67 * k + 12, specials[k]);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

}  // namespace
}  // namespace loom
