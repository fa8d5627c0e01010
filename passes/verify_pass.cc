#include "passes/verify_pass.h"

#include <memory>

#include "ir/loop_ir.h"
#include "ir/verifier.h"

namespace loom {

absl::StatusOr<bool> VerifyPass::Run(Module& module) {
  // After lowering, which consumes the graph's nodes, the loop program.
  absl::Status status = module.loops.has_value()
                            ? VerifyLoopProgram(*module.loops)
                            : VerifyGraph(module.graph);
  if (!status.ok()) return status;
  return false;
}

LOOM_REGISTER_PASS("verify", "", [](const proto::PassSpec&) {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<VerifyPass>());
});

}  // namespace loom
