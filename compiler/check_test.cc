#include "compiler/check.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/support/attrs.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// y = mean over a row of (x / 100 + c) - c, for x [4, 2401] in [-1, 1):
// results near 0 made by cancellation after long sums of nearly equal
// terms, seed 7058's pattern. `kept` < 2401 builds a wrong kernel: the
// sum drops the row's last terms but still divides by 2401.
Graph CancellingMeans(int64_t kept = 2401) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", {DType::kF32, {4, 2401}});
  auto scalar = [&](const std::string& name, double value) {
    Tensor data(DType::kF32, {});
    data.SetDouble(0, value);
    return *graph.AddInitializer(name, ValueKind::kConstant, std::move(data));
  };
  auto op = [&](const std::string& name, OpName kind, std::vector<ValueId> inputs,
                Attrs attrs = {}) {
    return graph.node(*graph.AddNode(name, kind, inputs, {name}, std::move(attrs))).outputs[0];
  };
  const ValueId c = scalar("c", 0.877);
  ValueId terms = op("terms", "add", {op("scaled", "mul", {x, scalar("scale", 0.01)}), c});
  if (kept < 2401) {
    Attrs slice;
    slice.Set("starts", std::vector<int64_t>{0});
    slice.Set("ends", std::vector<int64_t>{kept});
    slice.Set("axes", std::vector<int64_t>{1});
    terms = op("kept", "slice", {terms}, std::move(slice));
  }
  Attrs axes;
  axes.Set("axes", std::vector<int64_t>{1});
  const ValueId sum = op("sum", "reduce_sum", {terms}, std::move(axes));
  graph.AddOutput(op("y", "sub", {op("mean", "div", {sum, scalar("n", 2401)}), c}));
  if (!InferShapes(graph).ok()) std::abort();
  return graph;
}

// loom's outputs for `graph` on `inputs`.
std::vector<Tensor> RunLoom(Graph graph, const std::vector<Tensor>& inputs) {
  CompileOptions options;
  options.model = graph.name;
  options.cache_dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/cache");
  absl::StatusOr<CompiledModel> compiled = CompileGraph(std::move(graph), options);
  if (!compiled.ok()) std::abort();
  absl::StatusOr<std::vector<Tensor>> outputs = compiled->executable->Run(inputs);
  if (!outputs.ok()) std::abort();
  return *std::move(outputs);
}

TEST(CheckTest, LoomsResultsPass) {
  const Graph graph = CancellingMeans();
  const std::vector<Tensor> inputs = *MakeInputs(graph, "", 1);
  absl::StatusOr<CheckResult> check = CheckOutputs(graph, inputs, RunLoom(graph, inputs));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->pass) << check->worst;
}

TEST(CheckTest, AWrongKernelFails) {
  // A sum that drops one term of the 2401: off by 0.877 / 2401, about
  // 3.7e-4, where the long sums and the cancellation allow about 5e-5.
  const Graph graph = CancellingMeans();
  const std::vector<Tensor> inputs = *MakeInputs(graph, "", 1);
  absl::StatusOr<CheckResult> check =
      CheckOutputs(graph, inputs, RunLoom(CancellingMeans(2400), inputs));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_FALSE(check->pass);
  EXPECT_NEAR(check->max_abs_error, 0.877 / 2401, 1e-5);
  EXPECT_THAT(check->worst, HasSubstr("output 'y' element"));
}

TEST(CheckTest, AResultJustPastWhatTheRuleAllowsFails) {
  const Graph graph = CancellingMeans();
  const std::vector<Tensor> inputs = *MakeInputs(graph, "", 1);
  absl::StatusOr<CheckReferences> references = ComputeCheckReferences(graph, inputs);
  ASSERT_TRUE(references.ok()) << references.status();
  const double truth = references->truth[0].GetDouble(0);
  const double own_error = std::fabs(references->float32[0].GetDouble(0) - truth);
  double scale = 0;
  for (int64_t i = 0; i < references->truth[0].num_elements(); ++i) {
    scale = std::max(scale, std::fabs(references->truth[0].GetDouble(i)));
  }
  const double bound = std::min(references->bounds[0].GetDouble(0), kCheckMaxBoundShare * scale);
  const double allowed = kCheckAbsTolerance + kCheckRelTolerance * std::fabs(truth) +
                         kCheckBoundFactor * std::max(bound, own_error);
  for (const double factor : {0.99, 1.01}) {
    std::vector<Tensor> outputs = {references->float32[0]};
    outputs[0].SetDouble(0, truth + factor * allowed);
    absl::StatusOr<CheckResult> check = CheckOutputs(graph, inputs, outputs);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_EQ(check->pass, factor < 1) << factor;
  }
}

// `layers` blocks of x = gelu(layer_norm(x W_l)) on x [8, 64], the shape
// of a deep model's stack (ViT's, BERT's), where worst-case error bounds
// grow with depth far past what float32 rounding really does.
Graph DeepStack(int layers) {
  Graph graph;
  uint64_t seed = 0;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape, double low, double high) {
    Tensor data(DType::kF32, std::move(shape));
    FillUniform(data, ++seed, low, high);
    return *graph.AddInitializer(name, ValueKind::kConstant, std::move(data));
  };
  auto op = [&](const std::string& name, OpName kind, std::vector<ValueId> inputs,
                Attrs attrs = {}) {
    return graph.node(*graph.AddNode(name, kind, inputs, {name}, std::move(attrs))).outputs[0];
  };
  ValueId x = *graph.AddInput("x", {DType::kF32, {8, 64}});
  for (int l = 0; l < layers; ++l) {
    const std::string n = absl::StrCat("l", l, "_");
    const ValueId product = op(n + "mm", "matmul", {x, weight(n + "w", {64, 64}, -0.25, 0.25)});
    const ValueId normed =
        op(n + "ln", "layer_norm",
           {product, weight(n + "g", {64}, 0.5, 1.5), weight(n + "b", {64}, -0.5, 0.5)},
           MakeAttrs({{"axis", int64_t{-1}}, {"epsilon", 1e-5}}));
    x = op(n + "gelu", "gelu", {normed});
  }
  graph.AddOutput(x);
  if (!InferShapes(graph).ok()) std::abort();
  return graph;
}

TEST(CheckTest, ADeepModelsWrongResultFails) {
  // Twelve blocks: the error bounds are infinite from the fifth, the float32
  // reference's own error stays below 1e-6, and loom's result must still be
  // judged. The wrong result is off by 0.25 at one element of values near 1.
  const Graph graph = DeepStack(12);
  const std::vector<Tensor> inputs = *MakeInputs(graph, "", 1);
  std::vector<Tensor> outputs = RunLoom(graph, inputs);
  absl::StatusOr<CheckResult> check = CheckOutputs(graph, inputs, outputs);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->pass) << check->worst;
  outputs[0].SetDouble(5, outputs[0].GetDouble(5) + 0.25);
  check = CheckOutputs(graph, inputs, outputs);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_FALSE(check->pass);
  EXPECT_THAT(check->worst, HasSubstr("element 5:"));
}

TEST(CheckTest, IntegersMatchUnlessTheBoundsLeaveThemOpen) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", {DType::kF32, {3, 50}});
  Attrs axis;
  axis.Set("axis", int64_t{1});
  graph.AddOutput(graph.node(*graph.AddNode("arg", "argmax", {x}, {"i"}, axis)).outputs[0]);
  ASSERT_TRUE(InferShapes(graph).ok());
  const std::vector<Tensor> inputs = *MakeInputs(graph, "", 1);
  std::vector<Tensor> outputs = RunLoom(graph, inputs);
  EXPECT_TRUE(CheckOutputs(graph, inputs, outputs)->pass);
  outputs[0].SetInt(1, (outputs[0].GetInt(1) + 1) % 50);
  EXPECT_FALSE(CheckOutputs(graph, inputs, outputs)->pass);
}

TEST(CheckTest, CloserToTruthThanReference) {
  // The BERT feed-forward element: truth -1.0e-4, PyTorch's
  // reference 3.0e-7 off, loom's result 1.3e-7 off, outside ONNX's
  // tolerance (1e-7 + 1e-3 |r|) of the reference.
  const double truth = -1.0e-4, reference = truth + 3.0e-7, tolerance = 1e-7 + 1e-3 * 1e-4;
  const double bound = 2e-7;  // float32 rounding of values near 1 that cancel
  const double scale = 1;
  EXPECT_TRUE(
      CloserToTruthThanReference(truth - 1.3e-7, reference, truth, bound, tolerance, scale));
  // Never further from the truth than the reference.
  EXPECT_FALSE(
      CloserToTruthThanReference(truth - 3.1e-7, reference, truth, bound, tolerance, scale));
  // Nor against a reference that disagrees beyond rounding.
  EXPECT_FALSE(CloserToTruthThanReference(truth, truth + 1e-5, truth, bound, tolerance, scale));
  // ONNX 1.23's test_dft_inverse: an exact 0 (loom's bound 0 there, its
  // terms all exactly 0) that numpy's float32 inverse FFT gives as 1.9e-7,
  // in an output whose largest element is 54: under one float32 rounding of
  // 54 (6.4e-6), not under ONNX's tolerance at 0 (1e-7).
  EXPECT_TRUE(CloserToTruthThanReference(0, 1.9e-7, 0, 0, 1e-7, 54));
  // In an output of values below 0.5, the same noise is more than rounding.
  EXPECT_FALSE(CloserToTruthThanReference(0, 1.9e-7, 0, 0, 1e-7, 0.5));
}

}  // namespace
}  // namespace loom
