#include "ir/expr.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/shape_constants.h"

namespace loom {
namespace {

int64_t FloorDivInt(int64_t a, int64_t d) { return a / d - ((a % d != 0 && a < 0) ? 1 : 0); }
int64_t FloorModInt(int64_t a, int64_t d) { return a - FloorDivInt(a, d) * d; }

// Evaluates with C's truncating / and %, as the code ToCpp emits would.
int64_t EvaluateAsC(Expr e, const std::vector<int64_t>& vars) {
  switch (e->kind()) {
    case ExprKind::kConst:
      return e->value();
    case ExprKind::kVar:
      return vars[e->value()];
    case ExprKind::kAdd: {
      int64_t sum = 0;
      for (Expr t : e->operands()) sum += EvaluateAsC(t, vars);
      return sum;
    }
    case ExprKind::kMul: {
      int64_t product = 1;
      for (Expr f : e->operands()) product *= EvaluateAsC(f, vars);
      return product;
    }
    case ExprKind::kFloorDiv:
      return EvaluateAsC(e->operands()[0], vars) / e->value();
    case ExprKind::kMod:
      return EvaluateAsC(e->operands()[0], vars) % e->value();
  }
  return 0;
}

class ExprTest : public ::testing::Test {
 protected:
  Expr x(int i) { return ctx_.Var(i); }
  Expr c(int64_t v) { return ctx_.Const(v); }
  Expr Add(Expr a, Expr b) { return ctx_.Add(a, b); }
  Expr Sub(Expr a, Expr b) { return ctx_.Sub(a, b); }
  Expr Mul(Expr a, Expr b) { return ctx_.Mul(a, b); }
  Expr Mul(Expr a, int64_t k) { return ctx_.Mul(a, k); }
  Expr Div(Expr a, int64_t d) { return ctx_.FloorDiv(a, d); }
  Expr Mod(Expr a, int64_t d) { return ctx_.Mod(a, d); }

  ExprContext ctx_;
};

// --- Construction and canonical form.

TEST_F(ExprTest, ConstantsFold) {
  EXPECT_EQ(Add(c(2), c(3)), c(5));
  EXPECT_EQ(Sub(c(2), c(3)), c(-1));
  EXPECT_EQ(Mul(c(4), c(-3)), c(-12));
  EXPECT_EQ(Div(c(7), 2), c(3));
  EXPECT_EQ(Div(c(-7), 2), c(-4));
  EXPECT_EQ(Mod(c(7), 2), c(1));
  EXPECT_EQ(Mod(c(-7), 2), c(1));
  EXPECT_EQ(Mod(c(-8), 4), c(0));
  EXPECT_TRUE(c(5)->is_const(5));
  EXPECT_EQ(c(5)->kind(), ExprKind::kConst);
}

TEST_F(ExprTest, Identities) {
  EXPECT_EQ(Add(x(0), c(0)), x(0));
  EXPECT_EQ(Add(c(0), x(0)), x(0));
  EXPECT_EQ(Sub(x(0), c(0)), x(0));
  EXPECT_EQ(Mul(x(0), 1), x(0));
  EXPECT_EQ(Mul(c(1), x(0)), x(0));
  EXPECT_EQ(Mul(x(0), int64_t{0}), c(0));  // a literal 0 would be ambiguous
  EXPECT_EQ(Sub(x(0), x(0)), c(0));
  EXPECT_EQ(Div(x(0), 1), x(0));
  EXPECT_EQ(Mod(x(0), 1), c(0));
  EXPECT_EQ(Sub(c(0), Sub(c(0), x(1))), x(1));
}

TEST_F(ExprTest, VarsAreInterned) {
  EXPECT_EQ(x(3), x(3));
  EXPECT_NE(x(3), x(2));
  EXPECT_EQ(x(3)->kind(), ExprKind::kVar);
  EXPECT_EQ(x(3)->value(), 3);
}

TEST_F(ExprTest, LikeTermsMerge) {
  const Expr five_x0 = Add(Mul(x(0), 2), Mul(x(0), 3));
  EXPECT_EQ(five_x0, Mul(x(0), 5));
  EXPECT_EQ(ToString(five_x0), "5*x0");
  EXPECT_EQ(Add(Add(x(0), x(1)), Sub(c(0), x(0))), x(1));
  EXPECT_EQ(Add(Add(x(0), c(3)), c(-3)), x(0));
}

TEST_F(ExprTest, SumsAreFlatAndOrdered) {
  const Expr a = Add(Add(x(2), c(7)), Add(x(0), x(1)));
  const Expr b = Add(x(1), Add(c(7), Add(x(0), x(2))));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->kind(), ExprKind::kAdd);
  ASSERT_EQ(a->operands().size(), 4);
  EXPECT_EQ(a->operands()[0], x(0));
  EXPECT_EQ(a->operands()[3], c(7));
  EXPECT_EQ(ToString(a), "x0 + x1 + x2 + 7");
}

TEST_F(ExprTest, OrderDoesNotDependOnCreationOrder) {
  ExprContext other;
  const Expr v1 = other.Var(1);  // x1 is made before x0 here
  const Expr v0 = other.Var(0);
  EXPECT_EQ(ToString(other.Add(v1, other.Mul(v0, 8))), "8*x0 + x1");
  EXPECT_EQ(ToString(Add(x(1), Mul(x(0), 8))), "8*x0 + x1");
}

TEST_F(ExprTest, ProductsKeepOneConstantFactorFirst) {
  const Expr p = Mul(Mul(c(2), x(1)), Mul(x(0), c(3)));
  EXPECT_EQ(p, Mul(Mul(x(0), x(1)), 6));
  ASSERT_EQ(p->kind(), ExprKind::kMul);
  ASSERT_EQ(p->operands().size(), 3);
  EXPECT_TRUE(p->operands()[0]->is_const(6));
  EXPECT_EQ(ToString(p), "6*x0*x1");
  EXPECT_EQ(ToString(Mul(x(0), -1)), "-x0");
}

TEST_F(ExprTest, MulDistributesOverSums) {
  EXPECT_EQ(Mul(Add(x(0), x(1)), 2), Add(Mul(x(0), 2), Mul(x(1), 2)));
  EXPECT_EQ(Mul(c(3), Add(x(0), c(1))), Add(Mul(x(0), 3), c(3)));
  // Products of sums expand fully, so equal polynomials coincide.
  const Expr square = Mul(Add(x(0), c(1)), Add(x(0), c(1)));
  EXPECT_EQ(square, Add(Add(Mul(x(0), x(0)), Mul(x(0), 2)), c(1)));
  EXPECT_EQ(Mul(Add(x(0), x(1)), Sub(x(0), x(1))), Sub(Mul(x(0), x(0)), Mul(x(1), x(1))));
}

TEST_F(ExprTest, SubIsAddOfNegation) {
  EXPECT_EQ(Sub(x(0), x(1)), Add(x(0), Mul(x(1), -1)));
  EXPECT_EQ(ToString(Sub(x(0), Mul(x(1), 2))), "x0 - 2*x1");
  EXPECT_EQ(ToString(Sub(x(1), x(0))), "-x0 + x1");
  EXPECT_EQ(ToString(Sub(x(0), c(3))), "x0 - 3");
}

TEST_F(ExprTest, NestedFloorDivCombines) {
  EXPECT_EQ(Div(Div(x(0), 4), 8), Div(x(0), 32));
  EXPECT_EQ(Div(Div(Add(x(0), x(1)), 2), 3), Div(Add(x(0), x(1)), 6));
}

TEST_F(ExprTest, ExactMultiplesLeaveFloorDivAndMod) {
  const Expr e = Add(Mul(x(0), 8), x(1));
  EXPECT_EQ(Div(e, 8), Add(x(0), Div(x(1), 8)));
  EXPECT_EQ(Mod(e, 8), Mod(x(1), 8));
  EXPECT_EQ(Div(Add(Mul(x(0), 16), Mul(x(2), 8)), 8), Add(Mul(x(0), 2), x(2)));
  EXPECT_EQ(Mod(Add(Mul(x(0), 16), Mul(x(2), 8)), 8), c(0));
  // Negative multiples too: floor((-8a + b) / 8) == -a + floor(b / 8).
  EXPECT_EQ(Div(Sub(x(1), Mul(x(0), 8)), 8), Sub(Div(x(1), 8), x(0)));
}

TEST_F(ExprTest, DividendConstantMovesIntoZeroToDivisor) {
  EXPECT_EQ(Div(Sub(x(0), c(5)), 4), Sub(Div(Add(x(0), c(3)), 4), c(2)));
  EXPECT_EQ(Mod(Sub(x(0), c(5)), 4), Mod(Add(x(0), c(3)), 4));
  EXPECT_EQ(Div(Add(x(0), c(9)), 4), Add(Div(Add(x(0), c(1)), 4), c(2)));
}

TEST_F(ExprTest, CommonFactorLeavesFloorDivAndMod) {
  EXPECT_EQ(Div(Mul(x(0), 2), 4), Div(x(0), 2));
  EXPECT_EQ(Mod(Mul(x(0), 2), 4), Mul(Mod(x(0), 2), 2));
  EXPECT_EQ(Div(Add(Mul(x(0), 6), c(3)), 9), Div(Add(Mul(x(0), 2), c(1)), 3));
}

TEST_F(ExprTest, ModOfMod) {
  EXPECT_EQ(Mod(Mod(x(0), 8), 4), Mod(x(0), 4));
  EXPECT_EQ(Mod(Mod(x(0), 8), 8), Mod(x(0), 8));
  const Expr kept = Mod(Mod(x(0), 8), 3);
  ASSERT_EQ(kept->kind(), ExprKind::kMod);
  EXPECT_EQ(kept->operands()[0], Mod(x(0), 8));
}

TEST_F(ExprTest, SimplifyRecombinesFloorDivAndMod) {
  const Expr e = Add(x(0), Mul(x(1), 3));
  const Expr pair = Add(Mul(Div(e, 8), 8), Mod(e, 8));
  EXPECT_EQ(pair->kind(), ExprKind::kAdd);  // construction keeps both atoms
  EXPECT_EQ(ctx_.Simplify(pair, {}), e);
  EXPECT_EQ(ctx_.Simplify(Add(Mul(Div(e, 8), 24), Mul(Mod(e, 8), 3)), {}), Mul(e, 3));
  // Not an exact match: nothing to recombine.
  const Expr partial = Add(Mul(Div(x(0), 8), 4), Mod(x(0), 8));
  EXPECT_EQ(ctx_.Simplify(partial, {}), partial);
}

TEST_F(ExprTest, InterningIsStable) {
  auto build = [&] { return Mod(Div(Add(Mul(x(0), 1024), Add(Mul(x(1), 32), x(2))), 32), 32); };
  const Expr first = build();
  const size_t size = ctx_.size();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(build(), first);
  EXPECT_EQ(ctx_.size(), size);
  EXPECT_LT(x(0)->id(), first->id());
}

// Far more nodes than the recent-node cache and the intern table's first
// sizes hold: each is still found again, as itself, after the table grew.
TEST_F(ExprTest, InterningSurvivesGrowth) {
  constexpr int kMany = 50'000;
  std::vector<Expr> sums;
  for (int i = 0; i < kMany; ++i) {
    sums.push_back(Add(Mul(x(0), 64), c(4096 + 128 * i)));
  }
  const size_t size = ctx_.size();
  for (int i = kMany - 1; i >= 0; --i) {
    ASSERT_EQ(Add(Mul(x(0), 64), c(4096 + 128 * i)), sums[i]);
  }
  EXPECT_EQ(ctx_.size(), size);
  EXPECT_GE(size, size_t{2} * kMany);  // a constant and a sum each
}

// --- Printing, evaluation, substitution.

TEST_F(ExprTest, ToStringForms) {
  EXPECT_EQ(ToString(Add(Mul(x(0), 8), x(1))), "8*x0 + x1");
  EXPECT_EQ(ToString(Div(x(0), 4)), "x0 // 4");
  EXPECT_EQ(ToString(Mod(x(1), 8)), "x1 % 8");
  EXPECT_EQ(ToString(Div(Add(x(0), c(3)), 4)), "(x0 + 3) // 4");
  EXPECT_EQ(ToString(Mul(Div(x(0), 4), 8)), "8*(x0 // 4)");
  EXPECT_EQ(ToString(Mod(Div(x(0), 4), 3)), "(x0 // 4) % 3");
  EXPECT_EQ(ToString(Div(Mul(x(0), 3), 4)), "(3*x0) // 4");
  EXPECT_EQ(ToString(c(-3)), "-3");
}

TEST_F(ExprTest, ToCppForms) {
  const std::vector<std::string> names = {"i0", "i1", "i2"};
  EXPECT_EQ(ToCpp(Add(Mul(x(0), 8), x(1)), names), "(8*i0 + i1)");
  EXPECT_EQ(ToCpp(Div(Add(x(0), c(3)), 4), names), "((i0 + 3) / 4)");
  EXPECT_EQ(ToCpp(Mod(x(1), 8), names), "(i1 % 8)");
  EXPECT_EQ(ToCpp(Mul(x(0), 8), names), "(8*i0)");
  EXPECT_EQ(ToCpp(x(2), names), "i2");
  EXPECT_EQ(ToCpp(c(5), names), "5");
  EXPECT_EQ(ToCpp(c(-5), names), "(-5)");
  EXPECT_EQ(ToCpp(Sub(x(1), Mul(x(0), 2)), names), "(-2*i0 + i1)");
  EXPECT_EQ(ToCpp(Sub(x(0), c(1)), names), "(i0 - 1)");
  EXPECT_EQ(ToCpp(Add(Mul(Mod(x(0), 4), 8), Div(x(1), 2)), names), "((i1 / 2) + 8*(i0 % 4))");
  EXPECT_EQ(ToCpp(Div(Mul(x(0), 3), 4), names), "(3*i0 / 4)");
}

// Marked, every integer is a shape constant (ir/shape_constants.h): the
// text without the marks is ToCpp's, and the constants are where its
// integers are, signs outside.
TEST_F(ExprTest, ToCppMarkedMarksEveryInteger) {
  const std::vector<std::string> names = {"i0", "i1", "i2"};
  for (const Expr e : {Add(Mul(Mod(x(0), 4), 8), Div(x(1), 2)), Sub(x(1), Mul(x(0), 2)),
                       Sub(x(0), c(1)), c(-5), Add(x(2), c(-7))}) {
    const StrippedSource stripped = StripShapeConstants(ToCppMarked(e, names));
    EXPECT_EQ(stripped.text, ToCpp(e, names));
    for (const ShapeConstant& constant : stripped.constants) {
      EXPECT_EQ(stripped.text.substr(constant.offset, constant.length),
                absl::StrCat(constant.value));
    }
  }
  const StrippedSource sum = StripShapeConstants(ToCppMarked(Sub(x(1), Mul(x(0), 2)), names));
  ASSERT_EQ(sum.constants.size(), 1);
  EXPECT_EQ(sum.constants[0].value, 2);
  EXPECT_EQ(sum.constants[0].offset, 2);  // "(-2*i0 + i1)"
}

TEST_F(ExprTest, NameShapeConstantsNamesEachInOrder) {
  const NamedShapeConstants named =
      NameShapeConstants(absl::StrCat("for (x = 0; x < ", MarkShapeConstant(130), "; ++x) p[",
                                      MarkShapeConstant(768), " * x + 1] = 0;"),
                         "k");
  EXPECT_EQ(named.text, "for (x = 0; x < k0; ++x) p[k1 * x + 1] = 0;");
  EXPECT_EQ(named.values, (std::vector<int64_t>{130, 768}));
  EXPECT_EQ(NameShapeConstants("x = 1;", "k").text, "x = 1;");
}

TEST_F(ExprTest, EvaluateUsesFloorSemantics) {
  const Expr e = Add(Div(Sub(x(0), c(5)), 4), Mod(x(1), 3));
  EXPECT_EQ(Evaluate(e, {0, -1}), -2 + 2);
  EXPECT_EQ(Evaluate(e, {9, 7}), 1 + 1);
  EXPECT_EQ(Evaluate(Mul(Add(x(0), c(1)), x(1)), {2, -3}), -9);
}

TEST_F(ExprTest, MaxVar) {
  EXPECT_EQ(MaxVar(c(4)), -1);
  EXPECT_EQ(MaxVar(x(2)), 2);
  EXPECT_EQ(MaxVar(Add(x(0), Mod(Div(x(5), 2), 3))), 5);
}

TEST_F(ExprTest, Substitute) {
  const Expr e = Add(Mul(x(0), 8), x(1));
  EXPECT_EQ(ctx_.Substitute(e, {x(1), x(0)}), Add(Mul(x(1), 8), x(0)));
  EXPECT_EQ(ctx_.Substitute(e, {c(2), c(3)}), c(19));
  // Variables past the end stay.
  EXPECT_EQ(ctx_.Substitute(Add(x(0), x(3)), {x(1)}), Add(x(1), x(3)));
  // The result is canonical: 8*(x2 // 8) + x2 % 8, which Simplify makes x2.
  const Expr flat = ctx_.Substitute(e, {Div(x(2), 8), Mod(x(2), 8)});
  EXPECT_EQ(flat, Add(Mul(Div(x(2), 8), 8), Mod(x(2), 8)));
  EXPECT_EQ(ctx_.Simplify(flat, {}), x(2));
  EXPECT_EQ(ctx_.Substitute(Div(x(0), 4), {Add(Mul(x(1), 4), x(2))}), Add(x(1), Div(x(2), 4)));
}

TEST_F(ExprTest, SubstituteScalesSumsOfReplacements) {
  // 64*x0 + x1 + 4096 with x0 -> x0 + 3 and x1 -> x1 + 16.
  const Expr e = Add(Add(Mul(x(0), 64), x(1)), c(4096));
  EXPECT_EQ(ctx_.Substitute(e, {Add(x(0), c(3)), Add(x(1), c(16))}),
            Add(Add(Mul(x(0), 64), x(1)), c(4096 + 192 + 16)));
  // Terms cancel, and a term whose variable stays is kept as it is.
  EXPECT_EQ(ctx_.Substitute(Sub(x(0), x(1)), {x(2), x(2)}), c(0));
  EXPECT_EQ(ctx_.Substitute(Add(Mul(x(0), 3), Mul(x(1), 5)), {x(0), x(0)}), Mul(x(0), 8));
}

// --- Range-based simplification.

TEST_F(ExprTest, SimplifyOfAnAffineSum) {
  const Expr e = Add(Add(Mul(x(0), 16), x(1)), c(7));
  // Every variable takes several values: nothing to rewrite.
  EXPECT_EQ(ctx_.Simplify(e, {4, 16}), e);
  EXPECT_EQ(ctx_.Simplify(e, {4}), e);
  // A variable with a single value is that value.
  EXPECT_EQ(ctx_.Simplify(e, {1, 16}), Add(x(1), c(7)));
  EXPECT_EQ(ctx_.Simplify(e, {0, 1}), c(7));
}

TEST_F(ExprTest, SimplifyDivModOfBoundedSum) {
  const std::vector<int64_t> extents = {4, 8};
  const Expr e = Add(Mul(x(0), 8), x(1));
  EXPECT_EQ(ctx_.Simplify(Div(e, 8), extents), x(0));
  EXPECT_EQ(ctx_.Simplify(Mod(e, 8), extents), x(1));
  EXPECT_EQ(ctx_.Simplify(Div(x(1), 8), extents), c(0));
  EXPECT_EQ(ctx_.Simplify(Mod(x(1), 8), extents), x(1));
  EXPECT_EQ(ctx_.Simplify(Div(e, 32), extents), c(0));
  EXPECT_EQ(ctx_.Simplify(Mod(e, 32), extents), e);
  // x1 may reach 15: nothing to do.
  const std::vector<int64_t> wide = {4, 16};
  EXPECT_EQ(ctx_.Simplify(Div(e, 8), wide), Div(e, 8));
  EXPECT_EQ(ctx_.Simplify(Mod(e, 8), wide), Mod(x(1), 8));
}

TEST_F(ExprTest, SimplifyTreatsVariablesPastTheExtentsAsUnbounded) {
  const std::vector<int64_t> extents = {8};
  EXPECT_EQ(ctx_.Simplify(Div(Add(Mul(x(3), 8), x(0)), 8), extents), x(3));
  EXPECT_EQ(ctx_.Simplify(Div(x(3), 8), extents), Div(x(3), 8));
  EXPECT_EQ(ctx_.Simplify(Mod(x(3), 8), extents), Mod(x(3), 8));
}

TEST_F(ExprTest, SimplifyReversedIndex) {
  // 7 - x0 with x0 < 8 lies in [0, 8).
  const std::vector<int64_t> extents = {8};
  const Expr reversed = Sub(c(7), x(0));
  EXPECT_EQ(ctx_.Simplify(Div(reversed, 8), extents), c(0));
  EXPECT_EQ(ctx_.Simplify(Mod(reversed, 8), extents), reversed);
  EXPECT_EQ(ctx_.Simplify(Div(Add(reversed, c(8)), 8), extents), c(1));
}

TEST_F(ExprTest, SimplifySplitsByCommonFactor) {
  const std::vector<int64_t> extents = {16, 32, 32};
  const Expr e = Add(Mul(x(0), 1024), Add(Mul(x(1), 32), x(2)));
  EXPECT_EQ(ctx_.Simplify(Div(e, 8192), extents), Div(x(0), 8));
  EXPECT_EQ(ctx_.Simplify(Mod(e, 8192), extents),
            Add(Mul(Mod(x(0), 8), 1024), Add(Mul(x(1), 32), x(2))));
  EXPECT_EQ(ctx_.Simplify(Mod(e, 16384), extents), e);
  EXPECT_EQ(ctx_.Simplify(Mod(e, 2048), extents),
            Add(Mul(Mod(x(0), 2), 1024), Add(Mul(x(1), 32), x(2))));
}

TEST_F(ExprTest, SimplifyNestedDivMod) {
  const std::vector<int64_t> extents = {64};
  EXPECT_EQ(ctx_.Simplify(Div(Div(x(0), 4), 16), extents), c(0));
  EXPECT_EQ(ctx_.Simplify(Mod(Div(x(0), 4), 16), extents), Div(x(0), 4));
  EXPECT_EQ(ctx_.Simplify(Mod(Mod(x(0), 32), 48), extents), Mod(x(0), 32));
}

// The flat offset of `indices` in a row-major tensor of `shape`.
Expr Flatten(ExprContext& ctx, const std::vector<int64_t>& shape,
             const std::vector<Expr>& indices) {
  Expr flat = ctx.Const(0);
  for (size_t i = 0; i < shape.size(); ++i) {
    flat = ctx.Add(ctx.Mul(flat, shape[i]), indices[i]);
  }
  return flat;
}

// The indices of `flat` in a row-major tensor of `shape`.
std::vector<Expr> Unflatten(ExprContext& ctx, const std::vector<int64_t>& shape, Expr flat) {
  std::vector<Expr> indices(shape.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    indices[i] = ctx.Mod(ctx.FloorDiv(flat, stride), shape[i]);
    stride *= shape[i];
  }
  return indices;
}

TEST_F(ExprTest, SimplifyReshapeRoundTrip2D) {
  for (int64_t b : {1, 3, 8, 100}) {
    const std::vector<int64_t> extents = {5, b};
    const Expr f = Add(Mul(x(0), b), x(1));
    EXPECT_EQ(ctx_.Simplify(Div(f, b), extents), x(0)) << b;
    EXPECT_EQ(ctx_.Simplify(Mod(f, b), extents), b == 1 ? c(0) : x(1)) << b;
  }
}

TEST_F(ExprTest, SimplifyViewAndBackIsIdentity) {
  const std::vector<int64_t> shape = {2, 16, 32, 32};
  const std::vector<int64_t> view = {2, 2, 8, 1024};
  const std::vector<Expr> vars = {x(0), x(1), x(2), x(3)};
  // Simplifying once at the end.
  std::vector<Expr> viewed = Unflatten(ctx_, view, Flatten(ctx_, shape, vars));
  std::vector<Expr> back = Unflatten(ctx_, shape, Flatten(ctx_, view, viewed));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ctx_.Simplify(back[i], shape), vars[i]) << ToString(back[i]);
  }
  // Simplifying after each step, as lowering does.
  for (Expr& e : viewed) e = ctx_.Simplify(e, shape);
  EXPECT_EQ(viewed[0], x(0));
  EXPECT_EQ(viewed[3], Add(Mul(x(2), 32), x(3)));
  back = Unflatten(ctx_, shape, Flatten(ctx_, view, viewed));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ctx_.Simplify(back[i], shape), vars[i]) << ToString(back[i]);
  }
}

TEST_F(ExprTest, SimplifyTransposedViewRoundTrip) {
  // [6, 4] flattened, viewed as [4, 6] (a different split) and back.
  const std::vector<int64_t> shape = {6, 4};
  const std::vector<Expr> vars = {x(0), x(1)};
  std::vector<Expr> viewed = Unflatten(ctx_, {4, 6}, Flatten(ctx_, shape, vars));
  std::vector<Expr> back = Unflatten(ctx_, shape, Flatten(ctx_, {4, 6}, viewed));
  EXPECT_EQ(ctx_.Simplify(back[0], shape), x(0));
  EXPECT_EQ(ctx_.Simplify(back[1], shape), x(1));
}

// --- Randomised checks.

// A random expression tree, evaluated directly with floor semantics and
// built into an ExprContext in two different ways.
struct Tree {
  enum Op { kConst, kVar, kAdd, kSub, kMul, kDiv, kMod } op;
  int64_t value = 0;  // constant, variable index or divisor
  std::vector<std::unique_ptr<Tree>> kids;

  std::string Print() const {
    switch (op) {
      case kConst:
        return std::to_string(value);
      case kVar:
        return "x" + std::to_string(value);
      case kAdd:
        return "(" + kids[0]->Print() + " + " + kids[1]->Print() + ")";
      case kSub:
        return "(" + kids[0]->Print() + " - " + kids[1]->Print() + ")";
      case kMul:
        return "(" + kids[0]->Print() + " * " + kids[1]->Print() + ")";
      case kDiv:
        return "(" + kids[0]->Print() + " // " + std::to_string(value) + ")";
      case kMod:
        return "(" + kids[0]->Print() + " % " + std::to_string(value) + ")";
    }
    return "";
  }

  int64_t Eval(const std::vector<int64_t>& vars) const {
    switch (op) {
      case kConst:
        return value;
      case kVar:
        return vars[value];
      case kAdd:
        return kids[0]->Eval(vars) + kids[1]->Eval(vars);
      case kSub:
        return kids[0]->Eval(vars) - kids[1]->Eval(vars);
      case kMul:
        return kids[0]->Eval(vars) * kids[1]->Eval(vars);
      case kDiv:
        return FloorDivInt(kids[0]->Eval(vars), value);
      case kMod:
        return FloorModInt(kids[0]->Eval(vars), value);
    }
    return 0;
  }
};

constexpr int kNumVars = 4;

std::unique_ptr<Tree> RandomTree(std::mt19937& rng, int depth, bool allow_mul) {
  auto tree = std::make_unique<Tree>();
  const int pick = depth == 0 ? rng() % 2 : rng() % 8;
  static const int64_t kDivisors[] = {2, 3, 4, 6, 8, 16};
  switch (pick) {
    case 0:
      tree->op = Tree::kConst;
      tree->value = static_cast<int64_t>(rng() % 41) - 20;
      return tree;
    case 1:
      tree->op = Tree::kVar;
      tree->value = rng() % kNumVars;
      return tree;
    case 2:
    case 3:
      tree->op = Tree::kAdd;
      break;
    case 4:
      tree->op = Tree::kSub;
      break;
    case 5:
      tree->op = allow_mul ? Tree::kMul : Tree::kAdd;
      break;
    case 6:
      tree->op = Tree::kDiv;
      tree->value = kDivisors[rng() % 6];
      break;
    default:
      tree->op = Tree::kMod;
      tree->value = kDivisors[rng() % 6];
      break;
  }
  const int arity = (tree->op == Tree::kDiv || tree->op == Tree::kMod) ? 1 : 2;
  // One multiplication level at most keeps values far from overflow.
  const bool kid_mul = allow_mul && tree->op != Tree::kMul;
  for (int i = 0; i < arity; ++i) {
    tree->kids.push_back(RandomTree(rng, depth - 1, kid_mul));
  }
  return tree;
}

// Builds `t` plainly.
Expr BuildDirect(ExprContext& ctx, const Tree& t) {
  switch (t.op) {
    case Tree::kConst:
      return ctx.Const(t.value);
    case Tree::kVar:
      return ctx.Var(t.value);
    case Tree::kAdd:
      return ctx.Add(BuildDirect(ctx, *t.kids[0]), BuildDirect(ctx, *t.kids[1]));
    case Tree::kSub:
      return ctx.Sub(BuildDirect(ctx, *t.kids[0]), BuildDirect(ctx, *t.kids[1]));
    case Tree::kMul:
      return ctx.Mul(BuildDirect(ctx, *t.kids[0]), BuildDirect(ctx, *t.kids[1]));
    case Tree::kDiv:
      return ctx.FloorDiv(BuildDirect(ctx, *t.kids[0]), t.value);
    case Tree::kMod:
      return ctx.Mod(BuildDirect(ctx, *t.kids[0]), t.value);
  }
  return nullptr;
}

// Builds `t` through equivalent but different constructions: swapped
// operands, subtraction as addition of a negation, a constant added to one
// side and taken from the other, a*b as (a+k)*b - k*b, exact multiples of
// the divisor added to a dividend and corrected outside.
Expr BuildTwisted(ExprContext& ctx, const Tree& t, std::mt19937& rng) {
  const Expr k = ctx.Const(static_cast<int64_t>(rng() % 11) - 5);
  switch (t.op) {
    case Tree::kConst:
      return ctx.Add(ctx.Sub(ctx.Const(t.value), k), k);
    case Tree::kVar:
      return rng() % 2 ? ctx.Var(t.value) : ctx.Sub(ctx.Mul(ctx.Var(t.value), 2), ctx.Var(t.value));
    case Tree::kAdd: {
      const Expr a = BuildTwisted(ctx, *t.kids[0], rng);
      const Expr b = BuildTwisted(ctx, *t.kids[1], rng);
      return ctx.Add(ctx.Sub(b, k), ctx.Add(k, a));
    }
    case Tree::kSub: {
      const Expr a = BuildTwisted(ctx, *t.kids[0], rng);
      const Expr b = BuildTwisted(ctx, *t.kids[1], rng);
      return ctx.Add(ctx.Mul(b, -1), a);
    }
    case Tree::kMul: {
      const Expr a = BuildTwisted(ctx, *t.kids[0], rng);
      const Expr b = BuildTwisted(ctx, *t.kids[1], rng);
      return ctx.Sub(ctx.Mul(b, ctx.Add(a, k)), ctx.Mul(k, b));
    }
    case Tree::kDiv: {
      const Expr a = BuildTwisted(ctx, *t.kids[0], rng);
      const Expr v = ctx.Var(rng() % kNumVars);
      // (a + d*v) // d - v
      return ctx.Sub(ctx.FloorDiv(ctx.Add(ctx.Mul(v, t.value), a), t.value), v);
    }
    case Tree::kMod: {
      const Expr a = BuildTwisted(ctx, *t.kids[0], rng);
      const Expr v = ctx.Var(rng() % kNumVars);
      if (rng() % 2) return ctx.Mod(ctx.Mod(a, t.value * 3), t.value);
      return ctx.Mod(ctx.Sub(a, ctx.Mul(v, t.value)), t.value);
    }
  }
  return nullptr;
}

TEST(ExprRandomTest, EqualPolynomialsAreTheSameNode) {
  std::mt19937 rng(1234);
  ExprContext ctx;
  for (int iter = 0; iter < 3000; ++iter) {
    const std::unique_ptr<Tree> tree = RandomTree(rng, 4, /*allow_mul=*/true);
    const Expr direct = BuildDirect(ctx, *tree);
    const Expr twisted = BuildTwisted(ctx, *tree, rng);
    ASSERT_EQ(direct, twisted) << tree->Print() << ": " << ToString(direct) << " vs "
                               << ToString(twisted);
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<int64_t> vars(kNumVars);
      for (int64_t& v : vars) v = static_cast<int64_t>(rng() % 61) - 30;
      ASSERT_EQ(Evaluate(direct, vars), tree->Eval(vars)) << ToString(direct);
    }
  }
}

// Substitution through the constructors alone, node by node: what
// ExprContext::Substitute must equal.
Expr NaiveSubstitute(ExprContext& ctx, Expr e, absl::Span<const Expr> reps) {
  switch (e->kind()) {
    case ExprKind::kConst:
      return e;
    case ExprKind::kVar:
      return e->value() < static_cast<int64_t>(reps.size()) ? reps[e->value()] : e;
    case ExprKind::kAdd:
    case ExprKind::kMul: {
      const bool add = e->kind() == ExprKind::kAdd;
      Expr result = ctx.Const(add ? 0 : 1);
      for (Expr operand : e->operands()) {
        const Expr sub = NaiveSubstitute(ctx, operand, reps);
        result = add ? ctx.Add(result, sub) : ctx.Mul(result, sub);
      }
      return result;
    }
    case ExprKind::kFloorDiv:
      return ctx.FloorDiv(NaiveSubstitute(ctx, e->operands()[0], reps), e->value());
    case ExprKind::kMod:
      return ctx.Mod(NaiveSubstitute(ctx, e->operands()[0], reps), e->value());
  }
  return e;
}

TEST(ExprRandomTest, SubstituteIsCanonical) {
  std::mt19937 rng(4321);
  ExprContext ctx;
  for (int iter = 0; iter < 2000; ++iter) {
    const Expr e = BuildDirect(ctx, *RandomTree(rng, 4, /*allow_mul=*/true));
    std::vector<Expr> reps;
    for (int i = 0; i < kNumVars; ++i) {
      reps.push_back(BuildDirect(ctx, *RandomTree(rng, 2, /*allow_mul=*/true)));
    }
    ASSERT_EQ(ctx.Substitute(e, reps), NaiveSubstitute(ctx, e, reps)) << ToString(e);
  }
}

TEST(ExprRandomTest, SimplifyPreservesValuesInRange) {
  std::mt19937 rng(99);
  ExprContext ctx;
  for (int iter = 0; iter < 3000; ++iter) {
    const std::unique_ptr<Tree> tree = RandomTree(rng, 4, /*allow_mul=*/true);
    const Expr e = BuildDirect(ctx, *tree);
    std::vector<int64_t> extents(kNumVars);
    for (int64_t& n : extents) n = 1 + rng() % 20;
    // The last variable stays unbounded half the time.
    const size_t bounded = rng() % 2 ? kNumVars : kNumVars - 1;
    const absl::Span<const int64_t> known = absl::MakeConstSpan(extents).subspan(0, bounded);
    const Expr simple = ctx.Simplify(e, known);
    ASSERT_EQ(ctx.Simplify(simple, known), simple) << ToString(simple) << " is not a fixed point";
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<int64_t> vars(kNumVars);
      for (int i = 0; i < kNumVars; ++i) vars[i] = rng() % extents[i];
      if (bounded < kNumVars) vars.back() = rng() % 1000;
      ASSERT_EQ(Evaluate(simple, vars), Evaluate(e, vars))
          << ToString(e) << " -> " << ToString(simple);
      // Simplify keeps every dividend non-negative too (see below).
      ASSERT_EQ(EvaluateAsC(simple, vars), Evaluate(e, vars)) << ToString(simple);
    }
  }
}

TEST(ExprRandomTest, CSemanticsAgreeForNonNegativeVariables) {
  // Every dividend of the canonical form is non-negative when the variables
  // are, so the / and % that ToCpp prints compute floor semantics.
  std::mt19937 rng(7);
  ExprContext ctx;
  for (int iter = 0; iter < 3000; ++iter) {
    const std::unique_ptr<Tree> tree = RandomTree(rng, 4, /*allow_mul=*/true);
    const Expr e = BuildDirect(ctx, *tree);
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<int64_t> vars(kNumVars);
      for (int64_t& v : vars) v = rng() % 40;
      ASSERT_EQ(EvaluateAsC(e, vars), Evaluate(e, vars)) << ToString(e);
    }
  }
}

TEST(ExprRandomTest, ReshapeRoundTrips) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 200; ++iter) {
    ExprContext ctx;
    // A random shape, and a view that splits its dimensions and merges
    // neighbours of the pieces (as reshapes that keep dimension boundaries
    // aligned do). Misaligned views, e.g. [4, 3] as [3, 4], need not
    // simplify back to the identity.
    std::vector<int64_t> shape(1 + rng() % 4);
    std::vector<int64_t> pieces;
    for (int64_t& n : shape) {
      const int64_t a = 1 + rng() % 4;
      const int64_t b = 1 + rng() % 4;
      n = a * b;
      pieces.push_back(a);
      pieces.push_back(b);
    }
    std::vector<int64_t> view = {pieces[0]};
    for (size_t i = 1; i < pieces.size(); ++i) {
      if (rng() % 2) {
        view.back() *= pieces[i];
      } else {
        view.push_back(pieces[i]);
      }
    }
    std::vector<Expr> vars;
    for (size_t i = 0; i < shape.size(); ++i) vars.push_back(ctx.Var(i));
    std::vector<Expr> viewed = Unflatten(ctx, view, Flatten(ctx, shape, vars));
    for (Expr& e : viewed) e = ctx.Simplify(e, shape);
    const std::vector<Expr> back = Unflatten(ctx, shape, Flatten(ctx, view, viewed));
    for (size_t i = 0; i < shape.size(); ++i) {
      const Expr expected = shape[i] == 1 ? ctx.Const(0) : vars[i];
      EXPECT_EQ(ctx.Simplify(back[i], shape), expected)
          << "dim " << i << " of " << testing::PrintToString(shape) << " viewed as "
          << testing::PrintToString(view) << ": " << ToString(back[i]);
    }
  }
}

// --- Performance.

// Scale, not speed (speed is measured by tests/bench, never by a unit
// test): a million constructions intern correctly, and a 2000-term sum
// substitutes back to itself.
TEST(ExprScaleTest, AMillionConstructionsIntern) {
  ExprContext ctx;
  // Five constructions per iteration (Mul, Add, Add, FloorDiv, Mod); the
  // offset i makes the last three new nodes every time.
  for (int i = 0; i < 200000; ++i) {
    const Expr sum = ctx.Add(ctx.Mul(ctx.Var(i % 8), 1 + i % 64), ctx.Var((i + 3) % 8));
    const Expr shifted = ctx.Add(sum, ctx.Const(i));
    ctx.Mod(ctx.FloorDiv(shifted, 2 + i % 16), 7);
  }
  EXPECT_GT(ctx.size(), 400000);
}

TEST(ExprScaleTest, LongSums) {
  ExprContext ctx;
  Expr sum = ctx.Const(0);
  const int kTerms = 2000;
  for (int i = 0; i < kTerms; ++i) sum = ctx.Add(sum, ctx.Var(kTerms - 1 - i));
  std::vector<Expr> replacements;
  for (int i = 0; i < kTerms; ++i) replacements.push_back(ctx.Var(i));
  EXPECT_EQ(ctx.Substitute(sum, replacements), sum);
  EXPECT_EQ(sum->operands().size(), kTerms);
}

}  // namespace
}  // namespace loom
