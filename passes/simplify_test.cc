#include "passes/simplify.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/lazy_tensor.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"

namespace loom {
namespace {

using ::testing::ElementsAre;

// Builds graphs in a line per node: Add("c", "add", {"a", "b"}).
class GraphBuilder {
 public:
  GraphBuilder() { module_.graph.AddInput("x", TensorType{DType::kF32, {2, 3}}).value(); }

  GraphBuilder& Add(const std::string& name, const std::string& op,
                    const std::vector<std::string>& inputs, Attrs attrs = {}) {
    std::vector<ValueId> ids;
    for (const std::string& input : inputs) {
      ids.push_back(module_.graph.FindValue(input));
    }
    module_.graph.AddNode(name, op, ids, {name}, std::move(attrs)).value();
    return *this;
  }

  Module Build(const std::vector<std::string>& outputs) {
    for (const std::string& output : outputs) {
      module_.graph.AddOutput(module_.graph.FindValue(output));
    }
    EXPECT_TRUE(InferShapes(module_.graph).ok());
    return module_;
  }

 private:
  Module module_;
};

Attrs Reduce(std::vector<int64_t> axes, bool axes_first = true) {
  Attrs attrs;
  if (axes_first) attrs.Set("axes", axes);
  attrs.Set("keepdims", int64_t{1});
  if (!axes_first) attrs.Set("axes", axes);
  return attrs;
}

std::vector<std::string> Names(const Graph& graph) {
  std::vector<std::string> names;
  for (const Node& node : graph.nodes()) names.push_back(node.name);
  return names;
}

// The names of a node's inputs.
std::vector<std::string> Inputs(const Graph& graph, const std::string& node) {
  std::vector<std::string> names;
  for (const Node& n : graph.nodes()) {
    if (n.name != node) continue;
    for (ValueId input : n.inputs) names.push_back(graph.value(input).name);
  }
  return names;
}

bool RunSimplify(Module& module) {
  absl::StatusOr<bool> changed = SimplifyPass().Run(module);
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(VerifyGraph(module.graph).ok()) << VerifyGraph(module.graph);
  return changed.value_or(false);
}

TEST(SimplifyTest, DuplicateReusesTheFirst) {
  Module module = GraphBuilder()
                      .Add("a", "relu", {"x"})
                      .Add("b", "relu", {"x"})
                      .Add("c", "add", {"a", "b"})
                      .Build({"c"});
  EXPECT_TRUE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("a", "c"));
  EXPECT_THAT(Inputs(module.graph, "c"), ElementsAre("a", "a"));
}

TEST(SimplifyTest, DuplicatesCascade) {
  // Once b is a, e = exp(b) is a duplicate of d = exp(a).
  Module module = GraphBuilder()
                      .Add("a", "relu", {"x"})
                      .Add("b", "relu", {"x"})
                      .Add("d", "exp", {"a"})
                      .Add("e", "exp", {"b"})
                      .Add("f", "sub", {"d", "e"})
                      .Build({"f"});
  EXPECT_TRUE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("a", "d", "f"));
  EXPECT_THAT(Inputs(module.graph, "f"), ElementsAre("d", "d"));
}

TEST(SimplifyTest, AttributesMustMatchInAnyOrder) {
  Module module = GraphBuilder()
                      .Add("s0", "reduce_sum", {"x"}, Reduce({0}))
                      .Add("s1", "reduce_sum", {"x"}, Reduce({1}))
                      .Add("s0_again", "reduce_sum", {"x"}, Reduce({0}, false))
                      .Add("t", "add", {"s0", "s1"})
                      .Add("u", "add", {"t", "s0_again"})
                      .Build({"u"});
  EXPECT_TRUE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("s0", "s1", "t", "u"));
  EXPECT_THAT(Inputs(module.graph, "u"), ElementsAre("t", "s0"));
}

TEST(SimplifyTest, InputOrderMatters) {
  Module module = GraphBuilder()
                      .Add("a", "relu", {"x"})
                      .Add("d1", "sub", {"x", "a"})
                      .Add("d2", "sub", {"a", "x"})
                      .Add("s", "add", {"d1", "d2"})
                      .Build({"s"});
  EXPECT_FALSE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("a", "d1", "d2", "s"));
}

TEST(SimplifyTest, DeadNodesAreRemoved) {
  Module module = GraphBuilder()
                      .Add("dead1", "exp", {"x"})
                      .Add("live", "relu", {"x"})
                      .Add("dead2", "neg", {"dead1"})
                      .Add("out", "abs", {"live"})
                      .Build({"out"});
  EXPECT_TRUE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("live", "out"));
  EXPECT_EQ(module.graph.value(module.graph.FindValue("dead1")).producer, kNoNode);
}

TEST(SimplifyTest, GraphOutputsKeepTheirNodes) {
  // Both duplicates name a graph output, so neither may go.
  Module module = GraphBuilder()
                      .Add("y1", "relu", {"x"})
                      .Add("y2", "relu", {"x"})
                      .Add("z", "exp", {"y2"})
                      .Build({"y1", "y2", "z"});
  EXPECT_FALSE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("y1", "y2", "z"));
  EXPECT_THAT(Inputs(module.graph, "z"), ElementsAre("y2"));
}

TEST(SimplifyTest, DuplicateOfAGraphOutputReusesIt) {
  Module module = GraphBuilder()
                      .Add("y", "relu", {"x"})
                      .Add("again", "relu", {"x"})
                      .Add("z", "exp", {"again"})
                      .Build({"y", "z"});
  EXPECT_TRUE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("y", "z"));
  EXPECT_THAT(Inputs(module.graph, "z"), ElementsAre("y"));
}

TEST(SimplifyTest, DuplicatesAmongManyReadersOfOneValue) {
  // x's readers outnumber the short list CSE keeps per value, so the later
  // ones are found through its hash set; "n0" and "n11" repeat earlier ones.
  const std::vector<std::string> ops = {"relu", "exp", "neg",  "abs",  "sqrt",  "tanh",
                                        "sin",  "cos", "ceil", "sign", "floor", "round"};
  GraphBuilder builder;
  std::vector<std::string> outputs;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string name = "u" + std::to_string(i);
    builder.Add(name, ops[i], {"x"});
    outputs.push_back(name);
  }
  builder.Add("n0", "relu", {"x"}).Add("n11", "round", {"x"});
  builder.Add("sum0", "add", {"u0", "n0"}).Add("sum11", "add", {"u11", "n11"});
  outputs.push_back("sum0");
  outputs.push_back("sum11");
  Module module = builder.Build(outputs);
  EXPECT_TRUE(RunSimplify(module));
  EXPECT_EQ(module.graph.nodes().size(), ops.size() + 2);
  EXPECT_THAT(Inputs(module.graph, "sum0"), ElementsAre("u0", "u0"));
  EXPECT_THAT(Inputs(module.graph, "sum11"), ElementsAre("u11", "u11"));
}

TEST(SimplifyTest, ValueIdOutOfRangeIsAnInternalError) {
  Module module = GraphBuilder()
                      .Add("a", "relu", {"x"})
                      .Add("b", "relu", {"x"})
                      .Add("c", "add", {"a", "b"})
                      .Build({"c"});
  module.graph.mutable_node(2).inputs[1] = 1000;
  absl::StatusOr<bool> changed = SimplifyPass().Run(module);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(changed.status().message(), "node 'c' uses a value id out of range");
}

TEST(SimplifyTest, CleanGraphIsUnchanged) {
  Module module = GraphBuilder().Add("a", "relu", {"x"}).Add("b", "exp", {"a"}).Build({"b"});
  EXPECT_FALSE(RunSimplify(module));
  EXPECT_THAT(Names(module.graph), ElementsAre("a", "b"));
}

TEST(SimplifyTest, IsRegisteredAsSimplify) {
  PassSpec spec{"simplify"};
  EXPECT_TRUE(PassRegistry::Global().Create(spec).ok());
}

// Adds the weight w = [[0, 1, 2], [3, 4, 5]] ([n, k]) and "w_t", its
// transpose.
ValueId AddTransposedWeight(Graph& graph) {
  Tensor w(DType::kF32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) w.SetDouble(i, static_cast<double>(i));
  const ValueId weight = *graph.AddInitializer("w", ValueKind::kWeight, w);
  graph.AddNode("t", "transpose", {weight}, {"w_t"}).value();
  return graph.FindValue("w_t");
}

// `value` holds w's transpose as a weight of its own, and only the node
// that reads it is left.
void ExpectFoldedTranspose(const Graph& graph, ValueId value) {
  EXPECT_EQ(graph.nodes().size(), 1u);
  ASSERT_EQ(graph.value(value).kind, ValueKind::kWeight);
  const Tensor& folded = graph.initializer(value);
  EXPECT_EQ(TypeToString(folded.type()), "f32[3,2]");
  EXPECT_EQ(folded.GetDouble(1), 3.0);  // w[1][0]
  EXPECT_EQ(folded.GetDouble(2), 1.0);  // w[0][1]
}

// A weight transposed into a matrix product of many rows (a GEMM) becomes
// a transposed weight of its own; into one of few rows (a matrix-vector
// product, which reads the weight as stored) it stays a transpose.
TEST(SimplifyTest, WeightTransposesIntoGemmsAreFolded) {
  for (const int64_t rows : {int64_t{32}, int64_t{2}}) {
    Module module;
    Graph& graph = module.graph;
    const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {rows, 3}});
    graph.AddNode("mm", "matmul", {x, AddTransposedWeight(graph)}, {"y"}).value();
    graph.AddOutput(graph.FindValue("y"));
    ASSERT_TRUE(InferShapes(graph).ok());
    SimplifyPass pass;
    ASSERT_TRUE(pass.Run(module).ok());
    ASSERT_TRUE(VerifyGraph(graph).ok());
    const ValueId b = graph.nodes().back().inputs[1];
    if (rows == 2) {
      EXPECT_EQ(graph.nodes().size(), 2u);
      EXPECT_EQ(b, graph.FindValue("w_t"));
    } else {
      ExpectFoldedTranspose(graph, b);
    }
  }
}

// An elementwise or broadcast op reads a transposed weight in the order of
// its own elements (a recurrence's step kept as a loop: the state times
// R^T's rows): folded; one that something else reads too stays.
TEST(SimplifyTest, WeightTransposesReadInOrderAreFolded) {
  for (const bool also_reduced : {false, true}) {
    Module module;
    Graph& graph = module.graph;
    const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {2, 3, 1}});
    const ValueId w_t = AddTransposedWeight(graph);
    graph.AddNode("m", "mul", {x, w_t}, {"y"}).value();
    graph.AddOutput(graph.FindValue("y"));
    if (also_reduced) {
      Attrs axes;
      axes.Set("axes", std::vector<int64_t>{0});
      graph.AddNode("s", "reduce_sum", {w_t}, {"z"}, std::move(axes)).value();
      graph.AddOutput(graph.FindValue("z"));
    }
    ASSERT_TRUE(InferShapes(graph).ok());
    SimplifyPass pass;
    ASSERT_TRUE(pass.Run(module).ok());
    ASSERT_TRUE(VerifyGraph(graph).ok());
    const ValueId b = graph.nodes()[also_reduced ? 1 : 0].inputs[1];
    if (also_reduced) {
      EXPECT_EQ(b, w_t);
    } else {
      ExpectFoldedTranspose(graph, b);
    }
  }
}

// The folded transpose of a weight is made where it is first read, not by
// the pass (a compile whose kernels are cached moves no weight), and two
// graphs that fold the same weight alike share it.
TEST(SimplifyTest, AFoldedTransposeIsMadeWhereFirstRead) {
  int drawn = 0;
  auto w = std::make_shared<const LazyTensor>(TensorType{DType::kF32, {2, 3}}, [&] {
    ++drawn;
    Tensor data(DType::kF32, {2, 3});
    for (int64_t i = 0; i < 6; ++i) data.SetDouble(i, static_cast<double>(i));
    return data;
  });
  std::vector<std::shared_ptr<const LazyTensor>> folded;
  for (int copy = 0; copy < 2; ++copy) {
    Module module;
    Graph& graph = module.graph;
    const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {32, 3}});
    const ValueId weight = *graph.AddInitializer("w", ValueKind::kWeight, w);
    graph.AddNode("t", "transpose", {weight}, {"w_t"}).value();
    graph.AddNode("mm", "matmul", {x, graph.FindValue("w_t")}, {"y"}).value();
    graph.AddOutput(graph.FindValue("y"));
    ASSERT_TRUE(InferShapes(graph).ok());
    ASSERT_TRUE(RunSimplify(module));
    ASSERT_TRUE(VerifyGraph(graph).ok());
    EXPECT_EQ(drawn, 0);
    folded.push_back(graph.shared_initializer(graph.nodes().back().inputs[1]));
  }
  EXPECT_EQ(folded[0], folded[1]);
  EXPECT_EQ(TypeToString(folded[0]->type()), "f32[3,2]");
  EXPECT_EQ(folded[0]->data().GetDouble(1), 3.0);  // w[1][0]
  EXPECT_EQ(drawn, 1);
}

// A concat of slices of a weight (an exporter's reordering of an LSTM's
// gates) becomes a weight of its own; one that reads an input stays.
TEST(SimplifyTest, ConcatsOfWeightsViewsAreFolded) {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {2, 3}});
  Tensor w(DType::kF32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) w.SetDouble(i, static_cast<double>(i));
  const ValueId weight = *graph.AddInitializer("w", ValueKind::kWeight, w);
  for (const auto& [name, start] : {std::pair{"low", 0}, std::pair{"high", 2}}) {
    Attrs rows;
    rows.Set("starts", AttrInts{start});
    rows.Set("ends", AttrInts{start + 2});
    rows.Set("axes", AttrInts{0});
    graph.AddNode(name, "slice", {weight}, {name}, rows).value();
  }
  Attrs axis;
  axis.Set("axis", int64_t{0});
  graph
      .AddNode("swapped", "concat", {graph.FindValue("high"), graph.FindValue("low")}, {"swapped"},
               axis)
      .value();
  graph.AddNode("with_x", "concat", {graph.FindValue("low"), x}, {"with_x"}, axis).value();
  graph.AddNode("sum", "add", {graph.FindValue("swapped"), graph.FindValue("swapped")}, {"sum"})
      .value();
  graph.AddOutput(graph.FindValue("sum"));
  graph.AddOutput(graph.FindValue("with_x"));
  ASSERT_TRUE(InferShapes(graph).ok());
  ASSERT_TRUE(RunSimplify(module));
  ASSERT_TRUE(VerifyGraph(graph).ok());
  EXPECT_THAT(Names(graph), ElementsAre("low", "with_x", "sum"));
  const ValueId folded = graph.nodes().back().inputs[0];
  ASSERT_EQ(graph.value(folded).kind, ValueKind::kWeight);
  const Tensor& data = graph.initializer(folded);
  EXPECT_EQ(TypeToString(data.type()), "f32[4,3]");
  EXPECT_EQ(data.GetDouble(0), 6.0);   // w[2][0]
  EXPECT_EQ(data.GetDouble(11), 5.0);  // w[1][2]
}

// A batched weight, reshaped, then transposed by its last two axes: the
// folded weight holds each element where the transpose puts it (tiles cut
// the 40 x 35 planes unevenly).
TEST(SimplifyTest, FoldedBatchedTransposeMovesEveryElement) {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {2, 16, 35}});
  Tensor w(DType::kF32, {80, 35});
  for (int64_t i = 0; i < w.num_elements(); ++i) w.SetDouble(i, static_cast<double>(i));
  const ValueId weight = *graph.AddInitializer("w", ValueKind::kWeight, w);
  Attrs shape, perm;
  shape.Set("shape", std::vector<int64_t>{2, 40, 35});
  perm.Set("perm", std::vector<int64_t>{0, 2, 1});
  graph.AddNode("r", "reshape", {weight}, {"w3"}, std::move(shape)).value();
  graph.AddNode("t", "transpose", {graph.FindValue("w3")}, {"w_t"}, std::move(perm)).value();
  graph.AddNode("mm", "matmul", {x, graph.FindValue("w_t")}, {"y"}).value();
  graph.AddOutput(graph.FindValue("y"));
  ASSERT_TRUE(InferShapes(graph).ok());
  SimplifyPass pass;
  ASSERT_TRUE(pass.Run(module).ok());
  ASSERT_TRUE(VerifyGraph(graph).ok());
  ASSERT_EQ(graph.nodes().size(), 1u);
  const Tensor& folded = graph.initializer(graph.nodes().back().inputs[1]);
  ASSERT_EQ(TypeToString(folded.type()), "f32[2,35,40]");
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < 35; ++i) {
      for (int64_t j = 0; j < 40; ++j) {
        ASSERT_EQ(folded.GetDouble((b * 35 + i) * 40 + j), (b * 40 + j) * 35 + i);
      }
    }
  }
}

}  // namespace
}  // namespace loom
