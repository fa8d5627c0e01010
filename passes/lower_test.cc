#include "passes/lower.h"

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace loom {
namespace {

// A graph with one f32 input `x` of `shape`.
Graph GraphWithInput(const Shape& shape, ValueId& x) {
  Graph graph;
  x = *graph.AddInput("x", TensorType{DType::kF32, shape});
  return graph;
}

ValueId AddNode(Graph& graph, const std::string& op,
                std::vector<ValueId> inputs, Attrs attrs = {}) {
  const std::string name = absl::StrCat(op, graph.nodes().size());
  const NodeId node = *graph.AddNode(name, op, std::move(inputs),
                                     {name + ".out"}, std::move(attrs));
  return graph.node(node).outputs[0];
}

TEST(LowerTest, PointwiseOpBecomesOneComputeNode) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  graph.AddOutput(AddNode(graph, "relu", {x}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);
  const ComputeNode& node = program->nodes[0];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(ToString(node.store_index), ToString(node.body[0].index));
  EXPECT_EQ(program->buffers[node.output].kind, BufferKind::kOutput);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

TEST(LowerTest, ViewsAreIndexRemapsNotCopies) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3, 4}, x);
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{2, 0, 1});
  const ValueId t = AddNode(graph, "transpose", {x}, perm);  // [4, 2, 3]
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{8, 3});
  const ValueId r = AddNode(graph, "reshape", {t}, shape);
  graph.AddOutput(AddNode(graph, "neg", {r}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  // Only the input and neg's output exist: no buffer for the views.
  EXPECT_EQ(program->buffers.size(), 2);
  ASSERT_EQ(program->nodes.size(), 1);
  // neg[y0, y1] reads x at [(3*y0 + y1) // 6 % 2, y1, y0 // 2]... checked by
  // evaluating the load index against the definition.
  const ComputeNode& node = program->nodes[0];
  for (int64_t y0 = 0; y0 < 8; ++y0) {
    for (int64_t y1 = 0; y1 < 3; ++y1) {
      const int64_t flat = 3 * y0 + y1;  // position in t
      const int64_t t0 = flat / 6, t1 = flat / 3 % 2, t2 = flat % 3;
      // t[t0, t1, t2] = x[t1, t2, t0]
      const int64_t expected = t1 * 12 + t2 * 4 + t0;
      EXPECT_EQ(Evaluate(node.body[0].index, {y0, y1}), expected);
    }
  }
}

TEST(LowerTest, ReshapeRoundTripSimplifiesToIdentity) {
  ValueId x;
  Graph graph = GraphWithInput({2, 16, 32}, x);
  Attrs split, merge;
  split.Set("shape", std::vector<int64_t>{2, 2, 8, 32});
  merge.Set("shape", std::vector<int64_t>{2, 16, 32});
  const ValueId a = AddNode(graph, "reshape", {x}, split);
  const ValueId b = AddNode(graph, "reshape", {a}, merge);
  graph.AddOutput(AddNode(graph, "exp", {b}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(ToString(program->nodes[0].body[0].index), "512*x0 + 32*x1 + x2");
}

TEST(LowerTest, ReductionHasReductionLoops) {
  ValueId x;
  Graph graph = GraphWithInput({4, 5, 6}, x);
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{-1, 0});
  attrs.Set("keepdims", int64_t{1});
  graph.AddOutput(AddNode(graph, "reduce_max", {x}, attrs));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  const ComputeNode& node = program->nodes[0];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{1, 5, 1}));
  EXPECT_EQ(node.reduction_ranges, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(node.reduce, ReduceKind::kMax);
  // x[x3, x1, x4]
  EXPECT_EQ(Evaluate(node.body[0].index, {0, 2, 0, 3, 5}), 3 * 30 + 2 * 6 + 5);
}

TEST(LowerTest, GraphOutputThatIsAViewIsCopied) {
  ValueId x;
  Graph graph = GraphWithInput({6}, x);
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{2, 3});
  graph.AddOutput(AddNode(graph, "reshape", {x}, shape));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);
  EXPECT_EQ(program->buffers[program->outputs[0]].kind, BufferKind::kOutput);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

TEST(LowerTest, OneElementConstantsAreInlined) {
  ValueId x;
  Graph graph = GraphWithInput({3}, x);
  Tensor two(DType::kF32, {});
  two.SetDouble(0, 2.0);
  const ValueId c = *graph.AddInitializer("two", ValueKind::kConstant, two);
  graph.AddOutput(AddNode(graph, "mul", {x, c}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->buffers.size(), 2);  // x and the output
  EXPECT_EQ(program->nodes[0].body[1].kind, ScalarOp::Kind::kConst);
  EXPECT_EQ(program->nodes[0].body[1].constant, 2.0);
}

TEST(LowerTest, OpWithoutLoweringIsAnErrorNamingTheNode) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3}, x);
  graph.AddOutput(AddNode(graph, "softmax", {x}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(program.status().message().find("node 'softmax0' (softmax)"),
            absl::string_view::npos)
      << program.status();
}

}  // namespace
}  // namespace loom
