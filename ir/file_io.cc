#include "ir/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
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

}  // namespace loom
