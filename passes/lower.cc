#include "passes/lower.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "passes/lower_internal.h"
#include "passes/lower_options.pb.h"
#include "passes/pass.h"

namespace loom {
namespace lowering {

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
  for (ValueId id : graph_.outputs()) {
    reads_[id] = kUnbounded;
    ++readers_[id];  // the load of its copy into an output buffer, where it needs one
  }
  auto size = [&](ValueId id) {
    return static_cast<double>(NumElements(graph_.value(id).type.shape));
  };
  for (auto node = graph_.nodes().rbegin(); node != graph_.nodes().rend(); ++node) {
    const OpFacts facts = FactsOf(node->op);
    if (facts.def != nullptr && facts.def->is_view) {
      for (ValueId out : node->outputs) {  // split's parts, one for the rest
        reads_[node->inputs[0]] += reads_[out];
        readers_[node->inputs[0]] += readers_[out];
      }
      continue;
    }
    const InputReads reads_per =
        facts.rule != nullptr ? facts.rule->reads : InputReads::kPerOutputElement;
    if (facts.rule != nullptr && facts.rule->may_view) {
      readers_[node->inputs[0]] += readers_[node->outputs[0]];
    }
    // Each input is read once per iteration of the op's loops.
    double iterations = size(node->outputs[0]);
    if (reads_per == InputReads::kPerProductTerm) {
      iterations *= graph_.value(node->inputs[0]).type.shape.back();
    }
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const ValueId input = node->inputs[i];
      ++readers_[input];
      // Read at computed places, or (a scatter's) once per element of the
      // output and of the updates (LowerScatterElements): stored.
      if (facts.def != nullptr && facts.def->ReadsByIndex(static_cast<int>(i))) {
        reads_[input] = kUnbounded;
      } else if (reads_per == InputReads::kPerPair) {
        reads_[input] += size(input) * size(input);
      } else {
        reads_[input] += std::max(iterations, size(input));
      }
    }
  }
}

const Lowering::RuleTable& Lowering::Rules() {
  static const RuleTable* const rules = [] {
    auto* table = new RuleTable;
    for (auto* add_family : {AddPointwiseRules, AddReductionRules, AddMatmulRules,
                             AddConcatPadRules, AddIndexRules, AddViewRules, AddScanRules}) {
      add_family(*table);
    }
    return table;
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

std::optional<Lowering::InlineChoice> Lowering::DecideInline(const ComputeNode& node,
                                                             ValueId out) const {
  // Each template is a copy of everything it inlined: without a cap on its
  // size, a chain of n pointwise ops would hold O(n^2) steps.
  constexpr int64_t kMaxInlineSteps = 64;
  // Each reader gets a copy of the body, too: a value that very many
  // readers each read a part of (through views: an unrolled recurrence's
  // steps reading their rows of the input projection plus bias) is stored
  // once instead, and every reader loads it. That adds no memory traffic
  // where its operands then stay inside its kernel (a matmul and its bias
  // add), and keeps the program from growing with body x readers.
  constexpr int32_t kMaxInlineReaders = 64;
  // A graph output, or a value a reader needs in memory, is stored anyway.
  if (node.reduce != ReduceKind::kNone || std::isinf(reads_[out])) return std::nullopt;
  const int64_t steps = static_cast<int64_t>(node.body.size());
  const int64_t elements = NumElements(graph_.value(out).type.shape);
  if (steps > kMaxInlineSteps) {
    return InlineChoice{InlineReason::kTooManySteps, steps, kMaxInlineSteps};
  }
  if (readers_[out] > kMaxInlineReaders && steps > 1) {
    return InlineChoice{InlineReason::kTooManyReaders, readers_[out], kMaxInlineReaders};
  }
  if (reads_[out] > elements) {
    return InlineChoice{InlineReason::kReadRepeatedly, static_cast<int64_t>(reads_[out]), elements};
  }
  return InlineChoice{InlineReason::kInlined, steps, kMaxInlineSteps};
}

void Lowering::Finish(ComputeNode node, ValueId out, int root) {
  const Value& value = graph_.value(out);
  if (const std::optional<InlineChoice> choice = DecideInline(node, out); choice.has_value()) {
    const int32_t place = static_cast<int32_t>(program_.inline_decisions.size());
    const bool inlines = choice->reason == InlineReason::kInlined;
    if (options_.record_inline_decisions) {
      // An inlined value has no compute node to keep its name.
      program_.inline_decisions.push_back({inlines ? std::move(node.name) : node.name,
                                           choice->reason, choice->amount, choice->limit});
    }
    if (inlines) {
      ++program_.inlined_values;
      NoteInlineReaders(-1 - place);
      LoweredValue inlined;
      inlined.inline_node = NewTemplate();
      InlineTemplate& tmpl = inline_templates_[inlined.inline_node];
      tmpl.body = std::move(node.body);
      tmpl.root = root;
      tmpl.readers_left = readers_[out];
      tmpl.decision = options_.record_inline_decisions ? place : -1;
      inlined.num_coords = static_cast<uint16_t>(value.type.shape.size());
      for (int i = 0; i < inlined.num_coords; ++i) tmpl.coords.push_back(Var(i));
      lowered_[out] = inlined;
      return;
    }
  }
  node.output = NewBuffer(value, BufferKind::kTemp, out);
  node.root = root;
  // A body grows by doubling while it inlines others: the program keeps
  // it, so it gives back the slack (an unrolled recurrence's bodies are
  // most of the loop program's memory).
  node.body.shrink_to_fit();
  node.store_index = ContiguousOffset(node.ranges);
  lowered_[out] = LoweredValue::Stored(node.output, ContiguousOffset(value.type.shape));
  AddNode(std::move(node));
}

void Lowering::AddNode(ComputeNode node) {
  NoteInlineReaders(static_cast<int32_t>(program_.nodes.size()));
  program_.nodes.push_back(std::move(node));
}

void Lowering::NoteInlineReaders(int32_t reader) {
  for (int32_t place : inlined_into_next_) {
    absl::InlinedVector<int32_t, 2>& readers = program_.inline_decisions[place].readers;
    if (readers.empty() || readers.back() != reader) readers.push_back(reader);
  }
  inlined_into_next_.clear();
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
    if (options_.record_inline_decisions) inlined_into_next_.push_back(tmpl.decision);
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
  AddNode(CopyInto(name, value, buffer, offset, std::vector<int64_t>(v.type.shape.size())));
  return LoweredValue::Stored(buffer, offset);
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
  AddNode(std::move(compute));
  return static_cast<BufferId>(program_.buffers.size() - 1);
}

void Lowering::BindGraphInputsAndWeights() {
  for (ValueId id : graph_.inputs()) {
    const BufferId buffer = NewBuffer(graph_.value(id), BufferKind::kInput, id);
    program_.inputs.push_back(buffer);
    lowered_[id] = LoweredValue::Stored(buffer, ContiguousOffset(graph_.value(id).type.shape));
  }
  for (const auto* list : {&graph_.weights(), &graph_.constants()}) {
    for (ValueId id : *list) {
      // One that nothing reads (replaced by a folded copy) needs no buffer.
      if (readers_[id] == 0) continue;
      const Value& value = graph_.value(id);
      if (value.kind == ValueKind::kConstant && NumElements(value.type.shape) == 1) {
        lowered_[id].inline_constant = true;
        lowered_[id].constant = graph_.initializer(id).GetDouble(0);
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
    AddNode(std::move(copy));
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
  FindConcatPrefixes();
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
  if (open_scan_.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", open_scan_->begin, "' (scan_begin): no scan_end closes its loop"));
  }
  BindGraphOutputs();
  return std::move(program_);
}

}  // namespace lowering

namespace {

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
    LowerOptions options = options_;
    options.record_inline_decisions = module.record_decisions;
    LOOM_ASSIGN_OR_RETURN(LoopProgram program, LowerGraphReleasingNodes(module.graph, options));
    module.loops = std::move(program);
    module.schedule.reset();
    module.source.reset();
    return true;
  }

 private:
  const LowerOptions options_;
};

LOOM_REGISTER_PASS_WITH_OPTIONS(
    "lower", "lower", proto::LowerOptions, [](const proto::LowerOptions& given) {
      LowerOptions options;
      const int64_t min_rows = given.gemm_min_rows();
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
  return lowering::Lowering(graph, options).Run();
}

absl::StatusOr<LoopProgram> LowerGraphReleasingNodes(Graph& graph, const LowerOptions& options) {
  absl::StatusOr<LoopProgram> program = lowering::Lowering(graph, options, &graph).Run();
  graph.ReplaceNodes({});  // also after a failure part way
  return program;
}

}  // namespace loom
