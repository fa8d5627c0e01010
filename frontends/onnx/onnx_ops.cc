#include "frontends/onnx/onnx_ops.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace loom::onnx_import {

absl::StatusOr<int64_t> NormalizedAxis(const NodeContext& ctx, int64_t axis, int64_t rank,
                                       absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return ctx.Refuse(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

ValueId Reshape(NodeContext& ctx, ValueId x, Shape shape) {
  return ctx.Emit("reshape", {x}, MakeAttrs({{"shape", std::move(shape)}}));
}

ValueId Slice(NodeContext& ctx, ValueId x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  return ctx.Emit("slice", {x},
                  MakeAttrs({{"starts", Shape{start}},
                             {"ends", Shape{end}},
                             {"axes", Shape{axis}},
                             {"steps", Shape{step}}}));
}

const Converter* FindConverter(absl::string_view op_type, absl::string_view domain) {
  static const ConverterMap* const preview_converters = [] {
    auto* map = new ConverterMap;
    AddPreviewConverters(*map);
    return map;
  }();
  if (domain == "ai.onnx.preview") {
    auto it = preview_converters->find(op_type);
    return it == preview_converters->end() ? nullptr : &it->second;
  }
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  static const ConverterMap* const converters = [] {
    auto* map = new ConverterMap;
    AddElementwiseConverters(*map);
    AddTensorConverters(*map);
    AddNeuralConverters(*map);
    AddMathConverters(*map);
    AddAttentionConverters(*map);
    AddSignalConverters(*map);
    AddControlFlowConverters(*map);
    AddSequenceConverters(*map);
    AddSamplingConverters(*map);
    AddQuantizeConverters(*map);
    AddRecentConverters(*map);
    return map;
  }();
  auto it = converters->find(op_type);
  return it == converters->end() ? nullptr : &it->second;
}

std::vector<int> StaticOperands(absl::string_view op_type) {
  static const auto* const operands = new absl::flat_hash_map<std::string, std::vector<int>>{
      {"Reshape", {1}},         {"Expand", {1}},       {"Tile", {1}},
      {"Squeeze", {1}},         {"Unsqueeze", {1}},    {"Slice", {1, 2, 3, 4}},
      {"Split", {1}},           {"Pad", {1, 2, 3}},    {"Clip", {1, 2}},
      {"CumSum", {1}},          {"Compress", {1}},     {"OneHot", {1, 2}},
      {"Trilu", {1}},           {"Dropout", {1, 2}},   {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}},     {"Resize", {1, 2, 3}}, {"Upsample", {1}},
      {"ReduceSum", {1}},       {"ReduceMean", {1}},   {"ReduceMax", {1}},
      {"ReduceMin", {1}},       {"ReduceProd", {1}},   {"ReduceL1", {1}},
      {"ReduceL2", {1}},        {"ReduceLogSum", {1}}, {"ReduceLogSumExp", {1}},
      {"ReduceSumSquare", {1}}, {"HannWindow", {0}},   {"HammingWindow", {0}},
      {"BlackmanWindow", {0}},  {"TopK", {1}},         {"CumProd", {1}},
      {"CenterCropPad", {1}},   {"Loop", {0, 1}},      {"SequenceInsert", {2}},
      {"SequenceErase", {1}},   {"SequenceAt", {1}},   {"SplitToSequence", {1}},
      {"Col2Im", {1, 2}},       {"AffineGrid", {1}},   {"MaxUnpool", {2}},
      {"DFT", {1, 2}},          {"STFT", {1, 3}},      {"MelWeightMatrix", {0, 1, 2, 3, 4}},
      {"Unique", {0}},          {"NonZero", {0}},      {"NonMaxSuppression", {0, 1, 2, 3, 4}},
  };
  auto it = operands->find(op_type);
  return it == operands->end() ? std::vector<int>{} : it->second;
}

bool ReadsOnlyTypes(absl::string_view op_type) {
  // SequenceLength and OptionalHasElement read a structure known at import.
  return op_type == "Shape" || op_type == "Size" || op_type == "EyeLike" ||
         op_type == "SequenceLength" || op_type == "OptionalHasElement";
}

}  // namespace loom::onnx_import
