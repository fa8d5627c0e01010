// The registry itself and the checks every node goes through. The op
// families live in ir/ops/; OpRegistry::Global() is defined in
// op_registry_global.cc, which is the only place that names them all.
#include "ir/op_registry.h"

#include <type_traits>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/status_macros.h"

namespace loom {

absl::Status OpRegistry::Register(OpDef def) {
  if (def.name.empty()) {
    return absl::InvalidArgumentError("an op needs a name");
  }
  if (index_.contains(def.name)) {
    return absl::AlreadyExistsError(absl::StrCat("op '", def.name, "' is registered twice"));
  }
  if (def.min_inputs < 0 || def.num_outputs < -1 ||
      (def.max_inputs != -1 && def.max_inputs < def.min_inputs)) {
    return absl::InvalidArgumentError(absl::StrCat("op '", def.name, "' has an invalid arity"));
  }
  if (!def.infer || !def.eval) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", def.name, "' needs a shape function and an implementation"));
  }
  for (size_t i = 0; i < def.attrs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (def.attrs[i].name == def.attrs[j].name) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", def.name, "' declares attribute '", def.attrs[i].name, "' twice"));
      }
    }
  }
  index_.emplace(def.name, static_cast<int>(defs_.size()));
  defs_.push_back(std::move(def));
  return absl::OkStatus();
}

const OpDef* OpRegistry::Find(absl::string_view op) const {
  auto it = index_.find(op);
  return it == index_.end() ? nullptr : &defs_[it->second];
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(defs_.size());
  for (const OpDef& def : defs_) names.push_back(def.name);
  return names;
}

absl::string_view OpPatternName(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::kUnset:
      return "unset";
    case OpPattern::kElementwise:
      return "elementwise";
    case OpPattern::kBroadcast:
      return "broadcast";
    case OpPattern::kInjective:
      return "injective";
    case OpPattern::kReduction:
      return "reduction";
    case OpPattern::kContraction:
      return "contraction";
    case OpPattern::kOpaque:
      return "opaque";
  }
  return "?";
}

std::string DescribeNode(const Node& node) {
  return absl::StrCat("node '", node.name, "' (", node.op, ")");
}

absl::Status AddNodeContext(const Node& node, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(DescribeNode(node), ": ", status.message()));
}

namespace {

absl::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kString:
      return "string";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kStrings:
      return "strings";
  }
  return "?";
}

// The AttrType a value holds; the variant's alternatives are in AttrType's
// order.
static_assert(std::is_same_v<
              std::variant_alternative_t<static_cast<int>(AttrType::kInts), AttrValue>, AttrInts>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<int>(AttrType::kFloats), AttrValue>,
                   std::vector<double>>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<int>(AttrType::kStrings), AttrValue>,
                   std::vector<std::string>>);
AttrType TypeOf(const AttrValue& value) { return static_cast<AttrType>(value.index()); }

// An int is accepted where a float is declared, as Attrs::GetFloat reads it.
bool Matches(AttrType declared, const AttrValue& value) {
  const AttrType actual = TypeOf(value);
  return actual == declared || (declared == AttrType::kFloat && actual == AttrType::kInt);
}

std::string Plural(int64_t n, absl::string_view noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

std::string ExpectedInputs(const OpDef& def) {
  if (def.max_inputs == -1) {
    return absl::StrCat("at least ", Plural(def.min_inputs, "input"));
  }
  if (def.max_inputs == def.min_inputs) {
    return Plural(def.min_inputs, "input");
  }
  return absl::StrCat(def.min_inputs, " to ", def.max_inputs, " inputs");
}

std::string DeclaredAttrs(const OpDef& def) {
  if (def.attrs.empty()) return absl::StrCat(def.name, " takes none");
  return absl::StrCat("known: ",
                      absl::StrJoin(def.attrs, ", ", [](std::string* out, const AttrSpec& spec) {
                        out->append(spec.name);
                      }));
}

absl::Status CheckAttrs(const OpDef& def, const Attrs& attrs) {
  for (const auto& [name, value] : attrs.entries()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& candidate : def.attrs) {
      if (candidate.name == name) spec = &candidate;
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown attribute '", name, "' (", DeclaredAttrs(def), ")"));
    }
    if (!Matches(spec->type, value)) {
      return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be ",
                                                     AttrTypeName(spec->type), ", got ",
                                                     AttrTypeName(TypeOf(value))));
    }
  }
  for (const AttrSpec& spec : def.attrs) {
    if (spec.required && !attrs.Has(spec.name)) {
      return absl::InvalidArgumentError(absl::StrCat("missing required attribute '", spec.name,
                                                     "' (", AttrTypeName(spec.type), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSignature(const Node& node, const OpDef& def) {
  const int64_t num_inputs = node.inputs.size();
  if (num_inputs < def.min_inputs || (def.max_inputs != -1 && num_inputs > def.max_inputs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", ExpectedInputs(def), ", got ", num_inputs));
  }
  const int64_t num_outputs = node.outputs.size();
  if (def.num_outputs == -1 && num_outputs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected at least 1 output, got ", num_outputs));
  }
  if (def.num_outputs != -1 && num_outputs != def.num_outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", Plural(def.num_outputs, "output"), ", got ", num_outputs));
  }
  return CheckAttrs(def, node.attrs);
}

bool HasNegativeDim(const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<const OpDef*> FindCheckedOpDef(const Node& node, const OpRegistry& registry) {
  return CheckedOpDef(node, registry.Find(node.op));
}

absl::StatusOr<const OpDef*> CheckedOpDef(const Node& node, const OpDef* def) {
  if (def == nullptr) {
    return AddNodeContext(node,
                          absl::InvalidArgumentError(absl::StrCat("unknown op '", node.op, "'")));
  }
  if (absl::Status s = CheckSignature(node, *def); !s.ok()) {
    return AddNodeContext(node, s);
  }
  return def;
}

absl::Status CheckNodeSignature(const Node& node, const OpRegistry& registry) {
  return FindCheckedOpDef(node, registry).status();
}

namespace {

// Shape inference node after node. It tracks which values are defined so
// far: reading anything else would read a type not inferred yet.
class ShapeInference {
 public:
  ShapeInference(Graph& graph, const OpRegistry& registry)
      : graph_(graph),
        registry_(registry),
        num_values_(static_cast<int64_t>(graph.values().size())),
        defined_(num_values_, false) {}

  // Graph inputs, weights and constants are defined from the start.
  absl::Status DefineArguments() {
    for (const auto* ids : {&graph_.inputs(), &graph_.weights(), &graph_.constants()}) {
      for (ValueId id : *ids) {
        if (id < 0 || id >= num_values_) {
          return absl::InternalError("a graph argument has an invalid value id");
        }
        if (HasNegativeDim(graph_.value(id).type.shape)) {
          return absl::InvalidArgumentError(
              absl::StrCat("value '", graph_.value(id).name,
                           "' has a negative dimension: ", TypeToString(graph_.value(id).type)));
        }
        if (absl::Status s = CheckShapeLimits(graph_.value(id).type.shape); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("value '", graph_.value(id).name, "': ", s.message()));
        }
        defined_[id] = true;
      }
    }
    return absl::OkStatus();
  }

  // Sets the types of the node's outputs from its inputs' types.
  absl::Status Infer(const Node& node) {
    const OpDef* found = defs_.Get(node.op, [&](OpName op) { return registry_.Find(op); });
    LOOM_ASSIGN_OR_RETURN(const OpDef* def, CheckedOpDef(node, found));
    const size_t num_inputs = node.inputs.size();
    if (input_types_.size() < num_inputs) input_types_.resize(num_inputs);
    for (size_t i = 0; i < num_inputs; ++i) {
      const ValueId id = node.inputs[i];
      if (id < 0 || id >= num_values_) {
        return AddNodeContext(node, absl::InternalError("reads an invalid value id"));
      }
      if (!defined_[id]) {
        return AddNodeContext(
            node, absl::InvalidArgumentError(absl::StrCat("reads value '", graph_.value(id).name,
                                                          "' before it is defined")));
      }
      input_types_[i] = graph_.value(id).type;
    }
    absl::StatusOr<OutputTypes> output_types =
        def->infer(node, absl::MakeConstSpan(input_types_.data(), num_inputs));
    if (!output_types.ok()) {
      return AddNodeContext(node, output_types.status());
    }
    if (output_types->size() != node.outputs.size()) {
      return AddNodeContext(node, absl::InternalError("shape function returned the wrong "
                                                      "number of outputs"));
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueId id = node.outputs[i];
      if (id < 0 || id >= num_values_) {
        return AddNodeContext(node, absl::InternalError("writes an invalid value id"));
      }
    }
    if (absl::Status s = CheckOutputLimits(graph_, node, *output_types); !s.ok()) {
      return AddNodeContext(node, s);
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueId id = node.outputs[i];
      graph_.mutable_value(id).type = std::move((*output_types)[i]);
      defined_[id] = true;
    }
    return absl::OkStatus();
  }

  // Takes the node's stored output types as they are.
  absl::Status Trust(const Node& node) {
    for (ValueId id : node.outputs) {
      if (id < 0 || id >= num_values_) {
        return AddNodeContext(node, absl::InternalError("writes an invalid value id"));
      }
      defined_[id] = true;
    }
    return absl::OkStatus();
  }

 private:
  Graph& graph_;
  const OpRegistry& registry_;
  OpLookupCache<const OpDef*> defs_;
  const int64_t num_values_;
  std::vector<bool> defined_;
  // Kept from node to node: assigning a type to a slot reuses the slot's
  // shape storage, so gathering input types allocates nothing once warm.
  std::vector<TensorType> input_types_;
};

}  // namespace

absl::Status CheckOutputLimits(const Graph& graph, const Node& node,
                               absl::Span<const TensorType> types) {
  for (size_t i = 0; i < types.size() && i < node.outputs.size(); ++i) {
    if (absl::Status s = CheckShapeLimits(types[i].shape); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("output '", graph.value(node.outputs[i]).name, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status InferShapes(Graph& graph, const OpRegistry& registry) {
  ShapeInference inference(graph, registry);
  LOOM_RETURN_IF_ERROR(inference.DefineArguments());
  for (const Node& node : graph.nodes()) {
    LOOM_RETURN_IF_ERROR(inference.Infer(node));
  }
  return absl::OkStatus();
}

absl::Status InferShapesOfNodes(Graph& graph, const std::vector<bool>& which,
                                const OpRegistry& registry) {
  if (which.size() != graph.nodes().size()) {
    return absl::InternalError("InferShapesOfNodes: one flag per node needed");
  }
  ShapeInference inference(graph, registry);
  LOOM_RETURN_IF_ERROR(inference.DefineArguments());
  for (size_t i = 0; i < which.size(); ++i) {
    const Node& node = graph.nodes()[i];
    LOOM_RETURN_IF_ERROR(which[i] ? inference.Infer(node) : inference.Trust(node));
  }
  return absl::OkStatus();
}

}  // namespace loom
