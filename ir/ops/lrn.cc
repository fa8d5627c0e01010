// lrn, local response normalisation across channels (ONNX LRN), for f32
// and f64, computed in double straight from its definition: for x [N, C,
// ...] and an odd or even window `size`,
//   square_sum[n, c, ...] = sum of x[n, i, ...]^2 over i in
//     [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] within [0, C),
//   y = x / (bias + alpha / size * square_sum)^beta.
// Attributes: size (required, >= 1), alpha (1e-4), beta (0.75), bias (1).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

absl::StatusOr<OutputTypes> LrnShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
  if (in[0].shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("input ", TypeToString(in[0]), " has rank ",
                                                   in[0].shape.size(),
                                                   "; expected [N, C, ...] (rank >= 2)"));
  }
  const int64_t size = node.attrs.GetInt("size", 0);
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'size' must be at least 1, got ", size));
  }
  return OneOutput(in[0]);
}

absl::Status LrnEval(const Node& node, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const int64_t size = node.attrs.GetInt("size", 0);
  const double alpha = node.attrs.GetFloat("alpha", 1e-4);
  const double beta = node.attrs.GetFloat("beta", 0.75);
  const double bias = node.attrs.GetFloat("bias", 1.0);
  const Shape& shape = x.shape();
  const int64_t channels = shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = i / inner % channels;
    const int64_t base = i - c * inner;  // channel 0 of the same position
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, c - before); j <= std::min(channels - 1, c + after);
         ++j) {
      const double v = x.GetDouble(base + j * inner);
      sum += v * v;
    }
    out[0].SetDouble(i, x.GetDouble(i) / std::pow(bias + alpha / size * sum, beta));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterLrnOps(OpRegistry& registry) {
  OpDef lrn = FixedArityOp("lrn", 1,
                           {{"size", AttrType::kInt, true},
                            {"alpha", AttrType::kFloat, false},
                            {"beta", AttrType::kFloat, false},
                            {"bias", AttrType::kFloat, false}},
                           LrnShape, LrnEval);
  // A sum over a window of channels, then applied to each element.
  return RegisterAll(registry, {WithPattern(Composite(std::move(lrn)), OpPattern::kOpaque)});
}

}  // namespace loom
