#include "passes/decompose.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::testing::StartsWith;

// x:f32[2,5] -> relu "r" -> softmax "sm" (axis) -> y (the graph output).
Module SoftmaxModule(int64_t axis = -1) {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = graph.AddInput("x", TensorType{DType::kF32, {2, 5}}).value();
  graph.AddNode("r", "relu", {x}, {"a"}).value();
  Attrs attrs;
  attrs.Set("axis", axis);
  graph.AddNode("sm", "softmax", {graph.FindValue("a")}, {"y"}, attrs).value();
  graph.AddOutput(graph.FindValue("y"));
  EXPECT_TRUE(InferShapes(graph).ok());
  return module;
}

std::vector<std::string> Ops(const Graph& graph) {
  std::vector<std::string> ops;
  for (const Node& node : graph.nodes()) ops.emplace_back(node.op);
  return ops;
}

std::vector<std::string> Names(const Graph& graph) {
  std::vector<std::string> names;
  for (const Node& node : graph.nodes()) names.push_back(node.name);
  return names;
}

std::unique_ptr<DecomposePass> Decompose(std::vector<std::string> ops = {}) {
  proto::DecomposeOptions options;
  for (const std::string& op : ops) options.add_ops(op);
  return DecomposePass::Create(options).value();
}

TEST(DecomposeTest, SoftmaxBecomesStableReductions) {
  Module module = SoftmaxModule(1);
  const ValueId y = module.graph.FindValue("y");
  absl::StatusOr<bool> changed = Decompose()->Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);

  const Graph& graph = module.graph;
  EXPECT_THAT(Ops(graph),
              ElementsAre("relu", "reduce_max", "sub", "exp", "reduce_sum", "reciprocal", "mul"));
  EXPECT_THAT(Names(graph),
              ElementsAre("r", "sm/max", "sm/sub", "sm/exp", "sm/sum", "sm/inverse", "sm/scale"));
  const Node& max = graph.node(1);
  const Node& sub = graph.node(2);
  const Node& exp = graph.node(3);
  const Node& sum = graph.node(4);
  const Node& inverse = graph.node(5);
  const Node& scale = graph.node(6);
  EXPECT_THAT(max.inputs, ElementsAre(graph.FindValue("a")));
  EXPECT_THAT(max.attrs.GetInts("axes"), ElementsAre(1));
  EXPECT_EQ(max.attrs.GetInt("keepdims", 0), 1);
  EXPECT_THAT(sub.inputs, ElementsAre(graph.FindValue("a"), max.outputs[0]));
  EXPECT_THAT(exp.inputs, ElementsAre(sub.outputs[0]));
  EXPECT_THAT(sum.inputs, ElementsAre(exp.outputs[0]));
  EXPECT_THAT(sum.attrs.GetInts("axes"), ElementsAre(1));
  EXPECT_THAT(inverse.inputs, ElementsAre(sum.outputs[0]));
  EXPECT_THAT(scale.inputs, ElementsAre(exp.outputs[0], inverse.outputs[0]));
  // The last node writes the softmax's own output, so readers are untouched.
  EXPECT_THAT(scale.outputs, ElementsAre(y));
  EXPECT_THAT(graph.outputs(), ElementsAre(y));
  EXPECT_EQ(graph.value(y).producer, 6);

  // Shapes were re-inferred for the new values.
  EXPECT_EQ(graph.value(max.outputs[0]).type, (TensorType{DType::kF32, {2, 1}}));
  EXPECT_EQ(graph.value(exp.outputs[0]).type, (TensorType{DType::kF32, {2, 5}}));
  EXPECT_EQ(graph.value(y).type, (TensorType{DType::kF32, {2, 5}}));
  EXPECT_TRUE(VerifyGraph(graph).ok()) << VerifyGraph(graph);
}

// The decomposition computes what softmax's reference implementation does,
// also for inputs large enough that a naive exp(x) overflows.
TEST(DecomposeTest, MatchesTheInterpreter) {
  for (int64_t axis : {0, 1, -1}) {
    Module module = SoftmaxModule(axis);
    const Graph original = module.graph;
    ASSERT_TRUE(Decompose()->Run(module).value());

    Tensor x(DType::kF32, {2, 5});
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      x.SetDouble(i, (i % 3 == 0 ? 500.0 : 0.0) + 0.25 * i - 1.0);
    }
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(original, {x});
    absl::StatusOr<std::vector<Tensor>> actual = Interpret(module.graph, {x});
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(actual.ok()) << actual.status();
    const Tensor& want = (*expected)[0];
    const Tensor& got = (*actual)[0];
    ASSERT_EQ(got.type(), want.type());
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      EXPECT_NEAR(got.GetDouble(i), want.GetDouble(i), 1e-6)
          << "axis " << axis << ", element " << i;
    }
  }
}

TEST(DecomposeTest, DefaultAxisIsTheLast) {
  Module module = SoftmaxModule(-1);
  ASSERT_TRUE(Decompose({"softmax"})->Run(module).value());
  EXPECT_THAT(module.graph.node(1).attrs.GetInts("axes"), ElementsAre(-1));
  EXPECT_EQ(module.graph.value(module.graph.node(1).outputs[0]).type,
            (TensorType{DType::kF32, {2, 1}}));
}

TEST(DecomposeTest, NothingToDecomposeIsUnchanged) {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = graph.AddInput("x", TensorType{DType::kF32, {3}}).value();
  graph.AddNode("r", "relu", {x}, {"y"}).value();
  graph.AddOutput(graph.FindValue("y"));
  ASSERT_TRUE(InferShapes(graph).ok());
  const size_t values = graph.values().size();

  absl::StatusOr<bool> changed = Decompose()->Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_THAT(Ops(graph), ElementsAre("relu"));
  EXPECT_EQ(graph.values().size(), values);
}

TEST(DecomposeTest, NewNodeNamesStayUnique) {
  Module module = SoftmaxModule();
  Graph& graph = module.graph;
  graph.AddNode("sm/max", "relu", {graph.FindValue("y")}, {"z"}).value();
  graph.SetOutputs({graph.FindValue("z")});
  ASSERT_TRUE(InferShapes(graph).ok());

  ASSERT_TRUE(Decompose()->Run(module).value());
  EXPECT_THAT(Names(graph), ElementsAre("r", "sm/max.1", "sm/sub", "sm/exp", "sm/sum", "sm/inverse",
                                        "sm/scale", "sm/max"));
  EXPECT_TRUE(VerifyGraph(graph).ok()) << VerifyGraph(graph);
}

TEST(DecomposeTest, UnknownOpFailsAtConstruction) {
  proto::DecomposeOptions options;
  options.add_ops("softmax");
  options.add_ops("lstm_typo");
  absl::Status status = DecomposePass::Create(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("decompose does not know op 'lstm_typo'; it knows: "));
  EXPECT_THAT(std::string(status.message()), HasSubstr(absl::StrJoin(DecomposableOps(), ", ")));
}

TEST(DecomposeTest, KnowsTheCompositeOpsSorted) {
  const std::vector<std::string> ops = DecomposableOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_THAT(
      ops, IsSupersetOf({"batch_norm",        "clip",       "dropout",        "elu",
                         "flatten",           "gelu",       "gemm",           "group_norm",
                         "hard_sigmoid",      "hard_swish", "instance_norm",  "layer_norm",
                         "leaky_relu",        "linear",     "log_softmax",    "prelu",
                         "reduce_l1",         "reduce_l2",  "reduce_log_sum", "reduce_log_sum_exp",
                         "reduce_sum_square", "selu",       "silu",           "softmax",
                         "softplus"}));
}

// Test decompositions that emit composite ops.
absl::Status GeluAsSilu(const Node& node, DecompositionBuilder& b) {
  const ValueId silu = b.Add("silu", "silu", {node.inputs[0]});
  b.AddWriting("neg", "neg", {silu}, node.outputs[0]);
  return absl::OkStatus();
}
absl::Status SiluAsSoftplus(const Node& node, DecompositionBuilder& b) {
  b.AddWriting("softplus", "softplus", {node.inputs[0]}, node.outputs[0]);
  return absl::OkStatus();
}
absl::Status SoftplusAsSilu(const Node& node, DecompositionBuilder& b) {
  b.AddWriting("silu", "silu", {node.inputs[0]}, node.outputs[0]);
  return absl::OkStatus();
}

// x -> gelu "g" -> silu "s" -> y.
Module GeluSiluModule() {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = graph.AddInput("x", TensorType{DType::kF32, {3}}).value();
  graph.AddNode("g", "gelu", {x}, {"a"}).value();
  graph.AddNode("s", "silu", {graph.FindValue("a")}, {"y"}).value();
  graph.AddOutput(graph.FindValue("y"));
  EXPECT_TRUE(InferShapes(graph).ok());
  return module;
}

TEST(DecomposeTest, CompositesThatDecompositionsEmitAreDecomposedToo) {
  Module module = GeluSiluModule();
  absl::flat_hash_map<std::string, DecomposeFn> all;
  for (const Decomposition& d : ActivationDecompositions()) all[d.op] = d.fn;
  all["gelu"] = GeluAsSilu;
  // Only gelu is selected: the silu it emits is decomposed (with `all`),
  // the graph's own silu is not.
  DecomposePass pass({{"gelu", GeluAsSilu}}, all);
  absl::StatusOr<bool> changed = pass.Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_THAT(Ops(module.graph), ElementsAre("sigmoid", "mul", "neg", "silu"));
  EXPECT_THAT(Names(module.graph), ElementsAre("g/silu/sigmoid", "g/silu/mul", "g/neg", "s"));
  EXPECT_TRUE(VerifyGraph(module.graph).ok()) << VerifyGraph(module.graph);
  EXPECT_EQ(module.graph.value(module.graph.node(1).outputs[0]).type,
            (TensorType{DType::kF32, {3}}));
}

TEST(DecomposeTest, DecompositionsThatNeverReachPrimitivesAreAnError) {
  Module module = GeluSiluModule();
  DecomposePass pass({{"silu", SiluAsSoftplus}},
                     {{"silu", SiluAsSoftplus}, {"softplus", SoftplusAsSilu}});
  absl::StatusOr<bool> changed = pass.Run(module);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("still emit composite ops"));
}

TEST(DecomposeTest, IsRegisteredWithDecomposeOptions) {
  proto::DecomposeOptions options;
  options.add_ops("nope");
  const PassSpec spec{"decompose", "decompose", &options};
  EXPECT_THAT(std::string(PassRegistry::Global().Create(spec).status().message()),
              StartsWith("decompose does not know op 'nope'; it knows: "));
  options.clear_ops();
  EXPECT_TRUE(PassRegistry::Global().Create(spec).ok());
}

// Names are whole strings: a prefix of a name, or a name with an empty
// part, is a name of its own; a prefix with many next parts indexes them.
TEST(NameSetTest, HoldsWholeNames) {
  NameSet names;
  EXPECT_TRUE(names.Insert("a/b/c"));
  EXPECT_FALSE(names.Insert("a/b/c"));
  EXPECT_TRUE(names.Insert("a/b"));
  EXPECT_TRUE(names.Insert("a"));
  EXPECT_TRUE(names.Insert("a/"));
  EXPECT_TRUE(names.Insert("a//c"));
  EXPECT_TRUE(names.Insert("/a"));
  EXPECT_TRUE(names.Insert(""));
  EXPECT_FALSE(names.Insert("a/b"));
  EXPECT_FALSE(names.Insert("a/"));
  EXPECT_FALSE(names.Insert(""));
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(names.Insert(absl::StrCat("a/b/", i)));
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(names.Insert(absl::StrCat("a/b/", i)));
  }
  EXPECT_FALSE(names.Insert("a/b/c"));
  EXPECT_TRUE(names.Insert("a/b/100"));
}

// Names come in runs under one prefix; a prefix met again after another,
// or a name that is also a prefix, is found all the same.
TEST(NameSetTest, RunsUnderOnePrefix) {
  NameSet names;
  names.Reserve(8);
  EXPECT_TRUE(names.Insert("x/t0/a"));
  EXPECT_TRUE(names.Insert("x/t0/b"));
  EXPECT_TRUE(names.Insert("x/t1/a"));
  EXPECT_FALSE(names.Insert("x/t0/a"));
  EXPECT_TRUE(names.Insert("x/t0"));
  EXPECT_TRUE(names.Insert("x/t0/a/c"));
  EXPECT_FALSE(names.Insert("x/t1/a"));
  EXPECT_FALSE(names.Insert("x/t0/b"));
  EXPECT_FALSE(names.Insert("x/t0"));
}

// An empty part is stored before any other (fuzzer: a recurrent node named
// "" crashed the decomposition).
TEST(NameSetTest, EmptyNamesFirst) {
  NameSet names;
  EXPECT_TRUE(names.Insert(""));
  EXPECT_TRUE(names.Insert("/"));
  EXPECT_FALSE(names.Insert(""));
  EXPECT_FALSE(names.Insert("/"));
}

}  // namespace
}  // namespace loom
