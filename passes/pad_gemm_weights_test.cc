#include "passes/pad_gemm_weights.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/gemm.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "ir/verifier.h"
#include "passes/lower.h"
#include "passes/weight_product_test_util.h"

namespace loom {
namespace {

// The leading dimension of b in the program's one GEMM call.
std::optional<int64_t> GemmLeadingOfB(const Graph& graph) {
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return std::nullopt;
  for (const ComputeNode& node : program->nodes) {
    if (node.extern_op != ExternOp::kGemm) continue;
    const std::optional<Gemm> gemm = MatchGemm(node);
    if (gemm.has_value()) return gemm->b.leading;
  }
  return std::nullopt;
}

TEST(PadGemmWeightsTest, AProductReadsItsWeightWithPaddedRowsThroughAView) {
  WeightProduct product(/*x_shape=*/{64, 32}, /*n=*/1024);
  const std::vector<Tensor> before = product.Run();
  EXPECT_EQ(GemmLeadingOfB(product.module.graph), 1024);
  ASSERT_TRUE(product.Apply<PadGemmWeightsPass>());
  const Graph& g = product.module.graph;
  EXPECT_EQ(g.value(product.w).type.shape, (Shape{32, 1024 + kWeightRowPadding}));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.node(0).op, "slice");
  EXPECT_EQ(g.node(1).inputs[1], g.node(0).outputs[0]);
  ASSERT_TRUE(InferShapes(product.module.graph).ok());
  EXPECT_TRUE(VerifyGraph(g).ok());
  const std::vector<Tensor> after = product.Run();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  ASSERT_EQ(before[0].type(), after[0].type());
  for (int64_t i = 0; i < before[0].num_elements(); ++i) {
    ASSERT_EQ(before[0].GetDouble(i), after[0].GetDouble(i)) << "element " << i;
  }
  EXPECT_EQ(GemmLeadingOfB(g), 1024 + kWeightRowPadding);
}

TEST(PadGemmWeightsTest, LeavesWeightsOfOtherWidthsTypesAndReaders) {
  EXPECT_FALSE(WeightProduct({64, 32}, 512).Apply<PadGemmWeightsPass>())
      << "one multiple of 512 ran level";
  EXPECT_FALSE(WeightProduct({64, 32}, 1280).Apply<PadGemmWeightsPass>())
      << "not a multiple of 512";
  EXPECT_FALSE(WeightProduct({4, 32}, 1024).Apply<PadGemmWeightsPass>())
      << "4 rows make loops, not a GEMM call";
  EXPECT_FALSE(WeightProduct({64, 32}, 1024, DType::kF64).Apply<PadGemmWeightsPass>())
      << "f64 products were not measured";
  EXPECT_FALSE(
      WeightProduct({64, 32}, 1024, DType::kF32, /*also_added=*/true).Apply<PadGemmWeightsPass>())
      << "an add reads the weight as stored";
  EXPECT_TRUE(WeightProduct({64, 32}, 1536).Apply<PadGemmWeightsPass>());
}

TEST(PadGemmWeightsTest, LeavesAWeightReadAsTheFirstOperand) {
  Module module;
  Graph& g = module.graph;
  const ValueId x = *g.AddInput("x", {DType::kF32, {1024, 16}});
  const ValueId w = *g.AddInitializer("w", ValueKind::kWeight,
                                      UniformTensor({DType::kF32, {64, 1024}}, 1, -1, 1));
  g.AddOutput(g.node(*g.AddNode("mm", "matmul", {w, x}, {"y"})).outputs[0]);
  ASSERT_TRUE(InferShapes(g).ok());
  absl::StatusOr<bool> changed = PadGemmWeightsPass().Run(module);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace loom
