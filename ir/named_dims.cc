#include "ir/named_dims.h"

#include <cctype>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

// Every name given a size or bounds is a named dim of one of the inputs (a
// misspelt name is an error, not a size left unused); sizes are at least 0
// and bounds not empty.
absl::Status CheckGivenNamedDims(const NamedDimUses& uses, const NamedDimOptions& options) {
  auto check_exists = [&](const std::string& name, absl::string_view given) {
    if (uses.contains(name)) return absl::OkStatus();
    std::vector<std::string> names;
    for (const auto& [known, unused] : uses) names.push_back(known);
    return absl::InvalidArgumentError(
        absl::StrCat(given, " the named dim '", name, "', which no graph input has (",
                     names.empty() ? "the model's inputs have no named dims"
                                   : absl::StrCat("the model's: ", absl::StrJoin(names, ", ")),
                     ")"));
  };
  for (const auto& [name, size] : options.dims) {
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the size given for the named dim '", name, "' is negative: ", size));
    }
    LOOM_RETURN_IF_ERROR(check_exists(name, "a size is given for"));
  }
  for (const auto& [name, bounds] : options.dim_bounds) {
    if (bounds.min < 0 || bounds.min > bounds.max) {
      return absl::InvalidArgumentError(absl::StrCat("the bounds given for the named dim '", name,
                                                     "' are empty or negative: ", bounds.min, "..",
                                                     bounds.max));
    }
    LOOM_RETURN_IF_ERROR(check_exists(name, "bounds are given for"));
  }
  return absl::OkStatus();
}

// EvaluateDimExpr's parser: one method per level of precedence.
class DimExprParser {
 public:
  DimExprParser(absl::string_view text, const NamedSizes& sizes) : text_(text), sizes_(sizes) {}

  absl::StatusOr<int64_t> Parse() {
    LOOM_ASSIGN_OR_RETURN(int64_t value, Sum());
    SkipSpaces();
    if (pos_ < text_.size()) return Error("unexpected text");
    return value;
  }

 private:
  absl::StatusOr<int64_t> Sum() {
    LOOM_ASSIGN_OR_RETURN(int64_t value, Product());
    while (true) {
      const bool plus = Take("+");
      if (!plus && !Take("-")) return value;
      LOOM_ASSIGN_OR_RETURN(int64_t term, Product());
      if (plus ? __builtin_add_overflow(value, term, &value)
               : __builtin_sub_overflow(value, term, &value)) {
        return Error("overflows 64 bits");
      }
    }
  }

  absl::StatusOr<int64_t> Product() {
    LOOM_ASSIGN_OR_RETURN(int64_t value, Unary());
    while (true) {
      char op;
      if (Take("//")) {
        op = '/';
      } else if (Take("*")) {
        op = '*';
      } else if (Take("%")) {
        op = '%';
      } else {
        return value;
      }
      LOOM_ASSIGN_OR_RETURN(int64_t factor, Unary());
      if (op == '*') {
        if (__builtin_mul_overflow(value, factor, &value)) return Error("overflows 64 bits");
        continue;
      }
      if (factor == 0) return Error("divides by zero");
      if (value == std::numeric_limits<int64_t>::min() && factor == -1) {
        return Error("overflows 64 bits");
      }
      // Python's floor division and the remainder that goes with it.
      int64_t quotient = value / factor, remainder = value % factor;
      if (remainder != 0 && ((remainder < 0) != (factor < 0))) {
        --quotient;
        remainder += factor;
      }
      value = op == '/' ? quotient : remainder;
    }
  }

  absl::StatusOr<int64_t> Unary() {
    if (!Take("-")) return Primary();
    LOOM_ASSIGN_OR_RETURN(int64_t value, Unary());
    if (value == std::numeric_limits<int64_t>::min()) return Error("overflows 64 bits");
    return -value;
  }

  absl::StatusOr<int64_t> Primary() {
    SkipSpaces();
    if (Take("(")) {
      LOOM_ASSIGN_OR_RETURN(int64_t value, Sum());
      if (!Take(")")) return Error("expected ')'");
      return value;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && (absl::ascii_isalnum(text_[pos_]) || text_[pos_] == '_')) ++pos_;
    const absl::string_view word = text_.substr(start, pos_ - start);
    if (word.empty()) return Error("expected a number, a name or '('");
    if (absl::ascii_isdigit(word[0])) {
      int64_t value;
      if (!absl::SimpleAtoi(word, &value)) return Error("a malformed or too large number");
      return value;
    }
    if ((word == "max" || word == "min") && Take("(")) return Extreme(word == "max");
    const auto size = sizes_.find(std::string(word));
    if (size == sizes_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the size '", text_, "' reads the named dim '", word, "', which has none"));
    }
    return size->second;
  }

  // max(a, b, ...) or min(...), after its '('.
  absl::StatusOr<int64_t> Extreme(bool max) {
    LOOM_ASSIGN_OR_RETURN(int64_t value, Sum());
    while (Take(",")) {
      LOOM_ASSIGN_OR_RETURN(int64_t other, Sum());
      value = max ? std::max(value, other) : std::min(value, other);
    }
    if (!Take(")")) return Error("expected ')'");
    return value;
  }

  void SkipSpaces() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }

  bool Take(absl::string_view token) {
    SkipSpaces();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  absl::Status Error(absl::string_view cause) const {
    return absl::InvalidArgumentError(
        absl::StrCat("the size '", text_, "' ", cause, " at column ", pos_ + 1));
  }

  const absl::string_view text_;
  const NamedSizes& sizes_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<NamedSizes> ResolveNamedDims(const NamedDimUses& uses,
                                            const NamedDimOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckGivenNamedDims(uses, options));
  NamedSizes sizes(options.dims.begin(), options.dims.end());
  // "<what> is <size>, outside its bounds min..max", or OK.
  auto check_bounds = [&](const std::string& name, const std::string& what, int64_t size) {
    const auto bounds = options.dim_bounds.find(name);
    if (bounds == options.dim_bounds.end() ||
        (size >= bounds->second.min && size <= bounds->second.max)) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", size, ", outside its bounds ",
                                                   bounds->second.min, "..", bounds->second.max));
  };
  for (const auto& [name, places] : uses) {
    std::string source = "as given";  // where sizes[name] came from
    if (const auto given = options.dims.find(name); given != options.dims.end()) {
      LOOM_RETURN_IF_ERROR(check_bounds(
          name, absl::StrCat("the size given for the named dim '", name, "'"), given->second));
    }
    for (const auto& [input, d] : places) {
      const auto given = options.input_shapes.find(input);
      if (given == options.input_shapes.end() || d >= static_cast<int>(given->second.size())) {
        continue;  // the importer reports a shape of another rank
      }
      const int64_t size = given->second[d];
      const std::string what =
          absl::StrCat("graph input '", input, "': dim ", d, ", the named dim '", name, "',");
      const auto [it, added] = sizes.emplace(name, size);
      if (added) {
        source = absl::StrCat("in graph input '", input, "' (dim ", d, ")");
      } else if (it->second != size) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " is ", size, " but ", it->second, " ", source));
      }
      LOOM_RETURN_IF_ERROR(check_bounds(name, what, size));
    }
  }
  return sizes;
}

absl::Status NamedDimWithoutSize(absl::string_view what, int d, absl::string_view name) {
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": dim ", d, " is the named dim '", name,
      "'; loom compiles for static shapes: give its size (loom compile --dims=", name,
      "=N, or dims={'", name,
      "': N} in Python), or inputs that have it (loom run --inputs=DIR of .npy files, or dims={'",
      name, "': (min, max)} in Python, which compiles per shape)"));
}

absl::StatusOr<int64_t> EvaluateDimExpr(absl::string_view expr, const NamedSizes& sizes) {
  return DimExprParser(expr, sizes).Parse();
}

}  // namespace loom
