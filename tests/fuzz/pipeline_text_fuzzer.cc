// Fuzz target: the pipeline-file reader. Any bytes must load or fail with
// a user error naming the place; a pipeline that loads then runs on a
// small fixed graph (with verification after every pass), where any order
// of passes and any option values must again succeed or give a user
// error, never crash or break the IR (see fuzz::CheckUserError).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph_io.h"
#include "ir/module.h"
#include "passes/pass_manager.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Something for every kind of pass to work on: a recurrence, a
// normalisation, a reduction, a matmul and a view.
constexpr absl::string_view kGraph = R"(
  name: "pipeline_fuzz"
  input { name: "x" type { dtype: F32 shape: [2, 3, 4] } }
  weight { name: "w" type { dtype: F32 shape: [1, 20, 4] } random { seed: 1 } }
  weight { name: "r" type { dtype: F32 shape: [1, 20, 5] } random { seed: 2 } }
  weight { name: "m" type { dtype: F32 shape: [5, 6] } random { seed: 3 } }
  node {
    name: "cell" op: "lstm" input: "x" input: "w" input: "r"
    output: "y" output: "h" output: "c"
    attr { name: "hidden_size" i: 5 }
    attr { name: "layout" i: 1 }
  }
  node { name: "mm" op: "matmul" input: "h" input: "m" output: "p" }
  node {
    name: "ln" op: "layer_norm" input: "p" output: "q"
    attr { name: "axis" i: -1 }
  }
  node { name: "t" op: "transpose" input: "q" output: "qt" }
  node { name: "e" op: "exp" input: "qt" output: "ex" }
  node {
    name: "s" op: "reduce_sum" input: "ex" output: "sum"
    attr { name: "axes" ints { v: [0] } }
  }
  output: "sum"
  output: "y"
)";

const loom::Graph& FixedGraph() {
  static const loom::Graph* graph = [] {
    absl::StatusOr<loom::proto::Graph> proto = loom::ParseGraphText(kGraph, "pipeline_fuzz.pbtxt");
    loom::fuzz::Check(proto.ok(), proto.status().ToString());
    absl::StatusOr<loom::Graph> g = loom::GraphFromProto(*proto, "pipeline_fuzz.pbtxt");
    loom::fuzz::Check(g.ok(), g.status().ToString());
    return new loom::Graph(*std::move(g));
  }();
  return *graph;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<loom::LoadedPipeline> pipeline = loom::LoadPipelineText(text, "fuzz.pbtxt");
  loom::fuzz::CheckUserError(pipeline.status(), "LoadPipelineText");
  if (!pipeline.ok()) return 0;

  loom::Module module;
  module.graph = FixedGraph();
  loom::RunOptions options;
  options.verify_each = true;
  absl::StatusOr<std::vector<loom::PassRun>> runs = loom::RunPipeline(*pipeline, module, options);
  loom::fuzz::CheckUserError(runs.status(), "RunPipeline");
  return 0;
}
