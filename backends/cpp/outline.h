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
