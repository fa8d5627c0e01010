#ifndef LOOM_PASSES_SIMPLIFY_H_
#define LOOM_PASSES_SIMPLIFY_H_

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "simplify": common-subexpression elimination, then dead-code elimination,
// keeping the nodes in their topological order.
// - CSE: a node with the same op, inputs (after earlier replacements) and
//   attributes as an earlier one reuses that node's outputs. A node that
//   defines a graph output is kept, since its value's name is part of the
//   graph's interface. Every op is pure, so this is always sound.
// - DCE: a node none of whose outputs reaches a graph output is removed.
// Changed means at least one node was removed.
class SimplifyPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

}  // namespace loom

#endif  // LOOM_PASSES_SIMPLIFY_H_
