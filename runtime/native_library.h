#ifndef LOOM_RUNTIME_NATIVE_LIBRARY_H_
#define LOOM_RUNTIME_NATIVE_LIBRARY_H_

// Loading the kernels' shared object: from a file (the kernel cache's) or
// from memory (an artifact's), with the libraries it calls kept loaded.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom {

// A loaded shared object. Owns the dlopen handle and closes it on
// destruction, so function pointers from Symbol() are valid only while the
// library lives. Movable, not copyable.
class NativeLibrary {
 public:
  // Loads the shared object at `path` (RTLD_NOW | RTLD_LOCAL). An error is
  // an InternalError with dlopen's message.
  static absl::StatusOr<NativeLibrary> Open(const std::string& path);

  NativeLibrary(NativeLibrary&& other) noexcept;
  NativeLibrary& operator=(NativeLibrary&& other) noexcept;
  NativeLibrary(const NativeLibrary&) = delete;
  NativeLibrary& operator=(const NativeLibrary&) = delete;
  ~NativeLibrary();

  // The address of the (extern "C") symbol `name`; NotFound naming the
  // symbol and the library when it has none.
  absl::StatusOr<void*> Symbol(std::string_view name) const;

  // The file it was loaded from, or the name LoadSharedObject gave it.
  const std::string& path() const { return path_; }

 private:
  friend absl::StatusOr<NativeLibrary> LoadSharedObject(absl::string_view bytes, bool openmp,
                                                        const std::vector<std::string>& libraries,
                                                        absl::string_view name);
  NativeLibrary(void* handle, std::string path);
  void Close();

  void* handle_ = nullptr;
  std::string path_;
};

// Loads a shared object from memory (`bytes`, such as an artifact's
// kernels), after the OpenMP runtime when `openmp` and the `libraries` it
// calls (link arguments, as the native compiler's link arguments give
// them), all kept loaded for the whole process. `name` names it in errors
// and is its path().
absl::StatusOr<NativeLibrary> LoadSharedObject(absl::string_view bytes, bool openmp,
                                               const std::vector<std::string>& libraries,
                                               absl::string_view name);

// Loads the OpenMP runtime (libgomp.so.1) for the whole process: its worker
// threads outlive any one library built with -fopenmp. A
// FailedPreconditionError saying what to install when it is missing.
absl::Status PinOpenMpRuntime();

// Loads the libraries that kernels call (BLAS, oneDNN; `libraries` are link
// arguments, of which the paths count) for the whole process: they keep
// thread pools and JIT kernels alive between calls. A failure here shows
// when the kernels' library loads.
void PinCalledLibraries(const std::vector<std::string>& libraries);

// Runs one small product through oneDNN (`library`, the path of a
// libdnnl.so.2), pinned as PinCalledLibraries pins it: a process's first
// oneDNN product sets the library up and generates its code (30 to 40 ms
// on the 2-core Zen 4; any later product of any size then takes
// microseconds), which the kernels' first launch pays unless this ran
// before. Nothing happens where the library or its dnnl_sgemm is missing.
void WarmUpOneDnn(const std::string& library);

// This machine's instruction-set extensions (the "flags" line of
// /proc/cpuinfo on x86, "Features" on Arm): kernels built for the native
// instruction set load only on a CPU that has the same.
const std::string& HostCpuFeatures();

}  // namespace loom

#endif  // LOOM_RUNTIME_NATIVE_LIBRARY_H_
