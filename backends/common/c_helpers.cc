// The text of the helper functions that generated code calls (c_scalar.h:
// CoreHelpers, HelperText and the f32 functions shared with explicit
// vectors); c_scalar.cc has the expressions that call them.

#include <string>

#include "absl/strings/str_cat.h"
#include "backends/common/c_scalar.h"

namespace loom::cscalar {

// Integer division and power are total: division by zero gives 0 instead of
// a signal, and the most negative value divided by -1 wraps.
std::string CoreHelpers(absl::string_view q) {
  // Whether a or b is NaN, for float max and min (CallExpr). nvcc has no
  // __builtin_isunordered in device code.
  return absl::StrCat(R"(#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define LOOM_UNORDERED(a, b) ((a) != (a) || (b) != (b))
#else
#define LOOM_UNORDERED(a, b) __builtin_isunordered(a, b)
#endif
)",
                      q, R"( int64_t loom_idiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  return a / b;
}
)",
                      q, R"( int64_t loom_ipow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;
  uint64_t result = 1, b = (uint64_t)base;
  for (; exp > 0; exp >>= 1, b *= b) {
    if (exp & 1) result *= b;
  }
  return (int64_t)result;
}
// Float to integer: truncates, saturates at the type's range, NaN gives 0
// (the reference interpreter's cast; a plain C cast is undefined there).
)",
                      q, R"( int32_t loom_f2i32(double x) {
  if (x != x) return 0;
  if (x >= 2147483648.0) return INT32_MAX;
  if (x <= -2147483648.0) return INT32_MIN;
  return (int32_t)x;
}
)",
                      q, R"( int64_t loom_f2i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}
)");
}

namespace {

// fmodf(a, b), exact as fmodf is, in double precision and without
// branches, so that loops calling it vectorise (libm's fmodf is a call per
// element). loom_fmod_rest's steps each take q, x / y' rounded to an
// integer, for y' = y scaled by a power of two so that q has at most
// LOOM_FMOD_BITS bits, and keep x - q y', exact (a fused multiply-add, or a
// product q y' exact in 53 bits), plus y' where q was one too many: a
// remainder by y', a multiple of y. Six steps of 48 bits cover the 277
// between f32's largest and smallest magnitudes (eleven of 26 without FMA);
// once y' is y, a step changes nothing. The rounding of q adds 2^52 and
// takes it away. A NaN, an infinite a or a zero b gives NaN, an infinite b
// gives a (loom_fmod_special). Choices are made in bits: GCC turns a choice
// between floats into a branch around their computation.
std::string FloatFmodHelper(absl::string_view q) {
  return absl::StrCat(R"(
#if defined(__FMA__) || defined(__aarch64__)
#define LOOM_FMOD_STEPS 6
#define LOOM_FMOD_BITS 48
#define LOOM_FMOD_REST(x, q, y) __builtin_fma(-(q), (y), (x))
#else
#define LOOM_FMOD_STEPS 11
#define LOOM_FMOD_BITS 26
#define LOOM_FMOD_REST(x, q, y) ((x) - (q) * (y))
#endif
)",
                      q, R"( uint64_t loom_f64_bits(double v) {
  uint64_t bits;
  __builtin_memcpy(&bits, &v, sizeof bits);
  return bits;
}
)",
                      q, R"( double loom_f64_of_bits(uint64_t bits) {
  double v;
  __builtin_memcpy(&v, &bits, sizeof v);
  return v;
}
)",
                      q, R"( double loom_fmod_rest(double x, double y) {
  const uint64_t y_bits = loom_f64_bits(y), inverse_bits = loom_f64_bits(1.0 / y);
#pragma GCC unroll 16
  for (int step = 0; step < LOOM_FMOD_STEPS; ++step) {
    const int32_t gap =
        (int32_t)(loom_f64_bits(x) >> 52) - (int32_t)(y_bits >> 52) - LOOM_FMOD_BITS;
    const uint64_t scale = (uint64_t)(uint32_t)(gap > 0 ? gap : 0) << 52;
    const uint64_t divisor_bits = y_bits + scale;
    const double divisor = loom_f64_of_bits(divisor_bits);
    const double q = (x * loom_f64_of_bits(inverse_bits - scale) + 0x1p52) - 0x1p52;
    const double rest = LOOM_FMOD_REST(x, q, divisor);
    x = rest + loom_f64_of_bits(divisor_bits & (0 - (loom_f64_bits(rest) >> 63)));
  }
  return x;
}
)",
                      q,
                      R"( float loom_fmod_special(float a, double y, float r, float at_infinite_b) {
  uint32_t a_bits, r_bits, infinite_b_bits;
  __builtin_memcpy(&a_bits, &a, sizeof a_bits);
  __builtin_memcpy(&r_bits, &r, sizeof r_bits);
  __builtin_memcpy(&infinite_b_bits, &at_infinite_b, sizeof infinite_b_bits);
  const uint32_t a_finite = (a_bits & 0x7f800000u) != 0x7f800000u;
  const uint32_t b_finite = y < __builtin_inf();
  const uint32_t remainder = 0u - (a_finite & (y > 0) & b_finite);
  const uint32_t infinite_b = 0u - (a_finite & (b_finite ^ 1u) & (y == y));
  const uint32_t out = (r_bits & remainder) | (infinite_b_bits & infinite_b) |
                       (0x7fc00000u & ~(remainder | infinite_b));
  float f;
  __builtin_memcpy(&f, &out, sizeof f);
  return f;
}
)",
                      q, R"( float loom_fmodf(float a, float b) {
  const double y = __builtin_fabs((double)b);
  const double x = loom_fmod_rest(__builtin_fabs((double)a), y);
  return loom_fmod_special(a, y, __builtin_copysignf((float)x, a), a);
}
)");
}

// loom_modf on loom_fmodf's steps: where a and b differ in sign and the
// remainder x is not 0, |b| - x, exact in double, with b's sign (r + b,
// rounded once; b itself where b is infinite). Vectorises for AVX2 and
// AVX-512, not for SSE2 alone.
std::string FloatFloorModHelper(absl::string_view q) {
  return absl::StrCat(q, R"( float loom_floor_modf(float a, float b) {
  const double y = __builtin_fabs((double)b);
  const double x = loom_fmod_rest(__builtin_fabs((double)a), y);
  uint32_t a_bits, b_bits;
  __builtin_memcpy(&a_bits, &a, sizeof a_bits);
  __builtin_memcpy(&b_bits, &b, sizeof b_bits);
  const uint32_t flip = ((a_bits ^ b_bits) >> 31) & (x != 0) & (a != 0);
  const double floor_x =
      __builtin_fabs(loom_f64_of_bits(loom_f64_bits(y) & (0 - (uint64_t)flip)) - x);
  const float r = __builtin_copysignf((float)floor_x, a);
  uint32_t r_bits;
  __builtin_memcpy(&r_bits, &r, sizeof r_bits);
  r_bits ^= flip << 31;
  float f;
  __builtin_memcpy(&f, &r_bits, sizeof f);
  return loom_fmod_special(a, y, f, flip ? b : a);
}
)");
}

// Remainders follow the interpreter: kMod takes the divisor's sign, kFmod
// the dividend's; an integer remainder by 0 gives 0, and by -1 gives 0
// without the overflow trap of INT64_MIN % -1.
std::string RemainderHelper(Helper helper, absl::string_view q) {
  switch (helper) {
    case kIntMod:
      return absl::StrCat(q, R"( int64_t loom_imod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  const int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
)");
    case kIntFmod:
      return absl::StrCat(q, R"( int64_t loom_ifmod(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}
)");
    case kFloatMod:
      return absl::StrCat(q, R"( float loom_modf(float a, float b) {
  const float r = fmodf(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
)");
    case kDoubleMod:
      return absl::StrCat(q, R"( double loom_mod(double a, double b) {
  const double r = fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
)");
    case kFloatFmod:
      return FloatFmodHelper(q);
    case kFloatFloorMod:
      return FloatFloorModHelper(q);
    default:  // not a remainder (HelperText dispatches)
      return "";
  }
}

// Unsigned division, remainder and power in uint64_t: the narrower
// unsigned types convert to it exactly.
std::string UnsignedHelper(Helper helper, absl::string_view q) {
  switch (helper) {
    case kUIntDiv:
      return absl::StrCat(q, R"( uint64_t loom_udiv(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a / b;
}
)");
    case kUIntMod:
      return absl::StrCat(q, R"( uint64_t loom_umod(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a % b;
}
)");
    case kUIntPow:
      return absl::StrCat(q, R"( uint64_t loom_upow(uint64_t base, uint64_t exp) {
  uint64_t result = 1;
  for (; exp > 0; exp >>= 1, base *= base) {
    if (exp & 1) result *= base;
  }
  return result;
}
)");
    default:  // not unsigned (HelperText dispatches)
      return "";
  }
}

// exp(x) = 2^n exp(r) with |r| <= ln2/2: Cephes' polynomial, evaluated
// by Horner's rule to the end (two multiply-adds where Cephes has a
// product, a multiply-add and a sum; within 0.9 ulp for every float
// whose exp is a normal float, where Cephes' last step reached 1.02),
// branch-free so that loops calling it vectorise. 2^n is built in
// two halves so that results down to the denormals and up to the
// overflow to infinity come out right.
std::string FloatExpHelper(absl::string_view q) {
  return absl::StrCat(q, R"( float loom_pow2i(int32_t k) {
  const int32_t bits = (k + 127) << 23;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}
)",
                      q, R"( float loom_expf(float x) {
  const float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float n = rintf(c * 1.44269504088896341f);
)",
                      ExpfReduction("float"), R"(  const int32_t k = (int32_t)n;
  const float y = e * loom_pow2i(k >> 1) * loom_pow2i(k - (k >> 1));
  return x != x ? x : y;
}
)");
}

// log(x) = k ln2 + log(m) for x = m 2^k with m in [sqrt(1/2), sqrt(2))
// (k and m from the bits; denormals scaled by 2^23 first), log(m) =
// log(1 + f) = f - f^2/2 + f^3 p(f): Cephes' logf polynomial, ln2 in two
// parts. Branch-free, so that loops calling it vectorise; NaN, negative
// arguments, zeros and infinity chosen at the end.
std::string FloatLogHelper(absl::string_view q) {
  return absl::StrCat(q, R"( float loom_logf(float x) {
  const int32_t tiny = x < 1.17549435e-38f;
  const float s = tiny ? x * 8388608.0f : x;
  int32_t bits;
  __builtin_memcpy(&bits, &s, sizeof bits);
  const int32_t k = (bits - 0x3f3504f3) >> 23;
  const int32_t m_bits = bits - (k << 23);
  float m;
  __builtin_memcpy(&m, &m_bits, sizeof m);
  const float e = (float)k - (tiny ? 23.0f : 0.0f);
  const float f = m - 1.0f;
  const float z = f * f;
  float p = f * 7.0376836292e-2f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float y = f + (f * z * p + e * -2.12194440e-4f - 0.5f * z) + e * 0.693359375f;
  return x != x ? x
         : x < 0.0f ? __builtin_nanf("")
         : x == 0.0f ? -__builtin_inff()
         : x == __builtin_inff() ? x
         : y;
}
)");
}

// A compare and a predicted branch per index on the hot path; the
// failure is out of line.
std::string CheckIndexHelper(absl::string_view q) {
  return absl::StrCat(q,
                      R"( int64_t loom_check_index(int64_t index, int64_t extent, int64_t site,
                                        int64_t* errors) {
  const int64_t wrapped = index < 0 ? index + extent : index;
  if (__builtin_expect((uint64_t)wrapped < (uint64_t)extent, 1)) return wrapped;
  loom_index_error(errors, site, index);
  return 0;
}
)");
}

}  // namespace

std::string HelperText(Helper helper, absl::string_view q) {
  switch (helper) {
    case kIntMod:
    case kIntFmod:
    case kFloatMod:
    case kDoubleMod:
    case kFloatFmod:
    case kFloatFloorMod:
      return RemainderHelper(helper, q);
    case kUIntDiv:
    case kUIntMod:
    case kUIntPow:
      return UnsignedHelper(helper, q);
    case kFloatExp:
      return FloatExpHelper(q);
    // tanh(x) = x + x^3 p(x^2) for |x| < 0.4, the odd Taylor series to x^13
    // (its remainder is under 4e-9 relative there); elsewhere
    // 1 - 2 / (exp(2|x|) + 1) with the sign of x, which loses at most a bit
    // to cancellation at 0.4 and is exactly 1 from |x| = 9.1 on. Both are
    // computed and one chosen, so that loops calling it vectorise. NaN
    // fails the comparison and comes out of the second form.
    case kFloatTanh:
      return TanhfFunction(q, "loom_tanhf", "float", "loom_expf");
    case kFloatErf:
      return ErffFunction(q, "loom_erff", "float");
    case kFloatLog:
      return FloatLogHelper(q);
    case kCheckIndex:
      return CheckIndexHelper(q);
    case kNumHelpers:
      break;
  }
  return "";
}

std::string CheckIndexExpr(const std::string& index, int64_t extent, int32_t site,
                           const std::string& errors, HelperSet& helpers) {
  helpers.set(kCheckIndex);
  return absl::StrCat("loom_check_index((int64_t)", index, ", ", extent, ", ", site, ", ", errors,
                      ")");
}

std::string TanhfFunction(absl::string_view qualifier, absl::string_view name,
                          absl::string_view type, absl::string_view exp) {
  const std::string t(type);
  return absl::StrCat(qualifier, " ", t, " ", name, "(", t, " x) {\n  const ", t,
                      R"( u = x * x;
  )",
                      t, R"( p = u * 3.59212803657248101e-3f - 8.86323552990219657e-3f;
  p = p * u + 2.18694885361552028e-2f;
  p = p * u - 5.39682539682539683e-2f;
  p = p * u + 1.33333333333333333e-1f;
  p = p * u - 3.33333333333333333e-1f;
  const )",
                      t, R"( near_zero = x + x * u * p;
  const )",
                      t, R"( a = x < 0.0f ? -x : x;
  const )",
                      t, " away = 1.0f - 2.0f / (", exp, R"((2.0f * a) + 1.0f);
  return a < 0.4f ? near_zero : (x < 0.0f ? -away : away);
}
)");
}

// erf(x) = x p(x^2) / q(x^2) on x clamped to [-4, 4] (erf(4) rounds to 1
// in f32), the rational approximation of XLA's ErfImpl32 and Eigen's
// generic_fast_erf_float: within 5.5 ulp of erf where the compiler fuses
// multiply-adds, 7.4 where it cannot (tests/e2e:vector_math_test);
// branch-free, so that loops calling it vectorise (libm's erff stops
// vectorisation: a GELU's erf was a call per element). A NaN x fails both
// comparisons and comes out NaN.
std::string ErffFunction(absl::string_view qualifier, absl::string_view name,
                         absl::string_view type) {
  const std::string t(type);
  return absl::StrCat(qualifier, " ", t, " ", name, "(", t, " x) {\n  const ", t,
                      R"( c = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  const )",
                      t, R"( u = c * c;
  )",
                      t, R"( p = u * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = p * u - 2.10102402082508e-06f;
  p = p * u - 5.69250639462346e-05f;
  p = p * u - 7.34990630326855e-04f;
  p = p * u - 2.95459980854025e-03f;
  p = p * u - 1.60960333262415e-02f;
  )",
                      t, R"( q = u * -1.45660718464996e-05f - 2.13374055278905e-04f;
  q = q * u - 1.68282697438203e-03f;
  q = q * u - 7.37332916720468e-03f;
  q = q * u - 1.42647390514189e-02f;
  return c * p / q;
}
)");
}

std::string ExpfReduction(absl::string_view type) {
  return absl::StrCat("  const ", type, " r = c - n * 0.693359375f - n * -2.12194440e-4f;\n  ",
                      type, R"( p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const )",
                      type, R"( e = (p * r + 1.0f) * r + 1.0f;
)");
}

}  // namespace loom::cscalar
