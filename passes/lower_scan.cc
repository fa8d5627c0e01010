// Lowering of a loop kept as one (decompose's rnn: LOOP, passes/
// decompose_rnn.cc): scan_begin(states..., sequences...), the nodes of one
// iteration, scan_end(next states...).
//
// Each state lives in a buffer of length + 1 slots, [length + 1, ...]: slot
// 0 the initial state (copied in before the loop), slot s + 1 the state
// after iteration s. The nodes between scan_begin and scan_end are lowered
// as if for the first iteration alone, reading the states at slot 0 and
// each sequence's element 0 (or its last, running backwards), and the next
// states are copied into slot 1. Then each of those compute nodes gets the
// iterations as its second loop, x1 (after the states' rows, x0: each row
// of the states runs through the iterations on its own, as a recurrent
// cell's batch entries do), and its loads and stores of the states' and
// sequences' buffers move by an iteration's slot or element each
// iteration. The nodes are a LoopRegion: the scheduler makes them one
// kernel whose loop over the iterations runs in order.
//
// scan_end's outputs are views of the states' buffers: the final states
// (slot length) and every iteration's state in time order (slots 1 ..
// length, or length .. 1 running backwards), so a recurrence's Y is its
// h's buffer itself. A state whose every-iteration output nothing reads
// (an LSTM's c) keeps two slots instead, iteration s reading slot s % 2 and
// writing the other.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/expr_analysis.h"
#include "ir/status_macros.h"
#include "passes/lower_internal.h"

namespace loom {
namespace lowering {
namespace {

// Whether `index`, over loops of `extents` (x0 the rows, x1 the
// iterations), stays in row x0 of a buffer whose rows are `row` elements
// apart in slots of `slot` elements: x0 * row (any multiple of x0 with a
// single row), plus whole slots, plus what the other loops add, which
// stays within [0, row).
bool StaysInItsRow(Expr index, absl::Span<const int64_t> extents, int64_t row, int64_t slot) {
  std::vector<int64_t> coefficients(extents.size());
  int64_t constant = 0;
  if (!AffineCoefficients(index, absl::MakeSpan(coefficients), constant) ||
      (coefficients[0] != row && extents[0] > 1) || coefficients[1] % slot != 0) {
    return false;
  }
  int64_t low = ((constant % slot) + slot) % slot, high = low;
  for (size_t i = 2; i < extents.size(); ++i) {
    const int64_t reach = coefficients[i] * (extents[i] - 1);
    (reach < 0 ? low : high) += reach;
  }
  return low >= 0 && high < row;
}

}  // namespace

void Lowering::AddScanRules(RuleTable& rules) {
  rules["scan_begin"] = {&Lowering::LowerScanBegin};
  rules["scan_end"] = {&Lowering::LowerScanEnd};
}

absl::Status Lowering::LowerScanBegin(const Node& node, const LoweringRule&) {
  if (open_scan_.has_value()) {
    return NodeError(
        node, absl::StrCat("a loop inside the loop of '", open_scan_->begin, "' is not supported"));
  }
  const size_t states = static_cast<size_t>(node.attrs.GetInt("states", 0));
  OpenScan scan;
  scan.begin = node.name;
  scan.reverse = node.attrs.GetInt("reverse", 0) != 0;
  scan.length = graph_.value(node.inputs[states]).type.shape[0];
  scan.rows = -1;
  for (size_t i = 0; i < states; ++i) {
    const Value& initial = graph_.value(node.inputs[i]);
    const Shape& shape = initial.type.shape;
    if (shape.empty() || (scan.rows >= 0 && shape[0] != scan.rows)) {
      return NodeError(node,
                       "the states must share their first dim, the rows that each run "
                       "through the loop on their own");
    }
    scan.rows = shape[0];
    Buffer buffer;
    buffer.name = absl::StrCat(graph_.value(node.outputs[i]).name, ".steps");
    buffer.dtype = initial.type.dtype;
    buffer.sizes = {scan.length + 1};
    buffer.sizes.insert(buffer.sizes.end(), shape.begin(), shape.end());
    program_.buffers.push_back(std::move(buffer));
    const BufferId slots = static_cast<BufferId>(program_.buffers.size() - 1);
    const Expr offset = ContiguousOffset(shape);
    AddNode(CopyInto(absl::StrCat(node.name, ".initial", i), node.inputs[i], slots, offset,
                     std::vector<int64_t>(shape.size(), 0)));
    lowered_[node.outputs[i]] = LoweredValue::Stored(slots, offset);
    scan.states.push_back(slots);
    scan.slots.push_back(NumElements(shape));
    scan.step_terms[slots] = ctx_.Mul(Var(1), scan.slots.back());
  }
  for (size_t j = states; j < node.inputs.size(); ++j) {
    const ValueId sequence = node.inputs[j];
    const Shape& shape = graph_.value(sequence).type.shape;
    LoweredValue source = lowered_[sequence];
    std::optional<int64_t> stride;
    if (!source.inline_constant && source.inline_node < 0) {
      stride = LinearCoefficient(source.offset, 0);
    }
    if (!stride.has_value() || scan.step_terms.contains(source.buffer)) {
      source = Materialize(absl::StrCat(node.name, ".sequence", j), sequence);
      stride = LinearCoefficient(source.offset, 0);
    }
    // Element 0 of the sequence: its dim 0 dropped, the others moved down.
    Indices first = {ctx_.Const(0)};
    for (size_t d = 1; d < shape.size(); ++d) first.push_back(Var(static_cast<int>(d) - 1));
    const Shape element(shape.begin() + 1, shape.end());
    const Expr offset = ctx_.Simplify(ctx_.Substitute(source.offset, first), element);
    lowered_[node.outputs[j]] = LoweredValue::Stored(source.buffer, offset);
    const Expr step = ctx_.Mul(Var(1), *stride);
    scan.step_terms[source.buffer] =
        scan.reverse ? ctx_.Sub(ctx_.Const(*stride * (scan.length - 1)), step) : step;
  }
  scan.first_node = static_cast<int>(program_.nodes.size());
  open_scan_ = std::move(scan);
  return absl::OkStatus();
}

absl::Status Lowering::LowerScanEnd(const Node& node, const LoweringRule&) {
  if (!open_scan_.has_value()) {
    return NodeError(node, "no scan_begin opens its loop before it");
  }
  OpenScan scan = *std::move(open_scan_);
  open_scan_.reset();
  const size_t states = scan.states.size();
  if (node.inputs.size() != states) {
    return NodeError(node, absl::StrCat("takes ", node.inputs.size(), " states, its scan_begin '",
                                        scan.begin, "' ", states));
  }
  for (size_t i = 0; i < states; ++i) {
    const Shape& shape = graph_.value(node.inputs[i]).type.shape;
    if (static_cast<int64_t>(NumElements(shape)) != scan.slots[i] || shape[0] != scan.rows) {
      return NodeError(node, absl::StrCat("state ", i, " has shape ", ShapeToString(shape),
                                          ", unlike its initial value's"));
    }
    const Expr next_slot = ctx_.Add(ctx_.Const(scan.slots[i]), ContiguousOffset(shape));
    AddNode(CopyInto(absl::StrCat(node.name, ".state", i), node.inputs[i], scan.states[i],
                     next_slot, std::vector<int64_t>(shape.size(), 0)));
  }
  LOOM_RETURN_IF_ERROR(LiftIntoLoop(node, scan));
  for (size_t i = 0; i < states; ++i) {
    const Shape& shape = graph_.value(node.inputs[i]).type.shape;
    const int64_t slot = scan.slots[i];
    // A state whose every-iteration output nothing reads (an LSTM's c)
    // needs two slots only, read and written in turn.
    const bool two_slots = readers_[node.outputs[states + i]] == 0;
    if (two_slots) AlternateSlots(scan, i);
    const int64_t last_slot = two_slots ? scan.length % 2 : scan.length;
    lowered_[node.outputs[i]] = LoweredValue::Stored(
        scan.states[i], ctx_.Add(ctx_.Const(slot * last_slot), ContiguousOffset(shape)));
    // Iteration x0's state: slot x0 + 1, or length - x0 running backwards.
    const Expr step =
        scan.reverse ? ctx_.Sub(ctx_.Const(scan.length), Var(0)) : ctx_.Add(Var(0), ctx_.Const(1));
    // (Read by nothing where the state keeps two slots.)
    lowered_[node.outputs[states + i]] = LoweredValue::Stored(
        scan.states[i], ctx_.Add(ctx_.Mul(step, slot), ContiguousOffset(shape, 1)));
  }
  return absl::OkStatus();
}

void Lowering::AlternateSlots(const OpenScan& scan, size_t state) {
  const BufferId buffer = scan.states[state];
  const int64_t slot = scan.slots[state];
  program_.buffers[buffer].sizes[0] = 2;
  // An index there is (what stays in a slot) + slot * (x1 + k), k = 0 for
  // a read and 1 for the write: it becomes slot * ((x1 + k) % 2).
  auto alternate = [&](Expr index, absl::Span<const int64_t> extents) {
    const Expr first = ctx_.Simplify(ctx_.Substitute(index, {Var(0), ctx_.Const(0)}), extents);
    const int64_t k = ConstantTerm(first) / slot;
    const Expr turn = ctx_.Mod(ctx_.Add(Var(1), ctx_.Const(k)), 2);
    return ctx_.Simplify(ctx_.Add(ctx_.Sub(first, ctx_.Const(k * slot)), ctx_.Mul(turn, slot)),
                         extents);
  };
  for (int v = scan.first_node; v < scan.end_node; ++v) {
    ComputeNode& node = program_.nodes[v];
    const std::vector<int64_t> extents = node.AllRanges();
    if (node.output == buffer) node.store_index = alternate(node.store_index, extents);
    for (ScalarOp& op : node.body) {
      if (op.kind == ScalarOp::Kind::kLoad && op.buffer == buffer) {
        op.index = alternate(op.index, extents);
      }
    }
  }
}

absl::Status Lowering::LiftIntoLoop(const Node& end, OpenScan& scan) {
  const int last = static_cast<int>(program_.nodes.size());
  for (int v = scan.first_node; v < last; ++v) {
    ComputeNode& node = program_.nodes[v];
    if (node.ranges.empty() || node.ranges[0] != scan.rows) {
      return NodeError(end,
                       absl::StrCat("compute node '", node.name, "' of the loop from '", scan.begin,
                                    "' does not run over the states' ", scan.rows, " rows first"));
    }
    // A library call would run all iterations at once: the body's loops
    // define the result as well.
    node.extern_op = ExternOp::kNone;
    const int vars = static_cast<int>(node.ranges.size() + node.reduction_ranges.size());
    std::vector<Expr> moved = {Var(0)};  // x0 stays; x_i becomes x_{i+1}
    for (int i = 1; i < vars; ++i) moved.push_back(Var(i + 1));
    node.ranges.insert(node.ranges.begin() + 1, scan.length);
    const std::vector<int64_t> extents = node.AllRanges();
    auto lift = [&](BufferId buffer, Expr index) {
      Expr lifted = ctx_.Substitute(index, moved);
      if (auto it = scan.step_terms.find(buffer); it != scan.step_terms.end()) {
        lifted = ctx_.Add(lifted, it->second);
      }
      return ctx_.Simplify(lifted, extents);
    };
    node.store_index = lift(node.output, node.store_index);
    for (ScalarOp& op : node.body) {
      if (op.kind == ScalarOp::Kind::kLoad) {
        op.index = lift(op.buffer, op.index);
      } else if (op.kind == ScalarOp::Kind::kIndex) {
        op.index = ctx_.Simplify(ctx_.Substitute(op.index, moved), extents);
      }
    }
  }
  // The rows run on their own (the kernel shares them over the threads):
  // what the loop writes, each row reads and writes in its own row only.
  absl::flat_hash_map<BufferId, std::pair<int64_t, int64_t>> rows;  // row, slot
  for (int v = scan.first_node; v < last; ++v) {
    const Buffer& buffer = program_.buffers[program_.nodes[v].output];
    const int64_t elements = NumElements(buffer.sizes);
    rows[program_.nodes[v].output] = {elements / scan.rows, elements};
  }
  for (size_t i = 0; i < scan.states.size(); ++i) {
    rows[scan.states[i]] = {scan.slots[i] / scan.rows, scan.slots[i]};
  }
  for (int v = scan.first_node; v < last; ++v) {
    const ComputeNode& node = program_.nodes[v];
    const std::vector<int64_t> extents = node.AllRanges();
    // Where the node leaves its row of a buffer the loop writes, if it does
    // (a gather may read any row).
    std::optional<std::pair<BufferId, Expr>> astray;
    auto check = [&](BufferId buffer, Expr index, bool gather) {
      const auto it = rows.find(buffer);
      if (astray.has_value() || it == rows.end()) return;
      if (gather || !StaysInItsRow(index, extents, it->second.first, it->second.second)) {
        astray = {buffer, index};
      }
    };
    check(node.output, node.store_index, false);
    for (const ScalarOp& op : node.body) {
      if (op.kind == ScalarOp::Kind::kLoad) check(op.buffer, op.index, !op.args.empty());
    }
    if (astray.has_value()) {
      return NodeError(
          end, absl::StrCat("compute node '", node.name, "' of the loop from '", scan.begin,
                            "' reaches another row of '", program_.buffers[astray->first].name,
                            "' (at ", ToString(astray->second),
                            ") than its own: each of the states' rows must run "
                            "through the loop on its own"));
    }
  }
  program_.loop_regions.push_back({scan.first_node, last});
  scan.end_node = last;
  return absl::OkStatus();
}

}  // namespace lowering
}  // namespace loom
