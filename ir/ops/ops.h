#ifndef LOOM_IR_OPS_OPS_H_
#define LOOM_IR_OPS_OPS_H_

// loom's op families. Each adds its ops (schema, shape function, reference
// implementation) to a registry; OpRegistry::Global() calls them all.

#include "absl/status/status.h"
#include "ir/op_registry.h"

namespace loom {

// add, sub, mul, div, pow, maximum, minimum, mod; bit_shift, bitwise_and,
// bitwise_or, bitwise_xor, bitwise_not; neg, abs, relu, exp, log, sqrt,
// rsqrt, reciprocal, tanh, sigmoid, erf, sin, cos, floor, ceil, round, sign;
// equal, not_equal, less, less_equal, greater, greater_equal; logical_not,
// logical_and, logical_or, logical_xor; where; cast.
absl::Status RegisterElementwiseOps(OpRegistry& registry);
// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_l1,
// reduce_l2, reduce_log_sum, reduce_log_sum_exp, reduce_sum_square; argmax,
// argmin.
absl::Status RegisterReductionOps(OpRegistry& registry);
// reshape, transpose, squeeze, unsqueeze, expand, concat, slice, as_strided.
absl::Status RegisterShapeOps(OpRegistry& registry);
// matmul, linear, gemm.
absl::Status RegisterMatmulOps(OpRegistry& registry);
// softmax, log_softmax.
absl::Status RegisterSoftmaxOps(OpRegistry& registry);
// gelu, silu, clip, leaky_relu, elu, selu, softplus, hard_sigmoid,
// hard_swish, prelu.
absl::Status RegisterActivationOps(OpRegistry& registry);
// split (variadic outputs), tile, pad, gather, gather_elements, gather_nd,
// scatter_elements, scatter_nd, cumsum, flatten, dropout.
absl::Status RegisterTensorOps(OpRegistry& registry);
// layer_norm, group_norm, instance_norm, batch_norm.
absl::Status RegisterNormOps(OpRegistry& registry);
// The normalizations' epsilon when their attribute is absent (ONNX's).
inline constexpr double kDefaultNormEpsilon = 1e-5;
// lstm, gru, rnn (ONNX semantics; see recurrent.h).
absl::Status RegisterRecurrentOps(OpRegistry& registry);
// conv, max_pool, average_pool (see conv.h).
absl::Status RegisterConvOps(OpRegistry& registry);
// resize (see resize.h).
absl::Status RegisterResizeOps(OpRegistry& registry);
// atan, asin, acos, asinh, acosh, atanh (composites).
absl::Status RegisterInverseTrigOps(OpRegistry& registry);
// lrn (composite).
absl::Status RegisterLrnOps(OpRegistry& registry);
// top_k, reverse_sequence (composites).
absl::Status RegisterSequenceOps(OpRegistry& registry);
// einsum (composite; see einsum.h).
absl::Status RegisterEinsumOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_IR_OPS_OPS_H_
