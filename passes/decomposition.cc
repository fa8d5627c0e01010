#include "passes/decomposition.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace loom {

NameSet::NameSet() : entries_(1) {}

NameSet::~NameSet() = default;

bool NameSet::Insert(absl::string_view name) {
  int32_t entry = 0;
  if (const size_t slash = name.rfind('/'); slash != absl::string_view::npos) {
    entry = PrefixEntry(name.substr(0, slash));
    name.remove_prefix(slash + 1);
  }
  entry = Child(entry, name);
  if (entries_[entry].is_name) return false;
  entries_[entry].is_name = true;
  return true;
}

int32_t NameSet::PrefixEntry(absl::string_view prefix) {
  if (last_prefix_entry_ >= 0 && prefix == last_prefix_) {
    return last_prefix_entry_;
  }
  int32_t entry = 0;
  for (absl::string_view rest = prefix;;) {
    const size_t slash = rest.find('/');
    entry = Child(entry, rest.substr(0, slash));
    if (slash == absl::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  last_prefix_.assign(prefix.data(), prefix.size());
  last_prefix_entry_ = entry;
  return entry;
}

void NameSet::Reserve(size_t more) {
  const size_t needed = entries_.size() + more;
  if (needed > entries_.capacity()) {
    entries_.reserve(std::max(needed, 2 * entries_.capacity()));
  }
}

int32_t NameSet::Child(int32_t parent, absl::string_view part) {
  if (const int32_t index = entries_[parent].index; index >= 0) {
    auto it = indexes_[index].find(part);
    if (it != indexes_[index].end()) return it->second;
  } else {
    for (int32_t child = entries_[parent].first_child; child >= 0;
         child = entries_[child].next_sibling) {
      if (entries_[child].part == part) return child;
    }
  }
  const int32_t child = static_cast<int32_t>(entries_.size());
  entries_.emplace_back();
  entries_[child].part = Store(part);
  Entry& p = entries_[parent];
  ++p.num_children;
  if (p.index >= 0) {
    indexes_[p.index].emplace(entries_[child].part, child);
  } else {
    entries_[child].next_sibling = p.first_child;
    p.first_child = child;
    if (p.num_children > kMaxListed) {
      p.index = static_cast<int32_t>(indexes_.size());
      auto& index = indexes_.emplace_back();
      for (int32_t c = p.first_child; c >= 0; c = entries_[c].next_sibling) {
        index.emplace(entries_[c].part, c);
      }
    }
  }
  return child;
}

absl::string_view NameSet::Store(absl::string_view part) {
  char* copy;
  if (part.size() > kBlockSize / 4) {  // a long part gets a block of its own
    long_parts_.push_back(std::make_unique<char[]>(part.size()));
    copy = long_parts_.back().get();
  } else {
    if (blocks_.empty() || block_used_ + part.size() > kBlockSize) {
      blocks_.push_back(std::make_unique<char[]>(kBlockSize));
      block_used_ = 0;
    }
    copy = blocks_.back().get() + block_used_;
    block_used_ += part.size();
  }
  std::copy(part.begin(), part.end(), copy);
  return absl::string_view(copy, part.size());
}

void DecompositionBuilder::Reserve(size_t nodes) {
  out_.reserve(out_.size() + nodes);
  node_names_.Reserve(nodes);
  graph_.ReserveIntermediates(nodes);
}

ValueId DecompositionBuilder::Add(absl::string_view suffix, OpName op,
                                  absl::Span<const ValueId> inputs, Attrs attrs) {
  std::string name = absl::StrCat(node_.name, "/", suffix);
  const ValueId output = graph_.AddIntermediate(name);
  Emit(std::move(name), op, inputs, {output}, std::move(attrs));
  return output;
}

ValueIds DecompositionBuilder::AddWithOutputs(absl::string_view suffix, OpName op,
                                              absl::Span<const ValueId> inputs,
                                              absl::Span<const std::string> output_suffixes,
                                              Attrs attrs) {
  ValueIds outputs;
  for (const std::string& output : output_suffixes) {
    outputs.push_back(graph_.AddIntermediate(absl::StrCat(node_.name, "/", output)));
  }
  Emit(absl::StrCat(node_.name, "/", suffix), op, inputs, outputs, std::move(attrs));
  return outputs;
}

void DecompositionBuilder::AddWriting(absl::string_view suffix, OpName op,
                                      absl::Span<const ValueId> inputs, ValueId output,
                                      Attrs attrs) {
  Emit(absl::StrCat(node_.name, "/", suffix), op, inputs, {output}, std::move(attrs));
}

ValueId DecompositionBuilder::Constant(absl::string_view suffix, Tensor data) {
  const std::string name = graph_.UniqueValueName(absl::StrCat(node_.name, "/", suffix));
  // The name is fresh, so adding cannot fail.
  return *graph_.AddInitializer(name, ValueKind::kConstant, std::move(data));
}

ValueId DecompositionBuilder::Scalar(absl::string_view suffix, double value, DType dtype) {
  Tensor data(dtype, {});
  data.SetDouble(0, value);
  return Constant(suffix, std::move(data));
}

ValueId DecompositionBuilder::DimTable(absl::string_view suffix, DType dtype, int rank, int dim,
                                       absl::Span<const double> values) {
  Shape shape(rank, 1);
  shape[dim] = static_cast<int64_t>(values.size());
  Tensor data(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) data.SetDouble(static_cast<int64_t>(i), values[i]);
  return Constant(suffix, std::move(data));
}

void DecompositionBuilder::Emit(std::string name, OpName op, absl::Span<const ValueId> inputs,
                                ValueIds outputs, Attrs attrs) {
  out_.push_back(Node{UniqueNodeName(std::move(name)), op, ValueIds(inputs.begin(), inputs.end()),
                      std::move(outputs), std::move(attrs)});
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
  return absl::InvalidArgumentError(
      absl::StrFormat("expected %d inputs and %d outputs, got %d and %d", inputs, outputs,
                      node.inputs.size(), node.outputs.size()));
}

absl::Status CheckInputCount(const Node& node, size_t min, size_t max) {
  if (node.inputs.size() >= min && node.inputs.size() <= max && node.outputs.size() == 1) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("expected %d to %d inputs and 1 output, got %d and %d", min, max,
                      node.inputs.size(), node.outputs.size()));
}

Attrs Ints(AttrName name, AttrInts values) {
  Attrs attrs;
  attrs.Set(name, std::move(values));
  return attrs;
}

}  // namespace loom
