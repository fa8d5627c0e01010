#include "backends/cpp/artifact.h"

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "backends/cpp/shape_templates.h"
#include "ir/file_io.h"
#include "ir/status_macros.h"
#include "runtime/model.h"
#include "scheduler/plan_memory.h"

namespace loom::cpp {
namespace {

namespace rproto = runtime::proto;

// A plan that places a temporary outside the arena is a broken invariant,
// not something to run.
absl::Status CheckPlan(const LoopProgram& program, const MemoryPlan& plan) {
  if (plan.offsets.size() != program.buffers.size()) {
    return absl::InternalError(absl::StrCat("the memory plan has ", plan.offsets.size(),
                                            " offsets for ", program.buffers.size(), " buffers"));
  }
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const Buffer& buffer = program.buffers[id];
    const int64_t offset = plan.offsets[id];
    if (offset < 0) continue;
    if (buffer.kind != BufferKind::kTemp || offset % kArenaAlignment != 0 ||
        offset + BufferBytes(buffer) > plan.arena_bytes) {
      return absl::InternalError(absl::StrCat("the memory plan puts buffer '", buffer.name,
                                              "' at offset ", offset, " of an arena of ",
                                              plan.arena_bytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

// Buffers are allocated and addressed by byte counts: within the limits
// these cannot overflow.
absl::Status CheckBufferLimits(const LoopProgram& program) {
  for (const Buffer& buffer : program.buffers) {
    if (absl::Status s = CheckShapeLimits(buffer.sizes); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("buffer '", buffer.name, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

rproto::Buffer::Kind KindOf(const Buffer& buffer, const MemoryPlan* plan, BufferId id) {
  switch (buffer.kind) {
    case BufferKind::kInput:
      return rproto::Buffer::INPUT;
    case BufferKind::kWeight:
      return rproto::Buffer::WEIGHT;
    case BufferKind::kOutput:
      return rproto::Buffer::OUTPUT;
    case BufferKind::kIndexErrors:
      return rproto::Buffer::INDEX_ERRORS;
    case BufferKind::kTemp:
      break;
  }
  if (plan == nullptr) return rproto::Buffer::TEMP;
  // Internal buffers (offset -1) get no storage: no kernel touches them.
  return plan->offsets[id] < 0 ? rproto::Buffer::NONE : rproto::Buffer::ARENA;
}

void AddSpec(const Graph& graph, ValueId value, BufferId buffer,
             google::protobuf::RepeatedPtrField<rproto::TensorSpec>& specs,
             const LoopProgram& program) {
  rproto::TensorSpec& spec = *specs.Add();
  spec.set_name(graph.value(value).name);
  spec.set_dtype(std::string(DTypeName(program.buffers[buffer].dtype)));
  for (int64_t d : program.buffers[buffer].sizes) spec.add_shape(d);
  spec.set_buffer(buffer);
}

// A launch's label: its first compute nodes' names (a fused recurrence
// has thousands), and how many more it runs.
std::string LaunchLabel(absl::Span<const absl::string_view> nodes) {
  constexpr size_t kNamed = 4;
  if (nodes.size() <= kNamed) return absl::StrJoin(nodes, ", ");
  return absl::StrCat(absl::StrJoin(nodes.subspan(0, kNamed), ", "), " and ", nodes.size() - kNamed,
                      " more");
}

}  // namespace

NativeCompileOptions NativeOptions(const GeneratedSource& source, const std::string& cache_dir) {
  NativeCompileOptions options;
  options.flags = source.native_flags;
  options.link_blas = source.calls_blas;
  options.link_dnnl = source.calls_dnnl;
  options.link_blis = source.calls_dnnl;  // its large f32 products may call BLIS
  options.link_sleef = source.calls_sleef;
  options.support_sources = source.support_sources;
  options.cache_dir = cache_dir;
  return options;
}

absl::StatusOr<CompiledLibrary> CompileModule(const Module& module, const std::string& cache_dir,
                                              bool warm_up_dnnl) {
  if (!module.loops.has_value() || !module.source.has_value() || module.source->language != "c++") {
    return absl::FailedPreconditionError(
        "the pipeline emitted no C++ (does it end with 'codegen-cpp'?)");
  }
  LOOM_RETURN_IF_ERROR(CheckBufferLimits(*module.loops));
  NativeCompileOptions options = NativeOptions(*module.source, cache_dir);
  options.warm_up_dnnl = warm_up_dnnl;
  if (!ShapeTemplatesOn()) return CompileAndLoad(module.source->text, options);
  return CompileAndLoadForShapes(*module.source, options);
}

absl::StatusOr<rproto::Artifact> MakeArtifact(const Module& module, std::string shared_object,
                                              absl::Span<const std::string> output_names,
                                              bool weight_data) {
  if (!module.loops.has_value() || !module.source.has_value()) {
    return absl::FailedPreconditionError("the module has no loops or no source");
  }
  const LoopProgram& program = *module.loops;
  LOOM_RETURN_IF_ERROR(CheckBufferLimits(program));
  const GeneratedSource& source = *module.source;
  const MemoryPlan* plan = module.schedule.has_value() && module.schedule->memory.has_value()
                               ? &*module.schedule->memory
                               : nullptr;
  if (plan != nullptr) {
    LOOM_RETURN_IF_ERROR(CheckPlan(program, *plan));
  }
  rproto::Artifact artifact;
  artifact.set_model_name(module.graph.name);
  artifact.set_shared_object(std::move(shared_object));
  for (const std::string& flag : source.native_flags) artifact.add_native_flags(flag);
  if (absl::c_any_of(source.native_flags,
                     [](const std::string& f) { return absl::EndsWith(f, "=native"); })) {
    artifact.set_cpu_features(HostCpuFeatures());
  }
  for (const auto& [wanted, link_args] :
       {std::pair{source.calls_dnnl, &DnnlLinkArgs}, std::pair{source.calls_blas, &BlasLinkArgs}}) {
    if (!wanted) continue;
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> args, link_args());
    for (const std::string& arg : args) artifact.add_libraries(arg);
  }
  for (const std::string& name : source.functions) artifact.add_functions(name);
  for (const ShapeConstant& constant : source.shape_constants) {
    artifact.add_shape_constants(constant.value);
  }
  artifact.set_arena_bytes(plan != nullptr ? plan->arena_bytes : 0);
  for (BufferId id = 0; id < static_cast<BufferId>(program.buffers.size()); ++id) {
    const Buffer& buffer = program.buffers[id];
    rproto::Buffer& out = *artifact.add_buffers();
    out.set_name(buffer.name);
    out.set_kind(KindOf(buffer, plan, id));
    out.set_dtype(std::string(DTypeName(buffer.dtype)));
    out.set_elements(NumElements(buffer.sizes));
    if (out.kind() == rproto::Buffer::ARENA) out.set_arena_offset(plan->offsets[id]);
    if (out.kind() == rproto::Buffer::WEIGHT && weight_data) {
      const Tensor& weight = module.graph.initializer(buffer.source);
      out.set_data(weight.data(), weight.num_elements() * DTypeSize(weight.dtype()));
    }
  }
  for (const IndexCheck& check : program.index_checks) {
    rproto::IndexCheck& out = *artifact.add_index_checks();
    out.set_node(check.node);
    out.set_op(check.op);
    out.set_axis(check.axis);
    out.set_size(check.extent);
  }
  const LaunchTable& launches = source.launches;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (launches.IsGemm(i)) {
      return absl::UnimplementedError("the C++ runtime runs no library-call launches");
    }
    rproto::Launch& launch = *artifact.add_launches();
    launch.set_function(launches.function[i]);
    if (module.schedule.has_value()) {
      launch.set_label(LaunchLabel(LaunchNodes(launches, program, *module.schedule, i)));
    }
    for (int a = launches.arg_offsets[i]; a < launches.arg_offsets[i + 1]; ++a) {
      const BufferRef& arg = launches.args[a];
      launch.add_buffer(arg.buffer);
      launch.add_offset(arg.offset * DTypeSize(program.buffers[arg.buffer].dtype));
    }
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    AddSpec(module.graph, module.graph.inputs()[i], program.inputs[i], *artifact.mutable_inputs(),
            program);
  }
  if (!output_names.empty() && output_names.size() != program.outputs.size()) {
    return absl::InternalError(absl::StrCat(output_names.size(), " output names for ",
                                            program.outputs.size(), " outputs"));
  }
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    AddSpec(module.graph, module.graph.outputs()[i], program.outputs[i],
            *artifact.mutable_outputs(), program);
    if (!output_names.empty()) artifact.mutable_outputs()->rbegin()->set_name(output_names[i]);
  }
  return artifact;
}

std::vector<const void*> WeightData(const Module& module) {
  std::vector<const void*> data;
  for (const Buffer& buffer : module.loops->buffers) {
    data.push_back(buffer.kind == BufferKind::kWeight
                       ? module.graph.initializer(buffer.source).data()
                       : nullptr);
  }
  return data;
}

absl::Status WriteArtifact(const Module& module, absl::Span<const std::string> output_names,
                           const std::string& cache_dir, const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(CompiledLibrary compiled, CompileModule(module, cache_dir));
  LOOM_ASSIGN_OR_RETURN(std::string kernels, ReadFileBytes(compiled.library.path()));
  LOOM_ASSIGN_OR_RETURN(rproto::Artifact artifact,
                        MakeArtifact(module, std::move(kernels), output_names));
  return WriteFileBytes(path, Model::Serialize(artifact));
}

}  // namespace loom::cpp
