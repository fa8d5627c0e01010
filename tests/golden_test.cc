// Emitted kernels must match tests/golden/ byte for byte. Review a diff like
// code, then rewrite the goldens with ./bazelw run //tests:update_goldens.

#include "tests/golden.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The first line where the two texts differ, with a little context, so a
// failure reads like a diff rather than two whole files.
std::string FirstDifference(const std::string& expected, const std::string& actual) {
  const std::vector<std::string> want = absl::StrSplit(expected, '\n');
  const std::vector<std::string> got = absl::StrSplit(actual, '\n');
  size_t line = 0;
  while (line < want.size() && line < got.size() && want[line] == got[line]) ++line;
  std::string text = absl::StrCat("first difference at line ", line + 1, ":\n");
  for (size_t i = line; i < line + 3; ++i) {
    if (i < want.size()) absl::StrAppend(&text, "- ", want[i], "\n");
  }
  for (size_t i = line; i < line + 3; ++i) {
    if (i < got.size()) absl::StrAppend(&text, "+ ", got[i], "\n");
  }
  return text;
}

TEST(GoldenTest, EmittedSourceMatchesGoldenFiles) {
  for (const GoldenCase& golden_case : GoldenCases()) {
    SCOPED_TRACE(golden_case.model);
    absl::StatusOr<std::string> source = EmitGolden(golden_case);
    ASSERT_TRUE(source.ok()) << source.status();
    const std::string golden = ReadFile(golden_case.golden);
    EXPECT_TRUE(*source == golden)
        << golden_case.golden << " is out of date; " << FirstDifference(golden, *source)
        << "Review the whole difference, then update the goldens with: " << kUpdateGoldensCommand;
  }
}

}  // namespace
}  // namespace loom
