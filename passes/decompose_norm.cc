// Normalisations as reductions and pointwise ops. Statistics are the mean
// and the biased (population) variance (reduce_var: one pass with Welford's
// update in the backends, as accurate as two):
//   y = (x - mean) * rsqrt(var + epsilon) * scale + bias.
#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

Attrs MeanOver(std::vector<int64_t> axes) {
  Attrs attrs = Ints("axes", std::move(axes));
  attrs.Set("keepdims", int64_t{1});
  return attrs;
}

// (x - mean) * rsqrt(var + epsilon) over `axes` (kept as size-1 dims), for
// x of `dtype`.
ValueId Normalize(DecompositionBuilder& b, ValueId x, DType dtype, const std::vector<int64_t>& axes,
                  double epsilon) {
  // The variance first: a backend may then take the sum of the same values
  // from its one pass over x as well.
  const ValueId var = b.Add("var", "reduce_var", {x}, MeanOver(axes));
  const ValueId mean = b.Add("mean", "reduce_mean", {x}, MeanOver(axes));
  const ValueId shifted = b.Add("var_eps", "add", {var, b.Scalar("epsilon", epsilon, dtype)});
  const ValueId inv_std = b.Add("inv_std", "rsqrt", {shifted});
  const ValueId centered = b.Add("center", "sub", {x, mean});
  return b.Add("normalize", "mul", {centered, inv_std});
}

// y * scale + bias, each optional, writing `output` (of the composite's
// input shape `shape`); scale and bias are reshaped to `param_shape` first
// when it is set (per-channel parameters broadcast over the spatial dims).
void Affine(DecompositionBuilder& b, ValueId y, std::optional<ValueId> scale,
            std::optional<ValueId> bias, ValueId output, const Shape& shape,
            std::optional<Shape> param_shape = std::nullopt) {
  auto param = [&](absl::string_view suffix, ValueId p) {
    if (!param_shape.has_value()) return p;
    return b.Add(suffix, "reshape", {p}, Ints("shape", *param_shape));
  };
  if (!scale.has_value() && !bias.has_value()) {  // y is already the result
    b.AddWriting("identity", "reshape", {y}, output, Ints("shape", shape));
    return;
  }
  if (scale.has_value()) {
    const ValueId s = param("scale_shape", *scale);
    if (!bias.has_value()) {
      b.AddWriting("scale", "mul", {y, s}, output);
      return;
    }
    y = b.Add("scale", "mul", {y, s});
  }
  b.AddWriting("bias", "add", {y, param("bias_shape", *bias)}, output);
}

std::optional<ValueId> Input(const Node& node, size_t i) {
  if (i < node.inputs.size()) return node.inputs[i];
  return std::nullopt;
}

// [C, 1, ..., 1]: a per-channel parameter aligned with x [N, C, ...].
Shape ChannelShape(const Shape& x_shape) {
  Shape shape(x_shape.size() - 1, 1);
  shape[0] = x_shape[1];
  return shape;
}

absl::Status CheckChannels(const Shape& x_shape) {
  if (x_shape.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected x of rank >= 2 ([N, C, ...]), got ", ShapeToString(x_shape)));
  }
  return absl::OkStatus();
}

// layer_norm(x, scale?, bias?) normalises over dims axis..rank-1.
absl::Status DecomposeLayerNorm(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 1, 3));
  const ValueId x = node.inputs[0];
  const Shape shape = b.type(x).shape;  // a copy: Add() moves values
  const int64_t rank = shape.size();
  int64_t axis = node.attrs.GetInt("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'axis' ", node.attrs.GetInt("axis", -1), " is out of range for rank ", rank));
  }
  std::vector<int64_t> axes(rank - axis);
  std::iota(axes.begin(), axes.end(), axis);
  const ValueId y =
      Normalize(b, x, b.type(x).dtype, axes, node.attrs.GetFloat("epsilon", kDefaultNormEpsilon));
  Affine(b, y, Input(node, 1), Input(node, 2), node.outputs[0], shape);
  return absl::OkStatus();
}

// x [N, C, ...] viewed as [N, groups, C/groups * spatial] is normalised
// over its last axis, viewed back, then scaled and shifted per channel.
absl::Status ChannelNorm(const Node& node, DecompositionBuilder& b, const Shape& shape,
                         int64_t groups) {
  const int64_t per_group =
      NumElements(shape) / std::max<int64_t>(SaturatingMul(shape[0], groups), 1);
  const ValueId grouped =
      b.Add("group", "reshape", {node.inputs[0]}, Ints("shape", {shape[0], groups, per_group}));
  const ValueId normalized = Normalize(b, grouped, b.type(node.inputs[0]).dtype, {2},
                                       node.attrs.GetFloat("epsilon", kDefaultNormEpsilon));
  const ValueId y = b.Add("ungroup", "reshape", {normalized}, Ints("shape", shape));
  Affine(b, y, Input(node, 1), Input(node, 2), node.outputs[0], shape, ChannelShape(shape));
  return absl::OkStatus();
}

// group_norm(x [N, C, ...], scale [C], bias [C]): statistics per
// (n, group) over C/G channels and the spatial dims (PyTorch).
absl::Status DecomposeGroupNorm(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 1, 3));
  const Shape shape = b.type(node.inputs[0]).shape;
  LOOM_RETURN_IF_ERROR(CheckChannels(shape));
  const int64_t groups = node.attrs.GetInt("num_groups", 0);
  if (groups <= 0 || shape[1] % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'num_groups' (", groups,
                                                   ") must be positive and divide the channels (",
                                                   shape[1], ")"));
  }
  return ChannelNorm(node, b, shape, groups);
}

// instance_norm(x [N, C, ...], scale [C], bias [C]): statistics per (n, c)
// over the spatial dims, i.e. group_norm with one channel per group.
absl::Status DecomposeInstanceNorm(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 1, 3));
  const Shape shape = b.type(node.inputs[0]).shape;
  LOOM_RETURN_IF_ERROR(CheckChannels(shape));
  return ChannelNorm(node, b, shape, shape[1]);
}

// batch_norm (inference): (x - mean) / sqrt(var + epsilon) * scale + bias
// with per-channel statistics; the per-channel factor scale / sqrt(...) is
// computed once on [C].
absl::Status DecomposeBatchNorm(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 5, 1));
  const ValueId x = node.inputs[0], scale = node.inputs[1], bias = node.inputs[2],
                mean = node.inputs[3], var = node.inputs[4];
  const Shape shape = b.type(x).shape;  // a copy: Add() moves values
  LOOM_RETURN_IF_ERROR(CheckChannels(shape));
  const DType dtype = b.type(x).dtype;
  const ValueId shifted =
      b.Add("var_eps", "add",
            {var, b.Scalar("epsilon", node.attrs.GetFloat("epsilon", kDefaultNormEpsilon), dtype)});
  const ValueId factor = b.Add("factor", "div", {scale, b.Add("std", "sqrt", {shifted})});
  const Attrs channel = Ints("shape", ChannelShape(shape));
  const ValueId centered =
      b.Add("center", "sub", {x, b.Add("mean_shape", "reshape", {mean}, channel)});
  const ValueId scaled =
      b.Add("scale", "mul", {centered, b.Add("factor_shape", "reshape", {factor}, channel)});
  b.AddWriting("bias", "add", {scaled, b.Add("bias_shape", "reshape", {bias}, channel)},
               node.outputs[0]);
  return absl::OkStatus();
}

constexpr Decomposition kNormDecompositions[] = {
    {"layer_norm", DecomposeLayerNorm},
    {"group_norm", DecomposeGroupNorm},
    {"instance_norm", DecomposeInstanceNorm},
    {"batch_norm", DecomposeBatchNorm},
};

}  // namespace

absl::Span<const Decomposition> NormDecompositions() { return kNormDecompositions; }

}  // namespace loom
