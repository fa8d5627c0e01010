// Fuzz target: the graph text reader. Any bytes must parse or fail with a
// user error naming the place (see fuzz::CheckUserError); a graph that
// loads must verify, and print and load back to the same text.

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph_io.h"
#include "ir/verifier.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Each input, weight and constant: at most this many elements.
constexpr int64_t kMaxDeclaredElements = 1 << 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using loom::fuzz::Check;
  using loom::fuzz::CheckUserError;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<loom::proto::Graph> graph_proto = loom::ParseGraphText(text, "fuzz.pbtxt");
  CheckUserError(graph_proto.status(), "ParseGraphText");
  if (!graph_proto.ok() || !loom::fuzz::DeclaresSmallTensors(*graph_proto, kMaxDeclaredElements)) {
    return 0;
  }
  absl::StatusOr<loom::Graph> graph = loom::GraphFromProto(*graph_proto, "fuzz.pbtxt");
  CheckUserError(graph.status(), "GraphFromProto");
  if (!graph.ok()) return 0;

  const absl::Status verified = loom::VerifyGraph(*graph);
  Check(verified.ok(), verified.ToString());
  const std::string printed = loom::GraphToText(*graph);
  absl::StatusOr<loom::proto::Graph> reparsed = loom::ParseGraphText(printed, "printed.pbtxt");
  Check(reparsed.ok(), reparsed.status().ToString());
  absl::StatusOr<loom::Graph> reloaded = loom::GraphFromProto(*reparsed, "printed.pbtxt");
  Check(reloaded.ok(), reloaded.status().ToString());
  Check(loom::GraphToText(*reloaded) == printed,
        "a loaded graph, printed and loaded again, prints differently");
  return 0;
}
