#include "backends/cpp/aarch64_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/cpp/artifact.h"
#include "backends/cpp/native_compiler.h"
#include "backends/cpp/subprocess.h"
#include "ir/dtype.h"
#include "ir/file_io.h"
#include "ir/index_error.h"
#include "ir/status_macros.h"
#include "re2/re2.h"
#include "runtime/artifact.pb.h"

namespace loom::cpp {
namespace {

namespace rproto = runtime::proto;

constexpr char kCrossCompiler[] = "aarch64-linux-gnu-g++";
constexpr char kQemu[] = "qemu-aarch64";
constexpr char kSysroot[] = "/usr/aarch64-linux-gnu";  // the cross toolchain's libraries
// The runner takes its libraries from there first. SLEEF's arm64 package
// brings Debian's arm64 C library along (in /lib/aarch64-linux-gnu), which
// the loader would otherwise find first and which does not match the cross
// toolchain's loader: the runner hung.
constexpr char kLibraryPath[] = "LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib";
// Debian's multiarch folder of arm64 packages (SLEEF's libsleef3:arm64).
constexpr const char* kArmLibraryFolders[] = {"/usr/lib/aarch64-linux-gnu"};
constexpr char kRunnerSource[] = "backends/cpp/aarch64_runner.cc";  // in the runfiles
constexpr int kIndexErrorStatus = 3;  // the runner's exit status for a failed index check

// Starts `argv` and waits for it; an error says what installs a missing
// program.
absl::StatusOr<ProcessResult> Start(const std::vector<std::string>& argv,
                                    const std::string& scratch_dir) {
  absl::StatusOr<ProcessResult> result = RunProcess(argv, scratch_dir);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(FormatCommandLine(argv), ": ", result.status().message(),
                                     " (Debian's g++-aarch64-linux-gnu and qemu-user run Arm's "
                                     "kernels here; ./bazelw installs them)"));
  }
  return result;
}

absl::Status Failed(const std::vector<std::string>& argv, const ProcessResult& result) {
  return absl::InternalError(
      absl::StrCat(FormatCommandLine(argv), ": ", result.Ending(), "\n", result.output));
}

// Runs `argv`; an error names the command and carries its output.
absl::Status Run(const std::vector<std::string>& argv, const std::string& scratch_dir) {
  LOOM_ASSIGN_OR_RETURN(ProcessResult result, Start(argv, scratch_dir));
  return result.Succeeded() ? absl::OkStatus() : Failed(argv, result);
}

// The runner, cross-compiled once per process.
absl::StatusOr<std::string> Runner(const std::string& scratch_dir) {
  static std::mutex mutex;
  static std::string* runner = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (runner != nullptr) return *runner;
  const std::string path = absl::StrCat(scratch_dir, "/aarch64_runner");
  LOOM_RETURN_IF_ERROR(
      Run({kCrossCompiler, "-O2", "-std=c++17", kRunnerSource, "-o", path, "-ldl"}, scratch_dir));
  runner = new std::string(path);
  return *runner;
}

// The runner's plan (aarch64_runner.cc) of `artifact`, whose weights and
// inputs it writes into `dir`.
absl::StatusOr<std::string> WritePlan(const rproto::Artifact& artifact, const Graph& graph,
                                      absl::Span<const Tensor> inputs, const std::string& dir) {
  std::string plan = absl::StrCat("arena ", artifact.arena_bytes(), "\n");
  for (int b = 0; b < artifact.buffers_size(); ++b) {
    const rproto::Buffer& buffer = artifact.buffers(b);
    LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(buffer.dtype()));
    absl::StrAppend(&plan, "buffer ",
                    absl::AsciiStrToLower(rproto::Buffer::Kind_Name(buffer.kind())), " ",
                    buffer.elements() * DTypeSize(dtype), " ", buffer.arena_offset(), "\n");
    if (buffer.kind() == rproto::Buffer::WEIGHT) {
      const std::string path = absl::StrCat(dir, "/weight_", b, ".bin");
      LOOM_RETURN_IF_ERROR(WriteFileBytes(path, buffer.data()));
      absl::StrAppend(&plan, "load ", b, " ", path, "\n");
    }
  }
  for (int i = 0; i < artifact.inputs_size(); ++i) {
    const rproto::TensorSpec& spec = artifact.inputs(i);
    const ValueId id = graph.FindValue(spec.name());
    const auto at = std::find(graph.inputs().begin(), graph.inputs().end(), id);
    if (at == graph.inputs().end() || inputs.size() != graph.inputs().size()) {
      return absl::InvalidArgumentError(absl::StrCat("no input '", spec.name(), "' given"));
    }
    const Tensor& tensor = inputs[at - graph.inputs().begin()];
    const std::string path = absl::StrCat(dir, "/input_", i, ".bin");
    LOOM_RETURN_IF_ERROR(WriteFileBytes(
        path, absl::string_view(static_cast<const char*>(tensor.data()), tensor.num_bytes())));
    absl::StrAppend(&plan, "load ", spec.buffer(), " ", path, "\n");
  }
  for (const std::string& function : artifact.functions()) {
    absl::StrAppend(&plan, "function ", function, "\n");
  }
  for (const rproto::Launch& launch : artifact.launches()) {
    absl::StrAppend(&plan, "launch ", launch.function(), " ", launch.buffer_size());
    for (int a = 0; a < launch.buffer_size(); ++a) {
      absl::StrAppend(&plan, " ", launch.buffer(a), " ", launch.offset(a));
    }
    absl::StrAppend(&plan, "\n");
  }
  for (int i = 0; i < artifact.outputs_size(); ++i) {
    absl::StrAppend(&plan, "store ", artifact.outputs(i).buffer(), " ", dir, "/output_", i,
                    ".bin\n");
  }
  return plan;
}

absl::StatusOr<const GeneratedSource*> CppSource(const Module& module) {
  if (!module.source.has_value() || module.source->language != "c++") {
    return absl::FailedPreconditionError("the module has no C++ source");
  }
  return &*module.source;
}

// A new directory under `parent`, for one compile or run.
absl::StatusOr<std::string> NewScratchDir(const std::string& parent) {
  static std::atomic<int> count{0};
  const std::string dir = absl::StrCat(parent, "/aarch64_", getpid(), "_", count++);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  return dir;
}

// `source` cross-compiled into `dir`/kernels.so: its path.
absl::StatusOr<std::string> CompileInto(const GeneratedSource& source, const std::string& dir) {
  const std::string model = dir + "/model.cc", kernels = dir + "/kernels.so";
  LOOM_RETURN_IF_ERROR(WriteFileBytes(model, StandaloneText(source)));
  std::vector<std::string> compile = {kCrossCompiler};
  compile.insert(compile.end(), source.native_flags.begin(), source.native_flags.end());
  std::vector<std::string> libraries;
  if (source.calls_sleef) {
    LOOM_ASSIGN_OR_RETURN(libraries, SleefLinkArgs(kArmLibraryFolders));
    if (libraries.empty()) {
      return absl::FailedPreconditionError(
          "the kernels call libm in loops, and SLEEF's vector functions for Arm are not "
          "installed (Debian's libsleef3:arm64; ./bazelw installs it)");
    }
    compile.push_back(kSleefDefine);
  }
  compile.insert(compile.end(), {model, "-o", kernels});
  compile.insert(compile.end(), libraries.begin(), libraries.end());
  LOOM_RETURN_IF_ERROR(Run(compile, dir));
  return kernels;
}

// The runtime's error for the runner's report of a failed index check,
// "index_error CHECK INDEX".
absl::Status IndexError(const rproto::Artifact& artifact, const std::string& output) {
  int64_t check = -1, index = 0;
  if (!RE2::PartialMatch(output, R"(index_error (\d+) (-?\d+))", &check, &index) ||
      check >= artifact.index_checks_size()) {
    return absl::InternalError(absl::StrCat("the runner's index error is unreadable: ", output));
  }
  const rproto::IndexCheck& site = artifact.index_checks(static_cast<int>(check));
  return absl::InvalidArgumentError(
      IndexOutOfRangeMessage(site.node(), site.op(), index, site.axis(), site.size()));
}

absl::StatusOr<Tensor> ReadOutput(const rproto::TensorSpec& spec, const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(spec.dtype()));
  Tensor output(dtype, Shape(spec.shape().begin(), spec.shape().end()));
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  if (static_cast<int64_t>(bytes.size()) != output.num_bytes()) {
    return absl::InternalError(absl::StrCat(path, " has ", bytes.size(), " bytes, output '",
                                            spec.name(), "' ", output.num_bytes()));
  }
  std::memcpy(output.data(), bytes.data(), bytes.size());
  return output;
}

}  // namespace

bool IsAarch64March(const std::string& march) { return absl::StartsWith(march, "armv8"); }

absl::StatusOr<std::string> CompileForAarch64(const Module& module,
                                              const std::string& scratch_dir) {
  LOOM_ASSIGN_OR_RETURN(const GeneratedSource* source, CppSource(module));
  LOOM_ASSIGN_OR_RETURN(std::string dir, NewScratchDir(scratch_dir));
  return CompileInto(*source, dir);
}

absl::StatusOr<std::vector<Tensor>> RunOnAarch64(const Module& module,
                                                 absl::Span<const std::string> output_names,
                                                 absl::Span<const Tensor> inputs,
                                                 const std::string& scratch_dir) {
  LOOM_ASSIGN_OR_RETURN(const GeneratedSource* cpp, CppSource(module));
  const GeneratedSource& source = *cpp;
  if (source.calls_blas || source.calls_dnnl || !source.support_sources.empty()) {
    return absl::UnimplementedError("the kernels call a library, which aarch64's toolchain lacks");
  }
  LOOM_ASSIGN_OR_RETURN(rproto::Artifact artifact, MakeArtifact(module, "", output_names));
  LOOM_ASSIGN_OR_RETURN(std::string runner, Runner(scratch_dir));
  LOOM_ASSIGN_OR_RETURN(std::string dir, NewScratchDir(scratch_dir));
  LOOM_ASSIGN_OR_RETURN(std::string kernels, CompileInto(source, dir));

  LOOM_ASSIGN_OR_RETURN(std::string plan, WritePlan(artifact, module.graph, inputs, dir));
  const std::string plan_path = dir + "/plan.txt";
  LOOM_RETURN_IF_ERROR(WriteFileBytes(plan_path, plan));
  const std::vector<std::string> run = {kQemu,        "-L",   kSysroot,  "-E",
                                        kLibraryPath, runner, plan_path, kernels};
  LOOM_ASSIGN_OR_RETURN(ProcessResult result, Start(run, dir));
  if (WIFEXITED(result.wait_status) && WEXITSTATUS(result.wait_status) == kIndexErrorStatus) {
    return IndexError(artifact, result.output);
  }
  if (!result.Succeeded()) return Failed(run, result);

  std::vector<Tensor> outputs;
  for (int i = 0; i < artifact.outputs_size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(
        Tensor output, ReadOutput(artifact.outputs(i), absl::StrCat(dir, "/output_", i, ".bin")));
    outputs.push_back(std::move(output));
  }
  std::filesystem::remove_all(dir);
  return outputs;
}

}  // namespace loom::cpp
