// ONNX ops that shape and move data (reshape, slice, pad, gather, ...) and
// the ops whose results are known at import (Shape, Size, Range,
// ConstantOfShape, EyeLike, Constant). Operands that ONNX passes as tensors
// but loom takes as attributes (shapes, axes, pads, repeats, split sizes)
// must be known at import.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

Tensor IntsTensor(const std::vector<int64_t>& values) {
  Tensor t(DType::kI64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.SetInt(i, values[i]);
  return t;
}

absl::Status ConvertReshape(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"allowzero", kInt}}));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(1, "the target shape"));
  const ValueId x = ctx.In(0);
  const Shape in = ctx.TypeOf(x).shape;
  if (!ctx.ok()) return ctx.status();
  // ONNX's 0 copies the input's dimension unless allowzero is set.
  if (ctx.Int("allowzero", 0) == 0) {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 0) continue;
      if (i >= in.size()) {
        return ctx.Refuse(absl::StrCat("target shape ", ShapeToString(shape), " copies dim ", i,
                                       " of ", ShapeToString(in), ", which has none"));
      }
      shape[i] = in[i];
    }
  }
  ctx.EmitOutput(0, "reshape", {x}, MakeAttrs({{"shape", shape}}));
  return ctx.status();
}

// An op whose ONNX operand `index` becomes the loom attribute `attr`.
Converter OperandAsInts(std::string loom_op, int index, std::string attr, std::string what) {
  return [=](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> ints, ctx.ConstInts(index, what));
    ctx.EmitOutput(0, loom_op, {ctx.In(0)}, MakeAttrs({{attr, ints}}));
    return ctx.status();
  };
}

absl::Status ConvertTranspose(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"perm", kInts}}));
  Attrs attrs;
  if (ctx.HasAttr("perm")) attrs.Set("perm", ctx.Ints("perm"));
  ctx.EmitOutput(0, "transpose", {ctx.In(0)}, std::move(attrs));
  return ctx.status();
}

// Squeeze and Unsqueeze: axes an attribute before opset 13, then an input.
Converter SqueezeLike(std::string loom_op) {
  return [loom_op](NodeContext& ctx) -> absl::Status {
    Attrs attrs;
    if (ctx.opset() < 13) {
      LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axes", kInts}}));
      if (ctx.HasAttr("axes")) attrs.Set("axes", ctx.Ints("axes"));
    } else {
      LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
      if (ctx.HasInput(1)) {
        LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(1, "axes"));
        attrs.Set("axes", axes);
      }
    }
    if (loom_op == "unsqueeze" && !attrs.Has("axes")) {
      return ctx.Refuse("axes are required");
    }
    ctx.EmitOutput(0, loom_op, {ctx.In(0)}, std::move(attrs));
    return ctx.status();
  };
}

absl::Status ConvertConcat(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}}));
  if (!ctx.HasAttr("axis")) return ctx.Refuse("attribute 'axis' is required");
  std::vector<ValueId> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.In(i));
  ctx.EmitOutput(0, "concat", std::move(inputs), MakeAttrs({{"axis", ctx.Int("axis", 0)}}));
  return ctx.status();
}

absl::Status ConvertSlice(NodeContext& ctx) {
  Attrs attrs;
  if (ctx.opset() < 10) {
    if (absl::Status s = ctx.CheckAttrs({{"starts", kInts}, {"ends", kInts}, {"axes", kInts}});
        !s.ok()) {
      return s;
    }
    for (const char* name : {"starts", "ends", "axes"}) {
      if (ctx.HasAttr(name)) attrs.Set(name, ctx.Ints(name));
    }
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
    const char* const names[] = {"starts", "ends", "axes", "steps"};
    for (int i = 1; i <= 4; ++i) {
      if (!ctx.HasInput(i)) continue;
      LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> ints, ctx.ConstInts(i, names[i - 1]));
      attrs.Set(names[i - 1], ints);
    }
  }
  ctx.EmitOutput(0, "slice", {ctx.In(0)}, std::move(attrs));
  return ctx.status();
}

// Split's sizes for num_outputs (opset 18's attribute, which torch's
// exporter also writes into the opset 17 models it converts to): parts of
// ceil(dim / n), the last one smaller when they do not divide the axis.
absl::StatusOr<std::vector<int64_t>> SplitOfNumOutputs(NodeContext& ctx) {
  const int64_t count = ctx.Int("num_outputs", 0);
  if (count < 1 || count != ctx.num_outputs()) {
    return ctx.Refuse(
        absl::StrCat("attribute 'num_outputs' is ", count, " for ", ctx.num_outputs(), " outputs"));
  }
  const Shape& shape = ctx.TypeOf(ctx.In(0)).shape;
  LOOM_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizedAxis(ctx, ctx.Int("axis", 0), shape.size(), "axis"));
  const int64_t dim = shape[axis];
  const int64_t part = (dim + count - 1) / count;
  if (part * (count - 1) >= dim && count > 1) {
    return ctx.Refuse(absl::StrCat("axis of size ", dim, " does not split into ", count,
                                   " parts of ", part, " and a smaller last one"));
  }
  std::vector<int64_t> sizes(count, part);
  sizes.back() = dim - part * (count - 1);
  return sizes;
}

absl::Status ConvertSplit(NodeContext& ctx) {
  Attrs attrs;
  if (ctx.opset() < 13) {
    if (absl::Status s = ctx.CheckAttrs({{"axis", kInt}, {"split", kInts}}); !s.ok()) {
      return s;
    }
    if (ctx.HasAttr("split")) attrs.Set("split", ctx.Ints("split"));
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"num_outputs", kInt}}));
    if (ctx.HasInput(1)) {
      LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> split, ctx.ConstInts(1, "split sizes"));
      attrs.Set("split", split);
    } else if (ctx.HasAttr("num_outputs")) {
      LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> split, SplitOfNumOutputs(ctx));
      attrs.Set("split", split);
    }
  }
  attrs.Set("axis", ctx.Int("axis", 0));
  std::vector<int> outputs;
  for (int i = 0; i < ctx.num_outputs(); ++i) outputs.push_back(i);
  ctx.EmitNode("split", {ctx.In(0)}, std::move(attrs), ctx.num_outputs(), outputs);
  return ctx.status();
}

// Pad's pads for every dim (all begins, then all ends) from `listed`, which
// holds them for `axes` only (negative axes count from the end).
absl::StatusOr<std::vector<int64_t>> PadsOfAllDims(const NodeContext& ctx,
                                                   const std::vector<int64_t>& listed,
                                                   const std::vector<int64_t>& axes, int64_t rank) {
  const int64_t count = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(listed.size()) != 2 * count) {
    return ctx.Refuse(absl::StrCat("pads ", ShapeToString(listed), " need 2 entries per axis of ",
                                   ShapeToString(axes)));
  }
  std::vector<int64_t> pads(2 * rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, axes[i], rank, "axis"));
    pads[axis] = listed[i];
    pads[rank + axis] = listed[count + i];
  }
  return pads;
}

// Removes the elements that negative pads drop (a slice), and returns the
// pads left to add (each >= 0); the other pads then apply to the cropped
// data, as ONNX Runtime does.
ValueId CropNegativePads(NodeContext& ctx, ValueId x, const Shape& shape,
                         std::vector<int64_t>& pads) {
  const int64_t rank = shape.size();
  std::vector<int64_t> starts, ends, axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (pads[d] >= 0 && pads[rank + d] >= 0) continue;
    starts.push_back(std::max<int64_t>(0, -pads[d]));
    ends.push_back(std::max<int64_t>(0, shape[d] + std::min<int64_t>(0, pads[rank + d])));
    axes.push_back(d);
  }
  for (int64_t& pad : pads) pad = std::max<int64_t>(0, pad);
  if (axes.empty()) return x;
  return ctx.Emit("slice", {x}, MakeAttrs({{"starts", starts}, {"ends", ends}, {"axes", axes}}));
}

// Mode "wrap" (the data as a torus): per padded dim, a gather of positions
// (o - begin) mod dim.
absl::StatusOr<ValueId> WrapPad(NodeContext& ctx, ValueId x, const std::vector<int64_t>& pads) {
  Shape shape = ctx.TypeOf(x).shape;
  const int64_t rank = shape.size();
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t begin = pads[d], end = pads[rank + d], dim = shape[d];
    if (begin == 0 && end == 0) continue;
    if (dim == 0) {
      return ctx.Refuse(
          absl::StrCat("mode 'wrap' pads empty dim ", d, " of ", ShapeToString(shape)));
    }
    const int64_t size = dim + begin + end;
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({size}));
    Tensor index(DType::kI64, {size});
    for (int64_t o = 0; o < size; ++o) index.SetInt(o, ((o - begin) % dim + dim) % dim);
    x = ctx.Emit("gather", {x, ctx.Constant(std::move(index))}, MakeAttrs({{"axis", d}}));
    shape[d] = size;
  }
  return x;
}

// Pads `x` by `pads` (all begins, then all ends, one per dim; negative ones
// crop) in `mode`, into output 0.
absl::Status EmitPad(NodeContext& ctx, ValueId x, std::vector<int64_t> pads,
                     const std::string& mode, double value) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return ctx.Refuse(absl::StrCat(
        "mode '", mode, "' is not supported (only 'constant', 'reflect', 'edge', 'wrap')"));
  }
  const Shape shape = ctx.TypeOf(x).shape;
  if (!ctx.ok()) return ctx.status();
  if (pads.size() != 2 * shape.size()) {
    return ctx.Refuse(absl::StrCat("pads ", ShapeToString(pads), " need 2 entries per dim of ",
                                   ShapeToString(shape)));
  }
  x = CropNegativePads(ctx, x, shape, pads);
  if (mode == "wrap") {
    LOOM_ASSIGN_OR_RETURN(ValueId wrapped, WrapPad(ctx, x, pads));
    ctx.Bind(0, wrapped);
    return ctx.status();
  }
  Attrs attrs = MakeAttrs({{"pads", pads}, {"value", value}});
  if (mode != "constant") attrs.Set("mode", mode);
  ctx.EmitOutput(0, "pad", {x}, std::move(attrs));
  return ctx.status();
}

// Pad; from opset 18 the pads may be given for the dims in input 'axes'
// only, from 19 mode "wrap". Negative pads crop.
absl::Status ConvertPad(NodeContext& ctx) {
  std::vector<int64_t> pads;
  double value = 0;
  const ValueId x = ctx.In(0);
  const int64_t rank = ctx.RankOf(x);
  if (!ctx.ok()) return ctx.status();
  if (ctx.opset() < 11) {
    if (absl::Status s = ctx.CheckAttrs({{"pads", kInts}, {"value", kFloat}, {"mode", kString}});
        !s.ok()) {
      return s;
    }
    pads = ctx.Ints("pads");
    value = ctx.Float("value", 0);
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"mode", kString}}));
    LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> listed, ctx.ConstInts(1, "pads"));
    pads = std::move(listed);
    if (ctx.HasInput(2)) {
      LOOM_ASSIGN_OR_RETURN(double constant, ctx.ConstScalar(2, "the pad value"));
      value = constant;
    }
    if (ctx.HasInput(3)) {
      LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.ConstInts(3, "axes"));
      LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> all, PadsOfAllDims(ctx, pads, axes, rank));
      pads = std::move(all);
    }
  }
  const std::string mode = ctx.String("mode", "constant");
  if (mode == "wrap" && ctx.opset() < 19) {
    return ctx.Refuse("mode 'wrap' needs opset 19");
  }
  return EmitPad(ctx, x, std::move(pads), mode, value);
}

// CenterCropPad: per listed axis, a centred crop (the odd element dropped at
// the end) or zero padding (the odd one added at the end) to `shape`.
absl::Status ConvertCenterCropPad(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axes", kInts}}));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx.ConstInts(1, "the target shape"));
  const ValueId x = ctx.In(0);
  const Shape shape = ctx.TypeOf(x).shape;
  if (!ctx.ok()) return ctx.status();
  const int64_t rank = shape.size();
  std::vector<int64_t> axes = ctx.Ints("axes");
  if (!ctx.HasAttr("axes")) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (target.size() != axes.size()) {
    return ctx.Refuse(absl::StrCat("shape ", ShapeToString(target), " needs one entry per axis of ",
                                   ShapeToString(axes)));
  }
  // Per axis, the (signed) pads: negative ones crop.
  std::vector<int64_t> begins, ends;
  for (size_t i = 0; i < axes.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, axes[i], rank, "axis"));
    if (target[i] < 0) return ctx.Refuse("shape must not be negative");
    const int64_t grow = target[i] - shape[axis];
    // The begin gets half the change, rounded toward zero; the end the rest.
    const int64_t begin = grow >= 0 ? grow / 2 : -(-grow / 2);
    begins.push_back(begin);
    ends.push_back(grow - begin);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads, PadsOfAllDims(ctx, begins, axes, rank));
  return EmitPad(ctx, x, std::move(pads), "constant", 0);
}

// Gather, GatherElements (`axis`) and GatherND (`batch_dims`): the loom
// ops of the same semantics; indices known only at run time are checked as
// the kernels load them.
Converter IndexedRead(std::string loom_op, std::string attr = "axis") {
  return [=](NodeContext& ctx) -> absl::Status {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{attr, kInt}}));
    ctx.EmitOutput(0, loom_op, {ctx.In(0), ctx.In(1)}, MakeAttrs({{attr, ctx.Int(attr, 0)}}));
    return ctx.status();
  };
}

// ScatterElements (and Scatter, its name before opset 11) and ScatterND.
Converter IndexedWrite(std::string loom_op, bool has_axis) {
  return [=](NodeContext& ctx) -> absl::Status {
    std::vector<AttrRule> accepted = {{"reduction", kString}};
    if (has_axis) accepted.push_back({"axis", kInt});
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
    Attrs attrs = MakeAttrs({{"reduction", ctx.String("reduction", "none")}});
    if (has_axis) attrs.Set("axis", ctx.Int("axis", 0));
    ctx.EmitOutput(0, loom_op, {ctx.In(0), ctx.In(1), ctx.In(2)}, std::move(attrs));
    return ctx.status();
  };
}

absl::Status ConvertCumSum(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"exclusive", kInt}, {"reverse", kInt}}); !s.ok()) {
    return s;
  }
  LOOM_ASSIGN_OR_RETURN(double axis, ctx.ConstScalar(1, "axis"));
  ctx.EmitOutput(0, "cumsum", {ctx.In(0)},
                 MakeAttrs({{"axis", static_cast<int64_t>(axis)},
                            {"exclusive", ctx.Int("exclusive", 0)},
                            {"reverse", ctx.Int("reverse", 0)}}));
  return ctx.status();
}

// CumProd, which loom has no op for: output position j along the axis is
// the product over the input positions i that a mask [j, i] known at import
// selects (i <= j, or i >= j when reversed; exclusive drops i == j), the
// others replaced by 1. The products read L^2 elements per row of L.
absl::Status ConvertCumProd(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"exclusive", kInt}, {"reverse", kInt}}); !s.ok()) {
    return s;
  }
  LOOM_ASSIGN_OR_RETURN(double given_axis, ctx.ConstScalar(1, "axis"));
  const ValueId x = ctx.In(0);
  const TensorType type = ctx.TypeOf(x);
  if (!ctx.ok()) return ctx.status();
  const int64_t rank = type.shape.size();
  LOOM_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizedAxis(ctx, static_cast<int64_t>(given_axis), rank, "axis"));
  const bool exclusive = ctx.Int("exclusive", 0) != 0;
  const bool reverse = ctx.Int("reverse", 0) != 0;
  const int64_t length = type.shape[axis];
  Shape mask_shape(rank + 1, 1);
  mask_shape[axis] = length;
  mask_shape[axis + 1] = length;
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(mask_shape));
  Tensor mask(DType::kBool, mask_shape);
  for (int64_t j = 0; j < length; ++j) {
    for (int64_t i = 0; i < length; ++i) {
      const bool before = reverse ? i >= j : i <= j;
      mask.SetInt(j * length + i, before && !(exclusive && i == j));
    }
  }
  // x as [.., 1 (j), L (i), ..]: every output position sees the whole row.
  const ValueId rows = ctx.Emit("unsqueeze", {x}, MakeAttrs({{"axes", Shape{axis}}}));
  const ValueId factors =
      ctx.Emit("where", {ctx.Constant(std::move(mask)), rows, ctx.Scalar(type.dtype, 1)});
  ctx.EmitOutput(0, "reduce_prod", {factors},
                 MakeAttrs({{"axes", Shape{axis + 1}}, {"keepdims", int64_t{0}}}));
  return ctx.status();
}

absl::Status ConvertFlatten(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}}));
  ctx.EmitOutput(0, "flatten", {ctx.In(0)}, MakeAttrs({{"axis", ctx.Int("axis", 1)}}));
  return ctx.status();
}

// Inference-time dropout is the identity, with a mask of all ones.
// Training mode is random unless the ratio is 0.
absl::Status ConvertDropout(NodeContext& ctx) {
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    if (absl::Status s = ctx.CheckAttrs({{"ratio", kFloat}, {"is_test", kInt}}); !s.ok()) {
      return s;
    }
    ratio = ctx.Float("ratio", 0.5);
    training = ctx.opset() < 7 && ctx.Int("is_test", 0) == 0;
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"seed", kInt}}));
    if (ctx.HasInput(1)) {
      LOOM_ASSIGN_OR_RETURN(double r, ctx.ConstScalar(1, "the ratio"));
      ratio = r;
    }
    if (ctx.HasInput(2)) {
      LOOM_ASSIGN_OR_RETURN(double t, ctx.ConstScalar(2, "training_mode"));
      training = t != 0;
    }
  }
  if (training && ratio != 0) {
    return ctx.Refuse("training-mode dropout is random; loom runs inference");
  }
  const ValueId x = ctx.In(0);
  ctx.Bind(0, x);
  if (ctx.WantsOutput(1)) {
    // The mask is bool from opset 10, of the data's type before.
    const TensorType type = ctx.TypeOf(x);
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(type.shape));
    Tensor mask(ctx.opset() >= 10 ? DType::kBool : type.dtype, type.shape);
    for (int64_t i = 0; i < mask.num_elements(); ++i) mask.SetInt(i, 1);
    ctx.ConstantOutput(1, std::move(mask));
  }
  return ctx.status();
}

// --- known at import ---------------------------------------------------------

absl::Status ConvertShape(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"start", kInt}, {"end", kInt}}); !s.ok()) {
    return s;
  }
  const Shape shape = ctx.TypeOf(ctx.In(0)).shape;
  const int64_t rank = shape.size();
  auto clamp = [rank](int64_t i) {
    if (i < 0) i += rank;
    return std::max<int64_t>(0, std::min(i, rank));
  };
  const int64_t start = clamp(ctx.Int("start", 0));
  const int64_t end = clamp(ctx.Int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(shape[d]);
  ctx.ConstantOutput(0, IntsTensor(dims));
  return ctx.status();
}

absl::Status ConvertSize(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  Tensor size(DType::kI64, {});
  size.SetInt(0, NumElements(ctx.TypeOf(ctx.In(0)).shape));
  ctx.ConstantOutput(0, std::move(size));
  return ctx.status();
}

absl::StatusOr<Tensor> ConstantValue(const NodeContext& ctx) {
  const onnx::NodeProto& node = ctx.proto();
  if (node.attribute_size() != 1) {
    return ctx.Refuse("expected exactly one value attribute");
  }
  const onnx::AttributeProto& attr = node.attribute(0);
  const std::string& name = attr.name();
  if (name == "value" && KindOf(attr) == onnx::AttributeProto::TENSOR) {
    return TensorFromOnnx(attr.t(), ctx.label());
  }
  if (name == "value_float" && KindOf(attr) == kFloat) {
    Tensor t(DType::kF32, {});
    t.SetDouble(0, attr.f());
    return t;
  }
  if (name == "value_int" && KindOf(attr) == kInt) {
    Tensor t(DType::kI64, {});
    t.SetInt(0, attr.i());
    return t;
  }
  if (name == "value_floats" && KindOf(attr) == kFloats) {
    Tensor t(DType::kF32, {attr.floats_size()});
    for (int i = 0; i < attr.floats_size(); ++i) t.SetDouble(i, attr.floats(i));
    return t;
  }
  if (name == "value_ints" && KindOf(attr) == kInts) {
    return IntsTensor(std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
  }
  return ctx.Refuse(absl::StrCat("attribute '", name, "' is not supported"));
}

absl::Status ConvertConstant(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(Tensor value, ConstantValue(ctx));
  ctx.ConstantOutput(0, std::move(value));
  return ctx.status();
}

absl::Status ConvertConstantOfShape(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"value", kTensor}}));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstInts(0, "the shape"));
  Tensor fill(DType::kF32, {1});
  if (const onnx::TensorProto* value = ctx.TensorAttr("value")) {
    LOOM_ASSIGN_OR_RETURN(Tensor data, TensorFromOnnx(*value, ctx.label()));
    if (data.num_elements() != 1) {
      return ctx.Refuse("attribute 'value' must hold one element");
    }
    fill = std::move(data);
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(shape));
  Tensor out(fill.dtype(), shape);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (IsFloat(fill.dtype())) {
      out.SetDouble(i, fill.GetDouble(0));
    } else {
      out.SetInt(i, fill.GetInt(0));
    }
  }
  ctx.ConstantOutput(0, std::move(out));
  return ctx.status();
}

// Range: start + i * delta for i in [0, ceil((limit - start) / delta));
// stash_type (opset 27) sets the precision of float16 and bfloat16 ranges
// only, types loom refuses; for the others it has no effect.
absl::Status ConvertRange(NodeContext& ctx) {
  if (ctx.opset() >= 27) {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"stash_type", kInt}}));
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({}));
  }
  absl::StatusOr<Tensor> start = ctx.ConstInput(0, "start");
  absl::StatusOr<Tensor> limit = ctx.ConstInput(1, "limit");
  absl::StatusOr<Tensor> delta = ctx.ConstInput(2, "delta");
  for (const auto* operand : {&start, &limit, &delta}) {
    if (!operand->ok()) return operand->status();
    if ((*operand)->num_elements() != 1) {
      return ctx.Refuse("start, limit and delta must be scalars");
    }
  }
  const DType dtype = start->dtype();
  const bool is_float = IsFloat(dtype);
  const double first = start->GetDouble(0), step = delta->GetDouble(0);
  const double length = std::ceil((limit->GetDouble(0) - first) / step);
  if (!std::isfinite(length)) {  // a zero step, or infinite operands
    return ctx.Refuse("delta must be non-zero and the range finite");
  }
  if (length >= double{int64_t{1} << 40}) {
    return ctx.Refuse(
        absl::StrFormat("the range has %.0f elements, too many to build at import", length));
  }
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(length), 0);
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({n}));
  Tensor result(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (is_float) {
      result.SetDouble(i, first + static_cast<double>(i) * step);
    } else {
      // Wraps as int64 arithmetic does on the hardware, without UB.
      const uint64_t offset = static_cast<uint64_t>(i) * static_cast<uint64_t>(delta->GetInt(0));
      result.SetInt(i, static_cast<int64_t>(static_cast<uint64_t>(start->GetInt(0)) + offset));
    }
  }
  ctx.ConstantOutput(0, std::move(result));
  return ctx.status();
}

absl::Status ConvertEyeLike(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"dtype", kInt}, {"k", kInt}}); !s.ok()) {
    return s;
  }
  const TensorType type = ctx.TypeOf(ctx.In(0));
  if (!ctx.ok()) return ctx.status();
  if (type.shape.size() != 2) return ctx.Refuse("the input must be 2-D");
  DType dtype = type.dtype;
  if (ctx.HasAttr("dtype")) {
    LOOM_ASSIGN_OR_RETURN(DType given,
                          DTypeFromOnnx(static_cast<int32_t>(ctx.Int("dtype", 0)), ctx.label()));
    dtype = given;
  }
  const int64_t k = ctx.Int("k", 0);
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(type.shape));
  Tensor eye(dtype, type.shape);
  for (int64_t i = 0; i < type.shape[0]; ++i) {
    // Column i + k, when in range (compared so that a huge k cannot overflow).
    if (k >= -i && k < type.shape[1] - i) eye.SetInt(i * type.shape[1] + i + k, 1);
  }
  ctx.ConstantOutput(0, std::move(eye));
  return ctx.status();
}

// --- compositions ------------------------------------------------------------

// Trilu: the input where a mask known at import holds, zero elsewhere.
absl::Status ConvertTrilu(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"upper", kInt}}));
  int64_t k = 0;
  if (ctx.HasInput(1)) {
    LOOM_ASSIGN_OR_RETURN(double given, ctx.ConstScalar(1, "k"));
    k = static_cast<int64_t>(given);
  }
  const bool upper = ctx.Int("upper", 1) != 0;
  const ValueId x = ctx.In(0);
  const TensorType type = ctx.TypeOf(x);
  if (!ctx.ok()) return ctx.status();
  const int64_t rank = type.shape.size();
  if (rank < 2) return ctx.Refuse("the input must have rank >= 2");
  const int64_t rows = type.shape[rank - 2], cols = type.shape[rank - 1];
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({rows, cols}));
  Tensor mask(DType::kBool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      mask.SetInt(i * cols + j, upper ? j - i >= k : j - i <= k);
    }
  }
  ctx.EmitOutput(0, "where", {ctx.Constant(std::move(mask)), x, ctx.Scalar(type.dtype, 0)});
  return ctx.status();
}

// OneHot: where(index == iota along the new axis, on, off); negative indices
// count from the end, others out of range select nothing.
absl::Status ConvertOneHot(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}}));
  LOOM_ASSIGN_OR_RETURN(double depth_value, ctx.ConstScalar(1, "depth"));
  LOOM_ASSIGN_OR_RETURN(Tensor values, ctx.ConstInput(2, "the off/on values"));
  if (values.num_elements() != 2) {
    return ctx.Refuse("values must hold two elements, [off, on]");
  }
  const int64_t depth = static_cast<int64_t>(depth_value);
  if (depth < 1) return ctx.Refuse("depth must be positive");
  const ValueId indices = ctx.In(0);
  const TensorType type = ctx.TypeOf(indices);
  if (!ctx.ok()) return ctx.status();
  if (type.dtype == DType::kBool) return ctx.Refuse("indices must be numeric");
  const int64_t out_rank = type.shape.size() + 1;
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, ctx.Int("axis", -1), out_rank, "axis"));
  const DType t = type.dtype;
  const ValueId negative = ctx.Emit("less", {indices, ctx.Scalar(t, 0)});
  const ValueId wrapped =
      ctx.Emit("where", {negative, ctx.Emit("add", {indices, ctx.Scalar(t, depth)}), indices});
  Shape iota_shape(out_rank, 1);
  iota_shape[axis] = depth;
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(iota_shape));
  Tensor iota(t, iota_shape);
  for (int64_t i = 0; i < depth; ++i) iota.SetInt(i, i);
  const ValueId hit =
      ctx.Emit("equal", {ctx.Emit("unsqueeze", {wrapped}, MakeAttrs({{"axes", Shape{axis}}})),
                         ctx.Constant(std::move(iota))});
  const DType out = values.dtype();
  ctx.EmitOutput(0, "where",
                 {hit, ctx.Scalar(out, values.GetDouble(1)), ctx.Scalar(out, values.GetDouble(0))});
  return ctx.status();
}

// DepthToSpace and SpaceToDepth: a reshape, a transpose and a reshape.
absl::Status EmitBlockShuffle(NodeContext& ctx, const Shape& split,
                              const std::vector<int64_t>& perm, const Shape& out) {
  const ValueId x = ctx.In(0);
  const ValueId blocks = ctx.Emit("reshape", {x}, MakeAttrs({{"shape", split}}));
  const ValueId moved = ctx.Emit("transpose", {blocks}, MakeAttrs({{"perm", perm}}));
  ctx.EmitOutput(0, "reshape", {moved}, MakeAttrs({{"shape", out}}));
  return ctx.status();
}

absl::StatusOr<Shape> BlockInput(NodeContext& ctx, int64_t& block) {
  block = ctx.Int("blocksize", 0);
  const Shape shape = ctx.TypeOf(ctx.In(0)).shape;
  if (!ctx.ok()) return ctx.status();
  if (shape.size() != 4) return ctx.Refuse("the input must be 4-D (N, C, H, W)");
  if (block < 1) return ctx.Refuse("attribute 'blocksize' must be positive");
  // Every dimension either side is at most the element count times the
  // block's area: within the limits when that area is.
  const std::optional<int64_t> area = CheckedMul(block, block);
  if (!area.has_value() || *area > kMaxTensorElements) {
    return ctx.Refuse(absl::StrCat("attribute 'blocksize' ", block, " is too large"));
  }
  return shape;
}

absl::Status ConvertDepthToSpace(NodeContext& ctx) {
  if (absl::Status s = ctx.CheckAttrs({{"blocksize", kInt}, {"mode", kString}}); !s.ok()) {
    return s;
  }
  int64_t b = 0;
  LOOM_ASSIGN_OR_RETURN(Shape shape, BlockInput(ctx, b));
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (c % (b * b) != 0) {
    return ctx.Refuse("the channels are not a multiple of blocksize^2");
  }
  const Shape out = {n, c / (b * b), h * b, w * b};
  const std::string mode = ctx.String("mode", "DCR");
  if (mode == "DCR") {
    return EmitBlockShuffle(ctx, {n, b, b, c / (b * b), h, w}, {0, 3, 4, 1, 5, 2}, out);
  }
  if (mode == "CRD") {
    return EmitBlockShuffle(ctx, {n, c / (b * b), b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
  }
  return ctx.Refuse(absl::StrCat("mode '", mode, "' is not DCR or CRD"));
}

// SpaceToDepth; `mode` (opset 28) orders the output channels as DepthToSpace
// reads them: DCR (the default) block row, block column, channel; CRD
// channel, block row, block column.
absl::Status ConvertSpaceToDepth(NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"blocksize", kInt}};
  if (ctx.opset() >= 28) accepted.push_back({"mode", kString});
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  int64_t b = 0;
  LOOM_ASSIGN_OR_RETURN(Shape shape, BlockInput(ctx, b));
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (h % b != 0 || w % b != 0) {
    return ctx.Refuse("height and width must be multiples of blocksize");
  }
  const Shape split = {n, c, h / b, b, w / b, b};
  const Shape out = {n, SaturatingMul(c, b * b), h / b, w / b};
  const std::string mode = ctx.String("mode", "DCR");
  if (mode == "DCR") return EmitBlockShuffle(ctx, split, {0, 3, 5, 1, 2, 4}, out);
  if (mode == "CRD") return EmitBlockShuffle(ctx, split, {0, 1, 3, 5, 2, 4}, out);
  return ctx.Refuse(absl::StrCat("mode '", mode, "' is not DCR or CRD"));
}

// Compress with a condition known at import: a gather of the kept indices.
absl::Status ConvertCompress(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}}));
  LOOM_ASSIGN_OR_RETURN(Tensor condition, ctx.ConstInput(1, "the condition"));
  ValueId x = ctx.In(0);
  const Shape shape = ctx.TypeOf(x).shape;
  if (!ctx.ok()) return ctx.status();
  int64_t axis = 0;
  if (ctx.HasAttr("axis")) {
    LOOM_ASSIGN_OR_RETURN(int64_t normalized,
                          NormalizedAxis(ctx, ctx.Int("axis", 0), shape.size(), "axis"));
    axis = normalized;
  } else {
    x = ctx.Emit("reshape", {x}, MakeAttrs({{"shape", Shape{-1}}}));
  }
  const int64_t dim = ctx.HasAttr("axis") ? shape[axis] : NumElements(shape);
  if (condition.num_elements() > dim) {
    return ctx.Refuse("the condition is longer than the axis");
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < condition.num_elements(); ++i) {
    if (condition.GetDouble(i) != 0) kept.push_back(i);
  }
  ctx.EmitOutput(0, "gather", {x, ctx.Constant(IntsTensor(kept))}, MakeAttrs({{"axis", axis}}));
  return ctx.status();
}

}  // namespace

void AddTensorConverters(ConverterMap& map) {
  map["Reshape"] = ConvertReshape;
  map["Expand"] = OperandAsInts("expand", 1, "shape", "the target shape");
  map["Tile"] = OperandAsInts("tile", 1, "repeats", "repeats");
  map["Transpose"] = ConvertTranspose;
  map["Squeeze"] = SqueezeLike("squeeze");
  map["Unsqueeze"] = SqueezeLike("unsqueeze");
  map["Concat"] = ConvertConcat;
  map["Slice"] = ConvertSlice;
  map["Split"] = ConvertSplit;
  map["Pad"] = ConvertPad;
  map["CenterCropPad"] = ConvertCenterCropPad;
  map["Gather"] = IndexedRead("gather");
  map["GatherElements"] = IndexedRead("gather_elements");
  map["GatherND"] = IndexedRead("gather_nd", "batch_dims");
  map["Scatter"] = IndexedWrite("scatter_elements", true);
  map["ScatterElements"] = IndexedWrite("scatter_elements", true);
  map["ScatterND"] = IndexedWrite("scatter_nd", false);
  map["CumSum"] = ConvertCumSum;
  map["CumProd"] = ConvertCumProd;
  map["Flatten"] = ConvertFlatten;
  map["Dropout"] = ConvertDropout;
  map["Shape"] = ConvertShape;
  map["Size"] = ConvertSize;
  map["Constant"] = ConvertConstant;
  map["ConstantOfShape"] = ConvertConstantOfShape;
  map["Range"] = ConvertRange;
  map["EyeLike"] = ConvertEyeLike;
  map["Trilu"] = ConvertTrilu;
  map["OneHot"] = ConvertOneHot;
  map["DepthToSpace"] = ConvertDepthToSpace;
  map["SpaceToDepth"] = ConvertSpaceToDepth;
  map["Compress"] = ConvertCompress;
}

}  // namespace loom::onnx_import
