#include "ir/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace loom {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  // A directory opens as a stream on Linux and reads as empty: say what it is.
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a file"));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  }
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (file.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read (", std::strerror(errno), ")"));
  }
  return bytes.str();
}

absl::Status WriteFileBytes(const std::string& path, absl::string_view bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot write (", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

absl::Status CreateDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot create (", error.message(), ")"));
  }
  return absl::OkStatus();
}

absl::Status ErrnoError(absl::string_view operation, absl::string_view path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(operation, " ", path));
}

}  // namespace loom
