#ifndef LOOM_COMPILER_DRIVER_H_
#define LOOM_COMPILER_DRIVER_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "backends/cpp/executable.h"
#include "backends/cuda/executable.h"
#include "frontends/onnx/onnx_importer.h"
#include "ir/module.h"
#include "ir/report.pb.h"
#include "ir/tensor.h"
#include "passes/pass_manager.h"

namespace loom {

// What `loom compile` and `loom run` do, as a library the command line and
// the tests share.

struct CompileOptions {
  std::string model;             // a .pbtxt graph or an .onnx model
  std::string pipeline = "cpu";  // a built-in name or a pipeline file
  // The pipeline's text, where `pipeline` only names it (a model compiled
  // for every shape keeps the text it was compiled with).
  std::string pipeline_text;
  // Sizes of the model's named input dims (NamedDimOptions::dims),
  // their bounds (::dim_bounds), and shapes of its inputs that bind them
  // (::input_shapes).
  absl::flat_hash_map<std::string, int64_t> dims;
  absl::flat_hash_map<std::string, DimBounds> dim_bounds;
  absl::flat_hash_map<std::string, Shape> input_shapes;
  // Options of the pipeline's passes to replace (PassOptionsOverride).
  std::vector<PassOptionsOverride> pass_options;
  std::string out_dir;     // where to write the emitted source and model.loom
  std::string dump_after;  // re2 pattern of passes to dump after
  std::string dump_dir;
  std::string cache_dir;       // empty: the runtime's default
  bool native_compile = true;  // false: stop after emitting source
  // false: this process will not run the model (`loom compile`), so the
  // native compile does not set up oneDNN for a first launch meanwhile.
  bool runs_here = true;
  // Verify the IR after every pass (RunOptions::verify_each). Off by
  // default: it re-checks the whole graph and loop program once per pass,
  // which costs about as much as the passes themselves; tests turn it on.
  bool verify_each = false;
  // Keep a copy of the graph as imported (CompiledModel::input_graph), the
  // reference of RunModelOptions::check: the pipeline's lowering consumes
  // the module's.
  bool keep_input_graph = false;
  // Once the compile has run a second, one line on stderr naming its stage
  // (each pass, then the native compile), its time so far and the peak
  // memory, rewritten in place and erased at the end. For a terminal.
  bool progress = false;
  // Record the decisions that ExplainFusion reads beyond the fuser's
  // (Module::record_decisions): lowering's inlining.
  bool record_decisions = false;
};

struct CompiledModel {
  Module module;
  // The graph's output names as imported (passes may rename the values).
  std::vector<std::string> output_names;
  std::optional<Graph> input_graph;              // with CompileOptions::keep_input_graph
  std::optional<cpp::CppExecutable> executable;  // after a native compile
  // The cuda pipeline's instead (needs no GPU until its first run).
  std::optional<cuda::CudaExecutable> cuda_executable;
  proto::Report report;
};

// Wall time since `start`, in seconds.
double SecondsSince(std::chrono::steady_clock::time_point start);

// The model options.model names, imported as CompileModel imports it (an
// .onnx file with the options' dims, else a graph text proto).
absl::StatusOr<Graph> ImportModel(const CompileOptions& options);

// Imports the model, runs the pipeline, writes the source to out_dir (if
// set) and compiles it natively. Fills the compile fields of the report.
absl::StatusOr<CompiledModel> CompileModel(const CompileOptions& options);

// CompileModel for a graph already in memory (options.model only names it
// in the report); `start` is when its import began, for frontend_seconds.
absl::StatusOr<CompiledModel> CompileGraph(
    Graph graph, const CompileOptions& options,
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());

// The native compile CompileGraph ends with, of a model compiled with
// native_compile false: a C++ executable, whose artifact goes to out_dir,
// or a CUDA one (NVRTC compiles for the device on the first run: no GPU
// needed here). Fills the report's native compile fields.
absl::Status CompileNatively(const CompileOptions& options, CompiledModel& compiled);

struct RunModelOptions {
  // <input name>.npy files (or .bin files of raw bytes); empty: random.
  std::string inputs_dir;
  // Judge the outputs by the --check rule (compiler/check.h) for the model as
  // imported (needs CompileOptions::keep_input_graph).
  bool check = false;
  int iters = 1;
  int warmup = 0;         // untimed runs before the `iters` timed ones
  bool roofline = false;  // measure copy bandwidth in the same process
  // After the timed runs, `iters` more with each launch timed: the
  // report's kernel_times (CPU pipelines only).
  bool profile = false;
  uint64_t seed = 1;  // for random inputs
};

// Runs a compiled model `warmup` times untimed, then `iters` times; fills the run fields of the
// report (check is "pass", "fail" or "skipped").
absl::Status RunModel(CompiledModel& compiled, const RunModelOptions& options);

// `loom run` of an artifact (D/model.loom from `loom compile --out_dir=D`):
// loads it without the compiler, runs it as RunModel does (no --check: an
// artifact holds no reference) and fills the run fields of `report`.
absl::Status RunArtifact(const std::string& path, const RunModelOptions& options,
                         proto::Report& report);
// RunArtifact of a model already loaded from the artifact at `path`.
absl::Status RunArtifact(const Model& model, const std::string& path,
                         const RunModelOptions& options, proto::Report& report);

// Every fusion decision that involves a compute node named `node`, one per
// line: "fused with 'b' (vertical)" or "not fused with 'b': reason (detail)";
// and, where the compile recorded them (CompileOptions::record_decisions),
// lowering's: the values inlined into `node`, or where `node`, an inlined
// value, went, or why it was stored.
std::string ExplainFusion(const Module& module, const std::string& node);

// The report as JSON with the proto's snake_case field names.
std::string ReportToJson(const proto::Report& report);

}  // namespace loom

#endif  // LOOM_COMPILER_DRIVER_H_
