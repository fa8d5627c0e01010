// lstm / gru / rnn: shapes, checks and errors. Their values are checked
// against hand-worked numbers and against the decomposition in
// passes/decompose_rnn_test.cc.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/ops/op_test_util.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor F32(Shape shape) { return Tensor(DType::kF32, std::move(shape)); }

// lstm with seq 5, batch 2, input 3, hidden 4, one direction, layout 0.
std::vector<Tensor> LstmInputs() {
  return {F32({5, 2, 3}), F32({1, 16, 3}), F32({1, 16, 4}), F32({1, 32})};
}

Attrs Hidden(int64_t hidden, std::initializer_list<std::pair<std::string, AttrValue>> more = {}) {
  Attrs attrs = MakeAttrs(more);
  attrs.Set("hidden_size", hidden);
  return attrs;
}

// Shape inference on a graph holding one node of `op` with `outputs`
// outputs; returns the output types or the error.
absl::StatusOr<std::vector<TensorType>> Infer(const std::string& op,
                                              const std::vector<Tensor>& inputs, const Attrs& attrs,
                                              int outputs) {
  Graph graph;
  std::vector<ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back(graph.AddInput(absl::StrCat("in", i), inputs[i].type()).value());
  }
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) names.push_back(absl::StrCat("out", i));
  const NodeId node = graph.AddNode(kTestNode, op, ids, names, attrs).value();
  LOOM_RETURN_IF_ERROR(InferShapes(graph));
  std::vector<TensorType> types;
  for (ValueId id : graph.node(node).outputs) types.push_back(graph.value(id).type);
  return types;
}

TEST(RecurrentTest, OutputShapesFollowTheLayout) {
  absl::StatusOr<std::vector<TensorType>> types = Infer("lstm", LstmInputs(), Hidden(4), 3);
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_THAT(*types,
              ElementsAre(TensorType{DType::kF32, {5, 1, 2, 4}}, TensorType{DType::kF32, {1, 2, 4}},
                          TensorType{DType::kF32, {1, 2, 4}}));

  // Batch-first and bidirectional: X [batch 2, seq 5, input 3].
  types =
      Infer("gru",
            {F32({2, 5, 3}), F32({2, 12, 3}), F32({2, 12, 4}), F32({2, 24}),
             Tensor(DType::kI32, {2}), F32({2, 2, 4})},
            Hidden(4, {{"layout", int64_t{1}}, {"direction", std::string("bidirectional")}}), 2);
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_THAT(*types, ElementsAre(TensorType{DType::kF32, {2, 5, 2, 4}},
                                  TensorType{DType::kF32, {2, 2, 4}}));

  types = Infer("rnn", {F32({5, 2, 3}), F32({1, 4, 3}), F32({1, 4, 4})}, Hidden(4), 1);
  ASSERT_TRUE(types.ok()) << types.status();
  EXPECT_THAT(*types, ElementsAre(TensorType{DType::kF32, {5, 1, 2, 4}}));
}

TEST(RecurrentTest, WeightShapesAreChecked) {
  struct Case {
    int index;
    Tensor replacement;
    const char* message;
  };
  const Case cases[] = {
      {1, F32({1, 12, 3}),
       "input 'W' (1) has shape [1,12,3], expected [1,16,3] (num_directions, "
       "4*hidden_size, input_size)"},
      {2, F32({1, 16, 3}),
       "input 'R' (2) has shape [1,16,3], expected [1,16,4] (num_directions, "
       "4*hidden_size, hidden_size)"},
      {3, F32({1, 16}),
       "input 'B' (3) has shape [1,16], expected [1,32] (num_directions, "
       "2*4*hidden_size)"},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> inputs = LstmInputs();
    inputs[c.index] = c.replacement;
    EXPECT_EQ(RunOpError("lstm", inputs, Hidden(4)),
              absl::StrCat("INVALID_ARGUMENT: node 'test_node' (lstm): ", c.message));
  }
  // The optional inputs behind B.
  std::vector<Tensor> inputs = LstmInputs();
  inputs.push_back(Tensor(DType::kI64, {3}));
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)),
              HasSubstr("input 'sequence_lens' (4) has shape [3], expected "
                        "[2] (batch)"));
  inputs.back() = Tensor(DType::kF32, {2});
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)),
              HasSubstr("input 'sequence_lens' (4) has dtype f32, expected "
                        "i32 or i64"));
  inputs.back() = Tensor(DType::kI64, {2});
  inputs.push_back(F32({2, 1, 4}));  // batch-first state, layout 0
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)),
              HasSubstr("input 'initial_h' (5) has shape [2,1,4], expected "
                        "[1,2,4] (num_directions, batch, hidden_size)"));
  inputs.back() = F32({1, 2, 4});
  inputs.push_back(F32({1, 2, 4}));
  inputs.push_back(F32({1, 4}));
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)),
              HasSubstr("input 'P' (7) has shape [1,4], expected [1,12] "
                        "(num_directions, 3*hidden_size)"));
  inputs.back() = Tensor(DType::kF64, {1, 12});
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)),
              HasSubstr("input 'P' (7) has dtype f64 but X has f32"));
  // A bidirectional gru wants two directions of weights.
  EXPECT_THAT(RunOpError("gru", {F32({5, 2, 3}), F32({1, 12, 3}), F32({1, 12, 4})},
                         Hidden(4, {{"direction", std::string("bidirectional")}})),
              HasSubstr("input 'W' (1) has shape [1,12,3], expected [2,12,3] "
                        "(num_directions, 3*hidden_size, input_size)"));
}

TEST(RecurrentTest, XMustBeFloatRank3) {
  std::vector<Tensor> inputs = LstmInputs();
  inputs[0] = F32({5, 6});
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)),
              HasSubstr("input 'X' (0) has shape [5,6], expected rank 3 (seq, "
                        "batch, input_size)"));
  inputs[0] = Tensor(DType::kI32, {5, 2, 3});
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)), HasSubstr("input 'X' (0) has dtype i32"));
}

TEST(RecurrentTest, AttributeErrors) {
  const std::vector<Tensor> inputs = LstmInputs();
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(0)),
              HasSubstr("attribute 'hidden_size' must be positive, got 0"));
  EXPECT_THAT(RunOpError("lstm", inputs, MakeAttrs({})),
              HasSubstr("missing required attribute 'hidden_size'"));
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4, {{"direction", std::string("up")}})),
              HasSubstr("attribute 'direction' is 'up', expected 'forward', 'reverse' "
                        "or 'bidirectional'"));
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4, {{"layout", int64_t{2}}})),
              HasSubstr("attribute 'layout' must be 0 or 1, got 2"));
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4, {{"clip", -1.0}})),
              HasSubstr("attribute 'clip' must be positive, got -1"));
  EXPECT_THAT(RunOpError("lstm", inputs,
                         Hidden(4, {{"activations", std::vector<std::string>{"sigmoid", "tanh"}}})),
              HasSubstr("attribute 'activations' has 2 entries, expected 3"));
  EXPECT_THAT(RunOpError("rnn", {F32({5, 2, 3}), F32({1, 4, 3}), F32({1, 4, 4})},
                         Hidden(4, {{"activations", std::vector<std::string>{"elu"}}})),
              HasSubstr("unsupported activation 'elu' (supported: sigmoid, tanh, "
                        "relu)"));
  // Attributes of the other cells are unknown.
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4, {{"linear_before_reset", int64_t{1}}})),
              HasSubstr("unknown attribute 'linear_before_reset'"));
  EXPECT_THAT(RunOpError("gru", {F32({5, 2, 3}), F32({1, 12, 3}), F32({1, 12, 4})},
                         Hidden(4, {{"input_forget", int64_t{1}}})),
              HasSubstr("unknown attribute 'input_forget'"));
}

TEST(RecurrentTest, ArityErrors) {
  EXPECT_THAT(RunOpError("lstm", {F32({5, 2, 3}), F32({1, 16, 3})}, Hidden(4)),
              HasSubstr("expected 3 to 8 inputs, got 2"));
  absl::StatusOr<std::vector<TensorType>> types =
      Infer("gru", {F32({5, 2, 3}), F32({1, 12, 3}), F32({1, 12, 4})}, Hidden(4), 3);
  EXPECT_THAT(types.status().ToString(),
              HasSubstr("node 'test_node' (gru): expected 3 to 6 inputs and 1 "
                        "to 2 outputs, got 3 and 3"));
}

TEST(RecurrentTest, SequenceLengthsOutOfRangeFailAtRunTime) {
  std::vector<Tensor> inputs = LstmInputs();
  inputs.push_back(MakeIntTensor(DType::kI32, {2}, {5, 6}));
  EXPECT_EQ(RunOpError("lstm", inputs, Hidden(4)),
            "INVALID_ARGUMENT: node 'test_node' (lstm): sequence_lens[1] is "
            "6, outside [0, 5] (the sequence length)");
  inputs.back() = MakeIntTensor(DType::kI32, {2}, {-1, 0});
  EXPECT_THAT(RunOpError("lstm", inputs, Hidden(4)), HasSubstr("sequence_lens[0] is -1"));
}

// Y is zero past an entry's length, and a zero length leaves the state as
// it was.
TEST(RecurrentTest, ZeroLengthKeepsTheInitialState) {
  Tensor x = Iota(DType::kF32, {3, 2, 1}, 0.5, 0.25);
  Tensor w = MakeTensor(DType::kF32, {1, 1, 1}, {0.7});
  Tensor r = MakeTensor(DType::kF32, {1, 1, 1}, {-0.4});
  Tensor b = MakeTensor(DType::kF32, {1, 2}, {0.1, 0.2});
  Tensor lens = MakeIntTensor(DType::kI64, {2}, {3, 0});
  Tensor h0 = MakeTensor(DType::kF32, {1, 2, 1}, {0.3, -0.9});
  Graph graph;
  std::vector<ValueId> ids;
  int i = 0;
  for (const Tensor* t : {&x, &w, &r, &b, &lens, &h0}) {
    ids.push_back(graph.AddInput(absl::StrCat("in", i++), t->type()).value());
  }
  graph.AddNode("rnn", "rnn", ids, {"y", "y_h"}, Hidden(1)).value();
  graph.AddOutput(graph.FindValue("y"));
  graph.AddOutput(graph.FindValue("y_h"));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<std::vector<Tensor>> out = Interpret(graph, {x, w, r, b, lens, h0});
  ASSERT_TRUE(out.ok()) << out.status();
  // Entry 1's column of Y [3, 1, 2, 1] is zero; its Y_h is initial_h.
  const std::vector<double> y = ToDoubles((*out)[0]);
  EXPECT_EQ(y[1], 0);
  EXPECT_EQ(y[3], 0);
  EXPECT_EQ(y[5], 0);
  EXPECT_NE(y[4], 0);
  EXPECT_FLOAT_EQ(ToDoubles((*out)[1])[1], -0.9f);
  // Entry 0: h = tanh(0.7 x + 0.3 - 0.4 h).
  double h = 0.3;
  for (int t = 0; t < 3; ++t) {
    h = std::tanh(0.7 * (0.5 + 0.5 * t) + 0.3 - 0.4 * h);
    EXPECT_NEAR(y[2 * t], h, 1e-6) << t;
  }
  EXPECT_NEAR(ToDoubles((*out)[1])[0], h, 1e-6);
}

}  // namespace
}  // namespace loom
