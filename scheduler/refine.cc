#include "scheduler/refine.h"

#include <algorithm>

namespace loom {

std::vector<int64_t> CommonLoopPrefix(absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                                      bool split) {
  std::vector<int64_t> common;
  size_t i = 0, j = 0;
  int64_t rest_a = 1, rest_b = 1;  // what is left of a[i-1] and b[j-1]
  while (true) {
    while (rest_a == 1 && i < a.size()) rest_a = a[i++];
    while (rest_b == 1 && j < b.size()) rest_b = b[j++];
    // One list has ended, or a loop has no iterations at all.
    if (rest_a <= 1 || rest_b <= 1) break;
    const int64_t small = std::min(rest_a, rest_b);
    if (rest_a % small != 0 || rest_b % small != 0 || (!split && rest_a != rest_b)) break;
    common.push_back(small);
    rest_a /= small;
    rest_b /= small;
  }
  return common;
}

std::optional<LoopRefinement> RefineLeadingLoops(ExprContext& ctx, const ComputeNode& node,
                                                 absl::Span<const int64_t> prefix) {
  LoopRefinement refinement;
  const std::vector<int64_t>& old = node.ranges;
  // A loop with no iterations cannot be split (nor dropped like one of 1).
  if (std::find(old.begin(), old.end(), 0) != old.end()) return std::nullopt;
  if (old.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), old.begin()) &&
      std::find(old.begin() + prefix.size(), old.end(), 1) == old.end()) {
    refinement.identity = true;
    return refinement;
  }
  // The new loops each old pointwise loop splits into, outermost first.
  std::vector<std::vector<int64_t>> factors(old.size());
  size_t next = 0;  // the next prefix extent to produce
  for (size_t i = 0; i < old.size(); ++i) {
    int64_t rest = old[i];
    while (next < prefix.size() && rest > 1) {
      if (rest % prefix[next] != 0) return std::nullopt;
      factors[i].push_back(prefix[next]);
      rest /= prefix[next++];
    }
    // Past the prefix, what is left of a loop stays one loop; a loop of
    // extent 1 disappears.
    if (rest > 1) factors[i].push_back(rest);
  }
  if (next != prefix.size()) return std::nullopt;
  for (const std::vector<int64_t>& f : factors) {
    refinement.ranges.insert(refinement.ranges.end(), f.begin(), f.end());
  }
  int var = 0;
  for (const std::vector<int64_t>& f : factors) {
    Expr value = ctx.Const(0);
    for (int64_t extent : f) {
      value = ctx.Add(ctx.Mul(value, extent), ctx.Var(var++));
    }
    refinement.old_vars.push_back(value);
  }
  refinement.extents = refinement.ranges;
  for (int64_t extent : node.reduction_ranges) {
    refinement.old_vars.push_back(ctx.Var(var++));
    refinement.extents.push_back(extent);
  }
  return refinement;
}

Expr RefinementCache::Refine(const LoopRefinement& refinement, Expr e) {
  if (refinement.identity || e == nullptr) return e;
  Key key{e,
          {refinement.old_vars.begin(), refinement.old_vars.end()},
          {refinement.extents.begin(), refinement.extents.end()}};
  auto [it, inserted] = refined_.try_emplace(std::move(key), nullptr);
  if (inserted) {
    it->second = ctx_.Simplify(ctx_.Substitute(e, refinement.old_vars), refinement.extents);
  }
  return it->second;
}

void RefinementCache::Apply(const LoopRefinement& refinement, ComputeNode& node) {
  if (refinement.identity) return;
  for (ScalarOp& op : node.body) op.index = Refine(refinement, op.index);
  node.store_index = Refine(refinement, node.store_index);
  node.ranges = refinement.ranges;
}

Expr RowMajorOffset(ExprContext& ctx, absl::Span<const int64_t> extents, int first) {
  Expr offset = ctx.Const(0);
  for (size_t i = 0; i < extents.size(); ++i) {
    offset = ctx.Add(ctx.Mul(offset, extents[i]), ctx.Var(first + static_cast<int>(i)));
  }
  return offset;
}

}  // namespace loom
