#include "passes/pad_gemm_weights.h"

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/parallel.h"
#include "ir/shared_weights.h"
#include "ir/tensor.h"
#include "passes/lower.h"

namespace loom {
namespace {

// Whether `weight` is f32 [k, n] with n a multiple of kSlowRowMultiple, at
// least two of them.
bool HasSlowRows(const TensorType& weight) {
  const Shape& shape = weight.shape;
  return weight.dtype == DType::kF32 && shape.size() == 2 && shape[1] % kSlowRowMultiple == 0 &&
         shape[1] >= 2 * kSlowRowMultiple;
}

// `weight` [k, n] with kWeightRowPadding zeros after each row, in parts
// of rows on the cores where it is large, each part's pages mapped at once
// (lstm_l6_h256's six 1 MiB weights took 2.4 ms on one thread, most of it
// the new pages' faults).
Tensor PaddedRows(const Tensor& weight) {
  const int64_t rows = weight.shape()[0], cols = weight.shape()[1];
  const int64_t padded_cols = cols + kWeightRowPadding;
  // Each byte written once: the rows, then their padding, in new memory.
  Tensor padded = Tensor::Uninitialized({DType::kF32, {rows, padded_cols}});
  const float* in = weight.data_as<float>();
  float* out = padded.data_as<float>();
  const auto copy_rows = [=](int64_t first, int64_t last) {
    MapPages(out + first * padded_cols, out + last * padded_cols);
    for (int64_t r = first; r < last; ++r) {
      std::memcpy(out + r * padded_cols, in + r * cols, sizeof(float) * cols);
      std::memset(out + r * padded_cols + cols, 0, sizeof(float) * kWeightRowPadding);
    }
  };
  RunInParts(rows, PartsForElements(weight.num_elements()), copy_rows);
  return padded;
}

// Node `slice` reading the first `cols` columns of a 2-D value.
Node ColumnsSlice(std::string name, ValueId from, ValueId to, int64_t cols) {
  Node slice;
  slice.name = std::move(name);
  slice.op = "slice";
  slice.inputs = {from};
  slice.outputs = {to};
  slice.attrs.Set("starts", AttrInts{0});
  slice.attrs.Set("ends", AttrInts{cols});
  slice.attrs.Set("axes", AttrInts{1});
  return slice;
}

}  // namespace

absl::StatusOr<bool> PadGemmWeightsPass::Run(Module& module) {
  Graph& graph = module.graph;
  const std::vector<ValueId> weights = GemmOperandWeights(
      graph, [](const Node&) { return true; }, HasSlowRows);
  if (weights.empty()) return false;
  // The slices read initializers only, so they go first; the products
  // read the slices instead of the weights.
  NodeList nodes;
  nodes.reserve(weights.size() + graph.nodes().size());
  std::vector<ValueId> view_of(graph.values().size(), -1);
  for (ValueId weight : weights) {
    const TensorType type = graph.value(weight).type;
    const std::string name = absl::StrCat(graph.value(weight).name, "/padded_rows");
    const ValueId view = graph.AddIntermediate(name, type);
    view_of.push_back(-1);
    view_of[weight] = view;
    const TensorType padded{DType::kF32, {type.shape[0], type.shape[1] + kWeightRowPadding}};
    graph.ReplaceInitializer(weight, SharedDerivedTensor(graph.shared_initializer(weight),
                                                         "pad-gemm-weights", padded, PaddedRows));
    nodes.push_back(ColumnsSlice(name, weight, view, type.shape[1]));
  }
  for (const Node& node : graph.nodes()) {
    Node redirected = node;
    for (ValueId& input : redirected.inputs) {
      if (view_of[input] >= 0) input = view_of[input];
    }
    nodes.push_back(std::move(redirected));
  }
  graph.ReplaceNodes(std::move(nodes));
  return true;
}

LOOM_REGISTER_PASS("pad-gemm-weights", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<PadGemmWeightsPass>());
});

}  // namespace loom
