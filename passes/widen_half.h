#ifndef LOOM_PASSES_WIDEN_HALF_H_
#define LOOM_PASSES_WIDEN_HALF_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "widen-half": f16 and bf16 are storage types (ir/dtype.h). Every node
// but a cast that reads or writes one computes in f32 instead: each f16 or
// bf16 input is cast to f32 first (one cast per value) and each such
// output is computed as f32 and cast back to its type, so that every op
// rounds its result as the interpreter does. Afterwards only casts,
// loads and stores touch the 16-bit types. Changed means a node was
// widened.
class WidenHalfPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

}  // namespace loom

#endif  // LOOM_PASSES_WIDEN_HALF_H_
