#ifndef LOOM_IR_EXPR_H_
#define LOOM_IR_EXPR_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"

namespace loom {

// Index expressions: integer polynomials over loop variables with floor
// division and modulo by positive constants. They are kept in a canonical
// form and hash-consed by their ExprContext, so two expressions made by the
// same context are equal exactly when their pointers are equal.
//
// Loop variable i is the i-th loop of whichever compute node uses the
// expression (pointwise loops first, then reduction loops), so identical
// loop bodies share identical expressions.
class ExprNode;
using Expr = const ExprNode*;

enum class ExprKind : uint8_t { kConst, kVar, kAdd, kMul, kFloorDiv, kMod };

class ExprNode {
 public:
  ExprKind kind() const { return kind_; }
  // kConst: the constant. kVar: the variable's index. kFloorDiv, kMod: the
  // (positive) divisor. Otherwise 0.
  int64_t value() const { return value_; }
  // kAdd: the terms; kMul: the factors; kFloorDiv, kMod: the dividend.
  absl::Span<const Expr> operands() const { return operands_; }
  // Order of creation within the context: a deterministic total order.
  int32_t id() const { return id_; }

  bool is_const() const { return kind_ == ExprKind::kConst; }
  bool is_const(int64_t v) const { return is_const() && value_ == v; }

 private:
  friend class ExprContext;
  // `operands` points into storage that the context owns.
  ExprNode(ExprKind kind, int64_t value, absl::Span<const Expr> operands, int32_t id)
      : kind_(kind), id_(id), value_(value), operands_(operands) {}

  ExprKind kind_;
  int32_t id_;
  int64_t value_;
  absl::Span<const Expr> operands_;
};

// Owns and interns expressions. Not thread-safe.
class ExprContext {
 public:
  ExprContext();
  ExprContext(const ExprContext&) = delete;
  ExprContext& operator=(const ExprContext&) = delete;
  ~ExprContext();

  Expr Const(int64_t v);
  Expr Var(int index);
  Expr Add(Expr a, Expr b);
  Expr Sub(Expr a, Expr b);
  Expr Mul(Expr a, Expr b);
  Expr Mul(Expr a, int64_t c) { return Mul(a, Const(c)); }
  // Floor division and modulo by a positive constant.
  Expr FloorDiv(Expr a, int64_t divisor);
  Expr Mod(Expr a, int64_t divisor);

  // Rewrites `e` using the loop variables' ranges (0 <= x_i < extents[i]),
  // e.g. (8*x0 + x1) // 8 -> x0 and (8*x0 + x1) % 8 -> x1 when x1 < 8.
  Expr Simplify(Expr e, absl::Span<const int64_t> var_extents);
  // Replaces variable i by replacements[i] (variables past the end stay).
  Expr Substitute(Expr e, absl::Span<const Expr> replacements);

  // Number of distinct expressions interned so far.
  size_t size() const;

 private:
  struct Impl;
  Impl* impl_;
};

// The value of `e` with variable i set to vars[i].
int64_t Evaluate(Expr e, absl::Span<const int64_t> vars);

// Human-readable form, e.g. "8*x0 + x1", "x0 // 4", "x1 % 8".
std::string ToString(Expr e);

// A C/C++ expression of type int64_t with variable i spelled var_names[i].
// Index expressions are non-negative wherever loom emits them, so floor
// division and modulo print as C's / and %.
std::string ToCpp(Expr e, absl::Span<const std::string> var_names);
// ToCpp with every integer marked as a shape constant (ir/shape_constants.h).
std::string ToCppMarked(Expr e, absl::Span<const std::string> var_names);

// The largest variable index used in `e`, or -1 if it uses none.
int MaxVar(Expr e);

// Whether `e` is affine in the variables: constant + sum of c_i * x_i with
// i < coefficients.size(). If so, sets coefficients[i] to c_i (0 for a
// variable that does not occur) and `constant` to the constant term.
bool AffineCoefficients(Expr e, absl::Span<int64_t> coefficients, int64_t& constant);

}  // namespace loom

#endif  // LOOM_IR_EXPR_H_
