// softmax and log_softmax along `axis` (default -1), for floats.
// Numerically stable: the maximum along the axis is subtracted before
// exponentiating (log_softmax is x - max - log(sum exp(x - max))). Computes
// in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

absl::StatusOr<int64_t> SoftmaxAxis(const Node& node, int64_t rank) {
  absl::StatusOr<int64_t> axis = NormalizeAxis(node.attrs.GetInt("axis", -1), rank);
  if (!axis.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'axis': ", axis.status().message()));
  }
  return axis;
}

absl::StatusOr<OutputTypes> SoftmaxShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
  LOOM_RETURN_IF_ERROR(SoftmaxAxis(node, in[0].shape.size()).status());
  return OneOutput(in[0]);
}

// `log`: log_softmax instead of softmax.
absl::Status SoftmaxEval(const Node& node, const Tensor& x, bool log, Tensor& result) {
  LOOM_ASSIGN_OR_RETURN(int64_t axis, SoftmaxAxis(node, x.rank()));
  const int64_t length = x.shape()[axis];
  // Element j of the row at (o, inner) is at (o * length + j) * stride + inner.
  const int64_t stride = ContiguousStrides(x.shape())[axis];
  const int64_t outer = NumElements(absl::MakeConstSpan(x.shape()).first(axis));
  std::vector<double> exps(length);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t inner = 0; inner < stride; ++inner) {
      const int64_t base = o * length * stride + inner;
      double max = -INFINITY;
      for (int64_t j = 0; j < length; ++j) {
        max = std::max(max, x.GetDouble(base + j * stride));
      }
      double sum = 0;
      for (int64_t j = 0; j < length; ++j) {
        exps[j] = std::exp(x.GetDouble(base + j * stride) - max);
        sum += exps[j];
      }
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < length; ++j) {
        const int64_t at = base + j * stride;
        result.SetDouble(at, log ? x.GetDouble(at) - max - log_sum : exps[j] / sum);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterSoftmaxOps(OpRegistry& registry) {
  auto op = [](std::string name, bool log) {
    EvalFn eval = [log](const Node& node, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) { return SoftmaxEval(node, *in[0], log, out[0]); };
    // A max and a sum over the axis, then applied to each element.
    return WithPattern(Composite(FixedArityOp(std::move(name), 1, {{"axis", AttrType::kInt, false}},
                                              SoftmaxShape, std::move(eval))),
                       OpPattern::kOpaque);
  };
  return RegisterAll(registry, {op("softmax", false), op("log_softmax", true)});
}

}  // namespace loom
