#include "backends/cuda/codegen.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "passes/pass_manager.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The module the cuda pipeline makes of a graph in text form.
Module Compile(const std::string& graph_text, const std::string& pipeline = "cuda") {
  Module module;
  absl::StatusOr<proto::Graph> proto = ParseGraphText(graph_text, "test");
  EXPECT_TRUE(proto.ok()) << proto.status();
  absl::StatusOr<Graph> graph = GraphFromProto(*proto, "test");
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<LoadedPipeline> loaded = LoadPipeline(pipeline);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  module.graph = *std::move(graph);
  absl::StatusOr<std::vector<PassRun>> runs = RunPipeline(*loaded, module);
  EXPECT_TRUE(runs.ok()) << runs.status();
  EXPECT_TRUE(module.source.has_value());
  return module;
}

// Sum over the last axis of x [rows, columns].
std::string RowSum(int rows, int columns) {
  return absl::StrFormat(R"(
name: "row_sum"
input { name: "x" type { dtype: F32 shape: [%d, %d] } }
node { name: "s" op: "reduce_sum" input: "x" output: "y"
       attr { name: "axes" ints { v: [1] } } }
output: "y"
)",
                         rows, columns);
}

TEST(CudaCodegenTest, LongRowsReduceWithABlockPerRow) {
  const Module module = Compile(RowSum(64, 4096));
  const std::string& text = module.source->text;
  EXPECT_EQ(module.source->language, "cuda");
  EXPECT_EQ(module.source->functions, std::vector<std::string>{"loom_f0"});
  // One block of 256 threads for each of the 64 rows.
  EXPECT_THAT(text, HasSubstr("__device__ long long loom_f0_shape[3] = {64, 256, 0};"));
  EXPECT_THAT(text, HasSubstr("__launch_bounds__(256) loom_f0(const float* "
                              "__restrict__ p0, float* p1)"));
  EXPECT_THAT(text, HasSubstr("for (int64_t o = blockIdx.x; o < 64; o += gridDim.x)"));
  EXPECT_THAT(text, HasSubstr("for (int64_t r = lane; r < 4096; r += 256)"));
  EXPECT_THAT(text, HasSubstr("acc0 = loom_block_reduce(acc0, loom_sum_float(), "
                              "(float)0, loom_scratch_float);"));
  // One thread stores what every thread of the block has.
  EXPECT_THAT(text, HasSubstr("if (lane == 0) p1[x0] = acc0;"));
}

TEST(CudaCodegenTest, HugeRowsTakeBlocksOf1024Threads) {
  EXPECT_THAT(Compile(RowSum(2, 1 << 16)).source->text,
              HasSubstr("__launch_bounds__(1024) loom_f0("));
}

// The kernels, without the helpers before them.
std::string Kernels(const Module& module) {
  const std::string& text = module.source->text;
  return text.substr(text.find("// blocks, threads per block"));
}

TEST(CudaCodegenTest, ShortRowsReduceWithAWarpPerRow) {
  const std::string text = Kernels(Compile(RowSum(1000, 40)));
  EXPECT_THAT(text, HasSubstr("const int lane = threadIdx.x % 32;"));
  // 8 warps of a 256-thread block take 8 rows.
  EXPECT_THAT(text, HasSubstr("loom_f0_shape[3] = {125, 256, 0};"));
  EXPECT_THAT(text, HasSubstr("acc0 = loom_warp_reduce(acc0, loom_sum_float());"));
  EXPECT_THAT(text, Not(HasSubstr("__syncthreads")));
}

TEST(CudaCodegenTest, TinyRowsReduceWithAThreadPerRow) {
  const std::string text = Compile(RowSum(1000, 4)).source->text;
  EXPECT_THAT(text, Not(HasSubstr("lane")));
  EXPECT_THAT(text, Not(HasSubstr("loom_warp_reduce(acc")));
  EXPECT_THAT(text, HasSubstr("for (int64_t x1 = 0; x1 < 4; ++x1)"));
  EXPECT_THAT(text, HasSubstr("p1[x0] = acc0;"));
}

TEST(CudaCodegenTest, PointwiseKernelsGiveEachThreadAnElement) {
  const std::string text = Compile(R"(
name: "relu"
input { name: "x" type { dtype: F32 shape: [3, 1000] } }
node { name: "r" op: "relu" input: "x" output: "y" }
output: "y"
)")
                               .source->text;
  EXPECT_THAT(text, HasSubstr("loom_f0_shape[3] = {12, 256, 0};"));
  EXPECT_THAT(text, HasSubstr("for (int64_t o = (int64_t)blockIdx.x * 256 + "
                              "threadIdx.x; o < 3000; o += (int64_t)gridDim.x * 256)"));
  EXPECT_THAT(text, Not(HasSubstr("lane")));
  EXPECT_THAT(text, Not(HasSubstr("loom_block_reduce")));
}

// The fused norm: statistics in registers, the centred rows in shared
// memory, barriers between the members that share them.
// A warp per row takes the variance in one pass (Welford's update, then a
// warp combine), the mean, and normalises: nothing goes through shared
// memory.
TEST(CudaCodegenTest, LayerNormIsOneKernelWithWelfordStatistics) {
  absl::StatusOr<Graph> graph = LoadGraphFile("examples/layer_norm.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  Module module;
  module.graph = *std::move(graph);
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline("cuda");
  ASSERT_TRUE(pipeline.ok());
  ASSERT_TRUE(RunPipeline(*pipeline, module).ok());
  ASSERT_EQ(module.schedule->kernels.size(), 1);
  const std::string& text = module.source->text;
  EXPECT_THAT(text, HasSubstr("loom_welford_add(w0, t0);"));
  EXPECT_THAT(text, HasSubstr("w0 = loom_warp_reduce(w0, loom_welford_combine<float>());"));
  EXPECT_THAT(text, HasSubstr("float acc0 = w0.m2 / w0.n;"));
  EXPECT_THAT(text, Not(HasSubstr("loom_smem")));
  EXPECT_EQ(module.source->kernel_functions, 1);
  // Launch: one line per kernel, naming the buffers it gets.
  EXPECT_THAT(PrintLaunches(*module.source, *module.loops, *module.schedule),
              HasSubstr("loom_f0(x, scale, bias, y)"));
}

// The steps of an unrolled recurrence differ only in their buffers: they
// share functions.
TEST(CudaCodegenTest, IdenticalKernelsShareAFunction) {
  absl::StatusOr<Graph> graph = LoadGraphFile("examples/lstm_l2_h64.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  Module module;
  module.graph = *std::move(graph);
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline("cuda");
  ASSERT_TRUE(pipeline.ok());
  ASSERT_TRUE(RunPipeline(*pipeline, module).ok());
  EXPECT_LT(module.source->kernel_functions, static_cast<int>(module.schedule->kernels.size()));
  EXPECT_EQ(module.source->launches.size(), module.schedule->kernels.size());
}

// The plan of each function says what the printer chose: the team, the
// shared arrays, where members store and what of them it left out; dumps
// show it before the function, the emitted source never.
TEST(CudaCodegenTest, ThePlanOfEachFunctionShowsItsChoices) {
  const Module softmax = Compile(R"(
name: "softmax"
input { name: "x" type { dtype: F32 shape: [32, 64] } }
node { name: "sm" op: "softmax" input: "x" output: "y" attr { name: "axis" i: -1 } }
output: "y"
)");
  const GeneratedSource& source = *softmax.source;
  ASSERT_EQ(source.function_plans.size(), source.functions.size());
  const std::string& plan = source.function_plans[0];
  EXPECT_THAT(plan, HasSubstr(": 5 members, outer loops [32]\n"));
  EXPECT_THAT(plan, HasSubstr("  team: a block of 64 threads per outer iteration (32 blocks of 64 "
                              "threads, 256 bytes of shared memory)\n"));
  EXPECT_THAT(plan, HasSubstr("  p0: x + 0 (read)\n"));
  EXPECT_THAT(plan, HasSubstr("  shared l0: sm/exp.2, 64 f32 at byte 0 (member 1 writes, member 4 "
                              "reads last)\n"));
  EXPECT_THAT(plan, HasSubstr("  member 0 sm/max: max over [32, 64], stores sm/max.0 in a "
                              "register\n"));
  EXPECT_THAT(plan, HasSubstr("  member 4 sm/scale: pointwise over [32, 64], stores y\n"));
  EXPECT_THAT(source.text, Not(HasSubstr("plan:")));
  EXPECT_THAT(SourceWithPlans(source), HasSubstr("\n// plan:   team: a block of 64 threads"));

  // A recurrent step on a batch of one: the cuda pipeline's
  // drop-unit-loops removes its loop over the batch; without that pass,
  // the printer leaves the loop out itself.
  const char* const kStep = R"(
name: "step"
input { name: "x" type { dtype: F32 shape: [1, 16] } }
input { name: "y" type { dtype: F32 shape: [1, 16] } }
node { name: "m" op: "mul" input: "x" input: "y" output: "z" }
output: "z"
)";
  EXPECT_THAT(Compile(kStep).source->function_plans[0],
              HasSubstr("member 0 m: pointwise over [16], stores z\n"));
  const std::string keeping_unit_loops = testing::TempDir() + "/keeping_unit_loops.pbtxt";
  std::ofstream(keeping_unit_loops) << R"(
target: CUDA
pass { name: "lower" }
pass { name: "schedule" }
pass { name: "fuse" fuse { outer_loop: true } }
pass { name: "plan-memory" }
pass { name: "codegen-cuda" }
)";
  EXPECT_THAT(Compile(kStep, keeping_unit_loops).source->function_plans[0],
              HasSubstr("member 0 m: pointwise over [1, 16], stores z\n"
                        "    leaves out: loops x0 (extent 1)\n"));
}

// The launches of the gemm test model, one line each.
std::vector<std::string> GemmLaunches(Module& module) {
  absl::StatusOr<Graph> graph = LoadGraphFile("backends/cuda/testdata/gemms.pbtxt");
  EXPECT_TRUE(graph.ok()) << graph.status();
  module.graph = *std::move(graph);
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline("cuda");
  EXPECT_TRUE(pipeline.ok());
  EXPECT_TRUE(RunPipeline(*pipeline, module).ok());
  return absl::StrSplit(PrintLaunches(*module.source, *module.loops, *module.schedule), '\n',
                        absl::SkipEmpty());
}

// A cuBLAS call as "<op a><op b> m n k, a/lda, b/ldb, c/ldc, xcount strides".
std::string CallText(const cuda::CublasCall& call, const LoopProgram& program) {
  auto matrix = [&](const BufferRef& ref, int leading) {
    return absl::StrCat(program.buffers[ref.buffer].name, "+", ref.offset, "/", leading);
  };
  return absl::StrCat(call.transpose_a ? "T" : "N", call.transpose_b ? "T" : "N", " ", call.m, " ",
                      call.n, " ", call.k, ", ", matrix(call.a, call.lda), ", ",
                      matrix(call.b, call.ldb), ", ", matrix(call.c, call.ldc), ", x",
                      call.batch_count, " ", call.stride_a, " ", call.stride_b, " ", call.stride_c);
}

// Each product is a launch of a library call, not a kernel: the gemm as
// MatchGemm reads it (row-major), then as the cuBLAS calls it becomes.
TEST(CudaCodegenTest, MatrixProductsAreCublasCalls) {
  Module module;
  EXPECT_THAT(GemmLaunches(module),
              ElementsAre("gemm f32 m=9 n=6 k=4 (a, b, ab) ld 4 6 6 "
                          "batch [2, 3] strides 108,36 72,24 162,54  # batched",
                          "gemm f32 m=15 n=7 k=8 (x, w^T, lin/matmul.1) ld 8 8 7  "
                          "# lin/matmul",
                          "loom_f0(lin/matmul.1, bias, y)  # lin/bias",
                          "gemm f32 m=4 n=4 k=9 (a^T, a, ata) ld 4 4 4 "
                          "batch [2, 3] strides 108,36 108,36 48,16  # transposed",
                          "gemm f32 m=9 n=6 k=4 (q, b, qb) ld 12 6 6 "
                          "batch [2, 3] strides 108,4 72,24 162,54  # strided",
                          "gemm f64 m=10 n=5 k=12 (d, e, de) ld 12 5 5  # f64"));
  EXPECT_EQ(module.source->functions, std::vector<std::string>{"loom_f0"});
  EXPECT_THAT(module.source->text, Not(HasSubstr("batched")));
  const LaunchTable& launches = module.source->launches;
  ASSERT_EQ(launches.gemms.size(), 5);
  std::vector<std::string> calls;
  for (const Gemm& gemm : launches.gemms) {
    for (const cuda::CublasCall& call : cuda::CublasCalls(gemm)) {
      calls.push_back(CallText(call, *module.loops));
    }
  }
  EXPECT_THAT(calls, ElementsAre(
                         // [2, 3] batches of contiguous matrices: one batch of 6.
                         "NN 6 9 4, b+0/6, a+0/4, ab+0/6, x6 24 36 54",
                         // x [3, 5, 8] times w^T: 15 rows, w column-major.
                         "TN 7 15 8, w+0/8, x+0/8, lin/matmul.1+0/7, x1 0 0 0",
                         "NT 4 4 9, a+0/4, a+0/4, ata+0/4, x6 36 36 16",
                         // q's batch loops do not merge: a call for each of the 2.
                         "NN 6 9 4, b+0/6, q+0/12, qb+0/6, x3 24 4 54",
                         "NN 6 9 4, b+72/6, q+108/12, qb+162/6, x3 24 4 54",
                         "NN 5 10 12, e+0/5, d+0/12, de+0/5, x1 0 0 0"));
}

TEST(CudaCodegenTest, BadBlockSizeFailsWhenThePipelineLoads) {
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipelineText(
      "target: CUDA\npass { name: \"codegen-cuda\" cuda { block_size: 100 } "
      "}\n",
      "bad.pbtxt");
  ASSERT_FALSE(pipeline.ok());
  EXPECT_THAT(pipeline.status().message(), HasSubstr("block_size"));
}

TEST(CudaCodegenTest, OutputIsDeterministic) {
  EXPECT_EQ(Compile(RowSum(7, 300)).source->text, Compile(RowSum(7, 300)).source->text);
}

}  // namespace
}  // namespace loom
