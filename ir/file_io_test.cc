#include "ir/file_io.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

TEST(FileIoTest, ReadsAFile) {
  const std::string path = testing::TempDir() + "/bytes.bin";
  std::ofstream(path, std::ios::binary) << std::string("a\0b", 3);
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, std::string("a\0b", 3));
}

TEST(FileIoTest, ErrorsNameThePathAndTheCause) {
  const std::string missing = testing::TempDir() + "/absent/model.pbtxt";
  absl::Status status = ReadFileBytes(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(missing + ": cannot open (No such file or directory)"));
  status = ReadFileBytes(testing::TempDir()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(testing::TempDir() + ": is a directory, not a file"));
}

}  // namespace
}  // namespace loom
