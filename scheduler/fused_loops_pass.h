#ifndef LOOM_SCHEDULER_FUSED_LOOPS_PASS_H_
#define LOOM_SCHEDULER_FUSED_LOOPS_PASS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/loop_ir.h"
#include "ir/module.h"
#include "ir/schedule.h"
#include "passes/pass.h"

namespace loom {

// A pass that rewrites the loops of a fused schedule in place with
// `rewrite`, which returns whether it changed any (drop-unit-loops,
// merge-loops). It runs after fusion, before or after memory planning,
// and leaves the stage as it was.
class FusedLoopsPass : public Pass {
 public:
  using Rewrite = bool (*)(LoopProgram& program, Schedule& schedule);
  explicit FusedLoopsPass(Rewrite rewrite) : rewrite_(rewrite) {}

  StageRule stages() const override {
    return {StageRule::Bit(Stage::kFused) | StageRule::Bit(Stage::kPlanned), std::nullopt};
  }
  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value() || !module.schedule.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", name(), "' needs a fused schedule ('fuse' before it)"));
    }
    const bool changed = rewrite_(*module.loops, *module.schedule);
    if (changed) module.source.reset();
    return changed;
  }

 private:
  Rewrite rewrite_;
};

}  // namespace loom

#endif  // LOOM_SCHEDULER_FUSED_LOOPS_PASS_H_
