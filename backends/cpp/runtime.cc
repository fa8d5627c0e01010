#include "backends/cpp/runtime.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/common/kernel_cache.h"
#include "backends/cpp/subprocess.h"
#include "ir/status_macros.h"

namespace loom::cpp {
namespace {

// How much of a failing compiler's output an error carries (its tail, where
// the summary and usually the first real error are).
constexpr size_t kMaxCompilerOutputBytes = 4000;

using kernel_cache::ContentHasher;
using kernel_cache::GetEnv;
using kernel_cache::MakeDirs;
using kernel_cache::TempPathFor;
using kernel_cache::WriteFileAtomically;

absl::Status ErrnoError(absl::string_view operation, absl::string_view path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(operation, " ", path));
}

bool AsksForNativeCode(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    if (absl::EndsWith(arg, "=native")) return true;
  }
  return false;
}

// The compiler command without its input and output paths, and what to
// link, which follows the source: the support objects, then the libraries.
struct CompilerCommand {
  std::vector<std::string> command;
  std::vector<std::string> objects;
  std::vector<std::string> libraries;
  std::vector<std::string> libraries_as_needed;
};

absl::StatusOr<CompilerCommand> MakeCompilerCommand(const NativeCompileOptions& options) {
  CompilerCommand compiler;
  compiler.command = {options.compiler};
  compiler.command.insert(compiler.command.end(), options.flags.begin(), options.flags.end());
  if (options.openmp) compiler.command.push_back("-fopenmp");
  for (auto [wanted, link_args] :
       {std::pair{options.link_blas, &BlasLinkArgs}, std::pair{options.link_dnnl, &DnnlLinkArgs}}) {
    if (!wanted) continue;
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> args, link_args());
    compiler.libraries.insert(compiler.libraries.end(), args.begin(), args.end());
  }
  if (options.link_blis) {
    LOOM_ASSIGN_OR_RETURN(compiler.libraries_as_needed, BlisLinkArgs());
    if (!compiler.libraries_as_needed.empty()) compiler.command.push_back("-DLOOM_HAVE_BLIS");
  }
#if defined(__aarch64__)
  if (options.link_sleef) {
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> sleef, SleefLinkArgs());
    if (!sleef.empty()) compiler.command.push_back(kSleefDefine);
    compiler.libraries_as_needed.insert(compiler.libraries_as_needed.end(), sleef.begin(),
                                        sleef.end());
  }
#endif
  return compiler;
}

// The cache key: each piece is length-prefixed so that no two different
// (source, command) pairs hash the same text.
std::string CacheKey(std::string_view source, const CompilerCommand& compiler) {
  ContentHasher hash;
  hash.Add(source);
  for (const std::string& arg : compiler.command) hash.Add(arg);
  for (const std::string& arg : compiler.objects) hash.Add(arg);
  for (const std::string& arg : compiler.libraries) hash.Add(arg);
  for (const std::string& arg : compiler.libraries_as_needed) hash.Add(arg);
  if (AsksForNativeCode(compiler.command)) hash.Add(HostCpuFeatures());
  return hash.HexDigest();
}

// A library built with -fopenmp brings in the OpenMP runtime, whose worker
// threads outlive any one parallel loop: were the runtime unloaded with the
// last such library (dlclose), those threads would run unmapped code. It is
// loaded once for the whole process and never unloaded.
absl::Status PinOpenMpRuntime() {
  static const bool pinned =
      dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != nullptr;
  if (!pinned) {
    return absl::FailedPreconditionError(
        "the OpenMP runtime libgomp.so.1 could not be loaded (install libgomp1, "
        "or compile without OpenMP: codegen-cpp option openmp: false)");
  }
  return absl::OkStatus();
}

// The libraries the kernels call (BLAS, oneDNN) keep thread pools, JIT
// kernels and thread-local buffers alive between calls; like the OpenMP
// runtime they stay loaded for the whole process (a failure here shows when
// the kernel library loads).
void PinCalledLibraries(const std::vector<std::string>& libraries) {
  for (const std::string& library : libraries) {
    if (absl::StartsWith(library, "-")) continue;
    dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  }
}

absl::StatusOr<void*> Load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::InternalError(
        absl::StrCat("dlopen ", path, ": ", error == nullptr ? "unknown error" : error));
  }
  return handle;
}

// Compiles `source_path` into `library_path` (through a temporary file and a
// rename) and returns the compiler's wall time in seconds.
absl::StatusOr<double> Compile(const CompilerCommand& compiler, const std::string& source_path,
                               const std::string& library_path, const std::string& cache_dir) {
  const std::string temp = TempPathFor(library_path);
  std::vector<std::string> command = compiler.command;
  command.insert(command.end(), {"-o", temp, source_path});
  command.insert(command.end(), compiler.objects.begin(), compiler.objects.end());
  command.insert(command.end(), compiler.libraries.begin(), compiler.libraries.end());
  if (!compiler.libraries_as_needed.empty()) {
    command.push_back("-Wl,--as-needed");
    command.insert(command.end(), compiler.libraries_as_needed.begin(),
                   compiler.libraries_as_needed.end());
    command.push_back("-Wl,--no-as-needed");
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ProcessResult> result = RunProcess(command, cache_dir, kMaxCompilerOutputBytes);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat("C++ compiler '", command[0],
                                     "' could not be run: ", result.status().message(),
                                     "; set NativeCompileOptions.compiler or $CXX"));
  }
  if (!result->Succeeded()) {
    unlink(temp.c_str());
    return absl::InternalError(
        absl::StrCat("native compile of ", source_path, " failed (", result->Ending(),
                     ")\ncommand: ", FormatCommandLine(command), "\n", result->output));
  }
  if (rename(temp.c_str(), library_path.c_str()) != 0) {
    absl::Status status = ErrnoError(absl::StrCat("rename to ", library_path, " from"), temp);
    unlink(temp.c_str());
    return status;
  }
  return seconds;
}

// A support source compiled into an object of the cache.
struct SupportObject {
  std::string path;
  double compile_seconds = 0;  // 0 when it was cached
};

// Compiles `source` as the library command `library` would, but into an
// object (-c, no -shared), unless <cache_dir>/<hash>.o is already there.
// Its path names its content and command, so the libraries' cache keys
// cover it.
absl::StatusOr<SupportObject> CachedSupportObject(std::string_view source,
                                                  const CompilerCommand& library,
                                                  const std::string& cache_dir) {
  CompilerCommand compiler;
  for (const std::string& arg : library.command) {
    if (arg != "-shared") compiler.command.push_back(arg);
  }
  compiler.command.push_back("-c");
  const std::string base = absl::StrCat(cache_dir, "/", CacheKey(source, compiler));
  SupportObject object{base + ".o"};
  struct stat info;
  if (stat(object.path.c_str(), &info) == 0) return object;
  if (errno != ENOENT) return ErrnoError("stat", object.path);
  LOOM_RETURN_IF_ERROR(WriteFileAtomically(base + ".cc", source));
  LOOM_ASSIGN_OR_RETURN(object.compile_seconds,
                        Compile(compiler, base + ".cc", object.path, cache_dir));
  return object;
}

// The library folders of Debian's multiarch layouts and others.
constexpr const char* kLibraryFolders[] = {"/usr/lib/x86_64-linux-gnu",
                                           "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"};

// A shared library the kernels call: the path in `$<variable>` if set, else
// the first of `libraries` found in one of `folders`. A library in a folder
// of its own is found there at load time through the run path. `missing`
// says what to install.
absl::StatusOr<std::vector<std::string>> LibraryLinkArgs(
    const char* variable, std::initializer_list<const char*> libraries, absl::string_view missing,
    absl::Span<const char* const> folders = kLibraryFolders) {
  const std::string chosen = GetEnv(variable);
  if (!chosen.empty()) {
    if (access(chosen.c_str(), R_OK) != 0) {
      return ErrnoError(absl::StrCat("$", variable, " names a library that cannot be read:"),
                        chosen);
    }
    return std::vector<std::string>{chosen};
  }
  for (const char* library : libraries) {
    for (const char* folder : folders) {
      const std::string path = absl::StrCat(folder, "/", library);
      if (access(path.c_str(), R_OK) != 0) continue;
      const std::string dir = path.substr(0, path.rfind('/'));
      return std::vector<std::string>{path, absl::StrCat("-Wl,-rpath,", dir)};
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat(missing, " (or set $", variable, " to the path of a shared library)"));
}

}  // namespace

// This machine's instruction-set extensions ("flags" on x86, "Features" on
// Arm): code built with -march=native is only valid on a CPU that has them,
// and a cache dir may be shared between machines (an NFS home).
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

absl::StatusOr<std::vector<std::string>> BlasLinkArgs() {
  return LibraryLinkArgs("LOOM_BLAS",
                         {"openblas-openmp/libopenblas.so.0", "libopenblas.so.0", "libblas.so.3"},
                         "no BLAS library found for the model's f64 matrix products: install "
                         "libopenblas0-openmp");
}

absl::StatusOr<std::vector<std::string>> DnnlLinkArgs() {
  return LibraryLinkArgs("LOOM_DNNL", {"libdnnl.so.2"},
                         "oneDNN not found for the model's f32 matrix products: install libdnnl2");
}

absl::StatusOr<std::vector<std::string>> BlisLinkArgs() {
  absl::StatusOr<std::vector<std::string>> args =
      LibraryLinkArgs("LOOM_BLIS", {"blis-openmp/libblis.so.4", "libblis.so.4"}, "no BLIS");
  if (absl::IsFailedPrecondition(args.status())) return std::vector<std::string>{};
  return args;
}

absl::StatusOr<std::vector<std::string>> SleefLinkArgs(absl::Span<const char* const> folders) {
  absl::StatusOr<std::vector<std::string>> args = LibraryLinkArgs(
      "LOOM_SLEEF", {"libsleef.so.3"}, "no SLEEF", folders.empty() ? kLibraryFolders : folders);
  if (absl::IsFailedPrecondition(args.status())) return std::vector<std::string>{};
  return args;
}

std::string DefaultCompiler() {
  std::string cxx = GetEnv("CXX");
  return cxx.empty() ? "g++" : cxx;
}

std::vector<std::string> DefaultCompileFlags() {
  return {"-O2", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-std=c++17"};
}

absl::StatusOr<NativeLibrary> LoadSharedObject(absl::string_view bytes, bool openmp,
                                               const std::vector<std::string>& libraries,
                                               absl::string_view name) {
  if (openmp) {
    LOOM_RETURN_IF_ERROR(PinOpenMpRuntime());
  }
  PinCalledLibraries(libraries);
  const int fd = memfd_create("loom-kernels", MFD_CLOEXEC);
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
  absl::StatusOr<void*> handle = Load(absl::StrCat("/proc/self/fd/", fd));
  close(fd);
  if (!handle.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kernels of ", name, " cannot be loaded: ", handle.status().message()));
  }
  return NativeLibrary(*handle, std::string(name), false, 0);
}

NativeLibrary::NativeLibrary(void* handle, std::string path, bool cache_hit, double compile_seconds)
    : handle_(handle),
      path_(std::move(path)),
      cache_hit_(cache_hit),
      compile_seconds_(compile_seconds) {}

NativeLibrary::NativeLibrary(NativeLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      path_(std::move(other.path_)),
      cache_hit_(other.cache_hit_),
      compile_seconds_(other.compile_seconds_) {}

NativeLibrary& NativeLibrary::operator=(NativeLibrary&& other) noexcept {
  if (this != &other) {
    Close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
    cache_hit_ = other.cache_hit_;
    compile_seconds_ = other.compile_seconds_;
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

absl::StatusOr<NativeLibrary> CompileAndLoad(std::string_view source,
                                             const NativeCompileOptions& options) {
  if (options.compiler.empty()) {
    return absl::InvalidArgumentError("NativeCompileOptions.compiler is empty (and $CXX unset)");
  }
  if (options.cache_dir.empty()) {
    return absl::InvalidArgumentError(
        "NativeCompileOptions.cache_dir is empty: set $LOOM_CACHE_DIR or "
        "$HOME");
  }
  if (absl::c_linear_search(options.flags, "-fopenmp")) {
    LOOM_RETURN_IF_ERROR(PinOpenMpRuntime());
  }
  LOOM_ASSIGN_OR_RETURN(CompilerCommand command, MakeCompilerCommand(options));
  PinCalledLibraries(command.libraries);
  LOOM_RETURN_IF_ERROR(MakeDirs(options.cache_dir));
  double support_seconds = 0;
  for (const std::string& support : options.support_sources) {
    LOOM_ASSIGN_OR_RETURN(SupportObject object,
                          CachedSupportObject(support, command, options.cache_dir));
    command.objects.push_back(object.path);
    support_seconds += object.compile_seconds;
  }
  const std::string base = absl::StrCat(options.cache_dir, "/", CacheKey(source, command));
  const std::string library_path = base + ".so";
  const std::string source_path = base + ".cc";

  struct stat info;
  if (stat(library_path.c_str(), &info) == 0) {
    absl::StatusOr<void*> handle = Load(library_path);
    if (handle.ok()) return NativeLibrary(*handle, library_path, true, 0);
    // A corrupt entry (truncated on a full disk, damaged by hand): drop it
    // and build it again.
    if (unlink(library_path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("unlink of a corrupt cache entry", library_path);
    }
  } else if (errno != ENOENT) {
    return ErrnoError("stat", library_path);
  }

  if (absl::Status status = WriteFileAtomically(source_path, source); !status.ok()) {
    return status;
  }
  LOOM_ASSIGN_OR_RETURN(double seconds,
                        Compile(command, source_path, library_path, options.cache_dir));
  absl::StatusOr<void*> handle = Load(library_path);
  if (!handle.ok()) {
    return absl::InternalError(
        absl::StrCat("freshly compiled library cannot be loaded: ", handle.status().message()));
  }
  return NativeLibrary(*handle, library_path, false, support_seconds + seconds);
}

}  // namespace loom::cpp
