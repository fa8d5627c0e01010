#ifndef LOOM_BACKENDS_CPP_OUTLINE_H_
#define LOOM_BACKENDS_CPP_OUTLINE_H_

// Code that repeats with other names, printed once. An unrolled
// recurrence's kernel repeats each step's members on other buffers; g++
// compiled lstm_l2_h64's 16-step kernel in 0.73 s as one function of 32
// loops. KernelPrinter renames each member's printed code, and members
// whose renamed code (and argument types) are equal become calls of one
// function (KernelPrinter::OutlineRepeatedMembers), a top-level function
// of the unit that the native compiler may compile apart from its callers.

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace loom::cpp {

struct RenamedCode {
  // The code with its buffers named a0, a1, ... and its other numbered
  // names v0, v1, ..., each in order of first appearance.
  std::string text;
  // The buffers (p<N> parameters, l<N> local arrays) that a0, a1, ...
  // stand for.
  std::vector<std::string> buffers;
  // Some other name is used where it is not declared (a value an earlier
  // member left in a variable): the code cannot run apart.
  bool uses_outer_names = false;
};

// Renames the identifiers of printed kernel code that hold a digit: the
// buffers p<N> and l<N>, and the names a member declares for itself
// (temporaries t<N>, accumulators acc<N>, wmean<N>_d, ...). Loop variables
// (x<N>, x<N>r, ...), the prelude's loom_ names and types (int64_t) stay.
// Numeric literals are left as they are.
RenamedCode RenameNumberedNames(absl::string_view code);

// `code` (printed at `depth`) at `new_depth`.
std::string Reindented(absl::string_view code, int depth, int new_depth);

// `code` with each identifier that `names` holds replaced by its text there
// (numeric literals are left as they are).
std::string ReplaceNames(absl::string_view code,
                         const absl::flat_hash_map<std::string, std::string>& names);

// A period of members repeats at least this many times to run as a loop.
inline constexpr size_t kMinRolledRepeats = 3;

// The code of a kernel's members, `codes` (each printed at `depth`), joined
// in order, where a period of consecutive members repeats with equal
// renamed code (RenameNumberedNames) and each of its buffers advancing by
// the same amount every repeat (the steps of an unrolled recurrence fused
// into one kernel) running as one loop over the repeats, loom_step: g++
// then compiles the period once. In the loop, a parameter that advances,
// p<N> with stride S, is read from the kernel's argument array,
// (T)a[N + S * loom_step] with T = pointer_type("p<N>"); a local array
// that advances comes from a table of the repeats' arrays (loom_rolled<K>,
// of pointer_type("l<N>")). A member that is not `may_roll` (it leaves a
// value in a variable for later members, say) is not part of any loop.
std::string RollRepeatedMembers(const std::vector<std::string>& codes,
                                const std::vector<bool>& may_roll, int depth,
                                absl::FunctionRef<std::string(absl::string_view)> pointer_type);

// The name of the unit's functions of repeated code, before their index.
inline constexpr absl::string_view kOutlinedName = "loom_m";

// A unit's functions of repeated code: loom_m0, loom_m1, ..., each defined
// once for all kernels that call it (their repeated members, and the
// bodies ShareBodiesAcrossShapes shares).
class OutlinedFunctions {
 public:
  // The name of the function of `params` (a C parameter list) and `body`
  // (printed at depth 1), added if new.
  const std::string& Add(const std::string& params, const std::string& body);
  // Their declarations, for the unit's head (every part of a unit the
  // native compiler splits has it): empty if there are none.
  std::string Declarations() const;
  // Their definitions, each starting a line `extern "C" void loom_m<N>(`.
  std::string Definitions() const;

 private:
  absl::flat_hash_map<std::string, std::string> names_;  // by params and body
  std::vector<std::string> params_, bodies_;
};

// A shorter kernel body is not shared: it compiles quickly, and its speed
// is most its constants' (a transpose's inner loop of 3 that the compiler
// unrolls, a channel shuffle's strides). shufflenet_v2's copies and
// transposes, 24 to 26 lines, ran 1.4-2.5x slower reading theirs at run
// time; with only its products and their epilogues (77 to 83) shared, its
// kernels' times summed 1.01 of theirs compiled apart.
inline constexpr int kMinSharedLines = 30;

// The bodies of a unit's kernel functions (each printed at depth 1, with
// its shape constants marked: ir/shape_constants.h), where two or more are
// the same code but for their shape constants (a network's blocks at other
// widths and resolutions) each a call of one function of `outlined`: the
// native compiler compiles that code once. The function reads the
// constants from an array that each caller fills, marked (a shape template
// reads them at run time), but for a divisor in which every caller agrees
// (a channel shuffle's 2), which stays in the code for the compiler to
// fold. A body alone with its code stays as it is, and so does one of
// fewer than `min_lines` lines.
std::vector<std::string> ShareBodiesAcrossShapes(const std::deque<std::string>& bodies,
                                                 OutlinedFunctions& outlined,
                                                 int min_lines = kMinSharedLines);

// How the unit's text shows what ShareBodiesAcrossShapes made (for shape
// templates, which read constants of a shared function at run time too):
// a shared function, `loom_m<N>`, has these parameters, and each caller's
// body ends with the call `loom_m<N>` and kSharedCallArguments.
inline constexpr absl::string_view kSharedParams =
    "void* const* a, const int64_t* LOOM_RESTRICT loom_shape";
inline constexpr absl::string_view kSharedCallArguments = "(a, loom_shape);\n";

// N, where `body` (a kernel function's, to its end) calls loom_m<N> as
// ShareBodiesAcrossShapes's callers do.
std::optional<int> SharedFunctionCalled(absl::string_view body);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_OUTLINE_H_
