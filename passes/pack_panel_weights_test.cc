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

namespace loom {
namespace {

// y = x [batch, seq, k] @ w [k, n]; with `also_added`, w + 1 is an output too.
struct Product {
  Module module;
  ValueId w = -1;
  Shape x_shape;
  DType dtype;

  Product(Shape x_shape, int64_t n, DType dtype = DType::kF32, bool also_added = false)
      : x_shape(std::move(x_shape)), dtype(dtype) {
    Graph& g = module.graph;
    const ValueId x = *g.AddInput("x", {dtype, this->x_shape});
    w = *g.AddInitializer("w", ValueKind::kWeight,
                          UniformTensor({dtype, {this->x_shape.back(), n}}, 1, -1, 1));
    g.AddOutput(g.node(*g.AddNode("mm", "matmul", {x, w}, {"y"})).outputs[0]);
    if (also_added) g.AddOutput(g.node(*g.AddNode("add", "add", {w, w}, {"z"})).outputs[0]);
    EXPECT_TRUE(InferShapes(g).ok());
  }

  bool Pack() {
    absl::StatusOr<bool> changed = PackPanelWeightsPass().Run(module);
    EXPECT_TRUE(changed.ok()) << changed.status();
    return changed.ok() && *changed;
  }

  std::vector<Tensor> Run() const {
    absl::StatusOr<std::vector<Tensor>> out =
        Interpret(module.graph, {UniformTensor({dtype, x_shape}, 2, -1, 1)});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>{};
  }
};

TEST(PackPanelWeightsTest, AProductOfFewRowsReadsItsWeightAsPanels) {
  Product product({1, 8, 256}, 768);
  const std::vector<Tensor> before = product.Run();
  ASSERT_TRUE(product.Pack());
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
  EXPECT_FALSE(Product({33, 256}, 768).Pack()) << "33 rows: the library's GEMM";
  EXPECT_EQ(Product({12, 256}, 768).Pack(), PanelMaxRows() >= 12) << "by the CPU";
  EXPECT_FALSE(Product({4, 256}, 768).Pack()) << "4 rows make matrix-vector loops";
  EXPECT_FALSE(Product({8, 256}, 760).Pack()) << "columns not a multiple of 16";
  EXPECT_FALSE(Product({8, 64}, 512).Pack()) << "a small weight stays in the caches";
  EXPECT_FALSE(Product({8, 256}, 768, DType::kF64).Pack()) << "f64 calls CBLAS";
  EXPECT_FALSE(Product({8, 256}, 768, DType::kF32, /*also_added=*/true).Pack())
      << "an add reads the weight as stored";
  EXPECT_TRUE(Product({2, 4, 256}, 256).Pack()) << "8 rows in a batch of sequences";
}

}  // namespace
}  // namespace loom
