#include "passes/pack_panel_weights.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/parallel.h"
#include "ir/tensor.h"
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

bool HasPanelShape(const Tensor& weight) {
  const Shape& shape = weight.shape();
  return weight.dtype() == DType::kF32 && shape.size() == 2 && shape[1] % kPanelWidth == 0 &&
         weight.num_elements() >= kPanelMinElements;
}

// `weight` [k, n] as panels [n / 16, k, 16], in parts of panels on the
// cores where it is large.
Tensor Panels(const Tensor& weight) {
  const int64_t k = weight.shape()[0], n = weight.shape()[1], panels = n / kPanelWidth;
  Tensor packed = Tensor::Uninitialized({DType::kF32, {panels, k, kPanelWidth}});
  const float* in = weight.data_as<float>();
  float* out = packed.data_as<float>();
  const auto pack = [=](int64_t first, int64_t last) {
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

Node MakeNode(std::string name, std::string op, ValueId input, ValueId output, Attrs attrs) {
  Node node;
  node.name = std::move(name);
  node.op = std::move(op);
  node.inputs = {input};
  node.outputs = {output};
  node.attrs = std::move(attrs);
  return node;
}

Attrs IntsAttr(const char* name, AttrInts values) {
  Attrs attrs;
  attrs.Set(name, std::move(values));
  return attrs;
}

// `product` (x [..., k] @ w, w now panels [n / 16, k, 16]) as its rows
// times the panels, viewed back as its output: appended to `nodes`.
void AppendPanelProduct(Graph& graph, const Node& product, NodeList& nodes) {
  const ValueId x = product.inputs[0], w = product.inputs[1], y = product.outputs[0];
  const int64_t rows = ProductRows(graph, product);
  const int64_t k = graph.value(x).type.shape.back();
  const int64_t panels = graph.value(w).type.shape[0];
  const std::string& name = product.name;
  const ValueId x_rows =
      graph.AddIntermediate(absl::StrCat(name, "/rows"), {DType::kF32, {rows, k}});
  const ValueId by_panel = graph.AddIntermediate(absl::StrCat(name, "/panels"),
                                                 {DType::kF32, {panels, rows, kPanelWidth}});
  const ValueId by_row = graph.AddIntermediate(absl::StrCat(name, "/panels_by_row"),
                                               {DType::kF32, {rows, panels, kPanelWidth}});
  nodes.push_back(
      MakeNode(absl::StrCat(name, "/rows"), "reshape", x, x_rows, IntsAttr("shape", {rows, k})));
  Node multiply = product;
  multiply.inputs = {x_rows, w};
  multiply.outputs = {by_panel};
  nodes.push_back(std::move(multiply));
  nodes.push_back(MakeNode(absl::StrCat(name, "/panels_by_row"), "transpose", by_panel, by_row,
                           IntsAttr("perm", {1, 0, 2})));
  const Shape& shape = graph.value(y).type.shape;
  nodes.push_back(MakeNode(absl::StrCat(name, "/view"), "reshape", by_row, y,
                           IntsAttr("shape", AttrInts(shape.begin(), shape.end()))));
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
    graph.ReplaceInitializer(weight, Panels(graph.initializer(weight)));
    packed[weight] = true;
  }
  NodeList nodes;
  nodes.reserve(graph.nodes().size() + 3 * weights.size());
  for (const Node& node : graph.nodes()) {
    if (node.inputs.size() == 2 && packed[node.inputs[1]]) {
      AppendPanelProduct(graph, node, nodes);
    } else {
      nodes.push_back(node);
    }
  }
  graph.ReplaceNodes(std::move(nodes));
  return true;
}

LOOM_REGISTER_PASS("pack-panel-weights", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<PackPanelWeightsPass>());
});

}  // namespace loom
