// The examples and random graphs compiled for Arm (-march=armv8-a) and run
// under user-mode QEMU (backends/cpp/aarch64_run.h), judged by the rule of
// `loom run --check` (compiler/check.h): what an Arm machine runs of the
// generic GCC-vector code, which the x86 tests run only as SSE. Models
// whose kernels call a library (oneDNN, BLAS) are left out: those libraries
// are not in the cross toolchain.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "backends/cpp/aarch64_run.h"
#include "compiler/check.h"
#include "compiler/driver.h"
#include "gtest/gtest.h"
#include "ir/dtype.h"
#include "ir/graph_io.h"
#include "pipelines/builtin_pipelines.h"
#include "tools/random_graph.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

// The cpu pipeline with its kernels for Armv8-A, written to a file.
std::string ArmPipeline() {
  const std::string cpu(*BuiltinPipelineText("cpu"));
  const std::string arm =
      absl::StrReplaceAll(cpu, {{"cpp { simd: NATIVE openmp: true }",
                                 "cpp { simd: NATIVE openmp: true march: \"armv8-a\" }"}});
  EXPECT_NE(arm, cpu) << "the cpu pipeline's codegen-cpp options changed";
  const std::string path = absl::StrCat(TempDir(), "/cpu_armv8-a.pbtxt");
  std::ofstream(path) << arm;
  return path;
}

class Aarch64Test : public testing::Test {
 protected:
  void SetUp() override {
#if !defined(__x86_64__)
    GTEST_SKIP() << "cross-compiles from x86-64 only (on Arm, every test runs Arm code)";
#endif
  }

  // Compiles `graph` for Arm and runs it under QEMU on the inputs of seed 1
  // (those of `loom run`), judged by the --check rule; `ran` says whether it
  // did (false: its kernels call a library).
  static void CheckOnArm(Graph graph, bool& ran) {
    ran = false;
    const std::string name = graph.name;
    static const std::string* const pipeline = new std::string(ArmPipeline());
    CompileOptions options;
    options.model = name;
    options.pipeline = *pipeline;
    options.native_compile = false;
    options.keep_input_graph = true;
    absl::StatusOr<CompiledModel> compiled = CompileGraph(std::move(graph), options);
    ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.status();
    absl::StatusOr<std::vector<Tensor>> inputs = MakeInputs(compiled->module.graph, "", 1);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    absl::StatusOr<std::vector<Tensor>> outputs =
        cpp::RunOnAarch64(compiled->module, compiled->output_names, *inputs, TempDir());
    if (absl::IsUnimplemented(outputs.status())) return;
    ASSERT_TRUE(outputs.ok()) << name << ": " << outputs.status();
    absl::StatusOr<CheckResult> check = CheckOutputs(*compiled->input_graph, *inputs, *outputs);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->pass) << name << " on aarch64: max abs error " << check->max_abs_error
                             << "; worst: " << check->worst;
    ran = true;
  }
};

// Every example whose kernels are all loom's own.
TEST_F(Aarch64Test, ExamplesMatchTheTruth) {
  std::vector<std::string> ran, left_out;
  std::vector<fs::path> models;
  for (const fs::directory_entry& entry : fs::directory_iterator("examples")) {
    if (entry.path().extension() == ".pbtxt") models.push_back(entry.path());
  }
  std::sort(models.begin(), models.end());
  for (const fs::path& path : models) {
    absl::StatusOr<Graph> graph = LoadGraphFile(path.string());
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph->name = path.stem().string();
    bool did_run = false;
    ASSERT_NO_FATAL_FAILURE(CheckOnArm(*std::move(graph), did_run));
    (did_run ? ran : left_out).push_back(path.stem().string());
  }
  std::printf("ran on aarch64: %s\nleft out (library calls): %s\n", absl::StrJoin(ran, " ").c_str(),
              absl::StrJoin(left_out, " ").c_str());
  // group_norm, layer_norm and softmax, large and small, and small_integers.
  EXPECT_GE(ran.size(), 7u);
}

// Random graphs (the differential test's generator) of 30 nodes.
constexpr int kSeeds = 40;
TEST_F(Aarch64Test, RandomGraphsMatchTheTruth) {
  int ran = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    absl::StatusOr<proto::Graph> generated = gen::GenerateRandomGraph(seed, /*target_nodes=*/30);
    ASSERT_TRUE(generated.ok()) << generated.status();
    const std::string name = absl::StrCat("random_seed_", seed);
    absl::StatusOr<Graph> graph = GraphFromProto(*generated, name);
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph->name = name;
    bool did_run = false;
    ASSERT_NO_FATAL_FAILURE(CheckOnArm(*std::move(graph), did_run));
    ran += did_run;
  }
  std::printf("%d of %d random graphs ran on aarch64\n", ran, kSeeds);
  EXPECT_GE(ran, kSeeds / 3);
}

}  // namespace
}  // namespace loom
