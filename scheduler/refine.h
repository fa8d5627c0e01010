#ifndef LOOM_SCHEDULER_REFINE_H_
#define LOOM_SCHEDULER_REFINE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "ir/expr.h"
#include "ir/loop_ir.h"

namespace loom {

// Reshape-aware loop refinement for outer-loop fusion. Two iteration spaces
// such as GroupNorm's statistics [2, 2] (n, g) and its normalisation
// [2, 16, 32, 32] (n, c, h, w) share no loop as they are, but splitting c
// into (g, c_in_group) = (2, 8) gives both the outer loops (n, g): the
// normalisation becomes [2, 2, 8, 32, 32] with c = 8*g + c_in_group, and
// every index expression is rewritten through that substitution (it stays
// affine, with floor divisions and modulos the simplifier folds away).

// The longest common refinement of the leading loops of `a` and `b`: walks
// both extent lists, skipping extents of 1 and splitting the larger extent
// when the smaller divides it, until the lists end or the extents cannot
// be matched (or a loop has no iterations). E.g. [2, 2, 1] and
// [2, 16, 32, 32] give [2, 2].
// Without `split`, loops are only matched whole.
std::vector<int64_t> CommonLoopPrefix(absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                                      bool split = true);

// How one compute node's loops map onto refined loops whose first ones are
// a given prefix.
struct LoopRefinement {
  // The node's loops already begin with the prefix and stay as they are;
  // the fields below are then left empty.
  bool identity = false;
  std::vector<int64_t> ranges;   // the new pointwise loops
  std::vector<int64_t> extents;  // all new loops, reduction ones last
  std::vector<Expr> old_vars;    // each old variable over the new ones
};

// The refinement of `node`'s pointwise loops that makes them begin with
// `prefix` (which has no extent 1; loops of extent 1 are dropped, their
// variable becoming 0), or nullopt when `prefix` does not refine them or
// a loop has no iterations.
std::optional<LoopRefinement> RefineLeadingLoops(ExprContext& ctx, const ComputeNode& node,
                                                 absl::Span<const int64_t> prefix);

// Refinements applied, with the rewritten expressions remembered: the fuser
// refines the same (hash-consed) expressions by the same refinements over
// and over (the steps of an unrolled recurrence, the recurring shapes of a
// large graph).
class RefinementCache {
 public:
  explicit RefinementCache(ExprContext& ctx) : ctx_(ctx) {}

  // `e`, an expression over the node's old loop variables, over the new ones.
  Expr Refine(const LoopRefinement& refinement, Expr e);
  // Rewrites `node` (its loops, store index and every index in its body).
  void Apply(const LoopRefinement& refinement, ComputeNode& node);

 private:
  // A refinement is its substitution and the new loops' extents.
  struct Key {
    Expr e;
    absl::InlinedVector<Expr, 6> old_vars;
    absl::InlinedVector<int64_t, 6> extents;

    template <typename H>
    friend H AbslHashValue(H h, const Key& key) {
      return H::combine(std::move(h), key.e, key.old_vars, key.extents);
    }
    friend bool operator==(const Key& a, const Key& b) {
      return a.e == b.e && a.old_vars == b.old_vars && a.extents == b.extents;
    }
  };

  ExprContext& ctx_;
  absl::flat_hash_map<Key, Expr> refined_;
};

// The row-major position of variables first .. first+extents.size()-1
// within `extents`: x0*e1 + x1 for first = 0 and extents [e0, e1].
Expr RowMajorOffset(ExprContext& ctx, absl::Span<const int64_t> extents, int first);

}  // namespace loom

#endif  // LOOM_SCHEDULER_REFINE_H_
