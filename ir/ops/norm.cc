// Normalisations, for floats, computed in double straight from their
// definitions: statistics in two passes (mean, then the mean squared
// deviation: the biased, population variance), then
// y = (x - mean) / sqrt(var + epsilon) * scale + bias. `epsilon` defaults to
// 1e-5 everywhere.
//
// - layer_norm(x, optional scale, optional bias): statistics over dims
//   axis..rank-1 (`axis` default -1); scale and bias have shape
//   x.shape[axis:].
// - group_norm(x [N, C, ...], scale [C], bias [C]): `num_groups` G (required,
//   divides C); statistics per (n, group) over C/G channels and every spatial
//   element; affine per channel (PyTorch).
// - instance_norm(x [N, C, ...], scale [C], bias [C]): statistics per (n, c)
//   over the spatial dims.
// - batch_norm(x [N, C, ...], scale, bias, mean, var, each [C]): inference,
//   with the given statistics.
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using ShapeResult = absl::StatusOr<OutputTypes>;

// Every input is a float of input 0's dtype.
absl::Status CheckFloatInputs(absl::Span<const TensorType> in) {
  absl::Status status = CheckDType(in[0].dtype, DTypeClass::kFloat, 0);
  for (int i = 1; status.ok() && i < static_cast<int>(in.size()); ++i) {
    status = CheckSameDType(in, 0, i);
  }
  return status;
}

// Input `index` (called `name`) has shape `expected`.
absl::Status CheckParamShape(absl::Span<const TensorType> in, int index, absl::string_view name,
                             const Shape& expected) {
  if (index >= static_cast<int>(in.size()) || in[index].shape == expected) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("input ", index, " (", name, ") must have shape ",
                                                 ShapeToString(expected), ", got ",
                                                 ShapeToString(in[index].shape)));
}

// x is [N, C, ...].
absl::Status CheckChannelsFirst(const Shape& x) {
  if (x.size() >= 2) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("x must have rank >= 2 ([N, C, ...]), got ", ShapeToString(x)));
}

// Normalises each run of `length` consecutive elements of x by its own mean
// and variance, then applies scale and bias (either may be null) at
// param_index(i) for element i.
template <typename ParamIndex>
void NormalizeRuns(const Tensor& x, int64_t length, double epsilon, const Tensor* scale,
                   const Tensor* bias, ParamIndex param_index, Tensor& y) {
  if (length == 0) return;
  const int64_t runs = x.num_elements() / length;
  for (int64_t r = 0; r < runs; ++r) {
    const int64_t begin = r * length;
    const int64_t end = begin + length;
    double sum = 0;
    for (int64_t i = begin; i < end; ++i) sum += x.GetDouble(i);
    const double mean = sum / length;
    double squares = 0;
    for (int64_t i = begin; i < end; ++i) {
      const double deviation = x.GetDouble(i) - mean;
      squares += deviation * deviation;
    }
    const double inv_std = 1.0 / std::sqrt(squares / length + epsilon);
    for (int64_t i = begin; i < end; ++i) {
      double v = (x.GetDouble(i) - mean) * inv_std;
      const int64_t p = param_index(i);
      if (scale != nullptr) v *= scale->GetDouble(p);
      if (bias != nullptr) v += bias->GetDouble(p);
      y.SetDouble(i, v);
    }
  }
}

const Tensor* OptionalInput(absl::Span<const Tensor* const> in, int index) {
  return index < static_cast<int>(in.size()) ? in[index] : nullptr;
}

// --- layer_norm --------------------------------------------------------------

absl::StatusOr<int64_t> LayerNormAxis(const Node& node, int64_t rank) {
  absl::StatusOr<int64_t> axis = NormalizeAxis(node.attrs.GetInt("axis", -1), rank);
  if (!axis.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'axis': ", axis.status().message()));
  }
  return axis;
}

ShapeResult LayerNormShape(const Node& node, absl::Span<const TensorType> in) {
  absl::Status status = CheckFloatInputs(in);
  if (!status.ok()) return status;
  const Shape& x = in[0].shape;
  LOOM_ASSIGN_OR_RETURN(int64_t axis, LayerNormAxis(node, x.size()));
  const Shape normalized(x.begin() + axis, x.end());
  status = CheckParamShape(in, 1, "scale", normalized);
  if (status.ok()) status = CheckParamShape(in, 2, "bias", normalized);
  if (!status.ok()) return status;
  return OneOutput(in[0]);
}

absl::Status LayerNormEval(const Node& node, absl::Span<const Tensor* const> in,
                           absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  LOOM_ASSIGN_OR_RETURN(int64_t axis, LayerNormAxis(node, x.rank()));
  const int64_t length = NumElements(absl::MakeConstSpan(x.shape()).subspan(axis));
  NormalizeRuns(
      x, length, node.attrs.GetFloat("epsilon", kDefaultNormEpsilon), OptionalInput(in, 1),
      OptionalInput(in, 2), [length](int64_t i) { return i % length; }, out[0]);
  return absl::OkStatus();
}

// --- group_norm / instance_norm ----------------------------------------------

absl::StatusOr<int64_t> NumGroups(const Node& node, const Shape& x) {
  const int64_t groups = node.attrs.GetInt("num_groups", 0);
  const int64_t channels = x[1];
  if (groups <= 0 || channels % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'num_groups' (", groups,
                                                   ") must be positive and divide ", "the ",
                                                   channels, " channels of x ", ShapeToString(x)));
  }
  return groups;
}

// `grouped`: group_norm, which has num_groups; otherwise instance_norm.
ShapeResult ChannelNormShape(const Node& node, absl::Span<const TensorType> in, bool grouped) {
  absl::Status status = CheckFloatInputs(in);
  if (status.ok()) status = CheckChannelsFirst(in[0].shape);
  if (!status.ok()) return status;
  if (grouped) {
    LOOM_RETURN_IF_ERROR(NumGroups(node, in[0].shape).status());
  }
  const Shape channels{in[0].shape[1]};
  status = CheckParamShape(in, 1, "scale", channels);
  if (status.ok()) status = CheckParamShape(in, 2, "bias", channels);
  if (!status.ok()) return status;
  return OneOutput(in[0]);
}

absl::Status ChannelNormEval(const Node& node, absl::Span<const Tensor* const> in,
                             absl::Span<Tensor> out, bool grouped) {
  const Tensor& x = *in[0];
  const int64_t channels = x.shape()[1];
  int64_t groups = channels;
  if (grouped) {
    LOOM_ASSIGN_OR_RETURN(int64_t num_groups, NumGroups(node, x.shape()));
    groups = num_groups;
  }
  const int64_t spatial = NumElements(absl::MakeConstSpan(x.shape()).subspan(2));
  // In [N, C, spatial] order the channels of one (n, group) are contiguous.
  const int64_t length = channels / groups * spatial;
  NormalizeRuns(
      x, length, node.attrs.GetFloat("epsilon", kDefaultNormEpsilon), in[1], in[2],
      [spatial, channels](int64_t i) { return i / spatial % channels; }, out[0]);
  return absl::OkStatus();
}

OpDef ChannelNormOp(std::string name, bool grouped) {
  std::vector<AttrSpec> attrs = {{"epsilon", AttrType::kFloat, false}};
  if (grouped) attrs.push_back({"num_groups", AttrType::kInt, true});
  return FixedArityOp(
      std::move(name), 3, std::move(attrs),
      [grouped](const Node& node, absl::Span<const TensorType> in) {
        return ChannelNormShape(node, in, grouped);
      },
      [grouped](const Node& node, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
        return ChannelNormEval(node, in, out, grouped);
      });
}

// --- batch_norm --------------------------------------------------------------

ShapeResult BatchNormShape(const Node&, absl::Span<const TensorType> in) {
  absl::Status status = CheckFloatInputs(in);
  if (status.ok()) status = CheckChannelsFirst(in[0].shape);
  if (!status.ok()) return status;
  const Shape channels{in[0].shape[1]};
  const char* const names[] = {"scale", "bias", "mean", "var"};
  for (int i = 1; status.ok() && i <= 4; ++i) {
    status = CheckParamShape(in, i, names[i - 1], channels);
  }
  if (!status.ok()) return status;
  return OneOutput(in[0]);
}

absl::Status BatchNormEval(const Node& node, absl::Span<const Tensor* const> in,
                           absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const double epsilon = node.attrs.GetFloat("epsilon", kDefaultNormEpsilon);
  const int64_t channels = x.shape()[1];
  const int64_t spatial = NumElements(absl::MakeConstSpan(x.shape()).subspan(2));
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = i / spatial % channels;
    const double normalized =
        (x.GetDouble(i) - in[3]->GetDouble(c)) / std::sqrt(in[4]->GetDouble(c) + epsilon);
    out[0].SetDouble(i, normalized * in[1]->GetDouble(c) + in[2]->GetDouble(c));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterNormOps(OpRegistry& registry) {
  OpDef layer_norm = FixedArityOp(
      "layer_norm", 3, {{"axis", AttrType::kInt, false}, {"epsilon", AttrType::kFloat, false}},
      LayerNormShape, LayerNormEval);
  layer_norm.min_inputs = 1;
  return RegisterAll(
      registry,
      {
          // Statistics over axes, then applied to each element.
          WithPattern(Composite(std::move(layer_norm)), OpPattern::kOpaque),
          WithPattern(Composite(ChannelNormOp("group_norm", /*grouped=*/true)), OpPattern::kOpaque),
          WithPattern(Composite(ChannelNormOp("instance_norm", /*grouped=*/false)),
                      OpPattern::kOpaque),
          // Given statistics: a per-channel affine map.
          WithPattern(
              Composite(FixedArityOp("batch_norm", 5, {{"epsilon", AttrType::kFloat, false}},
                                     BatchNormShape, BatchNormEval)),
              OpPattern::kBroadcast),
      });
}

}  // namespace loom
