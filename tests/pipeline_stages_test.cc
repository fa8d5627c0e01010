// The pipeline loader's stage and target checks (passes/pass_manager.h)
// with the real registered passes, as loom loads them: a pipeline that
// lowers twice, emits before fusing or names target CUDA with codegen-cpp
// fails at load, naming the place and the pass that made the stage
// (passes/pass_manager_test.cc checks the same rules with fake passes).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "passes/pass_manager.h"
#include "pipelines/builtin_pipelines.h"

namespace loom {
namespace {

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

}  // namespace
}  // namespace loom
