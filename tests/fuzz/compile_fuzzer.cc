// Fuzz target: the whole compile but the native compiler. Whatever graph
// text loads goes through the built-in `cpu` pipeline to emitted C++, with
// the IR verified after every pass; it must compile or fail with a user
// error (see fuzz::CheckUserError), never crash, hang or break the IR.

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph_io.h"
#include "tests/fuzz/compile_check.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Each input, weight and constant: at most this many elements. Shapes are
// what the compile looks at; small ones keep each run fast (an unrolled
// recurrence has a step per time step).
constexpr int64_t kMaxDeclaredElements = 1 << 12;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<loom::proto::Graph> graph_proto = loom::ParseGraphText(text, "fuzz.pbtxt");
  if (!graph_proto.ok() || !loom::fuzz::DeclaresSmallTensors(*graph_proto, kMaxDeclaredElements)) {
    return 0;
  }
  absl::StatusOr<loom::Graph> graph = loom::GraphFromProto(*graph_proto, "fuzz.pbtxt");
  if (!graph.ok()) return 0;

  loom::fuzz::CompileAndCheck(*std::move(graph), "fuzz.pbtxt");
  return 0;
}
