#ifndef LOOM_TESTS_GOLDEN_H_
#define LOOM_TESTS_GOLDEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom {

// A model whose emitted kernels are checked against a golden file.
struct GoldenCase {
  std::string model;     // workspace-relative .pbtxt
  std::string pipeline;  // built-in pipeline name
  std::string golden;    // workspace-relative expected source
};

const std::vector<GoldenCase>& GoldenCases();

// The source the pipeline emits for the case's model (no native compile).
absl::StatusOr<std::string> EmitSource(const GoldenCase& golden_case);

inline constexpr char kUpdateGoldensCommand[] =
    "./bazelw run //tests:update_goldens";

}  // namespace loom

#endif  // LOOM_TESTS_GOLDEN_H_
