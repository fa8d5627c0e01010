#ifndef LOOM_BACKENDS_CPP_SUBPROCESS_H_
#define LOOM_BACKENDS_CPP_SUBPROCESS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::cpp {

// How a child process ended, and what it printed.
struct ProcessResult {
  int wait_status = 0;  // as returned by waitpid()
  // The tail of stdout and stderr together, interleaved as written. When
  // longer than the limit, it starts with a note of how much was cut.
  std::string output;

  bool Succeeded() const;      // exited normally with status 0
  std::string Ending() const;  // "exit status 1", "killed by signal 9"
};

// Runs argv[0] (searched on $PATH when it has no '/') with `argv`, never
// through a shell: stdin is /dev/null, stdout and stderr go to a temporary
// file in `scratch_dir` that is read back (its last `max_output_bytes`) and
// removed. An error means the process could not be run at all (e.g. NotFound
// for a missing program); a process that ran and failed is a ProcessResult
// with !Succeeded().
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::string& scratch_dir,
                                         size_t max_output_bytes = 4000);

// `argv` as one line for messages, each argument single-quoted when it holds
// anything but [A-Za-z0-9_./=+:,@%-].
std::string FormatCommandLine(const std::vector<std::string>& argv);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_SUBPROCESS_H_
