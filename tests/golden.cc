#include "tests/golden.h"

#include "absl/status/status.h"
#include "ir/graph_io.h"
#include "ir/module.h"
#include "passes/pass_manager.h"

namespace loom {

const std::vector<GoldenCase>& GoldenCases() {
  static const auto* cases = new std::vector<GoldenCase>{
      {"examples/mlp.pbtxt", "cpu", "tests/golden/mlp.cc"},
      {"examples/softmax.pbtxt", "cpu", "tests/golden/softmax.cc"},
  };
  return *cases;
}

absl::StatusOr<std::string> EmitSource(const GoldenCase& golden_case) {
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline(golden_case.pipeline);
  if (!pipeline.ok()) return pipeline.status();
  absl::StatusOr<Graph> graph = LoadGraphFile(golden_case.model);
  if (!graph.ok()) return graph.status();
  Module module;
  module.graph = *std::move(graph);
  absl::StatusOr<std::vector<PassRun>> runs = RunPipeline(*pipeline, module);
  if (!runs.ok()) return runs.status();
  if (!module.source.has_value()) {
    return absl::InternalError("the pipeline emitted no source");
  }
  return module.source->text;
}

}  // namespace loom
