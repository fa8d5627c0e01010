#include "frontends/onnx/onnx_half_floats.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "ir/tensor.h"

namespace loom::onnx_import {
namespace {

// `value` as `dtype`: a constant's data converted, or a cast node.
absl::StatusOr<ValueId> ConvertedValue(Graph& graph, ValueId value, DType dtype,
                                       absl::string_view suffix) {
  const std::string name = graph.UniqueValueName(absl::StrCat(graph.value(value).name, suffix));
  if (graph.HasInitializer(value)) {
    return graph.AddInitializer(name, ValueKind::kConstant,
                                ConvertedFloats(graph.initializer(value), dtype));
  }
  Attrs to;
  to.Set("to", std::string(DTypeName(dtype)));
  LOOM_ASSIGN_OR_RETURN(NodeId cast, graph.AddNode(name, "cast", {value}, {name}, std::move(to)));
  const ValueId out = graph.node(cast).outputs[0];
  graph.mutable_value(out).type = {dtype, graph.value(value).type.shape};
  return out;
}

// Whether ONNX gives output `i` of `node` the type of its float inputs.
bool FollowsInputType(const onnx::NodeProto& node, int i) {
  if (node.op_type() == "LayerNormalization" && i > 0) return false;
  return absl::c_none_of(node.attribute(), [](const onnx::AttributeProto& attr) {
    return attr.name() == "dtype" || attr.name() == "to" || attr.name() == "output_dtype" ||
           attr.name() == "output_datatype";
  });
}

}  // namespace

absl::StatusOr<std::optional<HalfFloatNode>> WidenHalfFloatInputs(const onnx::NodeProto& node,
                                                                  Graph& graph, ValueMap& values,
                                                                  WideCopies& copies) {
  std::optional<HalfFloatNode> half;
  if (node.op_type() == "Cast" || node.op_type() == "CastLike" || node.op_type() == "BitCast") {
    return half;
  }
  for (const std::string& input : node.input()) {
    auto it = values.find(input);
    if (it == values.end() || !IsHalfFloat(graph.value(it->second).type.dtype)) continue;
    if (!half.has_value()) half = HalfFloatNode{graph.value(it->second).type.dtype, {}};
    auto copy = copies.find(it->second);
    if (copy == copies.end()) {
      LOOM_ASSIGN_OR_RETURN(ValueId wide, ConvertedValue(graph, it->second, DType::kF32, "/f32"));
      copy = copies.emplace(it->second, wide).first;
    }
    half->inputs.emplace_back(input, it->second);
    it->second = copy->second;
  }
  return half;
}

absl::Status NarrowHalfFloatOutputs(const onnx::NodeProto& node, const HalfFloatNode& half,
                                    Graph& graph, ValueMap& values) {
  for (const auto& [name, value] : half.inputs) values[name] = value;
  for (int i = 0; i < node.output_size(); ++i) {
    auto it = values.find(node.output(i));
    if (it == values.end() || graph.value(it->second).type.dtype != DType::kF32 ||
        !FollowsInputType(node, i)) {
      continue;
    }
    LOOM_ASSIGN_OR_RETURN(it->second, ConvertedValue(graph, it->second, half.dtype, "/rounded"));
  }
  return absl::OkStatus();
}

}  // namespace loom::onnx_import
