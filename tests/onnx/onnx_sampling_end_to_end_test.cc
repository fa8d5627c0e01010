// The sampling ops (frontends/onnx/onnx_ops_sampling.cc) through the whole
// CPU path at coordinates far outside their input, infinite or NaN: the
// compiled kernels never read out of bounds (an index out of range would
// fail the run) and agree with the reference interpreter.

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver.h"
#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

Tensor F32(Shape shape, const std::vector<double>& values) {
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.SetDouble(i, values[static_cast<size_t>(i) % values.size()]);
  }
  return t;
}

// Imports `b`, compiles and runs it on `inputs`: the run succeeds and each
// element that `compared` accepts equals the interpreter's (NaN where it
// has NaN).
void ExpectCompiledRunMatches(
    const ModelBuilder& b, const std::vector<Tensor>& inputs,
    const std::function<bool(int64_t)>& compared = [](int64_t) { return true; }) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  CompileOptions options;
  options.model = "onnx_sampling_end_to_end_test";
  const char* tmp = std::getenv("TEST_TMPDIR");
  if (tmp != nullptr) options.cache_dir = absl::StrCat(tmp, "/cache");
  absl::StatusOr<CompiledModel> compiled = CompileGraph(*std::move(graph), options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::StatusOr<std::vector<Tensor>> actual = compiled->executable->Run(inputs);
  ASSERT_TRUE(actual.ok()) << actual.status();
  const Tensor& want = (*expected)[0];
  const Tensor& got = (*actual)[0];
  ASSERT_EQ(got.type(), want.type());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    if (!compared(i)) continue;
    const double w = want.GetDouble(i), g = got.GetDouble(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g;
    } else {
      EXPECT_NEAR(g, w, 1e-5 + 1e-4 * std::abs(w)) << "element " << i;
    }
  }
}

// Normalized coordinates in and far out of [-1, 1], huge and infinite.
const std::vector<double>& WildCoordinates() {
  static const std::vector<double> values = {0.3,
                                             -0.7,
                                             1.4,
                                             -2.6,
                                             1e30,
                                             -1e30,
                                             3e9,
                                             std::numeric_limits<double>::infinity(),
                                             -std::numeric_limits<double>::infinity(),
                                             0.999,
                                             -1.0001,
                                             7.25};
  return values;
}

TEST(OnnxSamplingEndToEndTest, GridSampleAtWildCoordinates) {
  const Tensor x = F32({1, 2, 3, 4}, {0.5, -1.25, 2, 0.75, -3, 1.5});
  const Tensor grid = F32({1, 3, 4, 2}, WildCoordinates());
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align_corners : {0, 1}) {
        SCOPED_TRACE(absl::StrCat(mode, " ", padding, " ", align_corners));
        ModelBuilder b(22);
        b.Input("x", kFloat, {1, 2, 3, 4}).Input("grid", kFloat, {1, 3, 4, 2}).Output("y");
        onnx::NodeProto& node = b.Node("GridSample", {"x", "grid"}, {"y"}, "gs");
        SetString(node, "mode", mode);
        SetString(node, "padding_mode", padding);
        SetAttr(node, "align_corners", align_corners);
        // Reflecting a coordinate of 1e30 or more in f32 keeps no precision:
        // those points are only run, not compared.
        auto moderate = [&](int64_t i) {
          const int64_t point = i % 12;
          return std::abs(grid.GetDouble(2 * point)) < 100 &&
                 std::abs(grid.GetDouble(2 * point + 1)) < 100;
        };
        ExpectCompiledRunMatches(b, {x, grid}, [&](int64_t i) {
          return std::string(padding) != "reflection" || moderate(i);
        });
      }
    }
  }
}

TEST(OnnxSamplingEndToEndTest, DeformConvAtWildOffsets) {
  ModelBuilder b(22);
  b.Input("x", kFloat, {1, 2, 4, 4})
      .Input("w", kFloat, {3, 2, 2, 2})
      .Input("offset", kFloat, {1, 8, 3, 3})
      .Output("y");
  b.Node("DeformConv", {"x", "w", "offset"}, {"y"}, "dc");
  ExpectCompiledRunMatches(
      b, {F32({1, 2, 4, 4}, {0.5, -1.25, 2, 0.75, -3}), F32({3, 2, 2, 2}, {0.25, -0.5, 1}),
          F32({1, 8, 3, 3}, WildCoordinates())});
}

TEST(OnnxSamplingEndToEndTest, RoiAlignOfRegionsOutsideTheImage) {
  for (const char* mode : {"avg", "max"}) {
    SCOPED_TRACE(mode);
    ModelBuilder b(22);
    b.Input("x", kFloat, {2, 1, 5, 6})
        .Input("rois", kFloat, {3, 4})
        .Input("batch", onnx::TensorProto::INT64, {3})
        .Output("y");
    onnx::NodeProto& node = b.Node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "roi");
    SetString(node, "mode", mode);
    SetAttr(node, "output_height", 2);
    SetAttr(node, "output_width", 3);
    SetAttr(node, "sampling_ratio", 2);
    const Tensor rois = F32({3, 4}, {-40, -3, 2, 1e6, 3, 2, 5.5, 4.5, -1e30, 1e30, 1e30, -1e30});
    ExpectCompiledRunMatches(
        b, {F32({2, 1, 5, 6}, {0.5, -1.25, 2, 0.75, -3}), rois, I64({3}, {1, 0, 1})});
  }
}

}  // namespace
}  // namespace loom
