#include "passes/pack_panel_weights.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/parallel.h"
#include "ir/shared_weights.h"
#include "ir/status_macros.h"
#include "ir/tensor.h"
#include "passes/decomposition.h"
#include "passes/lower.h"

namespace loom {

int64_t PanelMaxRows() {
  constexpr int64_t kWithAvx512 = 32;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return kWithAvx512;
#endif
  return kDefaultGemmMinRows;
}

namespace {

// The rows of the product `node` (a matmul): its first operand's elements
// per k.
int64_t ProductRows(const Graph& graph, const Node& node) {
  const Shape& a = graph.value(node.inputs[0]).type.shape;
  return NumElements(a) / a.back();
}

bool HasPanelShape(const TensorType& weight) {
  const Shape& shape = weight.shape;
  return weight.dtype == DType::kF32 && shape.size() == 2 && shape[1] % kPanelWidth == 0 &&
         NumElements(shape) >= kPanelMinElements;
}

// `weight` [k, n] as panels [n / 16, k, 16], in parts of panels on the
// cores where it is large, each part's pages mapped at once.
Tensor Panels(const Tensor& weight) {
  const int64_t k = weight.shape()[0], n = weight.shape()[1], panels = n / kPanelWidth;
  Tensor packed = Tensor::Uninitialized({DType::kF32, {panels, k, kPanelWidth}});
  const float* in = weight.data_as<float>();
  float* out = packed.data_as<float>();
  const auto pack = [=](int64_t first, int64_t last) {
    MapPages(out + first * k * kPanelWidth, out + last * k * kPanelWidth);
    for (int64_t q = first; q < last; ++q) {
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t j = 0; j < kPanelWidth; ++j) {
          out[(q * k + r) * kPanelWidth + j] = in[r * n + q * kPanelWidth + j];
        }
      }
    }
  };
  RunInParts(panels, PartsForElements(weight.num_elements()), pack);
  return packed;
}

// `product` (x [..., k] @ w, w now panels [n / 16, k, 16]) as its rows
// times the panels, viewed back as its output.
void PanelProduct(const Node& product, int64_t rows, DecompositionBuilder& b) {
  const ValueId x = product.inputs[0], w = product.inputs[1], y = product.outputs[0];
  const ValueId x_rows =
      b.Add("rows", "reshape", {x}, Ints("shape", {rows, b.type(x).shape.back()}));
  const ValueId by_panel = b.Add("panels", product.op, {x_rows, w}, product.attrs);
  const ValueId by_row = b.Add("panels_by_row", "transpose", {by_panel}, Ints("perm", {1, 0, 2}));
  const Shape& shape = b.type(y).shape;
  b.AddWriting("view", "reshape", {by_row}, y, Ints("shape", AttrInts(shape.begin(), shape.end())));
}

}  // namespace

absl::StatusOr<bool> PackPanelWeightsPass::Run(Module& module) {
  Graph& graph = module.graph;
  const int64_t max_rows = PanelMaxRows();
  const std::vector<ValueId> weights = GemmOperandWeights(
      graph, [&](const Node& product) { return ProductRows(graph, product) <= max_rows; },
      HasPanelShape);
  if (weights.empty()) return false;
  std::vector<bool> packed(graph.values().size(), false);
  for (ValueId weight : weights) {
    const Shape& shape = graph.value(weight).type.shape;
    const TensorType panels{DType::kF32, {shape[1] / kPanelWidth, shape[0], kPanelWidth}};
    graph.ReplaceInitializer(weight, SharedDerivedTensor(graph.shared_initializer(weight),
                                                         "pack-panel-weights", panels, Panels));
    packed[weight] = true;
  }
  // The products become nodes of the decompositions' builder, whose new
  // names could collide only with names that hold a '/'.
  NameSet names;
  for (const Node& node : graph.nodes()) {
    if (absl::StrContains(node.name, '/')) names.Insert(node.name);
  }
  NodeList nodes;
  nodes.reserve(graph.nodes().size() + 3 * weights.size());
  std::vector<bool> emitted;
  for (const Node& node : graph.nodes()) {
    if (node.inputs.size() == 2 && packed[node.inputs[1]]) {
      DecompositionBuilder builder(graph, node, names, nodes);
      PanelProduct(node, ProductRows(graph, node), builder);
      emitted.resize(nodes.size(), true);
    } else {
      nodes.push_back(node);
      emitted.push_back(false);
    }
  }
  graph.ReplaceNodes(std::move(nodes));
  LOOM_RETURN_IF_ERROR(InferShapesOfNodes(graph, emitted));
  return true;
}

LOOM_REGISTER_PASS("pack-panel-weights", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<PackPanelWeightsPass>());
});

}  // namespace loom
