#ifndef LOOM_PASSES_DECOMPOSITION_H_
#define LOOM_PASSES_DECOMPOSITION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace loom {

// What the `decompose` pass is made of: per op, a function that appends
// primitive nodes computing it. Each op family keeps its decompositions in
// its own file and lists them in a table (declared at the end of this
// header); passes/decompose.cc gathers the tables.

// A set of node names that owns their bytes in large blocks: a decomposed
// recurrence names millions of nodes, and a string per name in a
// flat_hash_set<std::string> would be an allocation (and a copy) each.
class NameSet {
 public:
  NameSet() = default;
  NameSet(const NameSet&) = delete;
  NameSet& operator=(const NameSet&) = delete;

  // Adds `name`; false (and no change) when it is already there.
  bool Insert(absl::string_view name);

 private:
  static constexpr size_t kBlockSize = 64 * 1024;
  // A copy of `name` in the current block (or a block of its own).
  absl::string_view Store(absl::string_view name);

  absl::flat_hash_set<absl::string_view> names_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = kBlockSize;  // of blocks_.back()
  std::vector<std::unique_ptr<char[]>> long_names_;
};

// Builds the nodes that replace one composite node. Node names are derived
// from the composite's ("sm" -> "sm/max"), made unique among the graph's
// node names; fresh values get unique names through Graph::AddIntermediate.
// Values the builder makes have no type until the pass re-infers shapes,
// so a decomposition reads the types of the composite's inputs only.
class DecompositionBuilder {
 public:
  DecompositionBuilder(Graph& graph, const Node& node, NameSet& node_names,
                       std::vector<Node>& out)
      : graph_(graph), node_(node), node_names_(node_names), out_(out) {}

  // Appends a node `<composite>/<suffix>` that writes a fresh value and
  // returns that value.
  ValueId Add(absl::string_view suffix, std::string op,
              std::vector<ValueId> inputs, Attrs attrs = {});

  // Appends a node `<composite>/<suffix>` that writes `output`, one of the
  // composite's own outputs.
  void AddWriting(absl::string_view suffix, std::string op,
                  std::vector<ValueId> inputs, ValueId output,
                  Attrs attrs = {});

  // A constant named `<composite>/<suffix>` holding `data`.
  ValueId Constant(absl::string_view suffix, Tensor data);
  // A one-element constant (rank 0) of `dtype`, e.g. an epsilon.
  ValueId Scalar(absl::string_view suffix, double value, DType dtype);

  // The type of an input of the composite (or of any value that existed
  // before the pass ran).
  const TensorType& type(ValueId value) const {
    return graph_.value(value).type;
  }
  const Graph& graph() const { return graph_; }

 private:
  // Appends a node named `name` (made unique) that writes `output`.
  void Emit(std::string name, std::string op, std::vector<ValueId> inputs,
            ValueId output, Attrs attrs);
  std::string UniqueNodeName(std::string base);

  Graph& graph_;
  const Node& node_;
  NameSet& node_names_;
  std::vector<Node>& out_;
};

// Appends nodes computing `node` to the builder: primitives, or composites
// that the pass decomposes in turn. Errors describe the cause; the pass adds
// the node's name and op.
using DecomposeFn = absl::Status (*)(const Node& node,
                                     DecompositionBuilder& builder);

struct Decomposition {
  const char* op;
  DecomposeFn fn;
};

// The tables of the op families, one per file.
absl::Span<const Decomposition>
SoftmaxDecompositions();  // decompose_softmax.cc
absl::Span<const Decomposition>
ActivationDecompositions();  // decompose_activation.cc
absl::Span<const Decomposition> NormDecompositions();  // decompose_norm.cc
absl::Span<const Decomposition>
TensorOpDecompositions();                             // decompose_tensor_ops.cc
absl::Span<const Decomposition> RnnDecompositions();  // decompose_rnn.cc

// "expected 3 inputs and 1 output, got 2 and 1" unless the node has
// exactly that many.
absl::Status CheckArity(const Node& node, size_t inputs, size_t outputs);
// Like CheckArity for ops with optional trailing inputs and one output.
absl::Status CheckInputCount(const Node& node, size_t min, size_t max);

// Attributes holding one list of ints, e.g. Ints("axes", {1}).
Attrs Ints(const std::string& name, std::vector<int64_t> values);

}  // namespace loom

#endif  // LOOM_PASSES_DECOMPOSITION_H_
