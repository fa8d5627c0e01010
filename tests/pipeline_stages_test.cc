// The pipeline loader's stage and target checks (passes/pass_manager.h)
// with the real registered passes, as loom loads them: a pipeline that
// lowers twice, emits before fusing or names target CUDA with codegen-cpp
// fails at load, naming the place and the pass that made the stage
// (passes/pass_manager_test.cc checks the same rules with fake passes).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cpp/cpp_options.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/decompose_options.pb.h"
#include "passes/pass_manager.h"
#include "pipelines/builtin_pipelines.h"
#include "scheduler/fuse_options.pb.h"

namespace loom {
namespace {

using ::testing::IsSupersetOf;

// The message of loading `text` as p.pbtxt, or "loaded".
std::string LoadError(absl::string_view text) {
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipelineText(text, "p.pbtxt");
  if (pipeline.ok()) return "loaded";
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(pipeline.status().message());
}

TEST(PipelineStagesTest, LoweringTwiceFailsAtLoad) {
  EXPECT_EQ(LoadError("target: CPU\n"
                      "pass { name: \"decompose\" }\n"
                      "pass { name: \"lower\" }\n"
                      "pass { name: \"lower\" }\n"),
            "p.pbtxt:4: pass 'lower' runs on the graph, but here the module holds loop IR "
            "(after 'lower' at p.pbtxt:3)");
}

TEST(PipelineStagesTest, EmittingBeforeFusingFailsAtLoad) {
  EXPECT_EQ(LoadError("target: CPU\n"
                      "pass { name: \"lower\" }\n"
                      "pass { name: \"schedule\" }\n"
                      "pass { name: \"codegen-cpp\" }\n"),
            "p.pbtxt:4: pass 'codegen-cpp' runs on a memory plan, but here the module holds a "
            "schedule (after 'schedule' at p.pbtxt:3)");
}

TEST(PipelineStagesTest, ACodegenForAnotherTargetFailsAtLoad) {
  const char* const kStages =
      "pass { name: \"lower\" }\n"
      "pass { name: \"schedule\" }\n"
      "pass { name: \"fuse\" }\n"
      "pass { name: \"plan-memory\" }\n";
  EXPECT_EQ(LoadError(std::string("target: CUDA\n") + kStages + "pass { name: \"codegen-cpp\" }\n"),
            "p.pbtxt:6: pass 'codegen-cpp' is for target CPU, but the pipeline's target is CUDA");
  EXPECT_EQ(LoadError(std::string("target: CPU\n") + kStages + "pass { name: \"codegen-cuda\" }\n"),
            "p.pbtxt:6: pass 'codegen-cuda' is for target CUDA, but the pipeline's target is CPU");
  EXPECT_EQ(
      LoadError(std::string("target: CUDA\n") + kStages + "pass { name: \"codegen-cuda\" }\n"),
      "loaded");
}

// Every built-in pipeline passes the same checks.
TEST(PipelineStagesTest, TheBuiltInPipelinesLoad) {
  for (const std::string& name : BuiltinPipelineNames()) {
    absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline(name);
    EXPECT_TRUE(pipeline.ok()) << name << ": " << pipeline.status();
  }
}

// The options a pass was given, as its own message type (null: none).
template <typename Options>
const Options* OptionsOf(const LoadedPipeline& pipeline, absl::string_view pass) {
  for (const LoadedPipeline::Entry& entry : pipeline.passes) {
    if (entry.name == pass) return dynamic_cast<const Options*>(entry.options.get());
  }
  return nullptr;
}

TEST(PipelineStagesTest, CpuRunsTheGraphPassesThenLowersAndEmitsCpp) {
  absl::StatusOr<LoadedPipeline> cpu = LoadPipeline("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->target, proto::CPU);
  std::vector<std::string> names;
  for (const LoadedPipeline::Entry& entry : cpu->passes) names.push_back(entry.name);
  ASSERT_GE(names.size(), 6);
  EXPECT_EQ(names.front(), "verify");
  EXPECT_THAT(names, IsSupersetOf({"decompose", "lower", "schedule", "fuse"}));
  EXPECT_EQ(names.back(), "codegen-cpp");
  const auto* decompose = OptionsOf<proto::DecomposeOptions>(*cpu, "decompose");
  ASSERT_NE(decompose, nullptr);
  EXPECT_TRUE(decompose->ops().empty());  // every composite
  const auto* cpp = OptionsOf<proto::CppOptions>(*cpu, "codegen-cpp");
  ASSERT_NE(cpp, nullptr);
  EXPECT_EQ(cpp->simd(), proto::CppOptions::NATIVE);
  EXPECT_EQ(OptionsOf<proto::FuseOptions>(*cpu, "verify"), nullptr);
}

TEST(PipelineStagesTest, UnrolledRnnPipelineUnrollsRecurrences) {
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline("cpu_unrolled_rnn");
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const auto* decompose = OptionsOf<proto::DecomposeOptions>(*pipeline, "decompose");
  ASSERT_NE(decompose, nullptr);
  EXPECT_EQ(decompose->rnn(), proto::DecomposeOptions::UNROLL);
}

}  // namespace
}  // namespace loom
