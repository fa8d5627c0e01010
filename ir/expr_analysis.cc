// The analyses of expr_analysis.h, and those expr.h declares (Evaluate,
// MaxVar, AffineCoefficients).

#include "ir/expr_analysis.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/expr_internal.h"

namespace loom {
namespace {

using expr_internal::Die;
using expr_internal::FloorDivInt;
using expr_internal::FloorModInt;

// The terms of `e` as a sum: its operands if it is one, else `e` itself.
// `e` must outlive the span.
absl::Span<const Expr> TermsOf(const Expr& e) {
  return e->kind() == ExprKind::kAdd ? e->operands() : absl::MakeConstSpan(&e, 1);
}

bool IsVar(Expr e, int var) { return e->kind() == ExprKind::kVar && e->value() == var; }

}  // namespace

int64_t Evaluate(Expr e, absl::Span<const int64_t> vars) {
  switch (e->kind()) {
    case ExprKind::kConst:
      return e->value();
    case ExprKind::kVar:
      if (e->value() >= static_cast<int64_t>(vars.size())) {
        Die(absl::StrCat("Evaluate: no value for x", e->value()));
      }
      return vars[e->value()];
    case ExprKind::kAdd: {
      int64_t sum = 0;
      for (Expr t : e->operands()) sum += Evaluate(t, vars);
      return sum;
    }
    case ExprKind::kMul: {
      int64_t product = 1;
      for (Expr f : e->operands()) product *= Evaluate(f, vars);
      return product;
    }
    case ExprKind::kFloorDiv:
      return FloorDivInt(Evaluate(e->operands()[0], vars), e->value());
    case ExprKind::kMod:
      return FloorModInt(Evaluate(e->operands()[0], vars), e->value());
  }
  return 0;
}

int MaxVar(Expr e) {
  if (e->kind() == ExprKind::kVar) return static_cast<int>(e->value());
  int max_var = -1;
  for (Expr operand : e->operands()) {
    max_var = std::max(max_var, MaxVar(operand));
  }
  return max_var;
}

bool AffineCoefficients(Expr e, absl::Span<int64_t> coefficients, int64_t& constant) {
  std::fill(coefficients.begin(), coefficients.end(), 0);
  constant = 0;
  for (Expr term : TermsOf(e)) {
    int64_t factor = 1;
    Expr var = term;
    if (term->is_const()) {
      constant += term->value();
      continue;
    }
    if (term->kind() == ExprKind::kMul) {
      const absl::Span<const Expr> factors = term->operands();
      if (factors.size() != 2 || !factors[0]->is_const()) return false;
      factor = factors[0]->value();
      var = factors[1];
    }
    if (var->kind() != ExprKind::kVar ||
        var->value() >= static_cast<int64_t>(coefficients.size())) {
      return false;
    }
    coefficients[var->value()] += factor;
  }
  return true;
}

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
