#ifndef LOOM_PASSES_POINTWISE_MATH_H_
#define LOOM_PASSES_POINTWISE_MATH_H_

// Elementary functions as pointwise primitives that vectorise (arithmetic,
// comparisons, selects, sqrt), for decompositions: the CPU backend's log
// and pow are per-lane libm calls, exp has explicit vectors. Used by the
// inverse trigonometric and hyperbolic functions and by lrn.

#include <optional>
#include <vector>

#include "passes/decomposition.h"

namespace loom {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kLn2 = 0.69314718055994530942;

// Appends pointwise nodes in the dtype of the composite's input `x` (f32 or
// f64); constants take that dtype, and so do the lengths of the series.
class PointwiseMath {
 public:
  PointwiseMath(DecompositionBuilder& b, ValueId x) : b_(b), dtype_(b.type(x).dtype) {}

  // A scalar constant: `value` rounded to the dtype.
  ValueId C(double value) { return b_.Scalar("c", value, dtype_); }
  // `value` as it rounds to the dtype, read back as a double.
  double Rounded(double value) const {
    return dtype_ == DType::kF32 ? static_cast<double>(static_cast<float>(value)) : value;
  }
  bool is_f32() const { return dtype_ == DType::kF32; }

  ValueId Op(const char* op, std::vector<ValueId> inputs) { return b_.Add(op, op, inputs); }
  ValueId Add(ValueId a, ValueId c) { return Op("add", {a, c}); }
  ValueId Sub(ValueId a, ValueId c) { return Op("sub", {a, c}); }
  ValueId Mul(ValueId a, ValueId c) { return Op("mul", {a, c}); }
  ValueId Div(ValueId a, ValueId c) { return Op("div", {a, c}); }
  ValueId Sqrt(ValueId a) { return Op("sqrt", {a}); }
  ValueId Where(ValueId cond, ValueId a, ValueId c) { return Op("where", {cond, a, c}); }
  // The composite's output, written by `op`.
  void Write(const char* op, std::vector<ValueId> inputs, ValueId output) {
    b_.AddWriting(op, op, inputs, output);
  }

  // log(w) for w >= sqrt(1/2) (or +inf, or NaN): w = 2^e m with m in
  // [sqrt(1/2), sqrt(2)], e found by halving steps 2^-64, 2^-32, ..., 2^-1
  // (2^-512 ... for f64; each exact), then
  //   log(w) = e log(2) + 2 atanh(s),  s = (m - 1) / (m + 1),  |s| <= 0.1716,
  // atanh(s) = s (1 + s^2/3 + s^4/5 + ...) to 5 terms for f32 (the next is
  // below 2^-28 relative) and 10 for f64 (below 2^-55), log(2) as hi + lo.
  ValueId Log(ValueId w);
  // log(w) for any w: below sqrt(1/2) as -Log(1/w) (after scaling w up by
  // 2^64, 2^512 for f64, when it is tiny, so that 1/w stays finite); 0 gives
  // -inf, a negative w NaN.
  ValueId LogOfAny(ValueId w);
  // log(1 + u) for u >= 0 (or NaN): log(w) for w = 1 + u rounded, plus
  // the first-order correction for that rounding, (u - (w - 1)) / w (w - 1
  // is exact). Or, where `large` is set (and u may be anything),
  // log(a) + log(2): one Log of either argument. Writes `output` when it is
  // given.
  ValueId Log1pOrLogOfTwice(ValueId u, std::optional<ValueId> large = std::nullopt, ValueId a = -1,
                            std::optional<ValueId> output = std::nullopt);
  // atan(a) for a >= 0 (or NaN).
  ValueId AtanOfMagnitude(ValueId a);

 private:
  DecompositionBuilder& b_;
  DType dtype_;
};

}  // namespace loom

#endif  // LOOM_PASSES_POINTWISE_MATH_H_
