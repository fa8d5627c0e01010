#include "ir/expr_analysis.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "ir/expr.h"

namespace loom {
namespace {

class ExprAnalysisTest : public ::testing::Test {
 protected:
  Expr x(int i) { return ctx_.Var(i); }
  Expr c(int64_t v) { return ctx_.Const(v); }
  Expr Add(Expr a, Expr b) { return ctx_.Add(a, b); }
  Expr Mul(Expr a, Expr b) { return ctx_.Mul(a, b); }
  Expr Mul(Expr a, int64_t k) { return ctx_.Mul(a, k); }

  ExprContext ctx_;
};

TEST_F(ExprAnalysisTest, ForEachNodeVisitsASharedNodeOnce) {
  // (x0 // 4) occurs in both operands of the product.
  const Expr shared = ctx_.FloorDiv(x(0), 4);
  const Expr e = Mul(Add(shared, x(1)), Add(shared, x(2)));
  std::vector<Expr> visited;
  EXPECT_TRUE(ForEachNode(e, [&](Expr node) {
    visited.push_back(node);
    return true;
  }));
  EXPECT_EQ(visited.front(), e);
  EXPECT_EQ(std::count(visited.begin(), visited.end(), shared), 1);
  EXPECT_EQ(std::count(visited.begin(), visited.end(), x(0)), 1);
}

TEST_F(ExprAnalysisTest, ForEachNodeStopsWhenAVisitSaysSo) {
  const Expr e = Add(Mul(x(0), 3), x(1));
  int visits = 0;
  EXPECT_FALSE(ForEachNode(e, [&](Expr) { return ++visits < 2; }));
  EXPECT_EQ(visits, 2);
}

TEST_F(ExprAnalysisTest, UsesVar) {
  const Expr e = Add(ctx_.Mod(Add(Mul(x(2), 3), x(0)), 8), c(5));
  EXPECT_TRUE(UsesVar(e, 0));
  EXPECT_FALSE(UsesVar(e, 1));
  EXPECT_TRUE(UsesVar(e, 2));
  EXPECT_FALSE(UsesVar(c(7), 0));
}

TEST_F(ExprAnalysisTest, MarkUsedVarsSetsTheVariablesWithinReach) {
  const Expr e = Add(Mul(x(0), x(3)), ctx_.FloorDiv(x(5), 2));
  std::vector<bool> used(4, false);
  MarkUsedVars(e, used);
  EXPECT_EQ(used, (std::vector<bool>{true, false, false, true}));  // x5 is past the end
  MarkUsedVars(x(1), used);
  EXPECT_EQ(used, (std::vector<bool>{true, true, false, true}));
}

TEST_F(ExprAnalysisTest, LinearCoefficient) {
  const Expr e = Add(Add(Mul(x(0), 8), x(1)), Add(ctx_.FloorDiv(x(2), 4), c(3)));
  EXPECT_EQ(LinearCoefficient(e, 0), 8);
  EXPECT_EQ(LinearCoefficient(e, 1), 1);
  EXPECT_EQ(LinearCoefficient(e, 3), 0);
  EXPECT_EQ(LinearCoefficient(e, 2), std::nullopt);  // in a division
  EXPECT_EQ(LinearCoefficient(Mul(x(0), -2), 0), -2);
  EXPECT_EQ(LinearCoefficient(c(4), 0), 0);
}

TEST_F(ExprAnalysisTest, LinearCoefficientRejectsAVariableAlsoUsedNonLinearly) {
  EXPECT_EQ(LinearCoefficient(Add(x(0), ctx_.Mod(x(0), 4)), 0), std::nullopt);
  EXPECT_EQ(LinearCoefficient(Add(Mul(x(0), x(1)), x(1)), 0), std::nullopt);
  EXPECT_EQ(LinearCoefficient(Mul(Mul(x(0), x(1)), 3), 1), std::nullopt);
}

TEST_F(ExprAnalysisTest, ConstantTerm) {
  EXPECT_EQ(ConstantTerm(c(-6)), -6);
  EXPECT_EQ(ConstantTerm(Add(Mul(x(0), 4), c(12))), 12);
  EXPECT_EQ(ConstantTerm(Add(Mul(x(0), 4), x(1))), 0);
  EXPECT_EQ(ConstantTerm(x(2)), 0);
  // The constant inside a division is not a term of the sum.
  EXPECT_EQ(ConstantTerm(ctx_.FloorDiv(Add(x(0), c(1)), 2)), 0);
}

}  // namespace
}  // namespace loom
