#ifndef LOOM_PASSES_DECOMPOSITION_H_
#define LOOM_PASSES_DECOMPOSITION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

// A set of node names, kept as a tree of their '/'-separated parts: a
// decomposed recurrence names millions of nodes "<composite>/d0/t<step>/
// <part>", and a flat set of whole names would hash each long name into one
// huge table (a cache miss or two per name). Here a name walks the short
// lists of its prefixes' next parts (a step's parts, a decomposition's
// nodes), which stay in cache while a decomposition fills them; a prefix
// with many next parts (a direction's steps, the composites) indexes them
// in a table of its own. Parts are stored once each, in large blocks.
class NameSet {
 public:
  NameSet();
  NameSet(const NameSet&) = delete;
  NameSet& operator=(const NameSet&) = delete;
  ~NameSet();

  // Adds `name`; false (and no change) when it is already there.
  bool Insert(absl::string_view name);
  // Makes room for about this many more names that share their prefixes
  // (each then adds one part), so that the set grows once, not step by step.
  void Reserve(size_t more);

 private:
  // A prefix of some names that ends before a '/' (or a whole name): the
  // parent's prefix, a '/' (but for the root's children) and `part`.
  // Entry 0 is the root, the empty prefix.
  struct Entry {
    absl::string_view part;
    int32_t first_child = -1;  // the children, while listed
    int32_t next_sibling = -1;
    int32_t num_children = 0;
    int32_t index = -1;    // into indexes_, once the children are many
    bool is_name = false;  // the prefix is itself a name in the set
  };
  // Children are listed (and searched one by one) up to this many.
  static constexpr int32_t kMaxListed = 16;
  static constexpr size_t kBlockSize = 64 * 1024;
  // The entry for `prefix` (a name up to its last '/'), added when absent.
  int32_t PrefixEntry(absl::string_view prefix);
  // The entry for `part` after entry `parent`, added when absent.
  int32_t Child(int32_t parent, absl::string_view part);
  // A copy of `part` in the current block (or a block of its own).
  absl::string_view Store(absl::string_view part);

  std::vector<Entry> entries_;
  std::vector<absl::flat_hash_map<absl::string_view, int32_t>> indexes_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = kBlockSize;  // of blocks_.back()
  std::vector<std::unique_ptr<char[]>> long_parts_;
  // The prefix PrefixEntry found last, and its entry (-1: none yet). Names
  // come in runs that differ in their last part only (a step's nodes), and
  // a run's names then walk no prefix but the first.
  std::string last_prefix_;
  int32_t last_prefix_entry_ = -1;
};

// Builds the nodes that replace one composite node. Node names are derived
// from the composite's ("sm" -> "sm/max"), made unique among the graph's
// node names; fresh values get unique names through Graph::AddIntermediate.
// Values the builder makes have no type until the pass re-infers shapes,
// so a decomposition reads the types of the composite's inputs only.
class DecompositionBuilder {
 public:
  DecompositionBuilder(Graph& graph, const Node& node, NameSet& node_names, NodeList& out)
      : graph_(graph), node_(node), node_names_(node_names), out_(out), first_(out.size()) {}

  // Makes room for about this many more nodes (and values), for a
  // decomposition that emits many: the tables then grow once, not step by
  // step.
  void Reserve(size_t nodes);

  // Appends a node `<composite>/<suffix>` that writes a fresh value and
  // returns that value.
  ValueId Add(absl::string_view suffix, OpName op, absl::Span<const ValueId> inputs,
              Attrs attrs = {});

  // Appends a node `<composite>/<suffix>` that writes a fresh value for
  // each of `output_suffixes` (named `<composite>/<output suffix>`, as Add
  // names its value), e.g. the parts of a split; returns those values.
  ValueIds AddWithOutputs(absl::string_view suffix, OpName op, absl::Span<const ValueId> inputs,
                          absl::Span<const std::string> output_suffixes, Attrs attrs = {});

  // Appends a node `<composite>/<suffix>` that writes `output`, one of the
  // composite's own outputs.
  void AddWriting(absl::string_view suffix, OpName op, absl::Span<const ValueId> inputs,
                  ValueId output, Attrs attrs = {});

  // A constant named `<composite>/<suffix>` holding `data`.
  ValueId Constant(absl::string_view suffix, Tensor data);
  // A one-element constant (rank 0) of `dtype`, e.g. an epsilon.
  ValueId Scalar(absl::string_view suffix, double value, DType dtype);
  // A constant of `dtype` holding `values` along dim `dim` of a tensor of
  // `rank`, shaped [1, .., values.size(), .., 1] to broadcast along the
  // others (a table indexed by the position along one dim).
  ValueId DimTable(absl::string_view suffix, DType dtype, int rank, int dim,
                   absl::Span<const double> values);

  // The type of an input of the composite (or of any value that existed
  // before the pass ran).
  const TensorType& type(ValueId value) const { return graph_.value(value).type; }
  const Graph& graph() const { return graph_; }
  // How many nodes this builder has appended.
  size_t num_emitted() const { return out_.size() - first_; }

 private:
  // Appends a node named `name` (made unique) that writes `outputs`.
  void Emit(std::string name, OpName op, absl::Span<const ValueId> inputs, ValueIds outputs,
            Attrs attrs);
  std::string UniqueNodeName(std::string base);

  Graph& graph_;
  const Node& node_;
  NameSet& node_names_;
  NodeList& out_;
  const size_t first_;  // out_'s size before this builder
};

// Appends nodes computing `node` to the builder: primitives, or composites
// that the pass decomposes in turn. Errors describe the cause; the pass adds
// the node's name and op.
using DecomposeFn = absl::Status (*)(const Node& node, DecompositionBuilder& builder);

struct Decomposition {
  const char* op;
  DecomposeFn fn;
};

// The tables of the op families, one per file.
absl::Span<const Decomposition> SoftmaxDecompositions();     // decompose_softmax.cc
absl::Span<const Decomposition> ActivationDecompositions();  // decompose_activation.cc
absl::Span<const Decomposition> NormDecompositions();        // decompose_norm.cc
absl::Span<const Decomposition> TensorOpDecompositions();    // decompose_tensor_ops.cc
// lstm, gru and rnn unrolled, kept as loops, or each as it runs faster
// (DecomposeOptions::RnnMode).
enum class RnnForm { kUnroll, kLoop, kAuto };
absl::Span<const Decomposition> RnnDecompositions(
    RnnForm form = RnnForm::kUnroll);                  // decompose_rnn.cc
absl::Span<const Decomposition> ConvDecompositions();  // decompose_conv.cc
// conv as one library call where it can be (DecomposeOptions::conv_calls),
// replacing ConvDecompositions' conv.
absl::Span<const Decomposition> ConvCallDecompositions();  // decompose_conv.cc
// conv as one library call on channels-last data where it can be
// (DecomposeOptions::channels_last_conv_calls), replacing the two above.
absl::Span<const Decomposition> ChannelsLastConvCallDecompositions();  // decompose_conv.cc
absl::Span<const Decomposition> ConvTransposeDecompositions();  // decompose_conv_transpose.cc
absl::Span<const Decomposition> ResizeDecompositions();         // decompose_resize.cc
absl::Span<const Decomposition> InverseTrigDecompositions();    // decompose_inverse_trig.cc
absl::Span<const Decomposition>
SequenceDecompositions();  // decompose_sequence.cc (top_k, reverse_sequence, lrn)
absl::Span<const Decomposition> EinsumDecompositions();  // decompose_einsum.cc

// "expected 3 inputs and 1 output, got 2 and 1" unless the node has
// exactly that many.
absl::Status CheckArity(const Node& node, size_t inputs, size_t outputs);
// Like CheckArity for ops with optional trailing inputs and one output.
absl::Status CheckInputCount(const Node& node, size_t min, size_t max);

// Attributes holding one list of ints, e.g. Ints("axes", {1}).
Attrs Ints(AttrName name, AttrInts values);

}  // namespace loom

#endif  // LOOM_PASSES_DECOMPOSITION_H_
