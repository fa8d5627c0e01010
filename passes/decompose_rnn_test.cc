// The unrolled lstm / gru / rnn against the interpreter's reference
// implementation of the op, and both against values worked out by hand.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/verifier.h"
#include "passes/decompose.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// One recurrent node to build: the op, its attributes and which of its
// optional inputs and outputs it has.
struct RnnCase {
  std::string op = "lstm";
  std::string direction = "forward";
  int64_t layout = 0;
  // How many of the node's inputs are given (optional ones are trailing):
  // 3 = X, W, R; 4 adds B; 5 sequence_lens; 6 initial_h; 7 initial_c; 8 P.
  int inputs = 3;
  // sequence_lens (when given) is a graph input with mixed lengths; else a
  // constant holding seq for every entry.
  bool mixed_lens = false;
  int outputs = 1;
  Attrs attrs;  // beyond hidden_size, direction and layout
  int64_t seq = 4;
  int64_t batch = 3;
  int64_t input = 2;
  int64_t hidden = 3;

  int64_t Dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t Gates() const { return op == "lstm" ? 4 : op == "gru" ? 3 : 1; }
  std::string Describe() const {
    std::string attrs_text;
    for (const auto& [name, value] : attrs.entries()) {
      absl::StrAppend(&attrs_text, " ", name);
    }
    return absl::StrCat(op, " ", direction, " layout ", layout, " inputs ", inputs,
                        mixed_lens ? " mixed lens" : "", " outputs ", outputs, " seq ", seq,
                        attrs_text);
  }
};

int64_t LensValue(int64_t b, int64_t seq) {
  const int64_t pattern[] = {2, seq, 0};
  return std::min(pattern[b % 3], seq);
}

Module BuildModule(const RnnCase& c) {
  Module module;
  Graph& g = module.graph;
  const int64_t nd = c.Dirs(), rows = c.Gates() * c.hidden;
  const Shape state = c.layout == 1 ? Shape{c.batch, nd, c.hidden} : Shape{nd, c.batch, c.hidden};
  const Shape x_shape =
      c.layout == 1 ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
  const std::vector<std::pair<std::string, Shape>> float_inputs = {
      {"X", x_shape},        {"W", {nd, rows, c.input}}, {"R", {nd, rows, c.hidden}},
      {"B", {nd, 2 * rows}}, {"sequence_lens", {}},      {"initial_h", state},
      {"initial_c", state},  {"P", {nd, 3 * c.hidden}}};
  std::vector<ValueId> inputs;
  for (int i = 0; i < c.inputs; ++i) {
    const auto& [name, shape] = float_inputs[i];
    if (name == "sequence_lens") {
      const TensorType type{DType::kI64, {c.batch}};
      if (c.mixed_lens) {
        inputs.push_back(g.AddInput(name, type).value());
      } else {
        Tensor full(type);
        for (int64_t b = 0; b < c.batch; ++b) full.SetInt(b, c.seq);
        inputs.push_back(g.AddInitializer(name, ValueKind::kConstant, full).value());
      }
      continue;
    }
    inputs.push_back(g.AddInput(name, {DType::kF32, shape}).value());
  }
  Attrs attrs = c.attrs;
  attrs.Set("hidden_size", c.hidden);
  attrs.Set("direction", c.direction);
  attrs.Set("layout", c.layout);
  const std::vector<std::string> outputs = {"y", "y_h", "y_c"};
  g.AddNode("cell", c.op, inputs,
            std::vector<std::string>(outputs.begin(), outputs.begin() + c.outputs), attrs)
      .value();
  for (int i = 0; i < c.outputs; ++i) g.AddOutput(g.FindValue(outputs[i]));
  absl::Status inferred = InferShapes(g);
  EXPECT_TRUE(inferred.ok()) << inferred;
  return module;
}

std::unique_ptr<DecomposePass> DecomposeRnn(
    proto::DecomposeOptions::RnnMode mode = proto::DecomposeOptions::UNROLL) {
  proto::DecomposeOptions options;
  for (const char* op : {"lstm", "gru", "rnn"}) options.add_ops(op);
  options.set_rnn(mode);
  return DecomposePass::Create(options).value();
}

// The ops lowering supports, which is all a decomposition may emit.
const std::set<std::string>& Primitives() {
  static const auto* ops = new std::set<std::string>{
      "add",       "sub",    "mul",     "div",       "neg",   "exp",     "tanh",   "sigmoid",
      "relu",      "matmul", "reshape", "transpose", "slice", "split",   "concat", "squeeze",
      "unsqueeze", "expand", "where",   "cast",      "less",  "minimum", "maximum"};
  return *ops;
}

std::map<std::string, int> OpCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node& node : graph.nodes()) ++counts[std::string(node.op)];
  return counts;
}

void ExpectNear(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(TypeToString(got.type()), TypeToString(want.type())) << what;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double w = want.GetDouble(i), a = got.GetDouble(i);
    EXPECT_NEAR(a, w, tolerance * std::max(1.0, std::fabs(w))) << what << ", element " << i;
  }
}

// Decomposes `c`'s node and checks the result against the interpreter on
// the original op, for random inputs.
void ExpectDecompositionMatches(const RnnCase& c) {
  SCOPED_TRACE(c.Describe());
  Module module = BuildModule(c);
  const Graph original = module.graph;
  absl::StatusOr<bool> changed = DecomposeRnn()->Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  const Graph& unrolled = module.graph;
  absl::Status verified = VerifyGraph(unrolled);
  ASSERT_TRUE(verified.ok()) << verified;
  for (const Node& node : unrolled.nodes()) {
    EXPECT_TRUE(Primitives().count(std::string(node.op))) << node.name << ": " << node.op;
  }

  std::vector<Tensor> inputs;
  for (ValueId id : original.inputs()) {
    const Value& value = original.value(id);
    Tensor tensor(value.type);
    if (value.name == "sequence_lens") {
      for (int64_t b = 0; b < c.batch; ++b) {
        tensor.SetInt(b, LensValue(b, c.seq));
      }
    } else {
      FillUniform(tensor, 17 * (inputs.size() + 1), value.name == "X" ? -1 : -0.6,
                  value.name == "X" ? 1 : 0.6);
    }
    inputs.push_back(std::move(tensor));
  }
  absl::StatusOr<std::vector<Tensor>> want = Interpret(original, inputs);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(unrolled, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    ExpectNear((*got)[i], (*want)[i], 1e-5, absl::StrCat("output ", i));
  }
}

const char* const kDirections[] = {"forward", "reverse", "bidirectional"};

int MaxInputs(const std::string& op) { return op == "lstm" ? 8 : 6; }
int MaxOutputs(const std::string& op) { return op == "lstm" ? 3 : 2; }

// Every cell, direction and layout; without B, with B only, with every
// input and runtime mixed sequence lengths, and with initial states but
// constant full lengths (no masking).
TEST(DecomposeRnnTest, MatchesTheInterpreterEverywhere) {
  for (const char* op : {"lstm", "gru", "rnn"}) {
    for (const char* direction : kDirections) {
      for (int64_t layout : {0, 1}) {
        RnnCase c;
        c.op = op;
        c.direction = direction;
        c.layout = layout;
        c.outputs = MaxOutputs(op);
        for (int inputs : {3, 4}) {
          c.inputs = inputs;
          ExpectDecompositionMatches(c);
        }
        c.inputs = MaxInputs(op);
        for (bool mixed : {true, false}) {
          c.mixed_lens = mixed;
          ExpectDecompositionMatches(c);
        }
      }
    }
  }
}

TEST(DecomposeRnnTest, LstmOptions) {
  for (const char* direction : kDirections) {
    for (int64_t layout : {0, 1}) {
      RnnCase c;
      c.direction = direction;
      c.layout = layout;
      c.inputs = 8;  // with peepholes
      c.mixed_lens = true;
      c.outputs = 3;
      c.attrs.Set("clip", 0.4);
      ExpectDecompositionMatches(c);
      c.attrs = Attrs();
      c.attrs.Set("input_forget", int64_t{1});
      ExpectDecompositionMatches(c);
      c.attrs.Set("clip", 0.3);
      c.inputs = 5;  // no peepholes: the gates are clipped at once
      ExpectDecompositionMatches(c);
      c.attrs = Attrs();
      c.attrs.Set("activations", std::vector<std::string>{"relu", "sigmoid", "tanh"});
      ExpectDecompositionMatches(c);
    }
  }
}

TEST(DecomposeRnnTest, LstmWithFewerOutputs) {
  for (int outputs : {1, 2}) {
    RnnCase c;
    c.direction = "bidirectional";
    c.inputs = 7;
    c.mixed_lens = true;
    c.outputs = outputs;
    ExpectDecompositionMatches(c);
  }
}

TEST(DecomposeRnnTest, GruOptions) {
  for (const char* direction : kDirections) {
    for (int64_t layout : {0, 1}) {
      for (int64_t linear_before_reset : {0, 1}) {
        for (int inputs : {3, 6}) {
          RnnCase c;
          c.op = "gru";
          c.direction = direction;
          c.layout = layout;
          c.inputs = inputs;
          c.mixed_lens = true;
          c.outputs = 2;
          c.attrs.Set("linear_before_reset", linear_before_reset);
          ExpectDecompositionMatches(c);
          c.attrs.Set("clip", 0.5);
          ExpectDecompositionMatches(c);
        }
      }
    }
  }
}

TEST(DecomposeRnnTest, RnnActivationsAndClip) {
  for (const char* direction : kDirections) {
    RnnCase c;
    c.op = "rnn";
    c.direction = direction;
    c.inputs = 6;
    c.mixed_lens = true;
    c.outputs = 2;
    c.attrs.Set("activations", std::vector<std::string>{"relu"});
    ExpectDecompositionMatches(c);
    c.attrs.Set("clip", 0.25);
    ExpectDecompositionMatches(c);
  }
  // One activation per direction.
  RnnCase c;
  c.op = "rnn";
  c.direction = "bidirectional";
  c.inputs = 4;
  c.attrs.Set("activations", std::vector<std::string>{"Relu", "sigmoid"});
  ExpectDecompositionMatches(c);
}

TEST(DecomposeRnnTest, SingleStepAndWideBatch) {
  for (const char* op : {"lstm", "gru", "rnn"}) {
    RnnCase c;
    c.op = op;
    c.direction = "bidirectional";
    c.layout = 1;
    c.inputs = MaxInputs(op);
    c.mixed_lens = true;
    c.outputs = MaxOutputs(op);
    c.seq = 1;
    c.batch = 5;
    ExpectDecompositionMatches(c);
  }
}

// --- Structure --------------------------------------------------------------

int NodeCount(RnnCase c, int64_t seq) {
  c.seq = seq;
  Module module = BuildModule(c);
  EXPECT_TRUE(DecomposeRnn()->Run(module).ok());
  return static_cast<int>(module.graph.nodes().size());
}

// `c`'s node decomposed with `mode`, its graph verified.
Graph Decomposed(const RnnCase& c, proto::DecomposeOptions::RnnMode mode) {
  Module module = BuildModule(c);
  EXPECT_TRUE(DecomposeRnn(mode)->Run(module).ok());
  EXPECT_TRUE(VerifyGraph(module.graph).ok()) << VerifyGraph(module.graph);
  return std::move(module.graph);
}

// Kept as a loop, a recurrence is one step between a scan_begin and a
// scan_end a direction, whatever its length: its graph does not grow with
// the sequence. (Its values are checked end to end, compiled: lowering runs
// the loop, the interpreter does not.)
TEST(DecomposeRnnTest, KeptAsALoopTheGraphDoesNotGrowWithTheSequence) {
  for (const char* op : {"lstm", "gru", "rnn"}) {
    for (const char* direction : kDirections) {
      RnnCase c;
      c.op = op;
      c.direction = direction;
      c.inputs = MaxInputs(op);
      c.mixed_lens = true;
      c.outputs = MaxOutputs(op);
      SCOPED_TRACE(c.Describe());
      c.seq = 4;
      const Graph short_graph = Decomposed(c, proto::DecomposeOptions::LOOP);
      c.seq = 400;
      const Graph long_graph = Decomposed(c, proto::DecomposeOptions::LOOP);
      EXPECT_EQ(OpCounts(short_graph), OpCounts(long_graph));
      EXPECT_EQ(OpCounts(long_graph)["scan_begin"], c.Dirs());
      EXPECT_EQ(OpCounts(long_graph)["scan_end"], c.Dirs());
      for (const Node& node : long_graph.nodes()) {
        const std::string name(node.op);
        EXPECT_TRUE(Primitives().count(name) || name == "reduce_sum" ||
                    absl::StartsWith(name, "scan_"))
            << node.name << ": " << node.op;
      }
    }
  }
}

// rnn: AUTO keeps a recurrence as a loop where that measured as fast as
// unrolling it (LoopPays, decompose_rnn.cc).
TEST(DecomposeRnnTest, AutoKeepsAsLoopsWhatRunsAsFastAsUnrolled) {
  struct Case {
    int64_t batch, hidden;
    bool loop;
  };
  for (const Case& e : {Case{1, 64, true}, Case{64, 64, true}, Case{2, 128, true},
                        Case{1, 128, false}, Case{8, 256, false}, Case{64, 256, false}}) {
    RnnCase c;
    c.batch = e.batch;
    c.hidden = e.hidden;
    c.seq = 3;
    const Graph graph = Decomposed(c, proto::DecomposeOptions::AUTO);
    EXPECT_EQ(OpCounts(graph)["scan_begin"], e.loop ? 1 : 0)
        << "batch " << e.batch << ", hidden " << e.hidden;
  }
}

// The graph grows by a fixed number of nodes per step: Inductor's shape,
// with no quadratic concat chains.
TEST(DecomposeRnnTest, NodesPerStep) {
  struct Expected {
    const char* op;
    int per_step;
  };
  // (Each step's rows of xw come from one split per direction.) lstm:
  // matmul, add, a split into i-o-f and c, a sigmoid of i-o-f and a split of
  // it, tanh of c, 2 muls and an add for the cell, tanh and mul for h. gru:
  // a split of the rows into z-r and h, matmul, add, a sigmoid of z-r and a
  // split of it, r.H, matmul, add, tanh, sub, mul, add. rnn: matmul, add,
  // tanh.
  for (const Expected& e : {Expected{"lstm", 11}, Expected{"gru", 12}, Expected{"rnn", 3}}) {
    RnnCase c;
    c.op = e.op;
    c.inputs = 4;
    c.outputs = MaxOutputs(e.op);
    EXPECT_EQ(NodeCount(c, 12) - NodeCount(c, 4), 8 * e.per_step) << e.op;
    // Masking adds a where per state per step and a mask slice per step.
    c.inputs = e.op == std::string("lstm") ? 7 : 6;  // no peepholes
    c.mixed_lens = true;
    const int masked = e.per_step + (e.op == std::string("lstm") ? 3 : 2);
    EXPECT_EQ(NodeCount(c, 12) - NodeCount(c, 4), 8 * masked) << e.op;
    // Two directions share the step masks.
    c.direction = "bidirectional";
    EXPECT_EQ(NodeCount(c, 12) - NodeCount(c, 4), 8 * (2 * masked - 1)) << e.op;
  }
}

TEST(DecomposeRnnTest, OneInputProjectionPerDirectionAndOneRecurrentMatmulPerStep) {
  RnnCase c;
  c.direction = "bidirectional";
  c.inputs = 4;
  c.seq = 5;
  Module module = BuildModule(c);
  ASSERT_TRUE(DecomposeRnn()->Run(module).value());
  std::map<std::string, int> counts = OpCounts(module.graph);
  EXPECT_EQ(counts["matmul"], 2 * (1 + 5));
  // Each direction's steps are concatenated once.
  EXPECT_EQ(counts["concat"], 2 + 1);  // y rows per direction, Y
  EXPECT_EQ(counts["where"], 0);
  // The projection reads all of X at once, as [seq*batch, input].
  for (const Node& node : module.graph.nodes()) {
    if (node.name == "cell/d0/xw") {
      EXPECT_EQ(module.graph.value(node.outputs[0]).type.shape, (Shape{5 * 3, 4 * 3}));
    }
  }
}

// A long sequence of a large batch is projected a chunk of steps at a time,
// each chunk's product just before its steps (256 KiB of xw at most, 128
// rows at least), visited forwards or back, and still computes the same.
TEST(DecomposeRnnTest, LongSequencesOfLargeBatchesAreProjectedInChunks) {
  struct Expected {
    const char* op;
    int chunk;  // steps a chunk
  };
  // Steps of 64 x 64 x gates floats: lstm 64 KiB (4 steps a chunk), gru 48
  // KiB (5), rnn 16 KiB (16: the whole sequence).
  for (const Expected& e : {Expected{"lstm", 4}, Expected{"gru", 5}, Expected{"rnn", 10}}) {
    RnnCase c;
    c.op = e.op;
    c.direction = "bidirectional";
    c.layout = 1;
    c.inputs = MaxInputs(e.op);
    c.mixed_lens = true;
    c.outputs = MaxOutputs(e.op);
    c.seq = 10;
    c.batch = 64;
    c.input = 8;
    c.hidden = 64;
    ExpectDecompositionMatches(c);

    Module module = BuildModule(c);
    ASSERT_TRUE(DecomposeRnn()->Run(module).value());
    int projections = 0;
    std::vector<int> steps_before_d0_projections;  // d0 runs forwards
    int d0_steps = 0;
    for (const Node& node : module.graph.nodes()) {
      if (node.op != "matmul") continue;
      const bool d0 = absl::StartsWith(node.name, "cell/d0/");
      if (absl::EndsWith(node.name, "/hr")) {
        d0_steps += d0;
      } else if (absl::EndsWith(node.name, "/xw")) {
        ++projections;
        if (d0) steps_before_d0_projections.push_back(d0_steps);
      }
    }
    std::vector<int> chunk_starts;
    for (int k = 0; k < c.seq; k += e.chunk) chunk_starts.push_back(k);
    EXPECT_EQ(projections, 2 * static_cast<int>(chunk_starts.size())) << e.op;
    EXPECT_EQ(steps_before_d0_projections, chunk_starts)
        << e.op << ": each chunk's product comes right before its steps";
  }
}

TEST(DecomposeRnnTest, ConstantFullLengthsNeedNoMask) {
  for (const char* op : {"lstm", "gru", "rnn"}) {
    RnnCase c;
    c.op = op;
    c.inputs = MaxInputs(op);
    Module module = BuildModule(c);
    ASSERT_TRUE(DecomposeRnn()->Run(module).value());
    std::map<std::string, int> counts = OpCounts(module.graph);
    EXPECT_EQ(counts["where"], 0) << op;
    EXPECT_EQ(counts["less"], 0) << op;
  }
}

TEST(DecomposeRnnTest, OutputsKeepTheirValuesAndConsumers) {
  RnnCase c;
  c.inputs = 7;
  c.mixed_lens = true;
  c.outputs = 3;
  Module module = BuildModule(c);
  const std::vector<ValueId> outputs = module.graph.outputs();
  ASSERT_TRUE(DecomposeRnn()->Run(module).value());
  EXPECT_EQ(module.graph.outputs(), outputs);
  for (ValueId id : outputs) {
    ASSERT_NE(module.graph.value(id).producer, kNoNode);
    EXPECT_THAT(module.graph.node(module.graph.value(id).producer).name, HasSubstr("cell/y"));
  }
}

// --- Hand-computed cases ----------------------------------------------------

// A graph of one `op` node whose inputs are all constants, except X.
struct HandCase {
  std::string op;
  Attrs attrs;
  Tensor x;
  std::vector<Tensor> constants;  // W, R, B, ... in order
  int outputs;
};

Tensor Values(Shape shape, std::vector<double> values) {
  Tensor tensor(DType::kF32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) tensor.SetDouble(i, values[i]);
  return tensor;
}

Tensor Lengths(std::vector<int64_t> lengths) {
  Tensor tensor(DType::kI32, {static_cast<int64_t>(lengths.size())});
  for (size_t i = 0; i < lengths.size(); ++i) tensor.SetInt(i, lengths[i]);
  return tensor;
}

// Runs the case through the interpreter as is and decomposed; checks both
// against `want` (one vector per output) to 1e-5 relative.
void ExpectHandValues(const HandCase& c, const std::vector<std::vector<double>>& want) {
  Graph graph;
  std::vector<ValueId> inputs = {graph.AddInput("X", c.x.type()).value()};
  for (size_t i = 0; i < c.constants.size(); ++i) {
    inputs.push_back(
        graph.AddInitializer(absl::StrCat("c", i), ValueKind::kConstant, c.constants[i]).value());
  }
  const std::vector<std::string> names = {"y", "y_h", "y_c"};
  graph
      .AddNode("cell", c.op, inputs,
               std::vector<std::string>(names.begin(), names.begin() + c.outputs), c.attrs)
      .value();
  for (int i = 0; i < c.outputs; ++i) graph.AddOutput(graph.FindValue(names[i]));
  ASSERT_TRUE(InferShapes(graph).ok()) << InferShapes(graph);

  Module module;
  module.graph = graph;
  ASSERT_TRUE(DecomposeRnn()->Run(module).value());
  for (const Graph* g : {&graph, &module.graph}) {
    SCOPED_TRACE(g == &graph ? "reference op" : "decomposed");
    absl::StatusOr<std::vector<Tensor>> got = Interpret(*g, {c.x});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ((*got)[k].num_elements(), static_cast<int64_t>(want[k].size())) << "output " << k;
      for (size_t i = 0; i < want[k].size(); ++i) {
        EXPECT_NEAR((*got)[k].GetDouble(i), want[k][i], 1e-5 * std::max(1.0, std::fabs(want[k][i])))
            << "output " << k << ", element " << i;
      }
    }
  }
}

Attrs CellAttrs(std::string direction, std::vector<std::string> activations = {}) {
  Attrs attrs;
  attrs.Set("hidden_size", int64_t{1});
  attrs.Set("direction", std::move(direction));
  if (!activations.empty()) attrs.Set("activations", std::move(activations));
  return attrs;
}

// h_t = relu(2 x_t + 0.5 h_{t-1} + 1): exact in binary.
TEST(DecomposeRnnTest, HandRnnRelu) {
  HandCase c{"rnn",
             CellAttrs("forward", {"relu"}),
             Values({2, 1, 1}, {1, 3}),
             {Values({1, 1, 1}, {2}), Values({1, 1, 1}, {0.5}), Values({1, 2}, {1, 0})},
             2};
  // h1 = relu(2 + 1) = 3; h2 = relu(6 + 1.5 + 1) = 8.5.
  ExpectHandValues(c, {{3, 8.5}, {8.5}});
  // Backwards: h(t=1) = relu(6 + 1) = 7; h(t=0) = relu(2 + 3.5 + 1) = 6.5.
  c.attrs = CellAttrs("reverse", {"relu"});
  ExpectHandValues(c, {{6.5, 7}, {6.5}});
}

// Two entries, the second of length 1: Y is 0 past it and Y_h is its state
// after step 0, in both directions.
TEST(DecomposeRnnTest, HandSequenceLengths) {
  HandCase c{
      "rnn",
      CellAttrs("forward", {"relu"}),
      Values({2, 2, 1}, {1, 1, 3, 3}),  // X[t][b]
      {Values({1, 1, 1}, {2}), Values({1, 1, 1}, {0.5}), Values({1, 2}, {1, 0}), Lengths({2, 1})},
      2};
  // Y [seq, 1, batch, 1]: t0 = {3, 3}, t1 = {8.5, 0}.
  ExpectHandValues(c, {{3, 3, 8.5, 0}, {8.5, 3}});
  c.attrs = CellAttrs("reverse", {"relu"});
  // Entry 1 only runs t = 0 from the zero state: relu(2 + 1) = 3.
  ExpectHandValues(c, {{6.5, 3, 7, 0}, {6.5, 3}});
  c.attrs = CellAttrs("bidirectional", {"relu"});
  c.constants = {Values({2, 1, 1}, {2, 2}), Values({2, 1, 1}, {0.5, 0.5}),
                 Values({2, 2}, {1, 0, 1, 0}), Lengths({2, 1})};
  // Y [seq, 2, batch, 1]: t0 = {fw {3, 3}, bw {6.5, 3}}, t1 = {fw {8.5, 0},
  // bw {7, 0}}; Y_h [2, batch, 1] = {fw {8.5, 3}, bw {6.5, 3}}.
  ExpectHandValues(c, {{3, 3, 6.5, 3, 8.5, 0, 7, 0}, {8.5, 3, 6.5, 3}});
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// W = (i, o, f, c) = (0, 0, 0, 1), R = 0, B = 0: i = o = f = 1/2 and the
// candidate is tanh(x); with peepholes (i, o, f) = (1, 2, 0), i and o see
// the cell state.
TEST(DecomposeRnnTest, HandLstm) {
  const double x1 = 1, x2 = 2;
  HandCase c{"lstm",
             CellAttrs("forward"),
             Values({2, 1, 1}, {x1, x2}),
             {Values({1, 4, 1}, {0, 0, 0, 1}), Values({1, 4, 1}, {0, 0, 0, 0})},
             3};
  {
    const double c1 = 0.5 * std::tanh(x1), h1 = 0.5 * std::tanh(c1);
    const double c2 = 0.5 * c1 + 0.5 * std::tanh(x2), h2 = 0.5 * std::tanh(c2);
    ExpectHandValues(c, {{h1, h2}, {h2}, {c2}});
  }
  c.constants.push_back(Values({1, 8}, {0, 0, 0, 0, 0, 0, 0, 0}));  // B
  c.constants.push_back(Lengths({2}));
  c.constants.push_back(Values({1, 1, 1}, {0}));     // initial_h
  c.constants.push_back(Values({1, 1, 1}, {0}));     // initial_c
  c.constants.push_back(Values({1, 3}, {1, 2, 0}));  // P: i, o, f
  {
    const double c1 = 0.5 * std::tanh(x1);
    const double h1 = Sigmoid(2 * c1) * std::tanh(c1);
    const double i2 = Sigmoid(c1);
    const double c2 = 0.5 * c1 + i2 * std::tanh(x2);
    const double h2 = Sigmoid(2 * c2) * std::tanh(c2);
    ExpectHandValues(c, {{h1, h2}, {h2}, {c2}});
  }
  // input_forget: f = 1 - i.
  c.attrs.Set("input_forget", int64_t{1});
  {
    const double c1 = 0.5 * std::tanh(x1);
    const double h1 = Sigmoid(2 * c1) * std::tanh(c1);
    const double i2 = Sigmoid(c1);
    const double c2 = (1 - i2) * c1 + i2 * std::tanh(x2);
    const double h2 = Sigmoid(2 * c2) * std::tanh(c2);
    ExpectHandValues(c, {{h1, h2}, {h2}, {c2}});
  }
}

// W = (z, r, h) = (0, 0, 1), R = (0, 0, 1), Rb = (0, 0, 1/2): z = r = 1/2.
TEST(DecomposeRnnTest, HandGru) {
  const double x1 = 1, x2 = 2;
  HandCase c{"gru",
             CellAttrs("forward"),
             Values({2, 1, 1}, {x1, x2}),
             {Values({1, 3, 1}, {0, 0, 1}), Values({1, 3, 1}, {0, 0, 1}),
              Values({1, 6}, {0, 0, 0, 0, 0, 0.5})},
             2};
  {
    // h~ = tanh(x + (r . H) * 1 + 1/2).
    const double h1 = 0.5 * std::tanh(x1 + 0.5);
    const double h2 = 0.5 * std::tanh(x2 + 0.5 * h1 + 0.5) + 0.5 * h1;
    ExpectHandValues(c, {{h1, h2}, {h2}});
  }
  c.attrs.Set("linear_before_reset", int64_t{1});
  {
    // h~ = tanh(x + r . (H * 1 + 1/2)).
    const double h1 = 0.5 * std::tanh(x1 + 0.25);
    const double h2 = 0.5 * std::tanh(x2 + 0.5 * (h1 + 0.5)) + 0.5 * h1;
    ExpectHandValues(c, {{h1, h2}, {h2}});
  }
  // clip 0.5 bounds the candidate's pre-activation.
  c.attrs.Set("clip", 0.5);
  {
    const double h1 = 0.5 * std::tanh(0.5);
    const double h2 = 0.5 * std::tanh(0.5) + 0.5 * h1;
    ExpectHandValues(c, {{h1, h2}, {h2}});
  }
}

// --- Errors ------------------------------------------------------------------

TEST(DecomposeRnnTest, EmptySequenceIsAnError) {
  RnnCase c;
  c.seq = 0;
  Module module = BuildModule(c);
  absl::StatusOr<bool> changed = DecomposeRnn()->Run(module);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(changed.status().message(),
              HasSubstr("node 'cell' (lstm): cannot unroll an empty sequence"));
}

}  // namespace
}  // namespace loom
