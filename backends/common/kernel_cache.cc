#include "backends/common/kernel_cache.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "ir/file_io.h"

namespace loom::kernel_cache {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

absl::Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

std::string GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string DefaultCacheDir() {
  const std::string dir = GetEnv("LOOM_CACHE_DIR");
  if (!dir.empty()) return dir;
  const std::string home = GetEnv("HOME");
  return home.empty() ? "" : absl::StrCat(home, "/.cache/loom");
}

absl::Status MakeDirs(const std::string& dir) {
  for (size_t end = 1; end <= dir.size(); ++end) {
    if (end < dir.size() && dir[end] != '/') continue;
    const std::string prefix = dir.substr(0, end);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST && !IsDirectory(prefix)) {
      return ErrnoError("mkdir", prefix);
    }
  }
  if (!IsDirectory(dir)) {
    return absl::FailedPreconditionError(absl::StrCat("cache dir ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

std::string TempPathFor(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  uint64_t random = 0;
  if (getrandom(&random, sizeof(random), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(random))) {
    random = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  random ^= counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL;
  return absl::StrFormat("%s.tmp.%d.%016x", path, getpid(), random);
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::string temp = TempPathFor(path);
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("open", temp);
  absl::Status status = WriteAll(fd, contents, temp);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("close", temp);
  if (status.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoError(absl::StrCat("rename to ", path, " from"), temp);
  }
  if (!status.ok()) unlink(temp.c_str());
  return status;
}

}  // namespace loom::kernel_cache
