#ifndef LOOM_FRONTENDS_ONNX_ONNX_HALF_FLOATS_H_
#define LOOM_FRONTENDS_ONNX_ONNX_HALF_FLOATS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontends/onnx/onnx_context.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace loom::onnx_import {

// An ONNX node on float16 or bfloat16 computes in f32 and rounds each
// output once, as ONNX Runtime's CPU kernels do: the importer converts it
// on f32 copies of its 16-bit inputs and rounds its outputs back. (The
// loom ops a converter emits would otherwise each round: a Celu would
// round after its exp, its subtraction and its product.)
struct HalfFloatNode {
  DType dtype;  // the 16-bit type of its (first such) input
  // Its inputs' names and their 16-bit values, rebound after the node.
  std::vector<std::pair<std::string, ValueId>> inputs;
};

// The f32 copy of each 16-bit value, made once.
using WideCopies = absl::flat_hash_map<ValueId, ValueId>;

// Before `node` is converted: binds its float16 and bfloat16 inputs in
// `values` to f32 copies (a constant for an initializer, else a cast).
// None for a node without such an input, and for Cast and CastLike, which
// convert the 16-bit types themselves.
absl::StatusOr<std::optional<HalfFloatNode>> WidenHalfFloatInputs(const onnx::NodeProto& node,
                                                                  Graph& graph, ValueMap& values,
                                                                  WideCopies& copies);

// After: binds the inputs back, and rounds each output that came out f32
// to `half.dtype` (a constant's data, else through a cast), except where
// an attribute chose the output's type (`dtype`, `to`, ...) or ONNX gives
// it its own (LayerNormalization's mean and inverse deviation).
absl::Status NarrowHalfFloatOutputs(const onnx::NodeProto& node, const HalfFloatNode& half,
                                    Graph& graph, ValueMap& values);

}  // namespace loom::onnx_import

#endif  // LOOM_FRONTENDS_ONNX_ONNX_HALF_FLOATS_H_
