#ifndef LOOM_IR_OPS_OPS_H_
#define LOOM_IR_OPS_OPS_H_

// loom's op families. Each adds its ops (schema, shape function, reference
// implementation) to a registry; OpRegistry::Global() calls them all.

#include "absl/status/status.h"
#include "ir/op_registry.h"

namespace loom {

// add, sub, mul, div, pow, maximum, minimum; neg, abs, relu, exp, log, sqrt,
// rsqrt, reciprocal, tanh, sigmoid; equal, not_equal, less, less_equal,
// greater, greater_equal; logical_not; where; cast.
absl::Status RegisterElementwiseOps(OpRegistry& registry);
// reduce_sum, reduce_mean, reduce_max, reduce_min.
absl::Status RegisterReductionOps(OpRegistry& registry);
// reshape, transpose, squeeze, unsqueeze, expand, concat, slice.
absl::Status RegisterShapeOps(OpRegistry& registry);
// matmul.
absl::Status RegisterMatmulOps(OpRegistry& registry);
// softmax.
absl::Status RegisterSoftmaxOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_IR_OPS_OPS_H_
