#include "tests/fuzz/fuzz_util.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/algorithm/container.h"
#include "ir/dtype.h"

namespace loom {
namespace fuzz {
namespace {

bool IsSmall(const proto::TensorType& type, int64_t max_elements) {
  const Shape shape(type.shape().begin(), type.shape().end());
  // A negative dim loom refuses, a zero one leaves nothing to allocate.
  if (absl::c_any_of(shape, [](int64_t dim) { return dim <= 0; })) return true;
  const std::optional<int64_t> elements = CheckedProduct(shape);
  return elements.has_value() && *elements <= max_elements;
}

}  // namespace

void Check(bool condition, absl::string_view message) {
  if (condition) return;
  fprintf(stderr, "fuzz: invariant violated: %s\n", std::string(message).c_str());
  abort();
}

bool IsUserError(const absl::Status& status) {
  switch (status.code()) {
    // The codes the loom command reports as bad input (exit status 2).
    case absl::StatusCode::kOk:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

void CheckUserError(const absl::Status& status, absl::string_view what) {
  if (IsUserError(status)) return;
  fprintf(stderr,
          "fuzz: %s returned %s (bad input must give a user error, "
          "not loom's: see ExitCodeFor in tools/loom.cc)\n",
          std::string(what).c_str(), status.ToString().c_str());
  abort();
}

bool DeclaresSmallTensors(const proto::Graph& graph, int64_t max_elements) {
  for (const proto::Input& input : graph.input()) {
    if (!IsSmall(input.type(), max_elements)) return false;
  }
  for (const auto* list : {&graph.weight(), &graph.constant()}) {
    for (const proto::Initializer& init : *list) {
      if (!IsSmall(init.type(), max_elements)) return false;
    }
  }
  return true;
}

}  // namespace fuzz
}  // namespace loom
