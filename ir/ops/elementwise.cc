// Pointwise ops with numpy broadcasting. Floats compute in double and are
// stored in the output dtype; signed integers compute exactly in int64 with
// two's-complement wrap-around (as the hardware does) and are then narrowed
// to the output dtype; unsigned ones likewise in uint64 (so that order,
// division and remainders are unsigned: a u64 may exceed INT64_MAX).
//
// Semantics worth stating:
// - div on integers truncates toward zero (C); a zero divisor is an error.
// - pow on integers is exact; a negative exponent gives 0, except for a base
//   of 1 (gives 1) or -1 (gives +1 or -1 by the exponent's parity). 0 to a
//   negative power is 0.
// - maximum and minimum propagate NaN (numpy).
// - mod: `fmod` 0 (default) gives the divisor's sign (Python, floor mod),
//   1 gives the dividend's sign (C fmod); an integer divisor of 0 is an error.
// - round is half to even (ONNX, numpy) and keeps the sign of a zero result;
//   sign(NaN) is NaN.
// - cast from float to int truncates toward zero, saturates at the target's
//   range and maps NaN to 0; between integers it wraps to the target's width
//   (C's conversion); cast to bool is (x != 0).
// - bit_shift shifts the first operand by the second (ONNX's BitShift,
//   version 28): right shifts of signed integers are arithmetic, left shifts
//   wrap (two's complement). A shift by the width of the type or more, or by
//   a negative amount, gives -1 for a right shift of a negative number and 0
//   otherwise.
// - bitwise_and, bitwise_or, bitwise_xor and bitwise_not act on the bits of
//   the integer type (two's complement for signed ones).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using FloatBinaryFn = double (*)(double, double);
using IntBinaryFn = int64_t (*)(int64_t, int64_t);
using FloatUnaryFn = double (*)(double);
using IntUnaryFn = int64_t (*)(int64_t);
using UIntBinaryFn = uint64_t (*)(uint64_t, uint64_t);
using UIntUnaryFn = uint64_t (*)(uint64_t);

int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }
int64_t WrapAdd(int64_t a, int64_t b) { return Wrap(uint64_t(a) + uint64_t(b)); }
int64_t WrapSub(int64_t a, int64_t b) { return Wrap(uint64_t(a) - uint64_t(b)); }
int64_t WrapMul(int64_t a, int64_t b) { return Wrap(uint64_t(a) * uint64_t(b)); }
int64_t WrapNeg(int64_t a) { return Wrap(0 - uint64_t(a)); }

// The divisor is known to be non-zero. INT64_MIN / -1 wraps to INT64_MIN.
int64_t IntDiv(int64_t a, int64_t b) { return b == -1 ? WrapNeg(a) : a / b; }

int64_t IntPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  uint64_t result = 1;
  uint64_t factor = static_cast<uint64_t>(base);
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result *= factor;
    factor *= factor;
  }
  return Wrap(result);
}

// Unsigned: the exponent is never negative.
uint64_t UIntPow(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result *= base;
    base *= base;
  }
  return result;
}
// The divisor is known to be non-zero; floor and trunc mod agree.
uint64_t UIntDiv(uint64_t a, uint64_t b) { return a / b; }
uint64_t UIntMod(uint64_t a, uint64_t b) { return a % b; }
uint64_t UIntMax(uint64_t a, uint64_t b) { return a < b ? b : a; }
uint64_t UIntMin(uint64_t a, uint64_t b) { return b < a ? b : a; }
uint64_t UIntIdentity(uint64_t x) { return x; }
uint64_t UIntSign(uint64_t x) { return x != 0; }

double FloatMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  return a < b ? b : a;
}
double FloatMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  return b < a ? b : a;
}
int64_t IntMax(int64_t a, int64_t b) { return a < b ? b : a; }
int64_t IntMin(int64_t a, int64_t b) { return b < a ? b : a; }

double Add(double a, double b) { return a + b; }
double Sub(double a, double b) { return a - b; }
double Mul(double a, double b) { return a * b; }
double Div(double a, double b) { return a / b; }
double Pow(double a, double b) { return std::pow(a, b); }

double FloatNeg(double x) { return -x; }
double FloatAbs(double x) { return std::fabs(x); }
double FloatRelu(double x) { return x < 0 ? 0.0 : x; }  // keeps NaN
int64_t IntAbs(int64_t x) { return x < 0 ? WrapNeg(x) : x; }
int64_t IntRelu(int64_t x) { return x < 0 ? 0 : x; }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Sqrt(double x) { return std::sqrt(x); }
double Rsqrt(double x) { return 1.0 / std::sqrt(x); }
double Reciprocal(double x) { return 1.0 / x; }
double Tanh(double x) { return std::tanh(x); }
double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Erf(double x) { return std::erf(x); }
double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }
double Floor(double x) { return std::floor(x); }
double Ceil(double x) { return std::ceil(x); }
double RoundHalfToEven(double x) {
  double rounded = std::floor(x);
  const double fraction = x - rounded;  // NaN for infinities: kept as is
  if (fraction > 0.5 || (fraction == 0.5 && std::fmod(rounded, 2.0) != 0)) {
    rounded += 1;
  }
  // A non-zero result already has x's sign; a zero one (-0.3) takes it.
  return std::copysign(rounded, x);
}
double FloatSign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
int64_t IntSign(int64_t x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

// The divisor's sign (Python's %).
double FloatFloorMod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}
double FloatTruncMod(double a, double b) { return std::fmod(a, b); }
// The divisor is known to be non-zero; x % -1 is 0 (INT64_MIN % -1 would
// overflow in C).
int64_t IntFloorMod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}
int64_t IntTruncMod(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

template <typename T>
struct LogicalAnd {
  bool operator()(T a, T b) const { return a && b; }
};
template <typename T>
struct LogicalOr {
  bool operator()(T a, T b) const { return a || b; }
};
template <typename T>
struct LogicalXor {
  bool operator()(T a, T b) const { return (a != 0) != (b != 0); }
};

// Broadcasts inputs [0, n) together, after checking they share a dtype of
// class `accepted`.
absl::StatusOr<Shape> BroadcastInputs(absl::Span<const TensorType> inputs, DTypeClass accepted) {
  Shape shape;
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    if (i > 0) {
      LOOM_RETURN_IF_ERROR(CheckSameDType(inputs, 0, i));
    }
    // Most operands have the shape broadcast so far: that needs no copy.
    if (i > 0 && inputs[i].shape == shape) continue;
    LOOM_ASSIGN_OR_RETURN(Shape broadcast, BroadcastShapes(shape, inputs[i].shape));
    shape = std::move(broadcast);
  }
  LOOM_RETURN_IF_ERROR(CheckDType(inputs[0].dtype, accepted, 0));
  return shape;
}

ShapeFn BroadcastShapeFn(DTypeClass accepted, bool bool_output) {
  return [accepted, bool_output](const Node&,
                                 absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_ASSIGN_OR_RETURN(Shape shape, BroadcastInputs(in, accepted));
    const DType dtype = bool_output ? DType::kBool : in[0].dtype;
    return OneOutput(dtype, std::move(shape));
  };
}

ShapeFn SameTypeShapeFn(DTypeClass accepted) {
  return [accepted](const Node&, absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, accepted, 0));
    return OneOutput(in[0]);
  };
}

absl::Status CheckNoZeroDivisor(const Tensor& divisor, const Tensor& out) {
  // With a non-empty output every divisor element is used.
  if (!IsInteger(divisor.dtype()) || out.num_elements() == 0) {
    return absl::OkStatus();
  }
  for (int64_t i = 0; i < divisor.num_elements(); ++i) {
    if (divisor.GetInt(i) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("integer division by zero (divisor element ", i, ")"));
    }
  }
  return absl::OkStatus();
}

// How a binary op computes per dtype: `on_uint` is for unsigned integers,
// null where the two's-complement `on_int` gives the same bits (add, sub,
// mul).
struct BinaryFns {
  FloatBinaryFn on_float;
  IntBinaryFn on_int;
  UIntBinaryFn on_uint = nullptr;
};

// `integer_division`: a zero integer divisor is an error, not a crash.
absl::Status EvalArithmetic(absl::Span<const Tensor* const> in, Tensor& result,
                            const BinaryFns& fns, bool integer_division) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (integer_division) {
    LOOM_RETURN_IF_ERROR(CheckNoZeroDivisor(b, result));
  }
  if (IsFloat(result.dtype())) {
    ForEachBroadcast(in, result, [&](int64_t i, const StridedWalk& w) {
      result.SetDouble(i, fns.on_float(a.GetDouble(w.offset(0)), b.GetDouble(w.offset(1))));
    });
  } else if (IsUnsigned(result.dtype()) && fns.on_uint != nullptr) {
    ForEachBroadcast(in, result, [&](int64_t i, const StridedWalk& w) {
      result.SetInt(
          i, static_cast<int64_t>(fns.on_uint(static_cast<uint64_t>(a.GetInt(w.offset(0))),
                                              static_cast<uint64_t>(b.GetInt(w.offset(1))))));
    });
  } else {
    ForEachBroadcast(in, result, [&](int64_t i, const StridedWalk& w) {
      result.SetInt(i, fns.on_int(a.GetInt(w.offset(0)), b.GetInt(w.offset(1))));
    });
  }
  return absl::OkStatus();
}

OpDef ArithmeticOp(std::string name, BinaryFns fns, bool integer_division = false) {
  EvalFn eval = [fns, integer_division](const Node&, absl::Span<const Tensor* const> in,
                                        absl::Span<Tensor> out) {
    return EvalArithmetic(in, out[0], fns, integer_division);
  };
  return WithPattern(FixedArityOp(std::move(name), 2, {},
                                  BroadcastShapeFn(DTypeClass::kNumeric, false), std::move(eval)),
                     OpPattern::kBroadcast);
}

// mod's `fmod` attribute: false for floor mod (default), true for C fmod.
absl::StatusOr<bool> ModIsFmod(const Node& node) {
  const int64_t fmod = node.attrs.GetInt("fmod", 0);
  if (fmod != 0 && fmod != 1) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'fmod' must be 0 or 1, got ", fmod));
  }
  return fmod == 1;
}

// A broadcasting op's shape function for inputs of class `accepted`, after
// `read_attr` has accepted the node's attribute.
ShapeFn BroadcastWithAttr(DTypeClass accepted, absl::StatusOr<bool> (*read_attr)(const Node&)) {
  const ShapeFn broadcast = BroadcastShapeFn(accepted, false);
  return [broadcast, read_attr](const Node& node,
                                absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_RETURN_IF_ERROR(read_attr(node).status());
    return broadcast(node, in);
  };
}

OpDef ModOp() {
  ShapeFn infer = BroadcastWithAttr(DTypeClass::kNumeric, ModIsFmod);
  EvalFn eval = [](const Node& node, absl::Span<const Tensor* const> in,
                   absl::Span<Tensor> out) -> absl::Status {
    LOOM_ASSIGN_OR_RETURN(bool fmod, ModIsFmod(node));
    return fmod ? EvalArithmetic(in, out[0], {FloatTruncMod, IntTruncMod, UIntMod}, true)
                : EvalArithmetic(in, out[0], {FloatFloorMod, IntFloorMod, UIntMod}, true);
  };
  return WithPattern(
      FixedArityOp("mod", 2, {{"fmod", AttrType::kInt, false}}, std::move(infer), std::move(eval)),
      OpPattern::kBroadcast);
}

// `on_int` is null for float-only ops; `on_uint` for unsigned integers, null
// where `on_int` gives the same bits (neg).
OpDef UnaryOp(std::string name, FloatUnaryFn on_float, IntUnaryFn on_int,
              UIntUnaryFn on_uint = nullptr) {
  EvalFn eval = [on_float, on_int, on_uint](const Node&, absl::Span<const Tensor* const> in,
                                            absl::Span<Tensor> out) {
    const Tensor& x = *in[0];
    Tensor& result = out[0];
    const bool is_float = IsFloat(x.dtype());
    const bool is_unsigned = IsUnsigned(x.dtype()) && on_uint != nullptr;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (is_float) {
        result.SetDouble(i, on_float(x.GetDouble(i)));
      } else if (is_unsigned) {
        result.SetInt(i, static_cast<int64_t>(on_uint(static_cast<uint64_t>(x.GetInt(i)))));
      } else {
        result.SetInt(i, on_int(x.GetInt(i)));
      }
    }
    return absl::OkStatus();
  };
  const DTypeClass accepted = on_int == nullptr ? DTypeClass::kFloat : DTypeClass::kNumeric;
  return WithPattern(
      FixedArityOp(std::move(name), 1, {}, SameTypeShapeFn(accepted), std::move(eval)),
      OpPattern::kElementwise);
}

// Floats compare as doubles, signed integers and bools as int64, unsigned
// integers as uint64: all exact.
template <template <typename> class Compare>
OpDef ComparisonOp(std::string name, DTypeClass accepted) {
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const bool is_float = IsFloat(a.dtype());
    const bool is_unsigned = IsUnsigned(a.dtype());
    bool* result = out[0].data_as<bool>();
    ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
      if (is_float) {
        result[i] = Compare<double>()(a.GetDouble(w.offset(0)), b.GetDouble(w.offset(1)));
      } else if (is_unsigned) {
        result[i] = Compare<uint64_t>()(static_cast<uint64_t>(a.GetInt(w.offset(0))),
                                        static_cast<uint64_t>(b.GetInt(w.offset(1))));
      } else {
        result[i] = Compare<int64_t>()(a.GetInt(w.offset(0)), b.GetInt(w.offset(1)));
      }
    });
    return absl::OkStatus();
  };
  return WithPattern(
      Exact(FixedArityOp(std::move(name), 2, {}, BroadcastShapeFn(accepted, /*bool_output=*/true),
                         std::move(eval))),
      OpPattern::kBroadcast);
}

OpDef LogicalNotOp() {
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    const bool* x = in[0]->data_as<bool>();
    bool* result = out[0].data_as<bool>();
    for (int64_t i = 0; i < out[0].num_elements(); ++i) result[i] = !x[i];
    return absl::OkStatus();
  };
  return WithPattern(Exact(FixedArityOp("logical_not", 1, {}, SameTypeShapeFn(DTypeClass::kBool),
                                        std::move(eval))),
                     OpPattern::kElementwise);
}

OpDef WhereOp() {
  ShapeFn infer = [](const Node&, absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kBool, 0));
    LOOM_RETURN_IF_ERROR(CheckSameDType(in, 1, 2));
    Shape shape;
    for (const TensorType& type : in) {
      LOOM_ASSIGN_OR_RETURN(Shape broadcast, BroadcastShapes(shape, type.shape));
      shape = std::move(broadcast);
    }
    return OneOutput(in[1].dtype, std::move(shape));
  };
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    const bool* cond = in[0]->data_as<bool>();
    ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
      const int chosen = cond[w.offset(0)] ? 1 : 2;
      CopyElement(*in[chosen], w.offset(chosen), out[0], i);
    });
    return absl::OkStatus();
  };
  return WithPattern(Exact(FixedArityOp("where", 3, {}, std::move(infer), std::move(eval))),
                     OpPattern::kBroadcast);
}

void CastElement(const Tensor& x, int64_t i, Tensor& result) {
  const DType from = x.dtype();
  const DType to = result.dtype();
  if (to == DType::kBool) {
    result.SetInt(i, IsFloat(from) ? x.GetDouble(i) != 0 : x.GetInt(i) != 0);
  } else if (IsInteger(to)) {
    result.SetInt(i, IsFloat(from) ? FloatToIntegerBits(x.GetDouble(i), to) : x.GetInt(i));
  } else if (IsFloat(from)) {
    result.SetDouble(i, x.GetDouble(i));
  } else if (to == DType::kF32) {
    // Straight from the integer, not through double: one rounding, not two.
    const int64_t bits = x.GetInt(i);
    result.data_as<float>()[i] = from == DType::kU64
                                     ? static_cast<float>(static_cast<uint64_t>(bits))
                                     : static_cast<float>(bits);
  } else {
    result.SetDouble(i, IntegerBitsToDouble(x.GetInt(i), from));
  }
}

// bit_shift's `direction`: true for "left", false for "right".
absl::StatusOr<bool> ShiftsLeft(const Node& node) {
  const std::string direction = node.attrs.GetString("direction", "");
  if (direction != "left" && direction != "right") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'direction' must be \"left\" or \"right\", got \"", direction, "\""));
  }
  return direction == "left";
}

// `x` shifted by `by` (both int64 bits of a type `width` bits wide, as
// GetInt reads them); SetInt wraps the result to the width. C leaves shifts
// by the width or more, or by a negative amount, undefined.
int64_t ShiftBits(int64_t x, int64_t by, bool left, bool is_unsigned, int64_t width) {
  if (is_unsigned) {
    const uint64_t ux = static_cast<uint64_t>(x);
    const uint64_t uby = static_cast<uint64_t>(by);  // a u64 amount may exceed INT64_MAX
    if (uby >= static_cast<uint64_t>(width)) return 0;
    return Wrap(left ? ux << uby : ux >> uby);
  }
  if (by < 0 || by >= width) return !left && x < 0 ? -1 : 0;
  // x is sign-extended: >> is arithmetic (GCC and Clang have always done so;
  // C++20 requires it), and the bits shifted past the type's sign bit wrap.
  return left ? Wrap(static_cast<uint64_t>(x) << by) : x >> by;
}

// On integers of the same dtype.
OpDef BitShiftOp() {
  ShapeFn infer = BroadcastWithAttr(DTypeClass::kInteger, ShiftsLeft);
  EvalFn eval = [](const Node& node, absl::Span<const Tensor* const> in,
                   absl::Span<Tensor> out) -> absl::Status {
    LOOM_ASSIGN_OR_RETURN(bool left, ShiftsLeft(node));
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const bool is_unsigned = IsUnsigned(a.dtype());
    const int64_t width = 8 * DTypeSize(a.dtype());
    ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
      out[0].SetInt(
          i, ShiftBits(a.GetInt(w.offset(0)), b.GetInt(w.offset(1)), left, is_unsigned, width));
    });
    return absl::OkStatus();
  };
  return WithPattern(Exact(FixedArityOp("bit_shift", 2, {{"direction", AttrType::kString, true}},
                                        std::move(infer), std::move(eval))),
                     OpPattern::kBroadcast);
}

// The bitwise ops act on int64 bits alike for signed and unsigned types
// (SetInt wraps the result to the width).
template <template <typename> class Bitwise>
OpDef BitwiseOp(std::string name) {
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
      out[0].SetInt(i, Bitwise<int64_t>()(a.GetInt(w.offset(0)), b.GetInt(w.offset(1))));
    });
    return absl::OkStatus();
  };
  return WithPattern(
      Exact(FixedArityOp(std::move(name), 2, {}, BroadcastShapeFn(DTypeClass::kInteger, false),
                         std::move(eval))),
      OpPattern::kBroadcast);
}

OpDef BitwiseNotOp() {
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    for (int64_t i = 0; i < out[0].num_elements(); ++i) out[0].SetInt(i, ~in[0]->GetInt(i));
    return absl::OkStatus();
  };
  return WithPattern(Exact(FixedArityOp("bitwise_not", 1, {}, SameTypeShapeFn(DTypeClass::kInteger),
                                        std::move(eval))),
                     OpPattern::kElementwise);
}

OpDef CastOp() {
  ShapeFn infer = [](const Node& node,
                     absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    absl::StatusOr<DType> to = DTypeFromName(node.attrs.GetString("to", ""));
    if (!to.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'to': ", to.status().message()));
    }
    return OneOutput(*to, in[0].shape);
  };
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    for (int64_t i = 0; i < out[0].num_elements(); ++i) {
      CastElement(*in[0], i, out[0]);
    }
    return absl::OkStatus();
  };
  OpDef cast =
      FixedArityOp("cast", 1, {{"to", AttrType::kString, true}}, std::move(infer), std::move(eval));
  cast.dtype_attrs = {"to"};
  cast.rounding_ulps = 1;  // narrowing to f32 rounds once
  cast.pattern = OpPattern::kElementwise;
  return cast;
}

// bit_cast: each element's bits read as attribute `to`'s type, of the same
// width (ONNX's BitCast). A bool holds one byte, 0 or 1: read as a bool, a
// nonzero byte is true. The 4- and 2-bit types are held a byte each (an
// integer's value extended, f4e2m1's bits): their low bits are read.
OpDef BitCastOp() {
  ShapeFn infer = [](const Node& node,
                     absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    absl::StatusOr<DType> to = DTypeFromName(node.attrs.GetString("to", ""));
    if (!to.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'to': ", to.status().message()));
    }
    if (ValueBits(*to) != ValueBits(in[0].dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot reinterpret ", DTypeName(in[0].dtype), " (", ValueBits(in[0].dtype),
                       " bits) as ", DTypeName(*to), " (", ValueBits(*to), " bits)"));
    }
    return OneOutput(*to, in[0].shape);
  };
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    const int bits = ValueBits(x.dtype());
    if (bits >= 8) {
      std::memcpy(y.data(), x.data(), x.num_bytes());
    } else {
      // SetInt extends the low bits as y's type holds them.
      const uint8_t mask = (1 << bits) - 1;
      for (int64_t i = 0; i < y.num_elements(); ++i) {
        const uint8_t value = x.data_as<uint8_t>()[i] & mask;
        if (IsInteger(y.dtype())) {
          y.SetInt(i, value);
        } else {
          y.data_as<uint8_t>()[i] = value;
        }
      }
    }
    if (y.dtype() == DType::kBool) {
      uint8_t* bytes = y.data_as<uint8_t>();
      for (int64_t i = 0; i < y.num_elements(); ++i) bytes[i] = bytes[i] != 0;
    }
    return absl::OkStatus();
  };
  OpDef def = FixedArityOp("bit_cast", 1, {{"to", AttrType::kString, true}}, std::move(infer),
                           std::move(eval));
  def.rounding_ulps = 0;  // exact: the bits are kept
  def.pattern = OpPattern::kElementwise;
  return def;
}

}  // namespace

absl::Status RegisterElementwiseOps(OpRegistry& registry) {
  constexpr DTypeClass kNumeric = DTypeClass::kNumeric;
  constexpr DTypeClass kAny = DTypeClass::kAny;
  constexpr DTypeClass kBool = DTypeClass::kBool;
  return RegisterAll(registry,
                     {
                         ArithmeticOp("add", {Add, WrapAdd}),
                         ArithmeticOp("sub", {Sub, WrapSub}),
                         ArithmeticOp("mul", {Mul, WrapMul}),
                         ArithmeticOp("div", {Div, IntDiv, UIntDiv}, /*integer_division=*/true),
                         ArithmeticOp("pow", {Pow, IntPow, UIntPow}),
                         Exact(ArithmeticOp("maximum", {FloatMax, IntMax, UIntMax})),
                         Exact(ArithmeticOp("minimum", {FloatMin, IntMin, UIntMin})),
                         ModOp(),
                         BitShiftOp(),
                         BitwiseOp<std::bit_and>("bitwise_and"),
                         BitwiseOp<std::bit_or>("bitwise_or"),
                         BitwiseOp<std::bit_xor>("bitwise_xor"),
                         BitwiseNotOp(),
                         Exact(UnaryOp("neg", FloatNeg, WrapNeg)),
                         Exact(UnaryOp("abs", FloatAbs, IntAbs, UIntIdentity)),
                         Exact(UnaryOp("relu", FloatRelu, IntRelu, UIntIdentity)),
                         UnaryOp("exp", Exp, nullptr),
                         UnaryOp("log", Log, nullptr),
                         UnaryOp("sqrt", Sqrt, nullptr),
                         UnaryOp("rsqrt", Rsqrt, nullptr),
                         UnaryOp("reciprocal", Reciprocal, nullptr),
                         UnaryOp("tanh", Tanh, nullptr),
                         UnaryOp("sigmoid", Sigmoid, nullptr),
                         WithRoundingUlps(UnaryOp("erf", Erf, nullptr), 16),
                         UnaryOp("sin", Sin, nullptr),
                         UnaryOp("cos", Cos, nullptr),
                         Exact(UnaryOp("floor", Floor, nullptr)),
                         Exact(UnaryOp("ceil", Ceil, nullptr)),
                         Exact(UnaryOp("round", RoundHalfToEven, nullptr)),
                         Exact(UnaryOp("sign", FloatSign, IntSign, UIntSign)),
                         ComparisonOp<std::equal_to>("equal", kAny),
                         ComparisonOp<std::not_equal_to>("not_equal", kAny),
                         ComparisonOp<std::less>("less", kNumeric),
                         ComparisonOp<std::less_equal>("less_equal", kNumeric),
                         ComparisonOp<std::greater>("greater", kNumeric),
                         ComparisonOp<std::greater_equal>("greater_equal", kNumeric),
                         LogicalNotOp(),
                         ComparisonOp<LogicalAnd>("logical_and", kBool),
                         ComparisonOp<LogicalOr>("logical_or", kBool),
                         ComparisonOp<LogicalXor>("logical_xor", kBool),
                         WhereOp(),
                         CastOp(),
                         BitCastOp(),
                     });
}

}  // namespace loom
