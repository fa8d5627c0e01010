#include "frontends/onnx/onnx_versions.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace loom::onnx_import {
namespace {

#include "frontends/onnx/onnx_schemas.inc"

// The ops whose converters implement a version newer than opset 17's, with
// the newest opset each implements. Each line says what the versions after
// 17 changed; "types" means only element types: bfloat16, float16, float8,
// float4, int4 and int2, which loom stores and computes in f32 or i32
// (ir/dtype.h), or ones loom does not have (float6, strings), which the
// importer refuses by name wherever a value of one appears.
const absl::flat_hash_map<std::string, int64_t>& ImplementedVersions() {
  static const auto* const versions = new absl::flat_hash_map<std::string, int64_t>{
      // Elementwise math and activations: types (22, 28).
      {"Acos", 28},
      {"Acosh", 28},
      {"Asin", 28},
      {"Asinh", 28},
      {"Atan", 28},
      {"Atanh", 28},
      {"Cos", 28},
      {"Cosh", 28},
      {"Sin", 28},
      {"Sinh", 28},
      {"Tan", 28},
      {"Round", 28},
      {"Elu", 28},
      {"Selu", 28},
      {"Celu", 28},
      {"HardSigmoid", 28},
      {"HardSwish", 28},
      {"Softplus", 28},
      {"Softsign", 28},
      {"ThresholdedRelu", 28},
      {"IsNaN", 28},
      {"IsInf", 28},
      {"Equal", 28},
      // Data movement: types (19 to 25, 28).
      {"Constant", 28},
      {"ConstantOfShape", 28},
      {"Identity", 28},
      {"Reshape", 28},
      {"Flatten", 28},
      {"Squeeze", 28},
      {"Unsqueeze", 28},
      {"Transpose", 28},
      {"Shape", 28},
      {"Size", 28},
      {"Compress", 28},
      {"OneHot", 28},
      {"ReverseSequence", 28},
      {"EyeLike", 28},
      {"DepthToSpace", 28},
      {"TopK", 28},
      {"Unique", 28},
      {"Einsum", 28},
      // Neural-network ops: types (22).
      {"Conv", 28},
      {"ConvTranspose", 28},
      {"GlobalAveragePool", 28},
      {"GlobalMaxPool", 28},
      {"InstanceNormalization", 28},
      {"LSTM", 28},
      {"GRU", 28},
      {"RNN", 28},
      {"Dropout", 28},
      {"NegativeLogLikelihoodLoss", 28},
      // Reductions: 18 takes the axes as an input, with noop_with_empty_axes;
      // 28 drops integer types from ReduceLogSum and ReduceLogSumExp.
      {"ReduceL1", 28},
      {"ReduceL2", 28},
      {"ReduceLogSum", 28},
      {"ReduceLogSumExp", 28},
      {"ReduceMean", 28},
      {"ReduceProd", 28},
      {"ReduceSumSquare", 28},
      // 20: ReduceMax and ReduceMin take bools.
      {"ReduceMax", 28},
      {"ReduceMin", 28},
      // 19: `saturate` and 24: `round_mode`, for float8 types only.
      {"Cast", 28},
      {"CastLike", 28},
      // 18: `num_outputs`.
      {"Split", 28},
      // 18: reductions max and min.
      {"ScatterElements", 28},
      {"ScatterND", 28},
      // 19: AveragePool's dilations; 22: with ceil_mode, a window that would
      // start in the end padding is dropped (as loom always did).
      {"AveragePool", 28},
      {"MaxPool", 28},
      // 28: Mod's fmod=0 defined for floats (floor mod, as loom's mod);
      // BitShift defined for signed types (loom's bit_shift supports them).
      {"Mod", 28},
      {"BitShift", 28},
      // 19: float8 types and `saturate`; 21: blocked quantization
      // (`block_size`), int16, uint16, int4 and uint4, QuantizeLinear's
      // `output_dtype`; 23: QuantizeLinear's `precision`, DequantizeLinear's
      // `output_dtype`; 24, 25, 28: types (onnx_ops_quantize.cc).
      {"QuantizeLinear", 28},
      {"DequantizeLinear", 28},
      // 21: float16 and bfloat16 scales, float8 operands.
      {"QLinearMatMul", 28},
      // 18: new, on integers.
      {"BitwiseAnd", 28},
      {"BitwiseOr", 28},
      {"BitwiseXor", 28},
      {"BitwiseNot", 28},
      // New: Mish (18), Gelu (20), Swish (24).
      {"Mish", 28},
      {"Gelu", 28},
      {"Swish", 28},
      // --- Resize, Pad, pools, normalisations, CumProd, CenterCropPad ---
      // 18: antialias, axes, keep_aspect_ratio_policy; 19: coordinates
      // half_pixel_symmetric.
      {"Resize", 28},
      // 18: input 'axes'; 19: mode "wrap"; 21, 23 to 25: types.
      {"Pad", 28},
      // 28: `mode` (DCR or CRD).
      {"SpaceToDepth", 28},
      // 27: `stash_type`, for float16 and bfloat16 only.
      {"Range", 28},
      // 26: new (a masked reduce_prod).
      {"CumProd", 28},
      // 18: new (slice and pad).
      {"CenterCropPad", 28},
      // 18: ceil_mode and dilations; 22: types.
      {"LpPool", 28},
      // 18: new, scale and bias per group; 21: per channel, `stash_type`.
      {"GroupNormalization", 28},
      // 22: a zero norm gives 0 (and types).
      {"LpNormalization", 28},
      // --- Attention and its parts (onnx_ops_attention.cc) ---
      // 23: new; 24: input nonpad_kv_seqlen; 25: left/right_window_size.
      {"Attention", 28},
      // 23: new.
      {"RotaryEmbedding", 28},
      // 23: new.
      {"RMSNormalization", 28},
      // --- Signal and linear algebra (onnx_ops_signal.cc) ---
      // 20: the axis as an input.
      {"DFT", 28},
      // 22: types.
      {"Det", 28},
      // 27: new.
      {"LinearAttention", 28},
      // --- Sampling and geometry (onnx_ops_sampling.cc) ---
      // 20: modes renamed linear and cubic, N-D; 22: types.
      {"GridSample", 28},
      // 20: new.
      {"AffineGrid", 28},
      // 18: new.
      {"Col2Im", 28},
      // 19: new; 22: types.
      {"DeformConv", 28},
      // 16: coordinate_transformation_mode; 22: types.
      {"RoiAlign", 28},
      // 22: types.
      {"MaxUnpool", 28},
      // --- Control flow (onnx_ops_control_flow.cc) ---
      // 19, 21, 23 to 25: types.
      {"If", 28},
      {"Loop", 28},
      {"Scan", 28},
      // Sequences and optionals (onnx_ops_sequence.cc). 18: OptionalHasElement's
      // input optional, it and OptionalGetElement take tensors and sequences
      // too; 24, 28: types.
      {"SplitToSequence", 28},
      {"Optional", 28},
      {"OptionalHasElement", 28},
      {"OptionalGetElement", 28},
      // --- New ops of opsets 24 to 28 (onnx_ops_recent.cc) ---
      // 24: new.
      {"TensorScatter", 28},
      // 26: new.
      {"BitCast", 28},
      // 27: new.
      {"CausalConvWithState", 28},
      // 28: new.
      {"SwiGLU", 28},
  };
  return *versions;
}

}  // namespace

const OnnxDomain* FindDomain(absl::string_view name) {
  if (name == "ai.onnx") name = "";
  for (const OnnxDomain& domain : kOnnxDomains) {
    if (domain.name == name) return &domain;
  }
  return nullptr;
}

int64_t NewestOnnxOpset() { return FindDomain("")->last_opset; }

const OnnxSchema* FindSchema(absl::string_view op, int64_t opset) {
  // kOnnxSchemas is sorted by op, then version.
  struct ByOp {
    bool operator()(const OnnxSchema& s, absl::string_view name) const { return s.op < name; }
    bool operator()(absl::string_view name, const OnnxSchema& s) const { return name < s.op; }
  };
  auto [first, last] =
      std::equal_range(std::begin(kOnnxSchemas), std::end(kOnnxSchemas), op, ByOp());
  const OnnxSchema* found = nullptr;
  for (auto it = first; it != last && it->since_version <= opset; ++it) found = &*it;
  return found;
}

int64_t ImplementedThroughOpset(absl::string_view op) {
  auto it = ImplementedVersions().find(op);
  return it == ImplementedVersions().end() ? 17 : it->second;
}

}  // namespace loom::onnx_import
