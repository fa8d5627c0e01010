#include "pipelines/builtin_pipelines.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ir/pipeline.pb.h"

namespace loom {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsSupersetOf;
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

// Each built-in parses as a pipeline with a target and passes. (Whether its
// passes exist is the pass manager's check, in binaries that link them.)
TEST(BuiltinPipelinesTest, EachParsesAsAPipeline) {
  for (const std::string& name : BuiltinPipelineNames()) {
    proto::Pipeline pipeline;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
        std::string(*BuiltinPipelineText(name)), &pipeline))
        << name;
    EXPECT_NE(pipeline.target(), proto::TARGET_UNSPECIFIED) << name;
    EXPECT_GT(pipeline.pass_size(), 0) << name;
  }
}

TEST(BuiltinPipelinesTest, CpuRunsTheGraphPassesThenLowersAndEmitsCpp) {
  proto::Pipeline cpu;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      std::string(*BuiltinPipelineText("cpu")), &cpu));
  EXPECT_EQ(cpu.target(), proto::CPU);
  std::vector<std::string> names;
  for (const proto::PassSpec& pass : cpu.pass()) names.push_back(pass.name());
  ASSERT_GE(names.size(), 6);
  EXPECT_EQ(names.front(), "verify");
  EXPECT_THAT(names, IsSupersetOf({"decompose", "lower", "schedule", "fuse"}));
  EXPECT_EQ(names.back(), "codegen-cpp");
  EXPECT_TRUE(cpu.pass(1).decompose().ops().empty());  // every composite
  EXPECT_EQ(cpu.pass(cpu.pass_size() - 1).cpp().simd(), proto::CppOptions::NATIVE);
}

TEST(BuiltinPipelinesTest, UnrolledRnnPipelineUnrollsRecurrences) {
  proto::Pipeline pipeline;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      std::string(*BuiltinPipelineText("cpu_unrolled_rnn")), &pipeline));
  int decompose = 0;
  while (decompose < pipeline.pass_size() && pipeline.pass(decompose).name() != "decompose") {
    ++decompose;
  }
  ASSERT_LT(decompose, pipeline.pass_size());
  EXPECT_EQ(pipeline.pass(decompose).decompose().rnn(), proto::DecomposeOptions::UNROLL);
}

TEST(BuiltinPipelinesTest, UnknownNameIsAbsent) {
  EXPECT_FALSE(BuiltinPipelineText("no_such_pipeline").has_value());
  EXPECT_FALSE(BuiltinPipelineText("").has_value());
}

}  // namespace
}  // namespace loom
