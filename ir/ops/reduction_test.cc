#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsNan;

// x[i][j][k] = 100 i + 10 j + k on [2, 3, 4].
Tensor Digits(DType dtype) {
  Tensor x(dtype, {2, 3, 4});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k)
        x.SetInt((i * 3 + j) * 4 + k, 100 * i + 10 * j + k);
    }
  }
  return x;
}

TEST(ReductionTest, SumOverMiddleAxis) {
  absl::StatusOr<Tensor> y = RunOp("reduce_sum", {Digits(DType::kF32)},
                                   MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kF32, {2, 4}}));
  // sum_j (100 i + 10 j + k) = 300 i + 30 + 3 k
  EXPECT_THAT(ToDoubles(*y), ElementsAre(30, 33, 36, 39, 330, 333, 336, 339));
}

TEST(ReductionTest, KeepdimsAndNegativeAxes) {
  absl::StatusOr<Tensor> y =
      RunOp("reduce_sum", {Digits(DType::kI32)},
            MakeAttrs({{"axes", Ints{-1, 0}}, {"keepdims", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kI32, {1, 3, 1}}));
  // sum_{i,k} = 4 * 100 + 2 * 4 * 10 j + 2 * 6
  EXPECT_THAT(ToInts(*y), ElementsAre(412, 492, 572));
}

TEST(ReductionTest, AbsentOrEmptyAxesReduceEverything) {
  for (const Attrs& attrs : {Attrs(), MakeAttrs({{"axes", Ints{}}})}) {
    absl::StatusOr<Tensor> y =
        RunOp("reduce_max", {Digits(DType::kI64)}, attrs);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->type(), (TensorType{DType::kI64, {}}));
    EXPECT_THAT(ToInts(*y), ElementsAre(123));
  }
  absl::StatusOr<Tensor> y = RunOp("reduce_min", {Digits(DType::kF64)},
                                   MakeAttrs({{"keepdims", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 1, 1}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0));
}

TEST(ReductionTest, MeanMaxMinAgainstExplicitLoops) {
  Tensor x = Iota(DType::kF64, {3, 5}, -4.5, 0.75);
  for (int64_t axis : {0, 1}) {
    for (const char* op : {"reduce_mean", "reduce_max", "reduce_min"}) {
      absl::StatusOr<Tensor> y =
          RunOp(op, {x}, MakeAttrs({{"axes", Ints{axis}}}));
      ASSERT_TRUE(y.ok()) << y.status();
      const int outer = axis == 0 ? 5 : 3;
      const int inner = axis == 0 ? 3 : 5;
      ASSERT_EQ(y->num_elements(), outer);
      for (int o = 0; o < outer; ++o) {
        double sum = 0, max = -INFINITY, min = INFINITY;
        for (int r = 0; r < inner; ++r) {
          const double v =
              axis == 0 ? x.GetDouble(r * 5 + o) : x.GetDouble(o * 5 + r);
          sum += v;
          max = std::max(max, v);
          min = std::min(min, v);
        }
        const std::string name = op;
        const double expected = name == "reduce_mean"  ? sum / inner
                                : name == "reduce_max" ? max
                                                       : min;
        EXPECT_DOUBLE_EQ(y->GetDouble(o), expected) << op << " axis " << axis;
      }
    }
  }
}

TEST(ReductionTest, SingletonAxesAndOddShapes) {
  Tensor x = Iota(DType::kF32, {1, 7, 1});
  absl::StatusOr<Tensor> y =
      RunOp("reduce_sum", {x}, MakeAttrs({{"axes", Ints{0, 2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{7}));
  EXPECT_EQ(ToDoubles(*y), ToDoubles(x));
}

TEST(ReductionTest, MaxAndMinPropagateNan) {
  Tensor x = MakeTensor(DType::kF32, {2, 2}, {1, NAN, 3, 4});
  absl::StatusOr<Tensor> y =
      RunOp("reduce_max", {x}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), 4));
  y = RunOp("reduce_min", {x}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), 3));
}

TEST(ReductionTest, IntegerSumIsExactInInt64) {
  const int64_t big = (1LL << 53) + 1;
  Tensor x = MakeIntTensor(DType::kI64, {3}, {big, big, -2});
  absl::StatusOr<Tensor> y = RunOp("reduce_sum", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(2 * big - 2));
}

TEST(ReductionTest, EmptyAxes) {
  Tensor empty(DType::kF32, {2, 0});
  absl::StatusOr<Tensor> y =
      RunOp("reduce_sum", {empty}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0));
  y = RunOp("reduce_mean", {empty}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), IsNan()));
  // Reducing the non-empty axis gives an empty result.
  y = RunOp("reduce_max", {empty}, MakeAttrs({{"axes", Ints{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0}));
  EXPECT_THAT(RunOpError("reduce_max", {empty}, MakeAttrs({{"axes", Ints{1}}})),
              HasSubstr("node 'test_node' (reduce_max): cannot reduce over the "
                        "empty axis 1 of [2,0]"));
  EXPECT_THAT(RunOpError("reduce_min", {empty}),
              HasSubstr("(reduce_min): cannot reduce over the empty axis 1"));
}

TEST(ReductionTest, AttributeAndDTypeErrors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", Ints{1, -1}}})),
              HasSubstr("node 'test_node' (reduce_sum): attribute 'axes': axis "
                        "1 is listed more than once"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", Ints{2}}})),
              HasSubstr("(reduce_sum): attribute 'axes': axis 2 is out of "
                        "range for rank 2"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", Ints{-3}}})),
              HasSubstr("axis -3 is out of range for rank 2"));
  EXPECT_THAT(
      RunOpError("reduce_sum", {x}, MakeAttrs({{"keepdims", int64_t{2}}})),
      HasSubstr("(reduce_sum): attribute 'keepdims' must be 0 or 1, "
                "got 2"));
  EXPECT_THAT(
      RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", int64_t{1}}})),
      HasSubstr("(reduce_sum): attribute 'axes' must be ints, got int"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axis", Ints{1}}})),
              HasSubstr("(reduce_sum): unknown attribute 'axis' (known: axes, "
                        "keepdims)"));
  EXPECT_THAT(
      RunOpError("reduce_mean", {Tensor(DType::kI32, {2})}),
      HasSubstr("(reduce_mean): input 0 has dtype i32, expected a float"));
  EXPECT_THAT(RunOpError("reduce_sum", {Tensor(DType::kBool, {2})}),
              HasSubstr("(reduce_sum): input 0 has dtype bool"));
}

}  // namespace
}  // namespace loom
