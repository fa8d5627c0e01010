#ifndef LOOM_IR_FILE_IO_H_
#define LOOM_IR_FILE_IO_H_

#include <string>

#include "absl/status/statusor.h"

namespace loom {

// The bytes of the file at `path`. Errors are InvalidArgument and name the
// path and the cause: "PATH: is a directory", "PATH: cannot open (No such
// file or directory)", "PATH: cannot read (...)".
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace loom

#endif  // LOOM_IR_FILE_IO_H_
