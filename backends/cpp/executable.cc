#include "backends/cpp/executable.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom::cpp {

absl::StatusOr<CppExecutable> CppExecutable::Create(const Module& module,
                                                    std::string cache_dir) {
  if (!module.loops.has_value() || !module.source.has_value() ||
      module.source->language != "c++") {
    return absl::FailedPreconditionError(
        "the pipeline emitted no C++ (does it end with 'codegen-cpp'?)");
  }
  NativeCompileOptions options;
  options.flags = module.source->native_flags;
  options.cache_dir = std::move(cache_dir);
  absl::StatusOr<NativeLibrary> library = CompileAndLoad(module.source->text, options);
  if (!library.ok()) return library.status();
  absl::StatusOr<void*> entry = library->Symbol(module.source->entry);
  if (!entry.ok()) return entry.status();

  CppExecutable executable(*std::move(library), reinterpret_cast<Entry>(*entry));
  const LoopProgram& program = *module.loops;
  for (const Buffer& buffer : program.buffers) {
    if (buffer.kind == BufferKind::kInput) {
      executable.storage_.emplace_back(DType::kF32, Shape{0});
    } else if (buffer.kind == BufferKind::kWeight) {
      executable.storage_.push_back(module.graph.initializer(buffer.source));
    } else {
      executable.storage_.emplace_back(buffer.dtype, buffer.sizes);
    }
  }
  for (Tensor& tensor : executable.storage_) executable.pointers_.push_back(tensor.data());
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
  entry_(pointers_.data());
  std::vector<Tensor> outputs;
  outputs.reserve(outputs_.size());
  for (BufferId id : outputs_) outputs.push_back(storage_[id]);
  return outputs;
}

}  // namespace loom::cpp
