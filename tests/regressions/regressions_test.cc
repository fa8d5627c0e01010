// Every graph in tests/regressions/ (shrunk failures found by
// //tests/difftest) must compile, run and pass the --check rule (compiler/check.h).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph_io.h"
#include "tests/difftest/difftest.h"

namespace loom {
namespace {

TEST(RegressionsTest, EveryGraphPassesTheCheck) {
  const std::string cache = absl::StrCat(std::getenv("TEST_TMPDIR"), "/cache");
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator("tests/regressions")) {
    if (entry.path().extension() != ".pbtxt") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    absl::StatusOr<proto::Graph> graph = ParseGraphText(text.str(), entry.path().string());
    ASSERT_TRUE(graph.ok()) << graph.status();
    const DiffOutcome outcome = CheckGraph(*graph, cache);
    EXPECT_FALSE(outcome.failed())
        << entry.path() << ": " << DiffKindName(outcome.kind) << ": " << outcome.detail;
    ++checked;
  }
  std::cout << "checked " << checked << " regression graphs\n";
}

}  // namespace
}  // namespace loom
