#include "ir/interpreter.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

absl::Status CheckInputs(const Graph& graph, absl::Span<const Tensor> inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph '", graph.name, "' takes ", graph.inputs().size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& value = graph.value(graph.inputs()[i]);
    if (inputs[i].type() != value.type) {
      return absl::InvalidArgumentError(absl::StrCat("input '", value.name, "' expects ",
                                                     TypeToString(value.type), ", got ",
                                                     TypeToString(inputs[i].type())));
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
  if (!valid(graph.inputs()) || !valid(graph.weights()) || !valid(graph.constants()) ||
      !valid(graph.outputs())) {
    return absl::InternalError("the graph names an invalid value id");
  }
  for (const Node& node : graph.nodes()) {
    if (!valid(node.inputs) || !valid(node.outputs)) {
      return AddNodeContext(node, absl::InternalError("names an invalid value id"));
    }
  }
  return absl::OkStatus();
}

// The values of a run: borrowed (inputs, initializers) or owned
// (intermediates, freed after their last reader), and, when the run bounds
// errors, each value's bound (none: known exactly).
class Environment {
 public:
  explicit Environment(const Graph& graph)
      : live_(graph.values().size(), nullptr),
        owned_(graph.values().size()),
        bounds_(graph.values().size()),
        readers_left_(graph.values().size(), 0) {
    // Graph outputs count as readers that never finish, so they survive.
    for (const Node& node : graph.nodes()) {
      for (ValueId id : node.inputs) ++readers_left_[id];
    }
    for (ValueId id : graph.outputs()) ++readers_left_[id];
  }

  const Tensor* Get(ValueId id) const { return live_[id]; }
  const Tensor* Bound(ValueId id) const { return bounds_[id].get(); }
  void Borrow(ValueId id, const Tensor& tensor) { live_[id] = &tensor; }
  void Own(ValueId id, Tensor tensor, std::optional<Tensor> bound = std::nullopt) {
    owned_[id] = std::make_unique<Tensor>(std::move(tensor));
    live_[id] = owned_[id].get();
    if (bound.has_value()) bounds_[id] = std::make_unique<Tensor>(*std::move(bound));
    if (readers_left_[id] == 0) Release(id);  // nothing reads it
  }
  // One reader of `id` is done with it.
  void Read(ValueId id) {
    if (--readers_left_[id] == 0) Release(id);
  }
  // The bound of a graph output (zeros when it is known exactly); before
  // TakeOutput, which may move the value out.
  Tensor OutputBound(ValueId id) const {
    if (bounds_[id] != nullptr) return *bounds_[id];
    return Tensor(DType::kF64, live_[id]->shape());
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
    bounds_[id].reset();
    if (owned_[id] == nullptr) return;
    owned_[id].reset();
    live_[id] = nullptr;
  }

  std::vector<const Tensor*> live_;
  std::vector<std::unique_ptr<Tensor>> owned_;
  std::vector<std::unique_ptr<Tensor>> bounds_;
  std::vector<int32_t> readers_left_;
};

// The rounding unit of each value's dtype in `graph`: what its error bounds
// are made of.
std::vector<double> RoundingUnits(const Graph& graph) {
  std::vector<double> units;
  units.reserve(graph.values().size());
  for (const Value& value : graph.values()) units.push_back(RoundingUnit(value.type.dtype));
  return units;
}

// The bounds of a node's outputs from its op's error model.
absl::StatusOr<std::vector<Tensor>> NodeBounds(const OpDef& def, const Node& node,
                                               absl::Span<const Tensor* const> args,
                                               const Environment& env,
                                               absl::Span<const Tensor> results,
                                               const std::vector<double>& units) {
  std::vector<const Tensor*> arg_bounds;
  for (ValueId id : node.inputs) arg_bounds.push_back(env.Bound(id));
  std::vector<double> output_units;
  for (ValueId id : node.outputs) output_units.push_back(units[id]);
  const BoundContext context{node, def.eval, args, arg_bounds, results, output_units};
  std::vector<Tensor> bounds;
  for (const Tensor& result : results) bounds.emplace_back(DType::kF64, result.shape());
  LOOM_RETURN_IF_ERROR(def.bound
                           ? def.bound(context, absl::MakeSpan(bounds))
                           : PointwiseBound(context, def.rounding_ulps, absl::MakeSpan(bounds)));
  return bounds;
}

// `tensor` converted element by element to `dtype` (its ComputeType, or
// back), as cast converts.
Tensor Converted(const Tensor& tensor, DType dtype) {
  if (IsFloat(dtype)) return ConvertedFloats(tensor, dtype);
  Tensor converted(dtype, tensor.shape());
  for (int64_t i = 0; i < tensor.num_elements(); ++i) converted.SetInt(i, tensor.GetInt(i));
  return converted;
}

// Evaluates the node into `results`. The narrow floats and the sub-byte
// integers are storage types: an op other than cast and bit_cast reads them in their
// ComputeType (f32, i32), computes in it and rounds or wraps each result
// to its type (as ONNX Runtime's CPU kernels and numpy's float16 do).
absl::Status Eval(const OpDef& def, const Node& node, absl::Span<const Tensor* const> args,
                  absl::Span<Tensor> results) {
  auto is_stored = [](const Tensor& t) { return IsStorageType(t.dtype()); };
  const bool any_stored = absl::c_any_of(args, [&](const Tensor* t) { return is_stored(*t); }) ||
                          absl::c_any_of(results, is_stored);
  if (!any_stored || node.op == "cast" || node.op == "bit_cast") {  // they read the bits
    return def.eval(node, args, results);
  }
  std::vector<Tensor> wide;
  wide.reserve(args.size() + results.size());
  std::vector<const Tensor*> wide_args;
  for (const Tensor* arg : args) {
    wide_args.push_back(
        is_stored(*arg) ? &wide.emplace_back(Converted(*arg, ComputeType(arg->dtype()))) : arg);
  }
  std::vector<Tensor> wide_results;
  for (const Tensor& result : results) {
    wide_results.emplace_back(ComputeType(result.dtype()), result.shape());
  }
  LOOM_RETURN_IF_ERROR(def.eval(node, wide_args, absl::MakeSpan(wide_results)));
  for (size_t i = 0; i < results.size(); ++i) {
    results[i] = is_stored(results[i]) ? Converted(wide_results[i], results[i].dtype())
                                       : std::move(wide_results[i]);
  }
  return absl::OkStatus();
}

// Runs one node; with `units` (InterpretWithErrorBounds), bounds its outputs.
absl::Status RunNode(const Graph& graph, const Node& node, const OpRegistry& registry,
                     const std::vector<double>* units, Environment& env) {
  LOOM_RETURN_IF_ERROR(CheckNodeSignature(node, registry));
  std::vector<const Tensor*> args;
  std::vector<TensorType> types;
  for (ValueId id : node.inputs) {
    const Tensor* arg = env.Get(id);
    if (arg == nullptr) {
      return AddNodeContext(
          node, absl::InvalidArgumentError(
                    absl::StrCat("reads value '", graph.value(id).name, "' before it is defined")));
    }
    args.push_back(arg);
    types.push_back(arg->type());
  }
  const OpDef& def = *registry.Find(node.op);
  absl::StatusOr<OutputTypes> out_types = def.infer(node, types);
  if (!out_types.ok()) return AddNodeContext(node, out_types.status());
  if (out_types->size() != node.outputs.size()) {
    return AddNodeContext(node, absl::InternalError("shape function returned the wrong number "
                                                    "of outputs"));
  }
  if (absl::Status s = CheckOutputLimits(graph, node, *out_types); !s.ok()) {
    return AddNodeContext(node, s);
  }
  std::vector<Tensor> results;
  results.reserve(out_types->size());
  for (TensorType& type : *out_types) results.emplace_back(std::move(type));
  absl::Status eval = Eval(def, node, args, absl::MakeSpan(results));
  if (!eval.ok()) return AddNodeContext(node, eval);
  std::vector<Tensor> bounds;
  if (units != nullptr) {
    absl::StatusOr<std::vector<Tensor>> node_bounds =
        NodeBounds(def, node, args, env, results, *units);
    if (!node_bounds.ok()) return AddNodeContext(node, node_bounds.status());
    bounds = *std::move(node_bounds);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ValueId id = node.outputs[i];
    if (env.Get(id) != nullptr) {
      return AddNodeContext(
          node, absl::InvalidArgumentError(absl::StrCat("writes value '", graph.value(id).name,
                                                        "', which is already defined")));
    }
    env.Own(id, std::move(results[i]),
            units != nullptr ? std::optional<Tensor>(std::move(bounds[i])) : std::nullopt);
  }
  for (ValueId id : node.inputs) env.Read(id);
  return absl::OkStatus();
}

// Interpret, bounding errors with `units` (one per value) when given.
absl::StatusOr<BoundedOutputs> Run(const Graph& graph, absl::Span<const Tensor> inputs,
                                   const OpRegistry& registry, const std::vector<double>* units) {
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
    LOOM_RETURN_IF_ERROR(RunNode(graph, node, registry, units, env));
  }

  BoundedOutputs outputs;
  outputs.values.reserve(graph.outputs().size());
  for (ValueId id : graph.outputs()) {
    if (env.Get(id) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", graph.value(id).name, "' is never computed"));
    }
    if (units != nullptr) outputs.bounds.push_back(env.OutputBound(id));
    outputs.values.push_back(env.TakeOutput(id));
  }
  return outputs;
}

// A float type that float64 interpretation widens.
bool IsWidened(DType dtype) { return IsFloat(dtype) && dtype != DType::kF64; }

// bit_cast reads and writes the bits of its declared types: in `wide`,
// `graph` widened, a widened input is cast back to its declared type first
// and a widened output is computed in its declared type, then cast to f64
// (exactly).
void KeepBitCastTypes(const Graph& graph, Graph& wide) {
  if (absl::c_none_of(graph.nodes(), [](const Node& n) { return n.op == "bit_cast"; })) return;
  auto cast = [](std::string name, ValueId from, ValueId into, DType to) {
    Node node{std::move(name), "cast", {from}, {into}, {}};
    node.attrs.Set("to", std::string(DTypeName(to)));
    return node;
  };
  NodeList nodes;
  for (Node node : wide.nodes()) {
    if (node.op != "bit_cast") {
      nodes.push_back(std::move(node));
      continue;
    }
    const TensorType in = graph.value(node.inputs[0]).type;
    const TensorType out = graph.value(node.outputs[0]).type;
    const ValueId wide_out = node.outputs[0];
    if (IsWidened(in.dtype)) {
      const ValueId narrow = wide.AddIntermediate(graph.value(node.inputs[0]).name, in);
      nodes.push_back(cast(node.name + "/narrow", node.inputs[0], narrow, in.dtype));
      node.inputs[0] = narrow;
    }
    if (IsWidened(out.dtype)) node.outputs[0] = wide.AddIntermediate(node.name, out);
    const std::string name = node.name;
    const ValueId result = node.outputs[0];
    nodes.push_back(std::move(node));
    if (result != wide_out) nodes.push_back(cast(name + "/widen", result, wide_out, DType::kF64));
  }
  wide.ReplaceNodes(std::move(nodes));
}

std::vector<Tensor> WidenedToFloat64(absl::Span<const Tensor> tensors) {
  std::vector<Tensor> wide;
  wide.reserve(tensors.size());
  for (const Tensor& tensor : tensors) wide.push_back(WidenedToFloat64(tensor));
  return wide;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> Interpret(const Graph& graph, absl::Span<const Tensor> inputs,
                                              const OpRegistry& registry) {
  LOOM_ASSIGN_OR_RETURN(BoundedOutputs outputs, Run(graph, inputs, registry, nullptr));
  return std::move(outputs.values);
}

Tensor WidenedToFloat64(const Tensor& tensor) {
  if (!IsFloat(tensor.dtype()) || tensor.dtype() == DType::kF64) return tensor;
  return ConvertedFloats(tensor, DType::kF64);
}

Graph WidenedToFloat64(const Graph& graph, const OpRegistry& registry) {
  Graph wide = graph;
  for (ValueId id = 0; id < static_cast<ValueId>(graph.values().size()); ++id) {
    TensorType& type = wide.mutable_value(id).type;
    if (IsFloat(type.dtype)) type.dtype = DType::kF64;
  }
  for (const auto* ids : {&graph.weights(), &graph.constants()}) {
    for (ValueId id : *ids) wide.ReplaceInitializer(id, WidenedToFloat64(graph.initializer(id)));
  }
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes().size()); ++n) {
    const OpDef* def = registry.Find(graph.node(n).op);
    if (def == nullptr) continue;  // the run reports it
    Attrs& attrs = wide.mutable_node(n).attrs;
    for (const std::string& name : def->dtype_attrs) {
      absl::StatusOr<DType> dtype = DTypeFromName(attrs.GetString(name, ""));
      if (dtype.ok() && IsFloat(*dtype)) attrs.Set(name, std::string(DTypeName(DType::kF64)));
    }
  }
  KeepBitCastTypes(graph, wide);
  return wide;
}

absl::StatusOr<std::vector<Tensor>> InterpretInFloat64(const Graph& graph,
                                                       absl::Span<const Tensor> inputs,
                                                       const OpRegistry& registry) {
  LOOM_RETURN_IF_ERROR(CheckInputs(graph, inputs));
  return Interpret(WidenedToFloat64(graph, registry), WidenedToFloat64(inputs), registry);
}

absl::StatusOr<BoundedOutputs> InterpretWithErrorBounds(const Graph& graph,
                                                        absl::Span<const Tensor> inputs,
                                                        const OpRegistry& registry) {
  LOOM_RETURN_IF_ERROR(CheckInputs(graph, inputs));
  const Graph wide = WidenedToFloat64(graph, registry);
  std::vector<double> units = RoundingUnits(graph);
  // The values the widening added (around bit_cast) keep their types.
  for (ValueId id = units.size(); id < static_cast<ValueId>(wide.values().size()); ++id) {
    units.push_back(RoundingUnit(wide.value(id).type.dtype));
  }
  return Run(wide, WidenedToFloat64(inputs), registry, &units);
}

}  // namespace loom
