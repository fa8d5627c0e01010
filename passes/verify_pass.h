#ifndef LOOM_PASSES_VERIFY_PASS_H_
#define LOOM_PASSES_VERIFY_PASS_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "verify": VerifyModule (ir/verifier.h), changing nothing. Pipelines start
// with it so that a bad model is reported as such, before any pass could be
// blamed for it.
class VerifyPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
};

}  // namespace loom

#endif  // LOOM_PASSES_VERIFY_PASS_H_
