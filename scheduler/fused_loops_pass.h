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

// A pass that rewrites the loops or kernels of a fused schedule in place
// with `rewrite`, which returns whether it changed any (drop-unit-loops,
// merge-loops, chain-gemms). It runs after fusion, before or after memory
// planning unless `before_planning`, and leaves the stage as it was.
class FusedLoopsPass : public Pass {
 public:
  using Rewrite = bool (*)(LoopProgram& program, Schedule& schedule);
  explicit FusedLoopsPass(Rewrite rewrite, bool before_planning = false)
      : rewrite_(rewrite), before_planning_(before_planning) {}

  StageRule stages() const override {
    return {
        StageRule::Bit(Stage::kFused) | (before_planning_ ? 0u : StageRule::Bit(Stage::kPlanned)),
        std::nullopt};
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
  bool before_planning_;
};

}  // namespace loom

#endif  // LOOM_SCHEDULER_FUSED_LOOPS_PASS_H_
