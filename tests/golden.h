#ifndef LOOM_TESTS_GOLDEN_H_
#define LOOM_TESTS_GOLDEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom {

// A model whose compiled form is checked against a golden file: the
// emitted source with its launch table, or the fused schedule.
struct GoldenCase {
  enum class Kind { kSource, kSchedule };
  std::string model;     // workspace-relative .pbtxt
  std::string pipeline;  // built-in pipeline name
  std::string golden;    // workspace-relative expected text
  Kind kind = Kind::kSource;
};

const std::vector<GoldenCase>& GoldenCases();

// The text the golden file holds for the case (no native compile).
absl::StatusOr<std::string> EmitGolden(const GoldenCase& golden_case);

inline constexpr char kUpdateGoldensCommand[] = "./bazelw run //tests:update_goldens";

}  // namespace loom

#endif  // LOOM_TESTS_GOLDEN_H_
