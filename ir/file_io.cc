#include "ir/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"

namespace loom {
namespace {

// A file descriptor, closed when it goes.
class OpenFile {
 public:
  explicit OpenFile(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~OpenFile() {
    if (fd_ >= 0) close(fd_);
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// `path` opened for reading, and its size; errors as ReadFileBytes says.
absl::Status OpenForReading(const std::string& path, OpenFile& file, size_t& size) {
  // A directory opens on Linux and reads as empty: say what it is.
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a file"));
  }
  struct stat info;
  if (file.fd() < 0 || fstat(file.fd(), &info) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  }
  size = static_cast<size_t>(info.st_size);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  OpenFile file(path);
  size_t size = 0;
  if (absl::Status opened = OpenForReading(path, file, size); !opened.ok()) return opened;
  // Read straight into the string: a 435 MB model is copied once. A file
  // that grows meanwhile is read to its end.
  std::string bytes(size, '\0');
  size_t done = 0;
  while (true) {
    if (done == bytes.size()) bytes.resize(bytes.size() + 65536);
    const ssize_t got = read(file.fd(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": cannot read (", std::strerror(errno), ")"));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

absl::StatusOr<MappedFile> MappedFile::Map(const std::string& path) {
  OpenFile file(path);
  size_t size = 0;
  if (absl::Status opened = OpenForReading(path, file, size); !opened.ok()) return opened;
  MappedFile mapped;
  if (size == 0) return mapped;
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (data == MAP_FAILED) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read (", std::strerror(errno), ")"));
  }
  mapped.data_ = static_cast<const char*>(data);
  mapped.size_ = size;
  return mapped;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
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
