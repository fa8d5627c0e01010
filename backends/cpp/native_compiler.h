#ifndef LOOM_BACKENDS_CPP_NATIVE_COMPILER_H_
#define LOOM_BACKENDS_CPP_NATIVE_COMPILER_H_

// The C++ backend's native compiler: compiles a translation unit with the
// system C++ compiler into a shared object, caches it on disk by content hash
// and loads it (runtime/native_library.h).

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/common/kernel_cache.h"
#include "runtime/native_library.h"

namespace loom::cpp {

// $CXX if set and not empty, else "g++".
std::string DefaultCompiler();
// -O2 -march=native -fPIC -shared -fno-math-errno -std=c++17. No
// -ffast-math: results must match the reference interpreter.
std::vector<std::string> DefaultCompileFlags();
// $LOOM_CACHE_DIR if set, else $HOME/.cache/loom; empty if neither is set.
using kernel_cache::DefaultCacheDir;

struct NativeCompileOptions {
  std::string compiler = DefaultCompiler();
  std::vector<std::string> flags = DefaultCompileFlags();
  bool openmp = false;  // adds -fopenmp
  // Links a BLAS library with CBLAS (the source calls cblas_dgemm):
  // $LOOM_BLAS if set (the path of a shared library), else the first found
  // of OpenBLAS built with OpenMP (Debian's libopenblas0-openmp, whose
  // threads are the kernels' own OpenMP threads), any OpenBLAS, the
  // system's libblas.so.3.
  bool link_blas = false;
  // Links oneDNN (the source calls dnnl_sgemm): $LOOM_DNNL if set, else
  // Debian's libdnnl.so.2 (libdnnl2, built with the same OpenMP runtime).
  bool link_dnnl = false;
  // Links BLIS if it is installed, for the f32 products that call it on
  // AVX2 (prelude.cc, kBlisDeclaration; the source is compiled with
  // -DLOOM_HAVE_BLIS): $LOOM_BLIS if set, else Debian's libblis4-openmp.
  // As needed: kernels whose products all call oneDNN do not load it.
  bool link_blis = false;
  // On aarch64, links SLEEF's vector libm (Debian's libsleef3:
  // libsleef.so.3) if installed, for the source's loops that call libm
  // (GeneratedSource::calls_sleef; the source is compiled with
  // kSleefDefine and calls it through prelude.cc's wrappers): $LOOM_SLEEF if
  // set. Without it those loops call libm once per element. Elsewhere
  // nothing: x86-64's glibc has libmvec.
  bool link_sleef = false;
  // Translation units the source calls into (GeneratedSource::
  // support_sources): each compiles with the same command into an object,
  // cached as <cache_dir>/<hash>.o, that links into the library; one
  // compiled when loom was built (prebuilt_objects.h) is copied there
  // instead.
  std::vector<std::string> support_sources;
  std::string cache_dir = DefaultCacheDir();
  // Sets oneDNN up (WarmUpOneDnn) on another thread while the compiler
  // runs, for the kernels' first launch in this process; false where the
  // process will not run them (`loom compile`), whose compiler then keeps
  // both cores (lstm_l2_h64 cold, a 2-core Zen 4, medians of 10
  // alternations: 0.171 -> 0.151 s in a quiet hour, level in a noisy one).
  bool warm_up_dnnl = true;
};

// The linker arguments that link_blas and link_dnnl add, or a
// FailedPreconditionError naming what to install when the library is not
// found.
absl::StatusOr<std::vector<std::string>> BlasLinkArgs();
absl::StatusOr<std::vector<std::string>> DnnlLinkArgs();
// Those of link_blis: empty when BLIS is not installed.
absl::StatusOr<std::vector<std::string>> BlisLinkArgs();
// Those of link_sleef, found in `folders` (empty: the usual library
// folders), or empty when SLEEF is not installed. Where they are not empty,
// the source is compiled with kSleefDefine, which makes it declare the
// vector variants (prelude.h).
absl::StatusOr<std::vector<std::string>> SleefLinkArgs(absl::Span<const char* const> folders = {});
inline constexpr char kSleefDefine[] = "-DLOOM_HAVE_SLEEF";

// codegen-cpp's translation unit (or any) cut before each of its functions
// (each after a line `extern "C" void loom_f<N>` or `loom_m<N>`): the
// prelude, then one piece per function; the prelude alone when it holds
// none (a hand-written unit).
std::vector<std::string_view> SplitAtFunctions(std::string_view source);

// A shared object CompileAndLoad compiled or found in the cache, loaded.
struct CompiledLibrary {
  NativeLibrary library;       // its path() is the cached <cache_dir>/<hash>.so
  bool cache_hit = false;      // it came from the cache without compiling
  double compile_seconds = 0;  // wall time of the native compile; 0 on a cache hit
  // Compiled for other shapes as well: reads some of the source's shape
  // constants at run time (backends/cpp/shape_templates.h).
  bool shape_template = false;
};

// Compiles `source` (one C++ translation unit) into <cache_dir>/<hash>.so
// unless that is already cached, with the support sources' objects linked
// in, and loads it (RTLD_NOW | RTLD_LOCAL). The hash covers the source, the
// compiler command (compiler, flags, openmp), the support objects, and the
// host CPU when a flag asks for "native" code. Safe to call from
// several threads and processes sharing one cache: entries appear atomically.
// On a miss, a unit of codegen-cpp's functions (each after a line
// `extern "C" void loom_f<N>` or `loom_m<N>`) compiles in one part per
// core at once, each the prelude then some of its functions, with the support sources missing
// from the cache, and the objects are linked. A compile failure is an
// InternalError with the compiler's output, its exit status and the command
// line, naming the kernel functions of the failing part; a compiler that
// cannot be started is an error naming it.
absl::StatusOr<CompiledLibrary> CompileAndLoad(std::string_view source,
                                               const NativeCompileOptions& options);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_NATIVE_COMPILER_H_
