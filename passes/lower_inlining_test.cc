// Lowering's inlining: a pointwise value copied into its readers, or
// stored, and the decision it records with its reason.

#include "absl/algorithm/container.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"
#include "ir/op_registry.h"
#include "passes/lower.h"
#include "passes/lower_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;

// Lowering that records its inlining decisions (LoopProgram::inline_decisions).
LowerOptions RecordingDecisions() {
  LowerOptions options;
  options.record_inline_decisions = true;
  return options;
}
const LowerOptions kRecordDecisions = RecordingDecisions();

TEST(LowerInliningTest, PointwiseChainsBecomeOneComputeNode) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  const ValueId e = AddNode(graph, "exp", {x});
  const ValueId n = AddNode(graph, "neg", {e});
  graph.AddOutput(AddNode(graph, "tanh", {n}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph, kRecordDecisions);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->buffers.size(), 2);  // x and the output
  ASSERT_EQ(program->nodes.size(), 1);
  EXPECT_EQ(program->nodes[0].body.size(), 4);  // load, exp, neg, tanh
  // exp inlined into neg, neg into tanh, the compute node.
  EXPECT_EQ(program->inlined_values, 2);
  ASSERT_EQ(program->inline_decisions.size(), 2);
  const InlineDecision& exp = program->inline_decisions[0];
  const InlineDecision& neg = program->inline_decisions[1];
  EXPECT_EQ(exp.node, "exp0");
  EXPECT_EQ(exp.reason, InlineReason::kInlined);
  EXPECT_EQ(exp.amount, 2);  // load, exp
  EXPECT_THAT(exp.readers, ElementsAre(-2));
  EXPECT_EQ(InlineReaderName(*program, exp.readers[0]), "neg1");
  EXPECT_EQ(neg.reason, InlineReason::kInlined);
  EXPECT_THAT(neg.readers, ElementsAre(0));
  EXPECT_EQ(InlineReaderName(*program, neg.readers[0]), "tanh2");
}

TEST(LowerInliningTest, ValuesReadMoreThanOnceAreStored) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  const ValueId e = AddNode(graph, "exp", {x});
  graph.AddOutput(AddNode(graph, "add", {e, e}));  // e read twice
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph, kRecordDecisions);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->nodes.size(), 2);
  // Only e's decision: add is a graph output, stored whatever its size.
  ASSERT_EQ(program->inline_decisions.size(), 1);
  const InlineDecision& exp = program->inline_decisions[0];
  EXPECT_EQ(exp.node, "exp0");
  EXPECT_EQ(exp.reason, InlineReason::kReadRepeatedly);
  EXPECT_EQ(exp.amount, 64);
  EXPECT_EQ(exp.limit, 32);
  EXPECT_TRUE(exp.readers.empty());
}

TEST(LowerInliningTest, ProducersOfAMatmulAreStoredButSlicesOfOneValueInline) {
  ValueId x;
  Graph graph = GraphWithInput({8, 8}, x);
  const ValueId r = AddNode(graph, "relu", {x});
  graph.AddOutput(AddNode(graph, "matmul", {r, x}));  // r read 8 times
  const ValueId s = AddNode(graph, "sigmoid", {x});
  Attrs left, right;
  left.Set("starts", std::vector<int64_t>{0});
  left.Set("ends", std::vector<int64_t>{4});
  left.Set("axes", std::vector<int64_t>{1});
  right.Set("starts", std::vector<int64_t>{4});
  right.Set("ends", std::vector<int64_t>{8});
  right.Set("axes", std::vector<int64_t>{1});
  const ValueId a = AddNode(graph, "slice", {s}, left);
  const ValueId b = AddNode(graph, "slice", {s}, right);
  graph.AddOutput(AddNode(graph, "mul", {a, b}));  // each element of s once
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph, kRecordDecisions);
  ASSERT_TRUE(program.ok()) << program.status();
  // relu, matmul, and mul with sigmoid inlined twice.
  ASSERT_EQ(program->nodes.size(), 3);
  EXPECT_EQ(program->nodes[0].name, "relu0");
  EXPECT_EQ(program->nodes[2].name, "mul5");
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
  // sigmoid's one reader, through both slices, is mul.
  const auto sigmoid = absl::c_find_if(
      program->inline_decisions, [](const InlineDecision& d) { return d.node == "sigmoid2"; });
  ASSERT_NE(sigmoid, program->inline_decisions.end());
  EXPECT_EQ(sigmoid->reason, InlineReason::kInlined);
  EXPECT_THAT(sigmoid->readers, ElementsAre(2));
}

// x + b read row by row by one reader per row: `rows` copies of its body
// if inlined. Returns the program.
LoopProgram LowerForRowReaders(int64_t rows) {
  ValueId x;
  Graph graph = GraphWithInput({rows, 4}, x);
  const ValueId b = *graph.AddInput("b", TensorType{DType::kF32, {4}});
  const ValueId sum = AddNode(graph, "add", {x, b});
  for (int64_t row = 0; row < rows; ++row) {
    Attrs slice;
    slice.Set("starts", std::vector<int64_t>{row});
    slice.Set("ends", std::vector<int64_t>{row + 1});
    graph.AddOutput(AddNode(graph, "neg", {AddNode(graph, "slice", {sum}, slice)}));
  }
  EXPECT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph, kRecordDecisions);
  EXPECT_TRUE(program.ok()) << program.status();
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
  return program.ok() ? *std::move(program) : LoopProgram();
}

TEST(LowerInliningTest, AValueWithVeryManyReadersIsStoredOnce) {
  const LoopProgram inlined = LowerForRowReaders(64);
  EXPECT_EQ(inlined.nodes.size(), 64);  // inlined into each neg
  ASSERT_EQ(inlined.inline_decisions.size(), 1);
  EXPECT_EQ(inlined.inline_decisions[0].reason, InlineReason::kInlined);
  EXPECT_EQ(inlined.inline_decisions[0].readers.size(), 64);

  const LoopProgram stored = LowerForRowReaders(65);
  EXPECT_EQ(stored.nodes.size(), 65 + 1);  // stored, then loaded
  ASSERT_EQ(stored.inline_decisions.size(), 1);
  EXPECT_EQ(stored.inline_decisions[0].reason, InlineReason::kTooManyReaders);
  EXPECT_EQ(stored.inline_decisions[0].amount, 65);
  EXPECT_EQ(stored.inline_decisions[0].limit, 64);
}

TEST(LowerInliningTest, AChainLongerThanACopyMayBeIsStoredInParts) {
  ValueId x;
  Graph graph = GraphWithInput({4}, x);
  ValueId v = x;
  for (int i = 0; i < 70; ++i) v = AddNode(graph, "neg", {v});
  graph.AddOutput(v);
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph, kRecordDecisions);
  ASSERT_TRUE(program.ok()) << program.status();
  // The load and 64 negations (neg0 to neg63) are too long a body to copy.
  EXPECT_EQ(program->nodes.size(), 2);
  const auto too_long = absl::c_find_if(program->inline_decisions, [](const InlineDecision& d) {
    return d.reason == InlineReason::kTooManySteps;
  });
  ASSERT_NE(too_long, program->inline_decisions.end());
  EXPECT_EQ(too_long->node, "neg63");
  EXPECT_EQ(too_long->amount, 65);
  EXPECT_EQ(too_long->limit, 64);
}

TEST(LowerInliningTest, DecisionsAreCountedButRecordedOnlyWhereAsked) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  graph.AddOutput(AddNode(graph, "neg", {AddNode(graph, "exp", {x})}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->inlined_values, 1);
  EXPECT_TRUE(program->inline_decisions.empty());
}

}  // namespace
}  // namespace loom
