#include "scheduler/merge_loops.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/expr.h"
#include "passes/pass.h"

namespace loom {
namespace {

// The coefficients of each of `node`'s indexes (its store's, its loads',
// its index steps') over its loop variables; none when one is not affine.
using Coefficients = std::vector<std::vector<int64_t>>;

std::optional<Coefficients> IndexCoefficients(const ComputeNode& node) {
  const size_t vars = node.ranges.size() + node.reduction_ranges.size();
  Coefficients all;
  auto add = [&](Expr index) {
    std::vector<int64_t> coefficients(vars, 0);
    int64_t constant = 0;
    if (!AffineCoefficients(index, absl::MakeSpan(coefficients), constant)) return false;
    all.push_back(std::move(coefficients));
    return true;
  };
  if (node.store_index != nullptr && !add(node.store_index)) return std::nullopt;
  for (const ScalarOp& op : node.body) {
    if (op.index != nullptr && !add(op.index)) return std::nullopt;
  }
  return all;
}

// Whether loop `v` of a node with these extents and index coefficients may
// merge with loop v + 1: every index moves E_{v+1} times as far along v.
bool Joinable(const Coefficients& coefficients, const std::vector<int64_t>& extents, int v) {
  for (const std::vector<int64_t>& c : coefficients) {
    if (c[v] != extents[v + 1] * c[v + 1]) return false;
  }
  return true;
}

// Merges each loop v of `node` with `joins[v]` into the loop after it.
// Every index is affine with the merged loops' coefficients in the ratio
// Joinable checks, so a merged loop's variables but the last become 0 and
// the last becomes the merged loop.
void Merge(ExprContext& ctx, ComputeNode& node, const std::vector<bool>& joins) {
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
  std::vector<std::optional<Coefficients>> coefficients;
  for (int n : kernel.nodes) {
    const ComputeNode& node = program.nodes[n];
    if (node.extern_op != ExternOp::kNone) return false;
    // Most nodes have one loop or none: a million-node program passes here.
    if (node.ranges.size() + node.reduction_ranges.size() < 2) {
      coefficients.push_back(Coefficients{});
      continue;
    }
    coefficients.push_back(IndexCoefficients(node));
  }
  // The shared outer loops merge where every member allows it.
  const int outer = kernel.outer_loops;
  std::vector<bool> outer_joins(outer > 0 ? outer - 1 : 0, true);
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const std::vector<int64_t> extents = program.nodes[kernel.nodes[m]].AllRanges();
    for (int v = 0; v + 1 < outer; ++v) {
      outer_joins[v] =
          outer_joins[v] && coefficients[m].has_value() && Joinable(*coefficients[m], extents, v);
    }
  }
  bool merged = false;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    ComputeNode& node = program.nodes[kernel.nodes[m]];
    if (!coefficients[m].has_value()) continue;
    const std::vector<int64_t> extents = node.AllRanges();
    const int pointwise = static_cast<int>(node.ranges.size());
    std::vector<bool> joins(extents.size(), false);
    bool any = false;
    for (int v = 0; v + 1 < static_cast<int>(extents.size()); ++v) {
      // Loops of different kinds never merge: the last outer loop with an
      // inner one, or the last pointwise loop with a reduction loop.
      if (v + 1 == outer || v + 1 == pointwise) continue;
      joins[v] = v + 1 < outer ? outer_joins[v] : Joinable(*coefficients[m], extents, v);
      any = any || joins[v];
    }
    if (!any) continue;
    Merge(*program.exprs, node, joins);
    merged = true;
  }
  for (bool join : outer_joins) kernel.outer_loops -= join ? 1 : 0;
  return merged;
}

class MergeLoopsPass : public Pass {
 public:
  StageRule stages() const override {
    return {StageRule::Bit(Stage::kFused) | StageRule::Bit(Stage::kPlanned), std::nullopt};
  }
  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value() || !module.schedule.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", name(), "' needs a fused schedule ('fuse' before it)"));
    }
    const bool changed = MergeLoops(*module.loops, *module.schedule);
    if (changed) module.source.reset();
    return changed;
  }
};

LOOM_REGISTER_PASS("merge-loops", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<MergeLoopsPass>());
});

}  // namespace

bool MergeLoops(LoopProgram& program, Schedule& schedule) {
  bool changed = false;
  for (Kernel& kernel : schedule.kernels) changed = MergeInKernel(program, kernel) || changed;
  return changed;
}

}  // namespace loom
