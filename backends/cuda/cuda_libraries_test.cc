#include "backends/cuda/cuda_libraries.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "passes/pass_manager.h"

namespace loom::cuda {
namespace {

using ::testing::HasSubstr;

std::string CacheDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/cache");
}

// The CUDA the cuda pipeline emits for an example.
std::string EmittedCuda(const std::string& example) {
  absl::StatusOr<Graph> graph = LoadGraphFile(example);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline("cuda");
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  Module module;
  module.graph = *std::move(graph);
  EXPECT_TRUE(RunPipeline(*pipeline, module).ok());
  return module.source.has_value() ? module.source->text : "";
}

// Compiles with NVRTC (no GPU needed); skips where the toolkit is missing.
TEST(CudaRuntimeTest, NvrtcCompilesEmittedCudaAndCachesIt) {
  const std::string source = EmittedCuda("examples/layer_norm.pbtxt");
  for (const char* arch : {"sm_90", "sm_80"}) {
    absl::StatusOr<Cubin> cubin = CompileCubin(source, arch, CacheDir());
    if (!cubin.ok() && absl::IsFailedPrecondition(cubin.status())) {
      GTEST_SKIP() << cubin.status();
    }
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_FALSE(cubin->cache_hit);
    EXPECT_GT(cubin->data.size(), 1000);
    absl::StatusOr<Cubin> again = CompileCubin(source, arch, CacheDir());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->cache_hit);
    EXPECT_EQ(again->data, cubin->data);
  }
}

TEST(CudaRuntimeTest, NvrtcCompilesARecurrence) {
  absl::StatusOr<Cubin> cubin =
      CompileCubin(EmittedCuda("examples/lstm_l2_h64.pbtxt"), "sm_90", CacheDir());
  if (!cubin.ok() && absl::IsFailedPrecondition(cubin.status())) {
    GTEST_SKIP() << cubin.status();
  }
  ASSERT_TRUE(cubin.ok()) << cubin.status();
}

// Index checks: loom_index_error's atomicCAS on the error slot.
TEST(CudaRuntimeTest, NvrtcCompilesIndexChecks) {
  const std::string source = EmittedCuda("backends/cuda/testdata/indices.pbtxt");
  ASSERT_NE(source.find("atomicCAS"), std::string::npos);
  absl::StatusOr<Cubin> cubin = CompileCubin(source, "sm_90", CacheDir());
  if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << cubin.status();
  }
  ASSERT_TRUE(cubin.ok()) << cubin.status();
}

TEST(CudaRuntimeTest, CompileErrorsCarryNvrtcsLog) {
  absl::StatusOr<Cubin> cubin =
      CompileCubin("extern \"C\" __global__ void f() { undeclared(); }", "sm_90", CacheDir());
  if (!cubin.ok() && absl::IsFailedPrecondition(cubin.status())) {
    GTEST_SKIP() << cubin.status();
  }
  ASSERT_FALSE(cubin.ok());
  EXPECT_THAT(cubin.status().message(), HasSubstr("undeclared"));
}

TEST(CudaRuntimeTest, MissingDriverIsAFailedPreconditionSayingSo) {
  setenv("LOOM_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  absl::StatusOr<Device> device = OpenDevice();
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(device.status()));
  EXPECT_THAT(device.status().message(),
              HasSubstr("no CUDA driver: /nonexistent/libcuda.so.1 not found"));
}

// Binds every function loom calls (no GPU needed); skips where cuBLAS is
// missing.
TEST(CudaRuntimeTest, LoadsCublas) {
  absl::StatusOr<Cublas> cublas = LoadCublas();
  if (!cublas.ok() && absl::IsFailedPrecondition(cublas.status())) {
    GTEST_SKIP() << cublas.status();
  }
  ASSERT_TRUE(cublas.ok()) << cublas.status();
  EXPECT_NE(cublas->SgemmStridedBatched, nullptr);
  EXPECT_NE(cublas->DgemmStridedBatched, nullptr);
  // Callable: the library answers without a GPU.
  EXPECT_NE(std::string(cublas->GetStatusString(CUBLAS_STATUS_SUCCESS)), "");
}

TEST(CudaRuntimeTest, MissingCublasIsAFailedPreconditionNamingIt) {
  setenv("LOOM_CUBLAS", "/nonexistent/libcublas.so.13", 1);
  absl::StatusOr<Cublas> cublas = LoadCublas();
  unsetenv("LOOM_CUBLAS");
  ASSERT_FALSE(cublas.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(cublas.status()));
  EXPECT_THAT(cublas.status().message(), HasSubstr("cuBLAS not found"));
  EXPECT_THAT(cublas.status().message(), HasSubstr("/nonexistent/libcublas.so.13"));
}

}  // namespace
}  // namespace loom::cuda
