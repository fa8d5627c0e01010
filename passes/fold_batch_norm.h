#ifndef LOOM_PASSES_FOLD_BATCH_NORM_H_
#define LOOM_PASSES_FOLD_BATCH_NORM_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "fold-batch-norm": a batch_norm whose input is a conv's output read by
// nothing else, with the conv's weight (and bias) and the batch norm's
// scale, bias, mean and var all known at compile time, becomes that conv
// with the normalization folded into new weights:
//   s = scale / sqrt(var + epsilon),  w'[m] = w[m] * s[m],
//   b'[m] = (b[m] - mean[m]) * s[m] + bias[m]   (b = 0 without a bias),
// computed in double precision and rounded once to the weights' type. The
// batch_norm node turns into the conv (it keeps its output value and
// place) and the conv node goes. Changed means at least one was folded.
class FoldBatchNormPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

}  // namespace loom

#endif  // LOOM_PASSES_FOLD_BATCH_NORM_H_
