#ifndef LOOM_FRONTENDS_ONNX_ONNX_OPS_H_
#define LOOM_FRONTENDS_ONNX_ONNX_OPS_H_

// The ONNX op converters, by family. Internal to frontends/onnx.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontends/onnx/onnx_context.h"

namespace loom::onnx_import {

// Converts one ONNX node into loom nodes (or constants) through `ctx`.
using Converter = std::function<absl::Status(NodeContext& ctx)>;
using ConverterMap = absl::flat_hash_map<std::string, Converter>;

// Elementwise math, comparisons, logic, casts and activations.
void AddElementwiseConverters(ConverterMap& map);
// Shapes, views, data movement and the ops folded at import (Shape, Size,
// Range, ConstantOfShape, EyeLike, Constant).
void AddTensorConverters(ConverterMap& map);
// Matmul, reductions, softmax family, normalisations, convolutions and
// pools, recurrences, losses.
void AddNeuralConverters(ConverterMap& map);
// Inverse trigonometric and hyperbolic functions, TopK, ReverseSequence,
// LRN, Einsum and the window functions (onnx_ops_math.cc).
void AddMathConverters(ConverterMap& map);
// Attention and its parts as ONNX 23 defines them: Attention,
// RotaryEmbedding and RMSNormalization (onnx_ops_attention.cc).
void AddAttentionConverters(ConverterMap& map);

// Before opset 7, binary ops (Add, Sub, Mul, Div, Pow, the comparisons and
// logic ops) and Gemm broadcast only with attribute broadcast=1; otherwise
// their operands' shapes must be equal. With broadcast=1, B's dims align
// with A's starting at attribute `axis` (default: B's trailing dims align
// with A's, as numpy does). Returns the converter's accepted attributes
// plus these two (broadcast alone with `with_axis` false) for opset < 7.
std::vector<AttrRule> WithLegacyBroadcast(const NodeContext& ctx, std::vector<AttrRule> accepted,
                                          bool with_axis = true);
// Operand `b` of a binary op viewed so that loom's numpy broadcasting does
// what the legacy attributes say (reshaped to A's rank when `axis` is
// given); refuses shapes they do not allow. From opset 7 it is `b`.
absl::StatusOr<ValueId> LegacyBroadcastOperand(NodeContext& ctx, ValueId a, ValueId b);

// `axis` in [-rank, rank) made non-negative, or a refusal naming `what`.
absl::StatusOr<int64_t> NormalizedAxis(const NodeContext& ctx, int64_t axis, int64_t rank,
                                       absl::string_view what = "axis");

// The converter for an ONNX op of the default domain, or null.
const Converter* FindConverter(absl::string_view op_type);

// Operand positions of `op_type` whose data loom needs at import (shapes,
// axes, pads, repeats, ...): the importer resolves them to constants
// and refuses the node when it cannot.
std::vector<int> StaticOperands(absl::string_view op_type);

// Ops whose outputs are computed at import from their inputs' types alone
// (Shape, Size): their inputs are not needed as constants.
bool ReadsOnlyTypes(absl::string_view op_type);

}  // namespace loom::onnx_import

#endif  // LOOM_FRONTENDS_ONNX_ONNX_OPS_H_
