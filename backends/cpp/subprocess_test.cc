#include "backends/cpp/subprocess.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::cpp {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ScratchDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir == nullptr ? "/tmp" : dir;
}

TEST(RunProcessTest, CapturesStdoutAndStderrInOrder) {
  absl::StatusOr<ProcessResult> result =
      RunProcess({"sh", "-c", "echo out; echo err >&2; echo again"}, ScratchDir());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->Succeeded());
  EXPECT_EQ(result->Ending(), "exit status 0");
  EXPECT_EQ(result->output, "out\nerr\nagain\n");
}

TEST(RunProcessTest, PassesArgumentsVerbatimWithoutAShell) {
  absl::StatusOr<ProcessResult> result =
      RunProcess({"printf", "[%s]", "a b", "$HOME", "*;"}, ScratchDir());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->output, "[a b][$HOME][*;]");
}

TEST(RunProcessTest, ReportsExitStatusAndSignal) {
  absl::StatusOr<ProcessResult> exited = RunProcess({"sh", "-c", "exit 3"}, ScratchDir());
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_FALSE(exited->Succeeded());
  EXPECT_EQ(exited->Ending(), "exit status 3");

  absl::StatusOr<ProcessResult> killed = RunProcess({"sh", "-c", "kill -9 $$"}, ScratchDir());
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_FALSE(killed->Succeeded());
  EXPECT_EQ(killed->Ending(), "killed by signal 9");
}

TEST(RunProcessTest, KeepsOnlyTheTailOfLongOutput) {
  absl::StatusOr<ProcessResult> result =
      RunProcess({"sh", "-c",
                  "i=0; while [ $i -lt 200 ]; do echo line$i; i=$((i+1)); "
                  "done"},
                 ScratchDir(), /*max_output_bytes=*/20);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->output, StartsWith("[... "));
  EXPECT_THAT(result->output, HasSubstr("earlier bytes omitted]\n"));
  EXPECT_THAT(result->output, testing::EndsWith("line198\nline199\n"));
}

TEST(RunProcessTest, StdinIsEmpty) {
  absl::StatusOr<ProcessResult> result = RunProcess({"sh", "-c", "wc -c"}, ScratchDir());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(result->output, HasSubstr("0"));
}

TEST(RunProcessTest, MissingProgramIsNotFoundNamingIt) {
  absl::StatusOr<ProcessResult> searched = RunProcess({"loom-no-such-program"}, ScratchDir());
  EXPECT_EQ(searched.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(searched.status().message(), HasSubstr("'loom-no-such-program'"));
  EXPECT_THAT(searched.status().message(), HasSubstr("$PATH"));

  absl::StatusOr<ProcessResult> absolute = RunProcess({"/nonexistent/loom-cc"}, ScratchDir());
  EXPECT_EQ(absolute.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(absolute.status().message(), HasSubstr("'/nonexistent/loom-cc'"));
}

TEST(RunProcessTest, BadScratchDirAndEmptyArgvAreErrors) {
  absl::StatusOr<ProcessResult> bad_dir = RunProcess({"true"}, "/nonexistent/scratch");
  EXPECT_FALSE(bad_dir.ok());
  EXPECT_THAT(bad_dir.status().message(), HasSubstr("/nonexistent/scratch"));

  EXPECT_EQ(RunProcess({}, ScratchDir()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FormatCommandLineTest, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(FormatCommandLine({"g++", "-O2", "-o", "/a/b.so", "x.cc"}), "g++ -O2 -o /a/b.so x.cc");
  EXPECT_EQ(FormatCommandLine({"cc", "a b", "", "it's"}), "cc 'a b' '' 'it'\\''s'");
}

}  // namespace
}  // namespace loom::cpp
