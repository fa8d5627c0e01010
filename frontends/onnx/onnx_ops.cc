#include "frontends/onnx/onnx_ops.h"

#include "absl/strings/str_cat.h"

namespace loom::onnx_import {

absl::StatusOr<int64_t> NormalizedAxis(const NodeContext& ctx, int64_t axis, int64_t rank,
                                       absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return ctx.Refuse(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

const Converter* FindConverter(absl::string_view op_type) {
  static const ConverterMap* const converters = [] {
    auto* map = new ConverterMap;
    AddElementwiseConverters(*map);
    AddTensorConverters(*map);
    AddNeuralConverters(*map);
    AddMathConverters(*map);
    AddAttentionConverters(*map);
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
      {"CenterCropPad", {1}},
  };
  auto it = operands->find(op_type);
  return it == operands->end() ? std::vector<int>{} : it->second;
}

bool ReadsOnlyTypes(absl::string_view op_type) {
  return op_type == "Shape" || op_type == "Size" || op_type == "EyeLike";
}

}  // namespace loom::onnx_import
