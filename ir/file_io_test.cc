#include "ir/file_io.h"

#include <cerrno>
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

TEST(FileIoTest, MapsAFile) {
  const std::string path = testing::TempDir() + "/mapped.bin";
  const std::string data = std::string("a\0b", 3) + std::string(100000, 'x');
  std::ofstream(path, std::ios::binary) << data;
  absl::StatusOr<MappedFile> mapped = MappedFile::Map(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->bytes(), data);
  const std::string empty = testing::TempDir() + "/empty.bin";
  std::ofstream(empty, std::ios::binary) << "";
  absl::StatusOr<MappedFile> none = MappedFile::Map(empty);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->bytes().empty());
  EXPECT_THAT(std::string(MappedFile::Map(testing::TempDir() + "/absent").status().message()),
              HasSubstr("/absent: cannot open (No such file or directory)"));
  EXPECT_THAT(std::string(MappedFile::Map(testing::TempDir()).status().message()),
              HasSubstr(": is a directory, not a file"));
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

TEST(FileIoTest, WritesAFile) {
  const std::string path = testing::TempDir() + "/written.bin";
  ASSERT_TRUE(WriteFileBytes(path, std::string("a\0b", 3)).ok());
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, std::string("a\0b", 3));
  ASSERT_TRUE(WriteFileBytes(path, "cd").ok());  // replaced
  EXPECT_EQ(ReadFileBytes(path).value_or(""), "cd");
}

TEST(FileIoTest, AWriteErrorNamesThePathAndTheCause) {
  const std::string path = testing::TempDir() + "/absent/written.bin";
  absl::Status status = WriteFileBytes(path, "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(path + ": cannot write (No such file or directory)"));
}

TEST(FileIoTest, CreatesDirectoriesAndTheirParents) {
  const std::string dir = testing::TempDir() + "/a/b/c";
  ASSERT_TRUE(CreateDirectories(dir).ok());
  ASSERT_TRUE(CreateDirectories(dir).ok());  // already there
  EXPECT_TRUE(WriteFileBytes(dir + "/x", "x").ok());
  const absl::Status status = CreateDirectories(dir + "/x/d");  // under a file
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr(dir + "/x/d: cannot create ("));
}

TEST(FileIoTest, ErrnoErrorNamesTheOperationThePathAndTheCause) {
  errno = ENOENT;
  const absl::Status status = ErrnoError("stat", "/no/such");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("stat /no/such: No such file"));
}

}  // namespace
}  // namespace loom
