#include "passes/fold_batch_norm.h"

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"
#include "ir/tensor.h"

namespace loom {
namespace {

// How many node inputs and graph outputs read each value.
std::vector<int> CountReaders(const Graph& graph) {
  std::vector<int> readers(graph.values().size(), 0);
  for (const Node& node : graph.nodes()) {
    for (ValueId input : node.inputs) ++readers[input];
  }
  for (ValueId output : graph.outputs()) ++readers[output];
  return readers;
}

// The conv that batch_norm `bn` can absorb, or none.
std::optional<NodeId> FoldableConv(const Graph& graph, const Node& bn,
                                   const std::vector<int>& readers) {
  if (bn.op != "batch_norm" || bn.inputs.size() != 5 || bn.outputs.size() != 1) {
    return std::nullopt;
  }
  const ValueId x = bn.inputs[0];
  const NodeId producer = graph.value(x).producer;
  if (producer == kNoNode || readers[x] != 1) return std::nullopt;
  const Node& conv = graph.node(producer);
  if (conv.op != "conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1) return std::nullopt;
  for (size_t i = 1; i < conv.inputs.size(); ++i) {
    if (!graph.HasInitializer(conv.inputs[i])) return std::nullopt;
  }
  for (size_t i = 1; i < bn.inputs.size(); ++i) {
    if (!graph.HasInitializer(bn.inputs[i])) return std::nullopt;
  }
  const DType dtype = graph.value(x).type.dtype;
  if (dtype != DType::kF32 && dtype != DType::kF64) return std::nullopt;
  return producer;
}

// Replaces batch_norm `bn_id` by the conv `conv_id` with folded weights.
absl::Status Fold(Graph& graph, NodeId conv_id, NodeId bn_id) {
  const Node& conv = graph.node(conv_id);
  const Node& bn = graph.node(bn_id);
  const Tensor& weight = graph.initializer(conv.inputs[1]);
  const Tensor& scale = graph.initializer(bn.inputs[1]);
  const Tensor& shift = graph.initializer(bn.inputs[2]);
  const Tensor& mean = graph.initializer(bn.inputs[3]);
  const Tensor& var = graph.initializer(bn.inputs[4]);
  const double epsilon = bn.attrs.GetFloat("epsilon", kDefaultNormEpsilon);
  const int64_t channels = weight.shape()[0];
  const int64_t per_channel = weight.num_elements() / std::max<int64_t>(channels, 1);
  Tensor folded_weight(weight.type());
  Tensor folded_bias(weight.dtype(), {channels});
  for (int64_t m = 0; m < channels; ++m) {
    const double s = scale.GetDouble(m) / std::sqrt(var.GetDouble(m) + epsilon);
    for (int64_t i = m * per_channel; i < (m + 1) * per_channel; ++i) {
      folded_weight.SetDouble(i, weight.GetDouble(i) * s);
    }
    const double bias = conv.inputs.size() > 2 ? graph.initializer(conv.inputs[2]).GetDouble(m) : 0;
    folded_bias.SetDouble(m, (bias - mean.GetDouble(m)) * s + shift.GetDouble(m));
  }
  const std::string base = graph.value(bn.outputs[0]).name;
  LOOM_ASSIGN_OR_RETURN(
      ValueId w, graph.AddInitializer(graph.UniqueValueName(absl::StrCat(base, "/folded_weight")),
                                      ValueKind::kWeight, std::move(folded_weight)));
  LOOM_ASSIGN_OR_RETURN(
      ValueId b, graph.AddInitializer(graph.UniqueValueName(absl::StrCat(base, "/folded_bias")),
                                      ValueKind::kWeight, std::move(folded_bias)));
  const ValueId x = graph.node(conv_id).inputs[0];
  Attrs attrs = graph.node(conv_id).attrs;
  Node& merged = graph.mutable_node(bn_id);
  merged.op = "conv";
  merged.inputs = {x, w, b};
  merged.attrs = std::move(attrs);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> FoldBatchNormPass::Run(Module& module) {
  Graph& graph = module.graph;
  const std::vector<int> readers = CountReaders(graph);
  std::vector<bool> keep(graph.nodes().size(), true);
  bool changed = false;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) {
    const std::optional<NodeId> conv = FoldableConv(graph, graph.node(id), readers);
    if (!conv.has_value()) continue;
    LOOM_RETURN_IF_ERROR(Fold(graph, *conv, id));
    keep[*conv] = false;
    changed = true;
  }
  if (changed) graph.RemoveNodes(keep);
  return changed;
}

LOOM_REGISTER_PASS("fold-batch-norm", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<FoldBatchNormPass>());
});

}  // namespace loom
