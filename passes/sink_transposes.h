#ifndef LOOM_PASSES_SINK_TRANSPOSES_H_
#define LOOM_PASSES_SINK_TRANSPOSES_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "sink-transposes": moves each transpose past the ops after it that do not
// care how their operands are laid out, so that those ops compute on the
// transpose's source, and cancels transposes that meet their inverse. Over
// primitive ops, in one sweep in order:
// - a transpose of a transpose is one transpose of the first's source (none
//   where the two cancel: its readers read the source);
// - an elementwise or broadcasting op with an operand transpose(s, p) runs
//   on s, its other operands transposed by p's inverse (views; only
//   operands that are transposes by p too, known at compile time, vectors
//   along one dim, or much smaller than the result), and its result is
//   transpose(result', p);
// - pad, slice, the reductions with their axes, and concat of operands all
//   transposed by p, likewise with their attributes permuted.
// Transposes are views, so this moves no data by itself: it changes which
// layout the kernels write. Its use is the channels-last conv calls
// (DecomposeOptions::channels_last_conv_calls), whose inputs and outputs
// are transposes: between two convs the elementwise ops (bias, activation,
// residual add, pad) then run on the channels-last data and the transposes
// cancel. Transposes left without readers stay for the next dead-node
// sweep (simplify). Changed means any node moved or went.
class SinkTransposesPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

}  // namespace loom

#endif  // LOOM_PASSES_SINK_TRANSPOSES_H_
