#include "backends/common/codegen_pass.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

// A codegen pass whose emitter writes the number of kernels it was given.
LOOM_REGISTER_PASS("codegen-test", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(
      MakeCodegenPass(proto::CUDA, [](const LoopProgram&, const Schedule& schedule) {
        GeneratedSource source;
        source.text = std::to_string(schedule.kernels.size());
        return absl::StatusOr<GeneratedSource>(std::move(source));
      }));
});

std::unique_ptr<Pass> CodegenTest() {
  PassSpec spec{"codegen-test"};
  absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Global().Create(spec);
  EXPECT_TRUE(pass.ok()) << pass.status();
  return pass.ok() ? *std::move(pass) : nullptr;
}

TEST(CodegenPassTest, RunsOnAMemoryPlanAndLeavesSourceForItsTarget) {
  const StageRule rule = CodegenTest()->stages();
  EXPECT_EQ(rule.runs_on, StageRule::Bit(Stage::kPlanned));
  EXPECT_EQ(rule.leaves, Stage::kEmitted);
  EXPECT_EQ(rule.target, proto::CUDA);
}

TEST(CodegenPassTest, WithoutAScheduleFailsNamingThePass) {
  Module module;
  module.loops.emplace();
  absl::StatusOr<bool> changed = CodegenTest()->Run(module);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(changed.status().message(),
            "there is no schedule to emit (run 'lower' and 'schedule' before 'codegen-test')");
  EXPECT_FALSE(module.source.has_value());
}

TEST(CodegenPassTest, SetsTheEmittedSource) {
  Module module;
  module.loops.emplace();
  module.schedule.emplace();
  module.schedule->kernels.resize(3);
  absl::StatusOr<bool> changed = CodegenTest()->Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(module.source.has_value());
  EXPECT_EQ(module.source->text, "3");
}

}  // namespace
}  // namespace loom
