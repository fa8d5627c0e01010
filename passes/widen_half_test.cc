#include "passes/widen_half.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/verifier.h"

namespace loom {
namespace {

Tensor Uniform(DType dtype, Shape shape, uint64_t seed) {
  Tensor t(dtype, std::move(shape));
  FillUniform(t, seed, -2, 2);
  return t;
}

// y = exp(x + w) in `dtype`, read twice, and x cast to f32.
Module HalfGraph(DType dtype) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {dtype, {3, 5}});
  const ValueId w = *g.AddInitializer("w", ValueKind::kWeight, Uniform(dtype, {5}, 1));
  const ValueId sum = g.node(*g.AddNode("add", "add", {x, w}, {"sum"})).outputs[0];
  const ValueId y = g.node(*g.AddNode("exp", "exp", {sum}, {"y"})).outputs[0];
  const ValueId z = g.node(*g.AddNode("mul", "mul", {sum, y}, {"z"})).outputs[0];
  Attrs to_f32;
  to_f32.Set("to", std::string("f32"));
  const ValueId c = g.node(*g.AddNode("cast", "cast", {x}, {"c"}, to_f32)).outputs[0];
  for (ValueId out : {y, z, c}) g.AddOutput(out);
  EXPECT_TRUE(InferShapes(g).ok());
  return module;
}

TEST(WidenHalfTest, OnlyCastsTouchHalfValuesAndResultsAreKept) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Module module = HalfGraph(dtype);
    const Graph original = module.graph;
    WidenHalfPass pass;
    ASSERT_EQ(*pass.Run(module), true);
    const Graph& g = module.graph;
    ASSERT_TRUE(VerifyGraph(g).ok());
    for (const Node& node : g.nodes()) {
      if (node.op == "cast") continue;
      for (const auto* ids : {&node.inputs, &node.outputs}) {
        for (ValueId id : *ids) EXPECT_EQ(g.value(id).type.dtype, DType::kF32) << node.name;
      }
    }
    // x and w widened; sum, y and z narrowed; sum (read twice) and y widened
    // once each; the graph's own cast. The interpreter gives the same bits.
    int casts = 0;
    for (const Node& node : g.nodes()) casts += node.op == "cast";
    EXPECT_EQ(casts, 2 + 3 + 2 + 1);
    const std::vector<Tensor> inputs = {Uniform(dtype, {3, 5}, 2)};
    absl::StatusOr<std::vector<Tensor>> before = Interpret(original, inputs);
    absl::StatusOr<std::vector<Tensor>> after = Interpret(g, inputs);
    ASSERT_TRUE(before.ok() && after.ok());
    EXPECT_EQ(*before, *after);
    EXPECT_EQ(*pass.Run(module), false);
  }
}

TEST(WidenHalfTest, LeavesOtherGraphsAlone) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {DType::kF32, {4}});
  g.AddOutput(g.node(*g.AddNode("neg", "neg", {x}, {"y"})).outputs[0]);
  ASSERT_TRUE(InferShapes(g).ok());
  EXPECT_EQ(*WidenHalfPass().Run(module), false);
  EXPECT_EQ(g.nodes().size(), 1u);
}

}  // namespace
}  // namespace loom
