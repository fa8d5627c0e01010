#include "passes/verify_pass.h"

#include <memory>

#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace loom {

absl::StatusOr<bool> VerifyPass::Run(Module& module) {
  LOOM_RETURN_IF_ERROR(VerifyModule(module));
  return false;
}

LOOM_REGISTER_PASS("verify", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<VerifyPass>());
});

}  // namespace loom
