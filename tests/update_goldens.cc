// Rewrites tests/golden/ from what the compiler emits now. Run it through
// `./bazelw run //tests:update_goldens` (never from CI) after reviewing the
// golden test's diff.

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "tests/golden.h"

int main() {
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (workspace == nullptr) {
    std::cerr << "update_goldens: run me with " << loom::kUpdateGoldensCommand << "\n";
    return 2;
  }
  int failures = 0;
  for (const loom::GoldenCase& golden_case : loom::GoldenCases()) {
    absl::StatusOr<std::string> source = loom::EmitGolden(golden_case);
    if (!source.ok()) {
      std::cerr << golden_case.model << ": " << source.status().message() << "\n";
      ++failures;
      continue;
    }
    const std::string path = std::string(workspace) + "/" + golden_case.golden;
    std::ofstream file(path, std::ios::binary);
    file << *source;
    file.close();
    if (!file) {
      std::cerr << path << ": cannot write\n";
      ++failures;
      continue;
    }
    std::cout << "wrote " << golden_case.golden << "\n";
  }
  return failures == 0 ? 0 : 3;
}
