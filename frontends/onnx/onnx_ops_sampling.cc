// Sampling and geometry ops, built from loom's primitives: GridSample,
// AffineGrid, DeformConv, RoiAlign, Col2Im and MaxUnpool.
//
// GridSample, DeformConv and RoiAlign read their input at coordinates
// computed as the model runs. They share one sampler (SampleTaps): along
// each spatial dim, a coordinate gives one tap (nearest), two (linear) or
// four (cubic), each a whole-number position with a weight; every
// combination of taps is a gather_elements from the input viewed as
// [B, C, positions] at the flat position, clamped into the input first so
// that no position read is ever out of bounds, and masked to 0 where the
// tap lies outside (zeros padding). Col2Im is a conv_transpose whose
// kernel scatters each block position back to its place; MaxUnpool a
// scatter_nd into zeros.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "frontends/onnx/onnx_ops.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// --- small builders -----------------------------------------------------------

// x[..., index, ...] along `axis`, the axis kept with size 1.
ValueId Take(NodeContext& ctx, ValueId x, int64_t axis, int64_t index) {
  return ctx.Emit("slice", {x},
                  MakeAttrs({{"starts", Shape{index}},
                             {"ends", Shape{index + 1}},
                             {"axes", Shape{axis}},
                             {"steps", Shape{1}}}));
}

ValueId AddScalar(NodeContext& ctx, ValueId x, double value) {
  const DType dtype = ctx.TypeOf(x).dtype;
  return ctx.Emit("add", {x, ctx.Scalar(dtype, value)});
}

ValueId MulScalar(NodeContext& ctx, ValueId x, double value) {
  const DType dtype = ctx.TypeOf(x).dtype;
  return ctx.Emit("mul", {x, ctx.Scalar(dtype, value)});
}

// `value` - x.
ValueId ScalarSub(NodeContext& ctx, double value, ValueId x) {
  const DType dtype = ctx.TypeOf(x).dtype;
  return ctx.Emit("sub", {ctx.Scalar(dtype, value), x});
}

ValueId Compare(NodeContext& ctx, const char* op, ValueId x, double value) {
  const DType dtype = ctx.TypeOf(x).dtype;
  return ctx.Emit(op, {x, ctx.Scalar(dtype, value)});
}

// Whether x lies outside [lo, hi] (false for NaN).
ValueId Outside(NodeContext& ctx, ValueId x, double lo, double hi) {
  return ctx.Emit("logical_or", {Compare(ctx, "less", x, lo), Compare(ctx, "greater", x, hi)});
}

ValueId Clip(NodeContext& ctx, ValueId x, double lo, double hi) {
  return ctx.Emit("clip", {x}, MakeAttrs({{"min", lo}, {"max", hi}}));
}

// The sum (or elementwise maximum) of `terms`, left to right.
ValueId Fold(NodeContext& ctx, const char* op, const std::vector<ValueId>& terms) {
  ValueId result = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) result = ctx.Emit(op, {result, terms[i]});
  return result;
}

// A constant of `shape` and `dtype` whose element i is value(i).
template <typename Fn>
ValueId Table(NodeContext& ctx, DType dtype, Shape shape, Fn value) {
  Tensor table(dtype, std::move(shape));
  for (int64_t i = 0; i < table.num_elements(); ++i) table.SetDouble(i, value(i));
  return ctx.Constant(std::move(table));
}

// Position `flat` of a row-major grid of `dims`, along dim `d`.
int64_t Coordinate(int64_t flat, const Shape& dims, size_t d) {
  for (size_t e = dims.size(); e-- > d + 1;) flat /= dims[e];
  return flat % dims[d];
}

// The list attribute `name` with one entry per spatial dim (`fill` each
// when absent), each at least `least`.
absl::StatusOr<std::vector<int64_t>> SpatialInts(const NodeContext& ctx, absl::string_view name,
                                                 size_t count, int64_t fill, int64_t least) {
  std::vector<int64_t> values =
      ctx.HasAttr(name) ? ctx.Ints(name) : std::vector<int64_t>(count, fill);
  if (values.size() != count) {
    return ctx.Refuse(absl::StrCat("attribute '", name, "' ", ShapeToString(values), " has ",
                                   values.size(), " entries; expected ", count));
  }
  for (int64_t v : values) {
    if (v < least || v > kMaxTensorElements) {
      return ctx.Refuse(absl::StrCat("attribute '", name, "' ", ShapeToString(values),
                                     " has an entry outside [", least, ", 2^40]"));
    }
  }
  return values;
}

// --- the sampler ---------------------------------------------------------------

// Refuses an input [B, C, spatial...] with an empty spatial dim: there is
// no position to clamp a sample to.
absl::Status CheckSampleable(const NodeContext& ctx, const Shape& shape) {
  for (size_t d = 2; d < shape.size(); ++d) {
    if (shape[d] < 1) {
      return ctx.Refuse(
          absl::StrCat("X ", ShapeToString(shape), " has an empty spatial dim to sample from"));
    }
  }
  return absl::OkStatus();
}

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// Where one spatial dim of the input is read.
struct SampleAxis {
  ValueId coord;  // pixel coordinates [B, 1, P] (whole numbers for kNearest)
  int64_t size;   // the input's extent along the dim
  // kReflection reflects taps about these borders until they fall inside.
  double reflect_lo = 0;
  double reflect_hi = 0;
};

// One tap along one dim: the position it reads (i64, inside the input),
// its weight (kNoValue: 1) and whether it lies inside (kNoValue: always).
struct Tap {
  ValueId index;
  ValueId weight = NodeContext::kNoValue;
  ValueId inside = NodeContext::kNoValue;
};

// x reflected about lo and hi until it lies in [lo, hi], as ONNX's
// GridSample reflects (by the near border, the distance past it modulo the
// range deciding which border it ends nearest to).
ValueId Reflect(NodeContext& ctx, ValueId x, double lo, double hi) {
  const ValueId below = Compare(ctx, "less", x, lo);
  const ValueId outside = Outside(ctx, x, lo, hi);
  const double range = hi - lo;
  if (range <= 0) return ctx.Emit("where", {outside, ctx.Scalar(ctx.TypeOf(x).dtype, lo), x});
  // The distance past the border x crossed, in whole ranges and the rest.
  const ValueId past = ctx.Emit("where", {below, ScalarSub(ctx, lo, x), AddScalar(ctx, x, -hi)});
  const ValueId ranges = ctx.Emit("floor", {MulScalar(ctx, past, 1 / range)});
  const ValueId rest = ctx.Emit("sub", {past, MulScalar(ctx, ranges, range)});
  const ValueId half = ctx.Emit("floor", {MulScalar(ctx, ranges, 0.5)});
  const ValueId odd = ctx.Emit("not_equal", {ranges, MulScalar(ctx, half, 2)});
  // An even number of ranges past lo ends up measured from lo, an odd one
  // from hi; past hi the other way round.
  const ValueId from_lo = ctx.Emit("logical_xor", {below, odd});
  const ValueId reflected =
      ctx.Emit("where", {from_lo, AddScalar(ctx, rest, lo), ScalarSub(ctx, hi, rest)});
  return ctx.Emit("where", {outside, reflected, x});
}

// Keys' cubic convolution weights (a = -0.75, as ONNX's GridSample) of the
// taps at floor(x) - 1 .. floor(x) + 2, for t = x - floor(x).
std::vector<ValueId> CubicWeights(NodeContext& ctx, ValueId t) {
  constexpr double a = -0.75;
  // Far taps, at distance d in [1, 2]: ((a d - 5a) d + 8a) d - 4a.
  auto far = [&](ValueId d) {
    ValueId w = AddScalar(ctx, MulScalar(ctx, d, a), -5 * a);
    w = AddScalar(ctx, ctx.Emit("mul", {w, d}), 8 * a);
    return AddScalar(ctx, ctx.Emit("mul", {w, d}), -4 * a);
  };
  // Near taps, at distance d in [0, 1]: ((a + 2) d - (a + 3)) d d + 1.
  auto near = [&](ValueId d) {
    const ValueId w = AddScalar(ctx, MulScalar(ctx, d, a + 2), -(a + 3));
    return AddScalar(ctx, ctx.Emit("mul", {ctx.Emit("mul", {w, d}), d}), 1);
  };
  const ValueId one_minus_t = ScalarSub(ctx, 1, t);
  return {far(AddScalar(ctx, t, 1)), near(t), near(one_minus_t),
          far(AddScalar(ctx, one_minus_t, 1))};
}

// The taps along one dim.
std::vector<Tap> AxisTaps(NodeContext& ctx, const SampleAxis& axis, Interpolation interpolation,
                          Padding padding) {
  const ValueId base = ctx.Emit("floor", {axis.coord});
  std::vector<ValueId> weights;
  int64_t first = 0;
  if (interpolation == Interpolation::kNearest) {
    weights = {NodeContext::kNoValue};
  } else {
    const ValueId t = ctx.Emit("sub", {axis.coord, base});
    if (interpolation == Interpolation::kLinear) {
      weights = {ScalarSub(ctx, 1, t), t};
    } else {
      weights = CubicWeights(ctx, t);
      first = -1;
    }
  }
  const double last = static_cast<double>(axis.size - 1);
  std::vector<Tap> taps;
  for (size_t k = 0; k < weights.size(); ++k) {
    ValueId position = AddScalar(ctx, base, static_cast<double>(first + static_cast<int64_t>(k)));
    Tap tap;
    tap.weight = weights[k];
    if (padding == Padding::kZeros) {
      tap.inside = ctx.Emit("logical_not", {Outside(ctx, position, 0, last)});
    } else if (padding == Padding::kReflection) {
      position = Reflect(ctx, position, axis.reflect_lo, axis.reflect_hi);
    }
    // The clip keeps every read inside the input (a NaN position casts to 0).
    tap.index = ctx.CastTo(Clip(ctx, position, 0, last), DType::kI64);
    taps.push_back(tap);
  }
  return taps;
}

// data [B, C, D1..Dr] read at the positions `axes` give ([B, 1, P] each,
// one axis per Dk): each combination of taps' weighted values, [B, C, P],
// 0 where a tap lies outside.
std::vector<ValueId> SampleTaps(NodeContext& ctx, ValueId data, const std::vector<SampleAxis>& axes,
                                Interpolation interpolation, Padding padding) {
  const TensorType type = ctx.TypeOf(data);
  const int64_t batch = type.shape[0], channels = type.shape[1];
  const int64_t points = ctx.TypeOf(axes[0].coord).shape[2];
  const ValueId flat_data = Reshape(
      ctx, data, {batch, channels, NumElements(absl::MakeConstSpan(type.shape).subspan(2))});
  std::vector<std::vector<Tap>> taps;
  for (const SampleAxis& axis : axes) taps.push_back(AxisTaps(ctx, axis, interpolation, padding));

  std::vector<ValueId> values;
  std::vector<size_t> pick(axes.size(), 0);  // the tap taken along each dim
  while (true) {
    ValueId flat = NodeContext::kNoValue, weight = NodeContext::kNoValue;
    ValueId inside = NodeContext::kNoValue;
    int64_t stride = 1;
    for (size_t d = axes.size(); d-- > 0;) {
      const Tap& tap = taps[d][pick[d]];
      const ValueId offset =
          stride == 1 ? tap.index : ctx.Emit("mul", {tap.index, ctx.Scalar(DType::kI64, stride)});
      flat = flat == NodeContext::kNoValue ? offset : ctx.Emit("add", {flat, offset});
      stride *= axes[d].size;
      if (tap.weight != NodeContext::kNoValue) {
        weight =
            weight == NodeContext::kNoValue ? tap.weight : ctx.Emit("mul", {weight, tap.weight});
      }
      if (tap.inside != NodeContext::kNoValue) {
        inside = inside == NodeContext::kNoValue ? tap.inside
                                                 : ctx.Emit("logical_and", {inside, tap.inside});
      }
    }
    const ValueId index =
        ctx.Emit("expand", {flat}, MakeAttrs({{"shape", Shape{batch, channels, points}}}));
    ValueId value =
        ctx.Emit("gather_elements", {flat_data, index}, MakeAttrs({{"axis", int64_t{2}}}));
    if (inside != NodeContext::kNoValue) {
      value = ctx.Emit("where", {inside, value, ctx.Scalar(type.dtype, 0)});
    }
    if (weight != NodeContext::kNoValue) value = ctx.Emit("mul", {value, weight});
    values.push_back(value);
    // The next combination, the last dim fastest.
    size_t d = axes.size();
    while (d > 0 && ++pick[d - 1] == taps[d - 1].size()) pick[--d] = 0;
    if (d == 0) break;
  }
  return values;
}

// --- GridSample ----------------------------------------------------------------

absl::StatusOr<Interpolation> GridSampleMode(const NodeContext& ctx) {
  // Opset 20 renamed bilinear and bicubic (and allowed more than 2-D).
  const bool renamed = ctx.opset() >= 20;
  const std::string mode = ctx.String("mode", renamed ? "linear" : "bilinear");
  if (mode == "nearest") return Interpolation::kNearest;
  if (mode == (renamed ? "linear" : "bilinear")) return Interpolation::kLinear;
  if (mode == (renamed ? "cubic" : "bicubic")) return Interpolation::kCubic;
  return ctx.Refuse(absl::StrCat("attribute 'mode' '", mode, "' is not one of ",
                                 renamed ? "linear, nearest, cubic" : "bilinear, nearest, bicubic",
                                 " (opset ", ctx.opset(), ")"));
}

absl::StatusOr<Padding> GridSamplePadding(const NodeContext& ctx) {
  const std::string padding = ctx.String("padding_mode", "zeros");
  if (padding == "zeros") return Padding::kZeros;
  if (padding == "border") return Padding::kBorder;
  if (padding == "reflection") return Padding::kReflection;
  return ctx.Refuse(absl::StrCat("attribute 'padding_mode' '", padding,
                                 "' is not one of zeros, border, reflection"));
}

// GridSample: X [N, C, D1..Dr] read at grid [N, O1..Or, r], whose last dim
// holds normalized coordinates in [-1, 1], the last spatial dim's first.
// Each is mapped to pixels (the corners' centers at -1 and 1 with
// align_corners, else the corners' edges), rounded half to even for
// nearest, brought inside by border or reflection padding, then sampled.
absl::Status ConvertGridSample(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(
      ctx.CheckAttrs({{"align_corners", kInt}, {"mode", kString}, {"padding_mode", kString}}));
  LOOM_ASSIGN_OR_RETURN(Interpolation interpolation, GridSampleMode(ctx));
  LOOM_ASSIGN_OR_RETURN(Padding padding, GridSamplePadding(ctx));
  const int64_t align_corners = ctx.Int("align_corners", 0);
  if (align_corners != 0 && align_corners != 1) {
    return ctx.Refuse(
        absl::StrCat("attribute 'align_corners' must be 0 or 1, got ", align_corners));
  }
  const ValueId x = ctx.In(0), grid = ctx.In(1);
  const TensorType x_type = ctx.TypeOf(x), grid_type = ctx.TypeOf(grid);
  LOOM_RETURN_IF_ERROR(ctx.status());
  const int64_t rank = static_cast<int64_t>(x_type.shape.size());
  const int64_t spatial = rank - 2;
  if (rank < 3 || (ctx.opset() < 20 && rank != 4)) {
    return ctx.Refuse(absl::StrCat("X ", ShapeToString(x_type.shape), " must be ",
                                   ctx.opset() < 20 ? "4-D (opset < 20)" : "[N, C, spatial...]"));
  }
  const Shape& g = grid_type.shape;
  if (static_cast<int64_t>(g.size()) != rank || g[0] != x_type.shape[0] || g.back() != spatial) {
    return ctx.Refuse(absl::StrCat("grid ", ShapeToString(g), " does not fit X ",
                                   ShapeToString(x_type.shape), ": expected [", x_type.shape[0],
                                   ", output spatial dims..., ", spatial, "]"));
  }
  LOOM_RETURN_IF_ERROR(CheckSampleable(ctx, x_type.shape));
  if (!IsFloat(grid_type.dtype)) {
    return ctx.Refuse(absl::StrCat("grid is ", DTypeName(grid_type.dtype), "; expected a float"));
  }
  if (!IsFloat(x_type.dtype) && interpolation != Interpolation::kNearest) {
    return ctx.Refuse(
        absl::StrCat("X is ", DTypeName(x_type.dtype),
                     "; loom interpolates floats only (mode nearest reads any type)"));
  }
  const DType coord_type = IsFloat(x_type.dtype) ? x_type.dtype : grid_type.dtype;
  const int64_t batch = g[0];
  const Shape out_spatial(g.begin() + 1, g.end() - 1);
  const int64_t points = NumElements(out_spatial);
  const ValueId coords = Reshape(ctx, ctx.CastTo(grid, coord_type), {batch, points, spatial});

  std::vector<SampleAxis> axes;
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t size = x_type.shape[2 + d];
    const double extent = static_cast<double>(size);
    // The grid lists the last spatial dim's coordinate first.
    const ValueId normalized =
        Reshape(ctx, Take(ctx, coords, 2, spatial - 1 - d), {batch, 1, points});
    const ValueId plus_one = AddScalar(ctx, normalized, 1);
    ValueId pixel = align_corners
                        ? MulScalar(ctx, MulScalar(ctx, plus_one, 0.5), extent - 1)
                        : MulScalar(ctx, AddScalar(ctx, MulScalar(ctx, plus_one, extent), -1), 0.5);
    if (interpolation == Interpolation::kNearest) pixel = ctx.Emit("round", {pixel});
    SampleAxis axis{pixel, size};
    axis.reflect_lo = align_corners ? 0 : -0.5;
    axis.reflect_hi = align_corners ? extent - 1 : extent - 0.5;
    // A coordinate past the borders is first brought inside them.
    if (padding == Padding::kBorder) {
      axis.coord = ctx.Emit("where", {Outside(ctx, pixel, axis.reflect_lo, axis.reflect_hi),
                                      Clip(ctx, pixel, 0, extent - 1), pixel});
    } else if (padding == Padding::kReflection) {
      axis.coord = Reflect(ctx, pixel, axis.reflect_lo, axis.reflect_hi);
    }
    axes.push_back(axis);
  }
  const ValueId sampled = Fold(ctx, "add", SampleTaps(ctx, x, axes, interpolation, padding));
  Shape out_shape = {batch, x_type.shape[1]};
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  ctx.EmitOutput(0, "reshape", {sampled}, MakeAttrs({{"shape", out_shape}}));
  return ctx.status();
}

// --- AffineGrid ----------------------------------------------------------------

// AffineGrid: theta [N, r, r + 1] (r = 2 or 3) maps the output's normalized
// positions (x, y[, z], 1) over size [N, C, D1..Dr] (known at import) to
// grid [N, D1..Dr, r]: the positions' table [D1 * .. * Dr, r + 1] times
// theta transposed.
absl::Status ConvertAffineGrid(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"align_corners", kInt}}));
  const int64_t align_corners = ctx.Int("align_corners", 0);
  if (align_corners != 0 && align_corners != 1) {
    return ctx.Refuse(
        absl::StrCat("attribute 'align_corners' must be 0 or 1, got ", align_corners));
  }
  const ValueId theta = ctx.In(0);
  const TensorType theta_type = ctx.TypeOf(theta);
  LOOM_RETURN_IF_ERROR(ctx.status());
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> size, ctx.ConstInts(1, "the output size"));
  if (size.size() != 4 && size.size() != 5) {
    return ctx.Refuse(
        absl::StrCat("size ", ShapeToString(size), " must have 4 entries (2-D) or 5 (3-D)"));
  }
  const int64_t spatial = static_cast<int64_t>(size.size()) - 2;
  const Shape& t = theta_type.shape;
  if (t.size() != 3 || t[0] != size[0] || t[1] != spatial || t[2] != spatial + 1) {
    return ctx.Refuse(absl::StrCat("theta ", ShapeToString(t), " does not fit size ",
                                   ShapeToString(size), ": expected ",
                                   ShapeToString({size[0], spatial, spatial + 1})));
  }
  if (!IsFloat(theta_type.dtype)) {
    return ctx.Refuse(absl::StrCat("theta is ", DTypeName(theta_type.dtype), "; expected a float"));
  }
  const Shape dims(size.begin() + 2, size.end());
  for (int64_t d : dims) {
    if (d < 1) return ctx.Refuse(absl::StrCat("size ", ShapeToString(size), " has an empty dim"));
  }
  const int64_t points = NumElements(dims);
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({points, spatial + 1}));
  // Column c of the table: the normalized position along dim (spatial - 1
  // - c) (x first), then a column of ones.
  auto position = [&](int64_t i) -> double {
    const int64_t point = i / (spatial + 1), column = i % (spatial + 1);
    if (column == spatial) return 1;
    const size_t dim = static_cast<size_t>(spatial - 1 - column);
    const double at = static_cast<double>(Coordinate(point, dims, dim));
    const double extent = static_cast<double>(dims[dim]);
    if (align_corners) return extent == 1 ? -1 : -1 + at * 2 / (extent - 1);
    return -1 + (2 * at + 1) / extent;
  };
  const ValueId table = Table(ctx, theta_type.dtype, {points, spatial + 1}, position);
  const ValueId grid = ctx.Emit(
      "matmul", {table, ctx.Emit("transpose", {theta}, MakeAttrs({{"perm", Shape{0, 2, 1}}}))});
  Shape out_shape = {size[0]};
  out_shape.insert(out_shape.end(), dims.begin(), dims.end());
  out_shape.push_back(spatial);
  ctx.EmitOutput(0, "reshape", {grid}, MakeAttrs({{"shape", out_shape}}));
  return ctx.status();
}

// --- Col2Im --------------------------------------------------------------------

// Col2Im: input [N, C * K, L] holds, for each of the L block positions of
// a sliding window over image_shape, the block's C * K values (K: the
// product of block_shape); overlapping blocks add up. That is
// conv_transpose of the input viewed as [N, C * K, L1..Lr] (group C) with
// a kernel [C * K, 1, block...] that puts channel c * K + k at block
// position k.
absl::Status ConvertCol2Im(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"dilations", kInts}, {"pads", kInts}, {"strides", kInts}}));
  const ValueId input = ctx.In(0);
  const TensorType type = ctx.TypeOf(input);
  LOOM_RETURN_IF_ERROR(ctx.status());
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> image, ctx.ConstInts(1, "the image shape"));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> block, ctx.ConstInts(2, "the block shape"));
  const size_t spatial = image.size();
  if (spatial == 0 || block.size() != spatial) {
    return ctx.Refuse(absl::StrCat("image_shape ", ShapeToString(image), " and block_shape ",
                                   ShapeToString(block), " must have one entry per spatial dim"));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialInts(ctx, "strides", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                        SpatialInts(ctx, "dilations", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialInts(ctx, "pads", 2 * spatial, 0, 0));
  for (size_t d = 0; d < spatial; ++d) {
    if (image[d] < 1 || block[d] < 1 || image[d] > kMaxTensorElements ||
        block[d] > kMaxTensorElements) {
      return ctx.Refuse(absl::StrCat("image_shape ", ShapeToString(image), " and block_shape ",
                                     ShapeToString(block), " must lie in [1, 2^40]"));
    }
  }
  if (!IsFloat(type.dtype)) {
    return ctx.Refuse(absl::StrCat("input is ", DTypeName(type.dtype),
                                   "; loom computes Col2Im over floats only"));
  }
  const int64_t kernel = NumElements(block);
  if (type.shape.size() != 3 || type.shape[1] % kernel != 0) {
    return ctx.Refuse(absl::StrCat("input ", ShapeToString(type.shape), " must be [N, C * ", kernel,
                                   " (the block size), L]"));
  }
  const int64_t channels = type.shape[1] / kernel;
  // The block positions per dim, and the positions past the last block
  // that conv_transpose must add (output_padding).
  Shape blocks, output_padding;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t extent = dilations[d] * (block[d] - 1) + 1;
    const int64_t room = image[d] + pads[d] + pads[d + spatial] - extent;
    if (room < 0) {
      return ctx.Refuse(absl::StrCat("block_shape ", ShapeToString(block), " with dilations ",
                                     ShapeToString(dilations), " does not fit image_shape ",
                                     ShapeToString(image), " with pads ", ShapeToString(pads)));
    }
    blocks.push_back(room / strides[d] + 1);
    output_padding.push_back(room % strides[d]);
  }
  if (NumElements(blocks) != type.shape[2]) {
    return ctx.Refuse(absl::StrCat("input ", ShapeToString(type.shape), " has ", type.shape[2],
                                   " blocks; image_shape, block_shape, strides, dilations and ",
                                   "pads give ", ShapeToString(blocks)));
  }
  Shape weight_shape = {channels * kernel, 1};
  weight_shape.insert(weight_shape.end(), block.begin(), block.end());
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(weight_shape));
  // Element (c * K + k, 0, j) is 1 where j == k.
  const ValueId weight = Table(ctx, type.dtype, weight_shape, [&](int64_t i) {
    return i / kernel % kernel == i % kernel ? 1 : 0;
  });
  Shape viewed = {type.shape[0], channels * kernel};
  viewed.insert(viewed.end(), blocks.begin(), blocks.end());
  ctx.EmitOutput(0, "conv_transpose", {Reshape(ctx, input, viewed), weight},
                 MakeAttrs({{"strides", std::move(strides)},
                            {"dilations", std::move(dilations)},
                            {"pads", std::move(pads)},
                            {"output_padding", std::move(output_padding)},
                            {"group", channels}}));
  return ctx.status();
}

// --- MaxUnpool -----------------------------------------------------------------

// MaxUnpool: X's values scattered into zeros at the flat positions that
// indices (MaxPool's, run-time input) give within the shape MaxPool's
// input had: (S - 1) stride - pads + kernel per spatial dim. output_shape
// (input 2, known at import) may ask for a larger output: the rest is
// zeros after each dim's end, as ONNX's reference places it. Each (n, c)
// plane is scattered on its own (a scatter searches only its plane's
// updates, not the whole tensor's), so an index must lie in its element's
// own plane, as MaxPool's do; one outside is an error as the kernels run.
absl::Status ConvertMaxUnpool(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(
      ctx.CheckAttrs({{"kernel_shape", kInts}, {"pads", kInts}, {"strides", kInts}}));
  if (!ctx.HasAttr("kernel_shape")) return ctx.Refuse("attribute 'kernel_shape' is required");
  const ValueId x = ctx.In(0), indices = ctx.In(1);
  const TensorType x_type = ctx.TypeOf(x), indices_type = ctx.TypeOf(indices);
  LOOM_RETURN_IF_ERROR(ctx.status());
  const Shape& shape = x_type.shape;
  if (shape.size() < 3) {
    return ctx.Refuse(absl::StrCat("X ", ShapeToString(shape), " must be [N, C, spatial...]"));
  }
  if (indices_type.shape != shape || indices_type.dtype != DType::kI64) {
    return ctx.Refuse(absl::StrCat("indices ", TypeToString(indices_type),
                                   " must be int64 of X's shape ", ShapeToString(shape)));
  }
  const size_t spatial = shape.size() - 2;
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                        SpatialInts(ctx, "kernel_shape", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialInts(ctx, "strides", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialInts(ctx, "pads", 2 * spatial, 0, 0));
  Shape unpooled = {shape[0], shape[1]};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t size =
        SaturatingMul(shape[d + 2] - 1, strides[d]) - pads[d] - pads[d + spatial] + kernel[d];
    if (size < 1 || size > kMaxTensorElements) {
      return ctx.Refuse(absl::StrCat("X ", ShapeToString(shape), " with kernel_shape ",
                                     ShapeToString(kernel), ", strides ", ShapeToString(strides),
                                     " and pads ", ShapeToString(pads), " unpools to size ", size,
                                     " along spatial dim ", d));
    }
    unpooled.push_back(size);
  }
  Shape output = unpooled;
  if (ctx.HasInput(2)) {
    LOOM_ASSIGN_OR_RETURN(output, ctx.ConstInts(2, "the output shape"));
    bool fits = output.size() == unpooled.size() && output[0] == shape[0] && output[1] == shape[1];
    for (size_t d = 2; fits && d < output.size(); ++d) {
      fits = output[d] >= unpooled[d] && output[d] <= kMaxTensorElements;
    }
    if (!fits) {
      return ctx.Refuse(absl::StrCat("output_shape ", ShapeToString(output),
                                     " must keep X's N and C and be at least ",
                                     ShapeToString(unpooled)));
    }
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(output));
  const int64_t planes = shape[0] * shape[1];
  const int64_t plane_in = NumElements(absl::MakeConstSpan(shape).subspan(2));
  const int64_t plane_out = NumElements(absl::MakeConstSpan(unpooled).subspan(2));
  // Each index less its plane's start; one outside the plane becomes
  // plane_out, out of range for the scatter.
  const ValueId starts = Table(ctx, DType::kI64, {planes, 1},
                               [&](int64_t i) { return static_cast<double>(i * plane_out); });
  const ValueId in_plane = ctx.Emit("sub", {Reshape(ctx, indices, {planes, plane_in}), starts});
  const ValueId checked =
      ctx.Emit("where", {Outside(ctx, in_plane, 0, static_cast<double>(plane_out - 1)),
                         ctx.Scalar(DType::kI64, static_cast<double>(plane_out)), in_plane});
  const ValueId zeros = ctx.Emit("expand", {ctx.Scalar(x_type.dtype, 0)},
                                 MakeAttrs({{"shape", Shape{planes, plane_out}}}));
  const ValueId scattered =
      ctx.Emit("scatter_elements", {zeros, checked, Reshape(ctx, x, {planes, plane_in})},
               MakeAttrs({{"axis", int64_t{1}}}));
  ValueId result = Reshape(ctx, scattered, unpooled);
  if (output != unpooled) {
    std::vector<int64_t> padding(2 * output.size(), 0);
    for (size_t d = 0; d < output.size(); ++d) padding[output.size() + d] = output[d] - unpooled[d];
    result = ctx.Emit("pad", {result}, MakeAttrs({{"pads", std::move(padding)}}));
  }
  ctx.Bind(0, result);
  return ctx.status();
}

// --- DeformConv ----------------------------------------------------------------

// The operands of a DeformConv node, checked.
struct DeformConvShapes {
  Shape x;       // [N, C, S1..Sr]
  Shape kernel;  // K1..Kr
  Shape output;  // O1..Or
  int64_t out_channels = 0;
  int64_t group = 1;
  int64_t offset_group = 1;
  std::vector<int64_t> strides, dilations, pads;
};

absl::StatusOr<DeformConvShapes> ReadDeformConv(NodeContext& ctx) {
  DeformConvShapes s;
  const TensorType x = ctx.TypeOf(ctx.In(0)), w = ctx.TypeOf(ctx.In(1));
  const TensorType offset = ctx.TypeOf(ctx.In(2));
  LOOM_RETURN_IF_ERROR(ctx.status());
  if (x.shape.size() < 3) {
    return ctx.Refuse(absl::StrCat("X ", ShapeToString(x.shape), " must be [N, C, spatial...]"));
  }
  if (!IsFloat(x.dtype) || w.dtype != x.dtype || offset.dtype != x.dtype) {
    return ctx.Refuse(absl::StrCat("X, W and offset are ", DTypeName(x.dtype), ", ",
                                   DTypeName(w.dtype), " and ", DTypeName(offset.dtype),
                                   "; expected one float type"));
  }
  s.x = x.shape;
  LOOM_RETURN_IF_ERROR(CheckSampleable(ctx, s.x));
  const size_t spatial = s.x.size() - 2;
  s.group = ctx.Int("group", 1);
  s.offset_group = ctx.Int("offset_group", 1);
  const int64_t channels = s.x[1];
  if (w.shape.size() != s.x.size() || s.group < 1 || s.offset_group < 1 ||
      channels % s.group != 0 || w.shape[0] % s.group != 0 || w.shape[1] * s.group != channels ||
      channels % s.offset_group != 0) {
    return ctx.Refuse(absl::StrCat("W ", ShapeToString(w.shape), " with group ", s.group,
                                   " and offset_group ", s.offset_group, " does not fit X ",
                                   ShapeToString(s.x), ": expected W [M, C / group, kernel...] ",
                                   "with group dividing C and M, offset_group dividing C"));
  }
  s.out_channels = w.shape[0];
  s.kernel.assign(w.shape.begin() + 2, w.shape.end());
  if (ctx.HasAttr("kernel_shape") && ctx.Ints("kernel_shape") != s.kernel) {
    return ctx.Refuse(absl::StrCat("attribute 'kernel_shape' ",
                                   ShapeToString(ctx.Ints("kernel_shape")),
                                   " differs from W's kernel ", ShapeToString(s.kernel)));
  }
  LOOM_ASSIGN_OR_RETURN(s.strides, SpatialInts(ctx, "strides", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(s.dilations, SpatialInts(ctx, "dilations", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(s.pads, SpatialInts(ctx, "pads", 2 * spatial, 0, 0));
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t room = s.x[d + 2] + s.pads[d] + s.pads[d + spatial] -
                         SaturatingMul(s.dilations[d], s.kernel[d] - 1) - 1;
    if (room < 0) {
      return ctx.Refuse(absl::StrCat("the kernel ", ShapeToString(s.kernel), " dilated by ",
                                     ShapeToString(s.dilations), " does not fit X ",
                                     ShapeToString(s.x), " with pads ", ShapeToString(s.pads)));
    }
    s.output.push_back(room / s.strides[d] + 1);
  }
  const int64_t taps = NumElements(s.kernel);
  Shape expected_offset = {s.x[0], s.offset_group * taps * static_cast<int64_t>(spatial)};
  expected_offset.insert(expected_offset.end(), s.output.begin(), s.output.end());
  if (offset.shape != expected_offset) {
    return ctx.Refuse(absl::StrCat("offset ", ShapeToString(offset.shape), " must be ",
                                   ShapeToString(expected_offset),
                                   " ([N, offset_group * kernel size * spatial dims, output...])"));
  }
  if (ctx.HasInput(3) && ctx.TypeOf(ctx.In(3)) != TensorType{x.dtype, {s.out_channels}}) {
    return ctx.Refuse(absl::StrCat("B ", TypeToString(ctx.TypeOf(ctx.In(3))), " must be ",
                                   DTypeName(x.dtype), " [", s.out_channels, "]"));
  }
  if (ctx.HasInput(4)) {
    Shape expected_mask = expected_offset;
    expected_mask[1] = s.offset_group * taps;
    if (ctx.TypeOf(ctx.In(4)) != TensorType{x.dtype, expected_mask}) {
      return ctx.Refuse(absl::StrCat("mask ", TypeToString(ctx.TypeOf(ctx.In(4))), " must be ",
                                     DTypeName(x.dtype), " ", ShapeToString(expected_mask)));
    }
  }
  return s;
}

// DeformConv: a convolution whose every kernel tap, at every output
// position, reads X bilinearly (zeros outside) at its regular place plus
// the offset the model gives it, times the mask when given. The samples of
// each offset group's channels form the columns [N, C * K, O] of a matrix
// product with W (per group).
absl::Status ConvertDeformConv(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"dilations", kInts},
                                       {"group", kInt},
                                       {"kernel_shape", kInts},
                                       {"offset_group", kInt},
                                       {"pads", kInts},
                                       {"strides", kInts}}));
  LOOM_ASSIGN_OR_RETURN(DeformConvShapes s, ReadDeformConv(ctx));
  const DType dtype = ctx.TypeOf(ctx.In(0)).dtype;
  const size_t spatial = s.kernel.size();
  const int64_t batch = s.x[0], channels = s.x[1];
  const int64_t taps = NumElements(s.kernel), outputs = NumElements(s.output);
  const int64_t samples = batch * s.offset_group;  // one per image and offset group
  const int64_t points = SaturatingMul(taps, outputs);
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({samples, channels / s.offset_group, points}));
  const ValueId offset =
      Reshape(ctx, ctx.In(2), {samples, taps, static_cast<int64_t>(spatial), outputs});
  std::vector<SampleAxis> axes;
  for (size_t d = 0; d < spatial; ++d) {
    // Where tap k of output position o reads along dim d without offset.
    const ValueId regular = Table(ctx, dtype, {1, 1, points}, [&](int64_t i) {
      const int64_t k = Coordinate(i / outputs, s.kernel, d);
      const int64_t o = Coordinate(i % outputs, s.output, d);
      return static_cast<double>(o * s.strides[d] - s.pads[d] + k * s.dilations[d]);
    });
    const ValueId moved =
        Reshape(ctx, Take(ctx, offset, 2, static_cast<int64_t>(d)), {samples, 1, points});
    axes.push_back({ctx.Emit("add", {regular, moved}), s.x[d + 2]});
  }
  Shape grouped = {samples, channels / s.offset_group};
  grouped.insert(grouped.end(), s.x.begin() + 2, s.x.end());
  ValueId sampled = Fold(ctx, "add",
                         SampleTaps(ctx, Reshape(ctx, ctx.In(0), grouped), axes,
                                    Interpolation::kLinear, Padding::kZeros));
  if (ctx.HasInput(4)) {
    sampled = ctx.Emit("mul", {sampled, Reshape(ctx, ctx.In(4), {samples, 1, points})});
  }
  const int64_t group_columns = channels / s.group * taps;
  const ValueId columns = Reshape(ctx, sampled, {batch, s.group, group_columns, outputs});
  const ValueId weight =
      Reshape(ctx, ctx.In(1), {s.group, s.out_channels / s.group, group_columns});
  Shape out_shape = {batch, s.out_channels};
  out_shape.insert(out_shape.end(), s.output.begin(), s.output.end());
  ValueId result = Reshape(ctx, ctx.Emit("matmul", {weight, columns}), out_shape);
  if (ctx.HasInput(3)) {
    Shape bias_shape(out_shape.size(), 1);
    bias_shape[1] = s.out_channels;
    result = ctx.Emit("add", {result, Reshape(ctx, ctx.In(3), bias_shape)});
  }
  ctx.Bind(0, result);
  return ctx.status();
}

// --- RoiAlign ------------------------------------------------------------------

// The attributes of a RoiAlign node, checked.
struct RoiAlignParams {
  bool max = false;         // mode max (else avg)
  bool half_pixel = false;  // coordinate_transformation_mode half_pixel
  int64_t height = 1, width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1;
};

absl::StatusOr<RoiAlignParams> ReadRoiAlign(const NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"mode", kString},
                                    {"output_height", kInt},
                                    {"output_width", kInt},
                                    {"sampling_ratio", kInt},
                                    {"spatial_scale", kFloat}};
  // Opset 16 added the mode, defaulting to half_pixel; before, ONNX
  // Runtime's output_half_pixel was the rule.
  if (ctx.opset() >= 16) accepted.push_back({"coordinate_transformation_mode", kString});
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  RoiAlignParams p;
  const std::string mode = ctx.String("mode", "avg");
  if (mode != "avg" && mode != "max") {
    return ctx.Refuse(absl::StrCat("attribute 'mode' '", mode, "' is not one of avg, max"));
  }
  p.max = mode == "max";
  const std::string transform = ctx.String("coordinate_transformation_mode",
                                           ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel") {
    return ctx.Refuse(absl::StrCat("attribute 'coordinate_transformation_mode' '", transform,
                                   "' is not one of half_pixel, output_half_pixel"));
  }
  p.half_pixel = transform == "half_pixel";
  p.height = ctx.Int("output_height", 1);
  p.width = ctx.Int("output_width", 1);
  p.sampling_ratio = ctx.Int("sampling_ratio", 0);
  p.spatial_scale = ctx.Float("spatial_scale", 1);
  if (p.height < 1 || p.width < 1 || p.height > kMaxTensorElements ||
      p.width > kMaxTensorElements) {
    return ctx.Refuse(absl::StrCat("output_height ", p.height, " and output_width ", p.width,
                                   " must lie in [1, 2^40]"));
  }
  if (p.sampling_ratio < 0 || p.sampling_ratio > 1024) {
    return ctx.Refuse(
        absl::StrCat("attribute 'sampling_ratio' ", p.sampling_ratio, " is outside [0, 1024]"));
  }
  if (p.sampling_ratio == 0) {
    // The adaptive ratio, ceil(roi size / output size), gives each region
    // its own number of samples, read from the rois as the model runs.
    return ctx.Refuse(
        "sampling_ratio 0 (adaptive: a number of samples per region that depends on the "
        "run-time rois) is not supported; loom needs a fixed sampling_ratio > 0");
  }
  return p;
}

// Column `column` of rois [R, 4] as [R, 1, 1], scaled and shifted.
ValueId RoiEdge(NodeContext& ctx, ValueId rois, int64_t column, const RoiAlignParams& p) {
  const int64_t count = ctx.TypeOf(rois).shape[0];
  const ValueId edge = Reshape(ctx, Take(ctx, rois, 1, column), {count, 1, 1});
  return AddScalar(ctx, MulScalar(ctx, edge, p.spatial_scale), p.half_pixel ? -0.5 : 0);
}

// RoiAlign: each region of interest (rois [R, 4]: x1, y1, x2, y2, scaled
// by spatial_scale) of image batch_indices[r] of X [N, C, H, W] is cut into
// output_height x output_width bins, each sampled bilinearly at
// sampling_ratio x sampling_ratio evenly spaced points and pooled by their
// mean, or with mode max by the largest weighted corner of any point (as
// ONNX defines it). A point more than one pixel outside the image reads 0;
// one less than that is clamped to the edge.
absl::Status ConvertRoiAlign(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(RoiAlignParams p, ReadRoiAlign(ctx));
  const ValueId x = ctx.In(0), rois = ctx.In(1), batch_indices = ctx.In(2);
  const TensorType x_type = ctx.TypeOf(x), rois_type = ctx.TypeOf(rois);
  const TensorType indices_type = ctx.TypeOf(batch_indices);
  LOOM_RETURN_IF_ERROR(ctx.status());
  if (x_type.shape.size() != 4 || !IsFloat(x_type.dtype)) {
    return ctx.Refuse(absl::StrCat("X ", TypeToString(x_type), " must be a float [N, C, H, W]"));
  }
  LOOM_RETURN_IF_ERROR(CheckSampleable(ctx, x_type.shape));
  const int64_t count = rois_type.shape.empty() ? 0 : rois_type.shape[0];
  if (rois_type != TensorType{x_type.dtype, {count, 4}} ||
      indices_type != TensorType{DType::kI64, {count}}) {
    return ctx.Refuse(absl::StrCat("rois ", TypeToString(rois_type), " and batch_indices ",
                                   TypeToString(indices_type), " must be ", DTypeName(x_type.dtype),
                                   " [R, 4] and int64 [R]"));
  }
  const DType dtype = x_type.dtype;
  const int64_t height = x_type.shape[2], width = x_type.shape[3];
  const int64_t grid = p.sampling_ratio, per_bin = grid * grid;
  // The sample points, by bin row, bin column, point row and point column.
  const int64_t points = NumElements({p.height, p.width, grid, grid});
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({count, x_type.shape[1], points}));
  const double points_per_bin = static_cast<double>(grid);

  // Along one image dim: the sample points' coordinates [R, 1, points].
  auto sample_coords = [&](int64_t start_column, int64_t bins, bool rows) {
    const ValueId start = RoiEdge(ctx, rois, start_column, p);
    ValueId extent = ctx.Emit("sub", {RoiEdge(ctx, rois, start_column + 2, p), start});
    if (!p.half_pixel) extent = ctx.Emit("maximum", {extent, ctx.Scalar(dtype, 1)});
    const ValueId bin = MulScalar(ctx, extent, 1 / static_cast<double>(bins));
    auto digit = [&](int64_t i, int64_t which) {  // which: 0 bin row, 1 bin column, 2, 3 points
      const int64_t sizes[] = {p.height, p.width, grid, grid};
      for (int64_t e = 3; e > which; --e) i /= sizes[e];
      return static_cast<double>(i % sizes[which]);
    };
    const ValueId bin_index =
        Table(ctx, dtype, {1, 1, points}, [&](int64_t i) { return digit(i, rows ? 0 : 1); });
    const ValueId point_index =
        Table(ctx, dtype, {1, 1, points}, [&](int64_t i) { return digit(i, rows ? 2 : 3) + 0.5; });
    return ctx.Emit("add",
                    {ctx.Emit("add", {start, ctx.Emit("mul", {bin, bin_index})}),
                     ctx.Emit("mul", {MulScalar(ctx, bin, 1 / points_per_bin), point_index})});
  };
  const ValueId ys = sample_coords(1, p.height, true);
  const ValueId xs = sample_coords(0, p.width, false);
  // Points more than a pixel outside read nothing: moved to -2, whose taps
  // all lie outside; the others are clamped into the image.
  const ValueId far = ctx.Emit("logical_or", {Outside(ctx, ys, -1, static_cast<double>(height)),
                                              Outside(ctx, xs, -1, static_cast<double>(width))});
  auto place = [&](ValueId coords, int64_t size) {
    return ctx.Emit(
        "where", {far, ctx.Scalar(dtype, -2), Clip(ctx, coords, 0, static_cast<double>(size - 1))});
  };
  const std::vector<SampleAxis> axes = {{place(ys, height), height}, {place(xs, width), width}};
  const ValueId images = ctx.Emit("gather", {x, batch_indices}, MakeAttrs({{"axis", int64_t{0}}}));
  const std::vector<ValueId> corners =
      SampleTaps(ctx, images, axes, Interpolation::kLinear, Padding::kZeros);
  const ValueId per_point = Fold(ctx, p.max ? "maximum" : "add", corners);
  const ValueId binned =
      Reshape(ctx, per_point, {count, x_type.shape[1], p.height, p.width, per_bin});
  ctx.EmitOutput(0, p.max ? "reduce_max" : "reduce_mean", {binned},
                 MakeAttrs({{"axes", Shape{4}}, {"keepdims", int64_t{0}}}));
  return ctx.status();
}

}  // namespace

void AddSamplingConverters(ConverterMap& map) {
  map["GridSample"] = ConvertGridSample;
  map["AffineGrid"] = ConvertAffineGrid;
  map["Col2Im"] = ConvertCol2Im;
  map["MaxUnpool"] = ConvertMaxUnpool;
  map["DeformConv"] = ConvertDeformConv;
  map["RoiAlign"] = ConvertRoiAlign;
}

}  // namespace loom::onnx_import
