#include "backends/cpp/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"

extern char** environ;

namespace loom::cpp {
namespace {

// An unlinked temporary file in `dir`, open for reading and writing, closed on
// exec so that only the child it is handed to (through dup2) inherits it.
absl::StatusOr<int> OpenAnonymousFile(const std::string& dir) {
  std::string path = absl::StrCat(dir, "/loom-process-output-XXXXXX");
  int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkostemp ", path));
  }
  if (unlink(path.c_str()) != 0) {
    absl::Status status = absl::ErrnoToStatus(errno, "unlink " + path);
    close(fd);
    return status;
  }
  return fd;
}

// Starts `argv` with stdin from /dev/null and stdout and stderr on
// `output_fd`.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, int output_fd) {
  posix_spawn_file_actions_t actions;
  if (int err = posix_spawn_file_actions_init(&actions); err != 0) {
    return absl::ErrnoToStatus(err, "posix_spawn_file_actions_init");
  }
  absl::Cleanup destroy_actions = [&] { posix_spawn_file_actions_destroy(&actions); };
  posix_spawnattr_t attr;
  if (int err = posix_spawnattr_init(&attr); err != 0) {
    return absl::ErrnoToStatus(err, "posix_spawnattr_init");
  }
  absl::Cleanup destroy_attr = [&] { posix_spawnattr_destroy(&attr); };

  // The child must not inherit signals the calling thread happens to block.
  sigset_t no_signals;
  sigemptyset(&no_signals);
  int err = posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (err == 0) {
    err = posix_spawn_file_actions_adddup2(&actions, output_fd, STDOUT_FILENO);
  }
  if (err == 0) {
    err = posix_spawn_file_actions_adddup2(&actions, output_fd, STDERR_FILENO);
  }
  if (err == 0) err = posix_spawnattr_setsigmask(&attr, &no_signals);
  if (err == 0) err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  if (err != 0) return absl::ErrnoToStatus(err, "setting up posix_spawn");

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  err = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  if (err != 0) {
    const bool searched_path = argv[0].find('/') == std::string::npos;
    return absl::ErrnoToStatus(err, absl::StrCat("cannot start '", argv[0], "'",
                                                 searched_path ? " (searched $PATH)" : ""));
  }
  return pid;
}

absl::StatusOr<int> Wait(pid_t pid, const std::string& program) {
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) {
      return absl::ErrnoToStatus(errno,
                                 absl::StrCat("waitpid for '", program, "' (pid ", pid, ")"));
    }
  }
  return wait_status;
}

// The last `max_bytes` of the file open at `fd`, with a note of what was cut.
absl::StatusOr<std::string> ReadTail(int fd, size_t max_bytes) {
  struct stat info;
  if (fstat(fd, &info) != 0) {
    return absl::ErrnoToStatus(errno, "fstat of the process output file");
  }
  const size_t size = static_cast<size_t>(info.st_size);
  const size_t start = size > max_bytes ? size - max_bytes : 0;
  std::string tail(size - start, '\0');
  size_t done = 0;
  while (done < tail.size()) {
    ssize_t n = pread(fd, tail.data() + done, tail.size() - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::ErrnoToStatus(errno, "reading the process output file");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  tail.resize(done);
  if (start == 0) return tail;
  return absl::StrCat("[... ", start, " earlier bytes omitted]\n", tail);
}

bool NeedsQuoting(std::string_view arg) {
  if (arg.empty()) return true;
  for (char c : arg) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       std::string_view("_./=+:,@%-").find(c) != std::string_view::npos;
    if (!plain) return true;
  }
  return false;
}

}  // namespace

bool ProcessResult::Succeeded() const {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string ProcessResult::Ending() const {
  if (WIFEXITED(wait_status)) {
    return absl::StrCat("exit status ", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(wait_status));
  }
  return absl::StrCat("wait status ", wait_status);
}

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::string& scratch_dir, size_t max_output_bytes) {
  if (argv.empty()) {
    return absl::InvalidArgumentError("RunProcess: empty argument vector");
  }
  LOOM_ASSIGN_OR_RETURN(int output_fd, OpenAnonymousFile(scratch_dir));
  absl::Cleanup close_output = [fd = output_fd] { close(fd); };

  LOOM_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, output_fd));
  LOOM_ASSIGN_OR_RETURN(int wait_status, Wait(pid, argv[0]));
  LOOM_ASSIGN_OR_RETURN(std::string output, ReadTail(output_fd, max_output_bytes));
  return ProcessResult{wait_status, std::move(output)};
}

std::string FormatCommandLine(const std::vector<std::string>& argv) {
  return absl::StrJoin(argv, " ", [](std::string* out, const std::string& arg) {
    if (!NeedsQuoting(arg)) {
      out->append(arg);
      return;
    }
    out->push_back('\'');
    for (char c : arg) {
      if (c == '\'') {
        out->append("'\\''");
      } else {
        out->push_back(c);
      }
    }
    out->push_back('\'');
  });
}

}  // namespace loom::cpp
