#include "passes/decomposition.h"

#include "absl/strings/str_format.h"

namespace loom {

ValueId DecompositionBuilder::Add(absl::string_view suffix, std::string op,
                                  std::vector<ValueId> inputs, Attrs attrs) {
  const ValueId output =
      graph_.AddIntermediate(absl::StrCat(node_.name, "/", suffix));
  Emit(suffix, std::move(op), std::move(inputs), output, std::move(attrs));
  return output;
}

void DecompositionBuilder::AddWriting(absl::string_view suffix, std::string op,
                                      std::vector<ValueId> inputs,
                                      ValueId output, Attrs attrs) {
  Emit(suffix, std::move(op), std::move(inputs), output, std::move(attrs));
}

ValueId DecompositionBuilder::Constant(absl::string_view suffix, Tensor data) {
  const std::string name =
      graph_.UniqueValueName(absl::StrCat(node_.name, "/", suffix));
  // The name is fresh, so adding cannot fail.
  return *graph_.AddInitializer(name, ValueKind::kConstant, std::move(data));
}

ValueId DecompositionBuilder::Scalar(absl::string_view suffix, double value,
                                     DType dtype) {
  Tensor data(dtype, {});
  data.SetDouble(0, value);
  return Constant(suffix, std::move(data));
}

void DecompositionBuilder::Emit(absl::string_view suffix, std::string op,
                                std::vector<ValueId> inputs, ValueId output,
                                Attrs attrs) {
  out_.push_back(Node{UniqueNodeName(absl::StrCat(node_.name, "/", suffix)),
                      std::move(op),
                      std::move(inputs),
                      {output},
                      std::move(attrs)});
}

std::string DecompositionBuilder::UniqueNodeName(std::string base) {
  std::string name = base;
  for (int i = 1; !node_names_.insert(name).second; ++i) {
    name = absl::StrCat(base, ".", i);
  }
  return name;
}

absl::Status CheckArity(const Node& node, size_t inputs, size_t outputs) {
  if (node.inputs.size() == inputs && node.outputs.size() == outputs) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "expected %d inputs and %d outputs, got %d and %d", inputs, outputs,
      node.inputs.size(), node.outputs.size()));
}

absl::Status CheckInputCount(const Node& node, size_t min, size_t max) {
  if (node.inputs.size() >= min && node.inputs.size() <= max &&
      node.outputs.size() == 1) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("expected %d to %d inputs and 1 output, got %d and %d",
                      min, max, node.inputs.size(), node.outputs.size()));
}

Attrs Ints(const std::string& name, std::vector<int64_t> values) {
  Attrs attrs;
  attrs.Set(name, std::move(values));
  return attrs;
}

}  // namespace loom
