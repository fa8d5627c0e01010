#ifndef LOOM_IR_EXPR_ANALYSIS_H_
#define LOOM_IR_EXPR_ANALYSIS_H_

// Small analyses of index expressions (ir/expr.h) on one walk over their
// nodes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "ir/expr.h"
#include "ir/expr_map.h"

namespace loom {

// Walks the nodes of `e` depth first, each node before its operands (in
// order). Expressions are hash-consed, so a node may be reached along
// several paths; it is visited once. `visit(node)` returns whether to go on;
// ForEachNode returns false when a visit ended the walk.
template <typename Visit>
bool ForEachNode(Expr e, Visit visit) {
  absl::InlinedVector<Expr, 16> pending = {e};
  ExprMap<bool> seen;
  while (!pending.empty()) {
    const Expr node = pending.back();
    pending.pop_back();
    if (seen.Find(node) != nullptr) continue;
    seen.Insert(node, true);
    if (!visit(node)) return false;
    const absl::Span<const Expr> operands = node->operands();
    for (size_t i = operands.size(); i-- > 0;) pending.push_back(operands[i]);
  }
  return true;
}

// Whether variable x_var occurs in `e`.
bool UsesVar(Expr e, int var);

// Sets used[i] for each variable x_i of `e` with i < used.size() (the set of
// variables `e` uses, as far as `used` reaches).
void MarkUsedVars(Expr e, std::vector<bool>& used);

// c when `e` is c * x_var + (terms without x_var), 0 when x_var does not
// occur; nullopt when x_var occurs otherwise (in a product of variables, a
// division, a modulo).
std::optional<int64_t> LinearCoefficient(Expr e, int var);

// The constant term of `e`: `e` itself if it is a constant, the constant of a
// sum, else 0.
int64_t ConstantTerm(Expr e);

}  // namespace loom

#endif  // LOOM_IR_EXPR_ANALYSIS_H_
