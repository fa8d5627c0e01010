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

// y = exp(x + w) in `dtype`, read twice, and x cast to f32.
Module HalfGraph(DType dtype) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {dtype, {3, 5}});
  const ValueId w =
      *g.AddInitializer("w", ValueKind::kWeight, UniformTensor({dtype, {5}}, 1, -2, 2));
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
  for (DType dtype :
       {DType::kF16, DType::kBF16, DType::kF8E4M3FN, DType::kF8E5M2FNUZ, DType::kF4E2M1}) {
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
    const std::vector<Tensor> inputs = {UniformTensor({dtype, {3, 5}}, 2, -2, 2)};
    absl::StatusOr<std::vector<Tensor>> before = Interpret(original, inputs);
    absl::StatusOr<std::vector<Tensor>> after = Interpret(g, inputs);
    ASSERT_TRUE(before.ok() && after.ok());
    EXPECT_EQ(*before, *after);
    EXPECT_EQ(*pass.Run(module), false);
  }
}

// The sub-byte integers compute in i32 and wrap each result back.
TEST(WidenHalfTest, SubByteIntegersComputeInI32) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {DType::kI4, {16}});
  const ValueId sum = g.node(*g.AddNode("add", "add", {x, x}, {"sum"})).outputs[0];
  g.AddOutput(g.node(*g.AddNode("mul", "mul", {sum, x}, {"y"})).outputs[0]);
  ASSERT_TRUE(InferShapes(g).ok());
  const Graph original = g;
  ASSERT_EQ(*WidenHalfPass().Run(module), true);
  for (const Node& node : g.nodes()) {
    if (node.op == "cast") continue;
    for (ValueId id : node.outputs) EXPECT_EQ(g.value(id).type.dtype, DType::kI32) << node.name;
  }
  Tensor in(DType::kI4, {16});
  for (int i = 0; i < 16; ++i) in.SetInt(i, i - 8);
  absl::StatusOr<std::vector<Tensor>> before = Interpret(original, {in});
  absl::StatusOr<std::vector<Tensor>> after = Interpret(g, {in});
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(*before, *after);
  EXPECT_EQ((*after)[0].GetInt(15), 2);  // 7 + 7 = 14 wraps to -2; -2 * 7 = -14 wraps to 2
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
