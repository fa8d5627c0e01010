#ifndef LOOM_PIPELINES_BUILTIN_PIPELINES_H_
#define LOOM_PIPELINES_BUILTIN_PIPELINES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace loom {

// The built-in pipelines: pipelines/<name>.pbtxt, embedded into the binary
// at build time so that loom finds them from any working directory.

// The text of the built-in pipeline `name`, or nullopt.
std::optional<absl::string_view> BuiltinPipelineText(absl::string_view name);

// The names of the built-in pipelines, sorted.
std::vector<std::string> BuiltinPipelineNames();

namespace internal {

// The embedded files, in the table the genrule //pipelines:embed_pipelines
// writes.
struct EmbeddedPipeline {
  const char* name;
  const char* text;
};
extern const EmbeddedPipeline kEmbeddedPipelines[];
extern const int kNumEmbeddedPipelines;

}  // namespace internal
}  // namespace loom

#endif  // LOOM_PIPELINES_BUILTIN_PIPELINES_H_
