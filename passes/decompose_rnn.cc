// lstm, gru and rnn unrolled over time into primitives, with the structure
// Inductor gives aten.lstm:
//
//   once per node        X as rows [seq*batch, input] (batch-first X is
//                        transposed to seq-first first); the sequence masks
//   once per chunk       xw = X_rows @ W_d^T + (Wb_d + Rb_d): ONE matmul for
//   of steps             the input projection of the chunk's time steps, and
//                        one split of it into each step's rows (views); a
//                        chunk is every step unless xw would outgrow the
//                        cache (kProjectionChunkBytes)
//   once per step        a matmul of the state with R_d^T, added to the
//                        step's rows of xw, then the cell's pointwise math on
//                        parts of the gates (sigmoid / tanh / relu, mul, add)
//   once per direction   every step's state concatenated once, [seq*batch, H]
//   once per node        the directions stacked into Y; Y_h / Y_c from the
//                        last step
//
// so the graph grows linearly in seq (and in layers, one node per layer).
//
// Kept as a loop (DecomposeOptions rnn: LOOP, or AUTO where LoopPays), a
// direction is instead
//
//   once                 xw = X_rows @ W_d^T, all steps
//   the loop             scan_begin(h0, [c0,] xw as [seq, batch, gates*H]
//                        [, the masks]) gives the state and the step's rows;
//                        one step (its rows of xw plus Wb_d + Rb_d), its
//                        product with R_d a sum of R_d^T's rows scaled by
//                        the state's elements (lowered as loops, which the
//                        C++ backend runs for blocks of rows at once); then
//                        scan_end(h', [c']) gives the last state and the
//                        state after every step, [seq, batch, H]
//
// so the graph's size does not depend on seq; lowering runs the nodes
// between scan_begin and scan_end once per step (passes/lower_scan.cc).
// A backward direction visits steps seq-1 .. 0. With runtime (or uneven)
// sequence_lens, each step keeps the old state where step >= len[b]
// (where(mask, new, old)), which also makes a backward entry start at its
// own last valid step, and Y is zeroed past each entry's length at the end.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/dtype.h"
#include "ir/ops/recurrent.h"
#include "ir/status_macros.h"
#include "ir/tensor.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

Attrs AxisAttr(int64_t axis) {
  Attrs attrs;
  attrs.Set("axis", axis);
  return attrs;
}

// A split along `axis` into parts of these sizes.
Attrs SplitAttrs(int64_t axis, AttrInts sizes) {
  Attrs attrs = AxisAttr(axis);
  attrs.Set("split", std::move(sizes));
  return attrs;
}

const char* ActivationOp(RecurrentActivation activation) {
  switch (activation) {
    case RecurrentActivation::kSigmoid:
      return "sigmoid";
    case RecurrentActivation::kTanh:
      return "tanh";
    case RecurrentActivation::kRelu:
      return "relu";
  }
  return "tanh";
}

// Whether sequence_lens, when given, is a compile-time tensor equal to seq
// for every batch entry, so that no step needs masking.
bool NeedsMasking(const Node& node, const RecurrentSpec& spec, const Graph& graph) {
  if (!spec.Has(kRnnSequenceLens)) return false;
  const ValueId lens = node.inputs[kRnnSequenceLens];
  if (!graph.HasInitializer(lens)) return true;
  const Tensor& data = graph.initializer(lens);
  for (int64_t b = 0; b < data.num_elements(); ++b) {
    if (data.GetInt(b) != spec.seq) return true;
  }
  return false;
}

// The input projection of this many bytes at most is computed at once, just
// before the steps that read it: one product for a long sequence of a large
// batch would write xw to memory and each step read it back (seed LSTM,
// batch 64, sequence 4,096: xw is 256 MiB). A chunk keeps it in the L2
// cache while still giving the product this many rows at least.
constexpr int64_t kProjectionChunkBytes = int64_t{256} << 10;
constexpr int64_t kProjectionChunkMinRows = 128;

// The state of one direction between steps.
struct State {
  ValueId h;
  ValueId c;  // lstm only
};

// One direction's operands, prepared once.
struct DirectionOperands {
  ValueId w_t;        // [input, gates*H]: W^T
  ValueId bias;       // [gates*H]: the biases that fold into xw, or -1
  ValueIds xw_steps;  // by time step: its rows of X W^T + bias, [batch, gates*H]
  // R^T, which the state multiplies, [H, gates*H] (gru, linear_before_reset
  // 0: z's and r's columns, [H, 2H]), and that gru's h columns, [H, H]
  // (else -1).
  ValueId r;
  ValueId r_h;
  ValueId rb_h;  // gru, linear_before_reset 1 with B: [H], else -1
  ValueId p[3];  // lstm with P: i, o, f peepholes [H], else -1
  const std::vector<RecurrentActivation>* activations;
};

// Builds a recurrence's decomposition: unrolled, or kept as a loop.
class RecurrenceDecomposer {
 public:
  RecurrenceDecomposer(const Node& node, const RecurrentSpec& spec, DecompositionBuilder& b,
                       bool loop)
      : node_(node), spec_(spec), b_(b), loop_(loop) {}

  absl::Status Run();

 private:
  int64_t H() const { return spec_.hidden; }
  int64_t B() const { return spec_.batch; }
  ValueId In(int index) const { return node_.inputs[index]; }

  // --- Building blocks -----------------------------------------------------
  ValueId Op(const std::string& suffix, const char* op, absl::Span<const ValueId> inputs,
             Attrs attrs = {}) {
    return b_.Add(suffix, op, inputs, std::move(attrs));
  }
  ValueId Reshape(const std::string& suffix, ValueId x, Shape shape) {
    return Op(suffix, "reshape", {x}, Ints("shape", std::move(shape)));
  }
  ValueId Transpose(const std::string& suffix, ValueId x) { return Op(suffix, "transpose", {x}); }
  // x[start:end] along `axis`.
  ValueId Slice(const std::string& suffix, ValueId x, int64_t axis, int64_t start, int64_t end) {
    Attrs attrs;
    attrs.Reserve(3);  // a slice per gate and step: one allocation, not three
    attrs.Set("starts", AttrInts{start});
    attrs.Set("ends", AttrInts{end});
    attrs.Set("axes", AttrInts{axis});
    return Op(suffix, "slice", {x}, std::move(attrs));
  }
  // Direction d's part of a weight whose first axis is num_directions,
  // reshaped to `shape` (the rest of the dims).
  ValueId OfDirection(const std::string& suffix, ValueId x, int64_t d, Shape shape) {
    if (spec_.num_directions == 2) {
      x = Slice(absl::StrCat(suffix, "_slice"), x, 0, d, d + 1);
    }
    return Reshape(suffix, x, std::move(shape));
  }
  ValueId Clip(const std::string& suffix, ValueId x) {
    if (!spec_.has_clip) return x;
    const ValueId low = Op(absl::StrCat(suffix, "_clip_lo"), "maximum", {x, clip_low_});
    return Op(absl::StrCat(suffix, "_clip"), "minimum", {low, clip_high_});
  }
  ValueId Activate(const std::string& suffix, int which, const DirectionOperands& ops, ValueId x) {
    return Op(suffix, ActivationOp((*ops.activations)[which]), {x});
  }

  // --- Stages --------------------------------------------------------------
  void PrepareShared();
  DirectionOperands PrepareDirection(int64_t d);
  int64_t StepsPerProjection() const;
  // The input projection of the `count` steps from the k-th one `d` visits,
  // into ops.xw_steps.
  void ProjectInput(int64_t d, int64_t k, int64_t count, DirectionOperands& ops);
  State InitialState(int64_t d);
  ValueId InitialStateOf(int input, int64_t d, const std::string& suffix);
  ValueId StepMask(int64_t t);
  // One direction's outputs: every step's h as rows [seq*batch, H] in time
  // order, and the last state.
  struct DirectionOutputs {
    ValueId y_rows;
    State last;
  };
  DirectionOutputs Unrolled(int64_t d, DirectionOperands& ops);
  DirectionOutputs Looped(int64_t d, const DirectionOperands& ops);
  // The step from `state`, its rows of xw `xw` and (masking) its mask.
  State Step(const std::string& p, const DirectionOperands& ops, ValueId xw, ValueId mask,
             const State& state);
  // state [batch, H] times weight [H, n] -> [batch, n]: a matmul
  // (unrolled), or a sum over the weight's rows scaled by the state's
  // elements (a loop's step, lowered as loops, not a library call).
  ValueId StateProduct(const std::string& suffix, ValueId state, ValueId weight);
  State LstmStep(const std::string& p, const DirectionOperands& ops, ValueId xw,
                 const State& state);
  // An LSTM step's gates: i, f activated, o too unless there are peepholes,
  // and c before its activation.
  struct Gates {
    ValueId i, o, f, c;
  };
  Gates ActivateGatesTogether(const std::string& p, const DirectionOperands& ops, ValueId gates);
  Gates ActivateGatesOneByOne(const std::string& p, const DirectionOperands& ops, ValueId gates,
                              ValueId cell);
  ValueId Peephole(const std::string& p, const std::string& name, const DirectionOperands& ops,
                   ValueId pre, int k, ValueId cell);
  State GruStep(const std::string& p, const DirectionOperands& ops, ValueId xw, const State& state);
  State RnnStep(const std::string& p, const DirectionOperands& ops, ValueId xw, const State& state);
  // Writes output `output` as the directions' `parts` stacked on the
  // num_directions axis; each part is reshaped to `part_shape` first.
  void WriteStacked(const std::string& suffix, const std::vector<ValueId>& parts, Shape part_shape,
                    int64_t axis, int output);

  const Node& node_;
  const RecurrentSpec& spec_;
  DecompositionBuilder& b_;
  const bool loop_;

  ValueId x_rows_ = -1;              // [seq*batch, input], seq-major
  ValueId mask_rows_ = -1;           // [seq*batch, 1] bool, or -1: no masking
  std::vector<ValueId> step_masks_;  // [batch, 1] per step, made on demand
  ValueId zero_ = -1;                // scalar 0, when masking
  ValueId one_ = -1;                 // scalar 1, for input_forget
  ValueId clip_low_ = -1;
  ValueId clip_high_ = -1;
};

void RecurrenceDecomposer::PrepareShared() {
  const int64_t rows = spec_.seq * B();
  ValueId x = In(kRnnX);
  if (spec_.batch_first) {
    x = Op("x_seq_first", "transpose", {x}, Ints("perm", {1, 0, 2}));
  }
  x_rows_ = Reshape("x_rows", x, {rows, spec_.input});

  const DType dtype = spec_.dtype;
  if (spec_.input_forget) one_ = b_.Scalar("one", 1.0, dtype);
  if (spec_.has_clip) {
    clip_low_ = b_.Scalar("clip_low", -spec_.clip, dtype);
    clip_high_ = b_.Scalar("clip_high", spec_.clip, dtype);
  }
  if (NeedsMasking(node_, spec_, b_.graph())) {
    // mask[t, b] = t < len[b], as rows [seq*batch, 1] like X's.
    const ValueId lens = In(kRnnSequenceLens);
    Tensor steps(b_.type(lens).dtype, {spec_.seq, 1});
    for (int64_t t = 0; t < spec_.seq; ++t) steps.SetInt(t, t);
    const ValueId lens_row = Reshape("lens_row", lens, {1, B()});
    const ValueId mask = Op("mask", "less", {b_.Constant("steps", steps), lens_row});
    mask_rows_ = Reshape("mask_rows", mask, {rows, 1});
    zero_ = b_.Scalar("zero", 0.0, dtype);
    step_masks_.assign(spec_.seq, -1);
  }
}

DirectionOperands RecurrenceDecomposer::PrepareDirection(int64_t d) {
  const std::string p = absl::StrCat("d", d, "/");
  const int64_t G = spec_.gates;
  const bool gru_reset_first = spec_.cell == RecurrentCell::kGru && !spec_.linear_before_reset;
  DirectionOperands ops{};
  ops.activations = &spec_.activations[d];
  ops.rb_h = -1;
  ops.r_h = -1;
  for (ValueId& peephole : ops.p) peephole = -1;

  const ValueId w = OfDirection(p + "w", In(kRnnW), d, {G * H(), spec_.input});
  ops.w_t = Transpose(p + "w_t", w);
  ops.bias = -1;
  if (spec_.Has(kRnnB)) {
    const ValueId bias = OfDirection(p + "b", In(kRnnB), d, {2 * G * H()});
    const ValueId wb = Slice(p + "wb", bias, 0, 0, G * H());
    ValueId rb = Slice(p + "rb", bias, 0, G * H(), 2 * G * H());
    if (spec_.cell == RecurrentCell::kGru && spec_.linear_before_reset) {
      // Rbh sits inside r . (H Rh^T + Rbh): only Rbz and Rbr fold into xw.
      ops.rb_h = Slice(p + "rb_h", rb, 0, 2 * H(), 3 * H());
      const ValueId rb_zr = Slice(p + "rb_zr", rb, 0, 0, 2 * H());
      rb = Op(p + "rb_folded", "concat",
              {rb_zr, b_.Constant(p + "zero_h", Tensor(spec_.dtype, {H()}))}, AxisAttr(0));
    }
    ops.bias = Op(p + "bias", "add", {wb, rb});
  }
  if (!loop_) ops.xw_steps.assign(spec_.seq, -1);

  ops.r = OfDirection(p + "r", In(kRnnR), d, {G * H(), H()});
  if (gru_reset_first) {
    // (r . H) Rh^T needs r first: z and r's rows multiply H on their own.
    ops.r_h = Slice(p + "r_h", ops.r, 0, 2 * H(), 3 * H());
    ops.r = Slice(p + "r_zr", ops.r, 0, 0, 2 * H());
  }
  ops.r = Transpose(p + "r_t", ops.r);
  if (ops.r_h >= 0) ops.r_h = Transpose(p + "r_h_t", ops.r_h);
  if (spec_.Has(kRnnP)) {
    const ValueId peepholes = OfDirection(p + "p", In(kRnnP), d, {3 * H()});
    const char* names[] = {"p_i", "p_o", "p_f"};
    for (int k = 0; k < 3; ++k) {
      ops.p[k] = Slice(p + names[k], peepholes, 0, k * H(), (k + 1) * H());
    }
  }
  return ops;
}

int64_t RecurrenceDecomposer::StepsPerProjection() const {
  const int64_t step_bytes = B() * spec_.gates * H() * DTypeSize(spec_.dtype);
  const int64_t fit = std::max<int64_t>(1, kProjectionChunkBytes / step_bytes);
  const int64_t enough_rows = (kProjectionChunkMinRows + B() - 1) / B();
  return std::min(spec_.seq, std::max(fit, enough_rows));
}

void RecurrenceDecomposer::ProjectInput(int64_t d, int64_t k, int64_t count,
                                        DirectionOperands& ops) {
  // The steps' times are [first, first + count), visited forwards or back.
  const int64_t first = spec_.Backward(d) ? spec_.seq - k - count : k;
  const bool whole = count == spec_.seq;
  const std::string p =
      whole ? absl::StrCat("d", d, "/") : absl::StrCat("d", d, "/from_t", first, "/");
  const ValueId x =
      whole ? x_rows_ : Slice(p + "x_rows", x_rows_, 0, first * B(), (first + count) * B());
  ValueId xw = Op(p + "xw", "matmul", {x, ops.w_t});
  if (ops.bias >= 0) xw = Op(p + "xw_bias", "add", {xw, ops.bias});
  // Each step's rows, as views: one split (as aten's lstm unbinds its
  // input), not a slice per step.
  std::vector<std::string> step_names;
  step_names.reserve(count);
  for (int64_t t = first; t < first + count; ++t) {
    step_names.push_back(absl::StrCat("d", d, "/t", t, "/xw"));
  }
  const ValueIds steps = b_.AddWithOutputs(p + "xw_steps", "split", {xw}, step_names, AxisAttr(0));
  std::copy(steps.begin(), steps.end(), ops.xw_steps.begin() + first);
}

ValueId RecurrenceDecomposer::InitialStateOf(int input, int64_t d, const std::string& suffix) {
  // Zeros of its own, not shared with the other state: a kernel whose
  // parameters are one buffer twice prints unlike the later steps' kernels,
  // which then cannot share its function.
  if (!spec_.Has(input)) return b_.Constant(suffix + "_zero", Tensor(spec_.dtype, {B(), H()}));
  ValueId state = In(input);
  if (spec_.num_directions == 2) {
    // The direction axis: 0 (layout 0) or 1 (layout 1).
    state = Slice(suffix + "_slice", state, spec_.batch_first ? 1 : 0, d, d + 1);
  }
  return Reshape(suffix, state, {B(), H()});
}

State RecurrenceDecomposer::InitialState(int64_t d) {
  const std::string p = absl::StrCat("d", d, "/");
  State state;
  state.h = InitialStateOf(kRnnInitialH, d, p + "h0");
  state.c = spec_.cell == RecurrentCell::kLstm ? InitialStateOf(kRnnInitialC, d, p + "c0") : -1;
  return state;
}

ValueId RecurrenceDecomposer::StepMask(int64_t t) {
  if (step_masks_[t] < 0) {
    step_masks_[t] = Slice(absl::StrCat("t", t, "/mask"), mask_rows_, 0, t * B(), (t + 1) * B());
  }
  return step_masks_[t];
}

// Gates i, o, f, c (blocks of xw's columns).
State RecurrenceDecomposer::LstmStep(const std::string& p, const DirectionOperands& ops, ValueId xw,
                                     const State& state) {
  const bool peepholes = spec_.Has(kRnnP);
  const ValueId hr = StateProduct(p + "hr", state.h, ops.r);
  ValueId gates = Op(p + "gates", "add", {xw, hr});
  // Without peepholes every pre-activation is final here: clip them at once.
  if (!peepholes) gates = Clip(p + "gates", gates);
  const Gates g = peepholes || spec_.input_forget ? ActivateGatesOneByOne(p, ops, gates, state.c)
                                                  : ActivateGatesTogether(p, ops, gates);
  const ValueId candidate = Activate(p + "c_cand", 1, ops, g.c);
  const ValueId keep = Op(p + "c_keep", "mul", {g.f, state.c});
  const ValueId write = Op(p + "c_write", "mul", {g.i, candidate});
  State next;
  next.c = Op(p + "c", "add", {keep, write});
  const ValueId o =
      peepholes ? Activate(p + "o", 0, ops, Peephole(p, "o", ops, g.o, 1, next.c)) : g.o;
  next.h = Op(p + "h", "mul", {o, Activate(p + "c_act", 2, ops, next.c)});
  return next;
}

// i, o and f share an activation and are adjacent columns: the gates split
// in two, and one node activates all three (a node fewer a step).
RecurrenceDecomposer::Gates RecurrenceDecomposer::ActivateGatesTogether(
    const std::string& p, const DirectionOperands& ops, ValueId gates) {
  const ValueIds halves =
      b_.AddWithOutputs(p + "gates_split", "split", {gates}, {p + "gates_iof", p + "gate_c"},
                        SplitAttrs(1, {3 * H(), H()}));
  const ValueId iof = Activate(p + "iof", 0, ops, halves[0]);
  const ValueIds activated =
      b_.AddWithOutputs(p + "iof_split", "split", {iof}, {p + "i", p + "o", p + "f"}, AxisAttr(1));
  return Gates{activated[0], activated[1], activated[2], halves[1]};
}

// Each gate on its own, for peepholes (each adds its own term before its
// activation) or a forget gate of 1 - i. o's peephole reads the new cell:
// with peepholes, the caller activates o.
RecurrenceDecomposer::Gates RecurrenceDecomposer::ActivateGatesOneByOne(
    const std::string& p, const DirectionOperands& ops, ValueId gates, ValueId cell) {
  const bool peepholes = spec_.Has(kRnnP);
  // The gates' blocks of columns, as views: one split, not a slice each.
  const ValueIds blocks =
      b_.AddWithOutputs(p + "gates_split", "split", {gates},
                        {p + "gate_i", p + "gate_o", p + "gate_f", p + "gate_c"}, AxisAttr(1));
  Gates g;
  g.i = Activate(p + "i", 0, ops, Peephole(p, "i", ops, blocks[0], 0, cell));
  g.o = peepholes ? blocks[1] : Activate(p + "o", 0, ops, blocks[1]);
  g.f = spec_.input_forget ? Op(p + "f", "sub", {one_, g.i})
                           : Activate(p + "f", 0, ops, Peephole(p, "f", ops, blocks[2], 2, cell));
  g.c = peepholes ? Clip(p + "c_pre", blocks[3]) : blocks[3];
  return g;
}

// pre + P_k . cell, clipped, with peepholes; else pre as it is.
ValueId RecurrenceDecomposer::Peephole(const std::string& p, const std::string& name,
                                       const DirectionOperands& ops, ValueId pre, int k,
                                       ValueId cell) {
  if (!spec_.Has(kRnnP)) return pre;
  const ValueId term = Op(p + name + "_peep", "mul", {ops.p[k], cell});
  return Clip(p + name, Op(p + name + "_pre", "add", {pre, term}));
}

// Gates z, r, h; H' = h~ + z . (H - h~), which is (1 - z) . h~ + z . H.
State RecurrenceDecomposer::GruStep(const std::string& p, const DirectionOperands& ops,
                                    ValueId xw_step, const State& state) {
  const ValueIds xw = b_.AddWithOutputs(p + "xw_split", "split", {xw_step},
                                        {p + "xw_zr", p + "xw_h"}, SplitAttrs(1, {2 * H(), H()}));
  const ValueId xw_zr = xw[0], xw_h = xw[1];
  ValueId hr_zr = -1, hr_h = -1;
  const ValueId hr = StateProduct(p + "hr", state.h, ops.r);
  if (spec_.linear_before_reset) {
    const ValueIds parts = b_.AddWithOutputs(
        p + "hr_split", "split", {hr}, {p + "hr_zr", p + "hr_h"}, SplitAttrs(1, {2 * H(), H()}));
    hr_zr = parts[0];
    hr_h = parts[1];
    if (ops.rb_h >= 0) hr_h = Op(p + "hr_h_bias", "add", {hr_h, ops.rb_h});
  } else {
    hr_zr = hr;
  }
  const ValueId zr = Clip(p + "zr", Op(p + "zr", "add", {xw_zr, hr_zr}));
  // z and r share an activation: one node activates both, then they split.
  const ValueIds gates =
      b_.AddWithOutputs(p + "gates_split", "split", {Activate(p + "zr_act", 0, ops, zr)},
                        {p + "z", p + "r"}, AxisAttr(1));
  const ValueId z = gates[0], r = gates[1];
  ValueId recurrent;
  if (spec_.linear_before_reset) {
    recurrent = Op(p + "reset", "mul", {r, hr_h});
  } else {
    const ValueId reset_h = Op(p + "reset_h", "mul", {r, state.h});
    recurrent = StateProduct(p + "reset", reset_h, ops.r_h);
  }
  const ValueId pre = Clip(p + "h_pre", Op(p + "h_pre", "add", {xw_h, recurrent}));
  const ValueId candidate = Activate(p + "h_cand", 1, ops, pre);
  const ValueId diff = Op(p + "h_diff", "sub", {state.h, candidate});
  const ValueId kept = Op(p + "h_kept", "mul", {z, diff});
  return State{Op(p + "h", "add", {candidate, kept}), -1};
}

State RecurrenceDecomposer::RnnStep(const std::string& p, const DirectionOperands& ops, ValueId xw,
                                    const State& state) {
  const ValueId hr = StateProduct(p + "hr", state.h, ops.r);
  const ValueId pre = Clip(p + "pre", Op(p + "pre", "add", {xw, hr}));
  return State{Activate(p + "h", 0, ops, pre), -1};
}

void RecurrenceDecomposer::WriteStacked(const std::string& suffix,
                                        const std::vector<ValueId>& parts, Shape part_shape,
                                        int64_t axis, int output) {
  const ValueId out = node_.outputs[output];
  if (parts.size() == 1) {
    b_.AddWriting(suffix, "reshape", {parts[0]}, out, Ints("shape", std::move(part_shape)));
    return;
  }
  std::vector<ValueId> reshaped;
  for (size_t d = 0; d < parts.size(); ++d) {
    reshaped.push_back(Reshape(absl::StrCat("d", d, "/", suffix), parts[d], part_shape));
  }
  b_.AddWriting(suffix, "concat", reshaped, out, AxisAttr(axis));
}

ValueId RecurrenceDecomposer::StateProduct(const std::string& suffix, ValueId state,
                                           ValueId weight) {
  if (!loop_) return Op(suffix, "matmul", {state, weight});
  // A sum over the weight's rows, each scaled by an element of the state:
  // lowered as loops that run in order, it is printed as such sums for a
  // block of rows at once (loom_vecmats), each weight row read once for
  // them all.
  const ValueId columns = Reshape(suffix + "_state", state, {B(), H(), 1});
  const ValueId products = Op(suffix + "_products", "mul", {columns, weight});
  return Op(suffix, "reduce_sum", {products}, Ints("axes", {1}));
}

State RecurrenceDecomposer::Step(const std::string& p, const DirectionOperands& ops, ValueId xw,
                                 ValueId mask, const State& state) {
  State next;
  switch (spec_.cell) {
    case RecurrentCell::kLstm:
      next = LstmStep(p, ops, xw, state);
      break;
    case RecurrentCell::kGru:
      next = GruStep(p, ops, xw, state);
      break;
    case RecurrentCell::kRnn:
      next = RnnStep(p, ops, xw, state);
      break;
  }
  if (mask >= 0) {
    // Past an entry's length the state stays as it was.
    next.h = Op(p + "h_masked", "where", {mask, next.h, state.h});
    if (next.c >= 0) {
      next.c = Op(p + "c_masked", "where", {mask, next.c, state.c});
    }
  }
  return next;
}

RecurrenceDecomposer::DirectionOutputs RecurrenceDecomposer::Unrolled(int64_t d,
                                                                      DirectionOperands& ops) {
  const int64_t seq = spec_.seq;
  const int64_t chunk = StepsPerProjection();
  State state = InitialState(d);
  std::vector<ValueId> outputs(seq);  // by time step
  for (int64_t k = 0; k < seq; ++k) {
    if (k % chunk == 0) ProjectInput(d, k, std::min(chunk, seq - k), ops);
    const int64_t t = spec_.Backward(d) ? seq - 1 - k : k;
    const std::string p = absl::StrCat("d", d, "/t", t, "/");
    const size_t emitted_before_step = b_.num_emitted();
    state = Step(p, ops, ops.xw_steps[t], mask_rows_ >= 0 ? StepMask(t) : -1, state);
    if (d == 0 && k == 0) {
      // Every step emits about as many nodes as the first: make room for
      // all of them at once, and a step's worth more for the outputs.
      b_.Reserve((b_.num_emitted() - emitted_before_step) * seq * spec_.num_directions);
    }
    outputs[t] = state.h;
  }
  const std::string p = absl::StrCat("d", d, "/");
  const ValueId y =
      outputs.size() == 1 ? outputs[0] : Op(p + "y_rows", "concat", outputs, AxisAttr(0));
  return {y, state};
}

RecurrenceDecomposer::DirectionOutputs RecurrenceDecomposer::Looped(int64_t d,
                                                                    const DirectionOperands& ops) {
  const std::string p = absl::StrCat("d", d, "/");
  const bool lstm = spec_.cell == RecurrentCell::kLstm;
  const ValueId xw = Op(p + "xw", "matmul", {x_rows_, ops.w_t});
  const State initial = InitialState(d);
  std::vector<ValueId> inputs = {initial.h};
  std::vector<std::string> names = {p + "step/h_prev"};
  if (lstm) {
    inputs.push_back(initial.c);
    names.push_back(p + "step/c_prev");
  }
  const int64_t states = static_cast<int64_t>(inputs.size());
  inputs.push_back(Reshape(p + "xw_seq", xw, {spec_.seq, B(), spec_.gates * H()}));
  names.push_back(p + "step/xw");
  if (mask_rows_ >= 0) {
    inputs.push_back(Reshape(p + "mask_seq", mask_rows_, {spec_.seq, B(), 1}));
    names.push_back(p + "step/mask");
  }
  Attrs attrs;
  attrs.Set("states", states);
  attrs.Set("reverse", int64_t{spec_.Backward(d) ? 1 : 0});
  const ValueIds begin = b_.AddWithOutputs(p + "scan_begin", "scan_begin", inputs, names, attrs);
  const State state{begin[0], lstm ? begin[1] : -1};
  const ValueId mask = mask_rows_ >= 0 ? begin.back() : -1;
  // The bias is added in the step, where its sum with the step's rows of xw
  // is computed as it is read, not stored for every step first.
  ValueId xw_step = begin[states];
  if (ops.bias >= 0) xw_step = Op(p + "step/xw_bias", "add", {xw_step, ops.bias});
  const State next = Step(p + "step/", ops, xw_step, mask, state);
  std::vector<ValueId> ends = {next.h};
  std::vector<std::string> end_names = {p + "h_last"};
  if (lstm) {
    ends.push_back(next.c);
    end_names.push_back(p + "c_last");
  }
  end_names.push_back(p + "h_seq");
  if (lstm) end_names.push_back(p + "c_seq");
  Attrs end_attrs;
  end_attrs.Set("length", spec_.seq);
  end_attrs.Set("reverse", int64_t{spec_.Backward(d) ? 1 : 0});
  const ValueIds end = b_.AddWithOutputs(p + "scan_end", "scan_end", ends, end_names, end_attrs);
  return {Reshape(p + "y_rows", end[states], {spec_.seq * B(), H()}),
          State{end[0], lstm ? end[1] : -1}};
}

absl::Status RecurrenceDecomposer::Run() {
  if (spec_.seq == 0) {
    return absl::InvalidArgumentError("cannot unroll an empty sequence (seq is 0)");
  }
  PrepareShared();
  const int64_t seq = spec_.seq;
  std::vector<ValueId> ys, hs, cs;  // per direction
  for (int64_t d = 0; d < spec_.num_directions; ++d) {
    DirectionOperands ops = PrepareDirection(d);
    const DirectionOutputs outputs = loop_ ? Looped(d, ops) : Unrolled(d, ops);
    ValueId y = outputs.y_rows;
    if (mask_rows_ >= 0) {
      y = Op(absl::StrCat("d", d, "/y_masked"), "where", {mask_rows_, y, zero_});
    }
    ys.push_back(y);
    hs.push_back(outputs.last.h);
    cs.push_back(outputs.last.c);
  }

  // Y: [seq, num_dir, batch, H] (layout 0) or [batch, seq, num_dir, H].
  const int64_t nd = spec_.num_directions;
  const Shape y_part = {seq, 1, B(), H()};
  if (!spec_.batch_first) {
    WriteStacked("y", ys, y_part, 1, kRnnY);
  } else {
    ValueId y = nd == 1 ? Reshape("y_seq_first", ys[0], y_part) : -1;
    if (nd == 2) {
      std::vector<ValueId> parts;
      for (int64_t d = 0; d < nd; ++d) {
        parts.push_back(Reshape(absl::StrCat("d", d, "/y"), ys[d], y_part));
      }
      y = Op("y_seq_first", "concat", parts, AxisAttr(1));
    }
    b_.AddWriting("y", "transpose", {y}, node_.outputs[kRnnY], Ints("perm", {2, 0, 1, 3}));
  }
  // Y_h, Y_c: [num_dir, batch, H] (layout 0) or [batch, num_dir, H].
  const Shape state_part = spec_.batch_first ? Shape{B(), 1, H()} : Shape{1, B(), H()};
  const int64_t state_axis = spec_.batch_first ? 1 : 0;
  if (spec_.num_outputs > kRnnYH) {
    WriteStacked("y_h", hs, state_part, state_axis, kRnnYH);
  }
  if (spec_.num_outputs > kRnnYC) {
    WriteStacked("y_c", cs, state_part, state_axis, kRnnYC);
  }
  return absl::OkStatus();
}

// Whether a recurrence runs at least as fast kept as a loop as unrolled,
// by the size of its recurrent weight R, as measured on a 2-core AMD EPYC
// Zen 4 (AVX-512), 2-layer LSTMs of 64 steps, loop / unrolled (medians):
// under 256 KiB (hidden 64: 64 KiB) 0.85-0.9 at batch 1 to 64; up to 1 MiB
// (hidden 128: 256 KiB) 1.16 at batch 1, where the unrolled step shares its one
// row's product over the threads (a team) and the loop's row runs on one
// thread, 1.0 at batch 2, 0.9-1.0 at 64; from 1 MiB (hidden 256) 1.25-1.7
// at batch 1, 4, 32 and 64 (0.9 at 8): each block of a loop's rows reads
// all of R every step, which no longer stays in a core's cache, where an
// unrolled step's gemm call reads it once.
bool LoopPays(const RecurrentSpec& spec) {
  constexpr int64_t kSharedProductBytes = 256 << 10, kUncachedBytes = 1 << 20;
  const int64_t weight_bytes = spec.gates * spec.hidden * spec.hidden * 4;
  if (weight_bytes >= kUncachedBytes) return false;
  return weight_bytes < kSharedProductBytes || spec.batch >= 2;
}

template <RecurrentCell kCell, RnnForm kForm>
absl::Status DecomposeRecurrent(const Node& node, DecompositionBuilder& b) {
  std::vector<TensorType> inputs;
  for (ValueId input : node.inputs) inputs.push_back(b.type(input));
  LOOM_ASSIGN_OR_RETURN(RecurrentSpec spec, ParseRecurrent(kCell, node, inputs));
  const bool loop = kForm == RnnForm::kLoop || (kForm == RnnForm::kAuto && LoopPays(spec));
  return RecurrenceDecomposer(node, spec, b, loop).Run();
}

template <RnnForm kForm>
constexpr Decomposition kRnnDecompositions[] = {
    {"lstm", DecomposeRecurrent<RecurrentCell::kLstm, kForm>},
    {"gru", DecomposeRecurrent<RecurrentCell::kGru, kForm>},
    {"rnn", DecomposeRecurrent<RecurrentCell::kRnn, kForm>},
};

}  // namespace

absl::Span<const Decomposition> RnnDecompositions(RnnForm form) {
  switch (form) {
    case RnnForm::kLoop:
      return kRnnDecompositions<RnnForm::kLoop>;
    case RnnForm::kAuto:
      return kRnnDecompositions<RnnForm::kAuto>;
    case RnnForm::kUnroll:
      break;
  }
  return kRnnDecompositions<RnnForm::kUnroll>;
}

}  // namespace loom
