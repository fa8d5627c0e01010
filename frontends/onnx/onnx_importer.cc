#include "frontends/onnx/onnx_importer.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/onnx_context.h"
#include "frontends/onnx/onnx_half_floats.h"
#include "frontends/onnx/onnx_ops.h"
#include "frontends/onnx/onnx_tensor.h"
#include "frontends/onnx/onnx_versions.h"
#include "ir/file_io.h"
#include "ir/interpreter.h"
#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace loom {
namespace {

using onnx_import::Converter;
using onnx_import::FindConverter;
using onnx_import::NodeContext;
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

// ONNX value names whose data loom needs at compile time: the static
// operands of every node, and everything they are computed from (except
// through ops that read only their input's type, like Shape).
absl::flat_hash_set<std::string> NeededAtImport(const onnx::GraphProto& g) {
  absl::flat_hash_set<std::string> needed;
  for (int n = g.node_size() - 1; n >= 0; --n) {
    const onnx::NodeProto& node = g.node(n);
    for (int i : onnx_import::StaticOperands(node.op_type())) {
      if (i < node.input_size() && !node.input(i).empty()) {
        needed.insert(node.input(i));
      }
    }
    if (onnx_import::ReadsOnlyTypes(node.op_type())) continue;
    bool output_needed = false;
    for (const std::string& output : node.output()) {
      output_needed = output_needed || needed.contains(output);
    }
    if (!output_needed) continue;
    for (const std::string& input : node.input()) {
      if (!input.empty()) needed.insert(input);
    }
  }
  return needed;
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
                                     const OnnxImportOptions& options) {
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
    } else if (auto named = options.dims.find(dim.dim_param());
               dim.has_dim_param() && named != options.dims.end()) {
      shape.push_back(named->second);
    } else if (dim.has_dim_param()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": dim ", d, " is the named dim '", dim.dim_param(),
                       "'; loom compiles for static shapes: give its size (loom compile --dims=",
                       dim.dim_param(), "=N, or dims={'", dim.dim_param(), "': N} in Python)"));
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

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const OnnxImportOptions& options)
      : model_(model), options_(options) {}

  absl::StatusOr<Graph> Run() {
    LOOM_RETURN_IF_ERROR(CheckOpsetImports(model_));
    opset_ = DefaultOpset(model_);
    const onnx::GraphProto& g = model_.graph();
    graph_.name = g.name();
    needed_ = NeededAtImport(g);
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

 private:
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
      LOOM_ASSIGN_OR_RETURN(Tensor data,
                            TensorFromOnnx(init, absl::StrCat("initializer '", init.name(), "'"),
                                           options_.external_data_dir));
      // A one-element initializer is a literal (an epsilon, a scale, an
      // exponent): a constant, which lowering writes into the kernels.
      const ValueKind kind = data.num_elements() == 1 ? ValueKind::kConstant : ValueKind::kWeight;
      LOOM_ASSIGN_OR_RETURN(ValueId id, graph_.AddInitializer(init.name(), kind, std::move(data)));
      values_[init.name()] = id;
    }
    return absl::OkStatus();
  }

  absl::Status AddInput(const onnx::ValueInfoProto& input) {
    LOOM_ASSIGN_OR_RETURN(TensorType type, InputType(input, options_));
    auto bound = options_.bound_inputs.find(input.name());
    absl::StatusOr<ValueId> id;
    if (needed_.contains(input.name()) && bound != options_.bound_inputs.end()) {
      if (bound->second.type() != type) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph input '", input.name(), "' is ", TypeToString(type),
                         " but its given value is ", TypeToString(bound->second.type())));
      }
      id = graph_.AddInitializer(input.name(), ValueKind::kConstant, bound->second);
    } else {
      id = graph_.AddInput(input.name(), std::move(type));
    }
    if (!id.ok()) return id.status();
    values_[input.name()] = *id;
    return absl::OkStatus();
  }

  // Whether every input of `node` is known at import.
  bool InputsKnown(const onnx::NodeProto& node) const {
    for (const std::string& input : node.input()) {
      if (input.empty()) continue;
      auto it = values_.find(input);
      if (it == values_.end()) return false;
      if (!graph_.HasInitializer(it->second)) return false;
    }
    return true;
  }

  bool OutputNeeded(const onnx::NodeProto& node) const {
    for (const std::string& output : node.output()) {
      if (needed_.contains(output)) return true;
    }
    return false;
  }

  // The version of the node's op that the model's opset selects (or its
  // first, for an op newer than the model): null for an op ONNX 1.23 does
  // not define.
  const onnx_import::OnnxSchema* SchemaOf(const onnx::NodeProto& node) const {
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
    return NodeContext(node, opset_, graph_, values_)
        .Refuse(absl::StrCat("op ", node.op_type(), " (opset ", opset_, ") is its version ",
                             schema->since_version, "; loom implements ",
                             implemented == nullptr
                                 ? absl::StrCat("no version of it up to opset ", through)
                                 : absl::StrCat("version ", implemented->since_version, " (opsets ",
                                                implemented->since_version, " to ", through, ")")));
  }

  // The node's input and output counts against its op's version: the
  // converters rely on them. And each output must be a new name.
  absl::Status CheckArity(const onnx::NodeProto& node) {
    for (const std::string& output : node.output()) {
      if (!output.empty() && values_.contains(output)) {
        return NodeContext(node, opset_, graph_, values_)
            .Refuse(absl::StrCat("output '", output,
                                 "' is already defined (an ONNX graph defines each name once)"));
      }
    }
    const onnx_import::OnnxSchema* schema = SchemaOf(node);
    if (schema == nullptr) return absl::OkStatus();  // the converter decides
    auto refuse = [&](const char* what, int count, int low, int high) {
      return NodeContext(node, opset_, graph_, values_)
          .Refuse(absl::StrCat("has ", count, " ", what, "; ", node.op_type(), " (opset ", opset_,
                               ") takes ", low, " to ", high));
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
    const Converter* converter = FindConverter(node.op_type());
    if (!IsDefaultDomain(node.domain())) {
      return NodeContext(node, opset_, graph_, values_)
          .Refuse(absl::StrCat("op ", node.op_type(), " of domain '", node.domain(),
                               "' is not supported by loom"));
    }
    if (opset_ == 0) {
      return NodeContext(node, opset_, graph_, values_)
          .Refuse("the model imports no opset of the default ONNX domain");
    }
    if (converter == nullptr) {
      return NodeContext(node, opset_, graph_, values_)
          .Refuse(absl::StrCat("op ", node.op_type(), " (opset ", opset_,
                               ") is not supported by loom"));
    }
    LOOM_RETURN_IF_ERROR(CheckVersion(node));
    LOOM_RETURN_IF_ERROR(CheckArity(node));
    LOOM_ASSIGN_OR_RETURN(std::optional<onnx_import::HalfFloatNode> half,
                          onnx_import::WidenHalfFloatInputs(node, graph_, values_, wide_copies_));
    LOOM_RETURN_IF_ERROR(Convert(node, *converter));
    if (!half.has_value()) return absl::OkStatus();
    return onnx_import::NarrowHalfFloatOutputs(node, *half, graph_, values_);
  }

  absl::Status Convert(const onnx::NodeProto& node, const Converter& converter) {
    if (node.input_size() > 0 && OutputNeeded(node) && InputsKnown(node)) {
      return FoldNode(node, converter);
    }
    NodeContext ctx(node, opset_, graph_, values_);
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
                                                   graph_.initializer(values_.at(input))));
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
      values_[name] = id;
    }
    return absl::OkStatus();
  }

  absl::Status AddOutputs(const onnx::GraphProto& g) {
    if (g.output_size() == 0) {
      return absl::InvalidArgumentError("the graph has no outputs");
    }
    for (const onnx::ValueInfoProto& output : g.output()) {
      auto it = values_.find(output.name());
      if (it == values_.end()) {
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

  const onnx::ModelProto& model_;
  const OnnxImportOptions& options_;
  int64_t opset_ = 0;
  Graph graph_;
  ValueMap values_;
  onnx_import::WideCopies wide_copies_;  // f32 copies of 16-bit values
  absl::flat_hash_set<std::string> needed_;
};

// Every size given for a named dim is at least 0 and names a dim of one of
// the graph's inputs: a misspelt name is an error, not a size left unused.
absl::Status CheckNamedDimsExist(const onnx::GraphProto& graph, const OnnxImportOptions& options) {
  absl::btree_set<std::string> named;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (!input.type().has_tensor_type()) continue;
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      if (dim.has_dim_param()) named.insert(dim.dim_param());
    }
  }
  for (const auto& [name, size] : options.dims) {
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the size given for the named dim '", name, "' is negative: ", size));
    }
    if (named.contains(name)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("a size is given for the named dim '", name, "', which no graph input has (",
                     named.empty() ? "the model's inputs have no named dims"
                                   : absl::StrCat("the model's: ", absl::StrJoin(named, ", ")),
                     ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Graph> ImportOnnxModel(const onnx::ModelProto& model,
                                      const OnnxImportOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckNamedDimsExist(model.graph(), options));
  return Importer(model, options).Run();
}

absl::StatusOr<onnx::ModelProto> ReadOnnxModelFile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a binary ONNX model (ModelProto)"));
  }
  return model;
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
