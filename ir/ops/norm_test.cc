#include <cmath>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;

// Irregular values (so that no run has zero variance) on `shape`.
Tensor Wobbly(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.SetDouble(i, std::sin(1.7 * i + 0.3) * (1 + i % 4) + 0.1 * i);
  }
  return t;
}

// (v - mean) / sqrt(var + eps) for the elements of `x` at `at`, with the
// mean and the biased variance computed here in two passes.
std::vector<double> Standardize(const Tensor& x, const std::vector<int64_t>& at, double eps) {
  double mean = 0;
  for (int64_t i : at) mean += x.GetDouble(i);
  mean /= at.size();
  double var = 0;
  for (int64_t i : at) var += (x.GetDouble(i) - mean) * (x.GetDouble(i) - mean);
  var /= at.size();
  std::vector<double> out;
  for (int64_t i : at) {
    out.push_back((x.GetDouble(i) - mean) / std::sqrt(var + eps));
  }
  return out;
}

TEST(LayerNormTest, LastAxisWithScaleAndBias) {
  Tensor x = Wobbly(DType::kF64, {2, 3, 5});
  Tensor scale = Iota(DType::kF64, {5}, 0.5, 0.25);
  Tensor bias = Iota(DType::kF64, {5}, -1, 0.5);
  absl::StatusOr<Tensor> y = RunOp("layer_norm", {x, scale, bias});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->type(), x.type());
  for (int row = 0; row < 6; ++row) {
    std::vector<int64_t> at;
    for (int j = 0; j < 5; ++j) at.push_back(row * 5 + j);
    const std::vector<double> normalized = Standardize(x, at, 1e-5);
    for (int j = 0; j < 5; ++j) {
      EXPECT_NEAR(y->GetDouble(row * 5 + j), normalized[j] * scale.GetDouble(j) + bias.GetDouble(j),
                  1e-12);
    }
  }
}

TEST(LayerNormTest, SeveralTrailingAxesOptionalParamsAndEpsilon) {
  Tensor x = Wobbly(DType::kF32, {2, 3, 5});
  Tensor scale = Iota(DType::kF32, {3, 5}, 1, 0.1);
  for (int64_t axis : {1, -2}) {
    // Scale only.
    absl::StatusOr<Tensor> y =
        RunOp("layer_norm", {x, scale}, MakeAttrs({{"axis", axis}, {"epsilon", 0.5}}));
    ASSERT_TRUE(y.ok()) << y.status();
    for (int n = 0; n < 2; ++n) {
      std::vector<int64_t> at;
      for (int j = 0; j < 15; ++j) at.push_back(n * 15 + j);
      const std::vector<double> normalized = Standardize(x, at, 0.5);
      for (int j = 0; j < 15; ++j) {
        EXPECT_NEAR(y->GetDouble(n * 15 + j), normalized[j] * scale.GetDouble(j), 1e-5);
      }
    }
  }
  // No scale or bias, normalising everything.
  absl::StatusOr<Tensor> y = RunOp("layer_norm", {x}, MakeAttrs({{"axis", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<int64_t> all;
  for (int i = 0; i < 30; ++i) all.push_back(i);
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-5), Standardize(x, all, 1e-5)));
}

TEST(LayerNormTest, SizeOneNormalisedAxisGivesTheBias) {
  absl::StatusOr<Tensor> y = RunOp(
      "layer_norm", {MakeTensor(DType::kF32, {3, 1}, {5, -2, 7}), MakeTensor(DType::kF32, {1}, {4}),
                     MakeTensor(DType::kF32, {1}, {0.25})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0.25, 0.25, 0.25));
}

TEST(LayerNormTest, Errors) {
  Tensor x(DType::kF32, {2, 3, 5});
  EXPECT_THAT(RunOpError("layer_norm", {x, Tensor(DType::kF32, {3, 5})}),
              HasSubstr("node 'test_node' (layer_norm): input 1 (scale) must "
                        "have shape [5], got [3,5]"));
  EXPECT_THAT(RunOpError("layer_norm", {x, Tensor(DType::kF32, {3, 5}), Tensor(DType::kF32, {5})},
                         MakeAttrs({{"axis", int64_t{1}}})),
              HasSubstr("node 'test_node' (layer_norm): input 2 (bias) must "
                        "have shape [3,5], got [5]"));
  EXPECT_THAT(RunOpError("layer_norm", {x}, MakeAttrs({{"axis", int64_t{3}}})),
              HasSubstr("(layer_norm): attribute 'axis': axis 3 is out of "
                        "range for rank 3"));
  EXPECT_THAT(RunOpError("layer_norm", {x, Tensor(DType::kF64, {5})}),
              HasSubstr("(layer_norm): inputs 0 and 1 have different dtypes"));
  EXPECT_THAT(RunOpError("layer_norm", {Tensor(DType::kI32, {2})}),
              HasSubstr("(layer_norm): input 0 has dtype i32"));
}

TEST(GroupNormTest, TinyCaseByHand) {
  // N = 1, C = 4, one spatial element, 2 groups: {1, 3} has mean 2 and
  // variance 1, {5, 9} mean 7 and variance 4. With epsilon 0 they normalise
  // to {-1, 1} and {-1, 1}; then the per-channel affine.
  absl::StatusOr<Tensor> y = RunOp(
      "group_norm",
      {MakeTensor(DType::kF64, {1, 4, 1}, {1, 3, 5, 9}), MakeTensor(DType::kF64, {4}, {1, 2, 3, 4}),
       MakeTensor(DType::kF64, {4}, {0, 0, 1, 1})},
      MakeAttrs({{"num_groups", int64_t{2}}, {"epsilon", 0.0}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-1, 2, -2, 5));
}

// group_norm on x [N, C, S] (S spatial elements) by explicit loops.
std::vector<double> NaiveGroupNorm(const Tensor& x, int groups, const Tensor& scale,
                                   const Tensor& bias) {
  const int n = x.shape()[0], c = x.shape()[1];
  const int s = x.num_elements() / (n * c);
  const int per_group = c / groups;
  std::vector<double> out(x.num_elements());
  for (int b = 0; b < n; ++b) {
    for (int g = 0; g < groups; ++g) {
      std::vector<int64_t> at;
      for (int ch = g * per_group; ch < (g + 1) * per_group; ++ch) {
        for (int p = 0; p < s; ++p) at.push_back((b * c + ch) * s + p);
      }
      const std::vector<double> normalized = Standardize(x, at, 1e-5);
      for (size_t k = 0; k < at.size(); ++k) {
        const int ch = at[k] / s % c;
        out[at[k]] = normalized[k] * scale.GetDouble(ch) + bias.GetDouble(ch);
      }
    }
  }
  return out;
}

TEST(GroupNormTest, EveryGroupCountAgainstExplicitLoops) {
  Tensor x = Wobbly(DType::kF64, {2, 6, 5, 1});
  Tensor scale = Iota(DType::kF64, {6}, 0.5, 0.3);
  Tensor bias = Iota(DType::kF64, {6}, -1, 0.4);
  for (int64_t groups : {1, 2, 3, 6}) {
    absl::StatusOr<Tensor> y =
        RunOp("group_norm", {x, scale, bias}, MakeAttrs({{"num_groups", groups}}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-12), NaiveGroupNorm(x, groups, scale, bias)))
        << groups << " groups";
  }
  // Rank 2: no spatial dims.
  Tensor flat = Wobbly(DType::kF32, {3, 4});
  absl::StatusOr<Tensor> y =
      RunOp("group_norm", {flat, Iota(DType::kF32, {4}, 1), Tensor(DType::kF32, {4})},
            MakeAttrs({{"num_groups", int64_t{2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y),
              Pointwise(DoubleNear(1e-5), NaiveGroupNorm(flat, 2, Iota(DType::kF32, {4}, 1),
                                                         Tensor(DType::kF32, {4}))));
}

TEST(GroupNormTest, Errors) {
  Tensor x(DType::kF32, {2, 6, 3});
  Tensor c6(DType::kF32, {6});
  EXPECT_THAT(RunOpError("group_norm", {x, c6, c6}, MakeAttrs({{"num_groups", int64_t{4}}})),
              HasSubstr("node 'test_node' (group_norm): attribute "
                        "'num_groups' (4) must be positive and divide the 6 "
                        "channels of x [2,6,3]"));
  EXPECT_THAT(RunOpError("group_norm", {x, c6, c6}, MakeAttrs({{"num_groups", int64_t{0}}})),
              HasSubstr("(group_norm): attribute 'num_groups' (0) must be "
                        "positive"));
  EXPECT_THAT(RunOpError("group_norm", {x, c6, c6}),
              HasSubstr("node 'test_node' (group_norm): missing required "
                        "attribute 'num_groups'"));
  EXPECT_THAT(RunOpError("group_norm", {x, Tensor(DType::kF32, {3}), c6},
                         MakeAttrs({{"num_groups", int64_t{3}}})),
              HasSubstr("node 'test_node' (group_norm): input 1 (scale) must "
                        "have shape [6], got [3]"));
  EXPECT_THAT(RunOpError("group_norm", {Tensor(DType::kF32, {6}), c6, c6},
                         MakeAttrs({{"num_groups", int64_t{3}}})),
              HasSubstr("(group_norm): x must have rank >= 2 ([N, C, ...]), "
                        "got [6]"));
  EXPECT_THAT(RunOpError("group_norm", {x, c6}, MakeAttrs({{"num_groups", int64_t{3}}})),
              HasSubstr("(group_norm): expected 3 inputs, got 2"));
}

TEST(InstanceNormTest, StatisticsPerSampleAndChannel) {
  Tensor x = Wobbly(DType::kF64, {2, 3, 2, 3});
  Tensor scale = MakeTensor(DType::kF64, {3}, {1, -2, 0.5});
  Tensor bias = MakeTensor(DType::kF64, {3}, {0, 3, -1});
  absl::StatusOr<Tensor> y = RunOp("instance_norm", {x, scale, bias});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-12), NaiveGroupNorm(x, 3, scale, bias)));
  EXPECT_THAT(RunOpError("instance_norm", {x, scale, Tensor(DType::kF64, {2})}),
              HasSubstr("node 'test_node' (instance_norm): input 2 (bias) "
                        "must have shape [3], got [2]"));
  EXPECT_THAT(
      RunOpError("instance_norm", {x, scale, bias}, MakeAttrs({{"num_groups", int64_t{3}}})),
      HasSubstr("(instance_norm): unknown attribute 'num_groups'"));
}

TEST(BatchNormTest, UsesTheGivenStatistics) {
  // x [2, 2, 1]: channel 0 holds {1, 5}, channel 1 {2, 6}.
  Tensor x = MakeTensor(DType::kF32, {2, 2, 1}, {1, 2, 5, 6});
  Tensor scale = MakeTensor(DType::kF32, {2}, {2, 1});
  Tensor bias = MakeTensor(DType::kF32, {2}, {0, 10});
  Tensor mean = MakeTensor(DType::kF32, {2}, {1, 4});
  Tensor var = MakeTensor(DType::kF32, {2}, {4, 1});
  absl::StatusOr<Tensor> y =
      RunOp("batch_norm", {x, scale, bias, mean, var}, MakeAttrs({{"epsilon", 0.0}}));
  ASSERT_TRUE(y.ok()) << y.status();
  // channel 0: (x - 1) / 2 * 2; channel 1: (x - 4) / 1 * 1 + 10.
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 8, 4, 12));
  y = RunOp("batch_norm", {x, scale, bias, mean, var});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_NEAR(y->GetDouble(2), 4 * 2 / std::sqrt(4 + 1e-5), 1e-6);
}

TEST(BatchNormTest, Errors) {
  Tensor x(DType::kF64, {2, 3, 4});
  Tensor c3(DType::kF64, {3});
  EXPECT_THAT(RunOpError("batch_norm", {x, c3, c3, c3, Tensor(DType::kF64, {4})}),
              HasSubstr("node 'test_node' (batch_norm): input 4 (var) must "
                        "have shape [3], got [4]"));
  EXPECT_THAT(RunOpError("batch_norm", {x, c3, c3, Tensor(DType::kF32, {3}), c3}),
              HasSubstr("(batch_norm): inputs 0 and 3 have different dtypes"));
  EXPECT_THAT(RunOpError("batch_norm", {x, c3, c3, c3}),
              HasSubstr("(batch_norm): expected 5 inputs, got 4"));
}

}  // namespace
}  // namespace loom
