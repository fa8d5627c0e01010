#include "backends/cpp/native_compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "backends/common/kernel_cache.h"
#include "backends/cpp/prebuilt_objects.h"
#include "backends/cpp/subprocess.h"
#include "ir/file_io.h"
#include "ir/parallel.h"
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
  std::string dnnl_library;  // the path of oneDNN's library, where it links
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
    if (link_args == &DnnlLinkArgs) compiler.dnnl_library = args.front();
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

// Runs `compiler` on `inputs` into `output` (through a temporary file and a
// rename). `what` names the unit in errors.
absl::Status Compile(const CompilerCommand& compiler, const std::vector<std::string>& inputs,
                     const std::string& output, const std::string& cache_dir,
                     absl::string_view what) {
  const std::string temp = TempPathFor(output);
  std::vector<std::string> command = compiler.command;
  command.insert(command.end(), {"-o", temp});
  command.insert(command.end(), inputs.begin(), inputs.end());
  command.insert(command.end(), compiler.objects.begin(), compiler.objects.end());
  command.insert(command.end(), compiler.libraries.begin(), compiler.libraries.end());
  if (!compiler.libraries_as_needed.empty()) {
    command.push_back("-Wl,--as-needed");
    command.insert(command.end(), compiler.libraries_as_needed.begin(),
                   compiler.libraries_as_needed.end());
    command.push_back("-Wl,--no-as-needed");
  }
  absl::StatusOr<ProcessResult> result = RunProcess(command, cache_dir, kMaxCompilerOutputBytes);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat("C++ compiler '", command[0],
                                     "' could not be run: ", result.status().message(),
                                     "; set NativeCompileOptions.compiler or $CXX"));
  }
  if (!result->Succeeded()) {
    unlink(temp.c_str());
    return absl::InternalError(
        absl::StrCat("native compile of ", what, " failed (", result->Ending(),
                     ")\ncommand: ", FormatCommandLine(command), "\n", result->output));
  }
  if (rename(temp.c_str(), output.c_str()) != 0) {
    absl::Status status = ErrnoError(absl::StrCat("rename to ", output, " from"), temp);
    unlink(temp.c_str());
    return status;
  }
  return absl::OkStatus();
}

// Whether `path` exists (an error for anything but its absence).
absl::StatusOr<bool> Exists(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0) return true;
  if (errno != ENOENT) return ErrnoError("stat", path);
  return false;
}

// `library`'s command for objects: -c instead of -shared, nothing linked.
CompilerCommand ObjectCommand(const CompilerCommand& library) {
  CompilerCommand compiler;
  for (const std::string& arg : library.command) {
    if (arg != "-shared") compiler.command.push_back(arg);
  }
  compiler.command.push_back("-c");
  return compiler;
}

// `library`, linking with GNU gold where binutils has it: gold linked
// lstm_l2_h64's two objects (and oneDNN) in 0.01 s, ld.bfd in 0.03-0.04.
CompilerCommand LinkCommand(const CompilerCommand& library) {
  static const bool has_gold = access("/usr/bin/ld.gold", X_OK) == 0;
  CompilerCommand link = library;
  if (has_gold) link.command.push_back("-fuse-ld=gold");
  return link;
}

// A translation unit to compile into an object, and what names it in
// errors.
struct ObjectJob {
  std::string source_path;
  std::string object_path;
  std::string what;
};

// Compiles every job's source into its object at once, a compiler process
// each, so that a library's objects compile on every core (a job whose
// thread cannot be started runs on the calling thread). Returns the first
// failure in job order.
absl::Status CompileObjects(const std::vector<ObjectJob>& jobs,
                            const CompilerCommand& object_command, const std::string& cache_dir) {
  std::vector<absl::Status> statuses(jobs.size());
  const int64_t count = static_cast<int64_t>(jobs.size());
  RunInParts(count, count, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const ObjectJob& job = jobs[i];
      statuses[i] =
          Compile(object_command, {job.source_path}, job.object_path, cache_dir, job.what);
    }
  });
  absl::Status status = absl::OkStatus();
  for (const absl::Status& job : statuses) status.Update(job);
  return status;
}

// The support sources' objects in the cache, <cache_dir>/<hash>.o (their
// paths name their content and command, so the libraries' cache keys cover
// them), and in `jobs` a job for each one not there yet, its source written;
// one compiled when loom was built (prebuilt_objects.h) is written there
// instead.
absl::StatusOr<std::vector<std::string>> SupportObjects(const std::vector<std::string>& sources,
                                                        const CompilerCommand& object_command,
                                                        const std::string& cache_dir,
                                                        std::vector<ObjectJob>& jobs) {
  std::vector<std::string> objects;
  for (const std::string& source : sources) {
    const std::string base = absl::StrCat(cache_dir, "/", CacheKey(source, object_command));
    objects.push_back(base + ".o");
    LOOM_ASSIGN_OR_RETURN(bool cached, Exists(objects.back()));
    if (cached) continue;
    if (std::optional<std::string_view> prebuilt =
            PrebuiltObjectFor(source, object_command.command, HostCpuFeatures())) {
      LOOM_RETURN_IF_ERROR(WriteFileAtomically(objects.back(), *prebuilt));
      continue;
    }
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(base + ".cc", source));
    jobs.push_back({base + ".cc", objects.back(), absl::StrCat("support source ", base, ".cc")});
  }
  return objects;
}

// codegen-cpp's translation unit is a prelude, then its functions, each
// starting with this text and then f<N> (a kernel function) or m<N> (a
// function its kernels call, declared in the prelude): UnitText in
// codegen.cc.
constexpr std::string_view kFunctionStart = "\nextern \"C\" void loom_";

bool StartsFunction(std::string_view source, size_t at) {
  const size_t name = at + kFunctionStart.size();
  return name + 1 < source.size() && (source[name] == 'f' || source[name] == 'm') &&
         absl::ascii_isdigit(source[name + 1]);
}

// A translation unit of some of the kernel functions, and their names.
struct PartUnit {
  std::string text;
  std::vector<std::string> functions;
};

// The name of the function that `piece` (from kFunctionStart) defines.
std::string_view FunctionName(std::string_view piece) {
  piece.remove_prefix(kFunctionStart.size() - std::string_view("loom_").size());
  return piece.substr(0, piece.find('('));
}

// The kernel functions (pieces[1...]) dealt into at most `parts` units of
// about equal size, largest first, each the prelude then its functions in
// the source's order.
std::vector<PartUnit> PartitionFunctions(const std::vector<std::string_view>& pieces,
                                         size_t parts) {
  std::vector<size_t> order(pieces.size() - 1);
  std::iota(order.begin(), order.end(), 1);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pieces[a].size() > pieces[b].size(); });
  std::vector<std::vector<size_t>> members(std::min(parts, order.size()));
  std::vector<size_t> sizes(members.size(), 0);
  for (size_t piece : order) {
    const size_t part = std::min_element(sizes.begin(), sizes.end()) - sizes.begin();
    members[part].push_back(piece);
    sizes[part] += pieces[piece].size();
  }
  std::vector<PartUnit> units;
  for (std::vector<size_t>& functions : members) {
    std::sort(functions.begin(), functions.end());
    PartUnit& unit = units.emplace_back();
    unit.text = std::string(pieces[0]);
    for (size_t piece : functions) {
      unit.text.append(pieces[piece]);
      unit.functions.emplace_back(FunctionName(pieces[piece]));
    }
  }
  return units;
}

// In `jobs`, the units of `source`'s kernels, each compiled into an object
// of this compile's own (`scratch`, a path no other compile uses): <base>.cc
// (which holds `source`) where it defines at most one kernel function or
// the machine has one core, else its functions dealt into a unit per core.
// Returns the part units' paths.
absl::StatusOr<std::vector<std::string>> KernelUnits(std::string_view source,
                                                     const std::string& base,
                                                     const std::string& scratch,
                                                     std::vector<ObjectJob>& jobs) {
  const std::vector<std::string_view> pieces = SplitAtFunctions(source);
  const size_t cores = HardwareThreads();
  if (pieces.size() <= 2 || cores == 1) {
    jobs.push_back({base + ".cc", scratch + ".o", base + ".cc"});
    return std::vector<std::string>{};
  }
  std::vector<std::string> paths;
  const std::vector<PartUnit> units = PartitionFunctions(pieces, cores);
  for (size_t i = 0; i < units.size(); ++i) {
    const std::string path = absl::StrCat(scratch, ".part", i);
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(path + ".cc", units[i].text));
    jobs.push_back({path + ".cc", path + ".o",
                    absl::StrCat("kernel functions ", absl::StrJoin(units[i].functions, ", "))});
    paths.push_back(path + ".cc");
  }
  return paths;
}

// Compiles the kernels' units and the support sources not yet in the cache
// at once, then links the kernels' objects with `command` (which lists the
// support objects) into <base>.so. The kernels' units and objects are
// removed.
absl::Status CompileLibrary(std::string_view source, const CompilerCommand& command,
                            std::vector<ObjectJob> jobs, const std::string& base,
                            const std::string& cache_dir) {
  const size_t support_jobs = jobs.size();
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string> scratch_files,
                        KernelUnits(source, base, TempPathFor(base), jobs));
  std::vector<std::string> kernel_objects;
  for (size_t i = support_jobs; i < jobs.size(); ++i) kernel_objects.push_back(jobs[i].object_path);
  absl::Status status = CompileObjects(jobs, ObjectCommand(command), cache_dir);
  if (status.ok()) {
    status = Compile(LinkCommand(command), kernel_objects, base + ".so", cache_dir, base + ".so");
  }
  scratch_files.insert(scratch_files.end(), kernel_objects.begin(), kernel_objects.end());
  for (const std::string& file : scratch_files) unlink(file.c_str());
  return status;
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

std::vector<std::string_view> SplitAtFunctions(std::string_view source) {
  std::vector<std::string_view> pieces;
  size_t begin = 0;
  for (size_t at = source.find(kFunctionStart); at != std::string_view::npos;
       at = source.find(kFunctionStart, at + 1)) {
    if (!StartsFunction(source, at)) continue;
    pieces.push_back(source.substr(begin, at - begin));
    begin = at;
  }
  pieces.push_back(source.substr(begin));
  return pieces;
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
  if (options.openmp || absl::c_linear_search(options.flags, "-fopenmp")) {
    LOOM_RETURN_IF_ERROR(PinOpenMpRuntime());
  }
  LOOM_ASSIGN_OR_RETURN(CompilerCommand command, MakeCompilerCommand(options));
  PinCalledLibraries(command.libraries);
  LOOM_RETURN_IF_ERROR(MakeDirs(options.cache_dir));
  std::vector<ObjectJob> jobs;
  LOOM_ASSIGN_OR_RETURN(
      command.objects,
      SupportObjects(options.support_sources, ObjectCommand(command), options.cache_dir, jobs));
  const std::string base = absl::StrCat(options.cache_dir, "/", CacheKey(source, command));
  const std::string library_path = base + ".so";
  const std::string source_path = base + ".cc";

  LOOM_ASSIGN_OR_RETURN(bool cached_entry, Exists(library_path));
  if (cached_entry) {
    absl::StatusOr<NativeLibrary> cached = NativeLibrary::Open(library_path);
    if (cached.ok()) return CompiledLibrary{*std::move(cached), /*cache_hit=*/true};
    // A corrupt entry (truncated on a full disk, damaged by hand): drop it
    // and build it again.
    if (unlink(library_path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("unlink of a corrupt cache entry", library_path);
    }
  }

  if (absl::Status status = WriteFileAtomically(source_path, source); !status.ok()) {
    return status;
  }
  const auto start = std::chrono::steady_clock::now();
  // oneDNN's setup (WarmUpOneDnn) on another thread while the compiler
  // runs, rather than in the kernels' first launch (30 ms -> 1 ms for
  // lstm_l2_h64 through torch.compile; its kernels ready about 15 ms sooner
  // on two cores, where the compiler's own processes lose a core to it).
  absl::Status compiled_status;
  const std::function<void()> work[] = {
      [&] {
        compiled_status = CompileLibrary(source, command, std::move(jobs), base, options.cache_dir);
      },
      [&] { WarmUpOneDnn(command.dnnl_library); }};
  const int64_t parts = command.dnnl_library.empty() || !options.warm_up_dnnl ? 1 : 2;
  RunInParts(parts, parts, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) work[i]();
  });
  LOOM_RETURN_IF_ERROR(compiled_status);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  absl::StatusOr<NativeLibrary> compiled = NativeLibrary::Open(library_path);
  if (!compiled.ok()) {
    return absl::InternalError(
        absl::StrCat("freshly compiled library cannot be loaded: ", compiled.status().message()));
  }
  return CompiledLibrary{*std::move(compiled), /*cache_hit=*/false, seconds};
}

}  // namespace loom::cpp
