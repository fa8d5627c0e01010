#include "ir/graph.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom {

Graph::Graph() { ResetNameIndex(); }

Graph::Graph(const Graph& other)
    : name(other.name),
      values_(other.values_),
      nodes_(other.nodes_),
      inputs_(other.inputs_),
      weights_(other.weights_),
      constants_(other.constants_),
      outputs_(other.outputs_),
      output_names_(other.output_names_),
      initializers_(other.initializers_),
      next_unique_(other.next_unique_),
      numbered_(other.numbered_) {
  RebuildNameIndex();
}

Graph::Graph(Graph&& other) noexcept : Graph() { Swap(other); }

Graph& Graph::operator=(const Graph& other) {
  Graph copy(other);
  Swap(copy);
  return *this;
}

Graph& Graph::operator=(Graph&& other) noexcept {
  Graph moved(std::move(other));
  Swap(moved);
  return *this;
}

Graph::~Graph() = default;

void Graph::Swap(Graph& other) noexcept {
  using std::swap;
  swap(name, other.name);
  swap(values_, other.values_);
  swap(nodes_, other.nodes_);
  swap(inputs_, other.inputs_);
  swap(weights_, other.weights_);
  swap(constants_, other.constants_);
  swap(outputs_, other.outputs_);
  swap(output_names_, other.output_names_);
  swap(initializers_, other.initializers_);
  swap(next_unique_, other.next_unique_);
  swap(numbered_, other.numbered_);
  swap(largest_indexed_number_, other.largest_indexed_number_);
  // Each index travels with its home, which then points at the values_
  // now beside it.
  swap(values_home_, other.values_home_);
  swap(value_by_name_, other.value_by_name_);
  *values_home_ = &values_;
  *other.values_home_ = &other.values_;
}

void Graph::ResetNameIndex() {
  values_home_ = std::make_unique<const std::vector<Value>*>(&values_);
  value_by_name_ = NameIndex(0, NameEntryHash{}, NameEntryEq{values_home_.get()});
  largest_indexed_number_ = -1;
}

void Graph::RebuildNameIndex() {
  ResetNameIndex();
  std::vector<bool> numbered(values_.size(), false);
  for (ValueId id : numbered_) {
    if (id >= 0) numbered[id] = true;
  }
  value_by_name_.reserve(values_.size());
  for (ValueId id = 0; id < static_cast<ValueId>(values_.size()); ++id) {
    if (!numbered[id]) IndexName(id);
  }
}

namespace {

// n when `name` ends in ".<n>", the form of AddIntermediate's names.
std::optional<uint64_t> NumberSuffix(absl::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == absl::string_view::npos) return std::nullopt;
  const absl::string_view digits = name.substr(dot + 1);
  // Far more digits than any counter has would overflow.
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  uint64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

}  // namespace

bool Graph::IndexName(ValueId id) {
  const absl::string_view name = values_[id].name;
  if (!value_by_name_.insert(NameEntry{id, NameHash(name)}).second) {
    return false;
  }
  if (const std::optional<uint64_t> n = NumberSuffix(name); n.has_value()) {
    // At most 18 digits: the number fits.
    largest_indexed_number_ = std::max(largest_indexed_number_, static_cast<int64_t>(*n));
  }
  return true;
}

uint32_t Graph::NameHash(absl::string_view name) {
  // 32 bits keep an index entry small and still address tables far larger
  // than any graph's.
  return static_cast<uint32_t>(absl::Hash<absl::string_view>()(name));
}

ValueId Graph::NewValue(std::string name, TensorType& type, ValueKind kind) {
  // One hash operation per name: claim it, or learn that it is taken. The
  // value goes in first, since the index reads names from values_.
  if (FindNumbered(name) >= 0) return -1;
  const ValueId id = static_cast<ValueId>(values_.size());
  values_.push_back(Value{std::move(name), TensorType{}, kind, kNoNode});
  if (!IndexName(id)) {
    values_.pop_back();
    return -1;
  }
  values_[id].type = std::move(type);
  return id;
}

absl::StatusOr<ValueId> Graph::AddInput(std::string name, TensorType type) {
  const ValueId id = NewValue(name, type, ValueKind::kInput);
  if (id < 0) {
    return absl::InvalidArgumentError(absl::StrCat("value '", name, "' is defined more than once"));
  }
  inputs_.push_back(id);
  return id;
}

absl::StatusOr<ValueId> Graph::AddInitializer(std::string name, ValueKind kind, Tensor data) {
  return AddInitializer(std::move(name), kind, std::make_shared<const LazyTensor>(std::move(data)));
}

absl::StatusOr<ValueId> Graph::AddInitializer(std::string name, ValueKind kind,
                                              std::shared_ptr<const LazyTensor> data) {
  if (FindValue(name) >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("value '", name, "' is defined more than once"));
  }
  if (kind != ValueKind::kWeight && kind != ValueKind::kConstant) {
    return absl::InternalError("an initializer is a weight or a constant");
  }
  TensorType type = data->type();
  const ValueId id = NewValue(std::move(name), type, kind);
  (kind == ValueKind::kWeight ? weights_ : constants_).push_back(id);
  initializers_.emplace(id, std::move(data));
  return id;
}

absl::StatusOr<NodeId> Graph::AddNode(std::string name, OpName op, absl::Span<const ValueId> inputs,
                                      const std::vector<std::string>& output_names, Attrs attrs) {
  for (ValueId input : inputs) {
    if (input < 0 || input >= static_cast<ValueId>(values_.size())) {
      return absl::InternalError(absl::StrCat("node '", name, "' reads an undefined value id"));
    }
  }
  const NodeId id = static_cast<NodeId>(nodes_.size());
  Node node{std::move(name), op, ValueIds(inputs.begin(), inputs.end()), {}, std::move(attrs)};
  node.outputs.reserve(output_names.size());
  for (const std::string& output : output_names) {
    TensorType unknown;
    const ValueId value = NewValue(output, unknown, ValueKind::kIntermediate);
    if (value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "': value '", output, "' is defined more than once"));
    }
    values_[value].producer = id;
    node.outputs.push_back(value);
  }
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::Reserve(size_t num_values, size_t num_nodes) {
  if (num_values > values_.capacity()) {
    num_values = std::max(num_values, 2 * values_.capacity());
    values_.reserve(num_values);
    value_by_name_.reserve(num_values);
  }
  nodes_.reserve(num_nodes);
}

void Graph::ReserveIntermediates(size_t more) {
  const size_t needed = values_.size() + more;
  if (needed > values_.capacity()) {
    values_.reserve(std::max(needed, 2 * values_.capacity()));
  }
  const size_t numbers = static_cast<size_t>(next_unique_) + more;
  if (numbers > numbered_.capacity()) {
    numbered_.reserve(std::max(numbers, 2 * numbered_.capacity()));
  }
}

const std::string& Graph::output_name(size_t i) const {
  if (i < output_names_.size() && !output_names_[i].empty()) return output_names_[i];
  return values_[outputs_[i]].name;
}

void Graph::SetOutputName(size_t i, std::string name) {
  if (output_names_.size() <= i) output_names_.resize(i + 1);
  output_names_[i] = std::move(name);
}

ValueId Graph::FindValue(absl::string_view name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? FindNumbered(name) : it->id;
}

ValueId Graph::FindNumbered(absl::string_view name) const {
  const std::optional<uint64_t> n = NumberSuffix(name);
  if (!n.has_value() || *n >= numbered_.size()) return -1;
  const ValueId id = numbered_[*n];
  return id >= 0 && values_[id].name == name ? id : -1;
}

const Tensor& Graph::initializer(ValueId id) const { return initializers_.at(id)->data(); }

const std::shared_ptr<const LazyTensor>& Graph::shared_initializer(ValueId id) const {
  return initializers_.at(id);
}

void Graph::ReplaceInitializer(ValueId id, Tensor data) {
  ReplaceInitializer(id, std::make_shared<const LazyTensor>(std::move(data)));
}

void Graph::ReplaceInitializer(ValueId id, std::shared_ptr<const LazyTensor> data) {
  values_[id].type = data->type();
  initializers_.at(id) = std::move(data);
}

std::string Graph::UniqueValueName(absl::string_view base) {
  std::string name;
  do {
    name = absl::StrCat(base, ".", next_unique_++);
  } while (FindValue(name) >= 0);
  return name;
}

ValueId Graph::AddIntermediate(absl::string_view base, TensorType type) {
  // Another numbered name cannot be taken (each has its own number), so
  // only the index of the other names is asked.
  for (;;) {
    const int64_t n = next_unique_++;
    std::string name = absl::StrCat(base, ".", n);
    if (n <= largest_indexed_number_ && value_by_name_.contains(name)) {
      continue;
    }
    const ValueId id = static_cast<ValueId>(values_.size());
    values_.push_back(Value{std::move(name), std::move(type), ValueKind::kIntermediate, kNoNode});
    numbered_.resize(n + 1, -1);
    numbered_[n] = id;
    return id;
  }
}

void NodeList::push_back(Node node) {
  if (blocks_.empty() || blocks_.back().size() == kBlockNodes) {
    blocks_.emplace_back();
    if (blocks_.size() > 1) blocks_.back().reserve(kBlockNodes);
  }
  blocks_.back().push_back(std::move(node));
  ++size_;
}

void NodeList::Truncate(size_t size) {
  if (size >= size_) return;
  const size_t keep_blocks = (size + kBlockNodes - 1) >> kBlockShift;
  blocks_.resize(keep_blocks);
  released_blocks_ = std::min(released_blocks_, keep_blocks);
  if (keep_blocks > 0) blocks_.back().resize(size - ((keep_blocks - 1) << kBlockShift));
  size_ = size;
}

void NodeList::ReleaseBefore(size_t end) {
  const size_t blocks = std::min(end >> kBlockShift, blocks_.size());
  for (; released_blocks_ < blocks; ++released_blocks_) {
    std::vector<Node>().swap(blocks_[released_blocks_]);
  }
}

void Graph::ReplaceNodes(NodeList nodes) {
  nodes_ = std::move(nodes);
  RecomputeProducers();
}

void Graph::RemoveNodes(const std::vector<bool>& keep) {
  size_t kept = 0;
  for (size_t i = 0; i < nodes_.size() && i < keep.size(); ++i) {
    if (!keep[i]) continue;
    if (kept != i) nodes_[kept] = std::move(nodes_[i]);
    ++kept;
  }
  nodes_.Truncate(kept);
  RecomputeProducers();
}

void Graph::RecomputeProducers() {
  for (Value& value : values_) value.producer = kNoNode;
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
    for (ValueId output : nodes_[id].outputs) values_[output].producer = id;
  }
}

}  // namespace loom
