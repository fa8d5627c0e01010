#include "backends/common/c_scalar.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "ir/shape_constants.h"

namespace loom::cscalar {
namespace {

// Every C math function the spellings call, by its double-precision name,
// and its count of arguments: first those LibmFn names, in its order.
constexpr std::pair<absl::string_view, int> kCMathFunctions[] = {
    {"exp", 1},  {"log", 1},  {"tanh", 1},  {"erf", 1},  {"sin", 1},  {"cos", 1},  {"pow", 2},
    {"fabs", 1}, {"sqrt", 1}, {"floor", 1}, {"ceil", 1}, {"rint", 1}, {"fmod", 2},
};

// The C spelling of a math function for a float type: expf or exp.
std::string MathFn(absl::string_view name, DType dtype) {
  return absl::StrCat(name, dtype == DType::kF32 ? "f" : "");
}

// libm's `fn` for `dtype` applied to `a`; recorded in `calls` if not null.
std::string LibmCall(LibmFn fn, DType dtype, const std::vector<std::string>& a, LibmCalls* calls) {
  if (calls != nullptr) (dtype == DType::kF32 ? calls->f32 : calls->f64).set(fn);
  return absl::StrCat(MathFn(kCMathFunctions[fn].first, dtype), "(", absl::StrJoin(a, ", "), ")");
}

// The exponential of `dtype` under `float_exp` applied to `arg`; collects
// its helper or libm function.
std::string ExpCall(DType dtype, FloatExp float_exp, const std::string& arg, HelperSet& helpers,
                    LibmCalls* libm_calls) {
  if (dtype != DType::kF32 || float_exp == FloatExp::kLibm) {
    return LibmCall(kLibmExp, dtype, {arg}, libm_calls);
  }
  helpers.set(kFloatExp);
  return absl::StrCat("loom_expf(", arg, ")");
}

// " || v != v" for floats (true when v is NaN), nothing for integers.
std::string NanTest(bool is_float, const std::string& v) {
  return is_float ? absl::StrCat(" || ", v, " != ", v) : "";
}

}  // namespace

std::string LibmPrototype(LibmFn fn, DType dtype) {
  const char* t = CType(dtype);
  return absl::StrCat(t, " ", LibmName(fn, dtype), "(", t,
                      LibmArity(fn) == 2 ? absl::StrCat(", ", t) : "", ")");
}

std::string LibmName(LibmFn fn, DType dtype) { return MathFn(kCMathFunctions[fn].first, dtype); }

std::string CMathDeclarations() {
  std::string text = "extern \"C\" {\n";
  for (const auto& [name, arity] : kCMathFunctions) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const char* t = CType(dtype);
      absl::StrAppend(&text, dtype == DType::kF32 ? "" : " ", t, " ", MathFn(name, dtype), "(", t,
                      arity == 2 ? ", " : "", arity == 2 ? t : "", ") noexcept;");
    }
    text += '\n';
  }
  return absl::StrCat(text, "}\n\n");
}

const char* CType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float";
    case DType::kF64:
      return "double";
    case DType::kI32:
      return "int32_t";
    case DType::kI64:
      return "int64_t";
    case DType::kBool:
      return "bool";
    case DType::kI8:
      return "int8_t";
    case DType::kI16:
      return "int16_t";
    case DType::kU8:
      return "uint8_t";
    case DType::kU16:
      return "uint16_t";
    case DType::kU32:
      return "uint32_t";
    case DType::kU64:
      return "uint64_t";
    case DType::kF16:
    case DType::kBF16:
      return "uint16_t";  // the bits (NarrowFloatHelpers)
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF4E2M1:
      return "uint8_t";  // the bits
    case DType::kI4:
    case DType::kI2:
      return "int8_t";  // the value, sign-extended
    case DType::kU4:
    case DType::kU2:
      return "uint8_t";
  }
  return "void";
}

const char* StorageCType(DType dtype) { return dtype == DType::kBool ? "uint8_t" : CType(dtype); }

// The literal of integer bits of `dtype` (ir/dtype.h), without macros
// (NVRTC has no <stdint.h>): the most negative int64 as an expression.
std::string IntegerLiteral(int64_t bits, DType dtype) {
  if (IsUnsigned(dtype)) {
    return absl::StrFormat("(%s)%lluULL", CType(dtype), static_cast<unsigned long long>(bits));
  }
  if (bits == std::numeric_limits<int64_t>::min()) {
    return absl::StrFormat("(%s)(-9223372036854775807LL - 1)", CType(dtype));
  }
  return absl::StrFormat("(%s)%dLL", CType(dtype), bits);
}

// A constant step's value: a shape constant (ir/shape_constants.h) where it
// is a non-negative int32 or int64 (a size the graph computed, such as a
// sequence's length), else its Literal.
std::string ConstantExpr(double v, DType dtype) {
  if ((dtype == DType::kI32 || dtype == DType::kI64) && v >= 0 && v < 0x1p31 &&
      v == std::trunc(v)) {
    return absl::StrCat("(", CType(dtype), ")", MarkShapeConstant(static_cast<int64_t>(v)));
  }
  return Literal(v, dtype);
}

// A literal of `dtype` with exactly the value `v` converted as a cast would
// (for integers: truncated, saturated, NaN as 0).
std::string Literal(double v, DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF64:
      if (std::isnan(v)) return absl::StrCat("(", CType(dtype), ")NAN");
      if (std::isinf(v)) {
        return absl::StrCat("(", CType(dtype), ")(", v < 0 ? "-" : "", "INFINITY)");
      }
      // Integers print as such; anything else in hex, which is exact.
      if (v == std::trunc(v) && std::fabs(v) < 0x1p53) {
        return absl::StrFormat("(%s)%.0f", CType(dtype), v);
      }
      return absl::StrFormat("(%s)%a", CType(dtype), v);
    case DType::kBool:
      return v != 0 ? "true" : "false";
    case DType::kI32:
    case DType::kI64: {
      const bool narrow = dtype == DType::kI32;
      const double limit = narrow ? 0x1p31 : 0x1p63;
      if (std::isnan(v)) return absl::StrCat("(", CType(dtype), ")0");
      if (v >= limit) return narrow ? "INT32_MAX" : "INT64_MAX";
      if (v <= -limit) return narrow ? "INT32_MIN" : "INT64_MIN";
      return absl::StrFormat("(%s)%dLL", CType(dtype), static_cast<int64_t>(v));
    }
    case DType::kI8:
    case DType::kI16:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
    case DType::kI4:
    case DType::kU4:
    case DType::kI2:
    case DType::kU2:
      return IntegerLiteral(FloatToIntegerBits(v, dtype), dtype);
    case DType::kF16:
    case DType::kBF16:
      return absl::StrFormat("(uint16_t)0x%04x", NarrowFloatBits(v, dtype));
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF4E2M1:
      return absl::StrFormat("(uint8_t)0x%02x", NarrowFloatBits(v, dtype));
  }
  return "0";
}

namespace {

// A call CallExpr prints: the function, the result type, the operands'
// type and expressions, and where the helpers and libm calls it needs go.
struct Call {
  ScalarFn fn;
  DType type;
  DType operand_type;
  const std::vector<std::string>& a;
  HelperSet& helpers;
  FloatExp float_exp;
  LibmCalls* libm_calls;

  bool is_float() const { return IsFloat(operand_type); }
  bool is_unsigned() const { return IsUnsigned(operand_type); }
  const char* t() const { return CType(type); }
  // The polynomial f32 helpers replace libm's.
  bool polynomial() const { return type == DType::kF32 && float_exp == FloatExp::kPolynomial; }
  std::string Libm(LibmFn libm) const { return LibmCall(libm, type, a, libm_calls); }
  // `name`(a[0], a[1]) cast to the result type.
  std::string Binary(const char* name) const {
    return absl::StrCat("(", t(), ")", name, "(", a[0], ", ", a[1], ")");
  }
};

// The exponential and the functions libm computes (or our helpers).
std::string TranscendentalExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  switch (c.fn) {
    case ScalarFn::kExp:
      return ExpCall(c.type, c.float_exp, a[0], c.helpers, c.libm_calls);
    case ScalarFn::kLog:
      if (c.polynomial()) {
        c.helpers.set(kFloatLog);
        return absl::StrCat("loom_logf(", a[0], ")");
      }
      return c.Libm(kLibmLog);
    case ScalarFn::kTanh:
      if (c.polynomial()) {
        c.helpers.set(kFloatExp);
        c.helpers.set(kFloatTanh);
        return absl::StrCat("loom_tanhf(", a[0], ")");
      }
      return c.Libm(kLibmTanh);
    case ScalarFn::kSigmoid:
      return absl::StrCat(
          "(", c.t(), ")1 / ((", c.t(), ")1 + ",
          ExpCall(c.type, c.float_exp, absl::StrCat("-", a[0]), c.helpers, c.libm_calls), ")");
    case ScalarFn::kErf:
      if (c.polynomial()) {
        c.helpers.set(kFloatErf);
        return absl::StrCat("loom_erff(", a[0], ")");
      }
      return c.Libm(kLibmErf);
    case ScalarFn::kSin:
      return c.Libm(kLibmSin);
    case ScalarFn::kCos:
      return c.Libm(kLibmCos);
    default:  // another family's (CallExpr dispatches)
      return "0";
  }
}

// The other unary functions: expressions and C's math functions.
std::string UnaryExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  const char* t = c.t();
  switch (c.fn) {
    case ScalarFn::kNeg:
      return absl::StrCat("-", a[0]);
    case ScalarFn::kAbs:
      if (c.is_unsigned()) return a[0];
      return c.is_float() ? absl::StrCat(MathFn("fabs", c.type), "(", a[0], ")")
                          : absl::StrCat("(", a[0], " < 0 ? -", a[0], " : ", a[0], ")");
    case ScalarFn::kSqrt:
      return absl::StrCat(MathFn("sqrt", c.type), "(", a[0], ")");
    case ScalarFn::kRsqrt:
      return absl::StrCat("(", t, ")1 / ", MathFn("sqrt", c.type), "(", a[0], ")");
    case ScalarFn::kReciprocal:
      return absl::StrCat("(", t, ")1 / ", a[0]);
    case ScalarFn::kRelu:  // keeps NaN
      return absl::StrCat("(", a[0], " < 0 ? (", t, ")0 : ", a[0], ")");
    // Integers are already whole. rint rounds half to even in the default
    // rounding mode, which generated code never changes.
    case ScalarFn::kFloor:
      return c.is_float() ? absl::StrCat(MathFn("floor", c.type), "(", a[0], ")") : a[0];
    case ScalarFn::kCeil:
      return c.is_float() ? absl::StrCat(MathFn("ceil", c.type), "(", a[0], ")") : a[0];
    case ScalarFn::kRound:
      return c.is_float() ? absl::StrCat(MathFn("rint", c.type), "(", a[0], ")") : a[0];
    // A NaN (and a zero) is its own sign.
    case ScalarFn::kSign:
      return c.is_float() ? absl::StrCat("(", a[0], " > 0 ? (", t, ")1 : ", a[0], " < 0 ? (", t,
                                         ")-1 : ", a[0], ")")
                          : absl::StrCat("(", t, ")((", a[0], " > 0) - (", a[0], " < 0))");
    case ScalarFn::kNot:
      return absl::StrCat("!", a[0]);
    default:  // another family's (CallExpr dispatches)
      return "0";
  }
}

// The binary arithmetic, integer division and power total (helpers).
std::string ArithmeticExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  switch (c.fn) {
    case ScalarFn::kAdd:
      return absl::StrCat(a[0], " + ", a[1]);
    case ScalarFn::kSub:
      return absl::StrCat(a[0], " - ", a[1]);
    case ScalarFn::kMul:
      return absl::StrCat(a[0], " * ", a[1]);
    case ScalarFn::kDiv:
      if (c.is_unsigned()) {
        c.helpers.set(kUIntDiv);
        return c.Binary("loom_udiv");
      }
      return c.is_float() ? absl::StrCat(a[0], " / ", a[1]) : c.Binary("loom_idiv");
    case ScalarFn::kPow:
      if (c.is_unsigned()) {
        c.helpers.set(kUIntPow);
        return c.Binary("loom_upow");
      }
      return c.is_float() ? c.Libm(kLibmPow) : c.Binary("loom_ipow");
    // Floats propagate NaN: where the two are unordered, their sum is one.
    // GCC 12 vectorises a chain of these selects (a pool's window); of the
    // form `a > b || a != a ? a : b` it vectorised one but not a chain.
    case ScalarFn::kMax:
    case ScalarFn::kMin: {
      const std::string pick = absl::StrCat("(", a[0], c.fn == ScalarFn::kMax ? " > " : " < ", a[1],
                                            " ? ", a[0], " : ", a[1], ")");
      if (!c.is_float()) return pick;
      return absl::StrCat("(LOOM_UNORDERED(", a[0], ", ", a[1], ") ? ", a[0], " + ", a[1], " : ",
                          pick, ")");
    }
    default:  // another family's (CallExpr dispatches)
      return "0";
  }
}

// kShl and kShr, as bit_shift. A shift by the width or more, or (signed)
// by a negative amount, is undefined in C: it gives 0, or -1 for a right
// shift of a negative number. >> on a signed number is arithmetic (GCC,
// NVCC); a signed left shift goes through the unsigned type of its width,
// so that the bits past the sign bit wrap rather than overflow. GCC 12
// vectorises the test `b < 0 || b >= 8`; it did not vectorise the single
// unsigned comparison `(uint8_t)b >= 8`.
std::string ShiftExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  const int width = 8 * DTypeSize(c.operand_type);
  const bool left = c.fn == ScalarFn::kShl;
  if (c.is_unsigned()) {
    return absl::StrCat("(", c.t(), ")(", a[1], " >= ", width, " ? 0 : ", a[0],
                        left ? " << " : " >> ", a[1], ")");
  }
  const std::string outside = absl::StrCat(a[1], " < 0 || ", a[1], " >= ", width);
  if (left) {
    // "uint8_t" for "int8_t", and so on.
    const std::string unsigned_type = absl::StrCat("u", CType(c.operand_type));
    return absl::StrCat("(", c.t(), ")(", outside, " ? 0 : (", unsigned_type, ")", a[0], " << ",
                        a[1], ")");
  }
  return absl::StrCat("(", c.t(), ")(", outside, " ? (", a[0], " < 0 ? -1 : 0) : ", a[0], " >> ",
                      a[1], ")");
}

// The bitwise operations and shifts of integers. The operators promote
// narrow types to int: the result is cast back.
std::string BitwiseExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  switch (c.fn) {
    case ScalarFn::kBitNot:
      return absl::StrCat("(", c.t(), ")~", a[0]);
    case ScalarFn::kBitAnd:
      return absl::StrCat("(", c.t(), ")(", a[0], " & ", a[1], ")");
    case ScalarFn::kBitOr:
      return absl::StrCat("(", c.t(), ")(", a[0], " | ", a[1], ")");
    case ScalarFn::kBitXor:
      return absl::StrCat("(", c.t(), ")(", a[0], " ^ ", a[1], ")");
    case ScalarFn::kShl:
    case ScalarFn::kShr:
      return ShiftExpr(c);
    default:  // another family's (CallExpr dispatches)
      return "0";
  }
}

// kBitCast: the operand's bits as the result type, of the same width. The
// integers, bools and narrow floats (held as their bits) convert keeping
// them; the 4- and 2-bit types keep their low bits, sign-extended into a
// signed type's byte; f32 and f64 go through their bits as unsigned
// integers (helper kFloatBits).
std::string BitCastExpr(const Call& c) {
  const std::string& a = c.a[0];
  const DType from = c.operand_type, to = c.type;
  if (from == to) return a;
  if (to == DType::kBool) return absl::StrCat("(", a, " != 0)");
  const int width = ValueBits(from);
  if (width < 8) {  // held a byte each: the low bits, extended as `to` holds them
    const std::string bits = absl::StrCat("((uint8_t)", a, " & ", (1 << width) - 1, ")");
    if (IsUnsigned(to) || !IsInteger(to)) return absl::StrCat("(uint8_t)", bits);
    return absl::StrCat("(int8_t)((int8_t)(", bits, " << ", 8 - width, ") >> ", 8 - width, ")");
  }
  if (from == DType::kF32 || from == DType::kF64) {
    c.helpers.set(kFloatBits);
    return absl::StrCat("(", c.t(), ")",
                        from == DType::kF32 ? "loom_bitcast_f32_u32(" : "loom_bitcast_f64_u64(", a,
                        ")");
  }
  if (to == DType::kF32 || to == DType::kF64) {
    c.helpers.set(kFloatBits);
    return absl::StrCat(
        to == DType::kF32 ? "loom_bitcast_u32_f32((uint32_t)" : "loom_bitcast_u64_f64((uint64_t)",
        a, ")");
  }
  return absl::StrCat("(", c.t(), ")", a);
}

// kMod and kFmod: both signs are the dividend's and the divisor's.
std::string RemainderExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  if (c.is_unsigned()) {
    c.helpers.set(kUIntMod);
    return c.Binary("loom_umod");
  }
  if (c.fn == ScalarFn::kFmod) {
    if (c.polynomial()) {
      c.helpers.set(kFloatFmod);
      return c.Binary("loom_fmodf");
    }
    if (c.is_float()) return absl::StrCat(MathFn("fmod", c.type), "(", a[0], ", ", a[1], ")");
    c.helpers.set(kIntFmod);
    return c.Binary("loom_ifmod");
  }
  if (c.polynomial()) {
    c.helpers.set(kFloatFmod);
    c.helpers.set(kFloatFloorMod);
    return c.Binary("loom_floor_modf");
  }
  if (c.is_float()) {
    const bool single = c.type == DType::kF32;
    c.helpers.set(single ? kFloatMod : kDoubleMod);
    return absl::StrCat(single ? "loom_modf(" : "loom_mod(", a[0], ", ", a[1], ")");
  }
  c.helpers.set(kIntMod);
  return c.Binary("loom_imod");
}

// Comparisons, the logic of bools, and select.
std::string ComparisonExpr(const Call& c) {
  const std::vector<std::string>& a = c.a;
  switch (c.fn) {
    case ScalarFn::kEq:
      return absl::StrCat(a[0], " == ", a[1]);
    case ScalarFn::kNe:
      return absl::StrCat(a[0], " != ", a[1]);
    case ScalarFn::kLt:
      return absl::StrCat(a[0], " < ", a[1]);
    case ScalarFn::kLe:
      return absl::StrCat(a[0], " <= ", a[1]);
    case ScalarFn::kGt:
      return absl::StrCat(a[0], " > ", a[1]);
    case ScalarFn::kGe:
      return absl::StrCat(a[0], " >= ", a[1]);
    case ScalarFn::kAnd:
      return absl::StrCat(a[0], " && ", a[1]);
    case ScalarFn::kOr:
      return absl::StrCat(a[0], " || ", a[1]);
    case ScalarFn::kXor:
      return absl::StrCat(a[0], " != ", a[1]);
    case ScalarFn::kSelect:
      return absl::StrCat(a[0], " ? ", a[1], " : ", a[2]);
    default:  // another family's (CallExpr dispatches)
      return "0";
  }
}

}  // namespace

// `helpers` collects the helpers the expression calls. Each function goes
// to its family's printer; the switch names every ScalarFn (-Wswitch).
std::string CallExpr(ScalarFn fn, DType type, DType operand_type, const std::vector<std::string>& a,
                     HelperSet& helpers, FloatExp float_exp, LibmCalls* libm_calls) {
  const Call c{fn, type, operand_type, a, helpers, float_exp, libm_calls};
  switch (fn) {
    case ScalarFn::kExp:
    case ScalarFn::kLog:
    case ScalarFn::kTanh:
    case ScalarFn::kSigmoid:
    case ScalarFn::kErf:
    case ScalarFn::kSin:
    case ScalarFn::kCos:
      return TranscendentalExpr(c);
    case ScalarFn::kNeg:
    case ScalarFn::kAbs:
    case ScalarFn::kSqrt:
    case ScalarFn::kRsqrt:
    case ScalarFn::kReciprocal:
    case ScalarFn::kRelu:
    case ScalarFn::kFloor:
    case ScalarFn::kCeil:
    case ScalarFn::kRound:
    case ScalarFn::kSign:
    case ScalarFn::kNot:
      return UnaryExpr(c);
    case ScalarFn::kAdd:
    case ScalarFn::kSub:
    case ScalarFn::kMul:
    case ScalarFn::kDiv:
    case ScalarFn::kPow:
    case ScalarFn::kMax:
    case ScalarFn::kMin:
      return ArithmeticExpr(c);
    case ScalarFn::kBitNot:
    case ScalarFn::kBitAnd:
    case ScalarFn::kBitOr:
    case ScalarFn::kBitXor:
    case ScalarFn::kShl:
    case ScalarFn::kShr:
      return BitwiseExpr(c);
    case ScalarFn::kBitCast:
      return BitCastExpr(c);
    case ScalarFn::kMod:
    case ScalarFn::kFmod:
      return RemainderExpr(c);
    case ScalarFn::kEq:
    case ScalarFn::kNe:
    case ScalarFn::kLt:
    case ScalarFn::kLe:
    case ScalarFn::kGt:
    case ScalarFn::kGe:
    case ScalarFn::kAnd:
    case ScalarFn::kOr:
    case ScalarFn::kXor:
    case ScalarFn::kSelect:
      return ComparisonExpr(c);
  }
  return "0";
}

// The accumulator's first value: `dtype` is the type of the values folded.
std::string ReduceInit(ReduceKind kind, DType dtype) {
  switch (kind) {
    case ReduceKind::kSum:
      return Literal(0, dtype);
    case ReduceKind::kProd:
      return Literal(1, dtype);
    case ReduceKind::kMax:
    case ReduceKind::kArgMax:
    case ReduceKind::kArgMaxLast:
      if (IsFloat(dtype)) return Literal(-INFINITY, dtype);
      if (dtype == DType::kI32) return "INT32_MIN";
      if (dtype == DType::kI64) return "INT64_MIN";
      return IntegerLiteral(IntegerMinBits(dtype), dtype);
    case ReduceKind::kMin:
    case ReduceKind::kArgMin:
    case ReduceKind::kArgMinLast:
      if (IsFloat(dtype)) return Literal(INFINITY, dtype);
      if (dtype == DType::kI32) return "INT32_MAX";
      if (dtype == DType::kI64) return "INT64_MAX";
      return IntegerLiteral(IntegerMaxBits(dtype), dtype);
    case ReduceKind::kVar:  // no single accumulator: the backends print it
    case ReduceKind::kNone:
      break;
  }
  return "0";
}

// Max and min keep the first NaN they meet, like the interpreter. The arg
// reductions also record `position`. A NaN beats any number and ties with
// another NaN: the first kinds take strict improvements (so the first NaN
// or extreme wins), the *Last kinds also take ties (the last one wins).
// Starting from -inf (or the type's minimum) rather than the first element
// changes nothing: that element is taken or ties with the start at
// position 0.
// Folds `value` into the accumulator `acc` (and, for arg reductions, its
// position into `arg`).
std::string ReduceUpdate(ReduceKind kind, DType dtype, const std::string& value,
                         const std::string& position, const std::string& acc,
                         const std::string& arg) {
  const bool is_float = IsFloat(dtype);
  // A NaN value: always taken by max, min and the *Last kinds (it beats
  // or ties anything); by the first kinds only over a number.
  const std::string nan = NanTest(is_float, value);
  const std::string nan_beats =
      is_float ? absl::StrCat(" || (", value, " != ", value, " && ", acc, " == ", acc, ")") : "";
  const std::string take =
      absl::StrCat(") { ", acc, " = ", value, "; ", arg, " = ", position, "; }");
  switch (kind) {
    case ReduceKind::kSum:
      return absl::StrCat(acc, " += ", value, ";");
    case ReduceKind::kProd:
      return absl::StrCat(acc, " *= ", value, ";");
    case ReduceKind::kMax:
      return absl::StrCat("if (", value, " > ", acc, nan, ") ", acc, " = ", value, ";");
    case ReduceKind::kMin:
      return absl::StrCat("if (", value, " < ", acc, nan, ") ", acc, " = ", value, ";");
    case ReduceKind::kArgMax:
      return absl::StrCat("if (", value, " > ", acc, nan_beats, take);
    case ReduceKind::kArgMaxLast:
      return absl::StrCat("if (", value, " >= ", acc, nan, take);
    case ReduceKind::kArgMin:
      return absl::StrCat("if (", value, " < ", acc, nan_beats, take);
    case ReduceKind::kArgMinLast:
      return absl::StrCat("if (", value, " <= ", acc, nan, take);
    case ReduceKind::kVar:  // no single accumulator: the backends print it
    case ReduceKind::kNone:
      break;
  }
  return "";
}

namespace {

// The casts from and to the narrow floats (their bits: NarrowFloatHelpers,
// loom_<dtype>_to_f32 and loom_<dtype>_from_f32 and _from_f64): from them
// through f32, which holds every value exactly; to them rounding once,
// from f32 or else from f64 (which holds every other type's values, up to
// int64's and u64's rounding).
std::string NarrowFloatCastExpr(DType from, DType to, const std::string& arg) {
  if (IsNarrowFloat(from)) {
    const std::string wide = absl::StrCat("loom_", DTypeName(from), "_to_f32(", arg, ")");
    return to == DType::kF32 ? wide : CastExpr(DType::kF32, to, wide);
  }
  if (from == DType::kF32) return absl::StrCat("loom_", DTypeName(to), "_from_f32(", arg, ")");
  return absl::StrCat("loom_", DTypeName(to), "_from_f64((double)", arg, ")");
}

// The casts to the sub-byte integers, as FloatToIntegerBits and SetInt
// convert: a float truncated, 0 outside the type's range; an integer's low
// bits, sign-extended for i4 and i2.
std::string SubByteIntegerCastExpr(DType from, DType to, const std::string& arg) {
  if (IsFloat(from)) {
    // One unsigned comparison for the range: GCC if-converts no && here.
    const std::string truncated = absl::StrCat("loom_f2i32(", arg, ")");
    return absl::StrCat("((uint32_t)", truncated, " - (uint32_t)", IntegerMinBits(to),
                        " <= ", IntegerMaxBits(to) - IntegerMinBits(to), "u ? (", CType(to), ")",
                        truncated, " : (", CType(to), ")0)");
  }
  if (IsUnsigned(to)) {
    return absl::StrCat("(", CType(to), ")((uint32_t)", arg, " & ", IntegerMaxBits(to), "u)");
  }
  const int unused = 32 - IntegerWidth(to);
  return absl::StrCat("(", CType(to), ")((int32_t)((uint32_t)", arg, " << ", unused, ") >> ",
                      unused, ")");
}

}  // namespace

std::string CastExpr(DType from, DType to, const std::string& arg) {
  if (IsNarrowFloat(from) || IsNarrowFloat(to)) return NarrowFloatCastExpr(from, to, arg);
  if (IsSubByteInteger(to)) return SubByteIntegerCastExpr(from, to, arg);
  if (to == DType::kBool) return absl::StrCat(arg, " != 0");
  if (IsFloat(from) && (to == DType::kI32 || to == DType::kI64)) {
    return absl::StrCat(to == DType::kI32 ? "loom_f2i32(" : "loom_f2i64(", arg, ")");
  }
  // The narrower and unsigned types: the interpreter's saturation
  // (ir/dtype.h: FloatToIntegerBits), as selects that vectorise.
  if (IsFloat(from) && IsInteger(to)) {
    return absl::StrCat("(", arg, " != ", arg, " ? (", CType(to), ")0 : ", arg,
                        " >= ", Literal(IntegerSaturationBound(to, true), from), " ? ",
                        IntegerLiteral(IntegerMaxBits(to), to), " : ", arg,
                        " <= ", Literal(IntegerSaturationBound(to, false), from), " ? ",
                        IntegerLiteral(IntegerMinBits(to), to), " : (", CType(to), ")", arg, ")");
  }
  return absl::StrCat("(", CType(to), ")", arg);
}

// The same order as ReduceUpdate, for two partial results: a NaN beats any
// number and ties with another NaN; among ties the first kinds keep the
// smaller position, the *Last kinds the larger. Max and min keep a NaN.
std::string ReduceTakesOther(ReduceKind kind, DType dtype, const std::string& a,
                             const std::string& ai, const std::string& b, const std::string& bi) {
  const bool is_float = IsFloat(dtype);
  const bool is_max =
      kind == ReduceKind::kMax || kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMaxLast;
  const char* better = is_max ? " > " : " < ";
  // `b` is strictly better than `a`.
  const std::string beats =
      is_float ? absl::StrCat("(", b, better, a, " || (", b, " != ", b, " && ", a, " == ", a, "))")
               : absl::StrCat(b, better, a);
  const std::string ties =
      is_float ? absl::StrCat("(", b, " == ", a, " || (", b, " != ", b, " && ", a, " != ", a, "))")
               : absl::StrCat(b, " == ", a);
  switch (kind) {
    case ReduceKind::kMax:
    case ReduceKind::kMin:
      return beats;
    case ReduceKind::kArgMax:
    case ReduceKind::kArgMin:
      return absl::StrCat(beats, " || (", ties, " && ", bi, " < ", ai, ")");
    case ReduceKind::kArgMaxLast:
    case ReduceKind::kArgMinLast:
      return absl::StrCat(beats, " || (", ties, " && ", bi, " > ", ai, ")");
    case ReduceKind::kSum:
    case ReduceKind::kProd:
    case ReduceKind::kVar:
    case ReduceKind::kNone:
      break;
  }
  return "false";
}

bool UsesNarrowFloats(const LoopProgram& program) {
  return absl::c_any_of(program.buffers,
                        [](const Buffer& buffer) { return IsNarrowFloat(buffer.dtype); }) ||
         absl::c_any_of(program.nodes, [](const ComputeNode& node) {
           return absl::c_any_of(node.body,
                                 [](const ScalarOp& op) { return IsNarrowFloat(op.dtype); });
         });
}

std::string ValueStepExpr(const ComputeNode& node, int i, int step_base, HelperSet& helpers,
                          FloatExp float_exp, LibmCalls* libm_calls) {
  const ScalarOp& op = node.body[i];
  auto temp = [&](int step) { return absl::StrCat("t", step_base + step); };
  switch (op.kind) {
    case ScalarOp::Kind::kConst:
      return ConstantExpr(op.constant, op.dtype);
    case ScalarOp::Kind::kCast:
      return CastExpr(node.body[op.args[0]].dtype, op.dtype, temp(op.args[0]));
    case ScalarOp::Kind::kCall: {
      std::vector<std::string> args;
      for (int arg : op.args) args.push_back(temp(arg));
      const DType operand_type = node.body[op.args.back()].dtype;
      return CallExpr(op.fn, op.dtype, operand_type, args, helpers, float_exp, libm_calls);
    }
    default:
      return "";
  }
}

}  // namespace loom::cscalar
