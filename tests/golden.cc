#include "tests/golden.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "backends/cpp/codegen.h"
#include "backends/cuda/codegen.h"
#include "ir/graph_io.h"
#include "ir/module.h"
#include "passes/pass_manager.h"

namespace loom {

const std::vector<GoldenCase>& GoldenCases() {
  static const auto* cases = new std::vector<GoldenCase>{
      {"examples/mlp.pbtxt", "cpu", "tests/golden/mlp.cc"},
      // A product large enough to call BLIS on AVX2.
      {"examples/linear_large.pbtxt", "cpu", "tests/golden/linear_large.cc"},
      {"examples/softmax.pbtxt", "cpu", "tests/golden/softmax.cc"},
      {"examples/layer_norm.pbtxt", "cpu", "tests/golden/layer_norm.cc"},
      {"examples/group_norm.pbtxt", "cpu", "tests/golden/group_norm.cc"},
      {"examples/lstm_l2_h64.pbtxt", "cpu_unrolled_rnn", "tests/golden/lstm_l2_h64.cc"},
      {"examples/group_norm.pbtxt", "cpu", "tests/golden/group_norm.schedule.txt",
       GoldenCase::Kind::kSchedule},
      {"examples/lstm_l2_h64.pbtxt", "cpu_unrolled_rnn", "tests/golden/lstm_l2_h64.schedule.txt",
       GoldenCase::Kind::kSchedule},
      // The same LSTM kept as a loop: a kernel a layer, its steps in order.
      {"examples/lstm_l2_h64.pbtxt", "cpu", "tests/golden/lstm_l2_h64_loop.cc"},
      {"examples/lstm_l2_h64.pbtxt", "cpu", "tests/golden/lstm_l2_h64_loop.schedule.txt",
       GoldenCase::Kind::kSchedule},
      // CUDA C++ from the same schedules.
      {"examples/group_norm.pbtxt", "cuda", "tests/golden/group_norm.cu"},
      {"examples/layer_norm.pbtxt", "cuda", "tests/golden/layer_norm.cu"},
      {"examples/softmax.pbtxt", "cuda", "tests/golden/softmax.cu"},
      {"examples/lstm_l2_h64.pbtxt", "cuda", "tests/golden/lstm_l2_h64.cu"},
      // Convolutions as gemm calls per kernel position over padded images.
      {"examples/resnet_block.pbtxt", "cpu", "tests/golden/resnet_block.cc"},
      {"examples/resnet_block.pbtxt", "cuda", "tests/golden/resnet_block.cu"},
      // Channels-last: 1x1 convs as gemm calls on [N, H, W, C], the
      // depthwise conv as a call, the ops between them on that layout.
      {"tests/golden/inverted_residual.pbtxt", "cpu_channels_last",
       "tests/golden/inverted_residual.cc"},
      // Indices known only at run time, checked as the kernels load them.
      {"tests/index_range/gather.pbtxt", "cpu", "tests/golden/gather_indices.cc"},
      {"tests/index_range/scatter.pbtxt", "cpu", "tests/golden/scatter_indices.cc"},
      {"backends/cuda/testdata/indices.pbtxt", "cuda", "tests/golden/indices.cu"},
      // A pool's window: a chain of NaN-propagating maxima, in vectors.
      {"tests/golden/max_pool.pbtxt", "cpu", "tests/golden/max_pool.cc"},
  };
  return *cases;
}

absl::StatusOr<std::string> EmitGolden(const GoldenCase& golden_case) {
  absl::StatusOr<LoadedPipeline> pipeline = LoadPipeline(golden_case.pipeline);
  if (!pipeline.ok()) return pipeline.status();
  absl::StatusOr<Graph> graph = LoadGraphFile(golden_case.model);
  if (!graph.ok()) return graph.status();
  Module module;
  module.graph = *std::move(graph);
  // Every pass's changed flag is checked on the way (a pass that hides a
  // change also skips the verification after it).
  ChangedFlagCheck check;
  RunOptions options;
  options.instrumentations = {&check};
  absl::StatusOr<std::vector<PassRun>> runs = RunPipeline(*pipeline, module, options);
  if (!runs.ok()) return runs.status();
  if (!module.source.has_value()) {
    return absl::InternalError("the pipeline emitted no source");
  }
  if (golden_case.kind == GoldenCase::Kind::kSchedule) {
    return PrintSchedule(*module.schedule, *module.loops);
  }
  // The launch table as comments, so the file stays valid C++.
  std::string launches = PrintLaunches(*module.source, *module.loops, *module.schedule);
  return absl::StrCat(module.source->text, "\n// Launches:\n// ",
                      absl::StrReplaceAll(launches, {{"\n", "\n// "}}));
}

}  // namespace loom
