#include "runtime/native_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/file_io.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

absl::StatusOr<void*> Load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::InternalError(
        absl::StrCat("dlopen ", path, ": ", error == nullptr ? "unknown error" : error));
  }
  return handle;
}

}  // namespace

absl::Status PinOpenMpRuntime() {
  // Were the runtime unloaded with the last library built with -fopenmp
  // (dlclose), its worker threads would run unmapped code.
  static const bool pinned =
      dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != nullptr;
  if (!pinned) {
    return absl::FailedPreconditionError(
        "the OpenMP runtime libgomp.so.1 could not be loaded (install libgomp1, "
        "or compile without OpenMP: codegen-cpp option openmp: false)");
  }
  return absl::OkStatus();
}

void PinCalledLibraries(const std::vector<std::string>& libraries) {
  for (const std::string& library : libraries) {
    if (absl::StartsWith(library, "-")) continue;
    dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
}

void WarmUpOneDnn(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) return;
  using Sgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t,
                        const float*, int64_t, float, float*, int64_t);
  const auto sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "dnnl_sgemm"));
  if (sgemm == nullptr) return;
  constexpr int64_t kSize = 64;  // after a 2x2x2 product the next still took 3 ms
  std::vector<float> a(kSize * kSize, 1.0f), c(kSize * kSize);
  sgemm('N', 'N', kSize, kSize, kSize, 1.0f, a.data(), kSize, a.data(), kSize, 0.0f, c.data(),
        kSize);
}

// A cache dir may be shared between machines (an NFS home): code built with
// -march=native is valid only where these are the same.
const std::string& HostCpuFeatures() {
  static const std::string* const features = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (absl::StartsWith(line, "flags") || absl::StartsWith(line, "Features")) {
        return new std::string(line);
      }
    }
    return new std::string();
  }();
  return *features;
}

absl::StatusOr<NativeLibrary> LoadSharedObject(absl::string_view bytes, bool openmp,
                                               const std::vector<std::string>& libraries,
                                               absl::string_view name) {
  if (openmp) {
    LOOM_RETURN_IF_ERROR(PinOpenMpRuntime());
  }
  PinCalledLibraries(libraries);
  int fd = memfd_create("loom-kernels", MFD_CLOEXEC);
  if (fd < 0) return ErrnoError("memfd_create for the kernels of", name);
  for (size_t written = 0; written < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status status = ErrnoError("writing the kernels of", name);
      close(fd);
      return status;
    }
    written += static_cast<size_t>(n);
  }
  // dlopen finds a library by the text of its path before it opens it: a
  // /proc/self/fd/N that named another library loaded from memory, whose
  // descriptor was closed since, would give that library. Another N then.
  std::string path = absl::StrCat("/proc/self/fd/", fd);
  while (void* loaded = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(loaded);
    const int higher = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    close(fd);
    if (higher < 0) return ErrnoError("a descriptor for the kernels of", name);
    fd = higher;
    path = absl::StrCat("/proc/self/fd/", fd);
  }
  absl::StatusOr<void*> handle = Load(path);
  close(fd);
  if (!handle.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kernels of ", name, " cannot be loaded: ", handle.status().message()));
  }
  return NativeLibrary(*handle, std::string(name));
}

absl::StatusOr<NativeLibrary> NativeLibrary::Open(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(void* handle, Load(path));
  return NativeLibrary(handle, path);
}

NativeLibrary::NativeLibrary(void* handle, std::string path)
    : handle_(handle), path_(std::move(path)) {}

NativeLibrary::NativeLibrary(NativeLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

NativeLibrary& NativeLibrary::operator=(NativeLibrary&& other) noexcept {
  if (this != &other) {
    Close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

NativeLibrary::~NativeLibrary() { Close(); }

void NativeLibrary::Close() {
  // A failing dlclose leaves nothing to recover; the handle is gone either way.
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
}

absl::StatusOr<void*> NativeLibrary::Symbol(std::string_view name) const {
  const std::string symbol(name);
  if (handle_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("looking up symbol '", symbol, "' in a moved-from NativeLibrary"));
  }
  dlerror();  // clear any earlier error
  void* address = dlsym(handle_, symbol.c_str());
  if (address == nullptr) {
    const char* error = dlerror();
    return absl::NotFoundError(
        absl::StrCat("symbol '", symbol, "' not found in ", path_,
                     error == nullptr ? "" : absl::StrCat(" (", error, ")")));
  }
  return address;
}

}  // namespace loom
