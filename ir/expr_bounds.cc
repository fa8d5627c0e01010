// Interval bounds of index expressions, for the range-based rules of
// ExprContext::Simplify (expr.cc).

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "ir/expr_internal.h"

namespace loom::expr_internal {
namespace {

int64_t SatAdd(int64_t a, int64_t b) {
  if (a == kInf || b == kInf) return kInf;
  if (a == -kInf || b == -kInf) return -kInf;
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return a > 0 ? kInf : -kInf;
  return sum;
}

int64_t SatMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const bool negative = (a < 0) != (b < 0);
  int64_t product;
  if (a == kInf || a == -kInf || b == kInf || b == -kInf ||
      __builtin_mul_overflow(a, b, &product)) {
    return negative ? -kInf : kInf;
  }
  return product;
}

Interval MulIntervals(Interval a, Interval b) {
  const int64_t corners[] = {SatMul(a.lo, b.lo), SatMul(a.lo, b.hi), SatMul(a.hi, b.lo),
                             SatMul(a.hi, b.hi)};
  return {*std::min_element(std::begin(corners), std::end(corners)),
          *std::max_element(std::begin(corners), std::end(corners))};
}

int64_t FloorDivBound(int64_t a, int64_t d) {
  return (a == kInf || a == -kInf) ? a : FloorDivInt(a, d);
}

}  // namespace

Interval AddIntervals(Interval a, Interval b) { return {SatAdd(a.lo, b.lo), SatAdd(a.hi, b.hi)}; }

Interval ScaleInterval(Interval a, int64_t c) { return MulIntervals(a, {c, c}); }

Interval ExprBounds::Of(Expr e) {
  switch (e->kind()) {
    case ExprKind::kConst:
      return {e->value(), e->value()};
    case ExprKind::kVar: {
      // Past the span's end a variable is only known to be non-negative.
      if (e->value() >= static_cast<int64_t>(extents_.size())) {
        return {0, kInf};
      }
      return {0, std::max<int64_t>(extents_[e->value()] - 1, 0)};
    }
    default:
      break;
  }
  if (const Interval* known = memo_.Find(e)) return *known;
  const Interval bound = Compute(e);
  memo_.Insert(e, bound);
  return bound;
}

Interval ExprBounds::Compute(Expr e) {
  absl::Span<const Expr> operands = e->operands();
  switch (e->kind()) {
    case ExprKind::kAdd: {
      Interval sum{0, 0};
      for (Expr t : operands) sum = AddIntervals(sum, Of(t));
      return sum;
    }
    case ExprKind::kMul: {
      Interval product{1, 1};
      for (Expr f : operands) product = MulIntervals(product, Of(f));
      return product;
    }
    case ExprKind::kFloorDiv: {
      const Interval a = Of(operands[0]);
      return {FloorDivBound(a.lo, e->value()), FloorDivBound(a.hi, e->value())};
    }
    case ExprKind::kMod: {
      const Interval a = Of(operands[0]);
      const int64_t d = e->value();
      if (Bounded(a) && FloorDivInt(a.lo, d) == FloorDivInt(a.hi, d)) {
        return {FloorModInt(a.lo, d), FloorModInt(a.hi, d)};
      }
      return {0, d - 1};
    }
    default:
      return {e->value(), e->value()};
  }
}

}  // namespace loom::expr_internal
