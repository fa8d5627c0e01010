// lstm, gru and rnn with ONNX semantics (one layer per node; see
// recurrent.h): the reference implementation runs
// plain loops over directions, batch entries, time steps and gates, in
// double, straight from the ONNX equations:
//
//   lstm: i = f(Xt Wi^T + H Ri^T + Wbi + Rbi + Pi . C)
//         f = f(Xt Wf^T + H Rf^T + Wbf + Rbf + Pf . C)   (1 - i: input_forget)
//         c = g(Xt Wc^T + H Rc^T + Wbc + Rbc)
//         C' = f . C + i . c
//         o = f(Xt Wo^T + H Ro^T + Wbo + Rbo + Po . C')
//         H' = o . h(C')
//   gru:  z = f(Xt Wz^T + H Rz^T + Wbz + Rbz)
//         r = f(Xt Wr^T + H Rr^T + Wbr + Rbr)
//         h = g(Xt Wh^T + (r . H) Rh^T + Rbh + Wbh)     linear_before_reset 0
//         h = g(Xt Wh^T + r . (H Rh^T + Rbh) + Wbh)     linear_before_reset 1
//         H' = (1 - z) . h + z . H
//   rnn:  H' = f(Xt Wi^T + H Ri^T + Wbi + Rbi)
//
// `clip` clamps every pre-activation (peephole terms included) to
// [-clip, clip]. Entry b runs steps 0 .. len[b]-1 (forward) or len[b]-1 .. 0
// (backward); Y is 0 at steps past its length, and Y_h / Y_c hold the state
// after its last processed step (the initial state when len[b] is 0).
//
// scan_begin and scan_end bracket a recurrence's step when decompose keeps
// it as a loop (rnn: LOOP): the nodes between them run once per iteration,
// reading the states and each sequence's element of that iteration from
// scan_begin and handing the next states and the iteration's outputs to
// scan_end. Lowering runs that loop (passes/lower_scan.cc); the interpreter
// does not (it runs the recurrence before its decomposition).
#include "ir/ops/recurrent.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {

Shape RecurrentSpec::YShape() const {
  return batch_first ? Shape{batch, seq, num_directions, hidden}
                     : Shape{seq, num_directions, batch, hidden};
}

Shape RecurrentSpec::StateShape() const {
  return batch_first ? Shape{batch, num_directions, hidden} : Shape{num_directions, batch, hidden};
}

namespace {

constexpr const char* kInputNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                       "initial_h", "initial_c", "P"};

absl::string_view CellName(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kLstm:
      return "lstm";
    case RecurrentCell::kGru:
      return "gru";
    case RecurrentCell::kRnn:
      return "rnn";
  }
  return "?";
}

int64_t GatesOf(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kLstm:
      return 4;
    case RecurrentCell::kGru:
      return 3;
    case RecurrentCell::kRnn:
      return 1;
  }
  return 1;
}

int MaxInputs(RecurrentCell cell) { return cell == RecurrentCell::kLstm ? 8 : 6; }

int MaxOutputs(RecurrentCell cell) { return cell == RecurrentCell::kLstm ? 3 : 2; }

// ONNX's defaults, per direction.
std::vector<RecurrentActivation> DefaultActivations(RecurrentCell cell) {
  using A = RecurrentActivation;
  switch (cell) {
    case RecurrentCell::kLstm:
      return {A::kSigmoid, A::kTanh, A::kTanh};
    case RecurrentCell::kGru:
      return {A::kSigmoid, A::kTanh};
    case RecurrentCell::kRnn:
      return {A::kTanh};
  }
  return {};
}

// "sigmoid", "tanh", "relu"; ONNX's spellings ("Sigmoid", ...) work too.
absl::StatusOr<RecurrentActivation> ParseActivation(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "sigmoid") return RecurrentActivation::kSigmoid;
  if (lower == "tanh") return RecurrentActivation::kTanh;
  if (lower == "relu") return RecurrentActivation::kRelu;
  return absl::InvalidArgumentError(
      absl::StrCat("attribute 'activations': unsupported activation '", name,
                   "' (supported: sigmoid, tanh, relu)"));
}

absl::Status ParseActivations(const Node& node, RecurrentSpec& spec) {
  const std::vector<RecurrentActivation> defaults = DefaultActivations(spec.cell);
  const size_t per_direction = defaults.size();
  if (!node.attrs.Has("activations")) {
    spec.activations.assign(spec.num_directions, defaults);
    return absl::OkStatus();
  }
  const std::vector<std::string> names = node.attrs.GetStrings("activations");
  // One set for every direction, or one per direction (forward first).
  if (names.size() != per_direction && names.size() != per_direction * spec.num_directions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'activations' has ", names.size(), " entries, expected ", per_direction,
        spec.num_directions == 2 ? absl::StrCat(" (one set for both directions) or ",
                                                2 * per_direction, " (one set per direction)")
                                 : std::string()));
  }
  spec.activations.assign(spec.num_directions, {});
  for (int64_t d = 0; d < spec.num_directions; ++d) {
    const size_t first = names.size() == per_direction ? 0 : d * per_direction;
    for (size_t k = 0; k < per_direction; ++k) {
      LOOM_ASSIGN_OR_RETURN(RecurrentActivation activation, ParseActivation(names[first + k]));
      spec.activations[d].push_back(activation);
    }
  }
  return absl::OkStatus();
}

absl::Status ParseAttributes(const Node& node, RecurrentSpec& spec) {
  spec.hidden = node.attrs.GetInt("hidden_size", 0);
  if (spec.hidden <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'hidden_size' must be positive, got ", spec.hidden));
  }
  if (spec.hidden > kMaxTensorElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'hidden_size' must be at most 2^40, got ", spec.hidden));
  }
  const std::string direction = node.attrs.GetString("direction", "forward");
  if (direction == "bidirectional") {
    spec.num_directions = 2;
  } else if (direction == "reverse") {
    spec.reverse = true;
  } else if (direction != "forward") {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'direction' is '", direction,
                     "', expected 'forward', 'reverse' or 'bidirectional'"));
  }
  const int64_t layout = node.attrs.GetInt("layout", 0);
  if (layout != 0 && layout != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'layout' must be 0 or 1, got ", layout));
  }
  spec.batch_first = layout == 1;
  if (node.attrs.Has("clip")) {
    spec.has_clip = true;
    spec.clip = node.attrs.GetFloat("clip", 0);
    if (!(spec.clip > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'clip' must be positive, got ", spec.clip));
    }
  }
  spec.input_forget = node.attrs.GetInt("input_forget", 0) != 0;
  spec.linear_before_reset = node.attrs.GetInt("linear_before_reset", 0) != 0;
  return ParseActivations(node, spec);
}

// Checks that input `index` has exactly `expected` as its shape; `meaning`
// spells out the expected dimensions.
absl::Status CheckInputShape(absl::Span<const TensorType> inputs, int index, const Shape& expected,
                             absl::string_view meaning) {
  const Shape& actual = inputs[index].shape;
  if (actual == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "input '", kInputNames[index], "' (", index, ") has shape ", ShapeToString(actual),
      ", expected ", ShapeToString(expected), " (", meaning, ")"));
}

absl::Status CheckFloatInput(absl::Span<const TensorType> inputs, int index) {
  if (inputs[index].dtype == inputs[kRnnX].dtype) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input '", kInputNames[index], "' (", index,
                                                 ") has dtype ", DTypeName(inputs[index].dtype),
                                                 " but X has ", DTypeName(inputs[kRnnX].dtype)));
}

absl::Status CheckInputs(absl::Span<const TensorType> inputs, const RecurrentSpec& spec) {
  const int64_t nd = spec.num_directions;
  const int64_t rows = spec.gates * spec.hidden;
  const std::string gates_meaning =
      spec.gates == 1 ? "hidden_size" : absl::StrCat(spec.gates, "*hidden_size");
  const std::string state_meaning = spec.batch_first ? "batch, num_directions, hidden_size"
                                                     : "num_directions, batch, hidden_size";
  struct Expected {
    int index;
    Shape shape;
    std::string meaning;
  };
  const Expected expected[] = {
      {kRnnW,
       {nd, rows, spec.input},
       absl::StrCat("num_directions, ", gates_meaning, ", input_size")},
      {kRnnR,
       {nd, rows, spec.hidden},
       absl::StrCat("num_directions, ", gates_meaning, ", hidden_size")},
      {kRnnB, {nd, 2 * rows}, absl::StrCat("num_directions, 2*", gates_meaning)},
      {kRnnSequenceLens, {spec.batch}, "batch"},
      {kRnnInitialH, spec.StateShape(), state_meaning},
      {kRnnInitialC, spec.StateShape(), state_meaning},
      {kRnnP, {nd, 3 * spec.hidden}, "num_directions, 3*hidden_size"},
  };
  for (const Expected& e : expected) {
    if (!spec.Has(e.index)) continue;
    if (e.index == kRnnSequenceLens) {
      const DType dtype = inputs[e.index].dtype;
      if (dtype != DType::kI32 && dtype != DType::kI64) {
        return absl::InvalidArgumentError(absl::StrCat("input 'sequence_lens' (4) has dtype ",
                                                       DTypeName(dtype), ", expected i32 or i64"));
      }
    } else {
      LOOM_RETURN_IF_ERROR(CheckFloatInput(inputs, e.index));
    }
    LOOM_RETURN_IF_ERROR(CheckInputShape(inputs, e.index, e.shape, e.meaning));
  }
  return absl::OkStatus();
}

// --- shape function ----------------------------------------------------------

absl::StatusOr<OutputTypes> RecurrentShape(RecurrentCell cell, const Node& node,
                                           absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(RecurrentSpec spec, ParseRecurrent(cell, node, in));
  OutputTypes outputs = {{spec.dtype, spec.YShape()}};
  for (int i = 1; i < spec.num_outputs; ++i) {
    outputs.push_back({spec.dtype, spec.StateShape()});
  }
  return outputs;
}

// --- reference implementation ----------------------------------------------

double Activate(RecurrentActivation activation, double x) {
  switch (activation) {
    case RecurrentActivation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case RecurrentActivation::kTanh:
      return std::tanh(x);
    case RecurrentActivation::kRelu:
      return x > 0 ? x : 0.0;
  }
  return x;
}

std::vector<double> Doubles(const Tensor& tensor) {
  std::vector<double> values(tensor.num_elements());
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    values[i] = tensor.GetDouble(i);
  }
  return values;
}

// One direction's weights: W, R and the biases, flat and row-major.
struct DirectionWeights {
  const double* w;   // [gates*hidden, input]
  const double* r;   // [gates*hidden, hidden]
  const double* wb;  // [gates*hidden], or null
  const double* rb;  // [gates*hidden], or null
  const double* p;   // [3*hidden] (i, o, f), or null
  const std::vector<RecurrentActivation>* activations;
};

// One direction's cell: advances the state of a batch entry, kept by the
// caller in `h` and (lstm) `c`, by one step.
class Recurrence {
 public:
  Recurrence(const RecurrentSpec& spec, const DirectionWeights& weights)
      : spec_(spec), weights_(weights) {}

  // The input terms of `xs` (each [input]): W times each, plus Wb, as
  // [xs.size(), gates * hidden]. Row by row of W, each row once for every
  // x: the steps' inputs do not depend on the state. Streaming W once per
  // step instead, a 6-layer LSTM (hidden 256, batch 2, 16 steps) ran in
  // 0.12 s, against 0.083 (medians of 6, alternating). Each term sums in
  // the order of W's columns, as one step alone would.
  std::vector<double> InputTerms(const std::vector<const double*>& xs) const {
    const int64_t rows = spec_.gates * H();
    std::vector<double> terms(xs.size() * rows);
    for (int64_t row = 0; row < rows; ++row) {
      const double* w = weights_.w + row * spec_.input;
      for (size_t i = 0; i < xs.size(); ++i) {
        double sum = weights_.wb != nullptr ? weights_.wb[row] : 0.0;
        for (int64_t k = 0; k < spec_.input; ++k) sum += w[k] * xs[i][k];
        terms[i * rows + row] = sum;
      }
    }
    return terms;
  }

  // Advances the state by one step whose input terms (InputTerms) are
  // `input` [gates * hidden].
  void Step(const double* input, std::vector<double>& h, std::vector<double>& c) {
    switch (spec_.cell) {
      case RecurrentCell::kLstm:
        return LstmStep(input, h, c);
      case RecurrentCell::kGru:
        return GruStep(input, h);
      case RecurrentCell::kRnn:
        return RnnStep(input, h);
    }
  }

 private:
  int64_t H() const { return spec_.hidden; }

  // Row `row` of R times `state`, plus Rb[row].
  double RecurrentTerm(int64_t row, const std::vector<double>& state) const {
    double sum = weights_.rb != nullptr ? weights_.rb[row] : 0.0;
    const double* r = weights_.r + row * H();
    for (int64_t k = 0; k < H(); ++k) sum += r[k] * state[k];
    return sum;
  }

  double Clip(double x) const {
    return spec_.has_clip ? std::min(std::max(x, -spec_.clip), spec_.clip) : x;
  }

  double Act(int which, double x) const {
    return Activate((*weights_.activations)[which], Clip(x));
  }

  double Peephole(int gate, int64_t j) const {
    return weights_.p != nullptr ? weights_.p[gate * H() + j] : 0.0;
  }

  void LstmStep(const double* input, std::vector<double>& h, std::vector<double>& c) {
    enum { kI, kO, kF, kC };  // row blocks of W and R
    enum { kPi, kPo, kPf };   // blocks of P
    std::vector<double> pre(4 * H());
    for (int64_t row = 0; row < 4 * H(); ++row) {
      pre[row] = input[row] + RecurrentTerm(row, h);
    }
    for (int64_t j = 0; j < H(); ++j) {
      const double i = Act(0, pre[kI * H() + j] + Peephole(kPi, j) * c[j]);
      const double f =
          spec_.input_forget ? 1.0 - i : Act(0, pre[kF * H() + j] + Peephole(kPf, j) * c[j]);
      const double candidate = Act(1, pre[kC * H() + j]);
      c[j] = f * c[j] + i * candidate;
      const double o = Act(0, pre[kO * H() + j] + Peephole(kPo, j) * c[j]);
      h[j] = o * Activate((*weights_.activations)[2], c[j]);
    }
  }

  void GruStep(const double* input, std::vector<double>& h) {
    enum { kZ, kR, kH };
    std::vector<double> z(H()), r(H()), reset_h(H());
    for (int64_t j = 0; j < H(); ++j) {
      z[j] = Act(0, input[kZ * H() + j] + RecurrentTerm(kZ * H() + j, h));
      r[j] = Act(0, input[kR * H() + j] + RecurrentTerm(kR * H() + j, h));
      reset_h[j] = r[j] * h[j];
    }
    std::vector<double> next(H());
    for (int64_t j = 0; j < H(); ++j) {
      const int64_t row = kH * H() + j;
      const double recurrent =
          spec_.linear_before_reset ? r[j] * RecurrentTerm(row, h) : RecurrentTerm(row, reset_h);
      const double candidate = Act(1, input[row] + recurrent);
      next[j] = (1.0 - z[j]) * candidate + z[j] * h[j];
    }
    h = std::move(next);
  }

  void RnnStep(const double* input, std::vector<double>& h) {
    std::vector<double> next(H());
    for (int64_t j = 0; j < H(); ++j) {
      next[j] = Act(0, input[j] + RecurrentTerm(j, h));
    }
    h = std::move(next);
  }

  const RecurrentSpec& spec_;
  const DirectionWeights& weights_;
};

// Each batch entry's sequence length: sequence_lens, or seq for all.
absl::StatusOr<std::vector<int64_t>> SequenceLengths(const RecurrentSpec& spec,
                                                     absl::Span<const Tensor* const> in) {
  std::vector<int64_t> lengths(spec.batch, spec.seq);
  if (!spec.Has(kRnnSequenceLens)) return lengths;
  const Tensor& lens = *in[kRnnSequenceLens];
  for (int64_t b = 0; b < spec.batch; ++b) {
    lengths[b] = lens.GetInt(b);
    if (lengths[b] < 0 || lengths[b] > spec.seq) {
      return absl::InvalidArgumentError(absl::StrCat("sequence_lens[", b, "] is ", lengths[b],
                                                     ", outside [0, ", spec.seq,
                                                     "] (the sequence length)"));
    }
  }
  return lengths;
}

absl::Status RecurrentEval(RecurrentCell cell, const Node& node, absl::Span<const Tensor* const> in,
                           absl::Span<Tensor> out) {
  std::vector<TensorType> types;
  for (const Tensor* tensor : in) types.push_back(tensor->type());
  LOOM_ASSIGN_OR_RETURN(RecurrentSpec parsed, ParseRecurrent(cell, node, types));
  const RecurrentSpec& spec = parsed;
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, SequenceLengths(spec, in));

  const int64_t H = spec.hidden, nd = spec.num_directions;
  const int64_t batch = spec.batch, seq = spec.seq;
  const int64_t rows = spec.gates * H;
  const std::vector<double> x = Doubles(*in[kRnnX]);
  const std::vector<double> w = Doubles(*in[kRnnW]);
  const std::vector<double> r = Doubles(*in[kRnnR]);
  auto optional = [&](int index) {
    return spec.Has(index) ? Doubles(*in[index]) : std::vector<double>();
  };
  const std::vector<double> bias = optional(kRnnB);
  const std::vector<double> initial_h = optional(kRnnInitialH);
  const std::vector<double> initial_c = optional(kRnnInitialC);
  const std::vector<double> peepholes = optional(kRnnP);

  // Flat offsets in the layout's order.
  auto x_at = [&](int64_t t, int64_t b) {
    return (spec.batch_first ? b * seq + t : t * batch + b) * spec.input;
  };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (spec.batch_first ? (b * seq + t) * nd + d : (t * nd + d) * batch + b) * H;
  };
  auto state_at = [&](int64_t d, int64_t b) {
    return (spec.batch_first ? b * nd + d : d * batch + b) * H;
  };

  for (int64_t d = 0; d < nd; ++d) {
    const DirectionWeights weights = {w.data() + d * rows * spec.input,
                                      r.data() + d * rows * H,
                                      bias.empty() ? nullptr : bias.data() + d * 2 * rows,
                                      bias.empty() ? nullptr : bias.data() + d * 2 * rows + rows,
                                      peepholes.empty() ? nullptr : peepholes.data() + d * 3 * H,
                                      &spec.activations[d]};
    Recurrence recurrence(spec, weights);
    // Each batch entry's steps' inputs, in its order of steps.
    std::vector<const double*> xs;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t step = 0; step < lengths[b]; ++step) {
        const int64_t t = spec.Backward(d) ? lengths[b] - 1 - step : step;
        xs.push_back(x.data() + x_at(t, b));
      }
    }
    const std::vector<double> input_terms = recurrence.InputTerms(xs);
    const double* input = input_terms.data();
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<double> h(H, 0.0), c(H, 0.0);
      if (!initial_h.empty()) {
        std::copy_n(initial_h.begin() + state_at(d, b), H, h.begin());
      }
      if (!initial_c.empty()) {
        std::copy_n(initial_c.begin() + state_at(d, b), H, c.begin());
      }
      const int64_t length = lengths[b];
      for (int64_t step = 0; step < length; ++step) {
        const int64_t t = spec.Backward(d) ? length - 1 - step : step;
        recurrence.Step(input, h, c);
        input += rows;
        for (int64_t j = 0; j < H; ++j) {
          out[kRnnY].SetDouble(y_at(t, d, b) + j, h[j]);
        }
      }
      // Y stays 0 (Tensors start zeroed) at steps past `length`.
      for (int64_t j = 0; j < H; ++j) {
        if (spec.num_outputs > kRnnYH) {
          out[kRnnYH].SetDouble(state_at(d, b) + j, h[j]);
        }
        if (spec.num_outputs > kRnnYC) {
          out[kRnnYC].SetDouble(state_at(d, b) + j, c[j]);
        }
      }
    }
  }
  return absl::OkStatus();
}

OpDef RecurrentOp(RecurrentCell cell) {
  std::vector<AttrSpec> attrs = {
      {"hidden_size", AttrType::kInt, true}, {"direction", AttrType::kString, false},
      {"layout", AttrType::kInt, false},     {"activations", AttrType::kStrings, false},
      {"clip", AttrType::kFloat, false},
  };
  if (cell == RecurrentCell::kLstm) {
    attrs.push_back({"input_forget", AttrType::kInt, false});
  }
  if (cell == RecurrentCell::kGru) {
    attrs.push_back({"linear_before_reset", AttrType::kInt, false});
  }
  OpDef def;
  def.name = std::string(CellName(cell));
  def.min_inputs = 3;
  def.max_inputs = MaxInputs(cell);
  // Y, [Y_h, [Y_c]]: the shape function checks the upper bound.
  def.num_outputs = -1;
  def.attrs = std::move(attrs);
  def.infer = [cell](const Node& node, absl::Span<const TensorType> in) {
    return RecurrentShape(cell, node, in);
  };
  def.eval = [cell](const Node& node, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
    return RecurrentEval(cell, node, in, out);
  };
  return def;
}

}  // namespace

absl::StatusOr<RecurrentSpec> ParseRecurrent(RecurrentCell cell, const Node& node,
                                             absl::Span<const TensorType> inputs) {
  RecurrentSpec spec;
  spec.cell = cell;
  spec.gates = GatesOf(cell);
  spec.num_inputs = static_cast<int>(inputs.size());
  spec.num_outputs = static_cast<int>(node.outputs.size());
  if (spec.num_inputs < 3 || spec.num_inputs > MaxInputs(cell) || spec.num_outputs < 1 ||
      spec.num_outputs > MaxOutputs(cell)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 3 to ", MaxInputs(cell), " inputs and 1 to ", MaxOutputs(cell),
                     " outputs, got ", spec.num_inputs, " and ", spec.num_outputs));
  }
  LOOM_RETURN_IF_ERROR(ParseAttributes(node, spec));

  const TensorType& x = inputs[kRnnX];
  if (!IsFloat(x.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("input 'X' (0) has dtype ", DTypeName(x.dtype),
                                                   ", expected a float dtype (f32 or f64)"));
  }
  if (x.shape.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 'X' (0) has shape ", ShapeToString(x.shape), ", expected rank 3 (",
                     spec.batch_first ? "batch, seq, input_size" : "seq, batch, input_size", ")"));
  }
  spec.dtype = x.dtype;
  spec.seq = x.shape[spec.batch_first ? 1 : 0];
  spec.batch = x.shape[spec.batch_first ? 0 : 1];
  spec.input = x.shape[2];
  LOOM_RETURN_IF_ERROR(CheckInputs(inputs, spec));
  return spec;
}

namespace {

// --- the loop form: scan_begin and scan_end -----------------------------------

// The number of loop-carried states, attribute `states`, of a node with
// `inputs` inputs.
absl::StatusOr<size_t> NumStates(const Node& node, size_t inputs) {
  const int64_t states = node.attrs.GetInt("states", -1);
  if (states < 1 || static_cast<size_t>(states) >= inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'states' must be at least 1 and less than the ", inputs,
                     " inputs, got ", states));
  }
  return static_cast<size_t>(states);
}

// scan_begin(states..., sequences...): the states as they are, and each
// sequence's element of the current iteration (its dim 0 dropped). All
// sequences have the same length, at least 1.
absl::StatusOr<OutputTypes> ScanBeginShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(const size_t states, NumStates(node, in.size()));
  OutputTypes outputs(in.begin(), in.begin() + states);
  for (size_t j = states; j < in.size(); ++j) {
    const Shape& shape = in[j].shape;
    if (shape.empty() || shape[0] < 1 || shape[0] != in[states].shape[0]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", j, " is a sequence of shape ", ShapeToString(shape),
                       ": sequences need a dim 0 of at least 1, the same in each"));
    }
    outputs.push_back({in[j].dtype, Shape(shape.begin() + 1, shape.end())});
  }
  return outputs;
}

// scan_end(next states...): the states after the last iteration, then
// each state after every iteration, stacked along a new dim 0 of attribute
// `length` in time order (reversed when the loop runs backwards, attribute
// `reverse`).
absl::StatusOr<OutputTypes> ScanEndShape(const Node& node, absl::Span<const TensorType> in) {
  const int64_t length = node.attrs.GetInt("length", 0);
  if (length < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'length' must be at least 1, got ", length));
  }
  OutputTypes outputs(in.begin(), in.end());
  for (const TensorType& state : in) {
    Shape shape = {length};
    shape.insert(shape.end(), state.shape.begin(), state.shape.end());
    outputs.push_back({state.dtype, std::move(shape)});
  }
  return outputs;
}

// A loop is the nodes between a scan_begin and its scan_end, run once per
// iteration: only lowering runs it, and the reference runs the recurrence
// before its decomposition.
absl::Status ScanEval(const Node& node, absl::Span<const Tensor* const>, absl::Span<Tensor>) {
  return absl::UnimplementedError(
      absl::StrCat("'", node.op,
                   "' marks one end of a loop that only lowering runs (decompose's rnn: LOOP); "
                   "the interpreter runs a recurrence before it is decomposed"));
}

OpDef ScanOp(const char* name, int min_inputs, std::vector<AttrSpec> attrs, ShapeFn infer) {
  OpDef def;
  def.name = name;
  def.min_inputs = min_inputs;
  def.max_inputs = -1;
  def.num_outputs = -1;
  def.attrs = std::move(attrs);
  def.infer = std::move(infer);
  def.eval = ScanEval;
  return def;
}

}  // namespace

absl::Status RegisterRecurrentOps(OpRegistry& registry) {
  std::vector<OpDef> defs = {
      Composite(RecurrentOp(RecurrentCell::kLstm)),
      Composite(RecurrentOp(RecurrentCell::kGru)),
      Composite(RecurrentOp(RecurrentCell::kRnn)),
      Composite(ScanOp("scan_begin", 2,
                       {{"states", AttrType::kInt, true}, {"reverse", AttrType::kInt, false}},
                       ScanBeginShape)),
      Composite(ScanOp("scan_end", 1,
                       {{"length", AttrType::kInt, true}, {"reverse", AttrType::kInt, false}},
                       ScanEndShape)),
  };
  for (OpDef& def : defs) def = WithPattern(std::move(def), OpPattern::kOpaque);
  return RegisterAll(registry, std::move(defs));
}

}  // namespace loom
