// Printing index expressions: ToString and ToCpp.

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/expr.h"
#include "ir/expr_internal.h"
#include "ir/shape_constants.h"

namespace loom {
namespace {

using expr_internal::Die;

// Prints expressions in loom's text form (x0, //, %) or as C++ (named
// variables, /, %, every compound expression in parentheses unless it is a
// term of a sum or the dividend of a division, where C's precedence and left
// associativity already group it correctly).
class Printer {
 public:
  // `var_names` and `mark` are only used for C++: `mark` prints each
  // integer as a shape constant (ir/shape_constants.h).
  Printer(absl::Span<const std::string> var_names, bool cpp, bool mark = false)
      : var_names_(var_names), cpp_(cpp), mark_(mark) {}

  std::string Print(Expr e) {
    std::string out;
    Append(e, Position::kTop, out);
    return out;
  }

 private:
  enum class Position { kTop, kTerm, kFactor, kDividend };

  void Append(Expr e, Position pos, std::string& out) {
    switch (e->kind()) {
      case ExprKind::kConst:
        return AppendConst(e->value(), out);
      case ExprKind::kVar:
        return AppendVar(e->value(), out);
      case ExprKind::kAdd:
        return AppendSum(e, pos, out);
      case ExprKind::kMul:
        return AppendProduct(e, /*negate=*/false, pos, out);
      case ExprKind::kFloorDiv:
      case ExprKind::kMod:
        return AppendDivMod(e, pos, out);
    }
  }

  // C++ puts negative constants in parentheses, so that no neighbouring
  // '-' can fuse with their sign.
  void AppendConst(int64_t v, std::string& out) {
    if (!cpp_ || v >= 0) return AppendInt(v, out);
    // -9223372036854775808 is not a C++ literal.
    if (v == std::numeric_limits<int64_t>::min()) {
      return absl::StrAppend(&out, "(", v + 1, " - 1)");
    }
    out += "(-";
    AppendInt(-v, out);
    out += ")";
  }

  // A non-negative integer, or a negative one for loom's text form.
  void AppendInt(int64_t v, std::string& out) {
    if (mark_ && v >= 0) return absl::StrAppend(&out, MarkShapeConstant(v));
    absl::StrAppend(&out, v);
  }

  void AppendVar(int64_t index, std::string& out) {
    if (!cpp_) return absl::StrAppend(&out, "x", index);
    if (index >= static_cast<int64_t>(var_names_.size())) {
      Die(absl::StrCat("ToCpp: no name for x", index));
    }
    out += var_names_[index];
  }

  void AppendSum(Expr e, Position pos, std::string& out) {
    const bool parens = cpp_ || pos != Position::kTop;
    if (parens) out += "(";
    bool first = true;
    for (Expr t : e->operands()) {
      const bool negative = t->is_const()
                                ? t->value() < 0
                                : t->kind() == ExprKind::kMul && t->operands()[0]->is_const() &&
                                      t->operands()[0]->value() < 0;
      if (!first) out += negative ? " - " : " + ";
      const bool negate = negative && !first;
      if (t->is_const()) {
        AppendSignedInt(negate ? -t->value() : t->value(), out);
      } else if (t->kind() == ExprKind::kMul) {
        AppendProduct(t, negate, Position::kTerm, out);
      } else {
        Append(t, Position::kTerm, out);
      }
      first = false;
    }
    if (parens) out += ")";
  }

  // Constant first: "8*x0", "-x0", "x0*x1"; `negate` flips the coefficient.
  void AppendProduct(Expr e, bool negate, Position pos, std::string& out) {
    absl::Span<const Expr> factors = e->operands();
    int64_t coeff = 1;
    if (factors[0]->is_const()) {
      coeff = factors[0]->value();
      factors.remove_prefix(1);
    }
    if (negate) coeff = -coeff;
    const bool parens = (cpp_ && pos == Position::kTop) || (!cpp_ && pos == Position::kDividend);
    if (parens) out += "(";
    if (coeff == -1) {
      out += "-";
    } else if (coeff != 1) {
      AppendSignedInt(coeff, out);
      out += "*";
    }
    for (size_t i = 0; i < factors.size(); ++i) {
      if (i > 0) out += "*";
      Append(factors[i], Position::kFactor, out);
    }
    if (parens) out += ")";
  }

  void AppendDivMod(Expr e, Position pos, std::string& out) {
    const bool parens = cpp_ || pos == Position::kFactor || pos == Position::kDividend;
    const char* op = e->kind() == ExprKind::kMod ? " % " : cpp_ ? " / " : " // ";
    if (parens) out += "(";
    Append(e->operands()[0], Position::kDividend, out);
    out += op;
    AppendInt(e->value(), out);
    if (parens) out += ")";
  }

  // A sign, then the magnitude as AppendInt prints it.
  void AppendSignedInt(int64_t v, std::string& out) {
    if (v < 0 && v != std::numeric_limits<int64_t>::min()) {
      out += "-";
      v = -v;
    }
    AppendInt(v, out);
  }

  absl::Span<const std::string> var_names_;
  bool cpp_;
  bool mark_;
};

}  // namespace

std::string ToString(Expr e) { return Printer({}, /*cpp=*/false).Print(e); }

std::string ToCpp(Expr e, absl::Span<const std::string> var_names) {
  return Printer(var_names, /*cpp=*/true).Print(e);
}

std::string ToCppMarked(Expr e, absl::Span<const std::string> var_names) {
  return Printer(var_names, /*cpp=*/true, /*mark=*/true).Print(e);
}

}  // namespace loom
