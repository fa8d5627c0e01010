#include "passes/decomposition.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace loom {

bool NameSet::Insert(absl::string_view name) {
  if (names_.contains(name)) return false;
  names_.insert(Store(name));
  return true;
}

absl::string_view NameSet::Store(absl::string_view name) {
  char* copy;
  if (name.size() > kBlockSize / 4) {  // a long name gets a block of its own
    long_names_.push_back(std::make_unique<char[]>(name.size()));
    copy = long_names_.back().get();
  } else {
    if (block_used_ + name.size() > kBlockSize) {
      blocks_.push_back(std::make_unique<char[]>(kBlockSize));
      block_used_ = 0;
    }
    copy = blocks_.back().get() + block_used_;
    block_used_ += name.size();
  }
  std::copy(name.begin(), name.end(), copy);
  return absl::string_view(copy, name.size());
}

ValueId DecompositionBuilder::Add(absl::string_view suffix, std::string op,
                                  std::vector<ValueId> inputs, Attrs attrs) {
  std::string name = absl::StrCat(node_.name, "/", suffix);
  const ValueId output = graph_.AddIntermediate(name);
  Emit(std::move(name), std::move(op), std::move(inputs), output,
       std::move(attrs));
  return output;
}

void DecompositionBuilder::AddWriting(absl::string_view suffix, std::string op,
                                      std::vector<ValueId> inputs,
                                      ValueId output, Attrs attrs) {
  Emit(absl::StrCat(node_.name, "/", suffix), std::move(op), std::move(inputs),
       output, std::move(attrs));
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

void DecompositionBuilder::Emit(std::string name, std::string op,
                                std::vector<ValueId> inputs, ValueId output,
                                Attrs attrs) {
  out_.push_back(Node{UniqueNodeName(std::move(name)),
                      std::move(op),
                      std::move(inputs),
                      {output},
                      std::move(attrs)});
}

std::string DecompositionBuilder::UniqueNodeName(std::string base) {
  if (node_names_.Insert(base)) return base;
  for (int i = 1;; ++i) {
    std::string name = absl::StrCat(base, ".", i);
    if (node_names_.Insert(name)) return name;
  }
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
