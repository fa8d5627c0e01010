#include "backends/cpp/executable.h"

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "scheduler/plan_memory.h"

namespace loom::cpp {
namespace {

std::byte* AlignUp(std::byte* pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  const uintptr_t aligned =
      (address + kArenaAlignment - 1) & ~uintptr_t{kArenaAlignment - 1};
  return pointer + (aligned - address);
}

// A plan that places a temporary outside the arena is a broken invariant,
// not something to run.
absl::Status CheckPlan(const LoopProgram& program, const MemoryPlan& plan) {
  if (plan.offsets.size() != program.buffers.size()) {
    return absl::InternalError(absl::StrCat("the memory plan has ", plan.offsets.size(),
                                            " offsets for ", program.buffers.size(),
                                            " buffers"));
  }
  for (size_t id = 0; id < program.buffers.size(); ++id) {
    const Buffer& buffer = program.buffers[id];
    const int64_t offset = plan.offsets[id];
    if (offset < 0) continue;
    if (buffer.kind != BufferKind::kTemp || offset % kArenaAlignment != 0 ||
        offset + BufferBytes(buffer) > plan.arena_bytes) {
      return absl::InternalError(absl::StrCat(
          "the memory plan puts buffer '", buffer.name, "' at offset ", offset,
          " of an arena of ", plan.arena_bytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

// Buffers are allocated and addressed by byte counts: within the limits
// these cannot overflow.
absl::Status CheckBufferLimits(const LoopProgram& program) {
  for (const Buffer& buffer : program.buffers) {
    if (absl::Status s = CheckShapeLimits(buffer.sizes); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer '", buffer.name, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CppExecutable> CppExecutable::Create(const Module& module,
                                                    std::string cache_dir) {
  if (!module.loops.has_value() || !module.source.has_value() ||
      module.source->language != "c++") {
    return absl::FailedPreconditionError(
        "the pipeline emitted no C++ (does it end with 'codegen-cpp'?)");
  }
  if (absl::Status s = CheckBufferLimits(*module.loops); !s.ok()) return s;
  NativeCompileOptions options;
  options.flags = module.source->native_flags;
  options.link_blas = module.source->calls_blas;
  options.link_dnnl = module.source->calls_dnnl;
  options.cache_dir = std::move(cache_dir);
  absl::StatusOr<NativeLibrary> library = CompileAndLoad(module.source->text, options);
  if (!library.ok()) return library.status();
  CppExecutable executable(*std::move(library));
  for (const std::string& name : module.source->functions) {
    absl::StatusOr<void*> function = executable.library_.Symbol(name);
    if (!function.ok()) return function.status();
    executable.functions_.push_back(reinterpret_cast<KernelFn>(*function));
  }
  executable.launches_ = module.source->launches;
  const LoopProgram& program = *module.loops;
  for (const Buffer& buffer : program.buffers) {
    executable.element_bytes_.push_back(DTypeSize(buffer.dtype));
  }
  const MemoryPlan* plan = module.schedule.has_value() && module.schedule->memory.has_value()
                               ? &*module.schedule->memory
                               : nullptr;
  if (plan != nullptr) {
    if (absl::Status s = CheckPlan(program, *plan); !s.ok()) return s;
    executable.arena_.resize(plan->arena_bytes + kArenaAlignment - 1);
  }
  for (const Buffer& buffer : program.buffers) {
    if (buffer.kind == BufferKind::kInput ||
        (plan != nullptr && buffer.kind == BufferKind::kTemp)) {
      executable.storage_.emplace_back(DType::kF32, Shape{0});
    } else if (buffer.kind == BufferKind::kWeight) {
      executable.storage_.push_back(module.graph.initializer(buffer.source));
    } else {
      executable.storage_.emplace_back(buffer.dtype, buffer.sizes);
    }
  }
  std::byte* const arena = AlignUp(executable.arena_.data());
  for (BufferId id = 0; id < static_cast<BufferId>(program.buffers.size()); ++id) {
    if (plan != nullptr && program.buffers[id].kind == BufferKind::kTemp) {
      // Internal buffers (offset -1) get no storage: no kernel touches them.
      const int64_t offset = plan->offsets[id];
      executable.pointers_.push_back(offset < 0 ? nullptr : arena + offset);
    } else {
      executable.pointers_.push_back(executable.storage_[id].data());
    }
  }
  executable.inputs_ = program.inputs;
  for (BufferId id : program.inputs) {
    executable.input_types_.push_back(
        TensorType{program.buffers[id].dtype, program.buffers[id].sizes});
  }
  executable.outputs_ = program.outputs;
  return executable;
}

absl::StatusOr<std::vector<Tensor>> CppExecutable::Run(
    absl::Span<const Tensor> inputs) {
  if (absl::Status s = Execute(inputs); !s.ok()) return s;
  return Outputs();
}

std::vector<Tensor> CppExecutable::Outputs() const {
  std::vector<Tensor> outputs;
  outputs.reserve(outputs_.size());
  for (BufferId id : outputs_) outputs.push_back(storage_[id]);
  return outputs;
}

absl::Status CppExecutable::Execute(absl::Span<const Tensor> inputs) {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the model takes ", inputs_.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].type() != input_types_[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input #", i, " is ", TypeToString(inputs[i].type()),
          ", the model expects ", TypeToString(input_types_[i])));
    }
    // Kernels only read inputs: the const_cast never leads to a write.
    pointers_[inputs_[i]] = const_cast<void*>(inputs[i].data());
  }
  for (size_t i = 0; i < launches_.size(); ++i) {
    arguments_.clear();
    for (int a = launches_.arg_offsets[i]; a < launches_.arg_offsets[i + 1]; ++a) {
      const BufferRef& arg = launches_.args[a];
      char* const base = static_cast<char*>(pointers_[arg.buffer]);
      arguments_.push_back(base == nullptr ? nullptr
                                           : base + arg.offset * element_bytes_[arg.buffer]);
    }
    functions_[launches_.function[i]](arguments_.data());
  }
  return absl::OkStatus();
}

}  // namespace loom::cpp
