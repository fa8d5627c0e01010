#include "ir/gemm.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/sum_of_products_for_test.h"

namespace loom {
namespace {

// A product node over `ranges` (batch loops, then m and n) summing over k,
// reading a and b at the given indices and storing at `store`.
ComputeNode Product(std::vector<int64_t> ranges, int64_t k, Expr a_index, Expr b_index,
                    Expr store) {
  return SumOfProducts(std::move(ranges), {k}, a_index, b_index, store);
}

class GemmTest : public ::testing::Test {
 protected:
  Expr X(int i) { return ctx_.Var(i); }
  Expr C(int64_t v) { return ctx_.Const(v); }
  // sum of coefficient * variable terms plus a constant
  Expr Affine(std::vector<std::pair<int64_t, int>> terms, int64_t constant = 0) {
    Expr e = C(constant);
    for (auto [coefficient, var] : terms) e = ctx_.Add(e, ctx_.Mul(X(var), coefficient));
    return e;
  }
  ExprContext ctx_;
};

TEST_F(GemmTest, RowMajorProduct) {
  // c[m][n] over [3, 5], sum over k in [4]: x0 = m, x1 = n, x2 = k.
  const std::optional<Gemm> gemm = MatchGemm(Product(
      {3, 5}, 4, Affine({{4, 0}, {1, 2}}), Affine({{5, 2}, {1, 1}}), Affine({{5, 0}, {1, 1}})));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->m, 3);
  EXPECT_EQ(gemm->n, 5);
  EXPECT_EQ(gemm->k, 4);
  EXPECT_TRUE(gemm->batch.empty());
  EXPECT_FALSE(gemm->a.transposed);
  EXPECT_EQ(gemm->a.leading, 4);
  EXPECT_FALSE(gemm->b.transposed);
  EXPECT_EQ(gemm->b.leading, 5);
  EXPECT_EQ(gemm->c.leading, 5);
}

TEST_F(GemmTest, TransposedWeightAndOffsets) {
  // b[k][n] = w[n][k] (a linear layer's weight); a starts at element 7.
  const std::optional<Gemm> gemm = MatchGemm(Product(
      {3, 5}, 4, Affine({{4, 0}, {1, 2}}, 7), Affine({{4, 1}, {1, 2}}), Affine({{5, 0}, {1, 1}})));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->a.offset, 7);
  EXPECT_TRUE(gemm->b.transposed);
  EXPECT_EQ(gemm->b.leading, 4);
}

TEST_F(GemmTest, SharedWeightFoldsBatchIntoRows) {
  // [2, 3, 4] x [4, 5]: the batch loop x0 steps over 3 rows of a and c.
  const std::optional<Gemm> gemm =
      MatchGemm(Product({2, 3, 5}, 4, Affine({{12, 0}, {4, 1}, {1, 3}}), Affine({{5, 3}, {1, 2}}),
                        Affine({{15, 0}, {5, 1}, {1, 2}})));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_TRUE(gemm->batch.empty());
  EXPECT_EQ(gemm->m, 6);
}

TEST_F(GemmTest, FoldedRowsStepByTheLeadingDimension) {
  // [197, 1, 768] x [768, 2304] (a ViT's projection of a sequence-first
  // input): the rows as matched are the loop of extent 1, whose stride is
  // 0; folded, the 197 rows are a and c's leading dimension apart, which
  // is what a block of rows per thread steps by.
  const std::optional<Gemm> gemm =
      MatchGemm(Product({197, 1, 2304}, 768, Affine({{768, 0}, {1, 3}}),
                        Affine({{2304, 3}, {1, 2}}), Affine({{2304, 0}, {1, 2}})));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_TRUE(gemm->batch.empty());
  EXPECT_EQ(gemm->m, 197);
  EXPECT_EQ(gemm->a.row_stride, 768);
  EXPECT_EQ(gemm->c.row_stride, 2304);
}

TEST_F(GemmTest, BatchedOperandsKeepTheirBatchLoop) {
  // [2, 3, 4] x [2, 4, 5].
  const std::optional<Gemm> gemm =
      MatchGemm(Product({2, 3, 5}, 4, Affine({{12, 0}, {4, 1}, {1, 3}}),
                        Affine({{20, 0}, {5, 3}, {1, 2}}), Affine({{15, 0}, {5, 1}, {1, 2}})));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->batch, std::vector<int64_t>{2});
  EXPECT_EQ(gemm->m, 3);
  EXPECT_EQ(gemm->b.batch_strides, std::vector<int64_t>{20});
}

TEST_F(GemmTest, TheLongestSharedLoopGivesTheRows) {
  // A sequence-first view of a batch-first [2, 16, 8] input times a shared
  // [8, 6]: loops x0 (position, 16), x1 (sequence, 2: the rows as matched),
  // x2 = n, x3 = k; c is [16, 2, 6]. The 16 positions become the rows, the
  // 2 sequences the batch.
  const std::optional<Gemm> gemm =
      MatchGemm(Product({16, 2, 6}, 8, Affine({{8, 0}, {128, 1}, {1, 3}}), Affine({{6, 3}, {1, 2}}),
                        Affine({{12, 0}, {6, 1}, {1, 2}})));
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->m, 16);
  EXPECT_EQ(gemm->batch, std::vector<int64_t>{2});
  EXPECT_EQ(gemm->a.leading, 8);
  EXPECT_EQ(gemm->a.row_stride, 8);
  EXPECT_EQ(gemm->a.batch_strides, std::vector<int64_t>{128});
  EXPECT_EQ(gemm->c.leading, 12);
  EXPECT_EQ(gemm->c.row_stride, 12);
  EXPECT_EQ(gemm->c.batch_strides, std::vector<int64_t>{6});
  EXPECT_EQ(gemm->b.batch_strides, std::vector<int64_t>{0});
}

TEST_F(GemmTest, RefusesWhatNoGemmCallComputes) {
  const Expr a = Affine({{4, 0}, {1, 2}}), b = Affine({{5, 2}, {1, 1}});
  const Expr c = Affine({{5, 0}, {1, 1}});
  ComputeNode node = Product({3, 5}, 4, a, b, c);
  node.body[2].fn = ScalarFn::kAdd;
  EXPECT_FALSE(MatchGemm(node).has_value()) << "not a product";
  node = Product({3, 5}, 4, a, ctx_.FloorDiv(b, 2), c);
  EXPECT_FALSE(MatchGemm(node).has_value()) << "not affine";
  node = Product({3, 5}, 4, a, Affine({{10, 2}, {2, 1}}), c);
  EXPECT_FALSE(MatchGemm(node).has_value()) << "no unit stride";
  node = Product({3, 5}, 4, Affine({{4, 0}, {1, 2}, {1, 1}}), b, c);
  EXPECT_FALSE(MatchGemm(node).has_value()) << "a reads along n";
  node = Product({3, 5}, 4, a, b, Affine({{1, 0}, {3, 1}}));
  EXPECT_FALSE(MatchGemm(node).has_value()) << "c is column-major";
  node = Product({3, 5}, 4, a, b, c);
  node.reduce = ReduceKind::kMax;
  EXPECT_FALSE(MatchGemm(node).has_value()) << "not a sum";
}

TEST_F(GemmTest, KernelPositionsAccumulateOverMergedColumns) {
  // A 3x3 conv on a padded [C=4, 7 rows, 6 cols] image, 4 x 6 output
  // positions on the padded width (x1, x2: n), weight [M=8, 3, 3, C]:
  // loops x0 = m, x1, x2, then the kernel's x3, x4 (accumulation) and
  // x5 = k, the channel.
  ComputeNode node =
      Product({8, 4, 6}, 4, Affine({{36, 0}, {12, 3}, {4, 4}, {1, 5}}),
              Affine({{6, 1}, {1, 2}, {6, 3}, {1, 4}, {42, 5}}), Affine({{24, 0}, {6, 1}, {1, 2}}));
  node.reduction_ranges = {3, 3, 4};
  const std::optional<Gemm> conv = MatchGemm(node);
  ASSERT_TRUE(conv.has_value());
  EXPECT_EQ(conv->m, 8);
  EXPECT_EQ(conv->n, 24);
  EXPECT_EQ(conv->k, 4);
  EXPECT_EQ(conv->accumulate, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(conv->a.accumulate_strides, (std::vector<int64_t>{12, 4}));
  EXPECT_EQ(conv->b.accumulate_strides, (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(conv->c.accumulate_strides, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(conv->a.leading, 36);
  EXPECT_EQ(conv->b.leading, 42);
  EXPECT_EQ(conv->c.leading, 24);
  // Columns that do not step through as one: rows of 6 read 7 apart.
  node.body[1].index = Affine({{7, 1}, {1, 2}, {6, 3}, {1, 4}, {42, 5}});
  EXPECT_FALSE(MatchGemm(node).has_value());
  node =
      Product({8, 4, 6}, 4, Affine({{36, 0}, {12, 3}, {4, 4}, {1, 5}}),
              Affine({{6, 1}, {1, 2}, {6, 3}, {1, 4}, {42, 5}}), Affine({{24, 0}, {6, 1}, {1, 2}}));
  node.reduction_ranges = {3, 3, 4};
  node.body[0].index = Affine({{36, 0}, {12, 3}, {4, 4}, {1, 5}, {1, 1}});
  EXPECT_FALSE(MatchGemm(node).has_value()) << "a reads along n";
}

TEST(AffineCoefficientsTest, ReadsCoefficientsAndConstant) {
  ExprContext ctx;
  std::vector<int64_t> coefficients(3);
  int64_t constant = -1;
  const Expr e = ctx.Add(ctx.Add(ctx.Mul(ctx.Var(2), 6), ctx.Var(0)), ctx.Const(9));
  ASSERT_TRUE(AffineCoefficients(e, absl::MakeSpan(coefficients), constant));
  EXPECT_EQ(coefficients, (std::vector<int64_t>{1, 0, 6}));
  EXPECT_EQ(constant, 9);
  EXPECT_FALSE(AffineCoefficients(ctx.Mod(ctx.Var(0), 4), absl::MakeSpan(coefficients), constant));
  std::vector<int64_t> too_few(2);
  EXPECT_FALSE(AffineCoefficients(e, absl::MakeSpan(too_few), constant));
}

}  // namespace
}  // namespace loom
