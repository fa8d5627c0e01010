#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// C[m][n] = sum_p A[m][p] B[p][n] for row-major matrices at the given
// offsets.
double Dot(const Tensor& a, int64_t a_offset, const Tensor& b, int64_t b_offset,
           int64_t i, int64_t j, int64_t k, int64_t n) {
  double sum = 0;
  for (int64_t p = 0; p < k; ++p) {
    sum +=
        a.GetDouble(a_offset + i * k + p) * b.GetDouble(b_offset + p * n + j);
  }
  return sum;
}

TEST(MatmulTest, TwoDimensional) {
  Tensor a = MakeTensor(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = MakeTensor(DType::kF32, {3, 2}, {7, 8, 9, 10, 11, 12});
  absl::StatusOr<Tensor> y = RunOp("matmul", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kF32, {2, 2}}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(58, 64, 139, 154));
}

TEST(MatmulTest, BatchDimsBroadcast) {
  // [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2]
  Tensor a = Iota(DType::kF64, {2, 1, 3, 4}, -3, 0.5);
  Tensor b = Iota(DType::kF64, {5, 4, 2}, 1, 0.25);
  absl::StatusOr<Tensor> y = RunOp("matmul", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{2, 5, 3, 2}));
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t t = 0; t < 5; ++t) {
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
          EXPECT_DOUBLE_EQ(y->GetDouble(((s * 5 + t) * 3 + i) * 2 + j),
                           Dot(a, s * 12, b, t * 8, i, j, 4, 2));
        }
      }
    }
  }
}

TEST(MatmulTest, OneDimensionalOperandsLoseTheirAddedDim) {
  Tensor v = MakeTensor(DType::kF32, {3}, {1, 2, 3});
  Tensor m = Iota(DType::kF32, {3, 2});  // [[0,1],[2,3],[4,5]]
  absl::StatusOr<Tensor> y = RunOp("matmul", {v, m});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(16, 22));

  y = RunOp("matmul", {Iota(DType::kF32, {2, 3}), v});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(8, 26));

  y = RunOp("matmul", {v, v});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(14));

  // A batched matrix times a vector: [2, 2, 3] x [3] -> [2, 2].
  y = RunOp("matmul", {Iota(DType::kF32, {2, 2, 3}), v});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(8, 26, 44, 62));
}

TEST(MatmulTest, SizeOneAndEmptyDims) {
  absl::StatusOr<Tensor> y = RunOp(
      "matmul", {Iota(DType::kF32, {1, 1}, 3), Iota(DType::kF32, {1, 4}, 1)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(3, 6, 9, 12));
  // k = 0: the sums are empty.
  y = RunOp("matmul",
            {Tensor(DType::kF32, {2, 0}), Tensor(DType::kF32, {0, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(MatmulTest, IntegersAreExact) {
  const int64_t big = (1LL << 40) + 1;
  Tensor a = MakeIntTensor(DType::kI64, {1, 2}, {big, 1});
  Tensor b = MakeIntTensor(DType::kI64, {2, 1}, {1 << 12, -1});
  absl::StatusOr<Tensor> y = RunOp("matmul", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(big * (1 << 12) - 1));
  y = RunOp("matmul", {Iota(DType::kI32, {2, 2}), Iota(DType::kI32, {2, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kI32);
  EXPECT_THAT(ToInts(*y), ElementsAre(2, 3, 6, 11));
}

TEST(MatmulTest, Errors) {
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {2, 3}),
                                    Tensor(DType::kF32, {4, 5})}),
              HasSubstr("node 'test_node' (matmul): inner dimensions do not "
                        "agree: [2,3] x [4,5]"));
  EXPECT_THAT(RunOpError("matmul",
                         {Tensor(DType::kF32, {3}), Tensor(DType::kF32, {2})}),
              HasSubstr("inner dimensions do not agree: [3] x [2]"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {2, 2, 3}),
                                    Tensor(DType::kF32, {3, 3, 1})}),
              HasSubstr("(matmul): batch dimensions do not broadcast: [2,2,3] "
                        "x [3,3,1]"));
  EXPECT_THAT(
      RunOpError("matmul", {Tensor(DType::kF32, {}), Tensor(DType::kF32, {2})}),
      HasSubstr("(matmul): operands must have rank >= 1"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {2, 2}),
                                    Tensor(DType::kF64, {2, 2})}),
              HasSubstr("(matmul): inputs 0 and 1 have different dtypes: "
                        "f32[2,2] and f64[2,2]"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kBool, {2, 2}),
                                    Tensor(DType::kBool, {2, 2})}),
              HasSubstr("(matmul): input 0 has dtype bool"));
}

}  // namespace
}  // namespace loom
