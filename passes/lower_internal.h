#ifndef LOOM_PASSES_LOWER_INTERNAL_H_
#define LOOM_PASSES_LOWER_INTERNAL_H_

// The Lowering class that passes/lower.h's functions run, private to
// passes/lower*.cc: lower.cc is the driver (values, buffers, inlining,
// the rule table), and each lower_<family>.cc holds the lowering rules
// of one op family with the table entries that name them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "ir/op_registry.h"
#include "passes/lower.h"
#include "passes/lower_memo.h"

namespace loom {
namespace lowering {

// A node's list of ints `name`, or an empty list: read by value without a
// heap block when short, as the attributes of nearly every slice are (an
// unrolled recurrence lowers millions of them).
inline AttrInts IntsOrEmpty(const Node& node, absl::string_view name) {
  const AttrInts* ints = node.attrs.FindInts(name);
  return ints == nullptr ? AttrInts() : *ints;
}

// How a graph value is read: element (i0, ..., ik) of the value is
// buffer[offset], with offset an expression over variables x0..xk. A view
// shares its source's buffer with a different offset. A one-element
// constant is not stored at all.
//
// A graph has a LoweredValue per value (millions in an unrolled
// recurrence), so it is kept small (24 bytes): the expressions of an inline
// value live with its template.
struct LoweredValue {
  union {
    Expr offset = nullptr;  // a stored value's (or view's)
    double constant;        // with inline_constant
  };
  BufferId buffer = -1;
  // A pointwise value computed inside each reader instead of stored:
  // element x is the root of template `inline_node` evaluated at the
  // template's coordinates, expressions over x that are entries
  // [coords_begin, coords_begin + num_coords) of the template's `coords`.
  int32_t inline_node = -1;
  uint32_t coords_begin = 0;
  uint16_t num_coords = 0;
  bool inline_constant = false;

  // A value stored in `buffer` at `offset`.
  static LoweredValue Stored(BufferId buffer, Expr offset) {
    LoweredValue value;
    value.buffer = buffer;
    value.offset = offset;
    return value;
  }
};

// A pointwise computation that readers inline (LoweredValue::inline_node):
// a body over its own loop variables, and the step that is its value. Once
// its last reader (through any view) has inlined it, its place is reused by
// a later template: an unrolled recurrence makes millions of templates, few
// alive at a time.
struct InlineTemplate {
  std::vector<ScalarOp> body;
  int root = -1;
  int32_t readers_left = 0;
  int32_t decision = -1;  // its place in LoopProgram::inline_decisions
  // The coordinates of its value and of the views of it, each a run of
  // entries (LoweredValue::coords_begin).
  std::vector<Expr> coords;
};

// Normalises a possibly negative axis; the verifier has checked the range.
inline int Axis(int64_t axis, size_t rank) {
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

// An error that names `node` and its op.
inline absl::Status NodeError(const Node& node, absl::string_view cause) {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name, "' (", node.op, "): ", cause));
}

// Index expressions of one access, one per dimension.
using Indices = absl::InlinedVector<Expr, 6>;

// The extents of all of a compute node's loop variables (ComputeNode::
// AllRanges without allocating).
class Extents {
 public:
  explicit Extents(const ComputeNode& node) {
    extents_.assign(node.ranges.begin(), node.ranges.end());
    extents_.insert(extents_.end(), node.reduction_ranges.begin(), node.reduction_ranges.end());
  }
  operator absl::Span<const int64_t>() const { return extents_; }

 private:
  absl::InlinedVector<int64_t, 8> extents_;
};

class Lowering;

// How often a lowering rule's loads read each element of its inputs
// (CountReads): once per iteration of the op's loops, at least once each.
enum class InputReads {
  kPerOutputElement,  // the loops are the output's
  kPerProductTerm,    // the output's and the contraction's (matmul)
  kPerPair,           // every element for every element (cumsum's masked sum)
};

// How one op is lowered: the member that lowers it, with what it needs to
// know of the op beyond its definition.
struct LoweringRule {
  using Method = absl::Status (Lowering::*)(const Node& node, const LoweringRule& rule);
  Method lower = nullptr;
  InputReads reads = InputReads::kPerOutputElement;
  // Lowered as a view of input 0 when it can be (a gather of one index):
  // its readers then read input 0.
  bool may_view = false;
  ScalarFn fn = ScalarFn::kAdd;           // LowerElementwise's function
  ReduceKind reduce = ReduceKind::kNone;  // LowerReduce's and LowerArgReduce's kind

  // The rule of an op that `lower` reduces with `kind`.
  static LoweringRule Reduction(Method lower, ReduceKind kind) {
    LoweringRule rule{lower};
    rule.reduce = kind;
    return rule;
  }
};

// What lowering asks of an op, looked up once per op.
struct OpFacts {
  const OpDef* def = nullptr;          // null: unknown op
  const LoweringRule* rule = nullptr;  // null: no lowering
};

// Memo keys start with a tag naming the computation.
enum MemoTag : int64_t {
  kContiguousOffset,
  kSubstitute,
  kReindex,
  kReshapeIndex,
  kSimplify,
};

// Lowers one graph into a loop program: node after node, each by its op's
// rule (Rules()), into compute nodes over buffers or into values that
// readers inline or view.
class Lowering {
 public:
  // With `release` (the graph itself, which the caller is done with), each
  // block of nodes is freed once lowered, and the node list at the end.
  explicit Lowering(const Graph& graph, const LowerOptions& options, Graph* release = nullptr)
      : graph_(graph),
        options_(options),
        release_(release),
        ctx_(*program_.exprs),
        lowered_(graph.values().size()),
        reads_(graph.values().size(), 0),
        readers_(graph.values().size(), 0),
        memo_(MemoSlotsLog2(graph)) {
    CountReads();
  }

  absl::StatusOr<LoopProgram> Run();

 private:
  using RuleTable = absl::flat_hash_map<std::string, LoweringRule>;
  // Every op's rule, by op name: the union of the families' tables.
  static const RuleTable& Rules();
  // Each family's rules, defined beside the members they name.
  static void AddPointwiseRules(RuleTable& rules);  // lower_pointwise.cc
  static void AddReductionRules(RuleTable& rules);  // lower_reduce.cc
  static void AddMatmulRules(RuleTable& rules);     // lower_matmul.cc
  static void AddConcatPadRules(RuleTable& rules);  // lower_concat_pad.cc
  static void AddIndexRules(RuleTable& rules);      // lower_index.cc
  static void AddViewRules(RuleTable& rules);       // lower_views.cc
  static void AddScanRules(RuleTable& rules);       // lower_scan.cc
  // The facts of `op`, from the registry and Rules().
  OpFacts FactsOf(OpName op);

  // Buffers and compute nodes.
  BufferId NewBuffer(const Value& value, BufferKind kind, ValueId source);
  Expr ContiguousOffset(const Shape& shape, int first_var = 0);
  // A compute node over the shape of `out`, writing a fresh buffer for it.
  ComputeNode PointwiseNode(const Node& node, ValueId out);
  // Completes `node` as the definition of `out`: stored in a fresh buffer,
  // or kept as a template that readers inline (see CountReads).
  void Finish(ComputeNode node, ValueId out, int root);
  // Whether readers inline `node`, a pointwise definition of `out`, or load
  // it from a buffer, and why; nullopt where it is stored whatever its size
  // (a reduction, a graph output, a value that a reader needs in memory).
  struct InlineChoice {
    InlineReason reason;
    int64_t amount, limit;  // as in InlineDecision
  };
  std::optional<InlineChoice> DecideInline(const ComputeNode& node, ValueId out) const;
  // Appends `node` to the program, the reader of the templates it inlined.
  void AddNode(ComputeNode node);
  // Notes `reader` (InlineDecision::readers) as the reader of the
  // templates inlined since the last one.
  void NoteInlineReaders(int32_t reader);
  Expr Var(int i) { return ctx_.Var(i); }
  // ctx_.Substitute(e, indices), memoised (see ExprMemo).
  Expr Substitute(Expr e, absl::Span<const Expr> indices);
  // The same, simplified over loop variables of these extents.
  Expr Reindex(Expr e, absl::Span<const Expr> indices, absl::Span<const int64_t> extents);
  // ctx_.Simplify(e, extents), memoised.
  Expr Simplify(Expr e, absl::Span<const int64_t> extents);
  // Sets key_ to the memo key of Simplify(e, extents).
  void SimplifyKey(Expr e, absl::Span<const int64_t> extents);
  // Whether substituting `indices` leaves every expression as it is.
  static bool IsIdentity(absl::Span<const Expr> indices);

  // How many elements all readers of each value read in total, following
  // views to their readers; graph outputs and values that must live in a
  // buffer count as unbounded. A pointwise value whose readers read no more
  // elements than it has is inlined into them: no buffer, no recompute.
  //
  // Also counts in readers_ how many times lowering loads each value: once
  // per node input that reads it and per graph output it is, following views
  // (and gathers, which may be views) to their readers. Loads beyond these
  // (of reductions and gather data) read values that are never inlined.
  // Both come zeroed, one entry per value.
  void CountReads();
  // The coordinates of an inline value (LoweredValue::inline_node).
  absl::Span<const Expr> InlineCoords(const LoweredValue& value) const {
    return absl::MakeConstSpan(inline_templates_[value.inline_node].coords)
        .subspan(value.coords_begin, value.num_coords);
  }
  // A place for a new template: one whose readers are done, or a new one.
  int NewTemplate();
  // Appends a copy of `tmpl`'s body to `node`, evaluated at `coords` (the
  // template's loop variables in terms of `node`'s); returns the root.
  int Inline(ComputeNode& node, const InlineTemplate& tmpl, absl::Span<const Expr> coords);

  // Body steps.
  int Load(ComputeNode& node, ValueId value, absl::Span<const Expr> indices);
  // The same for a value lowered as `source` (of type `dtype`).
  int LoadFrom(ComputeNode& node, const LoweredValue& source, DType dtype,
               absl::Span<const Expr> indices);
  int Step(ComputeNode& node, ScalarOp op);
  int Call(ComputeNode& node, ScalarFn fn, DType dtype, absl::Span<const int> args);
  int Constant(ComputeNode& node, double value, DType dtype);
  // Indices into `in_shape` that broadcast it to the node's first
  // `out_rank` loop variables (numpy rules).
  Indices BroadcastIndices(const Shape& in_shape, size_t out_rank);
  Indices Vars(int first, int count);

  // Steps: the value of `value` (over the loop variables), `step` as an
  // i64, a && b (a < 0: b alone).
  int Position(ComputeNode& compute, Expr value);
  int AsI64(ComputeNode& compute, int step);
  int And(ComputeNode& compute, int a, int b);
  // Stores `compute`'s value `root` in a fresh temporary over its ranges;
  // the node and the buffer are named `name`.
  BufferId StoreTemp(ComputeNode compute, int root, DType dtype, const std::string& name);
  // A compute node named `name` that copies all of `in` into `buffer`,
  // element x of `in` going to buffer[Substitute(offset, x + shift)].
  ComputeNode CopyInto(const std::string& name, ValueId in, BufferId buffer, Expr offset,
                       const std::vector<int64_t>& shift);
  // `value` copied into a fresh contiguous buffer, for a reader that needs
  // a simpler index than the value's view gives. The copy and its buffer
  // are named `name`: `<reader>.<role>`, as one value may be copied for
  // several readers.
  LoweredValue Materialize(const std::string& name, ValueId value);

  // The rules (LoweringRule::lower) and their helpers, by family file.
  // lower_pointwise.cc.
  absl::Status LowerElementwise(const Node& node, const LoweringRule& rule);
  absl::Status LowerMod(const Node& node, const LoweringRule& rule);
  absl::Status LowerBitShift(const Node& node, const LoweringRule& rule);
  // `fn` of the node's inputs, broadcast to its output.
  absl::Status LowerCall(const Node& node, ScalarFn fn);
  // pow of a literal 2 or 3 as products.
  int LiteralSquareOrCube(const Node& node) const;
  absl::Status LowerPowerAsProducts(const Node& node);
  absl::Status LowerCast(const Node& node, const LoweringRule& rule);
  // lower_reduce.cc.
  absl::Status LowerReduce(const Node& node, const LoweringRule& rule);
  absl::Status LowerReduceMean(const Node& node, const LoweringRule& rule);
  // The reduction `kind` of the node's input over its axes; sets `root`.
  ComputeNode ReductionNode(const Node& node, ReduceKind kind, int& root);
  absl::Status LowerArgReduce(const Node& node, const LoweringRule& rule);
  absl::Status LowerCumsum(const Node& node, const LoweringRule& rule);
  // lower_matmul.cc.
  absl::Status LowerMatmul(const Node& node, const LoweringRule& rule);
  // Makes a sum of products that gemm calls compute (ir/gemm.h: over
  // several loops, a convolution's kernel positions and channels, say) one,
  // when calls are allowed and it has at least LowerOptions::gemm_min_rows
  // rows; else, when it is a convolution of a padded image that one call
  // computes (ir/conv_call.h), that call.
  void MarkContraction(ComputeNode& compute, int root);
  // Whether matmul `node` has operands a gemm call can take (dtypes,
  // ranks) and the options allow calls.
  bool MayBeGemm(const Node& node) const;
  // The fewest rows that make a product a gemm call: LowerOptions::
  // gemm_min_rows where set, else DefaultGemmMinRows of its second operand.
  int64_t GemmMinRows(int64_t operand_elements, bool operand_is_weight) const;
  // Matmul `node` as a gemm call (ExternOp::kGemm), or as loops where
  // LowerOptions::gemm_min_rows keeps it so (the node built to ask
  // MatchGemm, not built twice).
  ComputeNode GemmNode(const Node& node);
  // The matmul `node` over its operands lowered as `a` and `b`.
  ComputeNode MatmulNode(const Node& node, const LoweredValue& a, const LoweredValue& b);
  // Whether `value` is stored at an affine offset (a buffer, or a view
  // of one without divisions).
  bool IsAffineView(ValueId value);
  // lower_concat_pad.cc.
  absl::Status LowerConcat(const Node& node, const LoweringRule& rule);
  absl::Status LowerPad(const Node& node, const LoweringRule& rule);
  // Fills concat_owner_: a concat whose inputs, in order, begin another
  // one's along the same axis (DenseNet's: each layer reads the concat of
  // the block's input and every earlier layer's output) is a view of the
  // buffer of the longest such concat, which holds it as its first part,
  // so that each input is copied once, not once per concat that reads it.
  void FindConcatPrefixes();
  // Pad modes "reflect" and "edge" (see LowerPad).
  void LowerMirroredPad(const Node& node, BufferId buffer, Expr out_offset, bool reflect);
  // lower_index.cc (see the definitions).
  absl::Status LowerGather(const Node& node, const LoweringRule& rule);
  absl::Status LowerGatherElements(const Node& node, const LoweringRule& rule);
  absl::Status LowerScatterElements(const Node& node, const LoweringRule& rule);
  absl::Status LowerScatterNd(const Node& node, const LoweringRule& rule);
  absl::Status LowerGatherNd(const Node& node, const LoweringRule& rule);
  // Whether `value`'s data is known at compile time (a weight or constant).
  bool IsKnown(ValueId value) const;
  absl::StatusOr<int> IndexAt(ComputeNode& compute, const Node& node, ValueId indices,
                              absl::Span<const Expr> coords, int64_t axis, int64_t extent,
                              int component = -1);
  absl::StatusOr<int> KnownIndexStep(ComputeNode& compute, const Node& node, ValueId indices,
                                     int index, int64_t axis, int64_t extent, int component);
  LoweredValue CheckedIndices(const Node& node, ValueId indices, int64_t axis, int64_t extent,
                              int component);
  int CheckIndex(ComputeNode& compute, const Node& node, int index, int64_t axis, int64_t extent);
  LoweredValue LinearSource(const std::string& name, ValueId value, int var, int64_t& stride);
  // Whether scatter `node` replaces elements (reduction "none"), rather
  // than folding updates into them.
  static bool Replaces(const Node& node);
  absl::Status FinishScatter(const Node& node, ComputeNode pull, int match, Expr position,
                             absl::Span<const Expr> update_coords, const LoweredValue& last_source,
                             absl::Span<const Expr> last_coords, int64_t last_stride);
  int IndirectLoad(ComputeNode& compute, ValueId data, const LoweredValue& source,
                   absl::Span<const Expr> data_indices, int64_t stride, int index);
  // lower_views.cc.
  absl::Status LowerReshape(const Node& node, const LoweringRule& rule);
  absl::Status LowerTranspose(const Node& node, const LoweringRule& rule);
  absl::Status LowerSqueezeLike(const Node& node, const LoweringRule& rule);
  absl::Status LowerExpand(const Node& node, const LoweringRule& rule);
  absl::Status LowerSlice(const Node& node, const LoweringRule& rule);
  absl::Status LowerAsStrided(const Node& node, const LoweringRule& rule);
  absl::Status LowerSplit(const Node& node, const LoweringRule& rule);
  absl::Status LowerTile(const Node& node, const LoweringRule& rule);
  // Defines `out` as a view of `in`: element x of out is element
  // in_indices(x) of in, with x the variables x0..x{rank-1}.
  void DefineView(ValueId out, ValueId in, absl::Span<const Expr> in_indices);

  // lower_scan.cc: a loop, from scan_begin to scan_end (see there).
  absl::Status LowerScanBegin(const Node& node, const LoweringRule& rule);
  absl::Status LowerScanEnd(const Node& node, const LoweringRule& rule);
  // A loop between its scan_begin and its scan_end.
  struct OpenScan {
    std::string begin;   // scan_begin's node name
    int first_node = 0;  // the loop's first compute node
    int end_node = 0;    // past its last, once lifted
    int64_t rows = 0;    // the states' first dim
    int64_t length = 0;  // iterations
    bool reverse = false;
    // The states' buffers (a slot per iteration and one for the initial
    // state), and the slots' elements.
    std::vector<BufferId> states;
    std::vector<int64_t> slots;
    // What an iteration adds to the index of each state's and sequence's
    // buffer, an expression of the iteration x1.
    absl::flat_hash_map<BufferId, Expr> step_terms;
  };
  // Makes the compute nodes since the scan_begin the loop's body: each
  // gets the loop over the iterations as its second loop, and its loads and
  // stores of the states and sequences move by the iteration.
  absl::Status LiftIntoLoop(const Node& end, OpenScan& scan);
  // Gives state `state` of the lifted loop two slots, which iterations read
  // and write in turn, rather than one per iteration.
  void AlternateSlots(const OpenScan& scan, size_t state);
  std::optional<OpenScan> open_scan_;

  void BindGraphInputsAndWeights();
  void BindGraphOutputs();

  const Graph& graph_;
  const LowerOptions options_;
  Graph* const release_;
  LoopProgram program_;
  ExprContext& ctx_;
  std::vector<LoweredValue> lowered_;
  std::vector<double> reads_;     // see CountReads
  std::vector<int32_t> readers_;  // see CountReads
  // By a concat's output: the output of the concat whose buffer holds it
  // (FindConcatPrefixes), where that is another.
  absl::flat_hash_map<ValueId, ValueId> concat_owner_;
  // By the output of each concat with a buffer of its own (holding itself
  // and any concats it extends): the buffer, and how many of its inputs
  // are copied in so far.
  struct ConcatBuffer {
    BufferId buffer = -1;
    size_t copied = 0;
  };
  absl::flat_hash_map<ValueId, ConcatBuffer> concat_buffers_;
  std::vector<InlineTemplate> inline_templates_;
  std::vector<int> free_templates_;  // places in inline_templates_ to reuse
  // The decisions of the templates inlined into the node being built.
  std::vector<int32_t> inlined_into_next_;
  ExprMemo memo_;
  OpLookupCache<OpFacts> facts_;
  MemoKey key_;  // scratch
};

}  // namespace lowering
}  // namespace loom

#endif  // LOOM_PASSES_LOWER_INTERNAL_H_
