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

// Attribute kinds, for NodeContext::CheckAttrs.
inline constexpr AttrKind kInt = onnx::AttributeProto::INT;
inline constexpr AttrKind kInts = onnx::AttributeProto::INTS;
inline constexpr AttrKind kFloat = onnx::AttributeProto::FLOAT;
inline constexpr AttrKind kFloats = onnx::AttributeProto::FLOATS;
inline constexpr AttrKind kString = onnx::AttributeProto::STRING;
inline constexpr AttrKind kStrings = onnx::AttributeProto::STRINGS;
inline constexpr AttrKind kGraph = onnx::AttributeProto::GRAPH;
inline constexpr AttrKind kTensor = onnx::AttributeProto::TENSOR;
inline constexpr AttrKind kTypeProto = onnx::AttributeProto::TYPE_PROTO;

// `x` reshaped to `shape`.
ValueId Reshape(NodeContext& ctx, ValueId x, Shape shape);
// x[start:end:step] along `axis`.
ValueId Slice(NodeContext& ctx, ValueId x, int64_t axis, int64_t start, int64_t end,
              int64_t step = 1);

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
// DFT, STFT, MelWeightMatrix, Det, TfIdfVectorizer, and Unique, NonZero and
// NonMaxSuppression computed at import (onnx_ops_signal.cc).
void AddSignalConverters(ConverterMap& map);
// If, Loop and Scan, their graphs imported and unrolled at import
// (onnx_ops_control_flow.cc).
void AddControlFlowConverters(ConverterMap& map);
// Sequences and optionals, their structure known at import
// (onnx_ops_sequence.cc).
void AddSequenceConverters(ConverterMap& map);
// Whether `op_type` builds, reads or takes apart sequences or optionals
// (Composite): such a node is not folded and handles 16-bit values as they
// are.
bool IsCompositeOp(absl::string_view op_type);
// Sampling and geometry: GridSample, AffineGrid, DeformConv, RoiAlign,
// Col2Im and MaxUnpool (onnx_ops_sampling.cc).
void AddSamplingConverters(ConverterMap& map);
// Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv
// (onnx_ops_quantize.cc).
void AddQuantizeConverters(ConverterMap& map);
// SwiGLU, BitCast, TensorScatter and CausalConvWithState
// (onnx_ops_recent.cc).
void AddRecentConverters(ConverterMap& map);
// The ops of domain ai.onnx.preview: FlexAttention (onnx_ops_attention.cc).
void AddPreviewConverters(ConverterMap& map);

// The attributes of loom's `conv` (strides, dilations, pads with auto_pad
// resolved, group) for an ONNX convolution whose X is input 0 and W input
// `weight_input` ([M, C/group, kernel...]); checks the node's attributes
// (Conv's) and X's and W's ranks (onnx_ops_nn.cc).
absl::StatusOr<Attrs> ConvAttrs(NodeContext& ctx, int weight_input);

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

// The converter for op `op_type` of `domain` ("" or "ai.onnx" for the
// default one, or "ai.onnx.preview"), or null.
const Converter* FindConverter(absl::string_view op_type, absl::string_view domain = "");

// Operand positions of `op_type` whose data loom needs at import (shapes,
// axes, pads, repeats, ...): the importer resolves them to constants
// and refuses the node when it cannot.
std::vector<int> StaticOperands(absl::string_view op_type);

// Ops whose outputs are computed at import from their inputs' types alone
// (Shape, Size): their inputs are not needed as constants.
bool ReadsOnlyTypes(absl::string_view op_type);

}  // namespace loom::onnx_import

#endif  // LOOM_FRONTENDS_ONNX_ONNX_OPS_H_
