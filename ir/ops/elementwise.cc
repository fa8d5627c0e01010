// Pointwise ops with numpy broadcasting. Floats compute in double and are
// stored in the output dtype; integers compute exactly in int64 with
// two's-complement wrap-around (as the hardware does) and are then narrowed
// to the output dtype.
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
//   range and maps NaN to 0; cast to bool is (x != 0).
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"

namespace loom {
namespace {

using FloatBinaryFn = double (*)(double, double);
using IntBinaryFn = int64_t (*)(int64_t, int64_t);
using FloatUnaryFn = double (*)(double);
using IntUnaryFn = int64_t (*)(int64_t);

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }
int64_t WrapAdd(int64_t a, int64_t b) {
  return Wrap(uint64_t(a) + uint64_t(b));
}
int64_t WrapSub(int64_t a, int64_t b) {
  return Wrap(uint64_t(a) - uint64_t(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return Wrap(uint64_t(a) * uint64_t(b));
}
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
bool LogicalAnd(T a, T b) {
  return a && b;
}
template <typename T>
bool LogicalOr(T a, T b) {
  return a || b;
}
template <typename T>
bool LogicalXor(T a, T b) {
  return (a != 0) != (b != 0);
}
template <typename T>
bool Equal(T a, T b) {
  return a == b;
}
template <typename T>
bool NotEqual(T a, T b) {
  return a != b;
}
template <typename T>
bool Less(T a, T b) {
  return a < b;
}
template <typename T>
bool LessEqual(T a, T b) {
  return a <= b;
}
template <typename T>
bool Greater(T a, T b) {
  return a > b;
}
template <typename T>
bool GreaterEqual(T a, T b) {
  return a >= b;
}

// Broadcasts inputs [0, n) together, after checking they share a dtype of
// class `accepted`.
absl::StatusOr<Shape> BroadcastInputs(absl::Span<const TensorType> inputs,
                                      DTypeClass accepted) {
  Shape shape;
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
    if (i > 0) {
      absl::Status same = CheckSameDType(inputs, 0, i);
      if (!same.ok()) return same;
    }
    // Most operands have the shape broadcast so far: that needs no copy.
    if (i > 0 && inputs[i].shape == shape) continue;
    absl::StatusOr<Shape> broadcast = BroadcastShapes(shape, inputs[i].shape);
    if (!broadcast.ok()) return broadcast.status();
    shape = *std::move(broadcast);
  }
  absl::Status dtype = CheckDType(inputs[0].dtype, accepted, 0);
  if (!dtype.ok()) return dtype;
  return shape;
}

ShapeFn BroadcastShapeFn(DTypeClass accepted, bool bool_output) {
  return [accepted, bool_output](
             const Node&,
             absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    absl::StatusOr<Shape> shape = BroadcastInputs(in, accepted);
    if (!shape.ok()) return shape.status();
    const DType dtype = bool_output ? DType::kBool : in[0].dtype;
    return OneOutput(dtype, *std::move(shape));
  };
}

ShapeFn SameTypeShapeFn(DTypeClass accepted) {
  return [accepted](
             const Node&,
             absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    absl::Status dtype = CheckDType(in[0].dtype, accepted, 0);
    if (!dtype.ok()) return dtype;
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

// `integer_division`: a zero integer divisor is an error, not a crash.
absl::Status EvalArithmetic(absl::Span<const Tensor* const> in, Tensor& result,
                            FloatBinaryFn on_float, IntBinaryFn on_int,
                            bool integer_division) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (integer_division) {
    absl::Status divisor = CheckNoZeroDivisor(b, result);
    if (!divisor.ok()) return divisor;
  }
  if (IsFloat(result.dtype())) {
    ForEachBroadcast(in, result, [&](int64_t i, const StridedWalk& w) {
      result.SetDouble(
          i, on_float(a.GetDouble(w.offset(0)), b.GetDouble(w.offset(1))));
    });
  } else {
    ForEachBroadcast(in, result, [&](int64_t i, const StridedWalk& w) {
      result.SetInt(i, on_int(a.GetInt(w.offset(0)), b.GetInt(w.offset(1))));
    });
  }
  return absl::OkStatus();
}

OpDef ArithmeticOp(std::string name, FloatBinaryFn on_float, IntBinaryFn on_int,
                   bool integer_division = false) {
  EvalFn eval = [on_float, on_int, integer_division](
                    const Node&, absl::Span<const Tensor* const> in,
                    absl::Span<Tensor> out) {
    return EvalArithmetic(in, out[0], on_float, on_int, integer_division);
  };
  return FixedArityOp(std::move(name), 2, {},
                      BroadcastShapeFn(DTypeClass::kNumeric, false),
                      std::move(eval));
}

// mod's `fmod` attribute: false for floor mod (default), true for C fmod.
absl::StatusOr<bool> ModIsFmod(const Node& node) {
  const int64_t fmod = node.attrs.GetInt("fmod", 0);
  if (fmod != 0 && fmod != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'fmod' must be 0 or 1, got ", fmod));
  }
  return fmod == 1;
}

OpDef ModOp() {
  const ShapeFn broadcast = BroadcastShapeFn(DTypeClass::kNumeric, false);
  ShapeFn infer = [broadcast](const Node& node, absl::Span<const TensorType> in)
      -> absl::StatusOr<OutputTypes> {
    absl::StatusOr<bool> fmod = ModIsFmod(node);
    if (!fmod.ok()) return fmod.status();
    return broadcast(node, in);
  };
  EvalFn eval = [](const Node& node, absl::Span<const Tensor* const> in,
                   absl::Span<Tensor> out) -> absl::Status {
    absl::StatusOr<bool> fmod = ModIsFmod(node);
    if (!fmod.ok()) return fmod.status();
    return *fmod ? EvalArithmetic(in, out[0], FloatTruncMod, IntTruncMod, true)
                 : EvalArithmetic(in, out[0], FloatFloorMod, IntFloorMod, true);
  };
  return FixedArityOp("mod", 2, {{"fmod", AttrType::kInt, false}},
                      std::move(infer), std::move(eval));
}

// `on_int` is null for float-only ops.
OpDef UnaryOp(std::string name, FloatUnaryFn on_float, IntUnaryFn on_int) {
  EvalFn eval = [on_float, on_int](const Node&,
                                   absl::Span<const Tensor* const> in,
                                   absl::Span<Tensor> out) {
    const Tensor& x = *in[0];
    Tensor& result = out[0];
    const bool is_float = IsFloat(x.dtype());
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      if (is_float) {
        result.SetDouble(i, on_float(x.GetDouble(i)));
      } else {
        result.SetInt(i, on_int(x.GetInt(i)));
      }
    }
    return absl::OkStatus();
  };
  const DTypeClass accepted =
      on_int == nullptr ? DTypeClass::kFloat : DTypeClass::kNumeric;
  return FixedArityOp(std::move(name), 1, {}, SameTypeShapeFn(accepted),
                      std::move(eval));
}

// Floats compare as doubles, integers and bools as int64: both exact.
OpDef ComparisonOp(std::string name, DTypeClass accepted,
                   bool (*on_float)(double, double),
                   bool (*on_int)(int64_t, int64_t)) {
  EvalFn eval = [on_float, on_int](const Node&,
                                   absl::Span<const Tensor* const> in,
                                   absl::Span<Tensor> out) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const bool is_float = IsFloat(a.dtype());
    bool* result = out[0].data_as<bool>();
    ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
      result[i] =
          is_float
              ? on_float(a.GetDouble(w.offset(0)), b.GetDouble(w.offset(1)))
              : on_int(a.GetInt(w.offset(0)), b.GetInt(w.offset(1)));
    });
    return absl::OkStatus();
  };
  return Exact(FixedArityOp(std::move(name), 2, {},
                            BroadcastShapeFn(accepted, /*bool_output=*/true),
                            std::move(eval)));
}

OpDef LogicalNotOp() {
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in,
                   absl::Span<Tensor> out) {
    const bool* x = in[0]->data_as<bool>();
    bool* result = out[0].data_as<bool>();
    for (int64_t i = 0; i < out[0].num_elements(); ++i) result[i] = !x[i];
    return absl::OkStatus();
  };
  return Exact(FixedArityOp("logical_not", 1, {}, SameTypeShapeFn(DTypeClass::kBool),
                            std::move(eval)));
}

OpDef WhereOp() {
  ShapeFn infer =
      [](const Node&,
         absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    absl::Status cond = CheckDType(in[0].dtype, DTypeClass::kBool, 0);
    if (!cond.ok()) return cond;
    absl::Status same = CheckSameDType(in, 1, 2);
    if (!same.ok()) return same;
    Shape shape;
    for (const TensorType& type : in) {
      absl::StatusOr<Shape> broadcast = BroadcastShapes(shape, type.shape);
      if (!broadcast.ok()) return broadcast.status();
      shape = *std::move(broadcast);
    }
    return OneOutput(in[1].dtype, std::move(shape));
  };
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in,
                   absl::Span<Tensor> out) {
    const bool* cond = in[0]->data_as<bool>();
    ForEachBroadcast(in, out[0], [&](int64_t i, const StridedWalk& w) {
      const int chosen = cond[w.offset(0)] ? 1 : 2;
      CopyElement(*in[chosen], w.offset(chosen), out[0], i);
    });
    return absl::OkStatus();
  };
  return Exact(FixedArityOp("where", 3, {}, std::move(infer), std::move(eval)));
}

// Truncates toward zero, saturating at the range of `to` (i32 or i64).
int64_t FloatToInt(double x, DType to) {
  if (std::isnan(x)) return 0;
  const bool narrow = to == DType::kI32;
  const double limit = narrow ? 2147483648.0 : 9223372036854775808.0;
  if (x >= limit) {
    return narrow ? std::numeric_limits<int32_t>::max()
                  : std::numeric_limits<int64_t>::max();
  }
  if (x <= -limit) {
    return narrow ? std::numeric_limits<int32_t>::min() : kInt64Min;
  }
  return static_cast<int64_t>(x);
}

void CastElement(const Tensor& x, int64_t i, Tensor& result) {
  const DType from = x.dtype();
  const DType to = result.dtype();
  if (to == DType::kBool) {
    result.SetInt(i, IsFloat(from) ? x.GetDouble(i) != 0 : x.GetInt(i) != 0);
  } else if (IsInteger(to)) {
    result.SetInt(i,
                  IsFloat(from) ? FloatToInt(x.GetDouble(i), to) : x.GetInt(i));
  } else if (IsFloat(from)) {
    result.SetDouble(i, x.GetDouble(i));
  } else if (to == DType::kF32) {
    // Straight from int64, not through double: one rounding, not two.
    result.data_as<float>()[i] = static_cast<float>(x.GetInt(i));
  } else {
    result.SetDouble(i, static_cast<double>(x.GetInt(i)));
  }
}

OpDef CastOp() {
  ShapeFn infer =
      [](const Node& node,
         absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    absl::StatusOr<DType> to = DTypeFromName(node.attrs.GetString("to", ""));
    if (!to.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'to': ", to.status().message()));
    }
    return OneOutput(*to, in[0].shape);
  };
  EvalFn eval = [](const Node&, absl::Span<const Tensor* const> in,
                   absl::Span<Tensor> out) {
    for (int64_t i = 0; i < out[0].num_elements(); ++i) {
      CastElement(*in[0], i, out[0]);
    }
    return absl::OkStatus();
  };
  OpDef cast = FixedArityOp("cast", 1, {{"to", AttrType::kString, true}},
                            std::move(infer), std::move(eval));
  cast.dtype_attrs = {"to"};
  cast.rounding_ulps = 1;  // narrowing to f32 rounds once
  return cast;
}

}  // namespace

absl::Status RegisterElementwiseOps(OpRegistry& registry) {
  constexpr DTypeClass kNumeric = DTypeClass::kNumeric;
  constexpr DTypeClass kAny = DTypeClass::kAny;
  constexpr DTypeClass kBool = DTypeClass::kBool;
  return RegisterAll(
      registry,
      {
          ArithmeticOp("add", Add, WrapAdd),
          ArithmeticOp("sub", Sub, WrapSub),
          ArithmeticOp("mul", Mul, WrapMul),
          ArithmeticOp("div", Div, IntDiv, /*integer_division=*/true),
          ArithmeticOp("pow", Pow, IntPow),
          Exact(ArithmeticOp("maximum", FloatMax, IntMax)),
          Exact(ArithmeticOp("minimum", FloatMin, IntMin)),
          ModOp(),
          Exact(UnaryOp("neg", FloatNeg, WrapNeg)),
          Exact(UnaryOp("abs", FloatAbs, IntAbs)),
          Exact(UnaryOp("relu", FloatRelu, IntRelu)),
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
          Exact(UnaryOp("sign", FloatSign, IntSign)),
          ComparisonOp("equal", kAny, Equal<double>, Equal<int64_t>),
          ComparisonOp("not_equal", kAny, NotEqual<double>, NotEqual<int64_t>),
          ComparisonOp("less", kNumeric, Less<double>, Less<int64_t>),
          ComparisonOp("less_equal", kNumeric, LessEqual<double>,
                       LessEqual<int64_t>),
          ComparisonOp("greater", kNumeric, Greater<double>, Greater<int64_t>),
          ComparisonOp("greater_equal", kNumeric, GreaterEqual<double>,
                       GreaterEqual<int64_t>),
          LogicalNotOp(),
          ComparisonOp("logical_and", kBool, LogicalAnd<double>,
                       LogicalAnd<int64_t>),
          ComparisonOp("logical_or", kBool, LogicalOr<double>,
                       LogicalOr<int64_t>),
          ComparisonOp("logical_xor", kBool, LogicalXor<double>,
                       LogicalXor<int64_t>),
          WhereOp(),
          CastOp(),
      });
}

}  // namespace loom
