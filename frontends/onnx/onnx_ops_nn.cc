// ONNX's linear algebra, reductions, softmax family, normalisations,
// convolutions and pools, and recurrences. Where ONNX's semantics differ
// from loom's op (softmax before opset 13 flattens to 2-D;
// LayerNormalization's optional statistics outputs; auto_pad, resolved into
// explicit pads; the recurrences' optional inputs in the middle of the
// list), the converter spells the difference out in loom ops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// Axes d..rank-1.
std::vector<int64_t> TrailingAxes(int64_t first, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t d = first; d < rank; ++d) axes.push_back(d);
  return axes;
}

absl::Status ConvertMatMul(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  ctx.EmitOutput(0, "matmul", {ctx.In(0), ctx.In(1)});
  return ctx.status();
}

// Before opset 7, C broadcasts to [M, N] only with attribute broadcast=1.
absl::Status ConvertGemm(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs(WithLegacyBroadcast(
          ctx, {{"alpha", kFloat}, {"beta", kFloat}, {"transA", kInt}, {"transB", kInt}},
          /*with_axis=*/false));
      !s.ok()) {
    return s;
  }
  std::vector<ValueId> inputs = {ctx.In(0), ctx.In(1)};
  if (ctx.HasInput(2)) inputs.push_back(ctx.In(2));
  const int64_t broadcast = ctx.Int("broadcast", 0);
  if (ctx.opset() < 7 && broadcast != 1 && inputs.size() == 3) {
    const Shape a = ctx.TypeOf(inputs[0]).shape;
    const Shape b = ctx.TypeOf(inputs[1]).shape;
    const Shape c = ctx.TypeOf(inputs[2]).shape;
    if (!ctx.ok()) return ctx.status();
    if (broadcast != 0) {
      return ctx.Refuse(absl::StrCat("attribute 'broadcast' must be 0 or 1, got ", broadcast));
    }
    if (a.size() == 2 && b.size() == 2) {
      const Shape mn = {a[ctx.Int("transA", 0) != 0 ? 1 : 0], b[ctx.Int("transB", 0) != 0 ? 0 : 1]};
      if (c != mn) {
        return ctx.Refuse(
            absl::StrCat("C ", ShapeToString(c), " must have shape ", ShapeToString(mn),
                         ": before opset 7 it broadcasts only with attribute broadcast=1"));
      }
    }
  }
  ctx.EmitOutput(0, "gemm", std::move(inputs),
                 MakeAttrs({{"alpha", ctx.Float("alpha", 1.0)},
                            {"beta", ctx.Float("beta", 1.0)},
                            {"trans_a", ctx.Int("transA", 0)},
                            {"trans_b", ctx.Int("transB", 0)}}));
  return ctx.status();
}

// ReduceMax and ReduceMin over an empty set of elements give the lowest
// (max) or highest (min) value of the type: -inf or +inf for floats, false
// or true for bools, as ONNX defines them. loom's reductions have no such
// identity, and the result does not depend on the data: it is a constant.
// None when no reduced dim is empty.
absl::StatusOr<std::optional<Tensor>> EmptyExtremum(const NodeContext& ctx, const TensorType& type,
                                                    const std::vector<int64_t>& axes, bool keepdims,
                                                    bool is_max) {
  const int64_t rank = static_cast<int64_t>(type.shape.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    LOOM_ASSIGN_OR_RETURN(int64_t d, NormalizedAxis(ctx, axis, rank, "an entry of axes"));
    reduced[d] = true;
  }
  Shape shape;
  bool empty = false;
  for (int64_t d = 0; d < rank; ++d) {
    empty = empty || (reduced[d] && type.shape[d] == 0);
    if (!reduced[d] || keepdims) shape.push_back(reduced[d] ? 1 : type.shape[d]);
  }
  if (!empty) return std::nullopt;
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(shape));
  Tensor extremum(type.dtype, shape);
  for (int64_t i = 0; i < extremum.num_elements(); ++i) {
    if (IsFloat(type.dtype)) {
      extremum.SetDouble(i, is_max ? -std::numeric_limits<double>::infinity()
                                   : std::numeric_limits<double>::infinity());
    } else if (type.dtype == DType::kBool) {
      extremum.SetInt(i, is_max ? 0 : 1);
    } else {
      extremum.SetInt(i, is_max ? IntegerMinBits(type.dtype) : IntegerMaxBits(type.dtype));
    }
  }
  return extremum;
}

// ReduceSum takes its axes as an input from opset 13 (the others from 18),
// with noop_with_empty_axes; before that, `axes` is an attribute. ONNX's
// keepdims defaults to 1, loom's to 0.
Converter Reduce(std::string loom_op) {
  return [loom_op](NodeContext& ctx) -> absl::Status {
    const bool axes_input =
        ctx.opset() >= 18 || (ctx.op_type() == "ReduceSum" && ctx.opset() >= 13);
    std::vector<int64_t> axes;
    bool noop_when_empty = false;
    if (axes_input) {
      if (absl::Status s = ctx.CheckAttrs({{"keepdims", kInt}, {"noop_with_empty_axes", kInt}});
          !s.ok()) {
        return s;
      }
      if (ctx.HasInput(1)) {
        LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> given, ctx.ConstInts(1, "axes"));
        axes = std::move(given);
      }
      noop_when_empty = ctx.Int("noop_with_empty_axes", 0) != 0;
    } else {
      if (absl::Status s = ctx.CheckAttrs({{"keepdims", kInt}, {"axes", kInts}}); !s.ok()) {
        return s;
      }
      axes = ctx.Ints("axes");
    }
    const ValueId x = ctx.In(0);
    if (axes.empty() && noop_when_empty) {
      ctx.Bind(0, x);
      return ctx.status();
    }
    if (loom_op == "reduce_max" || loom_op == "reduce_min") {
      LOOM_ASSIGN_OR_RETURN(std::optional<Tensor> extremum,
                            EmptyExtremum(ctx, ctx.TypeOf(x), axes, ctx.Int("keepdims", 1) != 0,
                                          loom_op == "reduce_max"));
      if (extremum.has_value()) {
        ctx.ConstantOutput(0, *std::move(extremum));
        return ctx.status();
      }
    }
    Attrs attrs = MakeAttrs({{"keepdims", ctx.Int("keepdims", 1)}});
    if (!axes.empty()) attrs.Set("axes", axes);
    // ReduceMax and ReduceMin take bools from opset 20: any and all, which
    // loom computes as the maximum and minimum of 0s and 1s.
    const bool on_bools = ctx.TypeOf(x).dtype == DType::kBool;
    if (on_bools && (loom_op == "reduce_max" || loom_op == "reduce_min")) {
      const ValueId reduced = ctx.Emit(loom_op, {ctx.CastTo(x, DType::kU8)}, std::move(attrs));
      ctx.EmitOutput(0, "cast", {reduced}, MakeAttrs({{"to", std::string("bool")}}));
      return ctx.status();
    }
    ctx.EmitOutput(0, loom_op, {x}, std::move(attrs));
    return ctx.status();
  };
}

Converter ArgReduce(std::string loom_op) {
  return [loom_op](NodeContext& ctx) -> absl::Status {
    if (absl::Status s =
            ctx.CheckAttrs({{"axis", kInt}, {"keepdims", kInt}, {"select_last_index", kInt}});
        !s.ok()) {
      return s;
    }
    ctx.EmitOutput(0, loom_op, {ctx.In(0)},
                   MakeAttrs({{"axis", ctx.Int("axis", 0)},
                              {"keepdims", ctx.Int("keepdims", 1)},
                              {"select_last_index", ctx.Int("select_last_index", 0)}}));
    return ctx.status();
  };
}

// hardmax along `axis` (normalised): 1 at the first maximum, 0 elsewhere.
ValueId Hardmax(NodeContext& ctx, ValueId x, int64_t axis) {
  const TensorType type = ctx.TypeOf(x);
  const ValueId argmax =
      ctx.Emit("argmax", {x}, MakeAttrs({{"axis", axis}, {"keepdims", int64_t{1}}}));
  Shape iota_shape(type.shape.size(), 1);
  iota_shape[axis] = type.shape[axis];
  Tensor iota(DType::kI64, iota_shape);
  for (int64_t i = 0; i < iota.num_elements(); ++i) iota.SetInt(i, i);
  const ValueId hit = ctx.Emit("equal", {argmax, ctx.Constant(std::move(iota))});
  return ctx.CastTo(hit, type.dtype);
}

// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is flattened
// to 2-D at `axis` (default 1) and the op runs over the second dim.
Converter SoftmaxLike(std::string loom_op) {
  return [loom_op](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}}));
    const bool flattens = ctx.opset() < 13;
    const ValueId x = ctx.In(0);
    const Shape shape = ctx.TypeOf(x).shape;
    if (!ctx.ok()) return ctx.status();
    const int64_t rank = shape.size();
    LOOM_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizedAxis(ctx, ctx.Int("axis", flattens ? 1 : -1), rank));
    ValueId input = x;
    int64_t op_axis = axis;
    if (flattens && axis != rank - 1) {
      const Shape outer(shape.begin(), shape.begin() + axis);
      const Shape inner(shape.begin() + axis, shape.end());
      input = ctx.Emit("reshape", {x},
                       MakeAttrs({{"shape", Shape{NumElements(outer), NumElements(inner)}}}));
      op_axis = 1;
    }
    ValueId result = loom_op == "hardmax"
                         ? Hardmax(ctx, input, op_axis)
                         : ctx.Emit(loom_op, {input}, MakeAttrs({{"axis", op_axis}}));
    if (input != x) {
      result = ctx.Emit("reshape", {result}, MakeAttrs({{"shape", shape}}));
    }
    ctx.Bind(0, result);
    return ctx.status();
  };
}

// `operand` broadcast to `shape` when it has another shape.
ValueId BroadcastTo(NodeContext& ctx, ValueId operand, const Shape& shape) {
  if (ctx.TypeOf(operand).shape == shape) return operand;
  return ctx.Emit("expand", {operand}, MakeAttrs({{"shape", shape}}));
}

// Y = layer_norm(X); the optional Mean and InvStdDev outputs are the
// statistics over axes axis..rank-1, kept as size-1 dims.
absl::Status ConvertLayerNormalization(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"axis", kInt}, {"epsilon", kFloat}, {"stash_type", kInt}});
      !s.ok()) {
    return s;
  }
  if (ctx.Int("stash_type", 1) != 1) {
    return ctx.Refuse("only stash_type 1 (float) is supported");
  }
  const double epsilon = ctx.Float("epsilon", 1e-5f);
  const ValueId x = ctx.In(0);
  const TensorType type = ctx.TypeOf(x);
  if (!ctx.ok()) return ctx.status();
  const int64_t rank = type.shape.size();
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, ctx.Int("axis", -1), rank));
  const Shape normalized(type.shape.begin() + axis, type.shape.end());
  std::vector<ValueId> inputs = {x, BroadcastTo(ctx, ctx.In(1), normalized)};
  if (ctx.HasInput(2)) inputs.push_back(BroadcastTo(ctx, ctx.In(2), normalized));
  ctx.EmitOutput(0, "layer_norm", std::move(inputs),
                 MakeAttrs({{"axis", axis}, {"epsilon", epsilon}}));
  if (!ctx.WantsOutput(1) && !ctx.WantsOutput(2)) return ctx.status();
  const Attrs stats = MakeAttrs({{"axes", TrailingAxes(axis, rank)}, {"keepdims", int64_t{1}}});
  const ValueId mean = ctx.Emit("reduce_mean", {x}, stats);
  const ValueId centered = ctx.Emit("sub", {x, mean});
  const ValueId variance = ctx.Emit("reduce_mean", {ctx.Emit("mul", {centered, centered})}, stats);
  ctx.Bind(1, mean);
  if (ctx.WantsOutput(2)) {
    ctx.EmitOutput(2, "rsqrt", {ctx.Emit("add", {variance, ctx.Scalar(type.dtype, epsilon)})});
  }
  return ctx.status();
}

absl::Status ConvertInstanceNormalization(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"epsilon", kFloat}}));
  ctx.EmitOutput(0, "instance_norm", {ctx.In(0), ctx.In(1), ctx.In(2)},
                 MakeAttrs({{"epsilon", ctx.Float("epsilon", 1e-5f)}}));
  return ctx.status();
}

// GroupNormalization. Version 18 takes scale and bias per group
// ([num_groups], repeated here over each group's channels); 21 per channel,
// with stash_type 1: the normalisation computed in float (loom's group_norm
// computes in double and rounds once, which for a float X is that).
absl::Status ConvertGroupNormalization(NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"epsilon", kFloat}, {"num_groups", kInt}};
  const bool per_channel = ctx.opset() >= 21;
  if (per_channel) accepted.push_back({"stash_type", kInt});
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  if (!ctx.HasAttr("num_groups")) return ctx.Refuse("attribute 'num_groups' is required");
  if (ctx.Int("stash_type", 1) != 1) {
    return ctx.Refuse("only stash_type 1 (float) is supported");
  }
  const int64_t groups = ctx.Int("num_groups", 0);
  const ValueId x = ctx.In(0);
  ValueId scale = ctx.In(1), bias = ctx.In(2);
  const TensorType type = ctx.TypeOf(x);
  if (!ctx.ok()) return ctx.status();
  if (per_channel && type.dtype == DType::kF64) {
    return ctx.Refuse(
        "stash_type 1 normalises a double X in float; loom's group_norm computes in double");
  }
  if (type.shape.size() < 2) return ctx.Refuse("X must have rank >= 2 ([N, C, ...])");
  const int64_t channels = type.shape[1];
  if (groups <= 0 || channels % groups != 0) {
    return ctx.Refuse(absl::StrCat("attribute 'num_groups' (", groups,
                                   ") must be positive and divide the ", channels, " channels"));
  }
  if (!per_channel) {
    // Channel c belongs to group c / (C / G).
    Tensor group_of(DType::kI64, {channels});
    for (int64_t c = 0; c < channels; ++c) group_of.SetInt(c, c / (channels / groups));
    const ValueId index = ctx.Constant(std::move(group_of));
    scale = ctx.Emit("gather", {scale, index}, MakeAttrs({{"axis", int64_t{0}}}));
    bias = ctx.Emit("gather", {bias, index}, MakeAttrs({{"axis", int64_t{0}}}));
  }
  ctx.EmitOutput(0, "group_norm", {x, scale, bias},
                 MakeAttrs({{"num_groups", groups}, {"epsilon", ctx.Float("epsilon", 1e-5f)}}));
  return ctx.status();
}

// Inference only: the running statistics are inputs, and the training
// outputs (updated statistics) are refused.
absl::Status ConvertBatchNormalization(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"epsilon", kFloat},
                                       {"momentum", kFloat},
                                       {"training_mode", kInt},
                                       {"spatial", kInt},
                                       {"is_test", kInt}});
      !s.ok()) {
    return s;
  }
  if (ctx.Int("training_mode", 0) != 0 || ctx.num_outputs() > 1) {
    return ctx.Refuse("training mode is not supported (loom runs inference)");
  }
  if (ctx.Int("spatial", 1) != 1) {
    return ctx.Refuse("spatial 0 is not supported");
  }
  std::vector<ValueId> inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(ctx.In(i));
  ctx.EmitOutput(0, "batch_norm", std::move(inputs),
                 MakeAttrs({{"epsilon", ctx.Float("epsilon", 1e-5f)}}));
  return ctx.status();
}

// GlobalAveragePool and GlobalMaxPool: a reduction over the spatial dims.
Converter GlobalPool(std::string loom_op) {
  return [loom_op](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    const ValueId x = ctx.In(0);
    const int64_t rank = ctx.RankOf(x);
    if (!ctx.ok()) return ctx.status();
    if (rank < 3) return ctx.Refuse("the input must have rank >= 3");
    ctx.EmitOutput(0, loom_op, {x},
                   MakeAttrs({{"axes", TrailingAxes(2, rank)}, {"keepdims", int64_t{1}}}));
    return ctx.status();
  };
}

// --- convolutions and pools -----------------------------------------------

// Checks that X is [N, C, spatial...] and returns its shape.
absl::StatusOr<Shape> SpatialInputShape(NodeContext& ctx) {
  const Shape shape = ctx.TypeOf(ctx.In(0)).shape;
  if (!ctx.ok()) return ctx.status();
  if (shape.size() < 3) {
    return ctx.Refuse(
        absl::StrCat("X must have rank >= 3 ([N, C, spatial...]), got ", ShapeToString(shape)));
  }
  return shape;
}

// The list attribute `name` with one entry per spatial dim, `fill` for each
// when absent.
absl::StatusOr<std::vector<int64_t>> SpatialAttr(const NodeContext& ctx, absl::string_view name,
                                                 size_t count, int64_t fill) {
  if (!ctx.HasAttr(name)) return std::vector<int64_t>(count, fill);
  std::vector<int64_t> values = ctx.Ints(name);
  if (values.size() != count) {
    return ctx.Refuse(absl::StrCat("attribute '", name, "' ", ShapeToString(values), " has ",
                                   values.size(), " entries; expected ", count));
  }
  return values;
}

// The attributes of loom's sliding-window ops (strides, dilations and
// explicit pads) for X of `shape` and a kernel of `kernel` positions per
// spatial dim. auto_pad SAME_UPPER / SAME_LOWER pads so that the output has
// ceil(size / stride) positions, the odd one at the end / the beginning;
// VALID pads nothing; NOTSET (the default) takes `pads`.
absl::StatusOr<Attrs> WindowAttrs(const NodeContext& ctx, const Shape& shape,
                                  const std::vector<int64_t>& kernel) {
  const size_t spatial = shape.size() - 2;
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialAttr(ctx, "strides", spatial, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, SpatialAttr(ctx, "dilations", spatial, 1));
  const std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  std::vector<int64_t> pads(2 * spatial, 0);
  if (auto_pad == "NOTSET") {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> given, SpatialAttr(ctx, "pads", 2 * spatial, 0));
    pads = std::move(given);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      const int64_t size = shape[d + 2], stride = strides[d];
      const int64_t dilation = dilations[d];
      for (int64_t v : {stride, dilation, kernel[d]}) {
        if (v < 1 || v > kMaxTensorElements) {
          return ctx.Refuse(absl::StrCat(
              "auto_pad ", auto_pad, " needs strides ", ShapeToString(strides), ", dilations ",
              ShapeToString(dilations), " and kernel ", ShapeToString(kernel), " in [1, 2^40]"));
        }
      }
      const int64_t out = (size + stride - 1) / stride;
      const int64_t extent =
          std::min(SaturatingMul(dilation, kernel[d] - 1), kMaxTensorElements) + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - size);
      const int64_t smaller = total / 2;
      pads[d] = auto_pad == "SAME_UPPER" ? smaller : total - smaller;
      pads[d + spatial] = total - pads[d];
    }
  } else if (auto_pad != "VALID") {
    return ctx.Refuse(absl::StrCat("attribute 'auto_pad' '", auto_pad,
                                   "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID"));
  }
  return MakeAttrs({{"strides", std::move(strides)},
                    {"dilations", std::move(dilations)},
                    {"pads", std::move(pads)}});
}

// The kernel of Conv or ConvTranspose: the spatial shape of W (input
// `weight_input`, with X's `rank`, laid out as `layout`); kernel_shape,
// when given, must agree.
absl::StatusOr<std::vector<int64_t>> WeightKernel(NodeContext& ctx, size_t rank,
                                                  absl::string_view layout, int weight_input) {
  const Shape weight = ctx.TypeOf(ctx.In(weight_input)).shape;
  if (!ctx.ok()) return ctx.status();
  if (weight.size() != rank) {
    return ctx.Refuse(
        absl::StrCat("W ", ShapeToString(weight), " must have X's rank ", rank, " (", layout, ")"));
  }
  std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  if (ctx.HasAttr("kernel_shape") && ctx.Ints("kernel_shape") != kernel) {
    return ctx.Refuse(absl::StrCat("attribute 'kernel_shape' ",
                                   ShapeToString(ctx.Ints("kernel_shape")), " disagrees with W ",
                                   ShapeToString(weight)));
  }
  return kernel;
}

// Checks the attributes of Conv (with ConvTranspose's `extra` ones) and
// reads X's shape [N, C, spatial...] and W's kernel (W input
// `weight_input`, laid out as `layout`).
absl::Status ReadConvOperands(NodeContext& ctx, std::vector<AttrRule> extra,
                              absl::string_view layout, Shape& shape, std::vector<int64_t>& kernel,
                              int weight_input = 1) {
  std::vector<AttrRule> accepted = {{"auto_pad", kString}, {"dilations", kInts},
                                    {"group", kInt},       {"kernel_shape", kInts},
                                    {"pads", kInts},       {"strides", kInts}};
  accepted.insert(accepted.end(), extra.begin(), extra.end());
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  LOOM_ASSIGN_OR_RETURN(Shape x, SpatialInputShape(ctx));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> w, WeightKernel(ctx, x.size(), layout, weight_input));
  shape = std::move(x);
  kernel = std::move(w);
  return absl::OkStatus();
}

// Conv; the kernel is the weight's spatial shape (kernel_shape, when given,
// must agree).
absl::Status ConvertConv(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(Attrs attrs, ConvAttrs(ctx, /*weight_input=*/1));
  std::vector<ValueId> inputs = {ctx.In(0), ctx.In(1)};
  if (ctx.HasInput(2)) inputs.push_back(ctx.In(2));
  ctx.EmitOutput(0, "conv", std::move(inputs), std::move(attrs));
  return ctx.status();
}

// Python's floor division (for the negative total paddings of an
// output_shape larger than the full result).
int64_t FloorHalf(int64_t value) { return value >= 0 ? value / 2 : -((1 - value) / 2); }

// ConvTranspose. Explicit pads (NOTSET, the default), none (VALID), or pads
// that give the output `output_shape` (spatial dims, or all), or with
// SAME_UPPER / SAME_LOWER input * stride positions: of the total padding
// stride (S - 1) + output_padding + dilation (K - 1) + 1 - output, the
// begin gets the smaller half with SAME_UPPER and the larger otherwise
// (ONNX's equations; a negative total adds positions only the bias
// reaches).
absl::Status ConvertConvTranspose(NodeContext& ctx) {
  Shape x;
  std::vector<int64_t> kernel;
  if (absl::Status s = ReadConvOperands(ctx, {{"output_padding", kInts}, {"output_shape", kInts}},
                                        "[C, M/group, kernel...]", x, kernel);
      !s.ok()) {
    return s;
  }
  const size_t spatial = x.size() - 2;
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialAttr(ctx, "strides", spatial, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, SpatialAttr(ctx, "dilations", spatial, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding,
                        SpatialAttr(ctx, "output_padding", spatial, 0));
  const std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return ctx.Refuse(absl::StrCat("attribute 'auto_pad' '", auto_pad,
                                   "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID"));
  }
  std::vector<int64_t> output;  // the spatial sizes asked for, if any
  if (ctx.HasAttr("output_shape")) {
    output = ctx.Ints("output_shape");
    if (output.size() == spatial + 2) output.erase(output.begin(), output.begin() + 2);
    if (output.size() != spatial) {
      return ctx.Refuse(absl::StrCat("attribute 'output_shape' ",
                                     ShapeToString(ctx.Ints("output_shape")), " needs ", spatial,
                                     " (or ", spatial + 2, ") entries for X ", ShapeToString(x)));
    }
    if (ctx.HasAttr("pads")) {
      return ctx.Refuse("attributes 'pads' and 'output_shape' are both given; loom takes one");
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      output.push_back(SaturatingMul(x[d + 2], strides[d]));
    }
  }
  std::vector<int64_t> pads(2 * spatial, 0);
  if (!output.empty()) {
    for (size_t d = 0; d < spatial; ++d) {
      for (int64_t v :
           {strides[d], dilations[d], kernel[d], x[d + 2], output[d], output_padding[d]}) {
        if (v < 0 || v > kMaxTensorElements) {
          return ctx.Refuse(absl::StrCat("output_shape ", ShapeToString(output), ", strides ",
                                         ShapeToString(strides), ", dilations ",
                                         ShapeToString(dilations), ", output_padding ",
                                         ShapeToString(output_padding), " and X ", ShapeToString(x),
                                         " must lie in [0, 2^40]"));
        }
      }
      const int64_t total =
          std::min(SaturatingMul(strides[d], x[d + 2] - 1), kMaxTensorElements) +
          output_padding[d] +
          std::min(SaturatingMul(dilations[d], kernel[d] - 1), kMaxTensorElements) + 1 - output[d];
      const int64_t half = FloorHalf(total);
      pads[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[d + spatial] = total - pads[d];
    }
  } else if (auto_pad == "NOTSET") {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> given, SpatialAttr(ctx, "pads", 2 * spatial, 0));
    pads = std::move(given);
    for (int64_t p : pads) {
      if (p < 0) {
        return ctx.Refuse(
            absl::StrCat("attribute 'pads' ", ShapeToString(pads), " has a negative entry"));
      }
    }
  }
  std::vector<ValueId> inputs = {ctx.In(0), ctx.In(1)};
  if (ctx.HasInput(2)) inputs.push_back(ctx.In(2));
  ctx.EmitOutput(0, "conv_transpose", std::move(inputs),
                 MakeAttrs({{"strides", std::move(strides)},
                            {"dilations", std::move(dilations)},
                            {"pads", std::move(pads)},
                            {"output_padding", std::move(output_padding)},
                            {"group", ctx.Int("group", 1)}}));
  return ctx.status();
}

// MaxPool (with its Indices output when wanted) and AveragePool.
Converter Pool(std::string loom_op) {
  return [loom_op](NodeContext& ctx) -> absl::Status {
    const bool average = loom_op == "average_pool";
    std::vector<AttrRule> accepted = {{"auto_pad", kString}, {"ceil_mode", kInt},
                                      {"dilations", kInts},  {"kernel_shape", kInts},
                                      {"pads", kInts},       {"strides", kInts}};
    accepted.push_back(average ? AttrRule{"count_include_pad", kInt}
                               : AttrRule{"storage_order", kInt});
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
    if (!ctx.HasAttr("kernel_shape")) {
      return ctx.Refuse("attribute 'kernel_shape' is required");
    }
    LOOM_ASSIGN_OR_RETURN(Shape shape, SpatialInputShape(ctx));
    const std::vector<int64_t> kernel = ctx.Ints("kernel_shape");
    if (kernel.size() != shape.size() - 2) {
      return ctx.Refuse(absl::StrCat("attribute 'kernel_shape' ", ShapeToString(kernel),
                                     " needs one entry per spatial dim of X ",
                                     ShapeToString(shape)));
    }
    LOOM_ASSIGN_OR_RETURN(Attrs attrs, WindowAttrs(ctx, shape, kernel));
    attrs.Set("kernel_shape", kernel);
    attrs.Set("ceil_mode", ctx.Int("ceil_mode", 0));
    if (average) attrs.Set("count_include_pad", ctx.Int("count_include_pad", 0));
    if (!average && ctx.WantsOutput(1)) {  // Indices
      attrs.Set("storage_order", ctx.Int("storage_order", 0));
      ctx.EmitNode(loom_op, {ctx.In(0)}, std::move(attrs), 2, {0, 1});
      return ctx.status();
    }
    ctx.EmitOutput(0, loom_op, {ctx.In(0)}, std::move(attrs));
    return ctx.status();
  };
}

// Grows the end pads of window `attrs` (from WindowAttrs) so that a window
// sum with floor rounding gives ceil_mode's output: the ceiling of the
// division, less a last window that would start in the end padding (as
// loom's pools count).
void PadForCeilMode(const Shape& shape, const std::vector<int64_t>& kernel, Attrs& attrs) {
  const std::vector<int64_t> strides = attrs.GetInts("strides", {});
  const std::vector<int64_t> dilations = attrs.GetInts("dilations", {});
  std::vector<int64_t> pads = attrs.GetInts("pads", {});
  const size_t spatial = kernel.size();
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t size = shape[d + 2], begin = pads[d], stride = strides[d];
    const int64_t padded = size + begin + pads[d + spatial];
    const int64_t extent = dilations[d] * (kernel[d] - 1) + 1;
    if (padded < extent || (padded - extent) % stride == 0) continue;
    int64_t out = (padded - extent) / stride + 2;
    if ((out - 1) * stride >= size + begin) --out;
    pads[d + spatial] += std::max<int64_t>(0, (out - 1) * stride + extent - padded);
  }
  attrs.Set("pads", std::move(pads));
}

// LpPool: (sum over each window of |x|^p)^(1/p), the sums a depthwise conv
// with a kernel of ones (the padding adds zeros to them). p is an int from
// version 2; ceil_mode and dilations come in 18.
absl::Status ConvertLpPool(NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"auto_pad", kString},
                                    {"kernel_shape", kInts},
                                    {"p", kInt},
                                    {"pads", kInts},
                                    {"strides", kInts}};
  if (ctx.opset() >= 18) {
    accepted.push_back({"ceil_mode", kInt});
    accepted.push_back({"dilations", kInts});
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  if (!ctx.HasAttr("kernel_shape")) return ctx.Refuse("attribute 'kernel_shape' is required");
  LOOM_ASSIGN_OR_RETURN(Shape shape, SpatialInputShape(ctx));
  const std::vector<int64_t> kernel = ctx.Ints("kernel_shape");
  if (kernel.size() != shape.size() - 2) {
    return ctx.Refuse(absl::StrCat("attribute 'kernel_shape' ", ShapeToString(kernel),
                                   " needs one entry per spatial dim of X ", ShapeToString(shape)));
  }
  const int64_t p = ctx.Int("p", 2);
  if (p < 1) return ctx.Refuse(absl::StrCat("attribute 'p' must be positive, got ", p));
  const int64_t ceil_mode = ctx.Int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) {
    return ctx.Refuse(absl::StrCat("attribute 'ceil_mode' must be 0 or 1, got ", ceil_mode));
  }
  LOOM_ASSIGN_OR_RETURN(Attrs attrs, WindowAttrs(ctx, shape, kernel));
  if (ceil_mode == 1) PadForCeilMode(shape, kernel, attrs);
  const ValueId x = ctx.In(0);
  const DType dtype = ctx.TypeOf(x).dtype;
  Shape weight_shape = {shape[1], 1};
  weight_shape.insert(weight_shape.end(), kernel.begin(), kernel.end());
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(weight_shape));
  Tensor ones(dtype, weight_shape);
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.SetDouble(i, 1);
  attrs.Set("group", shape[1]);
  const ValueId powered =
      ctx.Emit("pow", {ctx.Emit("abs", {x}), ctx.Scalar(dtype, static_cast<double>(p))});
  const ValueId sums = ctx.Emit("conv", {powered, ctx.Constant(std::move(ones))}, std::move(attrs));
  ctx.EmitOutput(0, "pow", {sums, ctx.Scalar(dtype, 1.0 / static_cast<double>(p))});
  return ctx.status();
}

// LpNormalization: x / ||x||_p along `axis` (p 1 or 2); where the norm is
// 0 the output is 0 (as version 22 defines it; version 1 left it open).
absl::Status ConvertLpNormalization(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"p", kInt}}));
  const int64_t p = ctx.Int("p", 2);
  if (p != 1 && p != 2) {
    return ctx.Refuse(absl::StrCat("attribute 'p' must be 1 or 2, got ", p));
  }
  const ValueId x = ctx.In(0);
  const DType t = ctx.TypeOf(x).dtype;
  const ValueId norm = ctx.Emit(
      p == 1 ? "reduce_l1" : "reduce_l2", {x},
      MakeAttrs({{"axes", std::vector<int64_t>{ctx.Int("axis", -1)}}, {"keepdims", int64_t{1}}}));
  const ValueId zero = ctx.Scalar(t, 0);
  const ValueId is_zero = ctx.Emit("equal", {norm, zero});
  // The divisor is 1 where the norm is 0, so that no NaN is computed there.
  const ValueId divisor = ctx.Emit("where", {is_zero, ctx.Scalar(t, 1), norm});
  ctx.EmitOutput(0, "where", {is_zero, zero, ctx.Emit("div", {x, divisor})});
  return ctx.status();
}

// ONNX's function: (x - mean) / (sqrt(mean(x^2) - mean(x)^2) + 1e-9).
absl::Status ConvertMeanVarianceNormalization(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axes", kInts}}));
  const std::vector<int64_t> axes =
      ctx.HasAttr("axes") ? ctx.Ints("axes") : std::vector<int64_t>{0, 2, 3};
  const ValueId x = ctx.In(0);
  const DType t = ctx.TypeOf(x).dtype;
  const Attrs stats = MakeAttrs({{"axes", axes}, {"keepdims", int64_t{1}}});
  const ValueId mean = ctx.Emit("reduce_mean", {x}, stats);
  const ValueId mean_of_squares = ctx.Emit("reduce_mean", {ctx.Emit("mul", {x, x})}, stats);
  const ValueId variance = ctx.Emit("sub", {mean_of_squares, ctx.Emit("mul", {mean, mean})});
  const ValueId deviation = ctx.Emit("add", {ctx.Emit("sqrt", {variance}), ctx.Scalar(t, 1e-9)});
  ctx.EmitOutput(0, "div", {ctx.Emit("sub", {x, mean}), deviation});
  return ctx.status();
}

// --- resize ------------------------------------------------------------------

// A float input's values (empty when the input is absent or empty).
absl::StatusOr<std::vector<double>> ConstFloats(NodeContext& ctx, int i, absl::string_view what) {
  if (!ctx.HasInput(i)) return std::vector<double>{};
  LOOM_ASSIGN_OR_RETURN(Tensor data, ctx.ConstInput(i, what));
  if (!IsFloat(data.dtype())) {
    return ctx.Refuse(absl::StrCat("input '", ctx.proto().input(i), "' (", what,
                                   ") must be float, not ", DTypeName(data.dtype())));
  }
  std::vector<double> values;
  for (int64_t k = 0; k < data.num_elements(); ++k) values.push_back(data.GetDouble(k));
  return values;
}

// Resize's `axes` (opset 18), normalised: the dims that scales, sizes and
// roi list; all dims when absent.
absl::StatusOr<std::vector<int64_t>> ResizeAxes(const NodeContext& ctx, int64_t rank) {
  if (!ctx.HasAttr("axes")) return TrailingAxes(0, rank);
  std::vector<int64_t> axes;
  for (int64_t axis : ctx.Ints("axes")) {
    LOOM_ASSIGN_OR_RETURN(int64_t normalized, NormalizedAxis(ctx, axis, rank));
    axes.push_back(normalized);
  }
  return axes;
}

// `all` (a value per dim) with the entries of `axes` replaced by `given`.
template <typename T>
absl::StatusOr<std::vector<T>> OnAllDims(const NodeContext& ctx, absl::string_view what,
                                         const std::vector<T>& given,
                                         const std::vector<int64_t>& axes, std::vector<T> all) {
  if (given.size() != axes.size()) {
    return ctx.Refuse(absl::StrCat(what, " has ", given.size(), " entries for the ", axes.size(),
                                   " axes ", ShapeToString(axes)));
  }
  for (size_t i = 0; i < axes.size(); ++i) all[axes[i]] = given[i];
  return all;
}

// Sets loom's sizes (and with keep_aspect_ratio_policy not_larger or
// not_smaller, scales) from ONNX's sizes for `axes`. Those policies scale
// every listed axis by the smallest or largest ratio size / input size and
// round the sizes half up.
absl::Status SetResizeSizes(const NodeContext& ctx, const Shape& shape,
                            const std::vector<int64_t>& axes, const std::vector<int64_t>& sizes,
                            Attrs& attrs) {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> all, OnAllDims(ctx, "sizes", sizes, axes, shape));
  const std::string policy = ctx.String("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller") {
    return ctx.Refuse(absl::StrCat("attribute 'keep_aspect_ratio_policy' '", policy,
                                   "' is not stretch, not_larger or not_smaller"));
  }
  if (policy != "stretch") {
    std::vector<double> ratios;
    for (int64_t axis : axes) {
      if (shape[axis] == 0) return ctx.Refuse("keep_aspect_ratio_policy needs nonempty axes");
      ratios.push_back(static_cast<double>(all[axis]) / static_cast<double>(shape[axis]));
    }
    const double scale = policy == "not_larger" ? *std::min_element(ratios.begin(), ratios.end())
                                                : *std::max_element(ratios.begin(), ratios.end());
    std::vector<double> scales(shape.size(), 1.0);
    for (int64_t axis : axes) {
      scales[axis] = scale;
      all[axis] = static_cast<int64_t>(std::floor(scale * static_cast<double>(shape[axis]) + 0.5));
    }
    attrs.Set("scales", std::move(scales));
  }
  attrs.Set("sizes", std::move(all));
  return absl::OkStatus();
}

// tf_crop_and_resize's roi (starts, then ends, for `axes`) over all dims,
// the others whole ([0, 1]).
absl::StatusOr<std::vector<double>> ResizeRoi(NodeContext& ctx, const std::vector<int64_t>& axes,
                                              int64_t rank) {
  LOOM_ASSIGN_OR_RETURN(std::vector<double> roi, ConstFloats(ctx, 1, "roi"));
  if (roi.empty()) return ctx.Refuse("tf_crop_and_resize needs the input roi");
  const size_t count = axes.size();
  if (roi.size() != 2 * count) {
    return ctx.Refuse(absl::StrCat("roi has ", roi.size(), " entries; the axes ",
                                   ShapeToString(axes), " need ", 2 * count));
  }
  const std::vector<double> starts(roi.begin(), roi.begin() + count);
  const std::vector<double> ends(roi.begin() + count, roi.end());
  LOOM_ASSIGN_OR_RETURN(std::vector<double> all,
                        OnAllDims(ctx, "roi", starts, axes, std::vector<double>(rank, 0.0)));
  LOOM_ASSIGN_OR_RETURN(std::vector<double> all_ends,
                        OnAllDims(ctx, "roi", ends, axes, std::vector<double>(rank, 1.0)));
  all.insert(all.end(), all_ends.begin(), all_ends.end());
  return all;
}

// Resize from opset 11: X, roi, scales, sizes, the last three known at
// import; exactly one of scales and sizes non-empty. roi matters only to
// tf_crop_and_resize. Opset 18 adds antialias, `axes` and
// keep_aspect_ratio_policy; 19 the coordinates half_pixel_symmetric.
absl::Status ConvertResize(NodeContext& ctx) {
  std::vector<AttrRule> accepted = {
      {"mode", kString},         {"coordinate_transformation_mode", kString},
      {"nearest_mode", kString}, {"cubic_coeff_a", kFloat},
      {"exclude_outside", kInt}, {"extrapolation_value", kFloat}};
  if (ctx.opset() >= 18) {
    accepted.push_back({"antialias", kInt});
    accepted.push_back({"axes", kInts});
    accepted.push_back({"keep_aspect_ratio_policy", kString});
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  const Shape shape = ctx.TypeOf(ctx.In(0)).shape;
  if (!ctx.ok()) return ctx.status();
  const int64_t rank = shape.size();
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ResizeAxes(ctx, rank));
  LOOM_ASSIGN_OR_RETURN(std::vector<double> scales, ConstFloats(ctx, 2, "scales"));
  std::vector<int64_t> sizes;
  if (ctx.HasInput(3)) {
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> given, ctx.ConstInts(3, "sizes"));
    sizes = std::move(given);
  }
  if (scales.empty() == sizes.empty()) {
    return ctx.Refuse("exactly one of the inputs scales and sizes must be given (non-empty)");
  }
  const std::string coordinates = ctx.String("coordinate_transformation_mode", "half_pixel");
  if (coordinates == "half_pixel_symmetric" && ctx.opset() < 19) {
    return ctx.Refuse("coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19");
  }
  Attrs attrs = MakeAttrs({{"mode", ctx.String("mode", "nearest")},
                           {"coordinate_transformation_mode", coordinates},
                           {"nearest_mode", ctx.String("nearest_mode", "round_prefer_floor")},
                           {"cubic_coeff_a", ctx.Float("cubic_coeff_a", -0.75)},
                           {"exclude_outside", ctx.Int("exclude_outside", 0)},
                           {"extrapolation_value", ctx.Float("extrapolation_value", 0)},
                           {"antialias", ctx.Int("antialias", 0)}});
  if (!scales.empty()) {
    LOOM_ASSIGN_OR_RETURN(std::vector<double> all,
                          OnAllDims(ctx, "scales", scales, axes, std::vector<double>(rank, 1.0)));
    attrs.Set("scales", std::move(all));
  } else {
    LOOM_RETURN_IF_ERROR(SetResizeSizes(ctx, shape, axes, sizes, attrs));
  }
  if (coordinates == "tf_crop_and_resize") {
    LOOM_ASSIGN_OR_RETURN(std::vector<double> roi, ResizeRoi(ctx, axes, rank));
    attrs.Set("roi", std::move(roi));
  }
  ctx.EmitOutput(0, "resize", {ctx.In(0)}, std::move(attrs));
  return ctx.status();
}

// Upsample (opsets 7 and 9, scales >= 1) and Resize before opset 11: asymmetric
// coordinates, and nearest's rule of ONNX Runtime (floor along dims that grow,
// ceil along dims that shrink: a node for each kind).
absl::Status ConvertUpsample(NodeContext& ctx) {
  const bool upsample = ctx.op_type() == "Upsample";
  std::vector<AttrRule> accepted = {{"mode", kString}};
  if (upsample && ctx.opset() < 9) accepted.push_back({"scales", onnx::AttributeProto::FLOATS});
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  std::vector<double> scales;
  if (upsample && ctx.opset() < 9) {
    if (!ctx.HasAttr("scales")) return ctx.Refuse("attribute 'scales' is required");
    scales = ctx.Floats("scales");
  } else {
    LOOM_ASSIGN_OR_RETURN(std::vector<double> given, ConstFloats(ctx, 1, "scales"));
    scales = std::move(given);
  }
  const std::string mode = ctx.String("mode", "nearest");
  if (mode != "nearest" && mode != "linear") {
    return ctx.Refuse(absl::StrCat("attribute 'mode' \"", mode, "\" is not nearest or linear"));
  }
  for (double s : scales) {
    if (upsample && !(s >= 1)) {
      return ctx.Refuse(absl::StrCat("scales must be >= 1, got ", s));
    }
  }
  ValueId y = ctx.In(0);
  // Nearest: the shrinking dims (ceil), then the growing ones (floor).
  std::vector<std::pair<std::vector<double>, const char*>> steps;
  if (mode == "linear") {
    steps.push_back({scales, "floor"});
  } else {
    std::vector<double> down = scales, up = scales;
    bool any_down = false;
    for (size_t d = 0; d < scales.size(); ++d) {
      (scales[d] < 1 ? up : down)[d] = 1;
      any_down = any_down || scales[d] < 1;
    }
    if (any_down) steps.push_back({down, "ceil"});
    if (!any_down || up != std::vector<double>(scales.size(), 1.0)) steps.push_back({up, "floor"});
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    Attrs attrs = MakeAttrs({{"mode", mode},
                             {"coordinate_transformation_mode", std::string("asymmetric")},
                             {"nearest_mode", std::string(steps[i].second)},
                             {"scales", steps[i].first}});
    if (i + 1 < steps.size()) {
      y = ctx.Emit("resize", {y}, std::move(attrs));
    } else {
      ctx.EmitOutput(0, "resize", {y}, std::move(attrs));
    }
  }
  return ctx.status();
}

// --- losses ------------------------------------------------------------------

// NegativeLogLikelihoodLoss of `log_prob` [N, C, d...] at `target` [N, d...]
// (known at import or only at run time: a gather_elements along the class
// axis, which checks each target as it runs; a negative one counts from the
// end, as numpy's take_along_axis in ONNX's reference): loss =
// -log_prob[n, target, d...] * weight[target], 0 where the target is
// ignore_index; reduced as ONNX's reference does ("mean" divides by the sum
// of the weights used).
absl::Status EmitNllLoss(NodeContext& ctx, ValueId log_prob, int target_input, int weight_input) {
  const ValueId target = ctx.In(target_input);
  const TensorType type = ctx.TypeOf(log_prob);
  const TensorType target_type = ctx.TypeOf(target);
  if (!ctx.ok()) return ctx.status();
  const Shape& shape = type.shape;
  Shape expected_target = shape;
  if (shape.size() >= 2) expected_target.erase(expected_target.begin() + 1);
  if (shape.size() < 2 || target_type.shape != expected_target || !IsInteger(target_type.dtype)) {
    return ctx.Refuse(absl::StrCat("targets ", TypeToString(target_type), " do not fit input ",
                                   TypeToString(type)));
  }
  const std::string reduction = ctx.String("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    return ctx.Refuse(absl::StrCat("reduction '", reduction, "' is unknown"));
  }
  // Per target element: whether it counts, and the class it picks (0 for
  // an ignored one, which may lie outside the classes).
  ValueId mask, picked_class = target;
  if (ctx.HasAttr("ignore_index")) {
    const double ignored = static_cast<double>(ctx.Int("ignore_index", 0));
    const ValueId counts = ctx.Emit("not_equal", {target, ctx.Scalar(target_type.dtype, ignored)});
    picked_class = ctx.Emit("where", {counts, target, ctx.Scalar(target_type.dtype, 0)});
    mask = ctx.CastTo(counts, type.dtype);
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(target_type.shape));
    Tensor ones(type.dtype, target_type.shape);
    for (int64_t i = 0; i < ones.num_elements(); ++i) ones.SetDouble(i, 1);
    mask = ctx.Constant(std::move(ones));
  }
  const ValueId picked = ctx.Emit(
      "squeeze",
      {ctx.Emit("gather_elements",
                {log_prob, ctx.Emit("unsqueeze", {picked_class}, MakeAttrs({{"axes", Shape{1}}}))},
                MakeAttrs({{"axis", int64_t{1}}}))},
      MakeAttrs({{"axes", Shape{1}}}));
  ValueId weight = mask;
  if (ctx.HasInput(weight_input)) {
    const ValueId gathered =
        ctx.Emit("gather", {ctx.In(weight_input), picked_class}, MakeAttrs({{"axis", int64_t{0}}}));
    weight = ctx.Emit("mul", {gathered, weight});
  }
  const ValueId loss = ctx.Emit("neg", {ctx.Emit("mul", {picked, weight})});
  if (reduction == "none") {
    ctx.Bind(0, loss);
  } else if (reduction == "sum") {
    ctx.EmitOutput(0, "reduce_sum", {loss});
  } else {
    ctx.EmitOutput(0, "div", {ctx.Emit("reduce_sum", {loss}), ctx.Emit("reduce_sum", {weight})});
  }
  return ctx.status();
}

absl::Status ConvertNegativeLogLikelihoodLoss(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"reduction", kString}, {"ignore_index", kInt}}); !s.ok()) {
    return s;
  }
  return EmitNllLoss(ctx, ctx.In(0), 1, 2);
}

// The NLL loss of log_softmax(scores) over the class axis 1; the optional
// second output is that log_softmax.
absl::Status ConvertSoftmaxCrossEntropyLoss(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"reduction", kString}, {"ignore_index", kInt}}); !s.ok()) {
    return s;
  }
  const ValueId log_prob =
      ctx.EmitNode("log_softmax", {ctx.In(0)}, MakeAttrs({{"axis", int64_t{1}}}), 1, {1})[0];
  return EmitNllLoss(ctx, log_prob, 1, 2);
}

// --- recurrences -------------------------------------------------------------

struct RecurrentOp {
  std::string loom_op;
  int gates;               // 4 lstm, 3 gru, 1 rnn
  int max_inputs;          // 8 lstm, 6 gru and rnn
  std::string extra_attr;  // input_forget (lstm), linear_before_reset (gru)
};

// Zeros for an absent optional input that comes before a present one (loom's
// optional inputs are trailing only): B, initial_h, initial_c; and the full
// length for sequence_lens.
ValueId MaterializeInput(NodeContext& ctx, const RecurrentOp& op, int index, const TensorType& x,
                         int64_t num_directions, int64_t hidden, bool batch_first) {
  const int64_t seq = x.shape[batch_first ? 1 : 0];
  const int64_t batch = x.shape[batch_first ? 0 : 1];
  switch (index) {
    case 3:
      return ctx.Constant(Tensor(x.dtype, {num_directions, 2 * op.gates * hidden}));
    case 4: {
      Tensor lengths(DType::kI32, {batch});
      for (int64_t b = 0; b < batch; ++b) lengths.SetInt(b, seq);
      return ctx.Constant(std::move(lengths));
    }
    default:  // initial_h, initial_c
      return ctx.Constant(Tensor(x.dtype, batch_first ? Shape{batch, num_directions, hidden}
                                                      : Shape{num_directions, batch, hidden}));
  }
}

// loom's attributes for a recurrence: ONNX's, with hidden_size always set.
Attrs RecurrentAttrs(const NodeContext& ctx, const RecurrentOp& op, int64_t hidden) {
  Attrs attrs = MakeAttrs({{"hidden_size", hidden}});
  if (ctx.HasAttr("direction")) {
    attrs.Set("direction", ctx.String("direction", ""));
  }
  if (ctx.HasAttr("layout")) attrs.Set("layout", ctx.Int("layout", 0));
  if (ctx.HasAttr("activations")) {
    attrs.Set("activations", ctx.Strings("activations"));
  }
  if (ctx.HasAttr("clip")) attrs.Set("clip", ctx.Float("clip", 0));
  if (!op.extra_attr.empty() && ctx.HasAttr(op.extra_attr)) {
    attrs.Set(op.extra_attr, ctx.Int(op.extra_attr, 0));
  }
  return attrs;
}

// LSTM, GRU and RNN map 1:1 onto loom's ops, whose optional inputs and
// outputs are trailing only: inputs absent before the last present one are
// materialised, and outputs up to the last wanted one are all produced.
Converter Recurrent(RecurrentOp op) {
  return [op](NodeContext& ctx) -> absl::Status {
    std::vector<AttrRule> accepted = {{"hidden_size", kInt},
                                      {"direction", kString},
                                      {"activations", kStrings},
                                      {"clip", kFloat},
                                      {"layout", kInt}};
    if (!op.extra_attr.empty()) accepted.push_back({op.extra_attr, kInt});
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
    if (ctx.num_inputs() > op.max_inputs) return ctx.Refuse("too many inputs");
    const ValueId x = ctx.In(0), w = ctx.In(1), r = ctx.In(2);
    const TensorType x_type = ctx.TypeOf(x);
    const Shape r_shape = ctx.TypeOf(r).shape;
    if (!ctx.ok()) return ctx.status();
    if (x_type.shape.size() != 3 || r_shape.size() != 3) {
      return ctx.Refuse("X and R must be 3-D");
    }
    const int64_t hidden = ctx.Int("hidden_size", r_shape[2]);
    if (hidden != r_shape[2]) {  // R is [num_directions, gates * hidden, hidden]
      return ctx.Refuse(absl::StrCat("attribute 'hidden_size' is ", hidden, " but R ",
                                     ShapeToString(r_shape), " has hidden size ", r_shape[2]));
    }
    const int64_t num_directions = ctx.String("direction", "forward") == "bidirectional" ? 2 : 1;
    const bool batch_first = ctx.Int("layout", 0) == 1;
    int last_input = 2;
    for (int i = 3; i < ctx.num_inputs(); ++i) {
      if (ctx.HasInput(i)) last_input = i;
    }
    std::vector<ValueId> inputs = {x, w, r};
    for (int i = 3; i <= last_input; ++i) {
      inputs.push_back(ctx.HasInput(i) ? ctx.In(i)
                                       : MaterializeInput(ctx, op, i, x_type, num_directions,
                                                          hidden, batch_first));
    }
    int last_output = 0;
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      if (ctx.WantsOutput(i)) last_output = i;
    }
    std::vector<int> outputs;
    for (int i = 0; i <= last_output; ++i) outputs.push_back(i);
    ctx.EmitNode(op.loom_op, std::move(inputs), RecurrentAttrs(ctx, op, hidden), last_output + 1,
                 outputs);
    return ctx.status();
  };
}

}  // namespace

absl::StatusOr<Attrs> ConvAttrs(NodeContext& ctx, int weight_input) {
  Shape shape;
  std::vector<int64_t> kernel;
  if (absl::Status s =
          ReadConvOperands(ctx, {}, "[M, C/group, kernel...]", shape, kernel, weight_input);
      !s.ok()) {
    return s;
  }
  LOOM_ASSIGN_OR_RETURN(Attrs attrs, WindowAttrs(ctx, shape, kernel));
  attrs.Set("group", ctx.Int("group", 1));
  return attrs;
}

void AddNeuralConverters(ConverterMap& map) {
  map["MatMul"] = ConvertMatMul;
  map["Gemm"] = ConvertGemm;
  const std::pair<const char*, const char*> reductions[] = {
      {"ReduceSum", "reduce_sum"},
      {"ReduceMean", "reduce_mean"},
      {"ReduceMax", "reduce_max"},
      {"ReduceMin", "reduce_min"},
      {"ReduceProd", "reduce_prod"},
      {"ReduceL1", "reduce_l1"},
      {"ReduceL2", "reduce_l2"},
      {"ReduceLogSum", "reduce_log_sum"},
      {"ReduceLogSumExp", "reduce_log_sum_exp"},
      {"ReduceSumSquare", "reduce_sum_square"},
  };
  for (const auto& [onnx_op, loom_op] : reductions) {
    map[onnx_op] = Reduce(loom_op);
  }
  map["ArgMax"] = ArgReduce("argmax");
  map["ArgMin"] = ArgReduce("argmin");
  map["Softmax"] = SoftmaxLike("softmax");
  map["LogSoftmax"] = SoftmaxLike("log_softmax");
  map["Hardmax"] = SoftmaxLike("hardmax");
  map["LayerNormalization"] = ConvertLayerNormalization;
  map["InstanceNormalization"] = ConvertInstanceNormalization;
  map["GroupNormalization"] = ConvertGroupNormalization;
  map["BatchNormalization"] = ConvertBatchNormalization;
  map["Conv"] = ConvertConv;
  map["ConvTranspose"] = ConvertConvTranspose;
  map["MaxPool"] = Pool("max_pool");
  map["AveragePool"] = Pool("average_pool");
  map["LpPool"] = ConvertLpPool;
  map["GlobalAveragePool"] = GlobalPool("reduce_mean");
  map["GlobalMaxPool"] = GlobalPool("reduce_max");
  map["MeanVarianceNormalization"] = ConvertMeanVarianceNormalization;
  map["LpNormalization"] = ConvertLpNormalization;
  map["Resize"] = [](NodeContext& ctx) {
    return ctx.opset() < 11 ? ConvertUpsample(ctx) : ConvertResize(ctx);
  };
  map["Upsample"] = ConvertUpsample;
  map["NegativeLogLikelihoodLoss"] = ConvertNegativeLogLikelihoodLoss;
  map["SoftmaxCrossEntropyLoss"] = ConvertSoftmaxCrossEntropyLoss;
  map["LSTM"] = Recurrent({"lstm", 4, 8, "input_forget"});
  map["GRU"] = Recurrent({"gru", 3, 6, "linear_before_reset"});
  map["RNN"] = Recurrent({"rnn", 1, 6, ""});
}

}  // namespace loom::onnx_import
