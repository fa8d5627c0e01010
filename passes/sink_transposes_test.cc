#include "passes/sink_transposes.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/random.h"

namespace loom {
namespace {

Attrs Perm(AttrInts perm) {
  Attrs attrs;
  attrs.Set("perm", std::move(perm));
  return attrs;
}

ValueId Add(Graph& g, const std::string& name, OpName op, std::vector<ValueId> inputs,
            Attrs attrs = {}) {
  const NodeId node = *g.AddNode(name, op, inputs, {name}, std::move(attrs));
  return g.node(node).outputs[0];
}

// The op of the node that writes `value`.
std::string Producer(const Graph& g, ValueId value) {
  for (const Node& node : g.nodes()) {
    for (ValueId output : node.outputs) {
      if (output == value) return std::string(node.op);
    }
  }
  return "";
}

// What the channels-last conv calls leave between two convs: a conv's
// result [N, H, W, C] viewed as NCHW, its bias (a vector), a ReLU, a
// residual add of a weight, a pad, and the next conv's view of that as
// NHWC; plus a pooling, a concat and a second transpose's reader.
struct Chain {
  Module module;
  ValueId sunk_relu_input = -1, next_conv_input = -1;

  Chain() {
    Graph& g = module.graph;
    const ValueId x = *g.AddInput("x", {DType::kF32, {2, 3, 5, 4}});  // [N, H, W, C]
    const ValueId bias =
        *g.AddInitializer("bias", ValueKind::kWeight, UniformTensor({DType::kF32, {4}}, 1, -1, 1));
    const ValueId residual = *g.AddInitializer(
        "residual", ValueKind::kWeight, UniformTensor({DType::kF32, {1, 4, 3, 5}}, 2, -1, 1));
    const ValueId biased = Add(g, "biased", "add", {x, bias});
    const ValueId nchw = Add(g, "nchw", "transpose", {biased}, Perm({0, 3, 1, 2}));
    const ValueId relu = Add(g, "relu", "relu", {nchw});
    const ValueId sum = Add(g, "sum", "add", {relu, residual});
    Attrs pads;
    pads.Set("pads", AttrInts{0, 0, 1, 2, 0, 0, 1, 0});
    pads.Set("value", 0.0);
    const ValueId padded = Add(g, "padded", "pad", {sum}, std::move(pads));
    const ValueId nhwc = Add(g, "nhwc", "transpose", {padded}, Perm({0, 2, 3, 1}));
    const ValueId square = Add(g, "square", "mul", {nhwc, nhwc});
    Attrs mean;
    mean.Set("axes", AttrInts{2, 3});
    mean.Set("keepdims", int64_t{0});
    const ValueId pooled = Add(g, "pooled", "reduce_mean", {sum}, std::move(mean));
    Attrs axis;
    axis.Set("axis", int64_t{1});
    const ValueId joined = Add(g, "joined", "concat", {relu, sum}, std::move(axis));
    for (ValueId output : {square, pooled, joined, relu}) g.AddOutput(output);
    EXPECT_TRUE(InferShapes(g).ok());
    sunk_relu_input = biased;
    next_conv_input = square;
  }

  std::vector<Tensor> Inputs() const {
    return {UniformTensor({DType::kF32, {2, 3, 5, 4}}, 9, -2, 2)};
  }
};

TEST(SinkTransposesTest, OpsBetweenTwoTransposesRunOnTheSource) {
  Chain chain;
  Graph& g = chain.module.graph;
  const absl::StatusOr<std::vector<Tensor>> before = Interpret(g, chain.Inputs());
  ASSERT_TRUE(before.ok()) << before.status();
  const absl::StatusOr<bool> changed = SinkTransposesPass().Run(chain.module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  const absl::StatusOr<std::vector<Tensor>> after = Interpret(g, chain.Inputs());
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(before->size(), after->size());
  for (size_t o = 0; o < before->size(); ++o) {
    EXPECT_TRUE((*before)[o] == (*after)[o]) << "output " << o;
  }
  // The ReLU reads the biased NHWC value itself; the square reads the pad
  // moved before the second transpose, which cancelled against the first.
  for (const Node& node : g.nodes()) {
    if (node.op == "relu") EXPECT_EQ(node.inputs[0], chain.sunk_relu_input);
    if (node.op == "mul") EXPECT_EQ(Producer(g, node.inputs[0]), "pad");
    if (node.op == "reduce_mean")
      EXPECT_EQ(node.attrs.GetInts("axes"), (std::vector<int64_t>{1, 2}));
    if (node.op == "concat") EXPECT_EQ(node.attrs.GetInt("axis", 0), 3);
  }
}

// An op whose other operand is a full tensor computed in the old layout
// stays where it is: moving it would transpose that tensor instead.
TEST(SinkTransposesTest, LeavesOpsWithOperandsInTheOldLayout) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {DType::kF32, {2, 3, 5, 4}});
  const ValueId y = *g.AddInput("y", {DType::kF32, {2, 4, 3, 5}});
  const ValueId nchw = Add(g, "nchw", "transpose", {x}, Perm({0, 3, 1, 2}));
  g.AddOutput(Add(g, "sum", "add", {nchw, y}));
  ASSERT_TRUE(InferShapes(g).ok());
  const absl::StatusOr<bool> changed = SinkTransposesPass().Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(std::string(g.node(1).op), "add");
}

// Reductions of transposed values, with and without keepdims (whose
// default is 0), with the dims left in the source's order and not.
TEST(SinkTransposesTest, ReductionsKeepTheirDimsOrDropThemAsTheOpsSay) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {DType::kF32, {2, 3, 4}});
  const ValueId t = Add(g, "t", "transpose", {x}, Perm({1, 2, 0}));  // [3, 4, 2]
  Attrs first, last, kept;
  first.Set("axes", AttrInts{0});
  last.Set("axes", AttrInts{2});
  kept.Set("axes", AttrInts{1});
  kept.Set("keepdims", int64_t{1});
  g.AddOutput(Add(g, "sum", "reduce_sum", {t}, std::move(first)));  // [4, 2]: transposed back
  g.AddOutput(Add(g, "min", "reduce_min", {t}, std::move(last)));   // [3, 4]: the source's order
  g.AddOutput(Add(g, "max", "reduce_max", {t}, std::move(kept)));   // [3, 1, 2]
  ASSERT_TRUE(InferShapes(g).ok());
  const std::vector<Tensor> inputs = {UniformTensor({DType::kF32, {2, 3, 4}}, 5, -2, 2)};
  const absl::StatusOr<std::vector<Tensor>> before = Interpret(g, inputs);
  ASSERT_TRUE(before.ok()) << before.status();
  const absl::StatusOr<bool> changed = SinkTransposesPass().Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  const absl::StatusOr<std::vector<Tensor>> after = Interpret(g, inputs);
  ASSERT_TRUE(after.ok()) << after.status();
  for (size_t o = 0; o < before->size(); ++o) {
    EXPECT_TRUE((*before)[o] == (*after)[o]) << "output " << o;
  }
}

}  // namespace
}  // namespace loom
