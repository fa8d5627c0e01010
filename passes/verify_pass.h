#ifndef LOOM_PASSES_VERIFY_PASS_H_
#define LOOM_PASSES_VERIFY_PASS_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "verify": checks the graph with the IR verifier (ir/verifier.h), or the
// loop program once lowering has consumed the graph's nodes, and changes
// nothing. Pipelines start with it so that a bad model is reported as such,
// before any pass could be blamed for it.
class VerifyPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
};

}  // namespace loom

#endif  // LOOM_PASSES_VERIFY_PASS_H_
