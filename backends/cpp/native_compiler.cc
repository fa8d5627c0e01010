#include "backends/cpp/native_compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/common/kernel_cache.h"
#include "backends/cpp/subprocess.h"
#include "ir/file_io.h"
#include "ir/status_macros.h"
#include "runtime/content_hash.h"

namespace loom::cpp {
namespace {

// How much of a failing compiler's output an error carries (its tail, where
// the summary and usually the first real error are).
constexpr size_t kMaxCompilerOutputBytes = 4000;

using kernel_cache::GetEnv;
using kernel_cache::MakeDirs;
using kernel_cache::TempPathFor;
using kernel_cache::WriteFileAtomically;

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

absl::StatusOr<CompiledLibrary> CompileAndLoad(std::string_view source,
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
    absl::StatusOr<NativeLibrary> cached = NativeLibrary::Open(library_path);
    if (cached.ok()) return CompiledLibrary{*std::move(cached), /*cache_hit=*/true};
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
  absl::StatusOr<NativeLibrary> compiled = NativeLibrary::Open(library_path);
  if (!compiled.ok()) {
    return absl::InternalError(
        absl::StrCat("freshly compiled library cannot be loaded: ", compiled.status().message()));
  }
  return CompiledLibrary{*std::move(compiled), /*cache_hit=*/false, support_seconds + seconds};
}

}  // namespace loom::cpp
