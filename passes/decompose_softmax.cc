#include "absl/status/status.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

Attrs ReduceAttrs(int64_t axis) {
  Attrs attrs;
  attrs.Set("axes", AttrInts{axis});
  attrs.Set("keepdims", int64_t{1});
  return attrs;
}

// softmax(x) = exp(x - max(x)) * (1 / sum(exp(x - max(x)))) along `axis`;
// subtracting the max keeps exp from overflowing. One reciprocal per row
// and a product per element, as PyTorch's CPU kernel computes it: a
// division per element costs several products.
absl::Status DecomposeSoftmax(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  // The reductions count a negative axis from the end, as softmax does.
  const int64_t axis = node.attrs.GetInt("axis", -1);

  const ValueId max = b.Add("max", "reduce_max", {x}, ReduceAttrs(axis));
  const ValueId shifted = b.Add("sub", "sub", {x, max});
  const ValueId exp = b.Add("exp", "exp", {shifted});
  const ValueId sum = b.Add("sum", "reduce_sum", {exp}, ReduceAttrs(axis));
  const ValueId inverse = b.Add("inverse", "reciprocal", {sum});
  b.AddWriting("scale", "mul", {exp, inverse}, node.outputs[0]);
  return absl::OkStatus();
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max))) along `axis`.
absl::Status DecomposeLogSoftmax(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const int64_t axis = node.attrs.GetInt("axis", -1);

  const ValueId max = b.Add("max", "reduce_max", {x}, ReduceAttrs(axis));
  const ValueId shifted = b.Add("sub", "sub", {x, max});
  const ValueId exp = b.Add("exp", "exp", {shifted});
  const ValueId sum = b.Add("sum", "reduce_sum", {exp}, ReduceAttrs(axis));
  const ValueId log = b.Add("log", "log", {sum});
  b.AddWriting("log_sub", "sub", {shifted, log}, node.outputs[0]);
  return absl::OkStatus();
}

constexpr Decomposition kSoftmaxDecompositions[] = {
    {"softmax", DecomposeSoftmax},
    {"log_softmax", DecomposeLogSoftmax},
};

}  // namespace

absl::Span<const Decomposition> SoftmaxDecompositions() { return kSoftmaxDecompositions; }

}  // namespace loom
