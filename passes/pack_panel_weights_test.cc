#include "passes/pack_panel_weights.h"

#include <optional>
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

TEST(PackPanelWeightsTest, AProductOfFewRowsReadsItsWeightAsPanels) {
  WeightProduct product({1, 8, 256}, 768);
  const std::vector<Tensor> before = product.Run();
  ASSERT_TRUE(product.Apply<PackPanelWeightsPass>());
  const Graph& g = product.module.graph;
  EXPECT_EQ(g.value(product.w).type.shape, (Shape{48, 256, kPanelWidth}));
  ASSERT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.node(0).op, "reshape");
  EXPECT_EQ(g.node(1).op, "matmul");
  EXPECT_EQ(g.node(2).op, "transpose");
  EXPECT_EQ(g.node(3).op, "reshape");
  ASSERT_TRUE(InferShapes(product.module.graph).ok());
  EXPECT_TRUE(VerifyGraph(g).ok());
  const std::vector<Tensor> after = product.Run();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  ASSERT_EQ(before[0].type(), after[0].type());
  for (int64_t i = 0; i < before[0].num_elements(); ++i) {
    ASSERT_EQ(before[0].GetDouble(i), after[0].GetDouble(i)) << "element " << i;
  }
  // Lowered, the product is one GEMM node: a batch of 48 panel products
  // [8, 256] x [256, 16], b a panel after another, c likewise.
  absl::StatusOr<LoopProgram> program = LowerGraph(g);
  ASSERT_TRUE(program.ok()) << program.status();
  int gemms = 0;
  for (const ComputeNode& node : program->nodes) {
    if (node.extern_op != ExternOp::kGemm) continue;
    ++gemms;
    const std::optional<Gemm> gemm = MatchGemm(node);
    ASSERT_TRUE(gemm.has_value());
    EXPECT_EQ(gemm->batch, (std::vector<int64_t>{48}));
    EXPECT_EQ(gemm->m, 8);
    EXPECT_EQ(gemm->n, kPanelWidth);
    EXPECT_EQ(gemm->b.batch_strides, (std::vector<int64_t>{256 * kPanelWidth}));
    EXPECT_EQ(gemm->a.batch_strides, (std::vector<int64_t>{0}));
    EXPECT_EQ(gemm->c.batch_strides, (std::vector<int64_t>{8 * kPanelWidth}));
  }
  EXPECT_EQ(gemms, 1);
}

TEST(PackPanelWeightsTest, LeavesOtherProducts) {
  EXPECT_FALSE(WeightProduct({33, 256}, 768).Apply<PackPanelWeightsPass>())
      << "33 rows: the library's GEMM";
  EXPECT_EQ(WeightProduct({12, 256}, 768).Apply<PackPanelWeightsPass>(), PanelMaxRows() >= 12)
      << "by the CPU";
  EXPECT_FALSE(WeightProduct({4, 256}, 768).Apply<PackPanelWeightsPass>())
      << "4 rows make matrix-vector loops";
  EXPECT_FALSE(WeightProduct({8, 256}, 760).Apply<PackPanelWeightsPass>())
      << "columns not a multiple of 16";
  EXPECT_FALSE(WeightProduct({8, 64}, 512).Apply<PackPanelWeightsPass>())
      << "a small weight stays in the caches";
  EXPECT_FALSE(WeightProduct({8, 256}, 768, DType::kF64).Apply<PackPanelWeightsPass>())
      << "f64 calls CBLAS";
  EXPECT_FALSE(
      WeightProduct({8, 256}, 768, DType::kF32, /*also_added=*/true).Apply<PackPanelWeightsPass>())
      << "an add reads the weight as stored";
  EXPECT_TRUE(WeightProduct({2, 4, 256}, 256).Apply<PackPanelWeightsPass>())
      << "8 rows in a batch of sequences";
}

}  // namespace
}  // namespace loom
