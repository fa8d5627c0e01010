#include <cmath>
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

std::vector<double> NaiveSoftmax(const std::vector<double>& row) {
  double sum = 0;
  for (double v : row) sum += std::exp(v);
  std::vector<double> out;
  for (double v : row) out.push_back(std::exp(v) / sum);
  return out;
}

TEST(SoftmaxTest, LastAxisByDefault) {
  Tensor x = MakeTensor(DType::kF64, {2, 3}, {1, 2, 3, -1, 0, 5});
  absl::StatusOr<Tensor> y = RunOp("softmax", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), x.type());
  std::vector<double> expected = NaiveSoftmax({1, 2, 3});
  for (double v : NaiveSoftmax({-1, 0, 5})) expected.push_back(v);
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-15), expected));
}

TEST(SoftmaxTest, MiddleAxisOnOddShape) {
  Tensor x = Iota(DType::kF32, {2, 3, 5}, -2, 0.3);
  absl::StatusOr<Tensor> y = RunOp("softmax", {x}, MakeAttrs({{"axis", int64_t{-2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  for (int o = 0; o < 2; ++o) {
    for (int k = 0; k < 5; ++k) {
      std::vector<double> row;
      for (int j = 0; j < 3; ++j) row.push_back(x.GetDouble((o * 3 + j) * 5 + k));
      const std::vector<double> expected = NaiveSoftmax(row);
      for (int j = 0; j < 3; ++j) {
        EXPECT_NEAR(y->GetDouble((o * 3 + j) * 5 + k), expected[j], 1e-7);
      }
    }
  }
}

TEST(SoftmaxTest, StableForLargeValuesAndSizeOneAxes) {
  absl::StatusOr<Tensor> y = RunOp("softmax", {MakeTensor(DType::kF32, {2}, {1000, 1000})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0.5, 0.5));
  y = RunOp("softmax", {MakeTensor(DType::kF32, {3, 1}, {-7, 0, 1e30})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 1, 1));
  y = RunOp("softmax", {Tensor(DType::kF32, {2, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 0}));
}

TEST(SoftmaxTest, Errors) {
  EXPECT_THAT(RunOpError("softmax", {Tensor(DType::kI32, {2})}),
              HasSubstr("node 'test_node' (softmax): input 0 has dtype i32, "
                        "expected a float dtype (f32 or f64)"));
  EXPECT_THAT(
      RunOpError("softmax", {Tensor(DType::kF32, {2, 2})}, MakeAttrs({{"axis", int64_t{2}}})),
      HasSubstr("(softmax): attribute 'axis': axis 2 is out of range "
                "for rank 2"));
  EXPECT_THAT(RunOpError("softmax", {Tensor(DType::kF32, {2})}, MakeAttrs({{"axis", 1.0}})),
              HasSubstr("(softmax): attribute 'axis' must be int, got float"));
}

TEST(LogSoftmaxTest, IsTheLogOfSoftmaxOnEveryAxis) {
  Tensor x = Iota(DType::kF64, {2, 3, 5}, -2, 0.37);
  for (int64_t axis : {-1, 0, 1, -2}) {
    absl::StatusOr<Tensor> y = RunOp("log_softmax", {x}, MakeAttrs({{"axis", axis}}));
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->type(), x.type());
    absl::StatusOr<Tensor> softmax = RunOp("softmax", {x}, MakeAttrs({{"axis", axis}}));
    ASSERT_TRUE(softmax.ok()) << softmax.status();
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      EXPECT_NEAR(y->GetDouble(i), std::log(softmax->GetDouble(i)), 1e-14) << "axis " << axis;
    }
  }
  // Default axis -1 against the naive formula.
  absl::StatusOr<Tensor> y = RunOp("log_softmax", {MakeTensor(DType::kF32, {1, 3}, {1, 2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<double> expected;
  for (double p : NaiveSoftmax({1, 2, 3})) expected.push_back(std::log(p));
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-6), expected));
}

TEST(LogSoftmaxTest, StableWhereTheNaiveFormulaOverflows) {
  absl::StatusOr<Tensor> y =
      RunOp("log_softmax", {MakeTensor(DType::kF32, {3}, {1000, 1000, -1000})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y),
              Pointwise(DoubleNear(1e-4), {-std::log(2.0), -std::log(2.0), -2000 - std::log(2.0)}));
  EXPECT_THAT(RunOpError("log_softmax", {Tensor(DType::kI64, {2})}),
              HasSubstr("node 'test_node' (log_softmax): input 0 has dtype "
                        "i64"));
  EXPECT_THAT(
      RunOpError("log_softmax", {Tensor(DType::kF32, {2})}, MakeAttrs({{"axis", int64_t{-2}}})),
      HasSubstr("(log_softmax): attribute 'axis': axis -2 is out of "
                "range for rank 1"));
}

}  // namespace
}  // namespace loom
