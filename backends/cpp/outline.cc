#include "backends/cpp/outline.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "ir/shape_constants.h"

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

std::string Reindented(absl::string_view code, int depth, int new_depth) {
  std::string text;
  for (absl::string_view line : absl::StrSplit(code, '\n', absl::SkipEmpty())) {
    line.remove_prefix(std::min(line.size(), static_cast<size_t>(2 * depth)));
    text.append(2 * new_depth, ' ');
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

std::string ReplaceNames(absl::string_view code,
                         const absl::flat_hash_map<std::string, std::string>& names) {
  std::string text;
  size_t at = 0;
  while (at < code.size()) {
    const char c = code[at];
    size_t end = at + 1;
    if (absl::ascii_isdigit(c)) {
      end = LiteralEnd(code, end);
    } else if (IsIdentifierChar(c)) {
      while (end < code.size() && IsIdentifierChar(code[end])) ++end;
      const auto it = names.find(code.substr(at, end - at));
      if (it != names.end()) {
        text.append(it->second);
        at = end;
        continue;
      }
    }
    text.append(code.data() + at, end - at);
    at = end;
  }
  return text;
}

namespace {

// A member as RollRepeatedMembers compares it: its renamed code, and its
// buffers (p<N> or l<N>) as a letter and a number each.
struct RollableMember {
  bool may_roll = false;
  std::string key;
  std::vector<std::pair<char, int64_t>> buffers;
};

RollableMember ParseRollable(absl::string_view code, bool may_roll) {
  RollableMember member;
  if (!may_roll) return member;
  RenamedCode renamed = RenameNumberedNames(code);
  if (renamed.uses_outer_names) return member;
  for (const std::string& buffer : renamed.buffers) {
    int64_t number = 0;
    if (!absl::SimpleAtoi(absl::string_view(buffer).substr(1), &number)) return member;
    member.buffers.emplace_back(buffer[0], number);
  }
  member.key = std::move(renamed.text);
  member.may_roll = true;
  return member;
}

// `repeats` repeats of the `period` members from `first`, member first + i's
// buffer j advancing by strides[i][j] each repeat.
struct RolledRun {
  size_t first = 0, period = 0, repeats = 0;
  std::vector<std::vector<int64_t>> strides;
};

// Whether `later` is `member` `repeat` repeats on (strides as given).
bool Repeats(const RollableMember& member, const RollableMember& later,
             const std::vector<int64_t>& strides, int64_t repeat) {
  if (!later.may_roll || later.key != member.key) return false;
  for (size_t j = 0; j < member.buffers.size(); ++j) {
    if (later.buffers[j].first != member.buffers[j].first ||
        later.buffers[j].second != member.buffers[j].second + repeat * strides[j]) {
      return false;
    }
  }
  return true;
}

// The longest run of `period` members from `first`, or nullopt if they do
// not repeat at once.
std::optional<RolledRun> RunFrom(const std::vector<RollableMember>& members, size_t first,
                                 size_t period) {
  if (first + 2 * period > members.size()) return std::nullopt;
  RolledRun run{first, period, 1, std::vector<std::vector<int64_t>>(period)};
  for (size_t i = 0; i < period; ++i) {
    const RollableMember& member = members[first + i];
    const RollableMember& next = members[first + period + i];
    if (!member.may_roll || !next.may_roll) return std::nullopt;
    for (size_t j = 0; j < member.buffers.size() && j < next.buffers.size(); ++j) {
      run.strides[i].push_back(next.buffers[j].second - member.buffers[j].second);
    }
    if (!Repeats(member, next, run.strides[i], 1)) return std::nullopt;
  }
  for (run.repeats = 2; first + (run.repeats + 1) * period <= members.size(); ++run.repeats) {
    const size_t at = first + run.repeats * period;
    for (size_t i = 0; i < period; ++i) {
      if (!Repeats(members[first + i], members[at + i], run.strides[i], run.repeats)) {
        return run;
      }
    }
  }
  return run;
}

// The periods tried: an unrolled step is a few members.
constexpr size_t kMaxRolledPeriod = 8;

// The run from `first` that covers the most members, at least
// kMinRolledRepeats repeats, or nullopt.
std::optional<RolledRun> BestRunFrom(const std::vector<RollableMember>& members, size_t first) {
  std::optional<RolledRun> best;
  for (size_t period = 1; period <= kMaxRolledPeriod; ++period) {
    std::optional<RolledRun> run = RunFrom(members, first, period);
    if (!run.has_value() || run->repeats < kMinRolledRepeats) continue;
    if (!best.has_value() || run->repeats * period > best->repeats * best->period) {
      best = std::move(run);
    }
  }
  return best;
}

// The loop of `run`: tables of the local arrays that advance (numbered
// from `tables_before`, the tables of the kernel's earlier loops), then the
// first repeat's code with every buffer that advances indexed by
// loom_step.
std::string PrintRolled(const RolledRun& run, const std::vector<std::string>& codes,
                        const std::vector<RollableMember>& members, int depth,
                        absl::FunctionRef<std::string(absl::string_view)> pointer_type,
                        size_t& tables_before) {
  const std::string indent(2 * depth, ' ');
  std::string tables, body;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::string> table_of;  // by first, stride
  for (size_t i = 0; i < run.period; ++i) {
    const RollableMember& member = members[run.first + i];
    absl::flat_hash_map<std::string, std::string> names;
    for (size_t j = 0; j < member.buffers.size(); ++j) {
      const auto [letter, number] = member.buffers[j];
      const int64_t stride = run.strides[i][j];
      if (stride == 0) continue;
      const std::string name = absl::StrCat(std::string(1, letter), number);
      if (letter == 'p') {
        names[name] = absl::StrCat("((", pointer_type(name), ")a[", number,
                                   stride < 0 ? " - " : " + ", std::abs(stride), " * loom_step])");
        continue;
      }
      auto [it, added] = table_of.try_emplace(std::make_pair(number, stride));
      if (added) {
        it->second = absl::StrCat("loom_rolled", tables_before++);
        std::vector<std::string> arrays;
        for (size_t r = 0; r < run.repeats; ++r) {
          arrays.push_back(absl::StrCat("l", number + static_cast<int64_t>(r) * stride));
        }
        absl::StrAppend(&tables, indent, pointer_type(name), " const ", it->second, "[",
                        run.repeats, "] = {", absl::StrJoin(arrays, ", "), "};\n");
      }
      names[name] = absl::StrCat(it->second, "[loom_step]");
    }
    body.append(Reindented(ReplaceNames(codes[run.first + i], names), depth, depth + 1));
  }
  return absl::StrCat(tables, indent, "for (int64_t loom_step = 0; loom_step < ", run.repeats,
                      "; ++loom_step) {\n", body, indent, "}\n");
}

}  // namespace

std::string RollRepeatedMembers(const std::vector<std::string>& codes,
                                const std::vector<bool>& may_roll, int depth,
                                absl::FunctionRef<std::string(absl::string_view)> pointer_type) {
  std::vector<RollableMember> members;
  members.reserve(codes.size());
  for (size_t m = 0; m < codes.size(); ++m) members.push_back(ParseRollable(codes[m], may_roll[m]));
  std::string text;
  size_t tables = 0;
  for (size_t m = 0; m < codes.size();) {
    const std::optional<RolledRun> run = BestRunFrom(members, m);
    if (!run.has_value()) {
      text.append(codes[m++]);
      continue;
    }
    text.append(PrintRolled(*run, codes, members, depth, pointer_type, tables));
    m += run->repeats * run->period;
  }
  return text;
}

const std::string& OutlinedFunctions::Add(const std::string& params, const std::string& body) {
  auto [it, inserted] = names_.try_emplace(absl::StrCat(params, "\n", body));
  if (inserted) {
    it->second = absl::StrCat(kOutlinedName, bodies_.size());
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
    absl::StrAppend(&text, "__attribute__((noinline, visibility(\"hidden\"))) void ", kOutlinedName,
                    m, "(", params_[m], ");\n");
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

std::string OutlinedFunctions::Definitions() const {
  std::string text;
  for (size_t m = 0; m < bodies_.size(); ++m) {
    absl::StrAppend(&text, "\nextern \"C\" void ", kOutlinedName, m, "(", params_[m], ") {\n",
                    bodies_[m], "}\n");
  }
  return text;
}

namespace {

// Whether `c`, a constant of `source`, divides: the right operand of `/`
// or `%` (an index's divisor, which the compiler makes a multiplication
// where it knows it).
bool IsDivisor(const StrippedSource& source, const ShapeConstant& c) {
  size_t at = c.offset;
  while (at > 0 && source.text[at - 1] == ' ') --at;
  return at > 0 && (source.text[at - 1] == '/' || source.text[at - 1] == '%');
}

// Makes `members` (indices of `stripped`, two or more bodies of one
// skeleton) calls of one function of `outlined`, in `bodies`.
void ShareOneSkeleton(const std::vector<int>& members, const std::vector<StrippedSource>& stripped,
                      OutlinedFunctions& outlined, std::vector<std::string>& bodies) {
  const StrippedSource& first = stripped[members[0]];
  // Each constant's place in the array (-1: a divisor in which the members
  // agree, which stays in the code). Only that choice depends on the
  // values, so that the function's text is the same at other shapes: a
  // shape template's skeleton (BERT's attention products at sequence 64,
  // where every size is 64, made a skeleton of their own when the
  // constants the members agreed in stayed too).
  std::vector<int> slot_of_position;
  std::vector<size_t> position_of_slot;
  for (size_t p = 0; p < first.constants.size(); ++p) {
    const int64_t value = first.constants[p].value;
    const bool agree =
        absl::c_all_of(members, [&](int m) { return stripped[m].constants[p].value == value; });
    if (agree && IsDivisor(first, first.constants[p])) {
      slot_of_position.push_back(-1);
    } else {
      slot_of_position.push_back(static_cast<int>(position_of_slot.size()));
      position_of_slot.push_back(p);
    }
  }
  // Copied into variables of the function's own, as a shape template's
  // are (shape_templates.cc): a store through a float* could otherwise
  // alias the array.
  std::string body;
  for (size_t n = 0; n < position_of_slot.size(); ++n) {
    absl::StrAppend(&body, "  const int64_t loom_s", n, " = loom_shape[", n, "];\n");
  }
  size_t from = 0;
  for (size_t p = 0; p < first.constants.size(); ++p) {
    const ShapeConstant& c = first.constants[p];
    absl::StrAppend(&body, absl::string_view(first.text).substr(from, c.offset - from));
    if (slot_of_position[p] < 0) {
      absl::StrAppend(&body, MarkShapeConstant(c.value));
    } else {
      absl::StrAppend(&body, "loom_s", slot_of_position[p]);
    }
    from = c.offset + c.length;
  }
  absl::StrAppend(&body, absl::string_view(first.text).substr(from));
  const std::string& function = outlined.Add(std::string(kSharedParams), body);
  for (int m : members) {
    std::vector<std::string> values;
    for (size_t p : position_of_slot) {
      values.push_back(MarkShapeConstant(stripped[m].constants[p].value));
    }
    bodies[m] = absl::StrCat("  const int64_t loom_shape[] = {", absl::StrJoin(values, ", "),
                             "};\n  ", function, kSharedCallArguments);
  }
}

}  // namespace

std::vector<std::string> ShareBodiesAcrossShapes(const std::deque<std::string>& bodies,
                                                 OutlinedFunctions& outlined, int min_lines) {
  std::vector<StrippedSource> stripped;
  std::vector<std::string> skeletons;  // empty: the body stays
  stripped.reserve(bodies.size());
  skeletons.reserve(bodies.size());
  absl::flat_hash_map<absl::string_view, std::vector<int>> members_of;  // by skeleton
  for (const std::string& body : bodies) {
    stripped.push_back(StripShapeConstants(body));
    const bool may_share =
        !stripped.back().constants.empty() && absl::c_count(body, '\n') >= min_lines;
    skeletons.push_back(may_share ? ShapeSkeleton(stripped.back().text, stripped.back().constants)
                                  : "");
  }
  for (size_t f = 0; f < bodies.size(); ++f) {
    if (!skeletons[f].empty()) members_of[skeletons[f]].push_back(static_cast<int>(f));
  }
  std::vector<std::string> shared(bodies.begin(), bodies.end());
  // In the order of the bodies, so that the unit's text is the same on
  // every compile.
  for (size_t f = 0; f < bodies.size(); ++f) {
    if (skeletons[f].empty()) continue;
    const std::vector<int>& members = members_of[skeletons[f]];
    if (members.size() >= 2 && members[0] == static_cast<int>(f)) {
      ShareOneSkeleton(members, stripped, outlined, shared);
    }
  }
  return shared;
}

std::optional<int> SharedFunctionCalled(absl::string_view body) {
  const size_t call = body.rfind(kSharedCallArguments);
  if (call == absl::string_view::npos) return std::nullopt;
  size_t digits = call;
  while (digits > 0 && absl::ascii_isdigit(body[digits - 1])) --digits;
  int function = 0;
  const size_t name = kOutlinedName.size();
  if (digits < name || body.substr(digits - name, name) != kOutlinedName ||
      !absl::SimpleAtoi(body.substr(digits, call - digits), &function)) {
    return std::nullopt;
  }
  return function;
}

}  // namespace loom::cpp
