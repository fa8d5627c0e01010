#include "passes/lower.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/conv_call.h"
#include "ir/gemm.h"
#include "ir/index_error.h"
#include "ir/op_registry.h"
#include "ir/status_macros.h"
#include "passes/pass.h"

namespace loom {
namespace {

// A node's list of ints `name`, or an empty list: read by value without a
// heap block when short, as the attributes of nearly every slice are (an
// unrolled recurrence lowers millions of them).
AttrInts IntsOrEmpty(const Node& node, absl::string_view name) {
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
  // The coordinates of its value and of the views of it, each a run of
  // entries (LoweredValue::coords_begin).
  std::vector<Expr> coords;
};

// Normalises a possibly negative axis; the verifier has checked the range.
int Axis(int64_t axis, size_t rank) {
  return static_cast<int>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

bool UsesVar(Expr e, int var) {
  if (e->kind() == ExprKind::kVar) return e->value() == var;
  for (Expr operand : e->operands()) {
    if (UsesVar(operand, var)) return true;
  }
  return false;
}

// Whether `e` is c * x_var + (terms without x_var); if so, sets
// `coefficient` to c (0 when x_var does not occur).
bool IsLinearIn(Expr e, int var, int64_t& coefficient) {
  const std::vector<Expr> terms =
      e->kind() == ExprKind::kAdd ? std::vector<Expr>(e->operands().begin(), e->operands().end())
                                  : std::vector<Expr>{e};
  coefficient = 0;
  for (Expr term : terms) {
    if (!UsesVar(term, var)) continue;
    if (term->kind() == ExprKind::kVar) {
      coefficient += 1;
      continue;
    }
    const absl::Span<const Expr> factors = term->operands();
    if (term->kind() != ExprKind::kMul || factors.size() != 2 || !factors[0]->is_const() ||
        factors[1]->kind() != ExprKind::kVar) {
      return false;
    }
    coefficient += factors[0]->value();
  }
  return true;
}

// Memoised expression results, by their arguments. Lowering asks for the
// same ones over and over: a graph's values have few distinct shapes and
// views, and an unrolled recurrence repeats each step. The cache is
// direct-mapped and of fixed size (a slot keeps the latest key that hashes
// to it), so it neither grows nor allocates per entry. Recomputing a result
// that was evicted gives the same expression (they are hash-consed), so
// what the cache holds never changes the output.
int64_t Bits(Expr e) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(e)); }

// A memo key: the words of a computation's arguments, appended in order
// into fixed storage (lowering builds one per memoised call, so they must
// not allocate). Keys longer than kMaxKey are not cached.
class MemoKey {
 public:
  static constexpr size_t kMaxKey = 16;

  MemoKey& Start(int64_t tag) {
    size_ = 0;
    return Add(tag);
  }
  MemoKey& Add(int64_t word) {
    if (size_ < kMaxKey) words_[size_] = word;
    ++size_;
    return *this;
  }
  MemoKey& Add(absl::Span<const int64_t> words) {
    for (int64_t word : words) Add(word);
    return *this;
  }
  MemoKey& Add(absl::Span<const Expr> exprs) {
    for (Expr e : exprs) Add(Bits(e));
    return *this;
  }

  bool fits() const { return size_ <= kMaxKey; }
  // Only when it fits.
  absl::Span<const int64_t> words() const { return {words_, size_}; }

 private:
  int64_t words_[kMaxKey];
  size_t size_ = 0;
};

class ExprMemo {
 public:
  static constexpr size_t kMaxKey = MemoKey::kMaxKey;

  // `slots_log2` sets the size: 2^slots_log2 slots.
  explicit ExprMemo(int slots_log2) : slots_(size_t{1} << slots_log2) {}

  // The result for `key`, computed by compute() when the cache lacks it.
  template <typename Compute>
  Expr Get(const MemoKey& memo_key, Compute compute) {
    if (!memo_key.fits()) return compute();
    const absl::Span<const int64_t> key = memo_key.words();
    const uint64_t hash = HashKey(key);
    if (Expr hit = Find(key, hash)) return hit;
    // Copied before compute(): `key` may be scratch space that it reuses.
    Slot filled;
    filled.hash = hash;
    filled.size = static_cast<uint32_t>(key.size());
    std::copy(key.begin(), key.end(), filled.key);
    filled.result = compute();
    slots_[hash & (slots_.size() - 1)] = filled;
    return filled.result;
  }

  // Records `result` for `key`.
  void Put(const MemoKey& memo_key, Expr result) {
    if (!memo_key.fits()) return;
    const absl::Span<const int64_t> key = memo_key.words();
    const uint64_t hash = HashKey(key);
    Slot& slot = slots_[hash & (slots_.size() - 1)];
    slot.hash = hash;
    slot.size = static_cast<uint32_t>(key.size());
    std::copy(key.begin(), key.end(), slot.key);
    slot.result = result;
  }

 private:
  // Keys are short and the table's contents never reach the output, so a
  // multiply-xor mix (much cheaper than absl::Hash here) is enough.
  static uint64_t HashKey(absl::Span<const int64_t> key) {
    uint64_t hash = key.size();
    for (int64_t word : key) {
      hash = (hash ^ static_cast<uint64_t>(word)) * 0x9e3779b97f4a7c15u;
      hash ^= hash >> 32;
    }
    return hash;
  }

  Expr Find(absl::Span<const int64_t> key, uint64_t hash) const {
    const Slot& slot = slots_[hash & (slots_.size() - 1)];
    if (slot.result == nullptr || slot.hash != hash || slot.size != key.size()) {
      return nullptr;
    }
    for (size_t i = 0; i < key.size(); ++i) {
      if (slot.key[i] != key[i]) return nullptr;
    }
    return slot.result;
  }

  struct Slot {
    uint64_t hash = 0;
    uint32_t size = 0;
    int64_t key[kMaxKey];
    Expr result = nullptr;  // null: empty
  };
  std::vector<Slot> slots_;
};

// Memo slots for a graph: about one per node, within [2^8, 2^12], so that
// small graphs do not pay for a large table and a large one stays in cache
// (lowering reuses few results at a time: those of the shapes and views at
// hand; a table much larger than the cache makes every lookup a miss).
int MemoSlotsLog2(const Graph& graph) {
  int log2 = 8;
  while (log2 < 12 && (size_t{1} << log2) < graph.nodes().size()) ++log2;
  return log2;
}

absl::Status NodeError(const Node& node, absl::string_view cause) {
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
  static const absl::flat_hash_map<std::string, LoweringRule>& Rules();
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
  // Also counts in `readers` how many times lowering loads each value: once
  // per node input that reads it, following views (and gathers, which may be
  // views) to their readers. Loads beyond these (of graph outputs,
  // reductions and gather data) read values that are never inlined.
  // Both vectors come zeroed, one entry per value.
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

  // Lowering rules (LoweringRule::lower), one per op family.
  // Pointwise.
  absl::Status LowerElementwise(const Node& node, const LoweringRule& rule);
  absl::Status LowerMod(const Node& node, const LoweringRule& rule);
  absl::Status LowerBitShift(const Node& node, const LoweringRule& rule);
  // `fn` of the node's inputs, broadcast to its output.
  absl::Status LowerCall(const Node& node, ScalarFn fn);
  absl::Status LowerCast(const Node& node, const LoweringRule& rule);
  // Reductions.
  absl::Status LowerReduce(const Node& node, const LoweringRule& rule);
  absl::Status LowerReduceMean(const Node& node, const LoweringRule& rule);
  // The reduction `kind` of the node's input over its axes; sets `root`.
  ComputeNode ReductionNode(const Node& node, ReduceKind kind, int& root);
  absl::Status LowerArgReduce(const Node& node, const LoweringRule& rule);
  absl::Status LowerCumsum(const Node& node, const LoweringRule& rule);
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
  // Matmul `node` as a gemm call (ExternOp::kGemm), or as loops where
  // LowerOptions::gemm_min_rows keeps it so (the node built to ask
  // MatchGemm, not built twice).
  ComputeNode GemmNode(const Node& node);
  // The matmul `node` over its operands lowered as `a` and `b`.
  ComputeNode MatmulNode(const Node& node, const LoweredValue& a, const LoweredValue& b);
  // Whether `value` is stored at an affine offset (a buffer, or a view
  // of one without divisions).
  bool IsAffineView(ValueId value);
  // Data movement: views, and ops that write one buffer in parts.
  absl::Status LowerConcat(const Node& node, const LoweringRule& rule);
  absl::Status LowerPad(const Node& node, const LoweringRule& rule);
  absl::Status LowerGather(const Node& node, const LoweringRule& rule);
  absl::Status LowerGatherElements(const Node& node, const LoweringRule& rule);
  absl::Status LowerScatterElements(const Node& node, const LoweringRule& rule);
  absl::Status LowerScatterNd(const Node& node, const LoweringRule& rule);
  absl::Status LowerGatherNd(const Node& node, const LoweringRule& rule);
  // Indices (see the definitions).
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
  // Steps: the value of `value` (over the loop variables), `step` as an
  // i64, a && b (a < 0: b alone).
  int Position(ComputeNode& compute, Expr value);
  int AsI64(ComputeNode& compute, int step);
  int And(ComputeNode& compute, int a, int b);
  // Stores `compute`'s value `root` in a fresh temporary over its ranges;
  // the node and the buffer are named `name`.
  BufferId StoreTemp(ComputeNode compute, int root, DType dtype, const std::string& name);
  // Whether scatter `node` replaces elements (reduction "none"), rather
  // than folding updates into them.
  static bool Replaces(const Node& node);
  absl::Status FinishScatter(const Node& node, ComputeNode pull, int match, Expr position,
                             absl::Span<const Expr> update_coords, const LoweredValue& last_source,
                             absl::Span<const Expr> last_coords, int64_t last_stride);
  int IndirectLoad(ComputeNode& compute, ValueId data, const LoweredValue& source,
                   absl::Span<const Expr> data_indices, int64_t stride, int index);
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
  // A compute node named `name` that copies all of `in` into `buffer`,
  // element x of `in` going to buffer[Substitute(offset, x + shift)].
  // Pad modes "reflect" and "edge" (see LowerPad).
  void LowerMirroredPad(const Node& node, BufferId buffer, Expr out_offset, bool reflect);
  ComputeNode CopyInto(const std::string& name, ValueId in, BufferId buffer, Expr offset,
                       const std::vector<int64_t>& shift);
  // `value` copied into a fresh contiguous buffer, for a reader that needs
  // a simpler index than the value's view gives. The copy and its buffer
  // are named `name`: `<reader>.<role>`, as one value may be copied for
  // several readers.
  LoweredValue Materialize(const std::string& name, ValueId value);

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
  std::vector<InlineTemplate> inline_templates_;
  std::vector<int> free_templates_;  // places in inline_templates_ to reuse
  ExprMemo memo_;
  OpLookupCache<OpFacts> facts_;
  MemoKey key_;  // scratch
};

OpFacts Lowering::FactsOf(OpName op) {
  return facts_.Get(op, [](OpName name) {
    OpFacts facts;
    facts.def = OpRegistry::Global().Find(name);
    auto it = Rules().find(name);
    if (it != Rules().end()) facts.rule = &it->second;
    return facts;
  });
}

void Lowering::CountReads() {
  constexpr double kUnbounded = std::numeric_limits<double>::infinity();
  std::vector<double>& reads = reads_;
  std::vector<int32_t>& readers = readers_;
  for (ValueId id : graph_.outputs()) reads[id] = kUnbounded;
  auto size = [&](ValueId id) {
    return static_cast<double>(NumElements(graph_.value(id).type.shape));
  };
  for (auto node = graph_.nodes().rbegin(); node != graph_.nodes().rend(); ++node) {
    const OpFacts facts = FactsOf(node->op);
    if (facts.def != nullptr && facts.def->is_view) {
      for (ValueId out : node->outputs) {  // split's parts, one for the rest
        reads[node->inputs[0]] += reads[out];
        readers[node->inputs[0]] += readers[out];
      }
      continue;
    }
    const InputReads reads_per =
        facts.rule != nullptr ? facts.rule->reads : InputReads::kPerOutputElement;
    if (facts.rule != nullptr && facts.rule->may_view) {
      readers[node->inputs[0]] += readers[node->outputs[0]];
    }
    // Each input is read once per iteration of the op's loops.
    double iterations = size(node->outputs[0]);
    if (reads_per == InputReads::kPerProductTerm) {
      iterations *= graph_.value(node->inputs[0]).type.shape.back();
    }
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const ValueId input = node->inputs[i];
      ++readers[input];
      // Read at computed places, or (a scatter's) once per element of the
      // output and of the updates (LowerScatterElements): stored.
      if (facts.def != nullptr && facts.def->ReadsByIndex(static_cast<int>(i))) {
        reads[input] = kUnbounded;
      } else if (reads_per == InputReads::kPerPair) {
        reads[input] += size(input) * size(input);
      } else {
        reads[input] += std::max(iterations, size(input));
      }
    }
  }
}

const absl::flat_hash_map<std::string, LoweringRule>& Lowering::Rules() {
  static const auto* rules = [] {
    auto* r = new absl::flat_hash_map<std::string, LoweringRule>;
    // Pointwise.
    const std::pair<const char*, ScalarFn> calls[] = {
        {"add", ScalarFn::kAdd},          {"sub", ScalarFn::kSub},
        {"mul", ScalarFn::kMul},          {"div", ScalarFn::kDiv},
        {"pow", ScalarFn::kPow},          {"maximum", ScalarFn::kMax},
        {"minimum", ScalarFn::kMin},      {"neg", ScalarFn::kNeg},
        {"abs", ScalarFn::kAbs},          {"exp", ScalarFn::kExp},
        {"log", ScalarFn::kLog},          {"sqrt", ScalarFn::kSqrt},
        {"rsqrt", ScalarFn::kRsqrt},      {"reciprocal", ScalarFn::kReciprocal},
        {"tanh", ScalarFn::kTanh},        {"sigmoid", ScalarFn::kSigmoid},
        {"relu", ScalarFn::kRelu},        {"erf", ScalarFn::kErf},
        {"sin", ScalarFn::kSin},          {"cos", ScalarFn::kCos},
        {"floor", ScalarFn::kFloor},      {"ceil", ScalarFn::kCeil},
        {"round", ScalarFn::kRound},      {"sign", ScalarFn::kSign},
        {"where", ScalarFn::kSelect},     {"equal", ScalarFn::kEq},
        {"not_equal", ScalarFn::kNe},     {"less", ScalarFn::kLt},
        {"less_equal", ScalarFn::kLe},    {"greater", ScalarFn::kGt},
        {"greater_equal", ScalarFn::kGe}, {"logical_not", ScalarFn::kNot},
        {"logical_and", ScalarFn::kAnd},  {"logical_or", ScalarFn::kOr},
        {"logical_xor", ScalarFn::kXor},
    };
    for (const auto& [op, fn] : calls) {
      (*r)[op] = {&Lowering::LowerElementwise};
      (*r)[op].fn = fn;
    }
    (*r)["mod"] = {&Lowering::LowerMod};
    (*r)["bit_shift"] = {&Lowering::LowerBitShift};
    (*r)["cast"] = {&Lowering::LowerCast};
    // Reductions.
    const std::pair<const char*, ReduceKind> reductions[] = {
        {"reduce_sum", ReduceKind::kSum}, {"reduce_max", ReduceKind::kMax},
        {"reduce_min", ReduceKind::kMin}, {"reduce_prod", ReduceKind::kProd},
        {"reduce_var", ReduceKind::kVar},
    };
    for (const auto& [op, kind] : reductions) {
      (*r)[op] = LoweringRule::Reduction(&Lowering::LowerReduce, kind);
    }
    (*r)["reduce_mean"] = {&Lowering::LowerReduceMean};
    (*r)["argmax"] = LoweringRule::Reduction(&Lowering::LowerArgReduce, ReduceKind::kArgMax);
    (*r)["argmin"] = LoweringRule::Reduction(&Lowering::LowerArgReduce, ReduceKind::kArgMin);
    (*r)["cumsum"] = {&Lowering::LowerCumsum, InputReads::kPerPair};
    (*r)["matmul"] = {&Lowering::LowerMatmul, InputReads::kPerProductTerm};
    // Data movement.
    (*r)["concat"] = {&Lowering::LowerConcat};
    (*r)["pad"] = {&Lowering::LowerPad};
    (*r)["gather"] = {&Lowering::LowerGather, InputReads::kPerOutputElement, /*may_view=*/true};
    (*r)["gather_elements"] = {&Lowering::LowerGatherElements};
    (*r)["scatter_elements"] = {&Lowering::LowerScatterElements};
    (*r)["scatter_nd"] = {&Lowering::LowerScatterNd};
    (*r)["gather_nd"] = {&Lowering::LowerGatherNd};
    (*r)["reshape"] = {&Lowering::LowerReshape};
    (*r)["transpose"] = {&Lowering::LowerTranspose};
    (*r)["squeeze"] = {&Lowering::LowerSqueezeLike};
    (*r)["unsqueeze"] = {&Lowering::LowerSqueezeLike};
    (*r)["expand"] = {&Lowering::LowerExpand};
    (*r)["slice"] = {&Lowering::LowerSlice};
    (*r)["as_strided"] = {&Lowering::LowerAsStrided};
    (*r)["split"] = {&Lowering::LowerSplit};
    (*r)["tile"] = {&Lowering::LowerTile};
    return r;
  }();
  return *rules;
}

BufferId Lowering::NewBuffer(const Value& value, BufferKind kind, ValueId source) {
  Buffer buffer;
  buffer.name = value.name;
  buffer.dtype = value.type.dtype;
  buffer.sizes = value.type.shape;
  buffer.kind = kind;
  buffer.source = source;
  program_.buffers.push_back(std::move(buffer));
  return static_cast<BufferId>(program_.buffers.size() - 1);
}

// Memo keys start with a tag naming the computation.
enum MemoTag : int64_t {
  kContiguousOffset,
  kSubstitute,
  kReindex,
  kReshapeIndex,
  kSimplify,
};

Expr Lowering::ContiguousOffset(const Shape& shape, int first_var) {
  key_.Start(kContiguousOffset).Add(first_var).Add(shape);
  return memo_.Get(key_, [&] {
    Expr offset = ctx_.Const(0);
    const std::vector<int64_t> strides = ContiguousStrides(shape);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1) continue;  // its only index is 0
      offset = ctx_.Add(offset, ctx_.Mul(Var(first_var + static_cast<int>(i)), strides[i]));
    }
    return offset;
  });
}

Expr Lowering::Substitute(Expr e, absl::Span<const Expr> indices) {
  if (e->is_const()) return e;  // what both would return, at no cost
  key_.Start(kSubstitute).Add(Bits(e)).Add(indices);
  return memo_.Get(key_, [&] { return ctx_.Substitute(e, indices); });
}

Expr Lowering::Reindex(Expr e, absl::Span<const Expr> indices, absl::Span<const int64_t> extents) {
  if (e->is_const()) return e;
  if (IsIdentity(indices)) return Simplify(e, extents);
  key_.Start(kReindex)
      .Add(Bits(e))
      .Add(static_cast<int64_t>(indices.size()))
      .Add(indices)
      .Add(extents);
  return memo_.Get(key_, [&] {
    const Expr result = ctx_.Simplify(ctx_.Substitute(e, indices), extents);
    // Simplify is idempotent, and an index is often reindexed again by the
    // identity (a value inlined into a reader of the same shape).
    SimplifyKey(result, extents);
    memo_.Put(key_, result);
    return result;
  });
}

Expr Lowering::Simplify(Expr e, absl::Span<const int64_t> extents) {
  SimplifyKey(e, extents);
  return memo_.Get(key_, [&] { return ctx_.Simplify(e, extents); });
}

void Lowering::SimplifyKey(Expr e, absl::Span<const int64_t> extents) {
  key_.Start(kSimplify).Add(Bits(e)).Add(extents);
}

bool Lowering::IsIdentity(absl::Span<const Expr> indices) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i]->kind() != ExprKind::kVar || indices[i]->value() != static_cast<int64_t>(i)) {
      return false;
    }
  }
  return true;
}

Indices Lowering::Vars(int first, int count) {
  Indices vars;
  for (int i = first; i < first + count; ++i) vars.push_back(Var(i));
  return vars;
}

ComputeNode Lowering::PointwiseNode(const Node& node, ValueId out) {
  ComputeNode compute;
  compute.name = node.name;
  compute.ranges = graph_.value(out).type.shape;
  // A load (or an inlined body) per input and a step to combine them, for
  // most nodes: reserved exactly, so that the body never regrows.
  size_t steps = 1;
  for (ValueId input : node.inputs) {
    const LoweredValue& source = lowered_[input];
    steps += source.inline_node >= 0 ? inline_templates_[source.inline_node].body.size() : 1;
  }
  compute.body.reserve(steps);
  return compute;
}

void Lowering::Finish(ComputeNode node, ValueId out, int root) {
  const Value& value = graph_.value(out);
  // Each template is a copy of everything it inlined: without a cap on its
  // size, a chain of n pointwise ops would hold O(n^2) steps.
  constexpr size_t kMaxInlineSteps = 64;
  // Each reader gets a copy of the body, too: a value that very many
  // readers each read a part of (through views: an unrolled recurrence's
  // steps reading their rows of the input projection plus bias) is stored
  // once instead, and every reader loads it. That adds no memory traffic
  // where its operands then stay inside its kernel (a matmul and its bias
  // add), and keeps the program from growing with body x readers.
  constexpr int32_t kMaxInlineReaders = 64;
  const bool many_copies = readers_[out] > kMaxInlineReaders && node.body.size() > 1;
  if (node.reduce == ReduceKind::kNone && node.body.size() <= kMaxInlineSteps && !many_copies &&
      reads_[out] <= NumElements(value.type.shape)) {
    LoweredValue inlined;
    inlined.inline_node = NewTemplate();
    InlineTemplate& tmpl = inline_templates_[inlined.inline_node];
    tmpl.body = std::move(node.body);
    tmpl.root = root;
    tmpl.readers_left = readers_[out];
    inlined.num_coords = static_cast<uint16_t>(value.type.shape.size());
    for (int i = 0; i < inlined.num_coords; ++i) tmpl.coords.push_back(Var(i));
    lowered_[out] = inlined;
    return;
  }
  node.output = NewBuffer(value, BufferKind::kTemp, out);
  node.root = root;
  // A body grows by doubling while it inlines others: the program keeps
  // it, so it gives back the slack (an unrolled recurrence's bodies are
  // most of the loop program's memory).
  node.body.shrink_to_fit();
  node.store_index = ContiguousOffset(node.ranges);
  lowered_[out] = LoweredValue::Stored(node.output, ContiguousOffset(value.type.shape));
  program_.nodes.push_back(std::move(node));
}

int Lowering::NewTemplate() {
  if (free_templates_.empty()) {
    inline_templates_.emplace_back();
    return static_cast<int>(inline_templates_.size()) - 1;
  }
  const int place = free_templates_.back();
  free_templates_.pop_back();
  return place;
}

int Lowering::Step(ComputeNode& node, ScalarOp op) {
  node.body.push_back(std::move(op));
  return static_cast<int>(node.body.size() - 1);
}

int Lowering::Load(ComputeNode& node, ValueId value, absl::Span<const Expr> indices) {
  return LoadFrom(node, lowered_[value], graph_.value(value).type.dtype, indices);
}

int Lowering::LoadFrom(ComputeNode& node, const LoweredValue& source, DType dtype,
                       absl::Span<const Expr> indices) {
  if (source.inline_constant) return Constant(node, source.constant, dtype);
  if (source.inline_node >= 0) {
    absl::InlinedVector<Expr, 4> coords;
    for (Expr e : InlineCoords(source)) {
      coords.push_back(Substitute(e, indices));
    }
    InlineTemplate& tmpl = inline_templates_[source.inline_node];
    const int root = Inline(node, tmpl, coords);
    if (--tmpl.readers_left == 0) {
      tmpl.body = std::vector<ScalarOp>();
      tmpl.coords.clear();  // its storage serves the next template here
      free_templates_.push_back(source.inline_node);
    }
    return root;
  }
  ScalarOp load{ScalarOp::Kind::kLoad, dtype};
  load.buffer = source.buffer;
  load.index = Reindex(source.offset, indices, Extents(node));
  return Step(node, std::move(load));
}

int Lowering::Inline(ComputeNode& node, const InlineTemplate& tmpl, absl::Span<const Expr> coords) {
  const int base = static_cast<int>(node.body.size());
  const Extents ranges(node);
  // Grows geometrically still (reserving the exact size each time would
  // reallocate on every inline).
  const size_t needed = node.body.size() + tmpl.body.size();
  if (needed > node.body.capacity()) {
    node.body.reserve(std::max(needed, 2 * node.body.capacity()));
  }
  for (const ScalarOp& op : tmpl.body) {
    ScalarOp copy = op;
    for (int& arg : copy.args) arg += base;
    if (copy.index != nullptr) {
      copy.index = Reindex(op.index, coords, ranges);
    }
    node.body.push_back(std::move(copy));
  }
  return base + tmpl.root;
}

int Lowering::Call(ComputeNode& node, ScalarFn fn, DType dtype, absl::Span<const int> args) {
  ScalarOp call{ScalarOp::Kind::kCall, dtype};
  call.fn = fn;
  call.args.assign(args.begin(), args.end());
  return Step(node, std::move(call));
}

int Lowering::Constant(ComputeNode& node, double value, DType dtype) {
  ScalarOp constant{ScalarOp::Kind::kConst, dtype};
  constant.constant = value;
  return Step(node, std::move(constant));
}

Indices Lowering::BroadcastIndices(const Shape& in_shape, size_t out_rank) {
  Indices indices;
  const size_t lead = out_rank - in_shape.size();
  for (size_t i = 0; i < in_shape.size(); ++i) {
    indices.push_back(in_shape[i] == 1 ? ctx_.Const(0) : Var(static_cast<int>(lead + i)));
  }
  return indices;
}

absl::Status Lowering::LowerElementwise(const Node& node, const LoweringRule& rule) {
  return LowerCall(node, rule.fn);
}

absl::Status Lowering::LowerMod(const Node& node, const LoweringRule&) {
  // Its attribute picks the sign of the remainder.
  return LowerCall(node, node.attrs.GetInt("fmod", 0) != 0 ? ScalarFn::kFmod : ScalarFn::kMod);
}

absl::Status Lowering::LowerBitShift(const Node& node, const LoweringRule&) {
  const bool left = node.attrs.GetString("direction", "") == "left";
  return LowerCall(node, left ? ScalarFn::kShl : ScalarFn::kShr);
}

absl::Status Lowering::LowerCall(const Node& node, ScalarFn fn) {
  const ValueId out = node.outputs[0];
  ComputeNode compute = PointwiseNode(node, out);
  const size_t rank = compute.ranges.size();
  absl::InlinedVector<int, 3> args;
  for (ValueId input : node.inputs) {
    args.push_back(Load(compute, input, BroadcastIndices(graph_.value(input).type.shape, rank)));
  }
  const int root = Call(compute, fn, graph_.value(out).type.dtype, args);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

absl::Status Lowering::LowerCast(const Node& node, const LoweringRule&) {
  const ValueId out = node.outputs[0];
  ComputeNode compute = PointwiseNode(node, out);
  const int arg = Load(compute, node.inputs[0], Vars(0, static_cast<int>(compute.ranges.size())));
  ScalarOp cast{ScalarOp::Kind::kCast, graph_.value(out).type.dtype};
  cast.args = {arg};
  const int root = Step(compute, std::move(cast));
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

absl::Status Lowering::LowerReduce(const Node& node, const LoweringRule& rule) {
  int root;
  ComputeNode compute = ReductionNode(node, rule.reduce, root);
  if (rule.reduce == ReduceKind::kSum) MarkContraction(compute, root);
  Finish(std::move(compute), node.outputs[0], root);
  return absl::OkStatus();
}

// The sum (node and buffer `<node>.sum`), then a pointwise divide by the
// reduced element count, which computes the value.
absl::Status Lowering::LowerReduceMean(const Node& node, const LoweringRule&) {
  const ValueId out = node.outputs[0];
  const DType dtype = graph_.value(out).type.dtype;
  int root;
  ComputeNode compute = ReductionNode(node, ReduceKind::kSum, root);
  const int64_t count = NumElements(compute.reduction_ranges);
  const Expr offset = ContiguousOffset(compute.ranges);
  const LoweredValue sum = LoweredValue::Stored(
      StoreTemp(std::move(compute), root, dtype, absl::StrCat(node.name, ".sum")), offset);
  ComputeNode divide = PointwiseNode(node, out);
  const int total = LoadFrom(divide, sum, dtype, Vars(0, static_cast<int>(divide.ranges.size())));
  const int n = Constant(divide, static_cast<double>(count), dtype);
  const int quotient = Call(divide, ScalarFn::kDiv, dtype, {total, n});
  Finish(std::move(divide), out, quotient);
  return absl::OkStatus();
}

ComputeNode Lowering::ReductionNode(const Node& node, ReduceKind kind, int& root) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const AttrInts axes = IntsOrEmpty(node, "axes");
  std::vector<bool> reduced(in_shape.size(), axes.empty());
  for (int64_t axis : axes) {
    reduced[Axis(axis, in_shape.size())] = true;
  }
  const bool keepdims = node.attrs.GetInt("keepdims", 0) != 0;

  // Pointwise loops follow the output's dims; reduction loops come after.
  ComputeNode compute = PointwiseNode(node, out);
  const int num_pointwise = static_cast<int>(compute.ranges.size());
  std::vector<Expr> indices;
  int next_pointwise = 0;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (reduced[i]) {
      indices.push_back(Var(num_pointwise + static_cast<int>(compute.reduction_ranges.size())));
      compute.reduction_ranges.push_back(in_shape[i]);
      if (keepdims) ++next_pointwise;
    } else {
      indices.push_back(Var(next_pointwise++));
    }
  }
  if (compute.reduction_ranges.empty()) compute.reduction_ranges.push_back(1);
  compute.reduce = kind;
  root = Load(compute, in, indices);
  return compute;
}

absl::Status Lowering::LowerArgReduce(const Node& node, const LoweringRule& rule) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const int axis = Axis(node.attrs.GetInt("axis", 0), in_shape.size());
  const bool keepdims = node.attrs.GetInt("keepdims", 1) != 0;
  const bool last = node.attrs.GetInt("select_last_index", 0) != 0;

  ComputeNode compute = PointwiseNode(node, out);
  const int num_pointwise = static_cast<int>(compute.ranges.size());
  compute.reduction_ranges = {in_shape[axis]};
  const bool max = rule.reduce == ReduceKind::kArgMax;
  compute.reduce = !last ? rule.reduce : max ? ReduceKind::kArgMaxLast : ReduceKind::kArgMinLast;
  std::vector<Expr> indices;
  int next_pointwise = 0;
  for (int i = 0; i < static_cast<int>(in_shape.size()); ++i) {
    if (i == axis) {
      indices.push_back(Var(num_pointwise));
      if (keepdims) ++next_pointwise;
    } else {
      indices.push_back(Var(next_pointwise++));
    }
  }
  const int root = Load(compute, in, indices);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// out[.., i, ..] = sum over j of in[.., j, ..] masked to j <= i (j < i when
// exclusive; j >= i, j > i when reversed): a reduction whose body compares
// the loop positions. Quadratic in the axis length, which stays small in
// the models loom targets; a scan kind would make it linear.
absl::Status Lowering::LowerCumsum(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& shape = graph_.value(in).type.shape;
  const DType dtype = graph_.value(out).type.dtype;
  const int rank = static_cast<int>(shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), shape.size());
  const bool exclusive = node.attrs.GetInt("exclusive", 0) != 0;
  const bool reverse = node.attrs.GetInt("reverse", 0) != 0;

  ComputeNode compute = PointwiseNode(node, out);
  compute.reduction_ranges = {shape[axis]};
  compute.reduce = ReduceKind::kSum;
  Indices indices = Vars(0, rank);
  indices[axis] = Var(rank);
  const int value = Load(compute, in, indices);
  ScalarOp position{ScalarOp::Kind::kIndex, DType::kI64};
  position.index = Var(rank);
  const int j = Step(compute, position);
  position.index = Var(axis);
  const int i = Step(compute, position);
  const ScalarFn compare = reverse ? (exclusive ? ScalarFn::kGt : ScalarFn::kGe)
                                   : (exclusive ? ScalarFn::kLt : ScalarFn::kLe);
  const int in_prefix = Call(compute, compare, DType::kBool, {j, i});
  const int zero = Constant(compute, 0, dtype);
  const int root = Call(compute, ScalarFn::kSelect, dtype, {in_prefix, value, zero});
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

absl::Status Lowering::LowerMatmul(const Node& node, const LoweringRule&) {
  const ValueId a = node.inputs[0], b = node.inputs[1], out = node.outputs[0];
  ComputeNode compute =
      MayBeGemm(node) ? GemmNode(node) : MatmulNode(node, lowered_[a], lowered_[b]);
  const int root = compute.root;
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

void Lowering::MarkContraction(ComputeNode& compute, int root) {
  if (options_.gemm_min_rows < 0) return;
  compute.root = root;                                     // as Finish will
  compute.store_index = ContiguousOffset(compute.ranges);  // set them
  const std::optional<Gemm> gemm = MatchGemm(compute);
  if (gemm.has_value() && gemm->m >= options_.gemm_min_rows) {
    compute.extern_op = ExternOp::kGemm;
  } else if (MatchConv(compute).has_value()) {
    compute.extern_op = ExternOp::kConv;
  }
}

bool Lowering::MayBeGemm(const Node& node) const {
  const Value& a = graph_.value(node.inputs[0]);
  const Value& b = graph_.value(node.inputs[1]);
  const DType dtype = graph_.value(node.outputs[0]).type.dtype;
  return options_.gemm_min_rows >= 0 && a.type.shape.size() >= 2 && b.type.shape.size() >= 2 &&
         a.type.dtype == dtype && b.type.dtype == dtype &&
         (dtype == DType::kF32 || dtype == DType::kF64);
}

ComputeNode Lowering::GemmNode(const Node& node) {
  const ValueId a = node.inputs[0], b = node.inputs[1];
  ComputeNode compute;
  auto match = [&](const LoweredValue& a_source, const LoweredValue& b_source) {
    compute = MatmulNode(node, a_source, b_source);
    compute.store_index = ContiguousOffset(compute.ranges);  // as Finish will
    return MatchGemm(compute);
  };
  // A call reads its operands where they are stored: an inline value, or
  // a view that is no strided matrix (a reshape of a transpose, say), is
  // copied into a buffer first. Materialize counts as the value's reader,
  // so each operand is copied at most once.
  const std::string a_copy = absl::StrCat(node.name, ".a");
  const std::string b_copy = absl::StrCat(node.name, ".b");
  const bool a_view = IsAffineView(a), b_view = IsAffineView(b);
  const LoweredValue a_source = a_view ? lowered_[a] : Materialize(a_copy, a);
  const LoweredValue b_source = b_view ? lowered_[b] : Materialize(b_copy, b);
  std::optional<Gemm> gemm = match(a_source, b_source);
  if (gemm.has_value() && a_view && b_view && gemm->m < options_.gemm_min_rows &&
      gemm->b.transposed) {
    return compute;  // dot products that fuse with their consumers
  }
  if (!gemm.has_value()) {  // strided along both dims: copy the views too
    gemm = match(a_view ? Materialize(a_copy, a) : a_source,
                 b_view ? Materialize(b_copy, b) : b_source);
  }
  if (!gemm.has_value()) return compute;  // not reached: all contiguous
  compute.extern_op = ExternOp::kGemm;
  return compute;
}

bool Lowering::IsAffineView(ValueId value) {
  const LoweredValue& lowered = lowered_[value];
  if (lowered.inline_node >= 0 || lowered.inline_constant) return false;
  absl::InlinedVector<int64_t, 8> coefficients(graph_.value(value).type.shape.size());
  int64_t constant;
  return AffineCoefficients(lowered.offset, absl::MakeSpan(coefficients), constant);
}

ComputeNode Lowering::MatmulNode(const Node& node, const LoweredValue& a_source,
                                 const LoweredValue& b_source) {
  const ValueId a = node.inputs[0], b = node.inputs[1], out = node.outputs[0];
  const Shape& a_shape = graph_.value(a).type.shape;
  const Shape& b_shape = graph_.value(b).type.shape;
  const DType dtype = graph_.value(out).type.dtype;
  ComputeNode compute = PointwiseNode(node, out);
  const int out_rank = static_cast<int>(compute.ranges.size());
  const int64_t k = a_shape.back();
  compute.reduction_ranges = {k};
  compute.reduce = ReduceKind::kSum;
  const Expr kvar = Var(out_rank);

  // numpy matmul: a 1-D operand gains a dim of 1 (first for a, last for b)
  // that the output drops; batch dims broadcast.
  const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  const int n_var = out_rank - 1;
  const int m_var = b_vector ? out_rank - 1 : out_rank - 2;
  const int batch_rank = out_rank - (a_vector ? 0 : 1) - (b_vector ? 0 : 1);
  auto batch_indices = [&](const Shape& shape) {
    Shape batch(shape.begin(), shape.end() - 2);
    return BroadcastIndices(batch, batch_rank);
  };
  Indices a_idx, b_idx;
  if (a_vector) {
    a_idx = {kvar};
  } else {
    a_idx = batch_indices(a_shape);
    a_idx.push_back(a_shape[a_shape.size() - 2] == 1 ? ctx_.Const(0) : Var(m_var));
    a_idx.push_back(kvar);
  }
  if (b_vector) {
    b_idx = {kvar};
  } else {
    b_idx = batch_indices(b_shape);
    b_idx.push_back(kvar);
    b_idx.push_back(b_shape.back() == 1 ? ctx_.Const(0) : Var(n_var));
  }
  const int lhs = LoadFrom(compute, a_source, graph_.value(a).type.dtype, a_idx);
  const int rhs = LoadFrom(compute, b_source, graph_.value(b).type.dtype, b_idx);
  compute.root = Call(compute, ScalarFn::kMul, dtype, {lhs, rhs});
  return compute;
}

absl::Status Lowering::LowerConcat(const Node& node, const LoweringRule&) {
  // One compute node per input (`<node>.input<i>`), each writing its slab
  // of one buffer.
  const ValueId out = node.outputs[0];
  const Value& out_value = graph_.value(out);
  const int axis = Axis(node.attrs.GetInt("axis", 0), out_value.type.shape.size());
  const BufferId buffer = NewBuffer(out_value, BufferKind::kTemp, out);
  const Expr out_offset = ContiguousOffset(out_value.type.shape);
  std::vector<int64_t> shift(out_value.type.shape.size(), 0);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId input = node.inputs[i];
    program_.nodes.push_back(
        CopyInto(absl::StrCat(node.name, ".input", i), input, buffer, out_offset, shift));
    shift[axis] += graph_.value(input).type.shape[axis];
  }
  lowered_[out] = LoweredValue::Stored(buffer, out_offset);
  return absl::OkStatus();
}

ComputeNode Lowering::CopyInto(const std::string& name, ValueId in, BufferId buffer, Expr offset,
                               const std::vector<int64_t>& shift) {
  const Shape& shape = graph_.value(in).type.shape;
  const int rank = static_cast<int>(shape.size());
  ComputeNode compute;
  compute.name = name;
  compute.ranges = shape;
  compute.root = Load(compute, in, Vars(0, rank));
  Indices shifted = Vars(0, rank);
  for (int i = 0; i < rank; ++i) {
    shifted[i] = ctx_.Add(shifted[i], ctx_.Const(shift[i]));
  }
  compute.output = buffer;
  compute.store_index = Reindex(offset, shifted, compute.ranges);
  return compute;
}

LoweredValue Lowering::Materialize(const std::string& name, ValueId value) {
  const Value& v = graph_.value(value);
  Buffer copy;
  copy.name = name;
  copy.dtype = v.type.dtype;
  copy.sizes = v.type.shape;
  program_.buffers.push_back(std::move(copy));
  const BufferId buffer = static_cast<BufferId>(program_.buffers.size() - 1);
  const Expr offset = ContiguousOffset(v.type.shape);
  program_.nodes.push_back(
      CopyInto(name, value, buffer, offset, std::vector<int64_t>(v.type.shape.size())));
  return LoweredValue::Stored(buffer, offset);
}

// Mode "constant": two compute nodes write the output: one (`<node>.fill`)
// fills it with the pad value, the next (`<node>.interior`) copies the
// input into the interior (the scheduler keeps writes to one buffer in
// program order). Modes "reflect" and "edge": the output is cut, along each
// padded dim, into the begin pad, the interior and the end pad; each of
// those regions is one copy of the input, whose index along a dim is, in a
// begin pad at position v, begin - v (reflect) or 0 (edge), and in an end
// pad at v, size - 2 - v or size - 1: affine, so every region is a plain
// loop. A region's node is named by its pads (`<node>.begin2.end3`: the
// begin pad along dim 2 and the end pad along dim 3, the interior along
// the others; `<node>.interior`).
absl::Status Lowering::LowerPad(const Node& node, const LoweringRule&) {
  const std::string mode = node.attrs.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return NodeError(node, absl::StrCat("pad mode '", mode,
                                        "' is not supported (only 'constant', "
                                        "'reflect', 'edge')"));
  }
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Value& out_value = graph_.value(out);
  const size_t rank = out_value.type.shape.size();
  const std::vector<int64_t> pads = node.attrs.GetInts("pads");
  if (pads.size() != 2 * rank ||
      std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; })) {
    return NodeError(node, absl::StrCat("'pads' must be ", 2 * rank, " non-negative values"));
  }
  const BufferId buffer = NewBuffer(out_value, BufferKind::kTemp, out);
  const Expr out_offset = ContiguousOffset(out_value.type.shape);
  if (mode != "constant") {
    LowerMirroredPad(node, buffer, out_offset, mode == "reflect");
    lowered_[out] = LoweredValue::Stored(buffer, out_offset);
    return absl::OkStatus();
  }

  ComputeNode fill = PointwiseNode(node, out);
  fill.name = absl::StrCat(node.name, ".fill");
  fill.output = buffer;
  fill.root = Constant(fill, node.attrs.GetFloat("value", 0), out_value.type.dtype);
  fill.store_index = out_offset;
  program_.nodes.push_back(std::move(fill));
  program_.nodes.push_back(CopyInto(absl::StrCat(node.name, ".interior"), in, buffer, out_offset,
                                    std::vector<int64_t>(pads.begin(), pads.begin() + rank)));
  lowered_[out] = LoweredValue::Stored(buffer, out_offset);
  return absl::OkStatus();
}

void Lowering::LowerMirroredPad(const Node& node, BufferId buffer, Expr out_offset, bool reflect) {
  const ValueId in = node.inputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const int rank = static_cast<int>(in_shape.size());
  const std::vector<int64_t> pads = node.attrs.GetInts("pads");
  std::vector<int> padded;  // the dims with a pad
  for (int d = 0; d < rank; ++d) {
    if (pads[d] != 0 || pads[rank + d] != 0) padded.push_back(d);
  }
  // Region r is, along padded dim padded[j], part (r / 3^j) % 3: 0 the
  // begin pad, 1 the interior, 2 the end pad.
  int64_t regions = 1;
  for (size_t j = 0; j < padded.size(); ++j) regions *= 3;
  for (int64_t r = 0; r < regions; ++r) {
    ComputeNode copy;
    copy.ranges = in_shape;
    Indices source = Vars(0, rank);
    Indices target = Vars(0, rank);
    std::string pads_in_region;
    int64_t code = r;
    for (int d : padded) {
      const int part = static_cast<int>(code % 3);
      code /= 3;
      const int64_t begin = pads[d], size = in_shape[d];
      if (part != 1) absl::StrAppend(&pads_in_region, part == 0 ? ".begin" : ".end", d);
      if (part == 0) {
        copy.ranges[d] = begin;
        source[d] = reflect ? ctx_.Add(ctx_.Const(begin), ctx_.Mul(Var(d), -1)) : ctx_.Const(0);
      } else if (part == 1) {
        target[d] = ctx_.Add(Var(d), ctx_.Const(begin));
      } else {
        copy.ranges[d] = pads[rank + d];
        source[d] =
            reflect ? ctx_.Add(ctx_.Const(size - 2), ctx_.Mul(Var(d), -1)) : ctx_.Const(size - 1);
        target[d] = ctx_.Add(Var(d), ctx_.Const(begin + size));
      }
    }
    if (NumElements(copy.ranges) == 0) continue;
    copy.name = absl::StrCat(node.name, pads_in_region.empty() ? ".interior" : pads_in_region);
    copy.root = Load(copy, in, source);
    copy.output = buffer;
    copy.store_index = Reindex(out_offset, target, copy.ranges);
    program_.nodes.push_back(std::move(copy));
  }
}

// A step giving the index that `indices` holds at `coords` (over
// `compute`'s loops) into dim `axis` (of size `extent`) of `node`'s data,
// wrapped when negative; with `component` >= 0 (scatter_nd), the index is
// indices[coords..., component]. Indices known at compile time are read and
// checked here (KnownIndexStep); indices known only at run time are read
// from CheckedIndices, which checks each once.
absl::StatusOr<int> Lowering::IndexAt(ComputeNode& compute, const Node& node, ValueId indices,
                                      absl::Span<const Expr> coords, int64_t axis, int64_t extent,
                                      int component) {
  if (!IsKnown(indices)) {
    const LoweredValue checked = CheckedIndices(node, indices, axis, extent, component);
    return LoadFrom(compute, checked, DType::kI64, coords);
  }
  Indices at(coords.begin(), coords.end());
  if (component >= 0) at.push_back(ctx_.Const(component));
  const int loaded = Load(compute, indices, at);
  return KnownIndexStep(compute, node, indices, loaded, axis, extent, component);
}

// `index`, a step loading `indices` known at compile time, whose elements
// (those of `component`, or all) are checked here: an error names the
// first out of range; wrapped in the body when one is negative.
absl::StatusOr<int> Lowering::KnownIndexStep(ComputeNode& compute, const Node& node,
                                             ValueId indices, int index, int64_t axis,
                                             int64_t extent, int component) {
  const Value& index_value = graph_.value(indices);
  const Tensor& index_data = graph_.initializer(indices);
  const int64_t every = component < 0 ? 1 : index_value.type.shape.back();
  bool any_negative = false;
  for (int64_t i = std::max(component, 0); i < index_data.num_elements(); i += every) {
    const int64_t value = index_data.GetInt(i);
    if (value < -extent || value >= extent) {
      return NodeError(node, absl::StrCat(IndexOutOfRangeCause(value, axis, extent), " (element ",
                                          i, " of '", index_value.name, "')"));
    }
    any_negative |= value < 0;
  }
  if (!any_negative) return index;
  const DType index_type = index_value.type.dtype;
  const int zero = Constant(compute, 0, index_type);
  const int negative = Call(compute, ScalarFn::kLt, DType::kBool, {index, zero});
  const int size = Constant(compute, static_cast<double>(extent), index_type);
  const int wrapped = Call(compute, ScalarFn::kAdd, index_type, {index, size});
  return Call(compute, ScalarFn::kSelect, index_type, {negative, wrapped, index});
}

// Indices known only at run time, each checked once (kCheckIndex) by a
// node of its own into an i64 temporary of the indices' shape (without the
// last dim for a `component`; both named `<node>.indices`, or
// `<node>.indices<component>`): a reader loads them checked and wrapped. An
// embedding's reader then checks once per token, not per element, in the
// outer loop it shares with this node once they are fused (its inner loop
// stays free to vectorise), and every index is checked even where no
// element reads it (an empty data dim), as the interpreter checks it.
LoweredValue Lowering::CheckedIndices(const Node& node, ValueId indices, int64_t axis,
                                      int64_t extent, int component) {
  const Shape& shape = graph_.value(indices).type.shape;
  const std::string name = component < 0 ? absl::StrCat(node.name, ".indices")
                                         : absl::StrCat(node.name, ".indices", component);
  const Shape ranges(shape.begin(), component < 0 ? shape.end() : shape.end() - 1);
  ComputeNode checker;
  checker.ranges = ranges;
  Indices at = Vars(0, static_cast<int>(ranges.size()));
  if (component >= 0) at.push_back(ctx_.Const(component));
  const int loaded = Load(checker, indices, at);
  const int checked = CheckIndex(checker, node, loaded, axis, extent);
  const BufferId buffer = StoreTemp(std::move(checker), checked, DType::kI64, name);
  return LoweredValue::Stored(buffer, ContiguousOffset(ranges));
}

int Lowering::CheckIndex(ComputeNode& compute, const Node& node, int index, int64_t axis,
                         int64_t extent) {
  if (program_.index_errors < 0) {
    Buffer errors;
    errors.name = "index_errors";
    errors.dtype = DType::kI64;
    errors.sizes = {2};
    errors.kind = BufferKind::kIndexErrors;
    program_.buffers.push_back(std::move(errors));
    program_.index_errors = static_cast<BufferId>(program_.buffers.size() - 1);
  }
  ScalarOp check{ScalarOp::Kind::kCheckIndex, DType::kI64};
  check.site = static_cast<int32_t>(program_.index_checks.size());
  check.extent = extent;
  check.args = {index};
  program_.index_checks.push_back(IndexCheck{node.name, std::string(node.op), axis, extent});
  return Step(compute, std::move(check));
}

bool Lowering::IsKnown(ValueId value) const { return graph_.HasInitializer(value); }

// `value` as a stored buffer whose offset is linear in variable `var` (with
// the coefficient in `stride`): as it is, or copied into a contiguous one
// (a compute node and buffer named `name`).
LoweredValue Lowering::LinearSource(const std::string& name, ValueId value, int var,
                                    int64_t& stride) {
  LoweredValue source = lowered_[value];
  if (source.inline_constant || source.inline_node >= 0 ||
      !IsLinearIn(source.offset, var, stride)) {
    source = Materialize(name, value);
    IsLinearIn(source.offset, var, stride);  // contiguous: always linear
  }
  return source;
}

// A load of `data` (lowered as `source`, linear in its dim `axis` with
// `stride`) at `data_indices` with dim `axis` moved by the value of step
// `index`.
int Lowering::IndirectLoad(ComputeNode& compute, ValueId data, const LoweredValue& source,
                           absl::Span<const Expr> data_indices, int64_t stride, int index) {
  ScalarOp load{ScalarOp::Kind::kLoad, graph_.value(data).type.dtype};
  load.buffer = source.buffer;
  load.index = Reindex(source.offset, data_indices, Extents(compute));
  if (stride != 0) {  // a data dim of 1 needs no index
    load.stride = stride;
    load.args = {index};
  }
  return Step(compute, std::move(load));
}

// out[a, i, b] = data[a, indices[i], b] (a: the dims before `axis`, i: the
// index's dims, b: the dims after it). Each index becomes an indirect load
// whose flat index is affine in the loop variables plus stride * index;
// indices known only at run time are checked once each (IndexAt).
absl::Status Lowering::LowerGather(const Node& node, const LoweringRule&) {
  const ValueId data = node.inputs[0], indices = node.inputs[1], out = node.outputs[0];
  const Shape& data_shape = graph_.value(data).type.shape;
  const int data_rank = static_cast<int>(data_shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), data_shape.size());
  const int64_t dim = data_shape[axis];
  const int index_rank = static_cast<int>(graph_.value(indices).type.shape.size());
  // data's index for the output's loop variables, with `axis` left at 0.
  Indices data_indices = Vars(0, axis);
  data_indices.push_back(ctx_.Const(0));
  for (int i = axis + 1; i < data_rank; ++i) {
    data_indices.push_back(Var(i - 1 + index_rank));
  }
  if (lowered_[indices].inline_constant) {  // one index: a plain view
    const int64_t index = static_cast<int64_t>(lowered_[indices].constant);
    if (index < -dim || index >= dim) {
      return NodeError(node, IndexOutOfRangeCause(index, axis, dim));
    }
    data_indices[axis] = ctx_.Const(index < 0 ? index + dim : index);
    DefineView(out, data, data_indices);
    return absl::OkStatus();
  }
  ComputeNode compute = PointwiseNode(node, out);
  LOOM_ASSIGN_OR_RETURN(int index,
                        IndexAt(compute, node, indices, Vars(axis, index_rank), axis, dim));
  if (lowered_[data].inline_constant && IsKnown(indices)) {
    DefineView(out, data, data_indices);  // one element: every index picks it
    return absl::OkStatus();
  }
  int64_t stride;
  const LoweredValue source = LinearSource(absl::StrCat(node.name, ".data"), data, axis, stride);
  const int root = IndirectLoad(compute, data, source, data_indices, stride, index);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// out[x] = data[x with x[axis] = indices[x]], over the indices' shape.
absl::Status Lowering::LowerGatherElements(const Node& node, const LoweringRule&) {
  const ValueId data = node.inputs[0], indices = node.inputs[1], out = node.outputs[0];
  const Shape& data_shape = graph_.value(data).type.shape;
  const int rank = static_cast<int>(data_shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), data_shape.size());
  ComputeNode compute = PointwiseNode(node, out);
  LOOM_ASSIGN_OR_RETURN(int index,
                        IndexAt(compute, node, indices, Vars(0, rank), axis, data_shape[axis]));
  Indices data_indices = Vars(0, rank);
  data_indices[axis] = ctx_.Const(0);
  int64_t stride;
  const LoweredValue source = LinearSource(absl::StrCat(node.name, ".data"), data, axis, stride);
  const int root = IndirectLoad(compute, data, source, data_indices, stride, index);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

int Lowering::Position(ComputeNode& compute, Expr value) {
  ScalarOp position{ScalarOp::Kind::kIndex, DType::kI64};
  position.index = value;
  return Step(compute, std::move(position));
}

int Lowering::AsI64(ComputeNode& compute, int step) {
  if (compute.body[step].dtype == DType::kI64) return step;
  ScalarOp cast{ScalarOp::Kind::kCast, DType::kI64};
  cast.args = {step};
  return Step(compute, std::move(cast));
}

int Lowering::And(ComputeNode& compute, int a, int b) {
  return a < 0 ? b : Call(compute, ScalarFn::kAnd, DType::kBool, {a, b});
}

BufferId Lowering::StoreTemp(ComputeNode compute, int root, DType dtype, const std::string& name) {
  compute.name = name;
  Buffer buffer;
  buffer.name = name;
  buffer.dtype = dtype;
  buffer.sizes = compute.ranges;
  program_.buffers.push_back(std::move(buffer));
  compute.output = static_cast<BufferId>(program_.buffers.size() - 1);
  compute.root = root;
  compute.store_index = ContiguousOffset(compute.ranges);
  program_.nodes.push_back(std::move(compute));
  return static_cast<BufferId>(program_.buffers.size() - 1);
}

namespace {

// A scatter's fold of its updates into the data, by its "reduction".
struct ScatterFold {
  ReduceKind reduce;  // over the updates that address an element
  ScalarFn combine;   // of the data's element with that fold
};

ScatterFold FoldOf(const std::string& reduction) {
  if (reduction == "add") return {ReduceKind::kSum, ScalarFn::kAdd};
  if (reduction == "mul") return {ReduceKind::kProd, ScalarFn::kMul};
  if (reduction == "max") return {ReduceKind::kMax, ScalarFn::kMax};
  return {ReduceKind::kMin, ScalarFn::kMin};
}

// The value a fold starts from, which leaves what it folds unchanged.
double FoldIdentity(ReduceKind kind, DType dtype) {
  switch (kind) {
    case ReduceKind::kSum:
      return 0;
    case ReduceKind::kProd:
      return 1;
    case ReduceKind::kMax:
      return IsFloat(dtype) ? -std::numeric_limits<double>::infinity()
                            : static_cast<double>(std::numeric_limits<int64_t>::min());
    default:
      return IsFloat(dtype) ? std::numeric_limits<double>::infinity()
                            : static_cast<double>(std::numeric_limits<int64_t>::max());
  }
}

}  // namespace

bool Lowering::Replaces(const Node& node) {
  return node.attrs.GetString("reduction", "none") == "none";
}

// A scatter is lowered as a pull from its output: element x of the output
// looks at every update position j (the reduction loops of `pull`, whose
// step `match` says whether update j addresses x, its index checked) and
// takes from the updates either the last j that matches ("none") or the
// fold of those that match, which a second node combines with data[x]. No
// store goes to a computed place, so any two elements may be computed in
// any order or at once; the cost is the output's size times the updates'.
// `position`: j's row-major position among the update positions;
// `update_coords`: the updates' coordinates of j in `pull`; for "none",
// `last_source`, `last_coords` and `last_stride`: the updates lowered so
// that update j's element for output x is at last_coords + last_stride *
// position.
absl::Status Lowering::FinishScatter(const Node& node, ComputeNode pull, int match, Expr position,
                                     absl::Span<const Expr> update_coords,
                                     const LoweredValue& last_source,
                                     absl::Span<const Expr> last_coords, int64_t last_stride) {
  const ValueId data = node.inputs[0], updates = node.inputs[2], out = node.outputs[0];
  const DType dtype = graph_.value(out).type.dtype;
  const int rank = static_cast<int>(pull.ranges.size());
  const bool replaces = Replaces(node);
  const ScatterFold fold = replaces ? ScatterFold{ReduceKind::kMax, ScalarFn::kMax}
                                    : FoldOf(node.attrs.GetString("reduction", "none"));
  pull.reduce = fold.reduce;
  const int chosen = replaces ? Position(pull, position) : Load(pull, updates, update_coords);
  const DType chosen_type = replaces ? DType::kI64 : dtype;
  const int none = Constant(pull, replaces ? -1 : FoldIdentity(fold.reduce, dtype), chosen_type);
  const int pulled = Call(pull, ScalarFn::kSelect, chosen_type, {match, chosen, none});
  const BufferId folded =
      StoreTemp(std::move(pull), pulled, chosen_type, absl::StrCat(node.name, ".pulled"));

  ComputeNode compute = PointwiseNode(node, out);
  const int old = Load(compute, data, Vars(0, rank));
  ScalarOp load{ScalarOp::Kind::kLoad, chosen_type};
  load.buffer = folded;
  load.index = ContiguousOffset(compute.ranges);
  const int found = Step(compute, std::move(load));
  int root;
  if (replaces) {  // found: the last update's position, or -1
    const int zero = Constant(compute, 0, DType::kI64);
    const int any = Call(compute, ScalarFn::kGe, DType::kBool, {found, zero});
    const int last = Call(compute, ScalarFn::kMax, DType::kI64, {found, zero});
    const int update = IndirectLoad(compute, updates, last_source, last_coords, last_stride, last);
    root = Call(compute, ScalarFn::kSelect, dtype, {any, update, old});
  } else {
    root = Call(compute, fold.combine, dtype, {old, found});
  }
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// Update j (the indices' and updates' element) goes to the output element
// at j with j[axis] = indices[j].
absl::Status Lowering::LowerScatterElements(const Node& node, const LoweringRule&) {
  const ValueId indices = node.inputs[1], updates = node.inputs[2], out = node.outputs[0];
  const Shape& shape = graph_.value(out).type.shape;
  const Shape& index_shape = graph_.value(indices).type.shape;
  const int rank = static_cast<int>(shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), shape.size());
  ComputeNode pull = PointwiseNode(node, out);
  pull.reduction_ranges = {index_shape[axis]};
  // Update j for output element x: x but along the axis, where the
  // reduction loop runs; a dim the indices have fewer of than the data is
  // read in range (modulo) and masked.
  Indices update_coords = Vars(0, rank);
  update_coords[axis] = Var(rank);
  int match = -1;
  for (int d = 0; d < rank; ++d) {
    if (d == axis || index_shape[d] == shape[d]) continue;
    update_coords[d] = ctx_.Mod(Var(d), index_shape[d]);
    const int bound = Constant(pull, static_cast<double>(index_shape[d]), DType::kI64);
    match =
        And(pull, match, Call(pull, ScalarFn::kLt, DType::kBool, {Position(pull, Var(d)), bound}));
  }
  LOOM_ASSIGN_OR_RETURN(int index, IndexAt(pull, node, indices, update_coords, axis, shape[axis]));
  const int target = AsI64(pull, index);
  match = And(pull, match,
              Call(pull, ScalarFn::kEq, DType::kBool, {target, Position(pull, Var(axis))}));
  Indices last_coords = update_coords;
  last_coords[axis] = ctx_.Const(0);
  int64_t stride = 0;
  LoweredValue source;
  if (Replaces(node)) {
    source = LinearSource(absl::StrCat(node.name, ".updates"), updates, axis, stride);
  }
  return FinishScatter(node, std::move(pull), match, Var(rank), update_coords, source, last_coords,
                       stride);
}

// Update slice j (the indices' leading dims) goes to the output at the k
// coordinates indices[j, :] (and every element of the remaining dims).
absl::Status Lowering::LowerScatterNd(const Node& node, const LoweringRule&) {
  const ValueId indices = node.inputs[1], updates = node.inputs[2], out = node.outputs[0];
  const Shape& shape = graph_.value(out).type.shape;
  const Shape& index_shape = graph_.value(indices).type.shape;
  const int rank = static_cast<int>(shape.size());
  const int tuple_rank = static_cast<int>(index_shape.size()) - 1;
  const int k = static_cast<int>(index_shape.back());
  ComputeNode pull = PointwiseNode(node, out);
  pull.reduction_ranges.assign(index_shape.begin(), index_shape.end() - 1);
  Indices tuple = Vars(rank, tuple_rank);
  int match = -1;
  for (int c = 0; c < k; ++c) {
    LOOM_ASSIGN_OR_RETURN(int index, IndexAt(pull, node, indices, tuple, c, shape[c], c));
    const int target = AsI64(pull, index);
    match =
        And(pull, match, Call(pull, ScalarFn::kEq, DType::kBool, {target, Position(pull, Var(c))}));
  }
  if (match < 0) match = Constant(pull, 1, DType::kBool);  // k = 0: the whole data
  Indices update_coords = tuple;
  for (int d = k; d < rank; ++d) update_coords.push_back(Var(d));
  // Update j's slice read from a contiguous copy: j's row-major position
  // times the slice's size, plus the place within the slice.
  LoweredValue source = lowered_[updates];
  if (Replaces(node) && (source.inline_constant || source.inline_node >= 0 ||
                         source.offset != ContiguousOffset(graph_.value(updates).type.shape))) {
    source = Materialize(absl::StrCat(node.name, ".updates"), updates);
  }
  Indices last_coords(tuple_rank, ctx_.Const(0));
  for (int d = k; d < rank; ++d) last_coords.push_back(Var(d));
  const int64_t slice = NumElements(absl::MakeConstSpan(shape).subspan(k));
  return FinishScatter(node, std::move(pull), match,
                       ContiguousOffset(Shape(index_shape.begin(), index_shape.end() - 1), rank),
                       update_coords, source, last_coords, slice);
}

// out[b, j, r] = data[b, indices[b, j, 0], .., indices[b, j, k - 1], r]
// (b: the batch_dims leading dims, j: the indices' other leading dims, r:
// the data's dims after the k indexed ones). The k indices (each known
// only at run time checked once, IndexAt) make one flat offset into the
// data, stored contiguously: an indirect load.
absl::Status Lowering::LowerGatherNd(const Node& node, const LoweringRule&) {
  const ValueId data = node.inputs[0], indices = node.inputs[1], out = node.outputs[0];
  const Shape& data_shape = graph_.value(data).type.shape;
  const Shape& index_shape = graph_.value(indices).type.shape;
  const int batch = static_cast<int>(node.attrs.GetInt("batch_dims", 0));
  const int tuple_rank = static_cast<int>(index_shape.size()) - 1;
  const int k = static_cast<int>(index_shape.back());
  const int data_rank = static_cast<int>(data_shape.size());
  ComputeNode compute = PointwiseNode(node, out);
  const Indices tuple = Vars(0, tuple_rank);
  const std::vector<int64_t> strides = ContiguousStrides(data_shape);
  int flat = -1;
  for (int c = 0; c < k; ++c) {
    const int axis = batch + c;
    LOOM_ASSIGN_OR_RETURN(int index,
                          IndexAt(compute, node, indices, tuple, axis, data_shape[axis], c));
    int term = AsI64(compute, index);
    if (strides[axis] != 1) {
      const int stride = Constant(compute, static_cast<double>(strides[axis]), DType::kI64);
      term = Call(compute, ScalarFn::kMul, DType::kI64, {term, stride});
    }
    flat = flat < 0 ? term : Call(compute, ScalarFn::kAdd, DType::kI64, {flat, term});
  }
  LoweredValue source = lowered_[data];
  if (source.inline_constant || source.inline_node >= 0 ||
      source.offset != ContiguousOffset(data_shape)) {
    source = Materialize(absl::StrCat(node.name, ".data"), data);
  }
  Indices data_indices = Vars(0, batch);
  for (int c = 0; c < k; ++c) data_indices.push_back(ctx_.Const(0));
  for (int d = batch + k; d < data_rank; ++d) {
    data_indices.push_back(Var(tuple_rank + d - batch - k));
  }
  const int root = IndirectLoad(compute, data, source, data_indices, 1, flat);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

void Lowering::DefineView(ValueId out, ValueId in, absl::Span<const Expr> in_indices) {
  const LoweredValue& source = lowered_[in];
  if (source.inline_constant) {
    lowered_[out] = source;
    return;
  }
  const Shape& out_shape = graph_.value(out).type.shape;
  if (source.inline_node >= 0) {
    LoweredValue view = source;
    std::vector<Expr>& coords = inline_templates_[source.inline_node].coords;
    view.coords_begin = static_cast<uint32_t>(coords.size());
    for (uint32_t i = 0; i < source.num_coords; ++i) {
      // By position: the list may move as it grows.
      const Expr coord = coords[source.coords_begin + i];
      coords.push_back(Reindex(coord, in_indices, out_shape));
    }
    lowered_[out] = view;
    return;
  }
  lowered_[out] =
      LoweredValue::Stored(source.buffer, Reindex(source.offset, in_indices, out_shape));
}

absl::Status Lowering::LowerReshape(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const Shape& out_shape = graph_.value(out).type.shape;
  Indices in_indices;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    // Input index i depends on the two shapes only (memoised).
    key_.Start(kReshapeIndex)
        .Add(static_cast<int64_t>(i))
        .Add(static_cast<int64_t>(in_shape.size()))
        .Add(in_shape)
        .Add(out_shape);
    in_indices.push_back(memo_.Get(key_, [&] {
      // The flat position of the output element, unflattened over the
      // input shape. A stride or dim of 0 means the tensor has no
      // elements: any index will do, as long as building it does not
      // divide by zero.
      const Expr flat = ContiguousOffset(out_shape);
      const int64_t stride = ContiguousStrides(in_shape)[i];
      return ctx_.Mod(ctx_.FloorDiv(flat, std::max<int64_t>(stride, 1)),
                      std::max<int64_t>(in_shape[i], 1));
    }));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

absl::Status Lowering::LowerTranspose(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const size_t rank = graph_.value(in).type.shape.size();
  AttrInts perm = IntsOrEmpty(node, "perm");
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(rank - 1 - i);
  }
  // out[x] = in[y] with y[perm[i]] = x[i].
  std::vector<Expr> in_indices(rank);
  for (size_t i = 0; i < rank; ++i) in_indices[perm[i]] = Var(static_cast<int>(i));
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

absl::Status Lowering::LowerSqueezeLike(const Node& node, const LoweringRule&) {
  // Squeeze and unsqueeze only add or drop dims of size 1, so the dims of
  // size > 1 appear in the same order in both shapes: pair them up.
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const Shape& out_shape = graph_.value(out).type.shape;
  std::vector<Expr> in_indices;
  size_t j = 0;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (in_shape[i] == 1) {
      in_indices.push_back(ctx_.Const(0));
      continue;
    }
    while (out_shape[j] == 1) ++j;
    in_indices.push_back(Var(static_cast<int>(j++)));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

absl::Status Lowering::LowerExpand(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  DefineView(out, in,
             BroadcastIndices(graph_.value(in).type.shape, graph_.value(out).type.shape.size()));
  return absl::OkStatus();
}

absl::Status Lowering::LowerSlice(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const Shape& out_shape = graph_.value(out).type.shape;
  const size_t rank = in_shape.size();
  const AttrInts starts = IntsOrEmpty(node, "starts");
  AttrInts axes = IntsOrEmpty(node, "axes");
  AttrInts steps = IntsOrEmpty(node, "steps");
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  Indices in_indices = Vars(0, static_cast<int>(rank));
  for (size_t i = 0; i < axes.size(); ++i) {
    const int axis = Axis(axes[i], rank);
    const int64_t dim = in_shape[axis];
    // ONNX Slice: negative starts count from the end, then clamp to the
    // valid range for the step's direction.
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    start =
        steps[i] > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    // A step only matters between two selected elements (|step| < dim
    // then); with one or none selected, any step as large as INT64_MIN
    // would only overflow the index arithmetic, so use 1.
    const int64_t step = out_shape[axis] <= 1 ? 1 : steps[i];
    in_indices[axis] = ctx_.Add(ctx_.Const(start), ctx_.Mul(Var(axis), step));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

// out[x] = the input's element offset + sum_i strides[i] * x[i] in row-major
// order: an affine view of a buffer that stores the input so (a padded
// image whose overlapping windows a convolution reads as one matrix); any
// other input (inlined, or a view in another order) is copied into one
// first, so that the view stays affine.
absl::Status Lowering::LowerAsStrided(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const std::vector<int64_t> strides = node.attrs.GetInts("strides");
  Expr flat = ctx_.Const(node.attrs.GetInt("offset", 0));
  for (size_t i = 0; i < strides.size(); ++i) {
    flat = ctx_.Add(flat, ctx_.Mul(Var(static_cast<int>(i)), strides[i]));
  }
  LoweredValue source = lowered_[in];
  std::vector<int64_t> coefficients(in_shape.size());
  int64_t base = 0;
  bool contiguous = source.inline_node < 0 && !source.inline_constant &&
                    AffineCoefficients(source.offset, absl::MakeSpan(coefficients), base);
  const std::vector<int64_t> contiguous_strides = ContiguousStrides(in_shape);
  for (size_t d = 0; contiguous && d < in_shape.size(); ++d) {
    contiguous = in_shape[d] == 1 || coefficients[d] == contiguous_strides[d];
  }
  if (!contiguous) {
    source = Materialize(absl::StrCat(node.name, ".input"), in);
    base = 0;
  }
  lowered_[out] = LoweredValue::Stored(source.buffer, ctx_.Add(flat, ctx_.Const(base)));
  return absl::OkStatus();
}

absl::Status Lowering::LowerSplit(const Node& node, const LoweringRule&) {
  // Each part is a view of the input from where the parts before it end
  // along the axis (shape inference has checked that they tile it).
  const ValueId in = node.inputs[0];
  const size_t rank = graph_.value(in).type.shape.size();
  const int axis = Axis(node.attrs.GetInt("axis", 0), rank);
  int64_t start = 0;
  for (ValueId out : node.outputs) {
    Indices in_indices = Vars(0, static_cast<int>(rank));
    in_indices[axis] = ctx_.Add(Var(axis), ctx_.Const(start));
    DefineView(out, in, in_indices);
    start += graph_.value(out).type.shape[axis];
  }
  return absl::OkStatus();
}

absl::Status Lowering::LowerTile(const Node& node, const LoweringRule&) {
  // out[x] = in[x % in_dims], per dim.
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  std::vector<Expr> in_indices;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    in_indices.push_back(in_shape[i] <= 1 ? ctx_.Const(0)
                                          : ctx_.Mod(Var(static_cast<int>(i)), in_shape[i]));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

void Lowering::BindGraphInputsAndWeights() {
  for (ValueId id : graph_.inputs()) {
    const BufferId buffer = NewBuffer(graph_.value(id), BufferKind::kInput, id);
    program_.inputs.push_back(buffer);
    lowered_[id] = LoweredValue::Stored(buffer, ContiguousOffset(graph_.value(id).type.shape));
  }
  std::vector<bool> is_output(graph_.values().size(), false);
  for (ValueId id : graph_.outputs()) is_output[id] = true;
  for (const auto* list : {&graph_.weights(), &graph_.constants()}) {
    for (ValueId id : *list) {
      // One that nothing reads (replaced by a folded copy) needs no buffer.
      if (readers_[id] == 0 && !is_output[id]) continue;
      const Value& value = graph_.value(id);
      const Tensor& data = graph_.initializer(id);
      if (value.kind == ValueKind::kConstant && data.num_elements() == 1) {
        lowered_[id].inline_constant = true;
        lowered_[id].constant = data.GetDouble(0);
        continue;
      }
      const BufferId buffer = NewBuffer(value, BufferKind::kWeight, id);
      program_.weights.push_back(buffer);
      lowered_[id] = LoweredValue::Stored(buffer, ContiguousOffset(value.type.shape));
    }
  }
}

void Lowering::BindGraphOutputs() {
  // An output that a compute node wrote contiguously becomes an output
  // buffer in place; anything else (a view, an input, a weight, an output
  // listed twice) is copied into one.
  std::vector<bool> claimed(program_.buffers.size(), false);
  std::vector<bool> copied(graph_.values().size(), false);
  const std::vector<ValueId>& outputs = graph_.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ValueId id = outputs[i];
    const LoweredValue& value = lowered_[id];
    const Shape& shape = graph_.value(id).type.shape;
    const bool own_buffer = !value.inline_constant && value.inline_node < 0 &&
                            program_.buffers[value.buffer].source == id;
    if (own_buffer && program_.buffers[value.buffer].kind == BufferKind::kTemp &&
        !claimed[value.buffer]) {
      program_.buffers[value.buffer].kind = BufferKind::kOutput;
      claimed[value.buffer] = true;
      program_.outputs.push_back(value.buffer);
      continue;
    }
    ComputeNode copy;
    copy.ranges = shape;
    const int root = Load(copy, id, Vars(0, static_cast<int>(shape.size())));
    copy.output = NewBuffer(graph_.value(id), BufferKind::kOutput, id);
    // The copy takes the value's name unless a buffer has it already: the
    // value's own (an input, a weight, an output listed before) or a copy.
    std::string& name = program_.buffers[copy.output].name;
    if (own_buffer || copied[id]) absl::StrAppend(&name, ".output", i);
    copied[id] = true;
    copy.name = absl::StrCat("copy_", name);
    claimed.push_back(true);
    copy.root = root;
    copy.store_index = ContiguousOffset(shape);
    program_.outputs.push_back(copy.output);
    program_.nodes.push_back(std::move(copy));
  }
}

absl::StatusOr<LoopProgram> Lowering::Run() {
  // Sizes, strides and indices in the loop program are products of
  // dimensions: within the limits, none of them can overflow.
  for (const Value& value : graph_.values()) {
    if (absl::Status s = CheckShapeLimits(value.type.shape); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("value '", value.name, "': ", s.message()));
    }
  }
  // About a buffer per value and a compute node per graph node: room for
  // them up front spares copying the lists as they grow (capacity left
  // unused is never touched, so it costs no memory).
  program_.buffers.reserve(graph_.values().size());
  program_.nodes.reserve(graph_.nodes().size() + graph_.outputs().size());
  BindGraphInputsAndWeights();
  const NodeList& nodes = graph_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const LoweringRule* rule = FactsOf(node.op).rule;
    if (rule == nullptr) {
      return NodeError(node,
                       "no lowering for this op (decompose it first, e.g. "
                       "with the 'decompose' pass)");
    }
    LOOM_RETURN_IF_ERROR((this->*(rule->lower))(node, *rule));
    // Nothing reads a node once it is lowered.
    if (release_ != nullptr) release_->ReleaseNodesBefore(i + 1);
  }
  BindGraphOutputs();
  return std::move(program_);
}

class LowerPass : public Pass {
 public:
  explicit LowerPass(const LowerOptions& options) : options_(options) {}
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kLoops); }

  absl::StatusOr<bool> Run(Module& module) override {
    if (module.loops.has_value()) {
      return absl::FailedPreconditionError(
          "the module is already lowered: lowering consumes the graph's "
          "nodes, so a pipeline lowers once");
    }
    LOOM_ASSIGN_OR_RETURN(LoopProgram program, LowerGraphReleasingNodes(module.graph, options_));
    module.loops = std::move(program);
    module.schedule.reset();
    module.source.reset();
    return true;
  }

 private:
  const LowerOptions options_;
};

LOOM_REGISTER_PASS("lower", "lower", [](const proto::PassSpec& spec) {
  LowerOptions options;
  const int64_t min_rows = spec.lower().gemm_min_rows();
  if (min_rows < -1) {
    return absl::StatusOr<std::unique_ptr<Pass>>(absl::InvalidArgumentError(
        absl::StrCat("lower: gemm_min_rows must be -1 (no gemm calls), 0 "
                     "(the default) or positive, got ",
                     min_rows)));
  }
  if (min_rows != 0) options.gemm_min_rows = min_rows;
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<LowerPass>(options));
});

}  // namespace

absl::StatusOr<LoopProgram> LowerGraph(const Graph& graph, const LowerOptions& options) {
  return Lowering(graph, options).Run();
}

absl::StatusOr<LoopProgram> LowerGraphReleasingNodes(Graph& graph, const LowerOptions& options) {
  absl::StatusOr<LoopProgram> program = Lowering(graph, options, &graph).Run();
  graph.ReplaceNodes({});  // also after a failure part way
  return program;
}

}  // namespace loom
