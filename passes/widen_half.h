#ifndef LOOM_PASSES_WIDEN_HALF_H_
#define LOOM_PASSES_WIDEN_HALF_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "widen-half": the narrow floats (f16, bf16, f8*, f4e2m1) and the
// sub-byte integers (i4, u4, i2, u2) are storage types (ir/dtype.h). Every
// node but a cast or bit_cast that reads or writes one computes in its ComputeType (f32
// or i32) instead: each such input is cast to it first (one cast per
// value) and each such output is computed in it and cast back to its type,
// so that every op rounds or wraps its result as the interpreter does.
// Afterwards only casts, loads and stores touch the storage types. Changed
// means a node was widened.
class WidenHalfPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

}  // namespace loom

#endif  // LOOM_PASSES_WIDEN_HALF_H_
