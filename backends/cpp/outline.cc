#include "backends/cpp/outline.h"

#include <iterator>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace loom::cpp {
namespace {

bool IsIdentifierChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// A numeric literal from `at`: digits, letters (suffixes, hex, exponents'
// markers), dots, and a sign after an exponent's marker.
size_t LiteralEnd(absl::string_view code, size_t at) {
  while (at < code.size()) {
    const char c = code[at];
    const char before = code[at - 1];
    const bool sign = (c == '+' || c == '-') &&
                      (before == 'e' || before == 'E' || before == 'p' || before == 'P');
    if (!IsIdentifierChar(c) && c != '.' && !sign) break;
    ++at;
  }
  return at;
}

// p<N> or l<N>.
bool IsBuffer(absl::string_view name) {
  if (name.size() < 2 || (name[0] != 'p' && name[0] != 'l')) return false;
  for (size_t i = 1; i < name.size(); ++i) {
    if (!absl::ascii_isdigit(name[i])) return false;
  }
  return true;
}

// x<N> and the names printed from it (x1r, x1j).
bool IsLoopVariable(absl::string_view name) {
  return name.size() >= 2 && name[0] == 'x' && absl::ascii_isdigit(name[1]);
}

// Whether `word`, just before a name's first use, makes that use its
// declaration: a type, not a keyword such as `return`.
bool IsDeclarationType(absl::string_view word) {
  static constexpr absl::string_view kNotTypes[] = {"return", "else", "case",
                                                    "sizeof", "do",   "goto"};
  return !word.empty() && absl::c_find(kNotTypes, word) == std::end(kNotTypes);
}

bool Renames(absl::string_view name) {
  if (absl::StartsWith(name, "loom_") || absl::StartsWith(name, "__") ||
      absl::EndsWith(name, "_t") || IsLoopVariable(name)) {
    return false;
  }
  for (char c : name) {
    if (absl::ascii_isdigit(c)) return true;
  }
  return false;
}

}  // namespace

RenamedCode RenameNumberedNames(absl::string_view code) {
  RenamedCode renamed;
  absl::flat_hash_map<absl::string_view, std::string> names;
  int others = 0;
  // The identifier just before, with nothing but spaces between: a
  // declaration's type where the name is declared.
  absl::string_view before;
  size_t at = 0;
  while (at < code.size()) {
    const char c = code[at];
    if (absl::ascii_isdigit(c) ||
        (c == '.' && at + 1 < code.size() && absl::ascii_isdigit(code[at + 1]))) {
      const size_t end = LiteralEnd(code, at + 1);
      renamed.text.append(code.data() + at, end - at);
      at = end;
      before = {};
      continue;
    }
    if (!IsIdentifierChar(c)) {
      renamed.text.push_back(c);
      ++at;
      if (!absl::ascii_isspace(c)) before = {};
      continue;
    }
    size_t end = at;
    while (end < code.size() && IsIdentifierChar(code[end])) ++end;
    const absl::string_view name = code.substr(at, end - at);
    if (!Renames(name)) {
      renamed.text.append(name.data(), name.size());
    } else {
      auto [it, inserted] = names.try_emplace(name);
      if (inserted && IsBuffer(name)) {
        it->second = absl::StrCat("a", renamed.buffers.size());
        renamed.buffers.emplace_back(name);
      } else if (inserted) {
        it->second = absl::StrCat("v", others++);
        if (!IsDeclarationType(before)) renamed.uses_outer_names = true;
      }
      renamed.text.append(it->second);
    }
    before = name;
    at = end;
  }
  return renamed;
}

const std::string& OutlinedFunctions::Add(const std::string& params, const std::string& body) {
  auto [it, inserted] = names_.try_emplace(absl::StrCat(params, "\n", body));
  if (inserted) {
    it->second = absl::StrCat("loom_m", bodies_.size());
    params_.push_back(params);
    bodies_.push_back(body);
  }
  return it->second;
}

// Never inlined: one copy of the code is the point. Hidden: the unit's
// callers are its only callers.
std::string OutlinedFunctions::Declarations() const {
  if (bodies_.empty()) return "";
  std::string text = "\nextern \"C\" {\n";
  for (size_t m = 0; m < bodies_.size(); ++m) {
    absl::StrAppend(&text, "__attribute__((noinline, visibility(\"hidden\"))) void loom_m", m, "(",
                    params_[m], ");\n");
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

std::string OutlinedFunctions::Definitions() const {
  std::string text;
  for (size_t m = 0; m < bodies_.size(); ++m) {
    absl::StrAppend(&text, "\nextern \"C\" void loom_m", m, "(", params_[m], ") {\n", bodies_[m],
                    "}\n");
  }
  return text;
}

}  // namespace loom::cpp
