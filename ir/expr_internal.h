#ifndef LOOM_IR_EXPR_INTERNAL_H_
#define LOOM_IR_EXPR_INTERNAL_H_

// What the sources of the expression library (expr.cc, expr_analysis.cc,
// expr_bounds.cc, expr_print.cc) share; not for use elsewhere.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "absl/types/span.h"
#include "ir/expr.h"
#include "ir/expr_map.h"

namespace loom::expr_internal {

[[noreturn]] inline void Die(const std::string& message) {
  std::fprintf(stderr, "loom expr: %s\n", message.c_str());
  std::abort();
}

inline int64_t FloorDivInt(int64_t a, int64_t d) {  // d > 0
  int64_t q = a / d;
  if (a % d != 0 && a < 0) --q;
  return q;
}

inline int64_t FloorModInt(int64_t a, int64_t d) { return a - FloorDivInt(a, d) * d; }

// A bound lo <= e <= hi; kInf stands for an unbounded side.
struct Interval {
  int64_t lo;
  int64_t hi;
};

constexpr int64_t kInf = std::numeric_limits<int64_t>::max();

Interval AddIntervals(Interval a, Interval b);
Interval ScaleInterval(Interval a, int64_t c);
inline bool Bounded(Interval a) { return a.lo != -kInf && a.hi != kInf; }

// Bounds of expressions from the ranges of their variables, 0 <= x_i <
// extents[i], memoised: those of one Simplify call.
class ExprBounds {
 public:
  ExprBounds(absl::Span<const int64_t> extents, ExprMap<Interval> memo)
      : extents_(extents), memo_(std::move(memo)) {}

  Interval Of(Expr e);

  // The memo table, emptied, for the next call to reuse its storage.
  ExprMap<Interval> TakeMemo() {
    memo_.Clear();
    return std::move(memo_);
  }

 private:
  Interval Compute(Expr e);

  absl::Span<const int64_t> extents_;
  ExprMap<Interval> memo_;
};

}  // namespace loom::expr_internal

#endif  // LOOM_IR_EXPR_INTERNAL_H_
