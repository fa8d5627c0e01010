#include <cstdint>
#include <functional>
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
double Dot(const Tensor& a, int64_t a_offset, const Tensor& b, int64_t b_offset, int64_t i,
           int64_t j, int64_t k, int64_t n) {
  double sum = 0;
  for (int64_t p = 0; p < k; ++p) {
    sum += a.GetDouble(a_offset + i * k + p) * b.GetDouble(b_offset + p * n + j);
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
  absl::StatusOr<Tensor> y =
      RunOp("matmul", {Iota(DType::kF32, {1, 1}, 3), Iota(DType::kF32, {1, 4}, 1)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(3, 6, 9, 12));
  // k = 0: the sums are empty.
  y = RunOp("matmul", {Tensor(DType::kF32, {2, 0}), Tensor(DType::kF32, {0, 3})});
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
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {2, 3}), Tensor(DType::kF32, {4, 5})}),
              HasSubstr("node 'test_node' (matmul): inner dimensions do not "
                        "agree: [2,3] x [4,5]"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {3}), Tensor(DType::kF32, {2})}),
              HasSubstr("inner dimensions do not agree: [3] x [2]"));
  EXPECT_THAT(
      RunOpError("matmul", {Tensor(DType::kF32, {2, 2, 3}), Tensor(DType::kF32, {3, 3, 1})}),
      HasSubstr("(matmul): batch dimensions do not broadcast: [2,2,3] "
                "x [3,3,1]"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {}), Tensor(DType::kF32, {2})}),
              HasSubstr("(matmul): operands must have rank >= 1"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kF32, {2, 2}), Tensor(DType::kF64, {2, 2})}),
              HasSubstr("(matmul): inputs 0 and 1 have different dtypes: "
                        "f32[2,2] and f64[2,2]"));
  EXPECT_THAT(RunOpError("matmul", {Tensor(DType::kBool, {2, 2}), Tensor(DType::kBool, {2, 2})}),
              HasSubstr("(matmul): input 0 has dtype bool"));
}

TEST(LinearTest, MatchesExplicitLoopsWithAndWithoutBias) {
  Tensor x = Iota(DType::kF64, {2, 3, 5}, -1.5, 0.25);
  Tensor weight = Iota(DType::kF64, {7, 5}, 2, -0.125);
  Tensor bias = Iota(DType::kF64, {7}, 10, 1);
  for (bool with_bias : {false, true}) {
    std::vector<Tensor> inputs = {x, weight};
    if (with_bias) inputs.push_back(bias);
    absl::StatusOr<Tensor> y = RunOp("linear", inputs);
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->type(), (TensorType{DType::kF64, {2, 3, 7}}));
    for (int r = 0; r < 6; ++r) {
      for (int o = 0; o < 7; ++o) {
        double expected = with_bias ? bias.GetDouble(o) : 0;
        for (int k = 0; k < 5; ++k) {
          expected += x.GetDouble(r * 5 + k) * weight.GetDouble(o * 5 + k);
        }
        EXPECT_DOUBLE_EQ(y->GetDouble(r * 7 + o), expected);
      }
    }
  }
}

TEST(LinearTest, VectorInputSizeOneDimsAndIntegers) {
  // x [3] . weight [2, 3]^T + bias [2], by hand.
  absl::StatusOr<Tensor> y =
      RunOp("linear", {MakeIntTensor(DType::kI32, {3}, {1, 2, 3}),
                       MakeIntTensor(DType::kI32, {2, 3}, {1, 0, -1, 2, 2, 2}),
                       MakeIntTensor(DType::kI32, {2}, {100, -100})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kI32, {2}}));
  EXPECT_THAT(ToInts(*y), ElementsAre(98, -88));
  y = RunOp("linear",
            {MakeTensor(DType::kF32, {1, 1, 1}, {3}), MakeTensor(DType::kF32, {1, 1}, {-2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 1, 1}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-6));
}

TEST(LinearTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("linear", {x, Tensor(DType::kF32, {4, 5})}),
              HasSubstr("node 'test_node' (linear): inner dimensions do not "
                        "agree: x [2,3] has 3 features but weight [4,5] takes "
                        "5"));
  EXPECT_THAT(RunOpError("linear", {x, Tensor(DType::kF32, {4, 3}), Tensor(DType::kF32, {3})}),
              HasSubstr("node 'test_node' (linear): bias must have shape [4], "
                        "got [3]"));
  EXPECT_THAT(RunOpError("linear", {x, Tensor(DType::kF32, {3})}),
              HasSubstr("(linear): x must have rank >= 1 and weight rank 2"));
  EXPECT_THAT(RunOpError("linear", {x, Tensor(DType::kF64, {4, 3})}),
              HasSubstr("(linear): inputs 0 and 1 have different dtypes"));
  EXPECT_THAT(RunOpError("linear", {x}), HasSubstr("(linear): expected 2 to 3 inputs, got 1"));
}

// alpha * op(A) @ op(B) + beta * C with explicit loops; c_at(i, j) reads C
// as broadcast to [M, N].
std::vector<double> NaiveGemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                              double alpha, double beta,
                              const std::function<double(int, int)>& c_at) {
  const int m = a.shape()[trans_a ? 1 : 0], k = a.shape()[trans_a ? 0 : 1];
  const int n = b.shape()[trans_b ? 0 : 1];
  std::vector<double> out;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        sum += a.GetDouble(trans_a ? p * m + i : i * k + p) *
               b.GetDouble(trans_b ? j * k + p : p * n + j);
      }
      out.push_back(alpha * sum + beta * c_at(i, j));
    }
  }
  return out;
}

TEST(GemmTest, AllTransposesAgainstExplicitLoops) {
  const int m = 3, k = 5, n = 7;
  for (int trans_a : {0, 1}) {
    for (int trans_b : {0, 1}) {
      Tensor a = Iota(DType::kF64, trans_a ? Shape{k, m} : Shape{m, k}, -2, 0.3);
      Tensor b = Iota(DType::kF64, trans_b ? Shape{n, k} : Shape{k, n}, 1, -0.1);
      Tensor c = Iota(DType::kF64, {m, n}, 0.5, 0.5);
      absl::StatusOr<Tensor> y = RunOp("gemm", {a, b, c},
                                       MakeAttrs({{"alpha", 0.5},
                                                  {"beta", -2.0},
                                                  {"trans_a", int64_t{trans_a}},
                                                  {"trans_b", int64_t{trans_b}}}));
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ(y->shape(), (Shape{m, n}));
      const std::vector<double> expected = NaiveGemm(
          a, trans_a, b, trans_b, 0.5, -2.0, [&](int i, int j) { return c.GetDouble(i * n + j); });
      for (int i = 0; i < m * n; ++i) {
        EXPECT_NEAR(y->GetDouble(i), expected[i], 1e-12) << trans_a << trans_b;
      }
    }
  }
}

TEST(GemmTest, CBroadcastsAndIsOptional) {
  Tensor a = Iota(DType::kF32, {2, 3});
  Tensor b = Iota(DType::kF32, {3, 4}, -1);
  auto run = [&](std::vector<Tensor> inputs) {
    absl::StatusOr<Tensor> y = RunOp("gemm", inputs);
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? ToDoubles(*y) : std::vector<double>();
  };
  const std::vector<double> row_c = {10, 20, 30, 40};
  EXPECT_EQ(run({a, b, MakeTensor(DType::kF32, {4}, row_c)}),
            NaiveGemm(a, false, b, false, 1, 1, [&](int, int j) { return row_c[j]; }));
  EXPECT_EQ(run({a, b, MakeTensor(DType::kF32, {2, 1}, {-1, 1})}),
            NaiveGemm(a, false, b, false, 1, 1, [](int i, int) { return i == 0 ? -1.0 : 1.0; }));
  EXPECT_EQ(run({a, b, MakeTensor(DType::kF32, {}, {7})}),
            NaiveGemm(a, false, b, false, 1, 1, [](int, int) { return 7.0; }));
  EXPECT_EQ(run({a, b}), NaiveGemm(a, false, b, false, 1, 1, [](int, int) { return 0.0; }));
}

TEST(GemmTest, Errors) {
  Tensor a(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("gemm", {a, Tensor(DType::kF32, {2, 4})}),
              HasSubstr("node 'test_node' (gemm): inner dimensions do not "
                        "agree: op(A) is [2,3] and op(B) is [2,4]"));
  EXPECT_THAT(
      RunOpError("gemm", {a, Tensor(DType::kF32, {4, 3})}, MakeAttrs({{"trans_a", int64_t{1}}})),
      HasSubstr("(gemm): inner dimensions do not agree: op(A) is "
                "[3,2] and op(B) is [4,3]"));
  EXPECT_THAT(RunOpError("gemm", {a, Tensor(DType::kF32, {3, 4}), Tensor(DType::kF32, {3, 4})}),
              HasSubstr("node 'test_node' (gemm): C [3,4] does not broadcast "
                        "to [2,4]"));
  EXPECT_THAT(RunOpError("gemm", {a, Tensor(DType::kF32, {3, 4}), Tensor(DType::kF32, {1, 2, 4})}),
              HasSubstr("(gemm): C [1,2,4] does not broadcast to [2,4]"));
  EXPECT_THAT(
      RunOpError("gemm", {a, Tensor(DType::kF32, {3, 4})}, MakeAttrs({{"trans_b", int64_t{2}}})),
      HasSubstr("(gemm): attribute 'trans_b' must be 0 or 1, got 2"));
  EXPECT_THAT(RunOpError("gemm", {a, Tensor(DType::kF32, {3})}),
              HasSubstr("(gemm): A and B must have rank 2, got [2,3] and [3]"));
  EXPECT_THAT(RunOpError("gemm", {Tensor(DType::kI32, {2, 3}), Tensor(DType::kI32, {3, 4})}),
              HasSubstr("(gemm): input 0 has dtype i32, expected a float"));
}

}  // namespace
}  // namespace loom
