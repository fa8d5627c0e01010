#ifndef LOOM_IR_GRAPH_H_
#define LOOM_IR_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/lazy_tensor.h"
#include "ir/support/attrs.h"
#include "ir/support/interned_name.h"
#include "ir/tensor.h"

namespace loom {

// Dense ids: indexes into Graph::values() and Graph::nodes().
using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// A node's inputs or outputs. Nearly every node has one to four, which are
// kept in place (a node of a decomposed graph then owns no heap block for
// them); the type is no larger than a std::vector, and converts to one for
// code that wants one.
class ValueIds : public absl::InlinedVector<ValueId, 4> {
 public:
  using InlinedVector::InlinedVector;
  using InlinedVector::operator=;

  // NOLINTNEXTLINE(google-explicit-constructor)
  operator std::vector<ValueId>() const { return std::vector<ValueId>(begin(), end()); }
};

enum class ValueKind : uint8_t {
  kInput,         // supplied at run time
  kWeight,        // a model parameter, known at compile time
  kConstant,      // a literal the compiler may fold
  kIntermediate,  // produced by a node
};

// An SSA value: defined once, by a graph input, an initializer or a node.
struct Value {
  std::string name;
  TensorType type;
  ValueKind kind = ValueKind::kIntermediate;
  NodeId producer = kNoNode;
};

struct Node {
  std::string name;
  OpName op;
  ValueIds inputs;
  ValueIds outputs;
  Attrs attrs;
};

// A graph's nodes, in order, in blocks of up to kBlockNodes that never move:
// a list of millions (a decomposed recurrence) grows without copying what it
// holds, and a pass that consumes it front to back (lowering) frees each
// block once it is past it. Indexing and iterating read like a vector's.
class NodeList {
 public:
  static constexpr int kBlockShift = 12;
  static constexpr size_t kBlockNodes = size_t{1} << kBlockShift;

  template <bool kConst>
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Node;
    using difference_type = std::ptrdiff_t;
    using reference = std::conditional_t<kConst, const Node&, Node&>;
    using pointer = std::conditional_t<kConst, const Node*, Node*>;
    using List = std::conditional_t<kConst, const NodeList, NodeList>;

    Iterator() = default;
    Iterator(List* list, size_t position) : list_(list), position_(position) {}

    reference operator*() const { return (*list_)[position_]; }
    pointer operator->() const { return &(*list_)[position_]; }
    reference operator[](difference_type n) const { return *(*this + n); }
    Iterator& operator++() { return *this += 1; }
    Iterator& operator--() { return *this -= 1; }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    Iterator operator--(int) {
      Iterator old = *this;
      --*this;
      return old;
    }
    Iterator& operator+=(difference_type n) {
      position_ += n;
      return *this;
    }
    Iterator& operator-=(difference_type n) {
      position_ -= n;
      return *this;
    }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) {
      return static_cast<difference_type>(a.position_) - static_cast<difference_type>(b.position_);
    }
    friend bool operator==(const Iterator& a, const Iterator& b) {
      return a.position_ == b.position_;
    }
    friend bool operator!=(const Iterator& a, const Iterator& b) {
      return a.position_ != b.position_;
    }
    friend bool operator<(const Iterator& a, const Iterator& b) {
      return a.position_ < b.position_;
    }

   private:
    List* list_ = nullptr;
    size_t position_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;
  using value_type = Node;

  NodeList() = default;
  NodeList(std::initializer_list<Node> nodes) {
    for (const Node& node : nodes) push_back(node);
  }
  NodeList(const NodeList& other) = default;
  NodeList& operator=(const NodeList& other) = default;
  // A moved-from list is empty.
  NodeList(NodeList&& other) noexcept
      : blocks_(std::move(other.blocks_)),
        size_(std::exchange(other.size_, 0)),
        released_blocks_(std::exchange(other.released_blocks_, 0)) {}
  NodeList& operator=(NodeList&& other) noexcept {
    blocks_ = std::move(other.blocks_);
    other.blocks_.clear();
    size_ = std::exchange(other.size_, 0);
    released_blocks_ = std::exchange(other.released_blocks_, 0);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Node& operator[](size_t i) { return blocks_[i >> kBlockShift][i & (kBlockNodes - 1)]; }
  const Node& operator[](size_t i) const {
    return blocks_[i >> kBlockShift][i & (kBlockNodes - 1)];
  }
  Node& front() { return (*this)[0]; }
  const Node& front() const { return (*this)[0]; }
  Node& back() { return (*this)[size_ - 1]; }
  const Node& back() const { return (*this)[size_ - 1]; }
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }
  std::reverse_iterator<const_iterator> rbegin() const {
    return std::reverse_iterator<const_iterator>(end());
  }
  std::reverse_iterator<const_iterator> rend() const {
    return std::reverse_iterator<const_iterator>(begin());
  }

  void push_back(Node node);
  // Keeps the first `size` nodes.
  void Truncate(size_t size);
  void clear() { Truncate(0); }
  // Makes room in the table of blocks for this many nodes (blocks are
  // allocated as the list reaches them).
  void reserve(size_t nodes) { blocks_.reserve((nodes + kBlockNodes - 1) >> kBlockShift); }
  // Destroys the nodes of every block that lies wholly before position
  // `end` and frees those blocks; size() stays, and those positions must
  // not be read again. For a pass that consumes the list front to back.
  void ReleaseBefore(size_t end);

 private:
  // Each block but the first is allocated whole; the first grows with the
  // list, so that a small graph takes little memory.
  std::vector<std::vector<Node>> blocks_;
  size_t size_ = 0;
  size_t released_blocks_ = 0;  // blocks_[0, released_blocks_) are freed
};

// The graph IR: SSA values with static types and nodes kept in topological
// order (every node's inputs are defined before it). Passes that rewrite
// the graph build the new node list in order; see ReplaceNodes().
class Graph {
 public:
  Graph();
  Graph(const Graph& other);
  Graph(Graph&& other) noexcept;
  Graph& operator=(const Graph& other);
  Graph& operator=(Graph&& other) noexcept;
  ~Graph();

  std::string name;

  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const { return values_[id]; }
  // Values keep their names (FindValue looks names up in place).
  Value& mutable_value(ValueId id) { return values_[id]; }
  const NodeList& nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  Node& mutable_node(NodeId id) { return nodes_[id]; }

  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& weights() const { return weights_; }
  const std::vector<ValueId>& constants() const { return constants_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  // Adds a graph input, weight or constant. Names must be unique. An
  // initializer's data is never written once added; graphs that copy one
  // another (and data that other graphs hold, SharedWeights) share it. Its
  // data may be made where it is first read (LazyTensor).
  absl::StatusOr<ValueId> AddInput(std::string name, TensorType type);
  absl::StatusOr<ValueId> AddInitializer(std::string name, ValueKind kind, Tensor data);
  absl::StatusOr<ValueId> AddInitializer(std::string name, ValueKind kind,
                                         std::shared_ptr<const LazyTensor> data);
  // Adds a node that reads `inputs` and defines fresh values named
  // `output_names` (types unknown until shape inference). The inputs must
  // already be defined, which keeps nodes in topological order.
  absl::StatusOr<NodeId> AddNode(std::string name, OpName op, absl::Span<const ValueId> inputs,
                                 const std::vector<std::string>& output_names, Attrs attrs = {});
  void AddOutput(ValueId id) { outputs_.push_back(id); }
  // The name a caller knows output `i` by: its value's, unless the importer
  // gave it another (an ONNX output keeps its name when the op's
  // translation defines the value under a name of its own).
  const std::string& output_name(size_t i) const;
  void SetOutputName(size_t i, std::string name);
  void SetOutputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }

  // The id of the value with this name, or -1.
  ValueId FindValue(absl::string_view name) const;
  // Whether the value is a weight or a constant: data known at compile time.
  bool HasInitializer(ValueId id) const {
    return values_[id].kind == ValueKind::kWeight || values_[id].kind == ValueKind::kConstant;
  }
  // Data of a weight or constant, made here if it was not yet (a pass that
  // needs only its type reads the value's).
  const Tensor& initializer(ValueId id) const;
  const std::shared_ptr<const LazyTensor>& shared_initializer(ValueId id) const;
  // Replaces a weight's or constant's data, and its value's type with the
  // data's.
  void ReplaceInitializer(ValueId id, Tensor data);
  void ReplaceInitializer(ValueId id, std::shared_ptr<const LazyTensor> data);
  // A name not yet used by any value, built from `base`.
  std::string UniqueValueName(absl::string_view base);

  // A fresh intermediate value named "<base>.<n>" (n from the counter that
  // makes names unique), for passes that build a new node list for
  // ReplaceNodes().
  ValueId AddIntermediate(absl::string_view base, TensorType type = {});

  // Replaces the node list with `nodes`, which must be in topological order
  // over existing values; values that lose their producer are kept but no
  // longer reachable. Producers are recomputed.
  void ReplaceNodes(NodeList nodes);
  // Frees the nodes before position `end` as NodeList::ReleaseBefore does
  // (whole blocks of them), for a pass that has consumed them and will
  // replace the node list: until then, those nodes must not be read.
  void ReleaseNodesBefore(size_t end) { nodes_.ReleaseBefore(end); }
  // Removes node i for each i with !keep[i] (one flag per node), keeping
  // the others in order, in place; producers are recomputed as by
  // ReplaceNodes.
  void RemoveNodes(const std::vector<bool>& keep);

  // Makes room for this many values and nodes in all, so that building a
  // large graph does not regrow (and rehash) its tables step by step. A
  // table that must grow at least doubles, so that many calls that each ask
  // for a little more cost no more than growing one value at a time.
  void Reserve(size_t num_values, size_t num_nodes);
  // Makes room for this many more AddIntermediate values (which the name
  // index does not hold; see numbered_), growing as Reserve does.
  void ReserveIntermediates(size_t more);

 private:
  // Adds a value named `name` (taking `type`), or returns -1 and leaves
  // `type` alone when the name is taken.
  ValueId NewValue(std::string name, TensorType& type, ValueKind kind);
  // The value AddIntermediate named `name`, or -1.
  ValueId FindNumbered(absl::string_view name) const;

  std::vector<Value> values_;
  NodeList nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> weights_;
  std::vector<ValueId> constants_;
  std::vector<ValueId> outputs_;
  std::vector<std::string> output_names_;  // by output; "" for the value's name
  absl::flat_hash_map<ValueId, std::shared_ptr<const LazyTensor>> initializers_;
  int64_t next_unique_ = 0;

  // The name index: value ids, found by the names in values_, of which it
  // keeps no copy (a value's name is stored once). Each entry keeps its
  // name's hash, so that growing the index reads no names.
  struct NameEntry {
    ValueId id;
    uint32_t hash;
  };
  static uint32_t NameHash(absl::string_view name);
  struct NameEntryHash {
    using is_transparent = void;
    size_t operator()(const NameEntry& e) const { return e.hash; }
    size_t operator()(absl::string_view name) const { return NameHash(name); }
  };
  // Reads names through `values`: the address of values_, kept on the heap
  // so that it stays put when a Graph moves (the move updates it).
  struct NameEntryEq {
    using is_transparent = void;
    const std::vector<Value>* const* values;
    absl::string_view Name(const NameEntry& e) const { return (**values)[e.id].name; }
    bool operator()(const NameEntry& a, const NameEntry& b) const {
      return a.id == b.id || (a.hash == b.hash && Name(a) == Name(b));
    }
    bool operator()(const NameEntry& a, absl::string_view b) const { return Name(a) == b; }
    bool operator()(absl::string_view a, const NameEntry& b) const { return a == Name(b); }
  };
  using NameIndex = absl::flat_hash_set<NameEntry, NameEntryHash, NameEntryEq>;

  // Sets each value's producer from nodes_.
  void RecomputeProducers();
  // An empty index reading this graph's values_.
  void ResetNameIndex();
  // Indexes every value (for a copy).
  void RebuildNameIndex();
  void Swap(Graph& other) noexcept;
  // Adds value `id` (not numbered) to value_by_name_; false when its name
  // is taken.
  bool IndexName(ValueId id);

  std::unique_ptr<const std::vector<Value>*> values_home_;
  // Every value's name but those of AddIntermediate.
  NameIndex value_by_name_;
  // numbered_[n]: the value AddIntermediate named "<base>.<n>", or -1. Those
  // names are unique among themselves by their counter, so a new one is
  // only looked up in value_by_name_ (often far smaller, e.g. when a
  // decomposition adds millions of values), and FindValue finds them
  // through the number they end in.
  std::vector<ValueId> numbered_;
  // The largest n of the names "<base>.<n>" in value_by_name_ (-1: none).
  // A new numbered name with a larger n cannot be taken, so it is not
  // looked up at all: names from UniqueValueName take their numbers from
  // the same counter, which has passed them, and other names rarely end in
  // a number.
  int64_t largest_indexed_number_ = -1;
};

}  // namespace loom

#endif  // LOOM_IR_GRAPH_H_
