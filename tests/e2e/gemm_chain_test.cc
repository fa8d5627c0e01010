// Gemm chains (ir/gemm_chain.h): attention's scores, softmax and values'
// product run as one stream of tasks where the scores are large and shallow,
// match the interpreter, and keep every buffer they touch apart in memory;
// what is not such a chain runs apart.

#include "ir/gemm_chain.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// softmax(q * k^T * scale + mask, axis) * v over `heads` heads of `rows`
// queries and keys, `depth` deep; `axis` -1 normalises each query's row.
Graph Attention(int64_t heads, int64_t rows, int64_t depth, int64_t axis = -1) {
  GraphBuilder b;
  const ValueId q = b.Input("q", DType::kF32, {heads, rows, depth});
  const ValueId k = b.Input("k", DType::kF32, {heads, rows, depth});
  const ValueId v = b.Input("v", DType::kF32, {heads, rows, depth});
  const ValueId k_t = b.Op("transpose", {k}, IntsAttr("perm", {0, 2, 1}));
  const ValueId scores = b.Op("matmul", {q, k_t});
  const ValueId scaled = b.Op("mul", {scores, b.Weight("scale", {1}, 1, 0.1, 0.2)});
  const ValueId masked = b.Op("add", {scaled, b.Weight("mask", {rows, rows}, 2)});
  const ValueId p = b.Op("softmax", {masked}, MakeAttrs({{"axis", axis}}));
  b.Output(b.Op("matmul", {p, v}));
  return std::move(b.graph());
}

// The chains of `module`'s schedule, by their first kernel.
std::vector<int> Chains(const Module& module) {
  std::vector<int> chains;
  const std::vector<Kernel>& kernels = module.schedule->kernels;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].chain_length > 1) chains.push_back(static_cast<int>(k));
  }
  return chains;
}

absl::StatusOr<Module> Emit(Graph graph) {
  EXPECT_TRUE(InferShapes(graph).ok());
  return EmitModule(std::move(graph));
}

std::string Plans(const Module& module) {
  std::string text;
  for (const std::string& plan : module.source->function_plans) text += plan;
  return text;
}

// Whether two buffers of the program share bytes of the arena.
bool ShareMemory(const Module& module, BufferId x, BufferId y) {
  const MemoryPlan& plan = *module.schedule->memory;
  const int64_t x_at = plan.offsets[x], y_at = plan.offsets[y];
  if (x_at < 0 || y_at < 0) return false;
  const Buffer& bx = module.loops->buffers[x];
  const Buffer& by = module.loops->buffers[y];
  return x_at < y_at + NumBytes(by.dtype, by.sizes) && y_at < x_at + NumBytes(bx.dtype, bx.sizes);
}

// Whisper's shape in small: 2 heads of 1000 queries (8 MB of scores), 40
// deep, the last block of rows shorter than the others.
TEST(GemmChainTest, AttentionRunsAsOneChainOfTasks) {
  absl::StatusOr<Module> module = Emit(Attention(2, 1000, 40));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<int> chains = Chains(*module);
  ASSERT_EQ(chains.size(), 1u);
  const absl::Span<const Kernel> kernels =
      absl::MakeConstSpan(module->schedule->kernels).subspan(chains[0], 3);
  const std::optional<GemmChain> chain = MatchGemmChain(*module->loops, kernels);
  ASSERT_TRUE(chain.has_value());
  EXPECT_EQ(chain->first.m, 1000);
  EXPECT_EQ(chain->first.k, 40);
  EXPECT_THAT(Plans(*module), HasSubstr("a GEMM chain, each task 256 rows of a batch position"));
  // Tasks run in any order: nothing the chain touches shares memory.
  std::vector<BufferId> touched;
  for (const Kernel& kernel : kernels) {
    for (int n : kernel.nodes) {
      const ComputeNode& node = module->loops->nodes[n];
      touched.push_back(node.output);
      for (const ScalarOp& op : node.body) {
        if (op.kind == ScalarOp::Kind::kLoad) touched.push_back(op.buffer);
      }
    }
  }
  for (BufferId x : touched) {
    for (BufferId y : touched) {
      if (x != y) {
        EXPECT_FALSE(ShareMemory(*module, x, y)) << x << " and " << y;
      }
    }
  }
  CompileRunAndCompare(Attention(2, 1000, 40));
}

// The chain's code for every x86 instruction-set level this CPU runs:
// AVX2 (where the products may call OpenBLAS or BLIS) and generic x86-64.
TEST(GemmChainTest, AttentionMatchesOnEveryIsaLevel) {
  for (const char* march : {"haswell", "x86-64"}) {
    if (std::string(march) == "haswell" &&
        !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
      continue;
    }
    EndToEndOptions options;
    options.march = march;
    CompileRunAndCompare(Attention(2, 1000, 40), options);
  }
}

// A softmax over each key's column reads every query's row: not a chain.
TEST(GemmChainTest, ASoftmaxAcrossRowsRunsApart) {
  absl::StatusOr<Module> module = Emit(Attention(2, 1000, 40, /*axis=*/-2));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(Chains(*module).empty());
  EXPECT_THAT(Plans(*module), Not(HasSubstr("GEMM chain")));
  CompileRunAndCompare(Attention(2, 1000, 40, /*axis=*/-2));
}

// Scores that stay in the caches (2 MB), and a product too deep for a
// chain to pay (kMaxChainedDepth): each kernel on its own.
TEST(GemmChainTest, SmallOrDeepProductsRunApart) {
  absl::StatusOr<Module> small = Emit(Attention(2, 500, 40));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_TRUE(Chains(*small).empty());
  absl::StatusOr<Module> deep = Emit(Attention(2, 1000, 384));
  ASSERT_TRUE(deep.ok()) << deep.status();
  EXPECT_TRUE(Chains(*deep).empty());
}

}  // namespace
}  // namespace loom
