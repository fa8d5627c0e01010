#include "frontends/onnx/onnx_importer.h"

#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_context.h"
#include "frontends/onnx/onnx_half_floats.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_subgraph.h"
#include "frontends/onnx/onnx_tensor.h"
#include "frontends/onnx/onnx_versions.h"
#include "ir/file_io.h"
#include "ir/interpreter.h"
#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace loom {
namespace {

using onnx_import::Composite;
using onnx_import::CompositeMap;
using onnx_import::Converter;
using onnx_import::FindConverter;
using onnx_import::NodeContext;
using onnx_import::ScopeValue;
using onnx_import::SubgraphImporter;
using onnx_import::ValueMap;

bool IsDefaultDomain(absl::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// The version of the default domain's opset, or 0 when the model imports
// none (and may then use no op of that domain).
int64_t DefaultOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (IsDefaultDomain(opset.domain())) return opset.version();
  }
  return 0;
}

// Refuses an opset_import that the importer does not know: a domain ONNX
// 1.23 does not define, or an opset of it newer than 1.23's (ops would be
// read with another version's semantics), as ONNX Runtime refuses them.
// Within the known opsets each node is judged on its own op's version
// (Importer::CheckVersion).
absl::Status CheckOpsetImports(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    const bool is_default = IsDefaultDomain(opset.domain());
    const std::string name =
        is_default ? "the default ONNX domain" : absl::StrCat("domain '", opset.domain(), "'");
    const onnx_import::OnnxDomain* known = onnx_import::FindDomain(opset.domain());
    if (known == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("the model imports opset ", opset.version(), " of ", name,
                       ", a domain loom's ONNX importer does not know"));
    }
    if (opset.version() < known->first_opset || opset.version() > known->last_opset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model imports opset ", opset.version(), " of ", name,
          opset.version() > known->last_opset ? ", newer than the newest" : ", not an opset",
          " loom's ONNX importer knows (", known->first_opset, " to ", known->last_opset, ")"));
    }
  }
  return absl::OkStatus();
}

// `type`, or an error naming `what` when its shape is beyond loom's limits
// (a product of its dims that overflows int64 included).
absl::StatusOr<TensorType> WithinLimits(absl::string_view what, TensorType type) {
  if (absl::Status s = CheckShapeLimits(type.shape); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return type;
}

// The static type of a graph input: declared dims, or the caller's shape
// or named dims' sizes where the model leaves dims symbolic.
absl::StatusOr<TensorType> InputType(const onnx::ValueInfoProto& info,
                                     const OnnxImportOptions& options,
                                     const NamedSizes& named_sizes) {
  const std::string what = absl::StrCat("graph input '", info.name(), "'");
  if (!info.type().has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what,
                     " is not a tensor (sequences, maps and optionals are not "
                     "supported)"));
  }
  const onnx::TypeProto::Tensor& tensor = info.type().tensor_type();
  LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(tensor.elem_type(), what));
  auto given = options.input_shapes.find(info.name());
  if (!tensor.has_shape()) {
    if (given != options.input_shapes.end()) {
      return WithinLimits(what, TensorType{dtype, given->second});
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has no declared shape; loom needs static shapes"));
  }
  const int rank = tensor.shape().dim_size();
  if (given != options.input_shapes.end() && static_cast<int>(given->second.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has rank ", rank, " but the given shape is ", ShapeToString(given->second)));
  }
  Shape shape;
  for (int d = 0; d < rank; ++d) {
    const onnx::TensorShapeProto::Dimension& dim = tensor.shape().dim(d);
    if (dim.has_dim_value() && dim.dim_value() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": dim ", d, " is ", dim.dim_value(),
                       ", a negative dimension (sizes are at least 0)"));
    }
    if (dim.has_dim_value()) {
      if (given != options.input_shapes.end() && given->second[d] != dim.dim_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": the given shape ", ShapeToString(given->second),
                         " contradicts dim ", d, " = ", dim.dim_value()));
      }
      shape.push_back(dim.dim_value());
    } else if (given != options.input_shapes.end()) {
      shape.push_back(given->second[d]);
    } else if (auto named = named_sizes.find(dim.dim_param());
               dim.has_dim_param() && named != named_sizes.end()) {
      shape.push_back(named->second);
    } else if (dim.has_dim_param()) {
      return NamedDimWithoutSize(what, d, dim.dim_param());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": dim ", d,
                       " is dynamic and unnamed; loom needs static shapes (give the input's "
                       "shape)"));
    }
  }
  return WithinLimits(what, TensorType{dtype, std::move(shape)});
}

// Checks a graph output's loom type against what the model declares, where
// it declares it.
absl::Status CheckDeclaredType(const onnx::ValueInfoProto& info, const TensorType& actual) {
  if (!info.has_type()) return absl::OkStatus();
  if (!info.type().has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph output '", info.name(), "' is not declared as a tensor"));
  }
  const onnx::TypeProto::Tensor& tensor = info.type().tensor_type();
  bool matches = true;
  std::string declared = "?";
  if (tensor.elem_type() != onnx::TensorProto::UNDEFINED) {
    LOOM_ASSIGN_OR_RETURN(
        DType dtype,
        DTypeFromOnnx(tensor.elem_type(), absl::StrCat("graph output '", info.name(), "'")));
    matches = dtype == actual.dtype;
    declared = std::string(DTypeName(dtype));
  }
  if (tensor.has_shape()) {
    const int rank = tensor.shape().dim_size();
    matches = matches && rank == static_cast<int>(actual.shape.size());
    std::vector<std::string> dims;
    for (int d = 0; d < rank; ++d) {
      const onnx::TensorShapeProto::Dimension& dim = tensor.shape().dim(d);
      if (dim.has_dim_value()) {
        matches = matches && d < static_cast<int>(actual.shape.size()) &&
                  actual.shape[d] == dim.dim_value();
        dims.push_back(absl::StrCat(dim.dim_value()));
      } else {
        dims.push_back("?");
      }
    }
    absl::StrAppend(&declared, "[", absl::StrJoin(dims, ","), "]");
  }
  if (matches) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("graph output '", info.name(),
                                                 "': the model declares ", declared,
                                                 " but loom computes ", TypeToString(actual)));
}

// The values of one graph being imported (the model's, or a graph that a
// node holds, imported into the same loom graph): its ONNX names, those of
// its enclosing scopes included, and the ones it wants known at import.
struct Scope {
  ValueMap values;
  CompositeMap composites;  // its sequences and optionals
  // Names this graph defines (another definition of one is an error).
  absl::flat_hash_set<std::string> defined;
  // Values wanted known at import: a node computing one from constants is
  // folded (onnx_import::WantedAtImport).
  absl::flat_hash_set<std::string> wanted;
};

// Graph attributes are imported once per use (a loop's body once per
// iteration); past this many nodes in all a model is refused.
constexpr int64_t kMaxSubgraphNodes = 100000;

class Importer : public SubgraphImporter {
 public:
  Importer(const onnx::ModelProto& model, const OnnxImportOptions& options, NamedSizes named_sizes)
      : model_(model), options_(options), named_sizes_(std::move(named_sizes)) {}

  absl::StatusOr<Graph> Run() {
    LOOM_RETURN_IF_ERROR(CheckOpsetImports(model_));
    opset_ = DefaultOpset(model_);
    const onnx::GraphProto& g = model_.graph();
    graph_.name = g.name();
    needed_ = onnx_import::WantedAtImport(g, {}, /*if_conditions=*/false);
    top_.wanted = onnx_import::WantedAtImport(g, {}, /*if_conditions=*/true);
    scope_ = &top_;
    LOOM_RETURN_IF_ERROR(AddArguments(g));
    for (const onnx::NodeProto& node : g.node()) {
      LOOM_RETURN_IF_ERROR(AddNode(node));
    }
    LOOM_RETURN_IF_ERROR(AddOutputs(g));
    if (absl::Status s = VerifyGraph(graph_); !s.ok()) {
      return absl::InternalError(absl::StrCat("the imported graph is invalid: ", s.message()));
    }
    return std::move(graph_);
  }

  absl::StatusOr<std::vector<ScopeValue>> ImportSubgraph(
      const NodeContext& node, const onnx::GraphProto& body, const ValueMap& outer,
      const CompositeMap& outer_composites, absl::Span<const ScopeValue> inputs,
      const std::vector<bool>& wanted_outputs) override {
    if (body.input_size() != static_cast<int>(inputs.size())) {
      return node.Refuse(absl::StrCat("its graph '", body.name(), "' has ", body.input_size(),
                                      " inputs; the node passes it ", inputs.size()));
    }
    if (body.sparse_initializer_size() > 0) {
      return node.Refuse(absl::StrCat("its graph '", body.name(), "' has sparse initializers"));
    }
    subgraph_nodes_ += body.node_size();
    if (subgraph_nodes_ > kMaxSubgraphNodes) {
      return node.Refuse(
          absl::StrCat("the model's graph attributes, imported as often as its "
                       "loops run (nested ones too), would add more than ",
                       kMaxSubgraphNodes, " nodes"));
    }
    Scope scope{outer, outer_composites, {}, {}};
    absl::flat_hash_set<std::string> roots;
    for (int k = 0; k < body.output_size(); ++k) {
      if (k < static_cast<int>(wanted_outputs.size()) && wanted_outputs[k]) {
        roots.insert(body.output(k).name());
      }
    }
    scope.wanted = onnx_import::WantedAtImport(body, std::move(roots), /*if_conditions=*/true);
    LOOM_RETURN_IF_ERROR(DefineBodyArguments(node, body, inputs, scope));
    Scope* const enclosing = scope_;
    scope_ = &scope;
    absl::Status status = absl::OkStatus();
    for (int n = 0; n < body.node_size() && status.ok(); ++n) status = AddNode(body.node(n));
    scope_ = enclosing;
    LOOM_RETURN_IF_ERROR(status);
    return BodyOutputs(node, body, scope);
  }

  bool WantedAtImport(const std::string& name) const override {
    return scope_->wanted.contains(name);
  }

 private:
  // Binds a graph attribute's inputs to `inputs` and adds its initializers,
  // in its own `scope`.
  absl::Status DefineBodyArguments(const NodeContext& node, const onnx::GraphProto& body,
                                   absl::Span<const ScopeValue> inputs, Scope& scope) {
    for (int k = 0; k < body.input_size(); ++k) {
      const std::string& name = body.input(k).name();
      if (inputs[k].is_tensor()) {
        LOOM_RETURN_IF_ERROR(CheckBodyInput(node, body.input(k), inputs[k].tensor));
        scope.values[name] = inputs[k].tensor;
        scope.composites.erase(name);
      } else {
        scope.composites[name] = *inputs[k].composite;
        scope.values.erase(name);
      }
      scope.defined.insert(name);
    }
    for (const onnx::TensorProto& init : body.initializer()) {
      LOOM_ASSIGN_OR_RETURN(Tensor data,
                            TensorFromOnnx(init, absl::StrCat("initializer '", init.name(), "'"),
                                           options_.external_data_dir));
      LOOM_ASSIGN_OR_RETURN(ValueId id,
                            graph_.AddInitializer(graph_.UniqueValueName(init.name()),
                                                  ValueKind::kConstant, std::move(data)));
      scope.values[init.name()] = id;
      scope.defined.insert(init.name());
    }
    return absl::OkStatus();
  }

  // The values of a graph attribute's outputs once its nodes are imported.
  absl::StatusOr<std::vector<ScopeValue>> BodyOutputs(const NodeContext& node,
                                                      const onnx::GraphProto& body,
                                                      const Scope& scope) const {
    std::vector<ScopeValue> outputs;
    for (const onnx::ValueInfoProto& output : body.output()) {
      auto tensor = scope.values.find(output.name());
      auto composite = scope.composites.find(output.name());
      if (tensor != scope.values.end()) {
        outputs.push_back({tensor->second, std::nullopt});
      } else if (composite != scope.composites.end()) {
        outputs.push_back({NodeContext::kNoValue, composite->second});
      } else {
        return node.Refuse(absl::StrCat("output '", output.name(), "' of its graph '", body.name(),
                                        "' is not defined in it or around it"));
      }
    }
    return outputs;
  }

  // A graph input's declared element type and rank, where declared, must
  // be those of the value the node passes in.
  absl::Status CheckBodyInput(const NodeContext& node, const onnx::ValueInfoProto& info,
                              ValueId value) const {
    if (!info.has_type() || info.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      return absl::OkStatus();
    }
    if (!info.type().has_tensor_type()) {
      return node.Refuse(absl::StrCat("its graph's input '", info.name(),
                                      "' is declared as a sequence or optional; the node passes "
                                      "it a tensor"));
    }
    const onnx::TypeProto::Tensor& declared = info.type().tensor_type();
    const TensorType& actual = graph_.value(value).type;
    bool matches = true;
    if (declared.elem_type() != onnx::TensorProto::UNDEFINED) {
      absl::StatusOr<DType> dtype = DTypeFromOnnx(declared.elem_type(), info.name());
      matches = dtype.ok() && *dtype == actual.dtype;
    }
    if (declared.has_shape()) {
      matches = matches && declared.shape().dim_size() == static_cast<int>(actual.shape.size());
    }
    if (matches) return absl::OkStatus();
    return node.Refuse(absl::StrCat("its graph's input '", info.name(),
                                    "' is declared with another element type or rank than the ",
                                    TypeToString(actual), " passed in"));
  }

  NodeContext Context(const onnx::NodeProto& node) {
    return NodeContext(node, opset_, graph_, scope_->values, this, &scope_->composites);
  }

  absl::Status AddArguments(const onnx::GraphProto& g) {
    if (g.sparse_initializer_size() > 0) {
      return absl::InvalidArgumentError("sparse initializers are not supported");
    }
    absl::flat_hash_set<std::string> initializers;
    for (const onnx::TensorProto& init : g.initializer()) {
      initializers.insert(init.name());
    }
    for (const onnx::ValueInfoProto& input : g.input()) {
      // Before IR 4 initializers were listed as inputs too.
      if (initializers.contains(input.name())) continue;
      LOOM_RETURN_IF_ERROR(AddInput(input));
    }
    for (const onnx::TensorProto& init : g.initializer()) {
      LOOM_ASSIGN_OR_RETURN(
          std::shared_ptr<const LazyTensor> data,
          SharedTensorFromOnnx(init, absl::StrCat("initializer '", init.name(), "'"),
                               options_.external_data_dir));
      // A one-element initializer is a literal (an epsilon, a scale, an
      // exponent): a constant, which lowering writes into the kernels.
      const ValueKind kind =
          NumElements(data->type().shape) == 1 ? ValueKind::kConstant : ValueKind::kWeight;
      LOOM_ASSIGN_OR_RETURN(ValueId id, graph_.AddInitializer(init.name(), kind, std::move(data)));
      Define(init.name(), id);
    }
    return absl::OkStatus();
  }

  absl::Status AddInput(const onnx::ValueInfoProto& input) {
    if (input.type().has_sequence_type() || input.type().has_optional_type()) {
      return AddCompositeInput(input);
    }
    LOOM_ASSIGN_OR_RETURN(TensorType type, InputType(input, options_, named_sizes_));
    LOOM_ASSIGN_OR_RETURN(ValueId id, AddInputValue(input.name(), input.name(), std::move(type)));
    Define(input.name(), id);
    return absl::OkStatus();
  }

  // Loom input `name` of `type` (ONNX input `onnx_name`, or one of its
  // elements), or a constant of its given value where loom needs that
  // input at import.
  absl::StatusOr<ValueId> AddInputValue(const std::string& onnx_name, const std::string& name,
                                        TensorType type) {
    auto bound = options_.bound_inputs.find(name);
    if (!needed_.contains(onnx_name) || bound == options_.bound_inputs.end()) {
      return graph_.AddInput(name, std::move(type));
    }
    if (bound->second.type() != type) {
      return absl::InvalidArgumentError(absl::StrCat("graph input '", name, "' is ",
                                                     TypeToString(type), " but its given value is ",
                                                     TypeToString(bound->second.type())));
    }
    return graph_.AddInitializer(name, ValueKind::kConstant, bound->second);
  }

  // A sequence or optional graph input, flattened into loom inputs by the
  // structure OnnxImportOptions::structured_inputs gives.
  absl::Status AddCompositeInput(const onnx::ValueInfoProto& input) {
    const std::string what = absl::StrCat("graph input '", input.name(), "'");
    Composite value;
    const onnx::TypeProto* element = &input.type().sequence_type().elem_type();
    if (input.type().has_optional_type()) {
      const onnx::TypeProto& held = input.type().optional_type().elem_type();
      value.kind = Composite::Kind::kOptional;
      value.holds_sequence = held.has_sequence_type();
      element = value.holds_sequence ? &held.sequence_type().elem_type() : &held;
    }
    if (!element->has_tensor_type()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          " is not a tensor (a sequence or optional of other than tensors is not supported)"));
    }
    auto given = options_.structured_inputs.find(input.name());
    if (given == options_.structured_inputs.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          " is not a tensor (a sequence or optional whose structure, whether it holds a value and "
          "its elements' shapes, loom needs at import and was not given)"));
    }
    LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(element->tensor_type().elem_type(), what));
    value.present = value.is_sequence() || given->second.present;
    const bool one_tensor = value.present && !value.has_sequence();
    if (one_tensor && given->second.elements.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is an optional tensor; its given structure has ",
                       given->second.elements.size(), " tensors"));
    }
    for (size_t k = 0; value.present && k < given->second.elements.size(); ++k) {
      const std::string name = one_tensor ? input.name() : SequenceElementName(input.name(), k);
      LOOM_ASSIGN_OR_RETURN(TensorType type,
                            WithinLimits(what, TensorType{dtype, given->second.elements[k]}));
      LOOM_ASSIGN_OR_RETURN(ValueId id, AddInputValue(input.name(), name, std::move(type)));
      value.elements.push_back(id);
    }
    top_.composites[input.name()] = std::move(value);
    top_.defined.insert(input.name());
    return absl::OkStatus();
  }

  void Define(const std::string& name, ValueId id) {
    scope_->values[name] = id;
    scope_->defined.insert(name);
  }

  // Whether every input of `node` is known at import.
  bool InputsKnown(const onnx::NodeProto& node) const {
    for (const std::string& input : node.input()) {
      if (input.empty()) continue;
      auto it = scope_->values.find(input);
      if (it == scope_->values.end()) return false;
      if (!graph_.HasInitializer(it->second)) return false;
    }
    return true;
  }

  bool OutputNeeded(const onnx::NodeProto& node) const {
    for (const std::string& output : node.output()) {
      if (scope_->wanted.contains(output)) return true;
    }
    return false;
  }

  // The version of the node's op that the model's opset selects (or its
  // first, for an op newer than the model): null for an op ONNX 1.23 does
  // not define in the default domain (the table has no other domain's ops:
  // their converters check them).
  const onnx_import::OnnxSchema* SchemaOf(const onnx::NodeProto& node) const {
    if (!IsDefaultDomain(node.domain())) return nullptr;
    const onnx_import::OnnxSchema* schema = onnx_import::FindSchema(node.op_type(), opset_);
    if (schema != nullptr) return schema;
    return onnx_import::FindSchema(node.op_type(), onnx_import::NewestOnnxOpset());
  }

  // Refuses a node whose op version is newer than the one its converter
  // implements: it would be read with the older version's meaning.
  absl::Status CheckVersion(const onnx::NodeProto& node) {
    const onnx_import::OnnxSchema* schema = SchemaOf(node);
    if (schema == nullptr) return absl::OkStatus();  // the converter decides
    const int64_t through = onnx_import::ImplementedThroughOpset(node.op_type());
    const onnx_import::OnnxSchema* implemented = onnx_import::FindSchema(node.op_type(), through);
    if (implemented != nullptr && implemented->since_version >= schema->since_version) {
      return absl::OkStatus();
    }
    return Context(node).Refuse(absl::StrCat(
        "op ", node.op_type(), " (opset ", opset_, ") is its version ", schema->since_version,
        "; loom implements ",
        implemented == nullptr ? absl::StrCat("no version of it up to opset ", through)
                               : absl::StrCat("version ", implemented->since_version, " (opsets ",
                                              implemented->since_version, " to ", through, ")")));
  }

  // The node's input and output counts against its op's version: the
  // converters rely on them. And each output must be a new name.
  absl::Status CheckArity(const onnx::NodeProto& node) {
    for (const std::string& output : node.output()) {
      if (!output.empty() && scope_->defined.contains(output)) {
        return Context(node).Refuse(absl::StrCat(
            "output '", output, "' is already defined (an ONNX graph defines each name once)"));
      }
    }
    const onnx_import::OnnxSchema* schema = SchemaOf(node);
    if (schema == nullptr) return absl::OkStatus();  // the converter decides
    auto refuse = [&](const char* what, int count, int low, int high) {
      return Context(node).Refuse(absl::StrCat("has ", count, " ", what, "; ", node.op_type(),
                                               " (opset ", opset_, ") takes ", low, " to ", high));
    };
    if (node.input_size() < schema->min_inputs || node.input_size() > schema->max_inputs) {
      return refuse("inputs", node.input_size(), schema->min_inputs, schema->max_inputs);
    }
    if (node.output_size() < schema->min_outputs || node.output_size() > schema->max_outputs) {
      return refuse("outputs", node.output_size(), schema->min_outputs, schema->max_outputs);
    }
    return absl::OkStatus();
  }

  absl::Status AddNode(const onnx::NodeProto& node) {
    const Converter* converter = FindConverter(node.op_type(), node.domain());
    if (converter == nullptr && !IsDefaultDomain(node.domain())) {
      return Context(node).Refuse(absl::StrCat("op ", node.op_type(), " of domain '", node.domain(),
                                               "' is not supported by loom"));
    }
    if (opset_ == 0) {
      return Context(node).Refuse("the model imports no opset of the default ONNX domain");
    }
    if (converter == nullptr) {
      return Context(node).Refuse(
          absl::StrCat("op ", node.op_type(), " (opset ", opset_, ") is not supported by loom"));
    }
    LOOM_RETURN_IF_ERROR(CheckVersion(node));
    LOOM_RETURN_IF_ERROR(CheckArity(node));
    for (const std::string& output : node.output()) scope_->defined.insert(output);
    // A graph's nodes handle their own 16-bit values; sequences and
    // optionals hold them as they are.
    if (onnx_import::HasGraphAttr(node) || onnx_import::IsCompositeOp(node.op_type())) {
      return Convert(node, *converter);
    }
    LOOM_ASSIGN_OR_RETURN(
        std::optional<onnx_import::HalfFloatNode> half,
        onnx_import::WidenHalfFloatInputs(node, graph_, scope_->values, wide_copies_));
    LOOM_RETURN_IF_ERROR(Convert(node, *converter));
    if (!half.has_value()) return absl::OkStatus();
    return onnx_import::NarrowHalfFloatOutputs(node, *half, graph_, scope_->values);
  }

  absl::Status Convert(const onnx::NodeProto& node, const Converter& converter) {
    // A node holding graphs reads values around it: its graphs' nodes fold.
    if (node.input_size() > 0 && !onnx_import::HasGraphAttr(node) &&
        !onnx_import::IsCompositeOp(node.op_type()) && OutputNeeded(node) && InputsKnown(node)) {
      return FoldNode(node, converter);
    }
    NodeContext ctx = Context(node);
    LOOM_RETURN_IF_ERROR(converter(ctx));
    if (!ctx.AllOutputsBound()) {
      return absl::InternalError(absl::StrCat(ctx.label(), ": an output was left undefined"));
    }
    return absl::OkStatus();
  }

  // Converts `node` in a scratch graph whose inputs are the node's (known)
  // inputs as constants, runs it with the reference interpreter and adds
  // its outputs as constants.
  absl::Status FoldNode(const onnx::NodeProto& node, const Converter& converter) {
    Graph scratch;
    ValueMap scratch_values;
    for (const std::string& input : node.input()) {
      if (input.empty() || scratch_values.contains(input)) continue;
      LOOM_ASSIGN_OR_RETURN(ValueId id,
                            scratch.AddInitializer(input, ValueKind::kConstant,
                                                   graph_.initializer(scope_->values.at(input))));
      scratch_values[input] = id;
    }
    NodeContext ctx(node, opset_, scratch, scratch_values);
    LOOM_RETURN_IF_ERROR(converter(ctx));
    std::vector<int> wanted;
    for (int i = 0; i < node.output_size(); ++i) {
      if (!ctx.WantsOutput(i)) continue;
      auto it = scratch_values.find(node.output(i));
      if (it == scratch_values.end()) {
        return absl::InternalError(absl::StrCat(ctx.label(), ": an output was left undefined"));
      }
      wanted.push_back(i);
      scratch.AddOutput(it->second);
    }
    absl::StatusOr<std::vector<Tensor>> results = Interpret(scratch, {});
    if (!results.ok()) {
      return ctx.Refuse(absl::StrCat("cannot compute it at import: ", results.status().message()));
    }
    for (size_t k = 0; k < wanted.size(); ++k) {
      const std::string& name = node.output(wanted[k]);
      LOOM_ASSIGN_OR_RETURN(
          ValueId id,
          graph_.AddInitializer(graph_.FindValue(name) < 0 ? name : graph_.UniqueValueName(name),
                                ValueKind::kConstant, std::move((*results)[k])));
      scope_->values[name] = id;
    }
    return absl::OkStatus();
  }

  absl::Status AddOutputs(const onnx::GraphProto& g) {
    if (g.output_size() == 0) {
      return absl::InvalidArgumentError("the graph has no outputs");
    }
    for (const onnx::ValueInfoProto& output : g.output()) {
      auto composite = top_.composites.find(output.name());
      if (composite != top_.composites.end()) {
        LOOM_RETURN_IF_ERROR(AddCompositeOutput(output, composite->second));
        continue;
      }
      auto it = top_.values.find(output.name());
      if (it == top_.values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", output.name(), "' is not defined by any node"));
      }
      if (absl::Status s = CheckDeclaredType(output, graph_.value(it->second).type); !s.ok()) {
        return s;
      }
      graph_.AddOutput(it->second);
      if (graph_.value(it->second).name != output.name()) {
        graph_.SetOutputName(graph_.outputs().size() - 1, output.name());
      }
    }
    return absl::OkStatus();
  }

  // A sequence or optional graph output, flattened as inputs are
  // (OnnxImportOptions::structured_inputs).
  absl::Status AddCompositeOutput(const onnx::ValueInfoProto& output, const Composite& value) {
    if (output.type().has_tensor_type()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", output.name(), "' is declared as a tensor but is ",
                       value.is_sequence() ? "a sequence" : "an optional"));
    }
    for (size_t k = 0; k < value.elements.size(); ++k) {
      graph_.AddOutput(value.elements[k]);
      graph_.SetOutputName(graph_.outputs().size() - 1, value.has_sequence()
                                                            ? SequenceElementName(output.name(), k)
                                                            : output.name());
    }
    return absl::OkStatus();
  }

  const onnx::ModelProto& model_;
  const OnnxImportOptions& options_;
  const NamedSizes named_sizes_;
  int64_t opset_ = 0;
  Graph graph_;
  Scope top_;                            // the model's graph
  Scope* scope_ = &top_;                 // the graph whose nodes are being imported
  onnx_import::WideCopies wide_copies_;  // f32 copies of 16-bit values
  // The model graph's inputs that loom needs at compile time: bound to
  // their given values (OnnxImportOptions::bound_inputs).
  absl::flat_hash_set<std::string> needed_;
  // Nodes imported from graph attributes so far, each import counted (an
  // unrolled loop imports its body once an iteration): nested loops are
  // bounded as a whole, past each node's own limit.
  int64_t subgraph_nodes_ = 0;
};

}  // namespace

std::string SequenceElementName(absl::string_view name, int64_t index) {
  return absl::StrCat(name, "[", index, "]");
}

namespace {

NamedDimUses FindNamedDims(const onnx::GraphProto& graph) {
  NamedDimUses uses;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (!input.type().has_tensor_type()) continue;
    const auto& dims = input.type().tensor_type().shape().dim();
    for (int d = 0; d < dims.size(); ++d) {
      if (dims[d].has_dim_param()) uses[dims[d].dim_param()].emplace_back(input.name(), d);
    }
  }
  return uses;
}

}  // namespace

absl::StatusOr<Graph> ImportOnnxModel(const onnx::ModelProto& model,
                                      const OnnxImportOptions& options) {
  LOOM_ASSIGN_OR_RETURN(NamedSizes named_sizes,
                        ResolveNamedDims(FindNamedDims(model.graph()), options));
  return Importer(model, options, std::move(named_sizes)).Run();
}

absl::StatusOr<onnx::ModelProto> ReadOnnxModelFile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a binary ONNX model (ModelProto)"));
  }
  return model;
}

namespace {

void AddExternalDataFiles(const onnx::TensorProto& tensor, std::vector<std::string>& files) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    if (entry.key() == "location" && !absl::c_linear_search(files, entry.value())) {
      files.push_back(entry.value());
    }
  }
}

void AddExternalDataFiles(const onnx::GraphProto& graph, std::vector<std::string>& files);

void AddExternalDataFiles(const onnx::NodeProto& node, std::vector<std::string>& files) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.has_t()) AddExternalDataFiles(attribute.t(), files);
    for (const onnx::TensorProto& tensor : attribute.tensors()) AddExternalDataFiles(tensor, files);
    if (attribute.has_g()) AddExternalDataFiles(attribute.g(), files);
    for (const onnx::GraphProto& subgraph : attribute.graphs()) {
      AddExternalDataFiles(subgraph, files);
    }
  }
}

void AddExternalDataFiles(const onnx::GraphProto& graph, std::vector<std::string>& files) {
  for (const onnx::TensorProto& tensor : graph.initializer()) AddExternalDataFiles(tensor, files);
  for (const onnx::NodeProto& node : graph.node()) AddExternalDataFiles(node, files);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> OnnxExternalDataFiles(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(onnx::ModelProto model, ReadOnnxModelFile(path));
  std::vector<std::string> files;
  AddExternalDataFiles(model.graph(), files);
  for (const onnx::FunctionProto& function : model.functions()) {
    for (const onnx::NodeProto& node : function.node()) AddExternalDataFiles(node, files);
  }
  return files;
}

absl::StatusOr<absl::flat_hash_map<std::string, std::vector<std::string>>> OnnxDimNames(
    const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(onnx::ModelProto model, ReadOnnxModelFile(path));
  absl::flat_hash_map<std::string, std::vector<std::string>> names;
  for (const auto* values : {&model.graph().input(), &model.graph().output()}) {
    for (const onnx::ValueInfoProto& value : *values) {
      std::vector<std::string>& dims = names[value.name()];
      for (const onnx::TensorShapeProto::Dimension& dim :
           value.type().tensor_type().shape().dim()) {
        dims.push_back(dim.dim_param());
      }
    }
  }
  return names;
}

absl::StatusOr<Graph> LoadOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  LOOM_ASSIGN_OR_RETURN(onnx::ModelProto model, ReadOnnxModelFile(path));
  OnnxImportOptions with_folder = options;
  if (with_folder.external_data_dir.empty()) {
    with_folder.external_data_dir = std::filesystem::path(path).parent_path().string();
    if (with_folder.external_data_dir.empty()) with_folder.external_data_dir = ".";
  }
  absl::StatusOr<Graph> graph = ImportOnnxModel(model, with_folder);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(), absl::StrCat(path, ": ", graph.status().message()));
  }
  return graph;
}

}  // namespace loom
