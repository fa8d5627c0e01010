// atan, asin, acos, asinh, acosh and atanh as pointwise primitives that
// vectorise: arithmetic, abs, sign, sqrt, comparisons and selects. Each writes the composite's
// output with its last node; constants take the input's dtype (f32 or f64), and so do the lengths
// of the polynomials.
//
// atan(x), for a = |x|:
// - a > 1 reduces to pi/2 - atan(1/a), so r = min(a, 1/a) lies in [0, 1];
// - r reduces once more around the nearest of T_k = tan(k pi/12), k = 0..3,
//   (each T_k rounded to the dtype, with C_k = atan(T_k) of that rounded
//   value, so the identity below is exact whatever the rounding):
//     atan(r) = C_k + atan(t),  t = (r - T_k) / (1 + r T_k),  |t| <= 0.1317;
//   r - T_k is exact (r lies within [T_k / 2, 2 T_k], Sterbenz);
// - atan(t) = t (1 - t^2/3 + t^4/5 - ...), its Taylor series, to 5 terms
//   for f32 (the next one is below 2^-32 relative) and 9 for f64 (below
//   2^-56);
// - the sign is x's (sign(x) * y, so atan(-0) is -0 and NaN stays NaN).
//
// asin(x) = atan(x / sqrt((1 - x)(1 + x))): 1 - x and 1 + x are exact near
// |x| = 1, where 1 - x^2 would cancel; +-1 gives x/0 = +-inf and +-pi/2.
// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))), accurate at both ends (no
// pi/2 - asin(x), which cancels near x = 1); -1 gives 2 atan(inf) = pi.
//
// log (of arguments >= 1) is built here too, from arithmetic and selects,
// and log1p(u) with it (Pointwise::Log, Pointwise::Log1pOrLogOfTwice).
// asinh(x) = sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))), and
//   log(a) + log(2) past a = 2^28 (where a^2 + 1 rounds to a^2; the square
//   would overflow f32 past 2^64);
// acosh(x) = log1p(u + sqrt(u) sqrt(x + 1)) with u = x - 1 (exact near 1;
//   two roots, so that x < -1 gives NaN), and log(x) + log(2) past 2^28;
// atanh(x) = sign(x) log1p(2a / (1 - a)) / 2, +-inf at +-1, NaN past.
// Outside the domains the results are NaN, as the C library's are: square
// roots of negative numbers (asin, acos, acosh), a select (atanh).
#include <cmath>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLargeArgument = 268435456.0;  // 2^28

// Appends pointwise nodes in the dtype of the composite's input.
class Pointwise {
 public:
  Pointwise(DecompositionBuilder& b, ValueId x) : b_(b), dtype_(b.type(x).dtype) {}

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

  // log(w) for w >= 1 (or +inf, or NaN), from arithmetic and selects (the
  // CPU backend's log is a per-lane libm call): w = 2^e m with m in
  // [sqrt(1/2), sqrt(2)], e found by halving steps 2^-64, 2^-32, ..., 2^-1
  // (2^-512 ... for f64; each exact), then
  //   log(w) = e log(2) + 2 atanh(s),  s = (m - 1) / (m + 1),  |s| <= 0.1716,
  // atanh(s) = s (1 + s^2/3 + s^4/5 + ...) to 5 terms for f32 (the next is
  // below 2^-28 relative) and 10 for f64 (below 2^-55), log(2) as hi + lo.
  ValueId Log(ValueId w) {
    // e sums the steps taken (each a select of k or 0 over w's shape: no
    // arithmetic on scalars alone, which would be a node of its own).
    ValueId m = w;
    std::optional<ValueId> e;
    auto step = [&](ValueId take, double factor, int k) {
      m = Where(take, Mul(m, C(factor)), m);
      const ValueId taken = Where(take, C(k), C(0));
      e = e.has_value() ? Add(*e, taken) : taken;
    };
    for (int k = is_f32() ? 64 : 512; k >= 1; k /= 2) {
      step(Op("greater_equal", {m, C(std::ldexp(1.0, k))}), std::ldexp(1.0, -k), k);
    }
    step(Op("greater", {m, C(M_SQRT2)}), 0.5, 1);
    const ValueId s = Div(Sub(m, C(1)), Add(m, C(1)));
    const ValueId z = Mul(s, s);
    const int terms = is_f32() ? 5 : 10;
    ValueId series = C(1.0 / (2 * terms - 1));
    for (int n = terms - 2; n >= 0; --n) series = Add(Mul(series, z), C(1.0 / (2 * n + 1)));
    const ValueId log_m = Mul(Mul(s, C(2)), series);
    const double ln2_hi = Rounded(kLn2);
    const ValueId log = Add(Mul(*e, C(ln2_hi)), Add(Mul(*e, C(kLn2 - ln2_hi)), log_m));
    // +inf would reduce to inf / inf.
    return Where(Op("equal", {w, C(INFINITY)}), w, log);
  }

  // log(1 + u) for u >= 0 (or NaN): log(w) for w = 1 + u rounded, plus
  // the first-order correction for that rounding, (u - (w - 1)) / w (w - 1
  // is exact). Or, where `large` is set (and u may be anything),
  // log(a) + log(2): one Log of either argument. Writes `output` when it is
  // given.
  ValueId Log1pOrLogOfTwice(ValueId u, std::optional<ValueId> large = std::nullopt, ValueId a = -1,
                            std::optional<ValueId> output = std::nullopt) {
    const ValueId w = Add(u, C(1));
    const ValueId correction = Div(Sub(u, Sub(w, C(1))), w);
    if (!large.has_value()) {
      // The correction of w = inf is inf / inf.
      return Where(Op("equal", {w, C(INFINITY)}), w, Add(Log(w), correction));
    }
    const ValueId log = Log(Where(*large, a, w));
    const std::vector<ValueId> parts = {*large, Add(log, C(kLn2)), Add(log, correction)};
    if (!output.has_value()) return Op("where", parts);
    Write("where", parts, *output);
    return *output;
  }

  // atan(a) for a = |x| >= 0 (or NaN).
  ValueId AtanOfMagnitude(ValueId a) {
    const ValueId inverted = Op("greater", {a, C(1)});
    const ValueId r = Where(inverted, Div(C(1), a), a);
    // The pivot T_k (and C_k = atan(T_k) as a sum hi + lo) nearest r, picked
    // by the midpoints tan((2k - 1) pi / 24).
    ValueId pivot = C(0), angle_hi = C(0), angle_lo = C(0);
    for (int k = 1; k <= 3; ++k) {
      const ValueId above = Op("greater", {r, C(std::tan((2 * k - 1) * kPi / 24))});
      const double tangent = Rounded(std::tan(k * kPi / 12));
      const double angle = std::atan(tangent);
      const double hi = Rounded(angle);
      pivot = Where(above, C(tangent), pivot);
      angle_hi = Where(above, C(hi), angle_hi);
      angle_lo = Where(above, C(angle - hi), angle_lo);
    }
    const ValueId t = Div(Sub(r, pivot), Add(C(1), Mul(r, pivot)));
    const ValueId z = Mul(t, t);
    const int terms = is_f32() ? 5 : 9;
    ValueId series = C(((terms - 1) % 2 == 0 ? 1.0 : -1.0) / (2 * terms - 1));
    for (int n = terms - 2; n >= 0; --n) {
      series = Add(Mul(series, z), C((n % 2 == 0 ? 1.0 : -1.0) / (2 * n + 1)));
    }
    const ValueId reduced = Add(angle_hi, Add(Mul(t, series), angle_lo));
    // pi/2 - atan(1/a), with pi/2 as hi + lo.
    const double half_pi_hi = Rounded(kPi / 2);
    const ValueId complement = Add(Sub(C(half_pi_hi), reduced), C(kPi / 2 - half_pi_hi));
    return Where(inverted, complement, reduced);
  }

 private:
  DecompositionBuilder& b_;
  DType dtype_;
};

absl::Status DecomposeAtan(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  Pointwise p(b, x);
  const ValueId y = p.AtanOfMagnitude(p.Op("abs", {x}));
  p.Write("mul", {p.Op("sign", {x}), y}, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeAsin(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  Pointwise p(b, x);
  const ValueId cosine = p.Sqrt(p.Mul(p.Sub(p.C(1), x), p.Add(p.C(1), x)));
  b.AddWriting("atan", "atan", {p.Div(x, cosine)}, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeAcos(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  Pointwise p(b, x);
  const ValueId half_tangent = p.Sqrt(p.Div(p.Sub(p.C(1), x), p.Add(p.C(1), x)));
  // The argument is >= 0 (or NaN): no sign to restore.
  p.Write("mul", {p.AtanOfMagnitude(half_tangent), p.C(2)}, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeAsinh(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  Pointwise p(b, x);
  const ValueId a = p.Op("abs", {x});
  const ValueId square = p.Mul(a, a);
  const ValueId u = p.Add(a, p.Div(square, p.Add(p.C(1), p.Sqrt(p.Add(p.C(1), square)))));
  const ValueId y = p.Log1pOrLogOfTwice(u, p.Op("greater", {a, p.C(kLargeArgument)}), a);
  p.Write("mul", {p.Op("sign", {x}), y}, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeAcosh(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  Pointwise p(b, x);
  const ValueId u = p.Sub(x, p.C(1));
  const ValueId v = p.Add(u, p.Mul(p.Sqrt(u), p.Sqrt(p.Add(x, p.C(1)))));
  const ValueId large = p.Op("greater", {x, p.C(kLargeArgument)});
  p.Log1pOrLogOfTwice(v, large, x, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeAtanh(const Node& node, DecompositionBuilder& b) {
  if (absl::Status arity = CheckArity(node, 1, 1); !arity.ok()) return arity;
  const ValueId x = node.inputs[0];
  Pointwise p(b, x);
  const ValueId a = p.Op("abs", {x});
  const ValueId u = p.Div(p.Mul(a, p.C(2)), p.Sub(p.C(1), a));
  const ValueId half = p.Mul(p.Log1pOrLogOfTwice(u), p.C(0.5));
  // a = 1 gives u = inf and inf; a > 1 a negative u.
  const ValueId y = p.Where(p.Op("greater", {a, p.C(1)}), p.C(NAN), half);
  p.Write("mul", {p.Op("sign", {x}), y}, node.outputs[0]);
  return absl::OkStatus();
}

constexpr Decomposition kInverseTrigDecompositions[] = {
    {"atan", DecomposeAtan},   {"asin", DecomposeAsin},   {"acos", DecomposeAcos},
    {"asinh", DecomposeAsinh}, {"acosh", DecomposeAcosh}, {"atanh", DecomposeAtanh},
};

}  // namespace

absl::Span<const Decomposition> InverseTrigDecompositions() { return kInverseTrigDecompositions; }

}  // namespace loom
