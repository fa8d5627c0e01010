#include "backends/cuda/codegen.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "passes/pass_manager.h"

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The module the cuda pipeline makes of a graph in text form.
Module Compile(const std::string& graph_text,
               const std::string& pipeline = "cuda") {
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
  EXPECT_THAT(
      text, HasSubstr("__device__ long long loom_f0_shape[3] = {64, 256, 0};"));
  EXPECT_THAT(text, HasSubstr("__launch_bounds__(256) loom_f0(const float* "
                              "__restrict__ p0, float* p1)"));
  EXPECT_THAT(
      text, HasSubstr("for (int64_t o = blockIdx.x; o < 64; o += gridDim.x)"));
  EXPECT_THAT(text, HasSubstr("for (int64_t r = lane; r < 4096; r += 256)"));
  EXPECT_THAT(text,
              HasSubstr("acc0 = loom_block_reduce(acc0, loom_sum_float(), "
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
  EXPECT_THAT(text,
              HasSubstr("acc0 = loom_warp_reduce(acc0, loom_sum_float());"));
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
  EXPECT_THAT(
      text, HasSubstr("for (int64_t o = (int64_t)blockIdx.x * 256 + "
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
  EXPECT_THAT(
      PrintLaunches(*module.source, *module.loops, *module.schedule),
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
  EXPECT_LT(module.source->kernel_functions,
            static_cast<int>(module.schedule->kernels.size()));
  EXPECT_EQ(module.source->launches.size(), module.schedule->kernels.size());
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
  EXPECT_EQ(Compile(RowSum(7, 300)).source->text,
            Compile(RowSum(7, 300)).source->text);
}

}  // namespace
}  // namespace loom
