#include "passes/verify_pass.h"

#include <memory>

#include "ir/verifier.h"

namespace loom {

absl::StatusOr<bool> VerifyPass::Run(Module& module) {
  if (absl::Status status = VerifyModule(module); !status.ok()) return status;
  return false;
}

LOOM_REGISTER_PASS("verify", "", [](const proto::PassSpec&) {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<VerifyPass>());
});

}  // namespace loom
