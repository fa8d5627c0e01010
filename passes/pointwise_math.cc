// See pointwise_math.h.
#include "passes/pointwise_math.h"

#include <cmath>
#include <optional>
#include <vector>

namespace loom {

ValueId PointwiseMath::Log(ValueId w) {
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

ValueId PointwiseMath::LogOfAny(ValueId w) {
  const int k = is_f32() ? 64 : 512;
  const ValueId tiny = Op("less", {w, C(std::ldexp(1.0, -k))});
  const ValueId scaled = Where(tiny, Mul(w, C(std::ldexp(1.0, k))), w);
  const ValueId small = Op("less", {scaled, C(M_SQRT1_2)});
  const ValueId log = Log(Where(small, Div(C(1), scaled), scaled));
  const ValueId signed_log = Where(small, Op("neg", {log}), log);
  const ValueId unscaled = Sub(signed_log, Where(tiny, C(k * kLn2), C(0)));
  return Where(Op("less", {w, C(0)}), C(NAN), unscaled);
}

ValueId PointwiseMath::Log1pOrLogOfTwice(ValueId u, std::optional<ValueId> large, ValueId a,
                                         std::optional<ValueId> output) {
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

ValueId PointwiseMath::AtanOfMagnitude(ValueId a) {
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

}  // namespace loom
