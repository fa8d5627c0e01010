#ifndef LOOM_TESTS_FUZZ_FUZZ_UTIL_H_
#define LOOM_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/graph.pb.h"

namespace loom {
namespace fuzz {

// Bad input must come back as an error the loom command reports as the
// user's (exit status 2: InvalidArgument, NotFound, FailedPrecondition,
// OutOfRange, Unimplemented), never as an InternalError (a broken
// invariant: a bug in loom) or another code. Aborts, which the fuzzer
// reports as a crash, when `status` is neither OK nor such an error; `what`
// names the step.
void CheckUserError(const absl::Status& status, absl::string_view what);
// Whether `status` is OK or such a user error.
bool IsUserError(const absl::Status& status);

// Aborts with `message` when `condition` is false: an invariant the fuzz
// target checks on inputs loom accepted.
void Check(bool condition, absl::string_view message);

// Whether every input, weight and constant `graph` declares has at most
// `max_elements` elements. loom allocates weights and constants at their
// declared size (up to 2^40 elements, by design) and the compile path's
// work can grow with input sizes (an unrolled recurrence per time step), so
// the fuzz targets skip graphs that ask for more than a fuzzing process
// should spend; shapes computed by nodes are not limited.
bool DeclaresSmallTensors(const proto::Graph& graph, int64_t max_elements);

}  // namespace fuzz
}  // namespace loom

#endif  // LOOM_TESTS_FUZZ_FUZZ_UTIL_H_
