#ifndef LOOM_IR_FILE_IO_H_
#define LOOM_IR_FILE_IO_H_

// Whole-file reads and writes, and errors of failed system calls on files,
// for every layer above (the runtime, the backends, the compiler).

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom {

// The bytes of the file at `path`. Errors are InvalidArgument and name the
// path and the cause: "PATH: is a directory", "PATH: cannot open (No such
// file or directory)", "PATH: cannot read (...)".
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

// The bytes of a file mapped read-only into memory, for as long as the
// object lives: a large file read without copying it (an artifact's
// weights). Errors as ReadFileBytes's.
class MappedFile {
 public:
  static absl::StatusOr<MappedFile> Map(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  absl::string_view bytes() const { return absl::string_view(data_, size_); }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// Writes `bytes` to the file at `path`, replacing it. Errors are
// InvalidArgument and name the path and the cause: "PATH: cannot write
// (No such file or directory)".
absl::Status WriteFileBytes(const std::string& path, absl::string_view bytes);

// Creates the directory `dir` and its missing parents. Errors are
// InvalidArgument and name the directory and the cause: "DIR: cannot create
// (Permission denied)".
absl::Status CreateDirectories(const std::string& dir);

// The error of `operation` on `path`, which just failed and set errno: the
// code errno maps to, and the message "OPERATION PATH: <errno's text>".
absl::Status ErrnoError(absl::string_view operation, absl::string_view path);

}  // namespace loom

#endif  // LOOM_IR_FILE_IO_H_
