// The ONNX importer's sampling and geometry ops (onnx_ops_sampling.cc):
// GridSample, AffineGrid, Col2Im, MaxUnpool, DeformConv and RoiAlign, run
// through the reference interpreter.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

Tensor F32(Shape shape, const std::vector<double>& values) {
  Tensor t(DType::kF32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

// Imports `b` and runs it on `inputs`; the first output.
Tensor RunModel(const ModelBuilder& b, const std::vector<Tensor>& inputs) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return Tensor();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

std::string ImportError(const ModelBuilder& b) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  return graph.ok() ? "imported" : std::string(graph.status().message());
}

// A GridSample of X [1, 1, h, w] at `points` (x, y) normalized pairs.
ModelBuilder GridSampleModel(int64_t h, int64_t w, int64_t points, const std::string& mode,
                             const std::string& padding, int64_t align_corners,
                             int64_t opset = 22) {
  ModelBuilder b(opset);
  b.Input("x", kFloat, {1, 1, h, w}).Input("grid", kFloat, {1, 1, points, 2}).Output("y");
  onnx::NodeProto& node = b.Node("GridSample", {"x", "grid"}, {"y"}, "gs");
  SetString(node, "mode", mode);
  SetString(node, "padding_mode", padding);
  SetAttr(node, "align_corners", align_corners);
  return b;
}

TEST(OnnxSamplingOpsTest, GridSampleBilinearWithAlignedCorners) {
  const Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  // The corners, the center and the middle of the top edge.
  const Tensor grid = F32({1, 1, 4, 2}, {-1, -1, 1, 1, 0, 0, 0, -1});
  const Tensor y = RunModel(GridSampleModel(2, 2, 4, "linear", "zeros", 1), {x, grid});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 4}));
  EXPECT_NEAR(y.GetDouble(0), 1, 1e-6);
  EXPECT_NEAR(y.GetDouble(1), 4, 1e-6);
  EXPECT_NEAR(y.GetDouble(2), 2.5, 1e-6);
  EXPECT_NEAR(y.GetDouble(3), 1.5, 1e-6);
}

// Opset 16 names the modes bilinear and bicubic.
TEST(OnnxSamplingOpsTest, GridSampleOpset16Names) {
  const Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor grid = F32({1, 1, 1, 2}, {0, 0});
  EXPECT_NEAR(
      RunModel(GridSampleModel(2, 2, 1, "bilinear", "zeros", 1, 16), {x, grid}).GetDouble(0), 2.5,
      1e-6);
  EXPECT_THAT(ImportError(GridSampleModel(2, 2, 1, "linear", "zeros", 1, 16)),
              HasSubstr("node 'gs' (GridSample): attribute 'mode' 'linear' is not one of "
                        "bilinear, nearest, bicubic"));
  EXPECT_THAT(ImportError(GridSampleModel(2, 2, 1, "bicubic", "zeros", 1, 20)),
              HasSubstr("attribute 'mode' 'bicubic' is not one of linear, nearest, cubic"));
}

// Nearest rounds half to even: pixel 0.5 reads 0, 1.5 reads 2.
TEST(OnnxSamplingOpsTest, GridSampleNearestRoundsHalfToEven) {
  const Tensor x = F32({1, 1, 1, 5}, {10, 20, 30, 40, 50});
  // With aligned corners, pixel = (g + 1) * 2 for 5 columns.
  const Tensor grid = F32({1, 1, 3, 2}, {-0.75, 0, -0.25, 0, 0.25, 0});
  const Tensor y = RunModel(GridSampleModel(1, 5, 3, "nearest", "zeros", 1), {x, grid});
  EXPECT_EQ(y.GetDouble(0), 10);  // pixel 0.5
  EXPECT_EQ(y.GetDouble(1), 30);  // pixel 1.5
  EXPECT_EQ(y.GetDouble(2), 30);  // pixel 2.5
}

// Any grid value, however far out, NaN or infinite, reads inside X (the
// interpreter would fail on an index out of range): zeros padding gives 0,
// border the edge. (ONNX leaves infinities and NaN undefined.)
TEST(OnnxSamplingOpsTest, GridSampleNeverReadsOutside) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = F32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  // y = -0.5 is row 0's center.
  const Tensor grid = F32({1, 1, 4, 2}, {1e30, -0.5, -1e30, -0.5, inf, -inf, nan, 0});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    const Tensor zeros = RunModel(GridSampleModel(2, 3, 4, mode, "zeros", 0), {x, grid});
    EXPECT_EQ(zeros.GetDouble(0), 0) << mode;
    EXPECT_EQ(zeros.GetDouble(1), 0) << mode;
    const Tensor border = RunModel(GridSampleModel(2, 3, 4, mode, "border", 0), {x, grid});
    EXPECT_NEAR(border.GetDouble(0), 3, 1e-5) << mode;
    EXPECT_NEAR(border.GetDouble(1), 1, 1e-5) << mode;
    EXPECT_NEAR(border.GetDouble(2), 3, 1e-5) << mode;
    RunModel(GridSampleModel(2, 3, 4, mode, "reflection", 1), {x, grid});
    RunModel(GridSampleModel(2, 3, 4, mode, "reflection", 0), {x, grid});
  }
}

TEST(OnnxSamplingOpsTest, GridSampleReflectsAndClampsCoordinates) {
  const Tensor x = F32({1, 1, 1, 4}, {10, 20, 30, 40});
  // Aligned corners: pixel = (g + 1) * 1.5; -1 reflects to 1, 4 to 2, 7 to 1.
  const Tensor grid = F32({1, 1, 3, 2}, {-5.0 / 3, 0, 5.0 / 3, 0, 11.0 / 3, 0});
  const Tensor reflected = RunModel(GridSampleModel(1, 4, 3, "linear", "reflection", 1), {x, grid});
  EXPECT_NEAR(reflected.GetDouble(0), 20, 1e-4);
  EXPECT_NEAR(reflected.GetDouble(1), 30, 1e-4);
  EXPECT_NEAR(reflected.GetDouble(2), 20, 1e-4);
  const Tensor border = RunModel(GridSampleModel(1, 4, 3, "linear", "border", 1), {x, grid});
  EXPECT_NEAR(border.GetDouble(0), 10, 1e-4);
  EXPECT_NEAR(border.GetDouble(1), 40, 1e-4);
}

// Cubic weights sum to 1: a constant image stays constant with border padding.
TEST(OnnxSamplingOpsTest, GridSampleCubicKeepsConstants) {
  const Tensor x = F32({1, 1, 3, 3}, {7, 7, 7, 7, 7, 7, 7, 7, 7});
  const Tensor grid = F32({1, 1, 3, 2}, {0.3, -0.8, -0.95, 0.1, 0.99, 0.99});
  const Tensor y = RunModel(GridSampleModel(3, 3, 3, "cubic", "border", 0), {x, grid});
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(y.GetDouble(i), 7, 1e-5);
}

TEST(OnnxSamplingOpsTest, GridSampleRefusesBadOperands) {
  ModelBuilder wrong_grid(22);
  wrong_grid.Input("x", kFloat, {1, 1, 2, 2}).Input("grid", kFloat, {1, 3, 3}).Output("y");
  wrong_grid.Node("GridSample", {"x", "grid"}, {"y"}, "gs");
  EXPECT_THAT(ImportError(wrong_grid), HasSubstr("node 'gs' (GridSample): grid [1,3,3] does "
                                                 "not fit X [1,1,2,2]"));
  ModelBuilder volumetric(16);
  volumetric.Input("x", kFloat, {1, 1, 2, 2, 2}).Input("grid", kFloat, {1, 1, 1, 1, 3}).Output("y");
  volumetric.Node("GridSample", {"x", "grid"}, {"y"}, "gs");
  EXPECT_THAT(ImportError(volumetric), HasSubstr("must be 4-D (opset < 20)"));
  ModelBuilder padding = GridSampleModel(2, 2, 1, "linear", "mirror", 0);
  EXPECT_THAT(
      ImportError(padding),
      HasSubstr("attribute 'padding_mode' 'mirror' is not one of zeros, border, reflection"));
  ModelBuilder integers(22);
  integers.Input("x", onnx::TensorProto::INT32, {1, 1, 2, 2})
      .Input("grid", kFloat, {1, 1, 1, 2})
      .Output("y");
  integers.Node("GridSample", {"x", "grid"}, {"y"}, "gs");
  EXPECT_THAT(ImportError(integers), HasSubstr("X is i32; loom interpolates floats only"));
}

TEST(OnnxSamplingOpsTest, AffineGridOfTheIdentity) {
  ModelBuilder b(20);
  b.Input("theta", kFloat, {1, 2, 3}).Output("grid");
  IntInitializer(b, "size", {4}, {1, 1, 2, 3});
  b.Node("AffineGrid", {"theta", "size"}, {"grid"});
  const Tensor theta = F32({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  const Tensor grid = RunModel(b, {theta});
  ASSERT_EQ(grid.shape(), (Shape{1, 2, 3, 2}));
  // Without aligned corners, x is at the columns' centers: -2/3, 0, 2/3;
  // y at the rows' centers: -1/2, 1/2.
  const std::vector<double> expected = {-2.0 / 3, -0.5, 0, -0.5, 2.0 / 3, -0.5,
                                        -2.0 / 3, 0.5,  0, 0.5,  2.0 / 3, 0.5};
  for (int64_t i = 0; i < 12; ++i) EXPECT_NEAR(grid.GetDouble(i), expected[i], 1e-6) << i;
}

TEST(OnnxSamplingOpsTest, AffineGridRefusesAMismatchedTheta) {
  ModelBuilder b(20);
  b.Input("theta", kFloat, {1, 2, 3}).Output("grid");
  IntInitializer(b, "size", {5}, {1, 1, 2, 3, 4});
  b.Node("AffineGrid", {"theta", "size"}, {"grid"}, "ag");
  EXPECT_THAT(ImportError(b), HasSubstr("node 'ag' (AffineGrid): theta [1,2,3] does not fit "
                                        "size [1,1,2,3,4]: expected [1,3,4]"));
}

// Col2Im against its definition: block value (c, k, l) adds to image
// position l's block origin + k's offset.
TEST(OnnxSamplingOpsTest, Col2ImAddsOverlappingBlocks) {
  ModelBuilder b(18);
  b.Input("cols", kFloat, {1, 2 * 4, 6}).Output("image");
  IntInitializer(b, "image_shape", {2}, {3, 4});
  IntInitializer(b, "block_shape", {2}, {2, 2});
  onnx::NodeProto& node = b.Node("Col2Im", {"cols", "image_shape", "block_shape"}, {"image"});
  SetInts(node, "pads", {0, 1, 0, 0});
  SetInts(node, "strides", {1, 2});
  // Padded width 5, blocks of 2 at stride 2: 2 per row; 2 rows of blocks.
  EXPECT_THAT(ImportError(b), HasSubstr("has 6 blocks; image_shape, block_shape, strides, "
                                        "dilations and pads give [2,2]"));
  ModelBuilder right(18);
  right.Input("cols", kFloat, {1, 8, 4}).Output("image");
  IntInitializer(right, "image_shape", {2}, {3, 4});
  IntInitializer(right, "block_shape", {2}, {2, 2});
  onnx::NodeProto& right_node =
      right.Node("Col2Im", {"cols", "image_shape", "block_shape"}, {"image"});
  SetInts(right_node, "pads", {0, 1, 0, 0});
  SetInts(right_node, "strides", {1, 2});
  const Tensor cols = Iota({1, 8, 4});
  const Tensor image = RunModel(right, {cols});
  ASSERT_EQ(image.shape(), (Shape{1, 2, 3, 4}));
  std::vector<double> expected(24, 0);
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t k = 0; k < 4; ++k) {
      for (int64_t l = 0; l < 4; ++l) {
        const int64_t row = l / 2 + k / 2, column = (l % 2) * 2 - 1 + k % 2;
        if (column < 0) continue;
        expected[(c * 3 + row) * 4 + column] += cols.GetDouble((c * 4 + k) * 4 + l);
      }
    }
  }
  for (int64_t i = 0; i < 24; ++i) EXPECT_NEAR(image.GetDouble(i), expected[i], 1e-6) << i;
}

ModelBuilder MaxUnpoolModel(bool with_output_shape) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {1, 1, 2, 2}).Input("i", kInt64, {1, 1, 2, 2}).Output("y");
  std::vector<std::string> inputs = {"x", "i"};
  if (with_output_shape) {
    IntInitializer(b, "shape", {4}, {1, 1, 5, 5});
    inputs.push_back("shape");
  }
  onnx::NodeProto& node = b.Node("MaxUnpool", inputs, {"y"}, "unpool");
  SetInts(node, "kernel_shape", {2, 2});
  SetInts(node, "strides", {2, 2});
  return b;
}

TEST(OnnxSamplingOpsTest, MaxUnpoolScattersAndChecksIndices) {
  const Tensor x = F32({1, 1, 2, 2}, {5, 6, 7, 8});
  const Tensor y = RunModel(MaxUnpoolModel(true), {x, I64({1, 1, 2, 2}, {0, 3, 9, 15})});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 5}));
  // Indices count within the unpooled [4, 4]; output_shape pads at the end.
  std::vector<double> expected(25, 0);
  expected[0] = 5, expected[3] = 6, expected[2 * 5 + 1] = 7, expected[3 * 5 + 3] = 8;
  for (int64_t i = 0; i < 25; ++i) EXPECT_EQ(y.GetDouble(i), expected[i]) << i;

  absl::StatusOr<Graph> graph = ImportOnnxModel(MaxUnpoolModel(false).model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> out =
      Interpret(*graph, {x, I64({1, 1, 2, 2}, {0, 1, 2, 16})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("index 16 is out of range for axis 1 of size 16"));
}

// Indices count over the whole tensor; each must lie in its own (n, c)
// plane, as MaxPool's do.
TEST(OnnxSamplingOpsTest, MaxUnpoolKeepsEachPlaneApart) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {1, 2, 1, 2}).Input("i", kInt64, {1, 2, 1, 2}).Output("y");
  onnx::NodeProto& node = b.Node("MaxUnpool", {"x", "i"}, {"y"}, "unpool");
  SetInts(node, "kernel_shape", {1, 2});
  SetInts(node, "strides", {1, 2});
  const Tensor x = F32({1, 2, 1, 2}, {1, 2, 3, 4});
  const Tensor y = RunModel(b, {x, I64({1, 2, 1, 2}, {1, 2, 7, 4})});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 1, 4}));
  const std::vector<double> expected = {0, 1, 2, 0, 4, 0, 0, 3};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(y.GetDouble(i), expected[i]) << i;

  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {x, I64({1, 2, 1, 2}, {1, 2, 1, 4})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("index 4 is out of range for axis 1 of size 4"));
}

TEST(OnnxSamplingOpsTest, MaxUnpoolRefusesASmallerOutputShape) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {1, 1, 2, 2}).Input("i", kInt64, {1, 1, 2, 2}).Output("y");
  IntInitializer(b, "shape", {4}, {1, 1, 2, 2});
  SetInts(b.Node("MaxUnpool", {"x", "i", "shape"}, {"y"}, "unpool"), "kernel_shape", {2, 2});
  EXPECT_THAT(ImportError(b), HasSubstr("node 'unpool' (MaxUnpool): output_shape [1,1,2,2] "
                                        "must keep X's N and C and be at least [1,1,3,3]"));
}

// A model of one DeformConv (or, with `op` Conv, of one Conv without the
// offset) over X [1, 2, 4, 4] and W [2, 1, 2, 2] with group 2.
ModelBuilder DeformConvModel(const std::string& op) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {1, 2, 4, 4}).Input("w", kFloat, {2, 1, 2, 2}).Output("y");
  std::vector<std::string> inputs = {"x", "w"};
  if (op == "DeformConv") {
    b.Input("offset", kFloat, {1, 8, 3, 3});
    inputs.push_back("offset");
  }
  SetAttr(b.Node(op, inputs, {"y"}), "group", 2);
  return b;
}

// Offsets of 0 make a DeformConv a Conv; an offset of 1 along x reads the
// next column (the last column then reading zeros past the edge).
TEST(OnnxSamplingOpsTest, DeformConvWithZeroOffsetsIsAConv) {
  const Tensor x = Iota({1, 2, 4, 4}), w = Iota({2, 1, 2, 2}, 0.3);
  Tensor offset(DType::kF32, {1, 8, 3, 3});
  for (int64_t i = 0; i < offset.num_elements(); ++i) offset.SetDouble(i, 0);
  const Tensor deformed = RunModel(DeformConvModel("DeformConv"), {x, w, offset});
  const Tensor conv = RunModel(DeformConvModel("Conv"), {x, w});
  ASSERT_EQ(deformed.shape(), conv.shape());
  for (int64_t i = 0; i < conv.num_elements(); ++i) {
    EXPECT_NEAR(deformed.GetDouble(i), conv.GetDouble(i), 1e-5) << i;
  }
  // Offsets [1, group 1, K 4, 2 dims, 3, 3]: x offsets (dim 1) of 1.
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t o = 0; o < 9; ++o) offset.SetDouble((k * 2 + 1) * 9 + o, 1);
  }
  const Tensor shifted = RunModel(DeformConvModel("DeformConv"), {x, w, offset});
  // Output (0, 0, 0, 0) reads x[0, 0, 0..1, 1..2].
  double expected = 0;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) expected += w.GetDouble(i * 2 + j) * x.GetDouble(i * 4 + j + 1);
  }
  EXPECT_NEAR(shifted.GetDouble(0), expected, 1e-5);
}

TEST(OnnxSamplingOpsTest, DeformConvRefusesAWrongOffset) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {1, 2, 4, 4})
      .Input("w", kFloat, {2, 2, 2, 2})
      .Input("offset", kFloat, {1, 4, 3, 3})
      .Output("y");
  b.Node("DeformConv", {"x", "w", "offset"}, {"y"}, "dc");
  EXPECT_THAT(ImportError(b), HasSubstr("node 'dc' (DeformConv): offset [1,4,3,3] must be "
                                        "[1,8,3,3]"));
}

ModelBuilder RoiAlignModel(const std::string& mode, int64_t sampling_ratio) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {2, 1, 4, 4})
      .Input("rois", kFloat, {2, 4})
      .Input("batch", kInt64, {2})
      .Output("y");
  onnx::NodeProto& node = b.Node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "roi");
  SetString(node, "mode", mode);
  SetAttr(node, "output_height", 2);
  SetAttr(node, "output_width", 2);
  SetAttr(node, "sampling_ratio", sampling_ratio);
  return b;
}

// Over an image whose value is its column, the mean of each bin is the
// mean column of its sample points.
TEST(OnnxSamplingOpsTest, RoiAlignAveragesBilinearSamples) {
  Tensor x(DType::kF32, {2, 1, 4, 4});
  for (int64_t i = 0; i < 32; ++i) x.SetDouble(i, static_cast<double>(i % 4) + (i >= 16 ? 10 : 0));
  // half_pixel: the roi [0.5, 0.5, 2.5, 2.5] covers pixels [0, 2] of image 1.
  const Tensor rois = F32({2, 4}, {0.5, 0.5, 2.5, 2.5, 0.5, 0.5, 2.5, 2.5});
  const Tensor y = RunModel(RoiAlignModel("avg", 2), {x, rois, I64({2}, {0, 1})});
  ASSERT_EQ(y.shape(), (Shape{2, 1, 2, 2}));
  // Bin columns [0, 1] and [1, 2], sampled at 0.25, 0.75 and 1.25, 1.75.
  EXPECT_NEAR(y.GetDouble(0), 0.5, 1e-6);
  EXPECT_NEAR(y.GetDouble(1), 1.5, 1e-6);
  EXPECT_NEAR(y.GetDouble(4), 10.5, 1e-6);
  EXPECT_NEAR(y.GetDouble(5), 11.5, 1e-6);
  EXPECT_THAT(ImportError(RoiAlignModel("avg", 0)),
              HasSubstr("node 'roi' (RoiAlign): sampling_ratio 0 (adaptive"));
  EXPECT_THAT(ImportError(RoiAlignModel("min", 2)),
              HasSubstr("attribute 'mode' 'min' is not one of avg, max"));
  // A batch index outside X is an error as the model runs.
  absl::StatusOr<Graph> graph = ImportOnnxModel(RoiAlignModel("max", 2).model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE(Interpret(*graph, {x, rois, I64({2}, {0, 2})}).ok());
}

}  // namespace
}  // namespace loom
