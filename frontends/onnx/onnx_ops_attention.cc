// Attention and its parts as ONNX 23 defines them, built from loom's
// primitive ops.
//
// Attention (versions 23, 24 and 25) follows ONNX's function body and
// reference implementation: Q and K are each scaled by sqrt(scale), the
// scores are soft-capped, then the additive bias (attn_mask, the causal and
// sliding-window frontiers, nonpad_kv_seqlen's padding) is added before the
// softmax; a query row whose bias is -inf for every key gives zeros, not NaN.
// RotaryEmbedding rotates pairs of features by angles read from the cos and
// sin caches; RMSNormalization divides by the root mean square over the
// trailing axes. LinearAttention (27) runs its state recurrence step by
// step, unrolled at import. FlexAttention (ai.onnx.preview) is Attention's
// scores and softmax with its score_mod and prob_mod graphs imported in
// between.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_ops.h"
#include "ir/status_macros.h"

namespace loom::onnx_import {
namespace {

// ONNX TensorProto element types that stash_type and softmax_precision name.
constexpr int64_t kOnnxFloat = 1;
constexpr int64_t kOnnxFloat16 = 10;
constexpr int64_t kOnnxDouble = 11;
constexpr int64_t kOnnxBfloat16 = 16;

ValueId Transpose(NodeContext& ctx, ValueId x, std::vector<int64_t> perm) {
  return ctx.Emit("transpose", {x}, MakeAttrs({{"perm", std::move(perm)}}));
}

ValueId Unsqueeze(NodeContext& ctx, ValueId x, int64_t axis) {
  return ctx.Emit("unsqueeze", {x}, MakeAttrs({{"axes", Shape{axis}}}));
}

ValueId Concat(NodeContext& ctx, std::vector<ValueId> parts, int64_t axis) {
  return ctx.Emit("concat", std::move(parts), MakeAttrs({{"axis", axis}}));
}

// An int64 constant of `shape` (one dim not 1) holding first, first + 1, ...
ValueId Positions(NodeContext& ctx, Shape shape, int64_t first) {
  Tensor positions(DType::kI64, std::move(shape));
  for (int64_t i = 0; i < positions.num_elements(); ++i) positions.SetInt(i, first + i);
  return ctx.Constant(std::move(positions));
}

// 0 where `allowed`, -inf elsewhere: an additive bias of the scores.
ValueId BiasWhere(NodeContext& ctx, ValueId allowed, DType dtype) {
  return ctx.Emit("where", {allowed, ctx.Scalar(dtype, 0), ctx.Scalar(dtype, -INFINITY)});
}

// --- RMSNormalization -------------------------------------------------------

// The loom dtype of an ONNX stash_type / softmax_precision.
absl::StatusOr<DType> FloatDType(const NodeContext& ctx, absl::string_view attr, int64_t type) {
  switch (type) {
    case kOnnxFloat:
      return DType::kF32;
    case kOnnxDouble:
      return DType::kF64;
    case kOnnxFloat16:
    case kOnnxBfloat16:
      return ctx.Refuse(absl::StrCat("attribute '", attr, "' ", type,
                                     " asks for float16 or bfloat16 precision; loom computes "
                                     "16-bit floats in f32"));
    default:
      return ctx.Refuse(absl::StrCat("attribute '", attr, "' ", type,
                                     " is not a floating-point type (1, 10, 11 or 16)"));
  }
}

// Y = X / sqrt(mean(X^2 over axes axis..rank-1) + epsilon) * scale, the
// first stage computed in stash_type's precision.
absl::Status ConvertRmsNormalization(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"axis", kInt}, {"epsilon", kFloat}, {"stash_type", kInt}}));
  const ValueId x = ctx.In(0);
  const ValueId scale = ctx.In(1);
  const TensorType type = ctx.TypeOf(x);
  const DType scale_dtype = ctx.TypeOf(scale).dtype;
  if (!ctx.ok()) return ctx.status();
  if (scale_dtype != type.dtype) {
    return ctx.Refuse("Scale must have X's element type (the function body multiplies them)");
  }
  const int64_t rank = type.shape.size();
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(ctx, ctx.Int("axis", -1), rank));
  LOOM_ASSIGN_OR_RETURN(DType stash, FloatDType(ctx, "stash_type", ctx.Int("stash_type", 1)));
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  const ValueId xs = ctx.CastTo(x, stash);
  const ValueId mean_square = ctx.Emit("reduce_mean", {ctx.Emit("mul", {xs, xs})},
                                       MakeAttrs({{"axes", axes}, {"keepdims", int64_t{1}}}));
  const ValueId rms = ctx.Emit(
      "sqrt", {ctx.Emit("add", {mean_square, ctx.Scalar(stash, ctx.Float("epsilon", 1e-5f))})});
  const ValueId normalized = ctx.CastTo(ctx.Emit("div", {xs, rms}), type.dtype);
  const ValueId y = ctx.EmitOutput(0, "mul", {normalized, scale});
  if (ctx.ok() && ctx.TypeOf(y).shape != type.shape) {
    return ctx.Refuse(absl::StrCat("Scale ", ShapeToString(ctx.TypeOf(scale).shape),
                                   " does not broadcast to X ", ShapeToString(type.shape)));
  }
  return ctx.status();
}

// --- RotaryEmbedding --------------------------------------------------------

// X viewed with separate head and sequence axes: [batch, heads, seq, head]
// for a 4-D X, [batch, seq, heads, head] for a 3-D one.
struct RotaryInput {
  ValueId x;
  Shape shape;
  int64_t heads_axis;
};

absl::StatusOr<RotaryInput> ViewRotaryInput(NodeContext& ctx, ValueId x, const Shape& shape) {
  const int64_t num_heads = ctx.Int("num_heads", 0);
  if (shape.size() == 4) {
    if (ctx.HasAttr("num_heads") && num_heads != shape[1]) {
      return ctx.Refuse(absl::StrCat("attribute 'num_heads' ", num_heads, " disagrees with X ",
                                     ShapeToString(shape), " ([batch, heads, seq, head])"));
    }
    return RotaryInput{x, shape, 1};
  }
  if (shape.size() != 3) {
    return ctx.Refuse(absl::StrCat("X must have rank 3 or 4, got ", ShapeToString(shape)));
  }
  if (num_heads <= 0 || shape[2] % num_heads != 0) {
    return ctx.Refuse(absl::StrCat("a 3-D X ", ShapeToString(shape),
                                   " needs attribute 'num_heads' > 0 dividing its hidden size"));
  }
  Shape split = {shape[0], shape[1], num_heads, shape[2] / num_heads};
  return RotaryInput{Reshape(ctx, x, split), split, 2};
}

// The cos or sin values of each token, [batch, seq, rotary_dim / 2] (read
// at position_ids when given), with a size-1 heads axis inserted.
absl::StatusOr<ValueId> RotaryCache(NodeContext& ctx, int input, const RotaryInput& in,
                                    int64_t half) {
  ValueId cache = ctx.In(input);
  if (ctx.HasInput(3)) {
    cache = ctx.Emit("gather", {cache, ctx.In(3)}, MakeAttrs({{"axis", int64_t{0}}}));
  }
  const Shape shape = ctx.TypeOf(cache).shape;
  if (!ctx.ok()) return ctx.status();
  const int64_t batch = in.shape[0];
  const int64_t seq = in.shape[in.heads_axis == 1 ? 2 : 1];
  if (shape.size() != 3 || (shape[0] != batch && shape[0] != 1) ||
      (shape[1] != seq && shape[1] != 1) || shape[2] != half) {
    return ctx.Refuse(absl::StrCat(
        input == 1 ? "cos_cache" : "sin_cache", " gives per-token values of shape ",
        ShapeToString(shape), "; expected [", batch, ", ", seq, ", ", half,
        "] ([batch, seq, rotary_embedding_dim / 2], read at position_ids when given)"));
  }
  return Unsqueeze(ctx, cache, in.heads_axis);
}

// The first rotary_dim features of each head of `in` rotated pair by pair
// by the token's angle: the pairs (x1, x2) are the halves of those features,
// or with `interleaved`, the even and odd ones.
ValueId RotateFeatures(NodeContext& ctx, const RotaryInput& in, int64_t rotary_dim, ValueId cos,
                       ValueId sin, bool interleaved) {
  const int64_t head = in.shape[3];
  const ValueId part = rotary_dim < head ? Slice(ctx, in.x, 3, 0, rotary_dim) : in.x;
  const int64_t half = rotary_dim / 2;
  const ValueId x1 =
      interleaved ? Slice(ctx, part, 3, 0, rotary_dim, 2) : Slice(ctx, part, 3, 0, half);
  const ValueId x2 =
      interleaved ? Slice(ctx, part, 3, 1, rotary_dim, 2) : Slice(ctx, part, 3, half, rotary_dim);
  const ValueId real = ctx.Emit("sub", {ctx.Emit("mul", {cos, x1}), ctx.Emit("mul", {sin, x2})});
  const ValueId imag = ctx.Emit("add", {ctx.Emit("mul", {sin, x1}), ctx.Emit("mul", {cos, x2})});
  if (!interleaved) return Concat(ctx, {real, imag}, 3);
  // Back into the even and odd places: (real, imag) pairs, flattened.
  Shape part_shape = in.shape;
  part_shape[3] = rotary_dim;
  return Reshape(ctx, Concat(ctx, {Unsqueeze(ctx, real, 4), Unsqueeze(ctx, imag, 4)}, 4),
                 part_shape);
}

// Rotary positional embedding: the first rotary_embedding_dim (default: all)
// features of each head rotated, the rest passed through.
absl::Status ConvertRotaryEmbedding(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(
      ctx.CheckAttrs({{"interleaved", kInt}, {"rotary_embedding_dim", kInt}, {"num_heads", kInt}}));
  const ValueId x = ctx.In(0);
  const Shape x_shape = ctx.TypeOf(x).shape;
  if (!ctx.ok()) return ctx.status();
  LOOM_ASSIGN_OR_RETURN(RotaryInput in, ViewRotaryInput(ctx, x, x_shape));
  const int64_t head = in.shape[3];
  const int64_t rotary_dim =
      ctx.Int("rotary_embedding_dim", 0) == 0 ? head : ctx.Int("rotary_embedding_dim", 0);
  if (rotary_dim < 0 || rotary_dim > head || rotary_dim % 2 != 0) {
    return ctx.Refuse(absl::StrCat("the rotary dimension ", rotary_dim,
                                   " must be even and at most the head size ", head));
  }
  LOOM_ASSIGN_OR_RETURN(ValueId cos, RotaryCache(ctx, 1, in, rotary_dim / 2));
  LOOM_ASSIGN_OR_RETURN(ValueId sin, RotaryCache(ctx, 2, in, rotary_dim / 2));
  ValueId y = RotateFeatures(ctx, in, rotary_dim, cos, sin, ctx.Int("interleaved", 0) != 0);
  if (rotary_dim < head) y = Concat(ctx, {y, Slice(ctx, in.x, 3, rotary_dim, head)}, 3);
  ctx.Bind(0, x_shape.size() == 3 ? Reshape(ctx, y, x_shape) : y);
  return ctx.status();
}

// --- Attention --------------------------------------------------------------

// Attention's inputs, as ONNX numbers them.
enum AttentionInput { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpadKvSeqlen };
enum AttentionOutput { kY, kPresentKey, kPresentValue, kQkMatmulOutput };

// Q, K and V as [batch, heads, seq, head] and the sizes the op needs.
struct AttentionOperands {
  ValueId q, k, v;  // k and v include past_key and past_value
  bool three_d = false;
  DType dtype = DType::kF32;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, head = 0;
  int64_t past_seq = 0;   // the keys of past_key
  int64_t total_seq = 0;  // past_seq + K's keys
};

// A 3-D [batch, seq, heads * head] operand viewed as [batch, heads, seq, head].
absl::StatusOr<ValueId> SplitHeads(NodeContext& ctx, ValueId x, const Shape& shape,
                                   absl::string_view name, absl::string_view heads_attr) {
  const int64_t heads = ctx.Int(heads_attr, 0);
  if (heads <= 0 || shape[2] % heads != 0) {
    return ctx.Refuse(absl::StrCat("3-D ", name, " ", ShapeToString(shape), " needs attribute '",
                                   heads_attr, "' > 0 dividing its hidden size"));
  }
  return Transpose(ctx, Reshape(ctx, x, {shape[0], shape[1], heads, shape[2] / heads}),
                   {0, 2, 1, 3});
}

// 4-D operands carry their head counts; the attributes, meant for 3-D ones,
// may only repeat them (opset 25 forbids them).
absl::Status CheckHeadAttrs(const NodeContext& ctx, int64_t q_heads, int64_t kv_heads) {
  for (auto [attr, heads] : {std::pair{"q_num_heads", q_heads}, {"kv_num_heads", kv_heads}}) {
    if (!ctx.HasAttr(attr)) continue;
    if (ctx.opset() >= 25) {
      return ctx.Refuse(absl::StrCat("attribute '", attr, "' must not be given for 4-D inputs"));
    }
    if (ctx.Int(attr, 0) != heads) {
      return ctx.Refuse(absl::StrCat("attribute '", attr, "' ", ctx.Int(attr, 0),
                                     " disagrees with the 4-D inputs' ", heads, " heads"));
    }
  }
  return absl::OkStatus();
}

// K or V preceded by the cached past_key or past_value (when given), bound
// to the present_key or present_value output.
ValueId WithPast(NodeContext& ctx, ValueId x, int past_input, int present_output) {
  const ValueId present = ctx.HasInput(past_input) ? Concat(ctx, {ctx.In(past_input), x}, 2) : x;
  if (ctx.WantsOutput(present_output)) ctx.Bind(present_output, present);
  return present;
}

// Q, K and V's element types and ranks, and which optional inputs go
// together.
absl::Status CheckAttentionInputs(const NodeContext& ctx, const TensorType& q, const TensorType& k,
                                  const TensorType& v) {
  if (k.dtype != q.dtype || v.dtype != q.dtype) {
    return ctx.Refuse("loom needs Q, K and V to have the same element type");
  }
  const size_t rank = q.shape.size();
  if ((rank != 3 && rank != 4) || k.shape.size() != rank || v.shape.size() != rank) {
    return ctx.Refuse(absl::StrCat("Q, K and V must all be 3-D or all 4-D, got ",
                                   ShapeToString(q.shape), ", ", ShapeToString(k.shape), " and ",
                                   ShapeToString(v.shape)));
  }
  if (ctx.HasInput(kPastKey) != ctx.HasInput(kPastValue)) {
    return ctx.Refuse("past_key and past_value must be given together");
  }
  if (ctx.HasInput(kPastKey) && ctx.HasInput(kNonpadKvSeqlen)) {
    return ctx.Refuse("nonpad_kv_seqlen (an external cache) cannot be combined with past_key");
  }
  return absl::OkStatus();
}

// Records the sizes of Q, K and V, viewed as [batch, heads, seq, head], and
// checks that they agree.
absl::Status ReadSizes(NodeContext& ctx, AttentionOperands& ops) {
  const Shape q = ctx.TypeOf(ops.q).shape;
  const Shape k = ctx.TypeOf(ops.k).shape;
  const Shape v = ctx.TypeOf(ops.v).shape;
  if (!ctx.ok()) return ctx.status();
  if (k[0] != q[0] || v[0] != q[0] || k[1] != v[1] || k[2] != v[2] || k[3] != q[3]) {
    return ctx.Refuse(absl::StrCat("Q ", ShapeToString(q), ", K ", ShapeToString(k), " and V ",
                                   ShapeToString(v),
                                   " (as [batch, heads, seq, head]) do not agree"));
  }
  if (q[1] % k[1] != 0) {
    return ctx.Refuse(absl::StrCat("the ", q[1], " query heads are not a multiple of the ", k[1],
                                   " key/value heads"));
  }
  ops.batch = q[0];
  ops.q_heads = q[1];
  ops.kv_heads = k[1];
  ops.q_seq = q[2];
  ops.head = q[3];
  ops.total_seq = k[2];
  return absl::OkStatus();
}

// The number of keys in past_key and past_value (0 without them).
absl::StatusOr<int64_t> PastLength(NodeContext& ctx) {
  if (!ctx.HasInput(kPastKey)) return 0;
  const Shape past_key = ctx.TypeOf(ctx.In(kPastKey)).shape;
  const Shape past_value = ctx.TypeOf(ctx.In(kPastValue)).shape;
  if (!ctx.ok()) return ctx.status();
  if (past_key.size() != 4 || past_value.size() != 4 || past_key[2] != past_value[2]) {
    return ctx.Refuse(absl::StrCat("past_key ", ShapeToString(past_key), " and past_value ",
                                   ShapeToString(past_value),
                                   " must be 4-D with the same number of keys"));
  }
  return past_key[2];
}

absl::StatusOr<AttentionOperands> ReadAttentionOperands(NodeContext& ctx) {
  const ValueId q = ctx.In(kQ), k = ctx.In(kK), v = ctx.In(kV);
  const TensorType q_type = ctx.TypeOf(q);
  const TensorType k_type = ctx.TypeOf(k);
  const TensorType v_type = ctx.TypeOf(v);
  if (!ctx.ok()) return ctx.status();
  LOOM_RETURN_IF_ERROR(CheckAttentionInputs(ctx, q_type, k_type, v_type));
  AttentionOperands ops{q, k, v};
  ops.three_d = q_type.shape.size() == 3;
  ops.dtype = q_type.dtype;
  if (ops.three_d) {
    LOOM_ASSIGN_OR_RETURN(ops.q, SplitHeads(ctx, q, q_type.shape, "Q", "q_num_heads"));
    LOOM_ASSIGN_OR_RETURN(ops.k, SplitHeads(ctx, k, k_type.shape, "K", "kv_num_heads"));
    LOOM_ASSIGN_OR_RETURN(ops.v, SplitHeads(ctx, v, v_type.shape, "V", "kv_num_heads"));
  } else {
    LOOM_RETURN_IF_ERROR(CheckHeadAttrs(ctx, q_type.shape[1], k_type.shape[1]));
  }
  LOOM_RETURN_IF_ERROR(ReadSizes(ctx, ops));
  LOOM_ASSIGN_OR_RETURN(ops.past_seq, PastLength(ctx));
  ops.total_seq += ops.past_seq;
  ops.k = WithPast(ctx, ops.k, kPastKey, kPresentKey);
  ops.v = WithPast(ctx, ops.v, kPastValue, kPresentValue);
  return ops;
}

// K or V with each of its heads repeated for the query heads that share it
// (grouped-query attention): [h0, h0, h1, h1, ...].
ValueId RepeatHeads(NodeContext& ctx, ValueId x, const AttentionOperands& ops) {
  if (ops.q_heads == ops.kv_heads) return x;
  Shape shape = ctx.TypeOf(x).shape;
  const int64_t repeats = ops.q_heads / ops.kv_heads;
  const ValueId expanded =
      ctx.Emit("expand", {Unsqueeze(ctx, x, 2)},
               MakeAttrs({{"shape", Shape{shape[0], shape[1], repeats, shape[2], shape[3]}}}));
  return Reshape(ctx, expanded, {shape[0], ops.q_heads, shape[2], shape[3]});
}

// attn_mask as an additive bias: a bool mask is 0 where True and -inf where
// False; a numeric one is added as it is. A mask with fewer keys than K
// (after past_key) is padded with -inf, as ONNX's reference implementation
// and, from opset 24, its function body do.
absl::StatusOr<ValueId> MaskBias(NodeContext& ctx, const AttentionOperands& ops) {
  const ValueId mask = ctx.In(kMask);
  const TensorType type = ctx.TypeOf(mask);
  if (!ctx.ok()) return ctx.status();
  if (type.shape.empty()) return ctx.Refuse("attn_mask must have rank >= 1");
  const int64_t keys = type.shape.back();
  if (keys > ops.total_seq) {
    return ctx.Refuse(absl::StrCat("attn_mask ", ShapeToString(type.shape), " has more than the ",
                                   ops.total_seq, " keys"));
  }
  // Opset 23's function body broadcasts a mask of 1 key where its reference
  // implementation pads it: the version does not say which.
  if (ctx.opset() < 24 && keys == 1 && ops.total_seq > 1) {
    return ctx.Refuse(
        "attn_mask with 1 key in opset 23 is ambiguous: ONNX's function body broadcasts it, its "
        "reference implementation pads it with -inf (opset 24 pads)");
  }
  const ValueId bias =
      type.dtype == DType::kBool ? BiasWhere(ctx, mask, ops.dtype) : ctx.CastTo(mask, ops.dtype);
  if (keys == ops.total_seq) return bias;
  Shape padding_shape = type.shape;
  padding_shape.back() = ops.total_seq - keys;
  LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(padding_shape));
  Tensor padding(ops.dtype, std::move(padding_shape));
  for (int64_t i = 0; i < padding.num_elements(); ++i) padding.SetDouble(i, -INFINITY);
  return Concat(ctx, {bias, ctx.Constant(std::move(padding))}, -1);
}

// How Attention masks keys by position.
struct PositionRules {
  bool causal = false;
  int64_t left_window = -1;   // -1: unbounded
  int64_t right_window = -1;  // -1: unbounded
  bool Restricts() const { return causal || left_window >= 0 || right_window >= 0; }
};

// nonpad_kv_seqlen, checked to be int64 [batch].
absl::StatusOr<ValueId> NonpadKvSeqlen(NodeContext& ctx, const AttentionOperands& ops) {
  const ValueId lengths = ctx.In(kNonpadKvSeqlen);
  const TensorType type = ctx.TypeOf(lengths);
  if (!ctx.ok()) return ctx.status();
  if (type.dtype != DType::kI64 || type.shape != Shape{ops.batch}) {
    return ctx.Refuse(absl::StrCat("nonpad_kv_seqlen must be int64 [", ops.batch, "], got ",
                                   DTypeName(type.dtype), ShapeToString(type.shape)));
  }
  return lengths;
}

// The causal and sliding-window bias. Query i sits at absolute position
// i + offset: offset is past_key's length, or with nonpad_kv_seqlen (an
// external cache) nonpad_kv_seqlen[b] - q_seq for each batch, else 0. It
// attends key j iff j <= position (causal), position - j <= left_window and
// j - position <= right_window. [q_seq, keys], or [batch, 1, q_seq, keys]
// with nonpad_kv_seqlen.
absl::StatusOr<ValueId> PositionBias(NodeContext& ctx, const AttentionOperands& ops,
                                     const PositionRules& rules) {
  ValueId position = Positions(ctx, {ops.q_seq, 1}, ops.past_seq);
  const bool per_batch = ctx.HasInput(kNonpadKvSeqlen);
  if (per_batch) {
    LOOM_ASSIGN_OR_RETURN(ValueId lengths, NonpadKvSeqlen(ctx, ops));
    const ValueId offset = ctx.Emit("sub", {lengths, ctx.Scalar(DType::kI64, ops.q_seq)});
    position = ctx.Emit("add", {position, Reshape(ctx, offset, {ops.batch, 1, 1})});
  }
  // position - j: [q_seq, keys] or [batch, q_seq, keys].
  const ValueId distance = ctx.Emit("sub", {position, Positions(ctx, {1, ops.total_seq}, 0)});
  std::vector<ValueId> conditions;
  auto bound = [&](const char* op, int64_t limit) {
    conditions.push_back(ctx.Emit(op, {distance, ctx.Scalar(DType::kI64, limit)}));
  };
  if (rules.causal) bound("greater_equal", 0);
  if (rules.left_window >= 0) bound("less_equal", rules.left_window);
  if (rules.right_window >= 0) bound("greater_equal", -rules.right_window);
  ValueId allowed = conditions[0];
  for (size_t i = 1; i < conditions.size(); ++i) {
    allowed = ctx.Emit("logical_and", {allowed, conditions[i]});
  }
  const ValueId bias = BiasWhere(ctx, allowed, ops.dtype);
  return per_batch ? Reshape(ctx, bias, {ops.batch, 1, ops.q_seq, ops.total_seq}) : bias;
}

// -inf for the keys j >= nonpad_kv_seqlen[b]: [batch, 1, 1, keys].
absl::StatusOr<ValueId> PaddingBias(NodeContext& ctx, const AttentionOperands& ops) {
  LOOM_ASSIGN_OR_RETURN(ValueId lengths, NonpadKvSeqlen(ctx, ops));
  const ValueId valid = ctx.Emit(
      "less", {Positions(ctx, {1, ops.total_seq}, 0), Reshape(ctx, lengths, {ops.batch, 1})});
  return Reshape(ctx, BiasWhere(ctx, valid, ops.dtype), {ops.batch, 1, 1, ops.total_seq});
}

// The sum of the biases that apply, broadcastable to the scores; none when
// nothing masks.
absl::StatusOr<std::optional<ValueId>> AttentionBias(NodeContext& ctx, const AttentionOperands& ops,
                                                     const PositionRules& rules) {
  std::optional<ValueId> bias;
  auto add = [&](ValueId term) { bias = bias ? ctx.Emit("add", {*bias, term}) : term; };
  if (ctx.HasInput(kMask)) {
    LOOM_ASSIGN_OR_RETURN(ValueId mask, MaskBias(ctx, ops));
    add(mask);
  }
  if (rules.Restricts()) {
    LOOM_ASSIGN_OR_RETURN(ValueId positions, PositionBias(ctx, ops, rules));
    add(positions);
  }
  if (ctx.HasInput(kNonpadKvSeqlen)) {
    LOOM_ASSIGN_OR_RETURN(ValueId padding, PaddingBias(ctx, ops));
    add(padding);
  }
  return bias;
}

// The attention weights with each query row whose bias is -inf for every
// key set to zeros (its softmax would be NaN): such a row attends nothing.
ValueId ZeroFullyMaskedRows(NodeContext& ctx, ValueId weights, ValueId bias, DType dtype) {
  const int64_t last = ctx.RankOf(bias) - 1;
  const ValueId row_max =
      ctx.Emit("reduce_max", {bias}, MakeAttrs({{"axes", Shape{last}}, {"keepdims", int64_t{1}}}));
  const ValueId fully_masked = ctx.Emit("equal", {row_max, ctx.Scalar(dtype, -INFINITY)});
  return ctx.Emit("where", {fully_masked, ctx.Scalar(dtype, 0), weights});
}

// Checks the attributes Attention's version accepts and reads the ones that
// select what it computes.
absl::StatusOr<PositionRules> ReadAttentionAttrs(const NodeContext& ctx) {
  std::vector<AttrRule> accepted = {{"is_causal", kInt},        {"kv_num_heads", kInt},
                                    {"q_num_heads", kInt},      {"qk_matmul_output_mode", kInt},
                                    {"scale", kFloat},          {"softcap", kFloat},
                                    {"softmax_precision", kInt}};
  if (ctx.opset() >= 25) {
    accepted.push_back({"left_window_size", kInt});
    accepted.push_back({"right_window_size", kInt});
  }
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs(accepted));
  const int64_t mode = ctx.Int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) {
    return ctx.Refuse(absl::StrCat("qk_matmul_output_mode ", mode, " is not 0, 1, 2 or 3"));
  }
  // loom's softmax computes in double and rounds once to the scores' type,
  // as precise as either precision loom can name.
  if (ctx.HasAttr("softmax_precision")) {
    LOOM_RETURN_IF_ERROR(
        FloatDType(ctx, "softmax_precision", ctx.Int("softmax_precision", 0)).status());
  }
  if (ctx.HasAttr("scale") && !(ctx.Float("scale", 0) > 0)) {
    return ctx.Refuse(absl::StrCat("scale ", ctx.Float("scale", 0),
                                   " must be positive (Q and K are each scaled by its sqrt)"));
  }
  PositionRules rules;
  rules.causal = ctx.Int("is_causal", 0) != 0;
  rules.left_window = ctx.Int("left_window_size", -1);
  rules.right_window = ctx.Int("right_window_size", -1);
  if (rules.left_window < -1 || rules.right_window < -1) {
    return ctx.Refuse("left_window_size and right_window_size must be -1 (unbounded) or >= 0");
  }
  return rules;
}

// The scaled scores Q K^T of [batch, q_heads, q_seq, keys], each operand
// scaled by sqrt(scale) against overflow.
ValueId Scores(NodeContext& ctx, const AttentionOperands& ops, ValueId k) {
  const double scale = ctx.Float("scale", 1 / std::sqrt(static_cast<double>(ops.head)));
  const ValueId factor = ctx.Scalar(ops.dtype, std::sqrt(scale));
  const ValueId q = ctx.Emit("mul", {ops.q, factor});
  const ValueId k_t = Transpose(ctx, ctx.Emit("mul", {k, factor}), {0, 1, 3, 2});
  return ctx.Emit("matmul", {q, k_t});
}

// softcap * tanh(scores / softcap) when softcap > 0.
ValueId Softcap(NodeContext& ctx, ValueId scores, DType dtype) {
  const double softcap = ctx.Float("softcap", 0);
  if (!(softcap > 0)) return scores;
  const ValueId cap = ctx.Scalar(dtype, softcap);
  return ctx.Emit("mul", {ctx.Emit("tanh", {ctx.Emit("div", {scores, cap})}), cap});
}

absl::Status ConvertAttention(NodeContext& ctx) {
  LOOM_ASSIGN_OR_RETURN(PositionRules rules, ReadAttentionAttrs(ctx));
  LOOM_ASSIGN_OR_RETURN(AttentionOperands ops, ReadAttentionOperands(ctx));
  LOOM_ASSIGN_OR_RETURN(std::optional<ValueId> bias, AttentionBias(ctx, ops, rules));
  const ValueId scores = Scores(ctx, ops, RepeatHeads(ctx, ops.k, ops));
  const ValueId capped = Softcap(ctx, scores, ops.dtype);
  const ValueId biased = bias ? ctx.Emit("add", {capped, *bias}) : capped;
  ValueId weights = ctx.Emit("softmax", {biased}, MakeAttrs({{"axis", int64_t{-1}}}));
  if (bias) weights = ZeroFullyMaskedRows(ctx, weights, *bias, ops.dtype);
  if (ctx.WantsOutput(kQkMatmulOutput)) {
    const ValueId by_mode[] = {scores, capped, biased, weights};
    ctx.Bind(kQkMatmulOutput, by_mode[ctx.Int("qk_matmul_output_mode", 0)]);
  }
  const ValueId y = ctx.Emit("matmul", {weights, RepeatHeads(ctx, ops.v, ops)});
  if (!ops.three_d) {
    ctx.Bind(kY, y);
    return ctx.status();
  }
  const Shape y_shape = ctx.TypeOf(y).shape;  // [batch, q_heads, q_seq, v_head]
  ctx.Bind(kY, Reshape(ctx, Transpose(ctx, y, {0, 2, 1, 3}),
                       {ops.batch, ops.q_seq, ops.q_heads * y_shape[3]}));
  return ctx.status();
}

// --- LinearAttention --------------------------------------------------------

enum LinearAttentionInput { kLaQuery, kLaKey, kLaValue, kLaPastState, kLaDecay, kLaBeta };
enum LinearAttentionOutput { kLaOutput, kLaPresentState };

// LinearAttention's recurrence: `gated` decays the state by exp(decay)
// before each step, `delta` writes beta * (v - S^T k) instead of v.
struct LinearAttentionRule {
  bool gated = false;
  bool delta = false;
};

// The sizes of LinearAttention's operands ([batch, steps, heads * size]).
struct LinearAttentionSizes {
  int64_t batch = 0, steps = 0, q_heads = 0, kv_heads = 0, key_size = 0, value_size = 0;
  int64_t group() const { return q_heads / kv_heads; }
};

absl::StatusOr<LinearAttentionRule> ReadLinearAttentionRule(const NodeContext& ctx) {
  const std::string rule = ctx.String("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return ctx.Refuse(absl::StrCat("update_rule '", rule,
                                   "' is not 'linear', 'gated', 'delta' or 'gated_delta'"));
  }
  LinearAttentionRule read{rule == "gated" || rule == "gated_delta",
                           rule == "delta" || rule == "gated_delta"};
  for (auto [input, name, needed] :
       {std::tuple{kLaDecay, "decay", read.gated}, std::tuple{kLaBeta, "beta", read.delta}}) {
    if (ctx.HasInput(input) != needed) {
      return ctx.Refuse(absl::StrCat("update_rule '", rule, "' ", needed ? "requires" : "takes no",
                                     " input ", name));
    }
  }
  return read;
}

// Reads the head counts and Q, K and V's shapes, checked against each other.
absl::StatusOr<LinearAttentionSizes> ReadLinearAttentionSizes(NodeContext& ctx, const Shape& q,
                                                              const Shape& k, const Shape& v) {
  if (!ctx.HasAttr("q_num_heads") || !ctx.HasAttr("kv_num_heads")) {
    return ctx.Refuse("attributes 'q_num_heads' and 'kv_num_heads' are required");
  }
  LinearAttentionSizes sizes;
  sizes.q_heads = ctx.Int("q_num_heads", 0);
  sizes.kv_heads = ctx.Int("kv_num_heads", 0);
  if (sizes.q_heads <= 0 || sizes.kv_heads <= 0 || sizes.q_heads % sizes.kv_heads != 0) {
    return ctx.Refuse(absl::StrCat("q_num_heads ", sizes.q_heads,
                                   " must be a positive multiple of kv_num_heads ",
                                   sizes.kv_heads));
  }
  const std::string shapes = absl::StrCat("query ", ShapeToString(q), ", key ", ShapeToString(k),
                                          " and value ", ShapeToString(v));
  if (q.size() != 3 || k.size() != 3 || v.size() != 3 || k[0] != q[0] || v[0] != q[0] ||
      k[1] != q[1] || v[1] != q[1]) {
    return ctx.Refuse(absl::StrCat(shapes, " must be [batch, steps, heads * size] alike"));
  }
  if (q[2] % sizes.q_heads != 0 || v[2] % sizes.kv_heads != 0 ||
      k[2] != sizes.kv_heads * (q[2] / sizes.q_heads)) {
    return ctx.Refuse(absl::StrCat(shapes, " do not split into ", sizes.q_heads,
                                   " query heads and ", sizes.kv_heads,
                                   " key/value heads with one key size"));
  }
  if (q[1] == 0) return ctx.Refuse(absl::StrCat(shapes, " have no steps"));
  sizes.batch = q[0];
  sizes.steps = q[1];
  sizes.key_size = q[2] / sizes.q_heads;
  sizes.value_size = v[2] / sizes.kv_heads;
  return sizes;
}

// Checks that optional input `input` is `dtype` [batch, steps, last] with
// `last` one of `lasts`, and returns its last dim.
absl::StatusOr<int64_t> CheckGateInput(NodeContext& ctx, int input, absl::string_view name,
                                       const LinearAttentionSizes& sizes, DType dtype,
                                       std::vector<int64_t> lasts) {
  const TensorType type = ctx.TypeOf(ctx.In(input));
  if (!ctx.ok()) return ctx.status();
  const bool fits = type.shape.size() == 3 && type.shape[0] == sizes.batch &&
                    type.shape[1] == sizes.steps && absl::c_linear_search(lasts, type.shape[2]);
  if (type.dtype != dtype || !fits) {
    return ctx.Refuse(absl::StrCat(name, " must be ", DTypeName(dtype), " [", sizes.batch, ", ",
                                   sizes.steps, ", ", absl::StrJoin(lasts, " or "), "], got ",
                                   TypeToString(type)));
  }
  return type.shape[2];
}

// [batch, steps, heads * size] as [batch, heads, steps, size], or with
// `perm` another order of [batch, steps, heads, size].
ValueId SplitPackedHeads(NodeContext& ctx, ValueId x, const LinearAttentionSizes& sizes,
                         int64_t heads, std::vector<int64_t> perm = {0, 2, 1, 3}) {
  const int64_t size = ctx.TypeOf(x).shape[2] / heads;
  return Transpose(ctx, Reshape(ctx, x, {sizes.batch, sizes.steps, heads, size}), std::move(perm));
}

// One step's slice of `x` along `axis`.
ValueId AtStep(NodeContext& ctx, ValueId x, int64_t axis, int64_t t) {
  return Slice(ctx, x, axis, t, t + 1);
}

// LinearAttention (27): the recurrence run step by step over the sequence,
// unrolled at import. The state S [batch, kv_heads, key_size, value_size]
// starts at past_state (zeros without it); at step t, S *= exp(decay_t)
// (gated), v_t becomes beta_t * (v_t - S^T k_t) (delta), S += k_t v_t^T,
// and each query head reads scale * q_t^T S of its key/value head (query
// head h reads head h / (q_num_heads / kv_num_heads)).
absl::Status ConvertLinearAttention(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"chunk_size", kInt},
                                       {"kv_num_heads", kInt},
                                       {"q_num_heads", kInt},
                                       {"scale", kFloat},
                                       {"update_rule", onnx::AttributeProto::STRING}}));
  LOOM_ASSIGN_OR_RETURN(LinearAttentionRule rule, ReadLinearAttentionRule(ctx));
  const ValueId q = ctx.In(kLaQuery), k = ctx.In(kLaKey), v = ctx.In(kLaValue);
  const TensorType q_type = ctx.TypeOf(q);
  const TensorType k_type = ctx.TypeOf(k);
  const TensorType v_type = ctx.TypeOf(v);
  if (!ctx.ok()) return ctx.status();
  if (k_type.dtype != q_type.dtype || v_type.dtype != q_type.dtype) {
    return ctx.Refuse("query, key and value must have the same element type");
  }
  const DType dtype = q_type.dtype;
  LOOM_ASSIGN_OR_RETURN(LinearAttentionSizes sizes,
                        ReadLinearAttentionSizes(ctx, q_type.shape, k_type.shape, v_type.shape));
  const int64_t batch = sizes.batch, kv_heads = sizes.kv_heads;
  const Shape state_shape = {batch, kv_heads, sizes.key_size, sizes.value_size};
  ValueId state;
  if (ctx.HasInput(kLaPastState)) {
    state = ctx.In(kLaPastState);
    const TensorType past = ctx.TypeOf(state);
    if (!ctx.ok()) return ctx.status();
    if (past != TensorType{dtype, state_shape}) {
      return ctx.Refuse(absl::StrCat("past_state must be ", TypeToString({dtype, state_shape}),
                                     " (loom keeps the state in query's type), got ",
                                     TypeToString(past)));
    }
  } else {
    LOOM_RETURN_IF_ERROR(ctx.CheckBuildable(state_shape));
    state = ctx.Constant(Tensor(dtype, state_shape));
  }
  // Per step: the decay factors [batch, kv_heads, key_size or 1, 1], beta
  // [batch, kv_heads or 1, 1, 1], keys as columns and rows, values as rows.
  ValueId decay = NodeContext::kNoValue, beta = NodeContext::kNoValue;
  if (rule.gated) {
    LOOM_RETURN_IF_ERROR(
        CheckGateInput(ctx, kLaDecay, "decay", sizes, dtype, {kv_heads, kv_heads * sizes.key_size})
            .status());
    decay =
        SplitPackedHeads(ctx, ctx.Emit("exp", {ctx.In(kLaDecay)}), sizes, kv_heads, {0, 2, 3, 1});
  }
  if (rule.delta) {
    LOOM_ASSIGN_OR_RETURN(int64_t last,
                          CheckGateInput(ctx, kLaBeta, "beta", sizes, dtype, {kv_heads, 1}));
    beta = SplitPackedHeads(ctx, ctx.In(kLaBeta), sizes, last, {0, 2, 1, 3});
  }
  const ValueId key_columns = SplitPackedHeads(ctx, k, sizes, kv_heads, {0, 2, 3, 1});
  const ValueId key_rows = SplitPackedHeads(ctx, k, sizes, kv_heads);
  const ValueId values = SplitPackedHeads(ctx, v, sizes, kv_heads);
  // Queries as [batch, kv_heads, steps, group, key_size]: a step's queries
  // of one key/value head form one matrix.
  const ValueId queries =
      Transpose(ctx, Reshape(ctx, q, {batch, sizes.steps, kv_heads, sizes.group(), sizes.key_size}),
                {0, 2, 1, 3, 4});
  std::vector<ValueId> outputs;
  for (int64_t t = 0; t < sizes.steps; ++t) {
    if (rule.gated) state = ctx.Emit("mul", {state, AtStep(ctx, decay, 3, t)});
    ValueId value = AtStep(ctx, values, 2, t);
    if (rule.delta) {
      const ValueId retrieved = ctx.Emit("matmul", {AtStep(ctx, key_rows, 2, t), state});
      value = ctx.Emit("mul", {AtStep(ctx, beta, 2, t), ctx.Emit("sub", {value, retrieved})});
    }
    state = ctx.Emit("add", {state, ctx.Emit("mul", {AtStep(ctx, key_columns, 3, t), value})});
    const ValueId query =
        Reshape(ctx, AtStep(ctx, queries, 2, t), {batch, kv_heads, sizes.group(), sizes.key_size});
    outputs.push_back(Reshape(ctx, ctx.Emit("matmul", {query, state}),
                              {batch, 1, sizes.q_heads * sizes.value_size}));
  }
  const double scale = ctx.Float("scale", 0) != 0
                           ? ctx.Float("scale", 0)
                           : 1 / std::sqrt(static_cast<double>(sizes.key_size));
  const ValueId output = outputs.size() == 1 ? outputs[0] : Concat(ctx, outputs, 1);
  ctx.EmitOutput(kLaOutput, "mul", {output, ctx.Scalar(dtype, scale)});
  if (ctx.WantsOutput(kLaPresentState)) ctx.Bind(kLaPresentState, state);
  return ctx.status();
}

// --- FlexAttention (domain ai.onnx.preview) ---------------------------------

// `x` passed through the one-input, one-output graph of attribute `attr`
// (score_mod or prob_mod), which must keep its type.
absl::StatusOr<ValueId> ApplyModifier(NodeContext& ctx, absl::string_view attr, ValueId x) {
  const onnx::GraphProto* graph = ctx.GraphAttr(attr);
  if (graph == nullptr) return x;
  const TensorType type = ctx.TypeOf(x);
  ScopeValue input;
  input.tensor = x;
  LOOM_ASSIGN_OR_RETURN(std::vector<ScopeValue> outputs,
                        ctx.ImportSubgraph(*graph, {input}, {false}));
  if (outputs.size() != 1 || !outputs[0].is_tensor() || ctx.TypeOf(outputs[0].tensor) != type) {
    return ctx.Refuse(absl::StrCat("graph attribute '", attr,
                                   "' must give one tensor output of its input's type ",
                                   TypeToString(type)));
  }
  return outputs[0].tensor;
}

// Q [batch, q_heads, q_seq, head], K [batch, kv_heads, kv_seq, head] and
// V [batch, kv_heads, kv_seq, v_head], checked, as AttentionOperands of
// element type `dtype`.
absl::StatusOr<AttentionOperands> ReadFlexAttentionOperands(NodeContext& ctx, DType dtype) {
  if (ctx.num_inputs() != 3 || ctx.num_outputs() != 1) {
    return ctx.Refuse(absl::StrCat("has ", ctx.num_inputs(), " inputs and ", ctx.num_outputs(),
                                   " outputs; FlexAttention takes Q, K and V and gives Y"));
  }
  const ValueId q = ctx.In(kQ), k = ctx.In(kK), v = ctx.In(kV);
  const TensorType q_type = ctx.TypeOf(q);
  const TensorType k_type = ctx.TypeOf(k);
  const TensorType v_type = ctx.TypeOf(v);
  if (!ctx.ok()) return ctx.status();
  if (q_type.shape.size() != 4 || k_type.shape.size() != 4 || v_type.shape.size() != 4) {
    return ctx.Refuse(absl::StrCat("Q, K and V must be 4-D [batch, heads, seq, head], got ",
                                   ShapeToString(q_type.shape), ", ", ShapeToString(k_type.shape),
                                   " and ", ShapeToString(v_type.shape)));
  }
  AttentionOperands ops{ctx.CastTo(q, dtype), ctx.CastTo(k, dtype), ctx.CastTo(v, dtype)};
  ops.dtype = dtype;
  LOOM_RETURN_IF_ERROR(ReadSizes(ctx, ops));
  return ops;
}

// FlexAttention (ai.onnx.preview 1): softmax(score_mod(Q K^T * scale)),
// then prob_mod, times V, with grouped-query heads as in Attention. The
// scores, the modifiers' graphs and the softmax are in softmax_precision
// (default: f64 for f64 inputs, else f32); Y has Q's element type.
absl::Status ConvertFlexAttention(NodeContext& ctx) {
  LOOM_RETURN_IF_ERROR(ctx.CheckAttrs({{"scale", kFloat},
                                       {"softmax_precision", kInt},
                                       {"score_mod", kGraph},
                                       {"prob_mod", kGraph}}));
  if (ctx.HasAttr("scale") && !(ctx.Float("scale", 0) > 0)) {
    return ctx.Refuse(absl::StrCat("scale ", ctx.Float("scale", 0),
                                   " must be positive (Q and K are each scaled by its sqrt)"));
  }
  const DType dtype = ctx.TypeOf(ctx.In(kQ)).dtype;
  if (!ctx.ok()) return ctx.status();
  if (ctx.TypeOf(ctx.In(kK)).dtype != dtype || ctx.TypeOf(ctx.In(kV)).dtype != dtype) {
    return ctx.Refuse("Q, K and V must have the same element type");
  }
  DType precision = dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  if (ctx.HasAttr("softmax_precision")) {
    LOOM_ASSIGN_OR_RETURN(precision,
                          FloatDType(ctx, "softmax_precision", ctx.Int("softmax_precision", 0)));
  }
  LOOM_ASSIGN_OR_RETURN(AttentionOperands ops, ReadFlexAttentionOperands(ctx, precision));
  LOOM_ASSIGN_OR_RETURN(
      ValueId scores,
      ApplyModifier(ctx, "score_mod", Scores(ctx, ops, RepeatHeads(ctx, ops.k, ops))));
  const ValueId softmax = ctx.Emit("softmax", {scores}, MakeAttrs({{"axis", int64_t{-1}}}));
  LOOM_ASSIGN_OR_RETURN(ValueId weights, ApplyModifier(ctx, "prob_mod", softmax));
  const ValueId y = ctx.Emit("matmul", {weights, RepeatHeads(ctx, ops.v, ops)});
  ctx.Bind(kY, ctx.CastTo(y, dtype));
  return ctx.status();
}

}  // namespace

void AddAttentionConverters(ConverterMap& map) {
  map["Attention"] = ConvertAttention;
  map["RotaryEmbedding"] = ConvertRotaryEmbedding;
  map["RMSNormalization"] = ConvertRmsNormalization;
  map["LinearAttention"] = ConvertLinearAttention;
}

void AddPreviewConverters(ConverterMap& map) { map["FlexAttention"] = ConvertFlexAttention; }

}  // namespace loom::onnx_import
