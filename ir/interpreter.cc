#include "ir/interpreter.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace loom {
namespace {

absl::Status CheckInputs(const Graph& graph, absl::Span<const Tensor> inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph '", graph.name, "' takes ", graph.inputs().size(),
                     " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& value = graph.value(graph.inputs()[i]);
    if (inputs[i].type() != value.type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", value.name, "' expects ", TypeToString(value.type),
          ", got ", TypeToString(inputs[i].type())));
    }
  }
  return absl::OkStatus();
}

// Every value id the graph names is in range, so the run can index freely.
absl::Status CheckIds(const Graph& graph) {
  const ValueId num_values = graph.values().size();
  auto valid = [&](absl::Span<const ValueId> ids) {
    for (ValueId id : ids) {
      if (id < 0 || id >= num_values) return false;
    }
    return true;
  };
  if (!valid(graph.inputs()) || !valid(graph.weights()) ||
      !valid(graph.constants()) || !valid(graph.outputs())) {
    return absl::InternalError("the graph names an invalid value id");
  }
  for (const Node& node : graph.nodes()) {
    if (!valid(node.inputs) || !valid(node.outputs)) {
      return AddNodeContext(node,
                            absl::InternalError("names an invalid value id"));
    }
  }
  return absl::OkStatus();
}

// The values of a run: borrowed (inputs, initializers) or owned
// (intermediates, freed after their last reader).
class Environment {
 public:
  explicit Environment(const Graph& graph)
      : live_(graph.values().size(), nullptr),
        owned_(graph.values().size()),
        readers_left_(graph.values().size(), 0) {
    // Graph outputs count as readers that never finish, so they survive.
    for (const Node& node : graph.nodes()) {
      for (ValueId id : node.inputs) ++readers_left_[id];
    }
    for (ValueId id : graph.outputs()) ++readers_left_[id];
  }

  const Tensor* Get(ValueId id) const { return live_[id]; }
  void Borrow(ValueId id, const Tensor& tensor) { live_[id] = &tensor; }
  void Own(ValueId id, Tensor tensor) {
    owned_[id] = std::make_unique<Tensor>(std::move(tensor));
    live_[id] = owned_[id].get();
    if (readers_left_[id] == 0) Release(id);  // nothing reads it
  }
  // One reader of `id` is done with it.
  void Read(ValueId id) {
    if (--readers_left_[id] == 0) Release(id);
  }
  // The value of a graph output; moved out at its last occurrence.
  Tensor TakeOutput(ValueId id) {
    if (--readers_left_[id] == 0 && owned_[id] != nullptr) {
      return std::move(*owned_[id]);
    }
    return *live_[id];
  }

 private:
  void Release(ValueId id) {
    if (owned_[id] == nullptr) return;
    owned_[id].reset();
    live_[id] = nullptr;
  }

  std::vector<const Tensor*> live_;
  std::vector<std::unique_ptr<Tensor>> owned_;
  std::vector<int32_t> readers_left_;
};

absl::Status RunNode(const Graph& graph, const Node& node,
                     const OpRegistry& registry, Environment& env) {
  absl::Status signature = CheckNodeSignature(node, registry);
  if (!signature.ok()) return signature;
  std::vector<const Tensor*> args;
  std::vector<TensorType> types;
  for (ValueId id : node.inputs) {
    const Tensor* arg = env.Get(id);
    if (arg == nullptr) {
      return AddNodeContext(node, absl::InvalidArgumentError(absl::StrCat(
                                      "reads value '", graph.value(id).name,
                                      "' before it is defined")));
    }
    args.push_back(arg);
    types.push_back(arg->type());
  }
  const OpDef& def = *registry.Find(node.op);
  absl::StatusOr<OutputTypes> out_types = def.infer(node, types);
  if (!out_types.ok()) return AddNodeContext(node, out_types.status());
  if (out_types->size() != node.outputs.size()) {
    return AddNodeContext(
        node, absl::InternalError("shape function returned the wrong number "
                                  "of outputs"));
  }
  if (absl::Status s = CheckOutputLimits(graph, node, *out_types); !s.ok()) {
    return AddNodeContext(node, s);
  }
  std::vector<Tensor> results;
  results.reserve(out_types->size());
  for (TensorType& type : *out_types) results.emplace_back(std::move(type));
  absl::Status eval = def.eval(node, args, absl::MakeSpan(results));
  if (!eval.ok()) return AddNodeContext(node, eval);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueId id = node.outputs[i];
    if (env.Get(id) != nullptr) {
      return AddNodeContext(node, absl::InvalidArgumentError(absl::StrCat(
                                      "writes value '", graph.value(id).name,
                                      "', which is already defined")));
    }
    env.Own(id, std::move(results[i]));
  }
  for (ValueId id : node.inputs) env.Read(id);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph,
                                              absl::Span<const Tensor> inputs,
                                              const OpRegistry& registry) {
  absl::Status status = CheckIds(graph);
  if (status.ok()) status = CheckInputs(graph, inputs);
  if (!status.ok()) return status;

  Environment env(graph);
  for (size_t i = 0; i < inputs.size(); ++i) {
    env.Borrow(graph.inputs()[i], inputs[i]);
  }
  for (const auto* ids : {&graph.weights(), &graph.constants()}) {
    for (ValueId id : *ids) env.Borrow(id, graph.initializer(id));
  }
  for (const Node& node : graph.nodes()) {
    status = RunNode(graph, node, registry, env);
    if (!status.ok()) return status;
  }

  std::vector<Tensor> outputs;
  outputs.reserve(graph.outputs().size());
  for (ValueId id : graph.outputs()) {
    if (env.Get(id) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", graph.value(id).name, "' is never computed"));
    }
    outputs.push_back(env.TakeOutput(id));
  }
  return outputs;
}

}  // namespace loom
