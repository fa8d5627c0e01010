#ifndef LOOM_BACKENDS_CPP_OUTLINE_H_
#define LOOM_BACKENDS_CPP_OUTLINE_H_

// Code that repeats with other names, printed once. An unrolled
// recurrence's kernel repeats each step's members on other buffers; g++
// compiled lstm_l2_h64's 16-step kernel in 0.73 s as one function of 32
// loops. KernelPrinter renames each member's printed code, and members
// whose renamed code (and argument types) are equal become calls of one
// function (KernelPrinter::OutlineRepeatedMembers), a top-level function
// of the unit that the native compiler may compile apart from its callers.

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

// A unit's functions of repeated members: loom_m0, loom_m1, ..., each
// defined once for all kernels whose members call it.
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

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_OUTLINE_H_
