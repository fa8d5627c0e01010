#include "backends/cpp/executable.h"

#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/cpp/artifact.h"
#include "ir/status_macros.h"

namespace loom::cpp {

CppExecutable::CppExecutable(Model model, bool cache_hit, double compile_seconds,
                             bool shape_template)
    : model_(std::move(model)),
      session_(model_.NewSession()),
      cache_hit_(cache_hit),
      compile_seconds_(compile_seconds),
      shape_template_(shape_template) {}

absl::StatusOr<CppExecutable> CppExecutable::Create(const Module& module, std::string cache_dir,
                                                    bool warm_up_dnnl) {
  LOOM_ASSIGN_OR_RETURN(CompiledLibrary compiled, CompileModule(module, cache_dir, warm_up_dnnl));
  LOOM_ASSIGN_OR_RETURN(runtime::proto::Artifact artifact,
                        MakeArtifact(module, /*shared_object=*/"", {}, /*weight_data=*/false));
  LOOM_ASSIGN_OR_RETURN(Model model,
                        Model::Bind(std::move(compiled.library), artifact, WeightData(module)));
  return CppExecutable(std::move(model), compiled.cache_hit, compiled.compile_seconds,
                       compiled.shape_template);
}

absl::StatusOr<std::vector<Tensor>> CppExecutable::Run(absl::Span<const Tensor> inputs) {
  LOOM_RETURN_IF_ERROR(Execute(inputs));
  return Outputs();
}

std::vector<Tensor> CppExecutable::Outputs() const {
  std::vector<Tensor> outputs;
  outputs.reserve(model_.outputs().size());
  for (size_t i = 0; i < model_.outputs().size(); ++i) {
    const TensorInfo& info = model_.outputs()[i];
    Tensor& tensor = outputs.emplace_back(info.dtype, info.shape);
    std::memcpy(tensor.data(), session_.output(i), static_cast<size_t>(info.bytes()));
  }
  return outputs;
}

absl::Status CppExecutable::Execute(absl::Span<const Tensor> inputs,
                                    absl::Span<double> launch_seconds) {
  const std::vector<TensorInfo>& expected = model_.inputs();
  if (inputs.size() != expected.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes ", expected.size(), " inputs, got ", inputs.size()));
  }
  input_views_.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    input_views_.push_back(
        {expected[i].name, inputs[i].dtype(), inputs[i].shape(), inputs[i].data()});
  }
  return session_.Run(input_views_, launch_seconds);
}

}  // namespace loom::cpp
