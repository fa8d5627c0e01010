#include "compiler/driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "backends/cpp/artifact.h"
#include "compiler/check.h"
#include "frontends/onnx/onnx_importer.h"
#include "google/protobuf/util/json_util.h"
#include "ir/file_io.h"
#include "ir/graph_io.h"
#include "ir/parallel.h"
#include "ir/status_macros.h"
#include "passes/pass_manager.h"

namespace loom {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {

std::string TargetName(proto::Target target) { return target == proto::CUDA ? "cuda" : "cpu"; }

// Bytes the model must move at the least: its inputs, weights and outputs.
int64_t MinBytes(const Graph& graph) {
  int64_t bytes = 0;
  auto add = [&](const std::vector<ValueId>& ids) {
    for (ValueId id : ids) {
      const TensorType& type = graph.value(id).type;
      bytes += NumBytes(type.dtype, type.shape);
    }
  };
  add(graph.inputs());
  add(graph.weights());
  add(graph.constants());
  add(graph.outputs());
  return bytes;
}

// Refuses a model whose buffers (inputs, weights, outputs, and temporaries:
// the planned arena, or each on its own) need more bytes than the machine
// has memory. Sums in double: cannot overflow.
absl::Status CheckBuffersFitInMemory(const Module& module) {
  if (!module.loops.has_value()) return absl::OkStatus();
  const bool planned = module.schedule.has_value() && module.schedule->memory.has_value();
  double bytes = planned ? module.schedule->memory->arena_bytes : 0;
  for (const Buffer& buffer : module.loops->buffers) {
    if (planned && buffer.kind == BufferKind::kTemp) continue;
    bytes += static_cast<double>(NumElements(buffer.sizes)) * DTypeSize(buffer.dtype);
  }
  return CheckFitsInMemory(bytes, "the model's buffers");
}

// A STREAM-style copy over arrays much larger than the caches, in GB/s
// (bytes read plus bytes written). Every hardware thread copies its own
// part, as STREAM's OpenMP build does and as the kernels run: one thread
// alone does not reach the memory system's bandwidth. `--roofline` copies
// once after each timed run of the model and takes the median, so that the
// two medians see the same moments of a shared machine.
class CopyBandwidth {
 public:
  CopyBandwidth() : src_(kElements, 1.0f), dst_(kElements, 0.0f) {}

  // Copies once, keeping its GB/s.
  void Measure() {
    const auto copy_part = [&](int64_t first, int64_t last) {
      std::memcpy(dst_.data() + first, src_.data() + first, (last - first) * sizeof(float));
    };
    const auto start = std::chrono::steady_clock::now();
    RunInParts(kElements, HardwareThreads(), copy_part);
    gbps_.push_back(2.0 * kElements * sizeof(float) / SecondsSince(start) / 1e9);
  }

  double MedianGbps() {
    std::sort(gbps_.begin(), gbps_.end());
    return gbps_.empty() ? 0 : gbps_[gbps_.size() / 2];
  }

 private:
  static constexpr int64_t kElements = int64_t{32} << 20;  // 128 MiB of floats each
  std::vector<float> src_, dst_;
  std::vector<double> gbps_;
};

// RunModelOptions::profile: `runs` runs of `run_once`, which adds each
// launch's time to its element of the span, then each kernel function's
// mean time per run into the report, costliest first.
absl::Status ProfileLaunches(const Model& model, int runs,
                             const std::function<absl::Status(absl::Span<double>)>& run_once,
                             proto::Report& report) {
  std::vector<double> seconds(model.launches(), 0.0);
  for (int i = 0; i < runs; ++i) LOOM_RETURN_IF_ERROR(run_once(absl::MakeSpan(seconds)));
  struct FunctionTime {
    std::string function;
    int launches = 0;
    double seconds = 0;
    int costliest = -1;  // its launch that took longest
  };
  std::vector<FunctionTime> functions;
  absl::flat_hash_map<std::string, size_t> index_of;
  double total = 0;
  for (int l = 0; l < model.launches(); ++l) {
    const auto [it, added] = index_of.try_emplace(model.launch_function(l), functions.size());
    if (added) functions.push_back({model.launch_function(l)});
    FunctionTime& f = functions[it->second];
    ++f.launches;
    f.seconds += seconds[l];
    total += seconds[l];
    if (f.costliest < 0 || seconds[l] > seconds[f.costliest]) f.costliest = l;
  }
  std::stable_sort(
      functions.begin(), functions.end(),
      [](const FunctionTime& a, const FunctionTime& b) { return a.seconds > b.seconds; });
  for (const FunctionTime& f : functions) {
    proto::Report::KernelTime& out = *report.add_kernel_times();
    out.set_function(f.function);
    out.set_launches(f.launches);
    out.set_seconds(f.seconds / runs);
    out.set_share(total > 0 ? f.seconds / total : 0);
    out.set_label(model.launch_label(f.costliest));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> ImportModel(const CompileOptions& options) {
  // The model's format follows its extension: .onnx is an ONNX model,
  // anything else loom's graph text proto.
  NamedDimOptions dims;
  dims.dims = options.dims;
  dims.dim_bounds = options.dim_bounds;
  dims.input_shapes = options.input_shapes;
  if (!absl::EndsWith(options.model, ".onnx")) return LoadGraphFile(options.model, dims);
  OnnxImportOptions onnx_options;
  static_cast<NamedDimOptions&>(onnx_options) = std::move(dims);
  return LoadOnnxFile(options.model, onnx_options);
}

absl::StatusOr<CompiledModel> CompileModel(const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  LOOM_ASSIGN_OR_RETURN(Graph graph, ImportModel(options));
  return CompileGraph(std::move(graph), options, start);
}

namespace {

// CompileOptions::progress.
class ProgressLine {
 public:
  ProgressLine(bool enabled, std::chrono::steady_clock::time_point start)
      : enabled_(enabled), start_(start) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() {
    if (shown_) std::fputs("\r\033[K", stderr);
  }

  void Stage(absl::string_view stage) {
    const double seconds = SecondsSince(start_);
    if (!enabled_ || seconds < 1.0) return;
    shown_ = true;
    std::fprintf(stderr, "\r\033[Kloom: %.*s, %.1f s, peak %lld MB", static_cast<int>(stage.size()),
                 stage.data(), seconds, static_cast<long long>(PeakResidentBytes() >> 20));
    std::fflush(stderr);
  }

 private:
  const bool enabled_;
  const std::chrono::steady_clock::time_point start_;
  bool shown_ = false;
};

// Kernels, fused pairs and the refused pairs by reason, into the report.
void ReportFusion(const Schedule& schedule, proto::Report& report) {
  report.set_kernels(schedule.kernels.size());
  int fused_pairs = 0;
  std::map<FusionReason, int> refusals;
  for (const FusionDecision& decision : schedule.decisions) {
    if (decision.fused()) {
      ++fused_pairs;
    } else {
      ++refusals[decision.reason];
    }
  }
  report.set_fused_pairs(fused_pairs);
  std::map<absl::string_view, int> by_text;  // sorted: a deterministic report
  for (const auto& [reason, count] : refusals) {
    by_text[FusionReasonText(reason)] = count;
  }
  for (const auto& [reason, count] : by_text) {
    proto::Report::FusionRefusals* entry = report.add_fusion_refusals();
    entry->set_reason(std::string(reason));
    entry->set_count(count);
  }
}

// The passes' timings and what the module's stages hold, into the report.
void ReportPipeline(const std::vector<PassRun>& runs, const Module& module, proto::Report& report) {
  for (const PassRun& run : runs) {
    proto::PassTiming* timing = report.add_passes();
    timing->set_name(run.name);
    timing->set_seconds(run.seconds);
    timing->set_changed(run.changed);
    timing->set_peak_resident_bytes(run.peak_resident_bytes);
  }
  if (module.loops.has_value()) {
    report.set_buffers(module.loops->buffers.size());
    report.set_inlined_values(module.loops->inlined_values);
  }
  if (module.schedule.has_value()) ReportFusion(*module.schedule, report);
  if (module.schedule.has_value() && module.schedule->memory.has_value()) {
    report.set_temp_bytes_unplanned(module.schedule->memory->unplanned_bytes);
    report.set_temp_bytes_planned(module.schedule->memory->arena_bytes);
  }
}

}  // namespace

absl::Status CompileNatively(const CompileOptions& options, CompiledModel& compiled) {
  const Module& module = compiled.module;
  if (absl::Status s = CheckBuffersFitInMemory(module); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(options.model, ": ", s.message()));
  }
  if (module.source->language == "cuda") {
    LOOM_ASSIGN_OR_RETURN(cuda::CudaExecutable executable,
                          options.cache_dir.empty()
                              ? cuda::CudaExecutable::Create(module)
                              : cuda::CudaExecutable::Create(module, options.cache_dir));
    compiled.cuda_executable.emplace(std::move(executable));
    return absl::OkStatus();
  }
  LOOM_ASSIGN_OR_RETURN(
      cpp::CppExecutable executable,
      cpp::CppExecutable::Create(
          module, options.cache_dir.empty() ? cpp::DefaultCacheDir() : options.cache_dir,
          options.runs_here));
  compiled.executable.emplace(std::move(executable));
  compiled.report.set_native_compile_seconds(compiled.executable->compile_seconds());
  compiled.report.set_cache_hit(compiled.executable->cache_hit());
  compiled.report.set_shape_template(compiled.executable->shape_template());
  if (options.out_dir.empty()) return absl::OkStatus();
  const std::filesystem::path path = std::filesystem::path(options.out_dir) / "model.loom";
  return cpp::WriteArtifact(module, compiled.output_names,
                            options.cache_dir.empty() ? cpp::DefaultCacheDir() : options.cache_dir,
                            path);
}

absl::StatusOr<CompiledModel> CompileGraph(Graph graph, const CompileOptions& options,
                                           std::chrono::steady_clock::time_point start) {
  ProgressLine progress(options.progress, start);
  CompiledModel compiled;
  proto::Report& report = compiled.report;
  report.set_model(options.model);
  report.set_pipeline(options.pipeline);
  LOOM_ASSIGN_OR_RETURN(
      LoadedPipeline pipeline,
      options.pipeline_text.empty()
          ? LoadPipeline(options.pipeline, options.pass_options)
          : LoadPipelineText(options.pipeline_text, options.pipeline, options.pass_options));
  report.set_target(TargetName(pipeline.target));
  if (options.keep_input_graph) compiled.input_graph = graph;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    compiled.output_names.push_back(graph.output_name(i));
  }
  compiled.module.graph = std::move(graph);
  compiled.module.record_decisions = options.record_decisions;
  report.set_graph_nodes(compiled.module.graph.nodes().size());

  loom::RunOptions run_options;
  run_options.verify_each = options.verify_each;
  run_options.dump_after = options.dump_after;
  run_options.dump_dir = options.dump_dir;
  run_options.before_pass = [&progress](absl::string_view pass) { progress.Stage(pass); };
  LOOM_ASSIGN_OR_RETURN(std::vector<PassRun> runs,
                        RunPipeline(pipeline, compiled.module, run_options));
  const Module& module = compiled.module;
  ReportPipeline(runs, module, report);
  if (!module.source.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(pipeline.name,
                     ": the pipeline emits no code (it must end with a "
                     "codegen pass such as 'codegen-cpp')"));
  }
  report.set_kernel_functions(module.source->kernel_functions);
  if (!options.out_dir.empty()) {
    LOOM_RETURN_IF_ERROR(CreateDirectories(options.out_dir));
    const bool cuda = module.source->language == "cuda";
    const std::filesystem::path path =
        std::filesystem::path(options.out_dir) / (cuda ? "model.cu" : "model.cc");
    LOOM_RETURN_IF_ERROR(WriteFileBytes(path, StandaloneText(*module.source)));
  }
  report.set_frontend_seconds(SecondsSince(start));
  report.set_min_bytes(MinBytes(module.graph));
  if (!options.native_compile) return compiled;
  progress.Stage("native compile");
  LOOM_RETURN_IF_ERROR(CompileNatively(options, compiled));
  return compiled;
}

absl::Status RunArtifact(const std::string& path, const RunModelOptions& options,
                         proto::Report& report) {
  LOOM_ASSIGN_OR_RETURN(Model model, Model::Load(path));
  return RunArtifact(model, path, options, report);
}

absl::Status RunArtifact(const Model& model, const std::string& path,
                         const RunModelOptions& options, proto::Report& report) {
  if (options.check) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": --check needs the model file (an artifact holds no reference graph)"));
  }
  if (options.iters < 1 || options.warmup < 0) {
    return absl::InvalidArgumentError("--iters must be at least 1 and --warmup at least 0");
  }
  Graph interface;  // the inputs alone, for MakeInputs
  for (const TensorInfo& info : model.inputs()) {
    LOOM_RETURN_IF_ERROR(
        interface.AddInput(info.name, TensorType{info.dtype, info.shape}).status());
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<Tensor> inputs,
                        MakeInputs(interface, options.inputs_dir, options.seed));
  std::vector<InputTensor> views;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& tensor = inputs[i];
    views.push_back({model.inputs()[i].name, tensor.dtype(), tensor.shape(), tensor.data()});
  }
  Model::Session session = model.NewSession();
  for (int i = 0; i < options.warmup; ++i) {
    LOOM_RETURN_IF_ERROR(session.Run(views));
  }
  std::optional<CopyBandwidth> copy;
  if (options.roofline) copy.emplace();
  std::vector<double> seconds;
  for (int i = 0; i < options.iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    LOOM_RETURN_IF_ERROR(session.Run(views));
    seconds.push_back(SecondsSince(start));
    if (copy.has_value()) copy->Measure();
  }
  if (options.profile) {
    LOOM_RETURN_IF_ERROR(ProfileLaunches(
        model, options.iters,
        [&](absl::Span<double> launch_seconds) { return session.Run(views, launch_seconds); },
        report));
  }
  std::sort(seconds.begin(), seconds.end());
  report.set_model(path);
  report.set_iters(options.iters);
  report.set_run_seconds_median(seconds[seconds.size() / 2]);
  report.set_check("skipped");
  int64_t bytes = 0;  // the interface's: an artifact does not say what its weights are
  for (const TensorInfo& info : model.inputs()) bytes += info.bytes();
  for (const TensorInfo& info : model.outputs()) bytes += info.bytes();
  report.set_min_bytes(bytes);
  if (copy.has_value()) report.set_stream_gbps(copy->MedianGbps());
  return absl::OkStatus();
}

absl::Status RunModel(CompiledModel& compiled, const RunModelOptions& options) {
  cuda::CudaExecutable* const gpu =
      compiled.cuda_executable.has_value() ? &*compiled.cuda_executable : nullptr;
  if (!compiled.executable.has_value() && gpu == nullptr) {
    return absl::FailedPreconditionError("the model was compiled without a native compile");
  }
  if (options.iters < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--iters must be at least 1, got ", options.iters));
  }
  if (options.warmup < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup must be at least 0, got ", options.warmup));
  }
  if (options.profile && gpu != nullptr) {
    return absl::InvalidArgumentError("--profile times the CPU pipelines' launches only");
  }
  if (options.check && !compiled.input_graph.has_value()) {
    return absl::FailedPreconditionError(
        "a check needs the model as imported: compile with keep_input_graph");
  }
  const Graph& graph = compiled.module.graph;
  LOOM_ASSIGN_OR_RETURN(std::vector<Tensor> inputs,
                        MakeInputs(graph, options.inputs_dir, options.seed));

  for (int i = 0; i < options.warmup; ++i) {
    LOOM_RETURN_IF_ERROR(gpu != nullptr ? gpu->Execute(inputs)
                                        : compiled.executable->Execute(inputs));
  }
  std::optional<CopyBandwidth> copy;
  if (options.roofline && gpu == nullptr) copy.emplace();
  std::vector<double> seconds;
  for (int i = 0; i < options.iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status =
        gpu != nullptr ? gpu->Execute(inputs) : compiled.executable->Execute(inputs);
    // On the GPU: the kernels' device time, without the copies in and out.
    seconds.push_back(gpu != nullptr ? gpu->kernel_seconds() : SecondsSince(start));
    if (!status.ok()) return status;
    if (copy.has_value()) copy->Measure();
  }
  const std::vector<Tensor> outputs =
      gpu != nullptr ? gpu->Outputs() : compiled.executable->Outputs();
  proto::Report& report = compiled.report;
  if (options.profile) {
    cpp::CppExecutable& executable = *compiled.executable;
    LOOM_RETURN_IF_ERROR(ProfileLaunches(
        executable.model(), options.iters,
        [&](absl::Span<double> launch_seconds) {
          return executable.Execute(inputs, launch_seconds);
        },
        report));
  }
  std::sort(seconds.begin(), seconds.end());
  report.set_iters(options.iters);
  report.set_run_seconds_median(seconds[seconds.size() / 2]);
  if (gpu != nullptr) {
    report.set_native_compile_seconds(gpu->compile_seconds());
    report.set_cache_hit(gpu->cache_hit());
  }
  if (options.roofline && gpu != nullptr) {
    LOOM_ASSIGN_OR_RETURN(double gbps, gpu->MeasureCopyBandwidth());
    report.set_stream_gbps(gbps);
  } else if (copy.has_value()) {
    report.set_stream_gbps(copy->MedianGbps());
  }

  if (!options.check) {
    report.set_check("skipped");
    return absl::OkStatus();
  }
  LOOM_ASSIGN_OR_RETURN(CheckResult check, CheckOutputs(*compiled.input_graph, inputs, outputs));
  report.set_max_abs_error(check.max_abs_error);
  report.set_max_rel_error(check.max_rel_error);
  report.set_check(check.pass ? "pass" : "fail");
  report.set_check_detail(check.worst);
  return absl::OkStatus();
}

namespace {

// Lowering's decision `d` in words, after "NODE: ".
std::string DescribeInlining(const LoopProgram& program, const InlineDecision& d) {
  switch (d.reason) {
    case InlineReason::kInlined: {
      if (d.readers.empty()) return "inlined, and nothing reads it";
      std::vector<std::string> readers;
      for (int32_t reader : d.readers) {
        readers.push_back(absl::StrCat("'", InlineReaderName(program, reader), "'"));
      }
      return absl::StrCat("inlined into ", absl::StrJoin(readers, ", "),
                          " (pointwise: its body of ", d.amount, " steps is copied into each ",
                          "reader's, and it has no buffer or compute node of its own)");
    }
    case InlineReason::kTooManySteps:
      return absl::StrCat("stored, not inlined: its body has ", d.amount, " steps > ", d.limit);
    case InlineReason::kTooManyReaders:
      return absl::StrCat("stored, not inlined: ", d.amount, " readers > ", d.limit,
                          " would each copy its body");
    case InlineReason::kReadRepeatedly:
      return absl::StrCat("stored, not inlined: its readers read ", d.amount, " elements of its ",
                          d.limit, " (inlined, it would be computed again)");
  }
  return "";
}

// Lowering's decision for the value of `node`, and the values it inlined
// into `node`, one line each.
std::string ExplainInlining(const LoopProgram& program, const std::string& node, int& found) {
  std::string text;
  for (const InlineDecision& d : program.inline_decisions) {
    if (d.node == node) {
      ++found;
      absl::StrAppend(&text, node, ": ", DescribeInlining(program, d), "\n");
    }
    for (int32_t reader : d.readers) {
      if (InlineReaderName(program, reader) != node) continue;
      ++found;
      absl::StrAppend(&text, node, ": inlines '", d.node, "' (its body copied into this one)\n");
    }
  }
  return text;
}

}  // namespace

std::string ExplainFusion(const Module& module, const std::string& node) {
  if (!module.schedule.has_value() || !module.loops.has_value()) {
    return "no schedule: the pipeline has no 'schedule' pass\n";
  }
  const std::vector<ComputeNode>& nodes = module.loops->nodes;
  int found = 0;
  std::string text = ExplainInlining(*module.loops, node, found);
  for (const FusionDecision& d : module.schedule->decisions) {
    const bool is_producer = nodes[d.producer].name == node;
    if (!is_producer && nodes[d.consumer].name != node) continue;
    ++found;
    const std::string& other = nodes[is_producer ? d.consumer : d.producer].name;
    const absl::string_view reason = FusionReasonText(d.reason);
    if (d.fused()) {
      absl::StrAppend(&text, node, ": fused with '", other, "' (", reason, ")\n");
    } else {
      const std::string detail = DescribeFusion(d, *module.schedule, *module.loops);
      absl::StrAppend(&text, node, ": not fused with '", other, "': ", reason,
                      detail.empty() ? "" : absl::StrCat(" (", detail, ")"), "\n");
    }
  }
  if (found == 0) {
    absl::StrAppend(&text, node,
                    ": no fusion candidates (or no compute node or inlined value of that name)\n");
  }
  return text;
}

std::string ReportToJson(const proto::Report& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(report, &json, options).ok()) {
    return "{}";
  }
  return json;
}

}  // namespace loom
