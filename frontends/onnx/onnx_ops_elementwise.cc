// ONNX elementwise ops: arithmetic, comparisons, logic, casts and
// activations. Most map 1:1 onto a loom op; the rest are short compositions
// of loom primitives that follow the ONNX definition term by term.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// A binary op that maps onto loom `op` (numpy broadcasting), with the
// legacy broadcast attributes before opset 7.
Converter Binary(std::string op) {
  return [op](NodeContext& ctx) -> absl::Status {
    if (absl::Status s = ctx.CheckAttrs(WithLegacyBroadcast(ctx, {})); !s.ok()) {
      return s;
    }
    const ValueId a = ctx.In(0);
    LOOM_ASSIGN_OR_RETURN(ValueId b, LegacyBroadcastOperand(ctx, a, ctx.In(1)));
    ctx.EmitOutput(0, op, {a, b});
    return ctx.status();
  };
}

// An op with no attributes whose every output k is loom `op` applied to the
// node's inputs.
Converter Direct(std::string op) {
  return [op](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    std::vector<ValueId> inputs;
    for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.In(i));
    ctx.EmitOutput(0, op, std::move(inputs));
    return ctx.status();
  };
}

// Gelu (opset 20): loom's gelu, exact or with the tanh approximation.
absl::Status ConvertGelu(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"approximate", onnx::AttributeProto::STRING}}));
  ctx.EmitOutput(0, "gelu", {ctx.In(0)},
                 MakeAttrs({{"approximate", ctx.String("approximate", "none")}}));
  return ctx.status();
}

// Swish (opset 24): x * sigmoid(alpha * x), loom's silu when alpha is 1.
absl::Status ConvertSwish(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"alpha", onnx::AttributeProto::FLOAT}}));
  const ValueId x = ctx.In(0);
  const double alpha = ctx.Float("alpha", 1.0);
  if (alpha == 1.0) {
    ctx.EmitOutput(0, "silu", {x});
    return ctx.status();
  }
  const ValueId scaled = ctx.Emit("mul", {x, ctx.Scalar(ctx.TypeOf(x).dtype, alpha)});
  ctx.EmitOutput(0, "mul", {x, ctx.Emit("sigmoid", {scaled})});
  return ctx.status();
}

// Mish (opset 18): x * tanh(softplus(x)).
absl::Status ConvertMish(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId x = ctx.In(0);
  ctx.EmitOutput(0, "mul", {x, ctx.Emit("tanh", {ctx.Emit("softplus", {x})})});
  return ctx.status();
}

// Max, Min, Sum: a chain of binary loom ops over one or more inputs.
ValueId Fold(NodeContext& ctx, const std::string& op) {
  ValueId acc = ctx.In(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    acc = ctx.Emit(op, {acc, ctx.In(i)});
  }
  return acc;
}

Converter Variadic(std::string op) {
  return [op](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    ctx.Bind(0, Fold(ctx, op));
    return ctx.status();
  };
}

absl::Status ConvertMean(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId sum = Fold(ctx, "add");
  ctx.EmitOutput(0, "div", {sum, ctx.Scalar(ctx.TypeOf(sum).dtype, ctx.num_inputs())});
  return ctx.status();
}

// ONNX Pow lets the exponent's type differ from the base's; the result has
// the base's type. Mixed types compute in f64.
absl::Status ConvertPow(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(WithLegacyBroadcast(ctx, {})));
  const ValueId base = ctx.In(0);
  LOOM_ASSIGN_OR_RETURN(ValueId legacy, LegacyBroadcastOperand(ctx, base, ctx.In(1)));
  const ValueId exponent = legacy;
  const DType dtype = ctx.TypeOf(base).dtype;
  if (!ctx.ok() || dtype == ctx.TypeOf(exponent).dtype) {
    ctx.EmitOutput(0, "pow", {base, exponent});
    return ctx.status();
  }
  const ValueId power =
      ctx.Emit("pow", {ctx.CastTo(base, DType::kF64), ctx.CastTo(exponent, DType::kF64)});
  ctx.EmitOutput(0, "cast", {power}, MakeAttrs({{"to", std::string(DTypeName(dtype))}}));
  return ctx.status();
}

absl::Status ConvertMod(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"fmod", kInt}}));
  ctx.EmitOutput(0, "mod", {ctx.In(0), ctx.In(1)}, MakeAttrs({{"fmod", ctx.Int("fmod", 0)}}));
  return ctx.status();
}

// BitShift: direction LEFT or RIGHT (required). Before opset 28 it shifts
// unsigned integers only; from 28 also signed ones, as loom's bit_shift
// does.
absl::Status ConvertBitShift(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"direction", kString}}));
  const std::string direction = ctx.String("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Refuse(absl::StrCat("attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"",
                                   direction, "\""));
  }
  const ValueId x = ctx.In(0);
  const DType dtype = ctx.TypeOf(x).dtype;
  if (ctx.ok() && ctx.opset() < 28 && !IsUnsigned(dtype)) {
    return ctx.Refuse(absl::StrCat("input X has dtype ", DTypeName(dtype), "; before opset 28 (",
                                   ctx.opset(), " here) BitShift takes unsigned integers only"));
  }
  ctx.EmitOutput(0, "bit_shift", {x, ctx.In(1)},
                 MakeAttrs({{"direction", std::string(direction == "LEFT" ? "left" : "right")}}));
  return ctx.status();
}

absl::Status ConvertClip(NodeContext& ctx) {
  Attrs attrs;
  if (ctx.opset() < 11) {
    if (absl::Status s = ctx.CheckAttrs({{"min", kFloat}, {"max", kFloat}}); !s.ok()) {
      return s;
    }
    for (const char* bound : {"min", "max"}) {
      if (ctx.HasAttr(bound)) attrs.Set(bound, ctx.Float(bound, 0));
    }
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    const char* const bounds[] = {"min", "max"};
    for (int i = 1; i <= 2; ++i) {
      if (!ctx.HasInput(i)) continue;
      LOOM_ASSIGN_OR_RETURN(double bound, ctx.ConstScalar(i, bounds[i - 1]));
      attrs.Set(bounds[i - 1], bound);
    }
  }
  ctx.EmitOutput(0, "clip", {ctx.In(0)}, std::move(attrs));
  return ctx.status();
}

// Whether a cast to `to` honours Cast's `saturate`: the float8 types but
// f8e8m0, whose loom cast saturates always.
bool SaturationApplies(DType to) {
  return to == DType::kF8E4M3FN || to == DType::kF8E4M3FNUZ || to == DType::kF8E5M2 ||
         to == DType::kF8E5M2FNUZ;
}

// `saturate` (default 1) and `round_mode` (default "up") choose how values
// convert to the float8 types. loom's cast overflows past the largest
// finite value to infinity or NaN (ir/dtype.h: NarrowFloatBits), so a
// saturating cast clips to the type's range first (a NaN passes, and
// infinities become the largest value, as ONNX's table says); loom's cast
// to f8e8m0 is ONNX's default (round up, saturate), and the others are
// refused by name.
absl::Status EmitCast(NodeContext& ctx, DType to) {
  const int64_t saturate = ctx.Int("saturate", 1);
  if (saturate != 0 && saturate != 1) {
    return ctx.Refuse(absl::StrCat("attribute 'saturate' must be 0 or 1, got ", saturate));
  }
  const std::string round_mode = ctx.String("round_mode", "up");
  if (round_mode != "up" && round_mode != "down" && round_mode != "nearest") {
    return ctx.Refuse(
        absl::StrCat("attribute 'round_mode' must be \"up\", \"down\" or "
                     "\"nearest\", got \"",
                     round_mode, "\""));
  }
  if (to == DType::kF8E8M0 && (round_mode != "up" || saturate == 0)) {
    return ctx.Refuse(absl::StrCat("a cast to FLOAT8E8M0 with round_mode \"", round_mode,
                                   "\" and saturate ", saturate,
                                   " is not supported (loom rounds up and saturates)"));
  }
  ValueId x = ctx.In(0);
  const DType from = ctx.TypeOf(x).dtype;
  if (!ctx.ok()) return ctx.status();
  if (saturate == 1 && SaturationApplies(to) && from != DType::kBool) {
    const double max = NarrowFloatMax(to);
    x = ctx.Emit("clip", {x}, MakeAttrs({{"min", -max}, {"max", max}}));
  }
  ctx.EmitOutput(0, "cast", {x}, MakeAttrs({{"to", std::string(DTypeName(to))}}));
  return ctx.status();
}

// Cast's and CastLike's attributes besides `to`: `saturate` (opset 19) and
// `round_mode` (24), for the float8 types (EmitCast).
std::vector<AttrRule> CastAttrs(const NodeContext& ctx, std::vector<AttrRule> accepted) {
  if (ctx.opset() >= 19) accepted.push_back({"saturate", kInt});
  if (ctx.opset() >= 24) accepted.push_back({"round_mode", onnx::AttributeProto::STRING});
  return accepted;
}

absl::Status ConvertCast(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(CastAttrs(ctx, {{"to", kInt}})));
  LOOM_ASSIGN_OR_RETURN(DType to,
                        DTypeFromOnnx(static_cast<int32_t>(ctx.Int("to", 0)), ctx.label()));
  return EmitCast(ctx, to);
}

absl::Status ConvertCastLike(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(CastAttrs(ctx, {})));
  const DType to = ctx.TypeOf(ctx.In(1)).dtype;
  return EmitCast(ctx, to);
}

absl::Status ConvertIdentity(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  ctx.BindValue(0, ctx.ValueIn(0));  // a tensor, a sequence or an optional
  return ctx.status();
}

// An activation with float attributes that loom has under the same names;
// `defaults` are ONNX's (as float32, like the attributes themselves).
Converter Activation(std::string op, std::vector<std::pair<std::string, float>> defaults) {
  return [op, defaults](NodeContext& ctx) -> absl::Status {
    std::vector<AttrRule> accepted;
    for (const auto& [name, value] : defaults) accepted.push_back({name, kFloat});
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
    Attrs attrs;
    for (const auto& [name, value] : defaults) {
      attrs.Set(name, ctx.Float(name, value));
    }
    ctx.EmitOutput(0, op, {ctx.In(0)}, std::move(attrs));
    return ctx.status();
  };
}

// A float attribute of a composite activation, checked to be the only one.
absl::StatusOr<double> OnlyFloatAttr(NodeContext& ctx, absl::string_view name,
                                     float default_value) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{name, kFloat}}));
  return ctx.Float(name, default_value);
}

// PRelu. Before opset 7 a slope [C] is per channel (X [N, C, ...]), and is
// viewed as [C, 1, ...] for loom's numpy broadcasting.
absl::Status ConvertPRelu(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId x = ctx.In(0);
  ValueId slope = ctx.In(1);
  const Shape x_shape = ctx.TypeOf(x).shape;
  const Shape slope_shape = ctx.TypeOf(slope).shape;
  if (!ctx.ok()) return ctx.status();
  if (ctx.opset() < 7 && x_shape.size() >= 2 && slope_shape == Shape{x_shape[1]}) {
    Shape channel(x_shape.size() - 1, 1);
    channel[0] = x_shape[1];
    slope = ctx.Emit("reshape", {slope}, MakeAttrs({{"shape", channel}}));
  }
  ctx.EmitOutput(0, "prelu", {x, slope});
  return ctx.status();
}

// celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
absl::Status ConvertCelu(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(double alpha, OnlyFloatAttr(ctx, "alpha", 1.0f));
  const ValueId x = ctx.In(0);
  const DType t = ctx.TypeOf(x).dtype;
  const ValueId a = ctx.Scalar(t, alpha);
  const ValueId expm1 =
      ctx.Emit("sub", {ctx.Emit("exp", {ctx.Emit("div", {x, a})}), ctx.Scalar(t, 1)});
  const ValueId negative = ctx.Emit("minimum", {ctx.Scalar(t, 0), ctx.Emit("mul", {a, expm1})});
  ctx.EmitOutput(0, "add", {ctx.Emit("relu", {x}), negative});
  return ctx.status();
}

// thresholded_relu(x) = x > alpha ? x : 0
absl::Status ConvertThresholdedRelu(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(double alpha, OnlyFloatAttr(ctx, "alpha", 1.0f));
  const ValueId x = ctx.In(0);
  const DType t = ctx.TypeOf(x).dtype;
  const ValueId above = ctx.Emit("greater", {x, ctx.Scalar(t, alpha)});
  ctx.EmitOutput(0, "where", {above, x, ctx.Scalar(t, 0)});
  return ctx.status();
}

// softsign(x) = x / (1 + |x|)
absl::Status ConvertSoftsign(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId x = ctx.In(0);
  const ValueId denominator =
      ctx.Emit("add", {ctx.Scalar(ctx.TypeOf(x).dtype, 1), ctx.Emit("abs", {x})});
  ctx.EmitOutput(0, "div", {x, denominator});
  return ctx.status();
}

// shrink(x) = x < -lambd ? x + bias : x > lambd ? x - bias : 0
absl::Status ConvertShrink(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"bias", kFloat}, {"lambd", kFloat}}); !s.ok()) {
    return s;
  }
  const ValueId x = ctx.In(0);
  const DType t = ctx.TypeOf(x).dtype;
  const double lambd = ctx.Float("lambd", 0.5f);
  const ValueId bias = ctx.Scalar(t, ctx.Float("bias", 0.0f));
  const ValueId above = ctx.Emit("greater", {x, ctx.Scalar(t, lambd)});
  const ValueId below = ctx.Emit("less", {x, ctx.Scalar(t, -lambd)});
  const ValueId upper = ctx.Emit("where", {above, ctx.Emit("sub", {x, bias}), ctx.Scalar(t, 0)});
  ctx.EmitOutput(0, "where", {below, ctx.Emit("add", {x, bias}), upper});
  return ctx.status();
}

// sinh and cosh from exp: (exp(x) -/+ exp(-x)) / 2.
Converter Hyperbolic(std::string combine) {
  return [combine](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    const ValueId x = ctx.In(0);
    const ValueId sum =
        ctx.Emit(combine, {ctx.Emit("exp", {x}), ctx.Emit("exp", {ctx.Emit("neg", {x})})});
    ctx.EmitOutput(0, "mul", {sum, ctx.Scalar(ctx.TypeOf(x).dtype, 0.5)});
    return ctx.status();
  };
}

absl::Status ConvertTan(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId x = ctx.In(0);
  ctx.EmitOutput(0, "div", {ctx.Emit("sin", {x}), ctx.Emit("cos", {x})});
  return ctx.status();
}

// NaN is the one value not equal to itself.
absl::Status ConvertIsNaN(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  const ValueId x = ctx.In(0);
  ctx.EmitOutput(0, "not_equal", {x, x});
  return ctx.status();
}

absl::Status ConvertIsInf(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"detect_negative", kInt}, {"detect_positive", kInt}});
      !s.ok()) {
    return s;
  }
  const bool negative = ctx.Int("detect_negative", 1) != 0;
  const bool positive = ctx.Int("detect_positive", 1) != 0;
  const ValueId x = ctx.In(0);
  const TensorType type = ctx.TypeOf(x);
  if (!ctx.ok()) return ctx.status();
  if (!IsFloat(type.dtype)) {
    return ctx.Refuse(
        absl::StrCat("input has dtype ", DTypeName(type.dtype), ", expected a float type"));
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (negative && positive) {
    ctx.EmitOutput(0, "equal", {ctx.Emit("abs", {x}), ctx.Scalar(type.dtype, kInf)});
  } else if (negative || positive) {
    ctx.EmitOutput(0, "equal", {x, ctx.Scalar(type.dtype, positive ? kInf : -kInf)});
  } else if (absl::Status s = ctx.CheckBuildable(type.shape); !s.ok()) {
    return s;
  } else {
    ctx.ConstantOutput(0, Tensor(DType::kBool, type.shape));  // all false
  }
  return ctx.status();
}

}  // namespace

std::vector<AttrRule> WithLegacyBroadcast(const NodeContext& ctx, std::vector<AttrRule> accepted,
                                          bool with_axis) {
  if (ctx.opset() >= 7) return accepted;
  accepted.push_back({"broadcast", kInt});
  if (with_axis) accepted.push_back({"axis", kInt});
  return accepted;
}

absl::StatusOr<ValueId> LegacyBroadcastOperand(NodeContext& ctx, ValueId a, ValueId b) {
  if (ctx.opset() >= 7) return b;
  const Shape a_shape = ctx.TypeOf(a).shape;
  const Shape b_shape = ctx.TypeOf(b).shape;
  if (!ctx.ok()) return ctx.status();
  const int64_t broadcast = ctx.Int("broadcast", 0);
  if (broadcast != 0 && broadcast != 1) {
    return ctx.Refuse(absl::StrCat("attribute 'broadcast' must be 0 or 1, got ", broadcast));
  }
  if (broadcast == 0) {
    if (a_shape == b_shape) return b;
    return ctx.Refuse(
        absl::StrCat("operands ", ShapeToString(a_shape), " and ", ShapeToString(b_shape),
                     " differ in shape; before opset 7 they broadcast only with attribute "
                     "broadcast=1"));
  }
  const int64_t a_rank = a_shape.size(), b_rank = b_shape.size();
  const int64_t axis = ctx.Int("axis", a_rank - b_rank);
  const int64_t first = axis < 0 ? axis + a_rank : axis;
  bool fits = first >= 0 && first + b_rank <= a_rank;
  for (int64_t d = 0; fits && d < b_rank; ++d) {
    fits = b_shape[d] == 1 || b_shape[d] == a_shape[first + d];
  }
  if (!fits) {
    return ctx.Refuse(absl::StrCat("with broadcast=1 and axis ", axis, " the second operand ",
                                   ShapeToString(b_shape),
                                   " must match (or have 1s in) consecutive dims of ",
                                   ShapeToString(a_shape), " starting at the axis"));
  }
  if (first + b_rank == a_rank) return b;  // numpy aligns the trailing dims
  Shape viewed = b_shape;
  viewed.resize(a_rank - first, 1);
  return ctx.Emit("reshape", {b}, MakeAttrs({{"shape", viewed}}));
}

void AddElementwiseConverters(ConverterMap& map) {
  // The binary ops that had the legacy broadcast attributes (opset < 7).
  const std::pair<const char*, const char*> binary[] = {
      {"Add", "add"},       {"Sub", "sub"},         {"Mul", "mul"},         {"Div", "div"},
      {"Equal", "equal"},   {"Less", "less"},       {"Greater", "greater"}, {"And", "logical_and"},
      {"Or", "logical_or"}, {"Xor", "logical_xor"},
  };
  for (const auto& [onnx_op, loom_op] : binary) {
    map[onnx_op] = Binary(loom_op);
  }
  const std::pair<const char*, const char*> direct[] = {
      {"Neg", "neg"},
      {"Abs", "abs"},
      {"Relu", "relu"},
      {"Exp", "exp"},
      {"Log", "log"},
      {"Sqrt", "sqrt"},
      {"Reciprocal", "reciprocal"},
      {"Tanh", "tanh"},
      {"Sigmoid", "sigmoid"},
      {"Erf", "erf"},
      {"Sin", "sin"},
      {"Cos", "cos"},
      {"Floor", "floor"},
      {"Ceil", "ceil"},
      {"Round", "round"},
      {"Sign", "sign"},
      {"LessOrEqual", "less_equal"},
      {"GreaterOrEqual", "greater_equal"},
      {"Not", "logical_not"},
      {"BitwiseNot", "bitwise_not"},
      {"BitwiseAnd", "bitwise_and"},
      {"BitwiseOr", "bitwise_or"},
      {"BitwiseXor", "bitwise_xor"},
      {"Where", "where"},
      {"Softplus", "softplus"},
      {"HardSwish", "hard_swish"},
  };
  for (const auto& [onnx_op, loom_op] : direct) {
    map[onnx_op] = Direct(loom_op);
  }
  map["Max"] = Variadic("maximum");
  map["Min"] = Variadic("minimum");
  map["Sum"] = Variadic("add");
  map["Mean"] = ConvertMean;
  map["Pow"] = ConvertPow;
  map["Mod"] = ConvertMod;
  map["BitShift"] = ConvertBitShift;
  map["Clip"] = ConvertClip;
  map["Cast"] = ConvertCast;
  map["CastLike"] = ConvertCastLike;
  map["Identity"] = ConvertIdentity;
  map["LeakyRelu"] = Activation("leaky_relu", {{"alpha", 0.01f}});
  map["Elu"] = Activation("elu", {{"alpha", 1.0f}});
  map["Selu"] = Activation(
      "selu", {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}});
  map["HardSigmoid"] = Activation("hard_sigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}});
  map["PRelu"] = ConvertPRelu;
  map["Celu"] = ConvertCelu;
  map["ThresholdedRelu"] = ConvertThresholdedRelu;
  map["Softsign"] = ConvertSoftsign;
  map["Shrink"] = ConvertShrink;
  map["Sinh"] = Hyperbolic("sub");
  map["Cosh"] = Hyperbolic("add");
  map["Tan"] = ConvertTan;
  map["IsNaN"] = ConvertIsNaN;
  map["IsInf"] = ConvertIsInf;
  map["Gelu"] = ConvertGelu;
  map["Swish"] = ConvertSwish;
  map["Mish"] = ConvertMish;
}

}  // namespace loom::onnx_import
