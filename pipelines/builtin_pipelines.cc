#include "pipelines/builtin_pipelines.h"

#include <algorithm>

namespace loom {

std::optional<absl::string_view> BuiltinPipelineText(absl::string_view name) {
  for (int i = 0; i < internal::kNumEmbeddedPipelines; ++i) {
    const internal::EmbeddedPipeline& pipeline = internal::kEmbeddedPipelines[i];
    if (name == pipeline.name) return absl::string_view(pipeline.text);
  }
  return std::nullopt;
}

std::vector<std::string> BuiltinPipelineNames() {
  std::vector<std::string> names;
  for (int i = 0; i < internal::kNumEmbeddedPipelines; ++i) {
    names.push_back(internal::kEmbeddedPipelines[i].name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace loom
