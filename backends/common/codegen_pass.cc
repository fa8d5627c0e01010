#include "backends/common/codegen_pass.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

class CodegenPass : public Pass {
 public:
  CodegenPass(proto::Target target, EmitSourceFn emit) : target_(target), emit_(std::move(emit)) {}

  StageRule stages() const override {
    StageRule rule = StageRule::From(Stage::kPlanned, Stage::kEmitted);
    rule.target = target_;
    return rule;
  }

  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value() || !module.schedule.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "there is no schedule to emit (run 'lower' and 'schedule' before '", name(), "')"));
    }
    LOOM_ASSIGN_OR_RETURN(GeneratedSource source, emit_(*module.loops, *module.schedule));
    module.source = std::move(source);
    return true;
  }

 private:
  proto::Target target_;
  EmitSourceFn emit_;
};

}  // namespace

std::unique_ptr<Pass> MakeCodegenPass(proto::Target target, EmitSourceFn emit) {
  return std::make_unique<CodegenPass>(target, std::move(emit));
}

}  // namespace loom
