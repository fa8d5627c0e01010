#include "backends/common/c_scalar.h"

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace loom::cscalar {
namespace {

TEST(CScalarTest, HelpersTakeTheBackendsQualifier) {
  const std::string cpp = CoreHelpers("static inline");
  EXPECT_NE(cpp.find("static inline int64_t loom_idiv(int64_t a, int64_t b)"), std::string::npos);
  EXPECT_NE(cpp.find("static inline int32_t loom_f2i32(double x)"), std::string::npos);
  EXPECT_NE(HelperText(kIntMod, "__device__").find("__device__ int64_t loom_imod"),
            std::string::npos);
}

TEST(CScalarTest, LiteralsAreExact) {
  EXPECT_EQ(Literal(NAN, DType::kF32), "(float)NAN");
  EXPECT_EQ(Literal(-INFINITY, DType::kF64), "(double)(-INFINITY)");
  EXPECT_EQ(Literal(0.1, DType::kF64), "(double)0x1.999999999999ap-4");
  EXPECT_EQ(Literal(3e10, DType::kI32), "INT32_MAX");
  EXPECT_EQ(Literal(-7.9, DType::kI64), "(int64_t)-7LL");
}

TEST(CScalarTest, CastsSaturateAndTestBools) {
  EXPECT_EQ(CastExpr(DType::kF32, DType::kI32, "t0"), "loom_f2i32(t0)");
  EXPECT_EQ(CastExpr(DType::kF64, DType::kBool, "t1"), "t1 != 0");
  EXPECT_EQ(CastExpr(DType::kI32, DType::kF32, "t2"), "(float)t2");
}

TEST(CScalarTest, IntegerDivisionAndRemainderAreTotal) {
  HelperSet helpers;
  EXPECT_EQ(CallExpr(ScalarFn::kDiv, DType::kI32, DType::kI32, {"a", "b"}, helpers),
            "(int32_t)loom_idiv(a, b)");
  EXPECT_EQ(CallExpr(ScalarFn::kMod, DType::kI64, DType::kI64, {"a", "b"}, helpers),
            "(int64_t)loom_imod(a, b)");
  EXPECT_TRUE(helpers[kIntMod]);
  EXPECT_FALSE(helpers[kFloatMod]);
}

TEST(CScalarTest, LibmCallsAreCollectedByPrecision) {
  HelperSet helpers;
  LibmCalls calls;
  EXPECT_EQ(CallExpr(ScalarFn::kPow, DType::kF32, DType::kF32, {"a", "b"}, helpers,
                     FloatExp::kPolynomial, &calls),
            "powf(a, b)");
  EXPECT_EQ(CallExpr(ScalarFn::kSigmoid, DType::kF64, DType::kF64, {"a"}, helpers,
                     FloatExp::kPolynomial, &calls),
            "(double)1 / ((double)1 + exp(-a))");
  EXPECT_EQ(CallExpr(ScalarFn::kExp, DType::kF32, DType::kF32, {"a"}, helpers,
                     FloatExp::kPolynomial, &calls),
            "loom_expf(a)");
  EXPECT_EQ(calls.f32, std::bitset<kNumLibmFns>().set(kLibmPow));
  EXPECT_EQ(calls.f64, std::bitset<kNumLibmFns>().set(kLibmExp));
  EXPECT_EQ(LibmPrototype(kLibmPow, DType::kF32), "float powf(float, float)");
  EXPECT_EQ(LibmPrototype(kLibmErf, DType::kF64), "double erf(double)");
}

// The names `text` calls: each identifier followed by '('.
std::vector<std::string> CalledNames(const std::string& text) {
  std::vector<std::string> names;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '(') continue;
    size_t begin = i;
    while (begin > 0 &&
           (std::isalnum(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '_')) {
      --begin;
    }
    if (begin < i) names.push_back(text.substr(begin, i - begin));
  }
  return names;
}

// A unit includes no <math.h>: every C function a float expression calls
// is declared by CMathDeclarations.
TEST(CScalarTest, EveryCalledMathFunctionIsDeclared) {
  const std::string declarations = CMathDeclarations();
  int checked = 0;
  for (int f = static_cast<int>(ScalarFn::kNeg); f <= static_cast<int>(ScalarFn::kSelect); ++f) {
    const auto fn = static_cast<ScalarFn>(f);
    if (fn == ScalarFn::kNot || fn == ScalarFn::kBitNot || fn == ScalarFn::kBitCast ||
        (fn >= ScalarFn::kShl && fn <= ScalarFn::kShr) ||
        (fn >= ScalarFn::kAnd && fn <= ScalarFn::kBitXor)) {
      continue;  // on bools or integers
    }
    for (DType dtype : {DType::kF32, DType::kF64}) {
      for (FloatExp exp : {FloatExp::kLibm, FloatExp::kPolynomial}) {
        HelperSet helpers;
        const std::vector<std::string> args = {"a", "b", "c"};
        const std::string text = CallExpr(
            fn, dtype, dtype, {args.begin(), args.begin() + ScalarFnArity(fn)}, helpers, exp);
        for (const std::string& name : CalledNames(text)) {
          if (name.rfind("loom_", 0) == 0 || name.rfind("LOOM_", 0) == 0 ||
              name.rfind("__builtin_", 0) == 0) {
            continue;  // the prelude's helpers and macros, GCC's builtins
          }
          EXPECT_NE(declarations.find(absl::StrCat(" ", name, "(")), std::string::npos)
              << name << " in " << text;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_NE(declarations.find("float fmodf(float, float) noexcept;"), std::string::npos);
  EXPECT_NE(declarations.find("double sqrt(double) noexcept;"), std::string::npos);
}

TEST(CScalarTest, NarrowAndUnsignedTypes) {
  EXPECT_STREQ(CType(DType::kU8), "uint8_t");
  EXPECT_STREQ(CType(DType::kI16), "int16_t");
  EXPECT_EQ(Literal(300, DType::kU8), "(uint8_t)255ULL");
  EXPECT_EQ(Literal(-3.5, DType::kU16), "(uint16_t)0ULL");
  EXPECT_EQ(Literal(-200, DType::kI8), "(int8_t)-128LL");
  EXPECT_EQ(Literal(1e30, DType::kU64), "(uint64_t)18446744073709551615ULL");
  EXPECT_EQ(ReduceInit(ReduceKind::kMax, DType::kI8), "(int8_t)-128LL");
  EXPECT_EQ(ReduceInit(ReduceKind::kMin, DType::kU32), "(uint32_t)4294967295ULL");
  // The interpreter's saturation, as selects (no call).
  EXPECT_EQ(CastExpr(DType::kF32, DType::kU8, "t0"),
            "(t0 != t0 ? (uint8_t)0 : t0 >= (float)256 ? (uint8_t)255ULL : t0 <= (float)-1 ? "
            "(uint8_t)0ULL : (uint8_t)t0)");
  EXPECT_EQ(CastExpr(DType::kU64, DType::kI8, "t1"), "(int8_t)t1");
  HelperSet helpers;
  EXPECT_EQ(CallExpr(ScalarFn::kDiv, DType::kU64, DType::kU64, {"a", "b"}, helpers),
            "(uint64_t)loom_udiv(a, b)");
  EXPECT_EQ(CallExpr(ScalarFn::kFmod, DType::kU8, DType::kU8, {"a", "b"}, helpers),
            "(uint8_t)loom_umod(a, b)");
  EXPECT_EQ(CallExpr(ScalarFn::kPow, DType::kU32, DType::kU32, {"a", "b"}, helpers),
            "(uint32_t)loom_upow(a, b)");
  EXPECT_TRUE(helpers[kUIntDiv] && helpers[kUIntMod] && helpers[kUIntPow]);
  EXPECT_FALSE(helpers[kIntMod]);
  EXPECT_EQ(CallExpr(ScalarFn::kShl, DType::kU16, DType::kU16, {"a", "b"}, helpers),
            "(uint16_t)(b >= 16 ? 0 : a << b)");
  EXPECT_EQ(CallExpr(ScalarFn::kAbs, DType::kU8, DType::kU8, {"a"}, helpers), "a");
  EXPECT_NE(HelperText(kUIntPow, "static inline")
                .find("static inline uint64_t loom_upow(uint64_t base, uint64_t exp)"),
            std::string::npos);
}

TEST(CScalarTest, BitwiseOperatorsCastBackToTheType) {
  HelperSet helpers;
  EXPECT_EQ(CallExpr(ScalarFn::kBitAnd, DType::kI8, DType::kI8, {"a", "b"}, helpers),
            "(int8_t)(a & b)");
  EXPECT_EQ(CallExpr(ScalarFn::kBitOr, DType::kU64, DType::kU64, {"a", "b"}, helpers),
            "(uint64_t)(a | b)");
  EXPECT_EQ(CallExpr(ScalarFn::kBitXor, DType::kI32, DType::kI32, {"a", "b"}, helpers),
            "(int32_t)(a ^ b)");
  EXPECT_EQ(CallExpr(ScalarFn::kBitNot, DType::kU16, DType::kU16, {"a"}, helpers), "(uint16_t)~a");
  EXPECT_TRUE(helpers.none());
}

// bit_cast: f32 and f64 through the kFloatBits helpers; types held as
// integers (f16's bits too) by a conversion; bools test the byte.
TEST(CScalarTest, BitCastsKeepTheBits) {
  HelperSet helpers;
  EXPECT_EQ(CallExpr(ScalarFn::kBitCast, DType::kI16, DType::kF16, {"a"}, helpers), "(int16_t)a");
  EXPECT_EQ(CallExpr(ScalarFn::kBitCast, DType::kBool, DType::kU8, {"a"}, helpers), "(a != 0)");
  EXPECT_TRUE(helpers.none());
  EXPECT_EQ(CallExpr(ScalarFn::kBitCast, DType::kI32, DType::kF32, {"a"}, helpers),
            "(int32_t)loom_bitcast_f32_u32(a)");
  EXPECT_EQ(CallExpr(ScalarFn::kBitCast, DType::kF64, DType::kI64, {"a"}, helpers),
            "loom_bitcast_u64_f64((uint64_t)a)");
  EXPECT_TRUE(helpers[kFloatBits]);
  EXPECT_NE(HelperText(kFloatBits, "__device__").find("__float_as_uint(x)"), std::string::npos);
}

// Signed shifts: arithmetic to the right, through the unsigned type to the
// left; a negative amount or the width or more gives -1 or 0.
TEST(CScalarTest, SignedShiftsAreTotal) {
  HelperSet helpers;
  EXPECT_EQ(CallExpr(ScalarFn::kShr, DType::kI8, DType::kI8, {"a", "b"}, helpers),
            "(int8_t)(b < 0 || b >= 8 ? (a < 0 ? -1 : 0) : a >> b)");
  EXPECT_EQ(CallExpr(ScalarFn::kShl, DType::kI64, DType::kI64, {"a", "b"}, helpers),
            "(int64_t)(b < 0 || b >= 64 ? 0 : (uint64_t)a << b)");
  EXPECT_EQ(CallExpr(ScalarFn::kShr, DType::kU32, DType::kU32, {"a", "b"}, helpers),
            "(uint32_t)(b >= 32 ? 0 : a >> b)");
}

// Combining partial results must agree with folding in order: NaN beats
// numbers, ties go to the first (or last) position.
TEST(CScalarTest, CombiningPartialArgReductions) {
  EXPECT_EQ(ReduceTakesOther(ReduceKind::kArgMax, DType::kI32, "a", "ai", "b", "bi"),
            "b > a || (b == a && bi < ai)");
  EXPECT_EQ(ReduceTakesOther(ReduceKind::kArgMinLast, DType::kI64, "a", "ai", "b", "bi"),
            "b < a || (b == a && bi > ai)");
  EXPECT_EQ(ReduceTakesOther(ReduceKind::kMax, DType::kF32, "a", "", "b", ""),
            "(b > a || (b != b && a == a))");
  EXPECT_EQ(ReduceUpdate(ReduceKind::kArgMaxLast, DType::kF32, "v", "x1", "acc", "arg"),
            "if (v >= acc || v != v) { acc = v; arg = x1; }");
}

}  // namespace
}  // namespace loom::cscalar
