#include "passes/fold_batch_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/verifier.h"

namespace loom {
namespace {

// x [2, 3, 5, 4] -> conv (3 -> 4 channels, 3x3, pads 1[, bias]) -> batch_norm
// -> relu; with `conv_read_twice`, the conv's output is an output too.
struct ConvBn {
  Module module;
  ValueId x = -1;

  ConvBn(bool bias, bool conv_read_twice, bool runtime_var = false) {
    Graph& g = module.graph;
    x = *g.AddInput("x", {DType::kF32, {2, 3, 5, 4}});
    std::vector<ValueId> conv_inputs = {
        x, *g.AddInitializer("w", ValueKind::kWeight,
                             UniformTensor({DType::kF32, {4, 3, 3, 3}}, 1, -1, 1))};
    if (bias) {
      conv_inputs.push_back(
          *g.AddInitializer("b", ValueKind::kWeight, UniformTensor({DType::kF32, {4}}, 2, -1, 1)));
    }
    Attrs pads;
    pads.Set("pads", AttrInts{1, 1, 1, 1});
    const NodeId conv = *g.AddNode("conv", "conv", conv_inputs, {"c"}, pads);
    const ValueId var = runtime_var
                            ? *g.AddInput("var", {DType::kF32, {4}})
                            : *g.AddInitializer("var", ValueKind::kWeight,
                                                UniformTensor({DType::kF32, {4}}, 6, 0.5, 2));
    Attrs epsilon;
    epsilon.Set("epsilon", 1e-3);
    const NodeId bn = *g.AddNode(
        "bn", "batch_norm",
        {g.node(conv).outputs[0],
         *g.AddInitializer("scale", ValueKind::kWeight,
                           UniformTensor({DType::kF32, {4}}, 3, 0.5, 1.5)),
         *g.AddInitializer("shift", ValueKind::kWeight,
                           UniformTensor({DType::kF32, {4}}, 4, -1, 1)),
         *g.AddInitializer("mean", ValueKind::kWeight, UniformTensor({DType::kF32, {4}}, 5, -1, 1)),
         var},
        {"n"}, epsilon);
    const NodeId relu = *g.AddNode("relu", "relu", {g.node(bn).outputs[0]}, {"y"});
    g.AddOutput(g.node(relu).outputs[0]);
    if (conv_read_twice) g.AddOutput(g.node(conv).outputs[0]);
    EXPECT_TRUE(InferShapes(g).ok());
  }

  std::vector<Tensor> Inputs() const {
    std::vector<Tensor> inputs = {UniformTensor({DType::kF32, {2, 3, 5, 4}}, 9, -2, 2)};
    if (module.graph.inputs().size() > 1)
      inputs.push_back(UniformTensor({DType::kF32, {4}}, 6, 0.5, 2));
    return inputs;
  }

  std::vector<std::string> Ops() const {
    std::vector<std::string> ops;
    for (const Node& node : module.graph.nodes()) ops.emplace_back(node.op);
    return ops;
  }
};

void ExpectSameOutputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o) {
    ASSERT_EQ(a[o].type(), b[o].type());
    for (int64_t i = 0; i < a[o].num_elements(); ++i) {
      const double expected = a[o].GetDouble(i);
      EXPECT_NEAR(b[o].GetDouble(i), expected, 1e-5 + 1e-5 * std::fabs(expected))
          << "output " << o << " element " << i;
    }
  }
}

TEST(FoldBatchNormTest, FoldsIntoTheConvsWeights) {
  for (bool bias : {false, true}) {
    ConvBn graph(bias, /*conv_read_twice=*/false);
    const absl::StatusOr<std::vector<Tensor>> before =
        Interpret(graph.module.graph, graph.Inputs());
    ASSERT_TRUE(before.ok()) << before.status();
    absl::StatusOr<bool> changed = FoldBatchNormPass().Run(graph.module);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    EXPECT_EQ(graph.Ops(), (std::vector<std::string>{"conv", "relu"}));
    Graph& g = graph.module.graph;
    EXPECT_EQ(g.node(0).inputs.size(), 3u);
    EXPECT_EQ(g.value(g.node(0).outputs[0]).name, "n");
    ASSERT_TRUE(InferShapes(g).ok());
    EXPECT_TRUE(VerifyGraph(g).ok());
    const absl::StatusOr<std::vector<Tensor>> after = Interpret(g, graph.Inputs());
    ASSERT_TRUE(after.ok()) << after.status();
    ExpectSameOutputs(*before, *after);
  }
}

TEST(FoldBatchNormTest, LeavesWhatItCannotFold) {
  ConvBn shared(/*bias=*/true, /*conv_read_twice=*/true);
  absl::StatusOr<bool> changed = FoldBatchNormPass().Run(shared.module);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed) << "the conv's output is read elsewhere";
  ConvBn runtime(/*bias=*/false, /*conv_read_twice=*/false, /*runtime_var=*/true);
  changed = FoldBatchNormPass().Run(runtime.module);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed) << "var is known only at run time";
  EXPECT_EQ(runtime.Ops(), (std::vector<std::string>{"conv", "batch_norm", "relu"}));
}

}  // namespace
}  // namespace loom
