// ONNX ops of opsets 24 to 28 outside attention: SwiGLU (28), BitCast (26),
// TensorScatter (24) and CausalConvWithState (27), built from loom's ops.
//
// BitCast is loom's bit_cast (the bits kept, the type changed);
// TensorScatter writes the update into the cache with scatter_elements at
// positions write_indices[b] + s (modulo the cache length when circular),
// checked as the kernel runs; CausalConvWithState is a depthwise conv over
// the carried state followed by the input, whose last k - 1 positions are
// the new state.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// --- SwiGLU -----------------------------------------------------------------

// Y = A * sigmoid(alpha * A) * B, A and B of one shape (no broadcasting).
absl::Status ConvertSwiGlu(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"alpha", kFloat}}));
  const ValueId a = ctx.In(0);
  const ValueId b = ctx.In(1);
  const TensorType a_type = ctx.TypeOf(a);
  const TensorType b_type = ctx.TypeOf(b);
  if (!ctx.ok()) return ctx.status();
  if (a_type != b_type) {
    return ctx.Refuse(
        absl::StrCat("A ", TypeToString(a_type), " and B ", TypeToString(b_type),
                     " must have the same type and shape (SwiGLU does not broadcast)"));
  }
  // Swish(A), loom's silu when alpha is 1.
  const double alpha = ctx.Float("alpha", 1.0);
  ValueId gate;
  if (alpha == 1.0) {
    gate = ctx.Emit("silu", {a});
  } else {
    const ValueId scaled = ctx.Emit("mul", {a, ctx.Scalar(a_type.dtype, alpha)});
    gate = ctx.Emit("mul", {a, ctx.Emit("sigmoid", {scaled})});
  }
  ctx.EmitOutput(0, "mul", {gate, b});
  return ctx.status();
}

// --- BitCast ----------------------------------------------------------------

// The input's bits read as attribute `to`'s type, of the same width.
absl::Status ConvertBitCast(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"to", kInt}}));
  if (!ctx.HasAttr("to")) return ctx.Refuse("attribute 'to' is required");
  const int32_t onnx_to = static_cast<int32_t>(ctx.Int("to", 0));
  LOOM_ASSIGN_OR_RETURN(DType to,
                        DTypeFromOnnx(onnx_to, absl::StrCat(ctx.label(), ": attribute 'to'")));
  const ValueId x = ctx.In(0);
  const DType from = ctx.TypeOf(x).dtype;
  if (!ctx.ok()) return ctx.status();
  if (ValueBits(from) != ValueBits(to)) {
    return ctx.Refuse(absl::StrCat("cannot reinterpret ", DTypeName(from), " (", ValueBits(from),
                                   " bits) as ", OnnxTypeName(onnx_to), " (", ValueBits(to),
                                   " bits): BitCast keeps the width"));
  }
  ctx.EmitOutput(0, "bit_cast", {x}, MakeAttrs({{"to", std::string(DTypeName(to))}}));
  return ctx.status();
}

// --- TensorScatter ----------------------------------------------------------

enum TensorScatterInput { kPastCache, kUpdate, kWriteIndices };

// The cache positions that the update's elements go to along `axis`:
// write_indices[b] + s (int64, of the update's shape), modulo the cache
// length when `circular`.
ValueId WritePositions(NodeContext& ctx, const Shape& update, int64_t axis, int64_t cache_length,
                       bool circular) {
  Shape along(update.size(), 1);
  along[axis] = update[axis];
  Tensor offsets(DType::kI64, along);
  for (int64_t s = 0; s < update[axis]; ++s) offsets.SetInt(s, s);
  ValueId positions = ctx.Constant(std::move(offsets));
  if (ctx.HasInput(kWriteIndices)) {
    Shape per_batch(update.size(), 1);
    per_batch[0] = update[0];
    const ValueId starts =
        ctx.Emit("reshape", {ctx.In(kWriteIndices)}, MakeAttrs({{"shape", per_batch}}));
    positions = ctx.Emit("add", {positions, starts});
  }
  if (circular) {
    positions = ctx.Emit("mod", {positions, ctx.Scalar(DType::kI64, cache_length)});
  }
  return ctx.Emit("expand", {positions}, MakeAttrs({{"shape", update}}));
}

// Checks the cache, the update and write_indices against each other and
// returns the normalized sequence axis.
absl::StatusOr<int64_t> TensorScatterAxis(NodeContext& ctx, const Shape& cache,
                                          const Shape& update) {
  const int64_t rank = cache.size();
  if (rank < 2 || update.size() != cache.size()) {
    return ctx.Refuse(absl::StrCat("past_cache ", ShapeToString(cache), " and update ",
                                   ShapeToString(update), " must have one rank, at least 2"));
  }
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, ctx.Int("axis", -2), rank));
  if (axis == 0) return ctx.Refuse("attribute 'axis' must not be 0, the batch axis");
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis ? update[d] > cache[d] : update[d] != cache[d]) {
      return ctx.Refuse(absl::StrCat("update ", ShapeToString(update), " must match past_cache ",
                                     ShapeToString(cache), " but along axis ", axis,
                                     ", where it may be shorter"));
    }
  }
  if (ctx.HasInput(kWriteIndices)) {
    const TensorType indices = ctx.TypeOf(ctx.In(kWriteIndices));
    if (indices.dtype != DType::kI64 || indices.shape != Shape{cache[0]}) {
      return ctx.Refuse(absl::StrCat("write_indices must be int64 [", cache[0], "], got ",
                                     TypeToString(indices)));
    }
  }
  return axis;
}

// present_cache: past_cache with the update written at write_indices along
// `axis`. In linear mode a position past the cache's end fails the run (as
// an index out of range), as ONNX requires write_indices + sequence_length
// <= max_sequence_length.
absl::Status ConvertTensorScatter(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"mode", kString}}));
  const std::string mode = ctx.String("mode", "linear");
  if (mode != "linear" && mode != "circular") {
    return ctx.Refuse(absl::StrCat("mode '", mode, "' is not 'linear' or 'circular'"));
  }
  const ValueId cache = ctx.In(kPastCache);
  const ValueId update = ctx.In(kUpdate);
  const TensorType cache_type = ctx.TypeOf(cache);
  const TensorType update_type = ctx.TypeOf(update);
  if (!ctx.ok()) return ctx.status();
  if (cache_type.dtype != update_type.dtype) {
    return ctx.Refuse("past_cache and update must have the same element type");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t axis, TensorScatterAxis(ctx, cache_type.shape, update_type.shape));
  if (update_type.shape[axis] == 0) {
    ctx.Bind(0, cache);
    return ctx.status();
  }
  const ValueId positions =
      WritePositions(ctx, update_type.shape, axis, cache_type.shape[axis], mode == "circular");
  ctx.EmitOutput(0, "scatter_elements", {cache, positions, update}, MakeAttrs({{"axis", axis}}));
  return ctx.status();
}

// --- CausalConvWithState ----------------------------------------------------

enum CausalConvInput { kInput, kWeight, kBias, kPastState };
enum CausalConvOutput { kOutput, kPresentState };

// The shapes of input [batch, channels, length], weight [channels, 1, k],
// bias [channels] and past_state [batch, channels, k - 1], checked.
absl::Status CheckCausalConvShapes(NodeContext& ctx, const Shape& input, const Shape& weight) {
  if (input.size() != 3) {
    return ctx.Refuse(
        absl::StrCat("input must be [batch, channels, length], got ", ShapeToString(input)));
  }
  if (weight.size() != 3 || weight[0] != input[1] || weight[1] != 1 || weight[2] < 1) {
    return ctx.Refuse(absl::StrCat("weight must be [channels, 1, k] with channels ", input[1],
                                   " and k >= 1, got ", ShapeToString(weight)));
  }
  if (ctx.HasInput(kBias) && ctx.TypeOf(ctx.In(kBias)).shape != Shape{input[1]}) {
    return ctx.Refuse(absl::StrCat("bias must be [", input[1], "], got ",
                                   ShapeToString(ctx.TypeOf(ctx.In(kBias)).shape)));
  }
  const Shape state = {input[0], input[1], weight[2] - 1};
  if (ctx.HasInput(kPastState) && ctx.TypeOf(ctx.In(kPastState)).shape != state) {
    return ctx.Refuse(absl::StrCat("past_state must be ", ShapeToString(state), ", got ",
                                   ShapeToString(ctx.TypeOf(ctx.In(kPastState)).shape)));
  }
  return ctx.status();
}

// A stateful causal depthwise 1-D convolution: output[b, c, t] = bias[c] +
// sum_j weight[c, 0, j] * padded[b, c, t + j], where padded is past_state
// (zeros without it) followed by the input; then SiLU when `activation` is
// silu or swish. present_state is padded's last k - 1 positions.
absl::Status ConvertCausalConvWithState(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"activation", kString}}));
  const std::string activation = ctx.String("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return ctx.Refuse(
        absl::StrCat("activation '", activation, "' is not 'none', 'silu' or 'swish'"));
  }
  const ValueId input = ctx.In(kInput);
  const ValueId weight = ctx.In(kWeight);
  const TensorType type = ctx.TypeOf(input);
  const Shape weight_shape = ctx.TypeOf(weight).shape;
  if (!ctx.ok()) return ctx.status();
  LOOM_RETURN_IF_ERROR(CheckCausalConvShapes(ctx, type.shape, weight_shape));
  const int64_t batch = type.shape[0], channels = type.shape[1], length = type.shape[2];
  const int64_t carried = weight_shape[2] - 1;
  ValueId past;
  if (ctx.HasInput(kPastState)) {
    past = ctx.In(kPastState);
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable({batch, channels, carried}));
    past = ctx.Constant(Tensor(type.dtype, {batch, channels, carried}));
  }
  const ValueId padded =
      carried == 0 ? input : ctx.Emit("concat", {past, input}, MakeAttrs({{"axis", int64_t{2}}}));
  std::vector<ValueId> conv_inputs = {padded, weight};
  if (ctx.HasInput(kBias)) conv_inputs.push_back(ctx.In(kBias));
  const ValueId conv = ctx.Emit("conv", std::move(conv_inputs), MakeAttrs({{"group", channels}}));
  ctx.Bind(kOutput, activation == "none" ? conv : ctx.Emit("silu", {conv}));
  if (ctx.WantsOutput(kPresentState)) {
    ctx.Bind(kPresentState, carried == 0 ? past : Slice(ctx, padded, 2, length, length + carried));
  }
  return ctx.status();
}

}  // namespace

void AddRecentConverters(ConverterMap& map) {
  map["SwiGLU"] = ConvertSwiGlu;
  map["BitCast"] = ConvertBitCast;
  map["TensorScatter"] = ConvertTensorScatter;
  map["CausalConvWithState"] = ConvertCausalConvWithState;
}

}  // namespace loom::onnx_import
