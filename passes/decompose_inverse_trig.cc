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
// and log1p(u) with it (passes/pointwise_math.h).
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
#include "ir/status_macros.h"
#include "passes/decomposition.h"
#include "passes/pointwise_math.h"

namespace loom {
namespace {

constexpr double kLargeArgument = 268435456.0;  // 2^28

// Each writes `out` = f(x) through `p`, built for x.
using UnaryFn = void (*)(PointwiseMath& p, ValueId x, ValueId out);

template <UnaryFn f>
absl::Status Decompose(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  PointwiseMath p(b, node.inputs[0]);
  f(p, node.inputs[0], node.outputs[0]);
  return absl::OkStatus();
}

void Atan(PointwiseMath& p, ValueId x, ValueId out) {
  const ValueId y = p.AtanOfMagnitude(p.Op("abs", {x}));
  p.Write("mul", {p.Op("sign", {x}), y}, out);
}

void Asin(PointwiseMath& p, ValueId x, ValueId out) {
  const ValueId cosine = p.Sqrt(p.Mul(p.Sub(p.C(1), x), p.Add(p.C(1), x)));
  p.Write("atan", {p.Div(x, cosine)}, out);
}

void Acos(PointwiseMath& p, ValueId x, ValueId out) {
  const ValueId half_tangent = p.Sqrt(p.Div(p.Sub(p.C(1), x), p.Add(p.C(1), x)));
  // The argument is >= 0 (or NaN): no sign to restore.
  p.Write("mul", {p.AtanOfMagnitude(half_tangent), p.C(2)}, out);
}

void Asinh(PointwiseMath& p, ValueId x, ValueId out) {
  const ValueId a = p.Op("abs", {x});
  const ValueId square = p.Mul(a, a);
  const ValueId u = p.Add(a, p.Div(square, p.Add(p.C(1), p.Sqrt(p.Add(p.C(1), square)))));
  const ValueId y = p.Log1pOrLogOfTwice(u, p.Op("greater", {a, p.C(kLargeArgument)}), a);
  p.Write("mul", {p.Op("sign", {x}), y}, out);
}

void Acosh(PointwiseMath& p, ValueId x, ValueId out) {
  const ValueId u = p.Sub(x, p.C(1));
  const ValueId v = p.Add(u, p.Mul(p.Sqrt(u), p.Sqrt(p.Add(x, p.C(1)))));
  p.Log1pOrLogOfTwice(v, p.Op("greater", {x, p.C(kLargeArgument)}), x, out);
}

void Atanh(PointwiseMath& p, ValueId x, ValueId out) {
  const ValueId a = p.Op("abs", {x});
  const ValueId u = p.Div(p.Mul(a, p.C(2)), p.Sub(p.C(1), a));
  const ValueId half = p.Mul(p.Log1pOrLogOfTwice(u), p.C(0.5));
  // a = 1 gives u = inf and inf; a > 1 a negative u.
  const ValueId y = p.Where(p.Op("greater", {a, p.C(1)}), p.C(NAN), half);
  p.Write("mul", {p.Op("sign", {x}), y}, out);
}

constexpr Decomposition kInverseTrigDecompositions[] = {
    {"atan", Decompose<Atan>},   {"asin", Decompose<Asin>},   {"acos", Decompose<Acos>},
    {"asinh", Decompose<Asinh>}, {"acosh", Decompose<Acosh>}, {"atanh", Decompose<Atanh>},
};

}  // namespace

absl::Span<const Decomposition> InverseTrigDecompositions() { return kInverseTrigDecompositions; }

}  // namespace loom
