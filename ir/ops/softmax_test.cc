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
  absl::StatusOr<Tensor> y =
      RunOp("softmax", {x}, MakeAttrs({{"axis", int64_t{-2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  for (int o = 0; o < 2; ++o) {
    for (int k = 0; k < 5; ++k) {
      std::vector<double> row;
      for (int j = 0; j < 3; ++j)
        row.push_back(x.GetDouble((o * 3 + j) * 5 + k));
      const std::vector<double> expected = NaiveSoftmax(row);
      for (int j = 0; j < 3; ++j) {
        EXPECT_NEAR(y->GetDouble((o * 3 + j) * 5 + k), expected[j], 1e-7);
      }
    }
  }
}

TEST(SoftmaxTest, StableForLargeValuesAndSizeOneAxes) {
  absl::StatusOr<Tensor> y =
      RunOp("softmax", {MakeTensor(DType::kF32, {2}, {1000, 1000})});
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
  EXPECT_THAT(RunOpError("softmax", {Tensor(DType::kF32, {2, 2})},
                         MakeAttrs({{"axis", int64_t{2}}})),
              HasSubstr("(softmax): attribute 'axis': axis 2 is out of range "
                        "for rank 2"));
  EXPECT_THAT(RunOpError("softmax", {Tensor(DType::kF32, {2})},
                         MakeAttrs({{"axis", 1.0}})),
              HasSubstr("(softmax): attribute 'axis' must be int, got float"));
}

}  // namespace
}  // namespace loom
