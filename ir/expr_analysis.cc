#include "ir/expr_analysis.h"

namespace loom {
namespace {

// The terms of `e` as a sum: its operands if it is one, else `e` itself.
// `e` must outlive the span.
absl::Span<const Expr> TermsOf(const Expr& e) {
  return e->kind() == ExprKind::kAdd ? e->operands() : absl::MakeConstSpan(&e, 1);
}

bool IsVar(Expr e, int var) { return e->kind() == ExprKind::kVar && e->value() == var; }

}  // namespace

bool UsesVar(Expr e, int var) {
  return !ForEachNode(e, [var](Expr node) { return !IsVar(node, var); });
}

void MarkUsedVars(Expr e, std::vector<bool>& used) {
  ForEachNode(e, [&used](Expr node) {
    if (node->kind() == ExprKind::kVar && node->value() < static_cast<int64_t>(used.size())) {
      used[node->value()] = true;
    }
    return true;
  });
}

std::optional<int64_t> LinearCoefficient(Expr e, int var) {
  int64_t coefficient = 0;
  for (Expr term : TermsOf(e)) {
    if (IsVar(term, var)) {
      coefficient += 1;
      continue;
    }
    if (!UsesVar(term, var)) continue;
    // A term with a coefficient is a kMul [c, atoms...] (ir/expr.cc).
    const absl::Span<const Expr> factors = term->operands();
    if (term->kind() != ExprKind::kMul || factors.size() != 2 || !factors[0]->is_const() ||
        !IsVar(factors[1], var)) {
      return std::nullopt;
    }
    coefficient += factors[0]->value();
  }
  return coefficient;
}

int64_t ConstantTerm(Expr e) {
  if (e->is_const()) return e->value();
  // A sum's constant, if it has one, is its last operand.
  if (e->kind() == ExprKind::kAdd && e->operands().back()->is_const()) {
    return e->operands().back()->value();
  }
  return 0;
}

}  // namespace loom
