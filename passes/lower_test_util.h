#ifndef LOOM_PASSES_LOWER_TEST_UTIL_H_
#define LOOM_PASSES_LOWER_TEST_UTIL_H_

// Graphs for the lowering tests (lower_test.cc, lower_inlining_test.cc).

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"

namespace loom {

// A graph with one f32 input `x` of `shape`.
inline Graph GraphWithInput(const Shape& shape, ValueId& x) {
  Graph graph;
  x = *graph.AddInput("x", TensorType{DType::kF32, shape});
  return graph;
}

// A node of `op` named after it and the graph's node count ("exp0"), with
// one output; returns the output.
inline ValueId AddNode(Graph& graph, const std::string& op, std::vector<ValueId> inputs,
                       Attrs attrs = {}) {
  const std::string name = absl::StrCat(op, graph.nodes().size());
  const NodeId node =
      *graph.AddNode(name, op, std::move(inputs), {name + ".out"}, std::move(attrs));
  return graph.node(node).outputs[0];
}

}  // namespace loom

#endif  // LOOM_PASSES_LOWER_TEST_UTIL_H_
