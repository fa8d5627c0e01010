#ifndef LOOM_TESTS_FUZZ_COMPILE_CHECK_H_
#define LOOM_TESTS_FUZZ_COMPILE_CHECK_H_

#include "absl/strings/string_view.h"
#include "ir/graph.h"

namespace loom {
namespace fuzz {

// Compiles `graph` (named `model`) with the built-in `cpu` pipeline up to
// emitted source, no native compiler, verifying the IR after every pass; it
// must compile or fail with a user error (CheckUserError).
void CompileAndCheck(Graph graph, absl::string_view model);

}  // namespace fuzz
}  // namespace loom

#endif  // LOOM_TESTS_FUZZ_COMPILE_CHECK_H_
