#include "pipelines/builtin_pipelines.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::Contains;
using ::testing::IsTrue;

std::string ReadSourceFile(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(BuiltinPipelinesTest, NamesAreSortedAndIncludeCpu) {
  const std::vector<std::string> names = BuiltinPipelineNames();
  EXPECT_THAT(names, Contains("cpu"));
  EXPECT_THAT(std::is_sorted(names.begin(), names.end()), IsTrue());
}

TEST(BuiltinPipelinesTest, EmbeddedTextIsTheFileVerbatim) {
  for (const std::string& name : BuiltinPipelineNames()) {
    const std::string source = ReadSourceFile("pipelines/" + name + ".pbtxt");
    ASSERT_FALSE(source.empty()) << name;
    std::optional<absl::string_view> text = BuiltinPipelineText(name);
    ASSERT_TRUE(text.has_value()) << name;
    EXPECT_EQ(*text, source) << name;
  }
}

TEST(BuiltinPipelinesTest, UnknownNameIsAbsent) {
  EXPECT_FALSE(BuiltinPipelineText("no_such_pipeline").has_value());
  EXPECT_FALSE(BuiltinPipelineText("").has_value());
}

}  // namespace
}  // namespace loom
