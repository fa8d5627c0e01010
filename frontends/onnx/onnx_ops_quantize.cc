// ONNX's quantization ops as loom ops that follow ONNX's formulas term by
// term: QuantizeLinear and DequantizeLinear (per tensor, per axis and
// blocked, through opset 28), DynamicQuantizeLinear, and the integer
// products MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
//
// Integers are rounded half to even and saturated at the range of their
// type; integer products accumulate exactly and wrap at 32 bits, as ONNX
// allows ("accumulation may overflow if and only if in 32 bits").
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// The 8- and 4-bit floats that values are quantized to (not f8e8m0, a
// power of two, which only scales).
bool IsQuantizedFloat(DType dtype) {
  return IsNarrowFloat(dtype) && !IsHalfFloat(dtype) && dtype != DType::kF8E8M0;
}

// A type in which a quotient or product of `dtype`'s values is computed:
// `dtype`, but f32 for the types of 8 bits or fewer (an f8e8m0 scale).
DType ArithmeticType(DType dtype) { return DTypeSize(dtype) >= 2 ? dtype : ComputeType(dtype); }

// An optional INT attribute that names an element type (output_dtype,
// precision): the type, or nullopt when it is absent or 0 (UNDEFINED, the
// schema's default).
absl::StatusOr<std::optional<DType>> DTypeAttr(NodeContext& ctx, absl::string_view name) {
  const int64_t elem_type = ctx.Int(name, 0);
  if (elem_type == 0) return std::optional<DType>();
  LOOM_ASSIGN_OR_RETURN(DType dtype,
                        DTypeFromOnnx(static_cast<int32_t>(elem_type),
                                      absl::StrCat(ctx.label(), " attribute '", name, "'")));
  return std::optional<DType>(dtype);
}

// --- quantization parameters ----------------------------------------------

// How QuantizeLinear's and DequantizeLinear's scale and zero point apply to
// x: one element for all of x; a 1-D tensor of x.shape[axis] elements,
// one per index along `axis`; or, with block_size B > 0, x's shape but
// ceil(x.shape[axis] / B) along `axis`, each entry shared by B consecutive
// indices (the last block may be shorter).
struct Granularity {
  int64_t axis = 1;  // as the attribute gives it; checked where it is used
  int64_t block_size = 0;
};

absl::StatusOr<Granularity> ReadGranularity(const NodeContext& ctx) {
  Granularity g{ctx.Int("axis", 1), ctx.Int("block_size", 0)};
  if (g.block_size < 0) {
    return ctx.Refuse(
        absl::StrCat("attribute 'block_size' ", g.block_size, " must be positive (or 0: none)"));
  }
  return g;
}

// Blocked `param` repeated along the axis: a gather of entry i / B for each
// index i of x.
absl::StatusOr<ValueId> ExpandBlocks(NodeContext& ctx, ValueId param, const Shape& x, int64_t axis,
                                     int64_t block_size, absl::string_view what) {
  const Shape shape = ctx.TypeOf(param).shape;
  Shape expected = x;
  expected[axis] = (x[axis] + block_size - 1) / block_size;
  if (shape != expected) {
    return ctx.Refuse(absl::StrCat(what, " must have shape ", ShapeToString(expected),
                                   " (blocks of ", block_size, " along axis ", axis, " of ",
                                   ShapeToString(x), "), got ", ShapeToString(shape)));
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({x[axis]}));
  Tensor indices(DType::kI64, {x[axis]});
  for (int64_t i = 0; i < x[axis]; ++i) indices.SetInt(i, i / block_size);
  return ctx.Emit("gather", {param, ctx.Constant(std::move(indices))}, MakeAttrs({{"axis", axis}}));
}

// A scale or zero point (`what`) broadcast onto x of shape `x` as `g` says.
absl::StatusOr<ValueId> BroadcastParam(NodeContext& ctx, ValueId param, const Shape& x,
                                       const Granularity& g, absl::string_view what) {
  const Shape shape = ctx.TypeOf(param).shape;
  if (!ctx.ok()) return ctx.status();
  if (NumElements(shape) == 1 && (g.block_size == 0 || shape.size() <= 1)) {
    return shape.empty() ? param : ctx.Emit("reshape", {param}, MakeAttrs({{"shape", Shape{}}}));
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, g.axis, rank, "attribute 'axis'"));
  if (g.block_size > 0) return ExpandBlocks(ctx, param, x, axis, g.block_size, what);
  if (shape.size() != 1 || shape[0] != x[axis]) {
    return ctx.Refuse(absl::StrCat(what, " must be a scalar or have shape [", x[axis], "] (axis ",
                                   axis, " of ", ShapeToString(x), "), got ",
                                   ShapeToString(shape)));
  }
  Shape along(x.size(), 1);
  along[axis] = x[axis];
  return ctx.Emit("reshape", {param}, MakeAttrs({{"shape", along}}));
}

// A quantizer's or dequantizer's scale (input 1): a float tensor.
absl::StatusOr<ValueId> ReadScale(NodeContext& ctx, absl::string_view what) {
  const ValueId scale = ctx.In(1);
  const DType dtype = ctx.TypeOf(scale).dtype;
  if (!ctx.ok()) return ctx.status();
  if (!IsFloat(dtype)) {
    return ctx.Refuse(absl::StrCat(what, " must be a float tensor, got ", DTypeName(dtype)));
  }
  return scale;
}

// --- requantizing ----------------------------------------------------------

// `value` (a float) saturated to integer type `to`'s range and cast to it.
ValueId SaturateToInteger(NodeContext& ctx, ValueId value, DType to) {
  const ValueId clipped =
      ctx.Emit("clip", {value},
               MakeAttrs({{"min", IntegerBitsToDouble(IntegerMinBits(to), to)},
                          {"max", IntegerBitsToDouble(IntegerMaxBits(to), to)}}));
  return ctx.Emit("cast", {clipped}, MakeAttrs({{"to", std::string(DTypeName(to))}}));
}

// saturate(round(quotient) + zero) as integer type `to`, the quotient of
// float type P rounded half to even in P; the sum in P's ComputeType (f32
// for f16), exact for every zero point of a 16-bit type (and a quotient
// too large for that is saturated either way). `zero`: kNoValue for none.
ValueId QuantizedInteger(NodeContext& ctx, ValueId quotient, ValueId zero, DType to) {
  const DType wide = ComputeType(ctx.TypeOf(quotient).dtype);
  ValueId y = ctx.CastTo(ctx.Emit("round", {quotient}), wide);
  if (zero != NodeContext::kNoValue) y = ctx.Emit("add", {y, ctx.CastTo(zero, wide)});
  return SaturateToInteger(ctx, y, to);
}

// An integer accumulator (i32) requantized: saturate(round(acc * multiplier)
// + zero) as `to`, rounding before the zero point is added, as the spec's
// formula and QuantizeLinear do (ONNX's reference adds it first: the two
// differ at ties when the zero point is odd). The product is taken in
// f64, as the reference does.
ValueId Requantized(NodeContext& ctx, ValueId acc, ValueId multiplier, ValueId zero, DType to) {
  const ValueId scaled =
      ctx.Emit("mul", {ctx.CastTo(acc, DType::kF64), ctx.CastTo(multiplier, DType::kF64)});
  return QuantizedInteger(ctx, scaled, zero, to);
}

// --- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ----------------

// The attributes of QuantizeLinear (`quantize`) or DequantizeLinear at the
// node's opset: axis (13), saturate (19, float8 targets only), block_size
// and QuantizeLinear's output_dtype (21), QuantizeLinear's precision and
// DequantizeLinear's output_dtype (23).
std::vector<AttrRule> QuantizerAttrs(const NodeContext& ctx, bool quantize) {
  std::vector<AttrRule> accepted;
  if (ctx.opset() >= 13) accepted.push_back({"axis", kInt});
  if (quantize && ctx.opset() >= 19) accepted.push_back({"saturate", kInt});
  if (ctx.opset() >= 21) accepted.push_back({"block_size", kInt});
  if (ctx.opset() >= (quantize ? 21 : 23)) accepted.push_back({"output_dtype", kInt});
  if (quantize && ctx.opset() >= 23) accepted.push_back({"precision", kInt});
  return accepted;
}

// QuantizeLinear's output type: output_dtype, else y_zero_point's, else u8;
// when both are given they must agree.
absl::StatusOr<DType> QuantizedType(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(std::optional<DType> output_dtype, DTypeAttr(ctx, "output_dtype"));
  if (!ctx.HasInput(2)) return output_dtype.value_or(DType::kU8);
  const DType zero_type = ctx.TypeOf(ctx.In(2)).dtype;
  if (!ctx.ok()) return ctx.status();
  if (output_dtype.has_value() && *output_dtype != zero_type) {
    return ctx.Refuse(absl::StrCat("attribute 'output_dtype' ", DTypeName(*output_dtype),
                                   " disagrees with y_zero_point's type ", DTypeName(zero_type)));
  }
  return zero_type;
}

// quotient + zero (kNoValue: none) as the 8- or 4-bit float `to`, in the
// quotient's ComputeType; with `saturate`, values past the type's largest
// finite one become it (without, cast gives infinity or NaN).
ValueId QuantizedFloat(NodeContext& ctx, ValueId quotient, ValueId zero, DType to, bool saturate) {
  const DType wide = ComputeType(ctx.TypeOf(quotient).dtype);
  ValueId y = ctx.CastTo(quotient, wide);
  if (zero != NodeContext::kNoValue) y = ctx.Emit("add", {y, ctx.CastTo(zero, wide)});
  if (saturate) {
    y = ctx.Emit("clip", {y},
                 MakeAttrs({{"min", -NarrowFloatMax(to)}, {"max", NarrowFloatMax(to)}}));
  }
  return ctx.Emit("cast", {y}, MakeAttrs({{"to", std::string(DTypeName(to))}}));
}

// QuantizeLinear: y = saturate(round(x / y_scale) + y_zero_point), the
// division in `precision`'s type (23) or else y_scale's, rounding half to
// even; saturated at the range of y's integer type. To the 8- and 4-bit
// floats (19, 23), x / y_scale + y_zero_point cast to the type, saturated
// with `saturate` (the default).
absl::Status ConvertQuantizeLinear(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(QuantizerAttrs(ctx, /*quantize=*/true)));
  LOOM_ASSIGN_OR_RETURN(ValueId scale, ReadScale(ctx, "y_scale"));
  LOOM_ASSIGN_OR_RETURN(Granularity g, ReadGranularity(ctx));
  LOOM_ASSIGN_OR_RETURN(DType to, QuantizedType(ctx));
  const ValueId x = ctx.In(0);
  const TensorType x_type = ctx.TypeOf(x);
  if (!ctx.ok()) return ctx.status();
  if (!(IsInteger(to) && DTypeSize(to) <= 2) && !IsQuantizedFloat(to)) {
    return ctx.Refuse(absl::StrCat("quantizing to ", DTypeName(to),
                                   " is not supported (integers of 16 bits or fewer, 8- and "
                                   "4-bit floats)"));
  }
  if (!(IsFloat(x_type.dtype) && DTypeSize(x_type.dtype) >= 2) && x_type.dtype != DType::kI32) {
    return ctx.Refuse(
        absl::StrCat("x has dtype ", DTypeName(x_type.dtype), ", expected a float type or i32"));
  }
  LOOM_ASSIGN_OR_RETURN(std::optional<DType> precision, DTypeAttr(ctx, "precision"));
  if (precision.has_value() && !IsFloat(*precision)) {
    return ctx.Refuse(
        absl::StrCat("attribute 'precision' ", DTypeName(*precision), " is not a float type"));
  }
  const DType divide_in = ArithmeticType(precision.value_or(ctx.TypeOf(scale).dtype));
  LOOM_ASSIGN_OR_RETURN(ValueId scale_b, BroadcastParam(ctx, scale, x_type.shape, g, "y_scale"));
  ValueId zero = NodeContext::kNoValue;
  if (ctx.HasInput(2)) {
    LOOM_ASSIGN_OR_RETURN(zero, BroadcastParam(ctx, ctx.In(2), x_type.shape, g, "y_zero_point"));
  }
  const ValueId quotient =
      ctx.Emit("div", {ctx.CastTo(x, divide_in), ctx.CastTo(scale_b, divide_in)});
  ctx.Bind(0, IsInteger(to) ? QuantizedInteger(ctx, quotient, zero, to)
                            : QuantizedFloat(ctx, quotient, zero, to, ctx.Int("saturate", 1) != 0));
  return ctx.status();
}

// DequantizeLinear: y = (x - x_zero_point) * x_scale, in f32 for the
// 16-bit scales (rounded once to y's type), as ONNX's reference computes
// it; y is output_dtype (23) or the scale's type.
absl::Status ConvertDequantizeLinear(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(QuantizerAttrs(ctx, /*quantize=*/false)));
  LOOM_ASSIGN_OR_RETURN(ValueId scale, ReadScale(ctx, "x_scale"));
  LOOM_ASSIGN_OR_RETURN(Granularity g, ReadGranularity(ctx));
  LOOM_ASSIGN_OR_RETURN(std::optional<DType> output_dtype, DTypeAttr(ctx, "output_dtype"));
  const ValueId x = ctx.In(0);
  const TensorType x_type = ctx.TypeOf(x);
  const DType scale_type = ctx.TypeOf(scale).dtype;
  const DType compute = ArithmeticType(scale_type);
  if (!ctx.ok()) return ctx.status();
  if (!IsInteger(x_type.dtype) && !IsQuantizedFloat(x_type.dtype)) {
    return ctx.Refuse(absl::StrCat("x has dtype ", DTypeName(x_type.dtype),
                                   ", expected an integer type or an 8- or 4-bit float"));
  }
  if (output_dtype.has_value() && !IsFloat(*output_dtype)) {
    return ctx.Refuse(absl::StrCat("attribute 'output_dtype' ", DTypeName(*output_dtype),
                                   " is not a float type"));
  }
  ValueId y = ctx.CastTo(x, compute);
  if (ctx.HasInput(2)) {
    const ValueId zero = ctx.In(2);
    const DType zero_type = ctx.TypeOf(zero).dtype;
    if (!ctx.ok()) return ctx.status();
    if (zero_type != x_type.dtype) {
      return ctx.Refuse(absl::StrCat("x_zero_point has dtype ", DTypeName(zero_type), ", x has ",
                                     DTypeName(x_type.dtype)));
    }
    LOOM_ASSIGN_OR_RETURN(ValueId zero_b,
                          BroadcastParam(ctx, zero, x_type.shape, g, "x_zero_point"));
    y = ctx.Emit("sub", {y, ctx.CastTo(zero_b, compute)});
  }
  LOOM_ASSIGN_OR_RETURN(ValueId scale_b, BroadcastParam(ctx, scale, x_type.shape, g, "x_scale"));
  y = ctx.Emit("mul", {y, ctx.CastTo(scale_b, compute)});
  // y has output_dtype or the scale's type (the importer rounds f32 to a
  // 16-bit scale's type where no output_dtype is given).
  ctx.Bind(0, ctx.CastTo(y, output_dtype.value_or(scale_type)));
  return ctx.status();
}

// DynamicQuantizeLinear, as ONNX defines it by a function: the range
// [min(x, 0), max(x, 0)] maps onto [0, 255]; scale = range / 255, zero point
// = round(clip(-min / scale, 0, 255)) as u8; y = QuantizeLinear(x, scale,
// zero point).
absl::Status ConvertDynamicQuantizeLinear(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId x = ctx.In(0);
  const DType dtype = ctx.TypeOf(x).dtype;
  if (!ctx.ok()) return ctx.status();
  if (dtype != DType::kF32) {
    return ctx.Refuse(absl::StrCat("x has dtype ", DTypeName(dtype), ", expected f32"));
  }
  const ValueId zero = ctx.Scalar(dtype, 0);
  const ValueId low = ctx.Emit("minimum", {ctx.Emit("reduce_min", {x}), zero});
  const ValueId high = ctx.Emit("maximum", {ctx.Emit("reduce_max", {x}), zero});
  const ValueId scale =
      ctx.EmitOutput(1, "div", {ctx.Emit("sub", {high, low}), ctx.Scalar(dtype, 255)});
  const ValueId initial = ctx.Emit("sub", {zero, ctx.Emit("div", {low, scale})});
  const ValueId clipped = ctx.Emit("clip", {initial}, MakeAttrs({{"min", 0.0}, {"max", 255.0}}));
  const ValueId zero_point = ctx.EmitOutput(2, "cast", {ctx.Emit("round", {clipped})},
                                            MakeAttrs({{"to", std::string("u8")}}));
  ctx.Bind(0, QuantizedInteger(ctx, ctx.Emit("div", {x, scale}), zero_point, DType::kU8));
  return ctx.status();
}

// --- integer products --------------------------------------------------------

// Input `i`, which must be u8 or i8; `what` names it.
absl::StatusOr<ValueId> EightBitOperand(NodeContext& ctx, int i, absl::string_view what) {
  const ValueId x = ctx.In(i);
  const DType dtype = ctx.TypeOf(x).dtype;
  if (!ctx.ok()) return ctx.status();
  if (!IsInteger(dtype) || DTypeSize(dtype) != 1) {
    return ctx.Refuse(absl::StrCat(what, " has dtype ", DTypeName(dtype), ", expected u8 or i8"));
  }
  return x;
}

// Input `i` (a zero point, `what`), which must have `dtype`, its operand's.
absl::StatusOr<ValueId> ZeroPoint(NodeContext& ctx, int i, DType dtype, absl::string_view what) {
  const ValueId zero = ctx.In(i);
  const DType zero_type = ctx.TypeOf(zero).dtype;
  if (!ctx.ok()) return ctx.status();
  if (zero_type != dtype) {
    return ctx.Refuse(absl::StrCat(what, " has dtype ", DTypeName(zero_type), ", its operand ",
                                   DTypeName(dtype)));
  }
  return zero;
}

// A parameter (`what`) of matmul operand A (`for_a`) or B, of shape
// `operand`, viewed to broadcast over the product: one element (a
// scalar); per row of A, [M] (viewed as [M, 1]) or [..., M, 1]; per column
// of B, [N] or [..., 1, N].
absl::StatusOr<ValueId> RowsOrColumns(NodeContext& ctx, ValueId param, const Shape& operand,
                                      bool for_a, absl::string_view what) {
  const Shape shape = ctx.TypeOf(param).shape;
  if (!ctx.ok()) return ctx.status();
  if (NumElements(shape) == 1) {
    return shape.empty() ? param : ctx.Emit("reshape", {param}, MakeAttrs({{"shape", Shape{}}}));
  }
  const size_t rank = operand.size(), param_rank = shape.size();
  if (rank >= 2) {
    const int64_t count = for_a ? operand[rank - 2] : operand[rank - 1];
    if (shape == Shape{count}) {
      return for_a ? ctx.Emit("reshape", {param}, MakeAttrs({{"shape", Shape{count, 1}}})) : param;
    }
    if (param_rank >= 2 && shape[param_rank - (for_a ? 2 : 1)] == count &&
        shape[param_rank - (for_a ? 1 : 2)] == 1) {
      return param;
    }
  }
  return ctx.Refuse(absl::StrCat(
      what, " must have one element or be ",
      for_a ? "per row of A ([M] or [..., M, 1])" : "per column of B ([N] or [..., 1, N])",
      " for an operand ", ShapeToString(operand), ", got ", ShapeToString(shape)));
}

// Operand `i` of an integer matmul (u8 or i8, named `what`) less its zero
// point (input `zero_input`, when present), in i32.
absl::StatusOr<ValueId> ShiftedMatMulOperand(NodeContext& ctx, int i, int zero_input, bool for_a,
                                             absl::string_view what) {
  LOOM_ASSIGN_OR_RETURN(ValueId x, EightBitOperand(ctx, i, what));
  const TensorType type = ctx.TypeOf(x);
  const ValueId wide = ctx.CastTo(x, DType::kI32);
  if (!ctx.HasInput(zero_input)) return wide;
  const std::string zero_name = absl::StrCat(absl::AsciiStrToLower(what), "_zero_point");
  LOOM_ASSIGN_OR_RETURN(ValueId zero, ZeroPoint(ctx, zero_input, type.dtype, zero_name));
  LOOM_ASSIGN_OR_RETURN(zero, RowsOrColumns(ctx, zero, type.shape, for_a, zero_name));
  return ctx.Emit("sub", {wide, ctx.CastTo(zero, DType::kI32)});
}

// MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) in i32 (wrapping
// as loom's integers do). A zero point is a scalar, per row of A ([M], or
// [..., M, 1]) or per column of B ([N], or [..., 1, N]).
absl::Status ConvertMatMulInteger(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(ValueId a, ShiftedMatMulOperand(ctx, 0, 2, /*for_a=*/true, "A"));
  LOOM_ASSIGN_OR_RETURN(ValueId b, ShiftedMatMulOperand(ctx, 1, 3, /*for_a=*/false, "B"));
  ctx.EmitOutput(0, "matmul", {a, b});
  return ctx.status();
}

// Input `i`, a scale (`what`), as a float tensor of one element.
absl::StatusOr<ValueId> ScalarScale(NodeContext& ctx, int i, absl::string_view what) {
  const ValueId scale = ctx.In(i);
  const TensorType type = ctx.TypeOf(scale);
  if (!ctx.ok()) return ctx.status();
  if (!IsFloat(type.dtype) || NumElements(type.shape) != 1) {
    return ctx.Refuse(
        absl::StrCat(what, " must be a float scalar (per tensor), got ", TypeToString(type)));
  }
  return type.shape.empty() ? scale : ctx.Emit("reshape", {scale}, MakeAttrs({{"shape", Shape{}}}));
}

// The output's zero point (input `i`, y_zero_point: u8 or i8, one element)
// as a scalar, and its type, y's.
absl::StatusOr<std::pair<ValueId, DType>> OutputZeroPoint(NodeContext& ctx, int i) {
  LOOM_ASSIGN_OR_RETURN(ValueId zero, EightBitOperand(ctx, i, "y_zero_point"));
  const TensorType type = ctx.TypeOf(zero);
  if (NumElements(type.shape) != 1) {
    return ctx.Refuse(absl::StrCat("y_zero_point must have one element (per tensor), got ",
                                   ShapeToString(type.shape)));
  }
  if (!type.shape.empty()) zero = ctx.Emit("reshape", {zero}, MakeAttrs({{"shape", Shape{}}}));
  return std::make_pair(zero, type.dtype);
}

// QLinearMatMul's input `i`, the scale of operand `i - 1` (a, `for_a`, or
// b), a float tensor viewed as RowsOrColumns says.
absl::StatusOr<ValueId> MatMulScale(NodeContext& ctx, int i, bool for_a) {
  const std::string name = for_a ? "a_scale" : "b_scale";
  const ValueId scale = ctx.In(i);
  const DType dtype = ctx.TypeOf(scale).dtype;
  const Shape operand = ctx.TypeOf(ctx.In(i - 1)).shape;
  if (!ctx.ok()) return ctx.status();
  if (!IsFloat(dtype)) {
    return ctx.Refuse(absl::StrCat(name, " must be a float tensor, got ", DTypeName(dtype)));
  }
  return RowsOrColumns(ctx, scale, operand, for_a, name);
}

// QLinearMatMul: saturate(round((a - a_zero_point) @ (b - b_zero_point) *
// (a_scale * b_scale / y_scale)) + y_zero_point). The product in i32, the
// scales per tensor, per row of a or per column of b (as MatMulInteger's
// zero points), y's per tensor.
absl::Status ConvertQLinearMatMul(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  LOOM_ASSIGN_OR_RETURN(ValueId a, ShiftedMatMulOperand(ctx, 0, 2, /*for_a=*/true, "A"));
  LOOM_ASSIGN_OR_RETURN(ValueId b, ShiftedMatMulOperand(ctx, 3, 5, /*for_a=*/false, "B"));
  LOOM_ASSIGN_OR_RETURN(ValueId y_scale, ScalarScale(ctx, 6, "y_scale"));
  LOOM_ASSIGN_OR_RETURN(auto zero, OutputZeroPoint(ctx, 7));
  LOOM_ASSIGN_OR_RETURN(ValueId a_scale, MatMulScale(ctx, 1, /*for_a=*/true));
  LOOM_ASSIGN_OR_RETURN(ValueId b_scale, MatMulScale(ctx, 4, /*for_a=*/false));
  const ValueId multiplier = ctx.Emit("div", {ctx.Emit("mul", {a_scale, b_scale}), y_scale});
  const ValueId acc = ctx.Emit("matmul", {a, b});
  ctx.Bind(0, Requantized(ctx, acc, multiplier, zero.first, zero.second));
  return ctx.status();
}

// Input `i` of a convolution (x or w, u8 or i8, named `what`) less its zero
// point (input `zero_input`, when present: a scalar, or for w one per
// output channel), in f64, where the convolution's sums are exact.
absl::StatusOr<ValueId> ShiftedConvOperand(NodeContext& ctx, int i, int zero_input,
                                           absl::string_view what) {
  LOOM_ASSIGN_OR_RETURN(ValueId x, EightBitOperand(ctx, i, what));
  const TensorType type = ctx.TypeOf(x);
  const ValueId wide = ctx.CastTo(x, DType::kF64);
  if (!ctx.HasInput(zero_input)) return wide;
  const std::string zero_name = absl::StrCat(what, "_zero_point");
  LOOM_ASSIGN_OR_RETURN(ValueId zero, ZeroPoint(ctx, zero_input, type.dtype, zero_name));
  const Shape zero_shape = ctx.TypeOf(zero).shape;
  if (NumElements(zero_shape) == 1) {
    zero = ctx.Emit("reshape", {zero}, MakeAttrs({{"shape", Shape{}}}));
  } else if (what == "w" && zero_shape.size() == 1 && zero_shape[0] == type.shape[0]) {
    Shape per_channel(type.shape.size(), 1);
    per_channel[0] = zero_shape[0];
    zero = ctx.Emit("reshape", {zero}, MakeAttrs({{"shape", per_channel}}));
  } else {
    return ctx.Refuse(absl::StrCat(
        zero_name, " must be a scalar",
        what == "w" ? absl::StrCat(" or have shape [", type.shape[0], "] (one per output channel)")
                    : "",
        ", got ", ShapeToString(zero_shape)));
  }
  return ctx.Emit("sub", {wide, ctx.CastTo(zero, DType::kF64)});
}

// The i32 convolution of ConvInteger and QLinearConv (x input 0, w input
// `w_input`, zero points at `x_zero` and `w_zero`, an i32 bias at `bias`
// or -1), as ONNX's attributes say: the zero-shifted 8-bit operands
// (|v| <= 255) convolved in f64, exact for up to 2^36 products per output,
// then wrapped to 32 bits through i64.
absl::StatusOr<ValueId> IntegerConv(NodeContext& ctx, int w_input, int x_zero, int w_zero,
                                    int bias) {
  LOOM_ASSIGN_OR_RETURN(Attrs attrs, ConvAttrs(ctx, w_input));
  LOOM_ASSIGN_OR_RETURN(ValueId x, ShiftedConvOperand(ctx, 0, x_zero, "x"));
  LOOM_ASSIGN_OR_RETURN(ValueId w, ShiftedConvOperand(ctx, w_input, w_zero, "w"));
  if (!ctx.ok()) return ctx.status();
  const Shape w_shape = ctx.TypeOf(w).shape;
  constexpr int64_t kMaxExactProducts = int64_t{1} << 36;
  if (NumElements(Shape(w_shape.begin() + 1, w_shape.end())) > kMaxExactProducts) {
    return ctx.Refuse(absl::StrCat("w ", ShapeToString(w_shape),
                                   " sums more than 2^36 products "
                                   "per output, more than loom sums exactly"));
  }
  std::vector<ValueId> inputs = {x, w};
  if (bias >= 0 && ctx.HasInput(bias)) {
    const ValueId b = ctx.In(bias);
    const DType b_type = ctx.TypeOf(b).dtype;
    if (!ctx.ok()) return ctx.status();
    if (b_type != DType::kI32) {
      return ctx.Refuse(absl::StrCat("B has dtype ", DTypeName(b_type), ", expected i32"));
    }
    inputs.push_back(ctx.CastTo(b, DType::kF64));
  }
  const ValueId sums = ctx.Emit("conv", std::move(inputs), std::move(attrs));
  const ValueId wrapped = ctx.CastTo(ctx.CastTo(sums, DType::kI64), DType::kI32);
  if (!ctx.ok()) return ctx.status();
  return wrapped;
}

// ConvInteger: conv(x - x_zero_point, w - w_zero_point) in i32.
absl::Status ConvertConvInteger(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(ValueId y, IntegerConv(ctx, /*w_input=*/1, /*x_zero=*/2, /*w_zero=*/3,
                                               /*bias=*/-1));
  ctx.Bind(0, y);
  return ctx.status();
}

// QLinearConv: saturate(round((conv(x - x_zero_point, w - w_zero_point) + B)
// * (x_scale * w_scale / y_scale)) + y_zero_point), w's scale and zero
// point per tensor or per output channel.
absl::Status ConvertQLinearConv(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(ValueId acc, IntegerConv(ctx, /*w_input=*/3, /*x_zero=*/2, /*w_zero=*/5,
                                                 /*bias=*/8));
  LOOM_ASSIGN_OR_RETURN(ValueId x_scale, ScalarScale(ctx, 1, "x_scale"));
  LOOM_ASSIGN_OR_RETURN(ValueId y_scale, ScalarScale(ctx, 6, "y_scale"));
  LOOM_ASSIGN_OR_RETURN(auto zero, OutputZeroPoint(ctx, 7));
  ValueId w_scale = ctx.In(4);
  const TensorType w_scale_type = ctx.TypeOf(w_scale);
  const int64_t channels = ctx.TypeOf(acc).shape[1];
  if (!ctx.ok()) return ctx.status();
  if (!IsFloat(w_scale_type.dtype)) {
    return ctx.Refuse(
        absl::StrCat("w_scale must be a float tensor, got ", DTypeName(w_scale_type.dtype)));
  }
  if (NumElements(w_scale_type.shape) == 1) {
    w_scale = ctx.Emit("reshape", {w_scale}, MakeAttrs({{"shape", Shape{}}}));
  } else if (w_scale_type.shape == Shape{channels}) {
    Shape per_channel(ctx.RankOf(acc), 1);
    per_channel[1] = channels;
    w_scale = ctx.Emit("reshape", {w_scale}, MakeAttrs({{"shape", per_channel}}));
  } else {
    return ctx.Refuse(absl::StrCat("w_scale must be a scalar or have shape [", channels,
                                   "] (one per output channel), got ",
                                   ShapeToString(w_scale_type.shape)));
  }
  const ValueId multiplier = ctx.Emit("div", {ctx.Emit("mul", {x_scale, w_scale}), y_scale});
  ctx.Bind(0, Requantized(ctx, acc, multiplier, zero.first, zero.second));
  return ctx.status();
}

}  // namespace

void AddQuantizeConverters(ConverterMap& map) {
  map["QuantizeLinear"] = ConvertQuantizeLinear;
  map["DequantizeLinear"] = ConvertDequantizeLinear;
  map["DynamicQuantizeLinear"] = ConvertDynamicQuantizeLinear;
  map["MatMulInteger"] = ConvertMatMulInteger;
  map["QLinearMatMul"] = ConvertQLinearMatMul;
  map["ConvInteger"] = ConvertConvInteger;
  map["QLinearConv"] = ConvertQLinearConv;
}

}  // namespace loom::onnx_import
