#include "scheduler/drop_unit_loops.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/statusor.h"
#include "scheduler/fused_loops_pass.h"

namespace loom {
namespace {

bool IsUnit(int64_t extent) { return extent == 1; }

// Drops `node`'s loops of extent 1; returns how many of its first
// `outer_loops` it dropped, or -1 when it dropped none.
int DropInNode(ExprContext& ctx, ComputeNode& node, int outer_loops) {
  // Most nodes have none: a million-node program passes through here.
  if (absl::c_none_of(node.ranges, IsUnit) && absl::c_none_of(node.reduction_ranges, IsUnit)) {
    return -1;
  }
  const std::vector<int64_t> all = node.AllRanges();
  const int pointwise = static_cast<int>(node.ranges.size());
  std::vector<bool> keep(all.size());
  for (size_t v = 0; v < all.size(); ++v) keep[v] = !IsUnit(all[v]);
  if (node.reduce != ReduceKind::kNone &&
      std::none_of(keep.begin() + pointwise, keep.end(), [](bool kept) { return kept; })) {
    keep.back() = true;
  }
  std::vector<Expr> replace(all.size());
  std::vector<int64_t> ranges, reduction_ranges;
  int dropped_outer = 0;
  for (int v = 0; v < static_cast<int>(all.size()); ++v) {
    if (!keep[v]) {
      replace[v] = ctx.Const(0);
      if (v < outer_loops) ++dropped_outer;
      continue;
    }
    replace[v] = ctx.Var(static_cast<int>(ranges.size() + reduction_ranges.size()));
    (v < pointwise ? ranges : reduction_ranges).push_back(all[v]);
  }
  if (ranges.size() + reduction_ranges.size() == all.size()) return -1;
  node.ranges = std::move(ranges);
  node.reduction_ranges = std::move(reduction_ranges);
  node.store_index = ctx.Substitute(node.store_index, replace);
  for (ScalarOp& op : node.body) {
    if (op.index != nullptr) op.index = ctx.Substitute(op.index, replace);
  }
  return dropped_outer;
}

LOOM_REGISTER_PASS("drop-unit-loops", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<FusedLoopsPass>(&DropUnitLoops));
});

}  // namespace

bool DropUnitLoops(LoopProgram& program, Schedule& schedule) {
  bool changed = false;
  for (Kernel& kernel : schedule.kernels) {
    if (kernel.ordered_loop >= 0) continue;  // its loops' places are its meaning
    int dropped_outer = 0;
    for (int n : kernel.nodes) {
      ComputeNode& node = program.nodes[n];
      if (node.extern_op != ExternOp::kNone) continue;
      // The members share the outer loops, so each drops the same of them.
      const int dropped = DropInNode(*program.exprs, node, kernel.outer_loops);
      if (dropped < 0) continue;
      dropped_outer = dropped;
      changed = true;
    }
    kernel.outer_loops -= dropped_outer;
  }
  return changed;
}

}  // namespace loom
