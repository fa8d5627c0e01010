#include "scheduler/merge_loops.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/expr.h"
#include "scheduler/fused_loops_pass.h"

namespace loom {
namespace {

// Per loop v of a node, whether it may merge with loop v + 1 (false for
// the last): every index of the node (its store's, its loads', its index
// steps') is affine and moves E_{v+1} times as far along v as along v + 1.
using Joins = absl::InlinedVector<bool, 8>;

Joins JoinableLoops(const ComputeNode& node) {
  const std::vector<int64_t> extents = node.AllRanges();
  Joins joins(extents.size(), true);
  joins.back() = false;
  absl::InlinedVector<int64_t, 8> c(extents.size());
  auto check = [&](Expr index) {
    std::fill(c.begin(), c.end(), 0);
    int64_t constant = 0;
    if (!AffineCoefficients(index, absl::MakeSpan(c), constant)) return false;
    bool any = false;
    for (size_t v = 0; v + 1 < c.size(); ++v) {
      joins[v] = joins[v] && c[v] == extents[v + 1] * c[v + 1];
      any = any || joins[v];
    }
    return any;
  };
  if (node.store_index != nullptr && !check(node.store_index)) return Joins(extents.size());
  for (const ScalarOp& op : node.body) {
    if (op.index != nullptr && !check(op.index)) return Joins(extents.size());
  }
  return joins;
}

// Merges each loop v of `node` with `joins[v]` into the loop after it.
// Every index is affine with the merged loops' coefficients in the ratio
// JoinableLoops checks, so a merged loop's variables but the last become 0 and
// the last becomes the merged loop.
void Merge(ExprContext& ctx, ComputeNode& node, const Joins& joins) {
  const std::vector<int64_t> all = node.AllRanges();
  const size_t pointwise = node.ranges.size();
  std::vector<Expr> replace(all.size());
  std::vector<int64_t> ranges, reduction_ranges;
  int64_t extent = 1;
  for (size_t v = 0; v < all.size(); ++v) {
    extent *= all[v];
    if (joins[v]) {
      replace[v] = ctx.Const(0);
      continue;
    }
    replace[v] = ctx.Var(static_cast<int>(ranges.size() + reduction_ranges.size()));
    (v < pointwise ? ranges : reduction_ranges).push_back(extent);
    extent = 1;
  }
  node.ranges = std::move(ranges);
  node.reduction_ranges = std::move(reduction_ranges);
  node.store_index = ctx.Substitute(node.store_index, replace);
  for (ScalarOp& op : node.body) {
    if (op.index != nullptr) op.index = ctx.Substitute(op.index, replace);
  }
}

// Merges what it may in one kernel; returns whether it merged any.
bool MergeInKernel(LoopProgram& program, Kernel& kernel) {
  absl::InlinedVector<Joins, 4> joins;
  for (int n : kernel.nodes) {
    const ComputeNode& node = program.nodes[n];
    if (node.extern_op != ExternOp::kNone) return false;
    // Most nodes have one loop or none: a million-node program passes here.
    joins.push_back(node.ranges.size() + node.reduction_ranges.size() < 2 ? Joins()
                                                                          : JoinableLoops(node));
  }
  // The shared outer loops merge where every member's indexes allow it.
  const int outer = kernel.outer_loops;
  int merged_outer = 0;
  for (int v = 0; v + 1 < outer; ++v) {
    bool all = true;
    for (const Joins& member : joins) all = all && member[v];
    for (Joins& member : joins) member[v] = all;
    merged_outer += all ? 1 : 0;
  }
  bool merged = false;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    ComputeNode& node = program.nodes[kernel.nodes[m]];
    Joins& member = joins[m];
    // Loops of different kinds never merge: the last outer loop with an
    // inner one, or the last pointwise loop with a reduction loop.
    if (outer > 0 && static_cast<size_t>(outer) < member.size()) member[outer - 1] = false;
    if (!node.ranges.empty() && node.ranges.size() < member.size()) {
      member[node.ranges.size() - 1] = false;
    }
    if (absl::c_none_of(member, [](bool join) { return join; })) continue;
    Merge(*program.exprs, node, member);
    merged = true;
  }
  kernel.outer_loops -= merged_outer;
  return merged;
}

LOOM_REGISTER_PASS("merge-loops", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<FusedLoopsPass>(&MergeLoops));
});

}  // namespace

bool MergeLoops(LoopProgram& program, Schedule& schedule) {
  bool changed = false;
  for (Kernel& kernel : schedule.kernels) {
    // A loop that runs in order stays a loop of its own.
    if (kernel.ordered_loop < 0) changed = MergeInKernel(program, kernel) || changed;
  }
  return changed;
}

}  // namespace loom
