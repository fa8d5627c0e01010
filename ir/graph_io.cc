#include "ir/graph_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <queue>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "ir/file_io.h"
#include "ir/op_registry.h"
#include "ir/parallel.h"
#include "ir/random.h"
#include "ir/shared_weights.h"
#include "ir/status_macros.h"
#include "ir/verifier.h"

namespace loom {
namespace {

class CollectFirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectFirstError(absl::string_view filename) : filename_(filename) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ = absl::StrCat(filename_, ":", line + 1, ":", column + 1, ": ", message);
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string filename_;
  std::string first_;
};

// Text protos are UTF-8 text; a NUL byte means someone passed a binary file.
absl::Status CheckLooksLikeText(absl::string_view text, absl::string_view filename) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ": empty file (expected a graph text proto)"));
  }
  const size_t nul = text.find('\0');
  if (nul != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ": binary data at byte ", nul,
                     " (expected a graph text proto; ONNX models end in .onnx)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> ConvertType(const proto::TensorType& type, absl::string_view what) {
  absl::StatusOr<DType> dtype = DTypeFromProto(type.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", dtype.status().message(),
                                                   " (set dtype to F32, F64, I32, I64 or BOOL)"));
  }
  Shape shape(type.shape().begin(), type.shape().end());
  if (absl::Status s = CheckShapeLimits(shape); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return TensorType{*dtype, std::move(shape)};
}

void FillRandom(const proto::RandomInit& random, Tensor& tensor) {
  // Both bounds unset means the usual weight range.
  const bool unset = random.low() == 0 && random.high() == 0;
  FillUniform(tensor, random.seed(), unset ? -1 : random.low(), unset ? 1 : random.high());
}

absl::Status FillValues(const proto::Values& values, Tensor& tensor, absl::string_view what) {
  const bool floats = values.floats_size() > 0;
  const int64_t count = floats ? values.floats_size() : values.ints_size();
  if (floats && values.ints_size() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": give either floats or ints, not both"));
  }
  if (floats && !IsFloat(tensor.dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": float values for a ", DTypeName(tensor.dtype()), " tensor"));
  }
  if (count != 1 && count != tensor.num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", count, " values for shape ", ShapeToString(tensor.shape()), " (",
                     tensor.num_elements(), " elements; give all of them or one to broadcast)"));
  }
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    const int64_t j = count == 1 ? 0 : i;
    if (floats) {
      tensor.SetDouble(i, values.floats(j));
    } else {
      tensor.SetInt(i, values.ints(j));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<AttrValue> ConvertAttr(const proto::Attribute& attr) {
  switch (attr.value_case()) {
    case proto::Attribute::kI:
      return AttrValue(attr.i());
    case proto::Attribute::kF:
      return AttrValue(attr.f());
    case proto::Attribute::kS:
      return AttrValue(attr.s());
    case proto::Attribute::kInts:
      return AttrValue(AttrInts(attr.ints().v().begin(), attr.ints().v().end()));
    case proto::Attribute::kFloats:
      return AttrValue(std::vector<double>(attr.floats().v().begin(), attr.floats().v().end()));
    case proto::Attribute::kStrings:
      return AttrValue(
          std::vector<std::string>(attr.strings().v().begin(), attr.strings().v().end()));
    case proto::Attribute::kIExpr:
    case proto::Attribute::kIntsExpr:
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", attr.name(),
                       "' is computed from named dims, which need sizes (BindNamedDims)"));
    case proto::Attribute::VALUE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("attribute '", attr.name(), "' has no value"));
}

std::string NodeLabel(const proto::Node& node) {
  return absl::StrCat("node '", node.name(), "' (", node.op(), ")");
}

absl::StatusOr<Attrs> ConvertAttrs(const proto::Node& node) {
  Attrs attrs;
  for (const proto::Attribute& attr : node.attr()) {
    absl::StatusOr<AttrValue> value = ConvertAttr(attr);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(NodeLabel(node), ": ", value.status().message()));
    }
    if (attrs.Has(attr.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(NodeLabel(node), ": attribute '", attr.name(), "' given twice"));
    }
    attrs.Set(attr.name(), *std::move(value));
  }
  return attrs;
}

// Orders node indexes so that every node comes after the producers of its
// inputs (Kahn's algorithm, ties broken by file order). Errors name an
// undefined input or the nodes of a cycle.
absl::StatusOr<std::vector<int>> TopologicalOrder(
    const proto::Graph& g, const absl::flat_hash_map<std::string, int>& producer,
    const absl::flat_hash_map<std::string, bool>& defined_outside) {
  const int n = g.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& input : g.node(i).input()) {
      auto it = producer.find(input);
      if (it != producer.end()) {
        ++pending[i];
        consumers[it->second].push_back(i);
      } else if (!defined_outside.contains(input)) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeLabel(g.node(i)), ": input '", input,
                         "' is not defined by any input, weight, constant "
                         "or node"));
      }
    }
  }
  std::vector<int> order;
  order.reserve(n);
  // A min-heap on file position: a graph already in order keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int consumer : consumers[i]) {
      if (--pending[consumer] == 0) ready.push(consumer);
    }
  }
  if (static_cast<int>(order.size()) == n) return order;

  // Walk back through unfinished producers until a node repeats.
  int start = 0;
  while (pending[start] == 0) ++start;
  std::vector<int> path;
  absl::flat_hash_map<int, int> position;
  int current = start;
  while (!position.contains(current)) {
    position[current] = static_cast<int>(path.size());
    path.push_back(current);
    for (const std::string& input : g.node(current).input()) {
      auto it = producer.find(input);
      if (it != producer.end() && pending[it->second] > 0) {
        current = it->second;
        break;
      }
    }
  }
  // The walk went from consumers to producers: reverse it to follow the
  // data, and start at the node listed first in the file.
  std::vector<int> cycle(path.begin() + position[current], path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  cycle.push_back(cycle.front());
  std::vector<std::string> names;
  for (int node : cycle) {
    names.push_back(absl::StrCat("'", g.node(node).name(), "'"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the graph has a cycle: ", absl::StrJoin(names, " -> ")));
}

absl::Status AddNodes(const proto::Graph& g, Graph& graph) {
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i) {
    const proto::Node& node = g.node(i);
    if (node.op().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name(), "' (#", i, ") has no op"));
    }
    for (const std::string& output : node.output()) {
      if (output.empty() || graph.FindValue(output) >= 0 || !producer.emplace(output, i).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeLabel(node), ": output '", output,
                         output.empty() ? "' has no name" : "' is defined more than once"));
      }
    }
  }
  absl::flat_hash_map<std::string, bool> defined_outside;
  for (const Value& value : graph.values()) defined_outside[value.name] = true;
  LOOM_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(g, producer, defined_outside));

  for (int i : order) {
    const proto::Node& node = g.node(i);
    std::vector<ValueId> inputs;
    for (const std::string& input : node.input()) {
      inputs.push_back(graph.FindValue(input));
    }
    LOOM_ASSIGN_OR_RETURN(Attrs attrs, ConvertAttrs(node));
    std::vector<std::string> outputs(node.output().begin(), node.output().end());
    LOOM_RETURN_IF_ERROR(
        graph.AddNode(node.name(), node.op(), std::move(inputs), outputs, std::move(attrs))
            .status());
  }
  return absl::OkStatus();
}

// Adds the nodes in file order when that order is topological (every input
// is a graph input, an initializer or an output of an earlier node), as in
// every file loom writes. This resolves each name once, where AddNodes first
// maps every output to its node, sorts and then resolves. Returns false,
// leaving `graph` partly built, at the first node that does not fit or is
// invalid in any way; the caller then starts over with AddNodes, which
// sorts the nodes and reports what is wrong.
bool AddNodesInFileOrder(const proto::Graph& g, Graph& graph) {
  std::vector<std::string> outputs;  // reused, with its strings' storage
  for (const proto::Node& node : g.node()) {
    if (node.op().empty()) return false;
    std::vector<ValueId> inputs;
    inputs.reserve(node.input_size());
    for (const std::string& input : node.input()) {
      const ValueId id = graph.FindValue(input);
      if (id < 0) return false;
      inputs.push_back(id);
    }
    outputs.assign(node.output().begin(), node.output().end());
    for (const std::string& output : outputs) {
      if (output.empty()) return false;
    }
    absl::StatusOr<Attrs> attrs = ConvertAttrs(node);
    if (!attrs.ok()) return false;
    if (!graph.AddNode(node.name(), node.op(), std::move(inputs), outputs, *std::move(attrs))
             .ok()) {
      return false;
    }
  }
  return true;
}

// The path of `external`'s file, relative to the model's folder.
std::filesystem::path ExternalDataPath(const proto::ExternalData& external,
                                       absl::string_view model_path) {
  std::filesystem::path path(external.file());
  if (path.is_relative()) {
    path = std::filesystem::path(std::string(model_path)).parent_path() / path;
  }
  return path;
}

// The type of `init`'s data, whose bytes must fit in this machine's memory.
absl::StatusOr<TensorType> InitializerType(const proto::Initializer& init, absl::string_view what) {
  LOOM_ASSIGN_OR_RETURN(TensorType type, ConvertType(init.type(), what));
  LOOM_RETURN_IF_ERROR(
      CheckFitsInMemory(static_cast<double>(NumElements(type.shape)) * DTypeSize(type.dtype),
                        absl::StrCat(what, ": its values")));
  return type;
}

// Whether `random` can draw a tensor of `dtype`.
absl::Status CheckRandomInit(const proto::RandomInit& random, DType dtype, absl::string_view what) {
  if (!(random.low() <= random.high())) {  // NaN too
    return absl::InvalidArgumentError(absl::StrCat(what, ": random init needs low <= high"));
  }
  // Integer and bool values are floors of doubles drawn in [low, high):
  // bounds beyond 2^53 would not convert back to an integer.
  if (!IsFloat(dtype) &&
      !(std::fabs(random.low()) <= 0x1p53 && std::fabs(random.high()) <= 0x1p53)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": random init bounds of an integer or bool tensor must lie within [-2^53, 2^53]"));
  }
  return absl::OkStatus();
}

// Random data of `init`'s type, drawn where it is first read: a graph
// whose kernels are cached is compiled without drawing it.
absl::StatusOr<std::shared_ptr<const LazyTensor>> LazyRandomInitializer(
    const proto::Initializer& init) {
  const std::string what = absl::StrCat("initializer '", init.name(), "'");
  LOOM_ASSIGN_OR_RETURN(TensorType type, InitializerType(init, what));
  LOOM_RETURN_IF_ERROR(CheckRandomInit(init.random(), type.dtype, what));
  return std::make_shared<const LazyTensor>(type, [type, random = init.random()] {
    Tensor tensor = Tensor::Uninitialized(type);  // FillRandom writes every element
    FillRandom(random, tensor);
    return tensor;
  });
}

// MaterializeInitializer's tensor, external data shared with the other
// graphs of this process that hold it (SharedFileTensor): a torch.compile
// graph compiled at many shapes reads its parameters once. Random data is
// drawn where it is first read.
absl::StatusOr<std::shared_ptr<const LazyTensor>> SharedInitializer(const proto::Initializer& init,
                                                                    absl::string_view model_path) {
  if (init.init_case() == proto::Initializer::kRandom) return LazyRandomInitializer(init);
  if (init.init_case() != proto::Initializer::kExternal || init.external().file().empty()) {
    LOOM_ASSIGN_OR_RETURN(Tensor tensor, MaterializeInitializer(init, model_path));
    return std::make_shared<const LazyTensor>(std::move(tensor));
  }
  LOOM_ASSIGN_OR_RETURN(TensorType type,
                        ConvertType(init.type(), absl::StrCat("initializer '", init.name(), "'")));
  return SharedFileTensor(ExternalDataPath(init.external(), model_path).string(),
                          init.external().offset(), type,
                          [&] { return MaterializeInitializer(init, model_path); });
}

// The graph's name, inputs, weights and constants, in a graph with room
// for all its values and nodes.
absl::Status AddArguments(const proto::Graph& g, absl::string_view filename, Graph& graph) {
  size_t num_values = g.input_size() + g.weight_size() + g.constant_size();
  for (const proto::Node& node : g.node()) num_values += node.output_size();
  graph.Reserve(num_values, g.node_size());
  graph.name = g.name();
  for (const proto::Input& input : g.input()) {
    const std::string what = absl::StrCat("input '", input.name(), "'");
    for (int d = 0; d < input.dim_names_size(); ++d) {
      if (!input.dim_names(d).empty()) return NamedDimWithoutSize(what, d, input.dim_names(d));
    }
    LOOM_ASSIGN_OR_RETURN(TensorType type, ConvertType(input.type(), what));
    LOOM_RETURN_IF_ERROR(graph.AddInput(input.name(), type).status());
  }
  auto add_initializers = [&](const auto& list, ValueKind kind) -> absl::Status {
    for (const proto::Initializer& init : list) {
      LOOM_ASSIGN_OR_RETURN(std::shared_ptr<const LazyTensor> data,
                            SharedInitializer(init, filename));
      LOOM_RETURN_IF_ERROR(graph.AddInitializer(init.name(), kind, std::move(data)).status());
    }
    return absl::OkStatus();
  };
  if (absl::Status s = add_initializers(g.weight(), ValueKind::kWeight); !s.ok()) {
    return s;
  }
  return add_initializers(g.constant(), ValueKind::kConstant);
}

absl::Status BuildGraph(const proto::Graph& g, absl::string_view filename, Graph& graph) {
  LOOM_RETURN_IF_ERROR(AddArguments(g, filename, graph));
  if (!AddNodesInFileOrder(g, graph)) {
    graph = Graph();
    LOOM_RETURN_IF_ERROR(AddArguments(g, filename, graph));
    LOOM_RETURN_IF_ERROR(AddNodes(g, graph));
  }
  if (g.output_size() == 0) {
    return absl::InvalidArgumentError("the graph has no outputs");
  }
  for (const std::string& output : g.output()) {
    const ValueId id = graph.FindValue(output);
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("graph output '", output, "' is not defined"));
    }
    graph.AddOutput(id);
  }
  for (const Node& node : graph.nodes()) {
    if (absl::Status s = CheckNodeSignature(node, OpRegistry::Global()); !s.ok()) {
      return s;
    }
  }
  LOOM_RETURN_IF_ERROR(InferShapes(graph));
  // InferShapes has just set every type with the shape functions that
  // VerifyGraph would run again.
  return VerifyGraphStructure(graph);
}

void SetType(const TensorType& type, proto::TensorType& out) {
  out.set_dtype(DTypeToProto(type.dtype));
  for (int64_t d : type.shape) out.add_shape(d);
}

void SetInitializer(const Graph& graph, ValueId id, proto::Initializer& out) {
  const Value& value = graph.value(id);
  const Tensor& data = graph.initializer(id);
  out.set_name(value.name);
  SetType(value.type, *out.mutable_type());
  proto::Values* values = out.mutable_values();
  for (int64_t i = 0; i < data.num_elements(); ++i) {
    if (IsFloat(data.dtype())) {
      values->add_floats(data.GetDouble(i));
    } else {
      values->add_ints(data.GetInt(i));
    }
  }
}

proto::Attribute AttrToProto(absl::string_view name, const AttrValue& value) {
  proto::Attribute attr;
  attr.set_name(std::string(name));
  std::visit(
      [&attr](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          attr.set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          attr.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          attr.set_s(v);
        } else if constexpr (std::is_same_v<T, AttrInts>) {
          // mutable_*() sets the oneof even for an empty list.
          proto::IntList* list = attr.mutable_ints();
          for (int64_t x : v) list->add_v(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          proto::FloatList* list = attr.mutable_floats();
          for (double x : v) list->add_v(x);
        } else {
          proto::StringList* list = attr.mutable_strings();
          for (const std::string& x : v) list->add_v(x);
        }
      },
      value);
  return attr;
}

}  // namespace

absl::Status ReadExternalData(const proto::ExternalData& external, absl::string_view model_path,
                              const std::string& what, Tensor& tensor) {
  const std::filesystem::path path = ExternalDataPath(external, model_path);
  const int64_t bytes = tensor.num_elements() * DTypeSize(tensor.dtype());
  if (external.file().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot open its external data '", path.string(), "'"));
  }
  // Mapped and copied on the cores (a torch.compile graph's parameters).
  absl::StatusOr<MappedFile> file = MappedFile::Map(path.string());
  if (!file.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot open its external data '",
                                                   path.string(), "': ", file.status().message()));
  }
  const absl::string_view data = file->bytes();
  if (external.offset() < 0 || data.size() < static_cast<uint64_t>(external.offset()) ||
      data.size() - external.offset() < static_cast<uint64_t>(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": its external data '", path.string(),
                                                   "' has fewer than ", bytes,
                                                   " bytes from offset ", external.offset()));
  }
  CopyInParts(tensor.data(), data.data() + external.offset(), bytes);
  if (tensor.dtype() == DType::kBool) {
    auto* flags = static_cast<uint8_t*>(tensor.data());
    for (int64_t i = 0; i < bytes; ++i) flags[i] = flags[i] != 0;
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> MaterializeInitializer(const proto::Initializer& init,
                                              absl::string_view model_path) {
  const std::string what = absl::StrCat("initializer '", init.name(), "'");
  LOOM_ASSIGN_OR_RETURN(TensorType type, InitializerType(init, what));
  // Random and external data write every element.
  Tensor tensor =
      init.init_case() == proto::Initializer::kValues ? Tensor(type) : Tensor::Uninitialized(type);
  switch (init.init_case()) {
    case proto::Initializer::kValues:
      LOOM_RETURN_IF_ERROR(FillValues(init.values(), tensor, what));
      break;
    case proto::Initializer::kRandom:
      LOOM_RETURN_IF_ERROR(CheckRandomInit(init.random(), type.dtype, what));
      FillRandom(init.random(), tensor);
      break;
    case proto::Initializer::kExternal:
      LOOM_RETURN_IF_ERROR(ReadExternalData(init.external(), model_path, what, tensor));
      break;
    case proto::Initializer::INIT_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": give its values, a random init or external data"));
  }
  return tensor;
}

namespace {

NamedDimUses FindNamedDims(const proto::Graph& g) {
  NamedDimUses uses;
  for (const proto::Input& input : g.input()) {
    for (int d = 0; d < input.dim_names_size(); ++d) {
      if (!input.dim_names(d).empty()) uses[input.dim_names(d)].emplace_back(input.name(), d);
    }
  }
  return uses;
}

// The input's shape: its static sizes, the shape given for it, and its
// named dims' sizes.
absl::Status BindInputShape(const NamedDimOptions& options, const NamedSizes& sizes,
                            proto::Input& input) {
  const std::string what = absl::StrCat("graph input '", input.name(), "'");
  auto& shape = *input.mutable_type()->mutable_shape();
  if (input.dim_names_size() > 0 && input.dim_names_size() != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", input.dim_names_size(),
                                                   " dim_names for its ", shape.size(), " dims"));
  }
  const auto given = options.input_shapes.find(input.name());
  if (given != options.input_shapes.end() &&
      static_cast<int>(given->second.size()) != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has rank ", shape.size(),
                                                   " but the given shape is ",
                                                   ShapeToString(given->second)));
  }
  for (int d = 0; d < shape.size(); ++d) {
    const std::string name = d < input.dim_names_size() ? input.dim_names(d) : "";
    if (name.empty()) {
      if (given != options.input_shapes.end() && given->second[d] != shape[d]) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": the given shape ",
                                                       ShapeToString(given->second),
                                                       " contradicts dim ", d, " = ", shape[d]));
      }
    } else if (given != options.input_shapes.end()) {
      shape[d] = given->second[d];
    } else if (const auto size = sizes.find(name); size != sizes.end()) {
      shape[d] = size->second;
    } else {
      return NamedDimWithoutSize(what, d, name);
    }
  }
  input.clear_dim_names();
  return absl::OkStatus();
}

// The node's attributes computed from named dims, evaluated.
absl::Status BindAttributes(const NamedSizes& sizes, proto::Node& node) {
  for (proto::Attribute& attr : *node.mutable_attr()) {
    auto evaluate = [&](const std::string& expr) -> absl::StatusOr<int64_t> {
      absl::StatusOr<int64_t> value = EvaluateDimExpr(expr, sizes);
      if (!value.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            NodeLabel(node), ": attribute '", attr.name(), "': ", value.status().message()));
      }
      return value;
    };
    if (attr.value_case() == proto::Attribute::kIExpr) {
      LOOM_ASSIGN_OR_RETURN(const int64_t value, evaluate(attr.i_expr()));
      attr.set_i(value);
    } else if (attr.value_case() == proto::Attribute::kIntsExpr) {
      proto::IntList values;
      for (const std::string& expr : attr.ints_expr().v()) {
        LOOM_ASSIGN_OR_RETURN(const int64_t value, evaluate(expr));
        values.add_v(value);
      }
      *attr.mutable_ints() = std::move(values);
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool HasNamedDims(const proto::Graph& g) {
  for (const proto::Input& input : g.input()) {
    if (absl::c_any_of(input.dim_names(), [](const std::string& n) { return !n.empty(); })) {
      return true;
    }
  }
  for (const proto::Node& node : g.node()) {
    for (const proto::Attribute& attr : node.attr()) {
      if (attr.value_case() == proto::Attribute::kIExpr ||
          attr.value_case() == proto::Attribute::kIntsExpr) {
        return true;
      }
    }
  }
  return false;
}

absl::StatusOr<proto::Graph> BindNamedDims(proto::Graph g, const NamedDimOptions& options) {
  LOOM_ASSIGN_OR_RETURN(const NamedSizes sizes, ResolveNamedDims(FindNamedDims(g), options));
  for (proto::Input& input : *g.mutable_input()) {
    LOOM_RETURN_IF_ERROR(BindInputShape(options, sizes, input));
  }
  for (proto::Node& node : *g.mutable_node()) LOOM_RETURN_IF_ERROR(BindAttributes(sizes, node));
  return g;
}

absl::flat_hash_map<std::string, std::vector<std::string>> GraphDimNames(const proto::Graph& g) {
  absl::flat_hash_map<std::string, std::vector<std::string>> names;
  for (const proto::Input& input : g.input()) {
    std::vector<std::string>& dims = names[input.name()];
    dims.assign(input.dim_names().begin(), input.dim_names().end());
    dims.resize(input.type().shape_size());
  }
  return names;
}

absl::StatusOr<proto::Graph> ParseGraphText(absl::string_view text, absl::string_view filename) {
  LOOM_RETURN_IF_ERROR(CheckLooksLikeText(text, filename));
  CollectFirstError errors(filename);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  proto::Graph graph;
  if (!parser.ParseFromString(std::string(text), &graph)) {
    return absl::InvalidArgumentError(
        errors.first().empty() ? absl::StrCat(filename, ": malformed text proto") : errors.first());
  }
  return graph;
}

absl::StatusOr<Graph> GraphFromProto(const proto::Graph& graph_proto, absl::string_view filename) {
  Graph graph;
  if (absl::Status s = BuildGraph(graph_proto, filename, graph); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(filename, ": ", s.message()));
  }
  return graph;
}

absl::StatusOr<proto::Graph> LoadGraphProto(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  return ParseGraphText(text, path);
}

absl::StatusOr<Graph> LoadGraphFile(const std::string& path, const NamedDimOptions& options) {
  LOOM_ASSIGN_OR_RETURN(proto::Graph graph_proto, LoadGraphProto(path));
  // Input shapes alone bind nothing in a graph without named dims: a run
  // checks its inputs against the graph's shapes.
  const bool sized = !options.dims.empty() || !options.dim_bounds.empty();
  if (!sized && !HasNamedDims(graph_proto)) return GraphFromProto(graph_proto, path);
  absl::StatusOr<proto::Graph> bound = BindNamedDims(std::move(graph_proto), options);
  if (!bound.ok()) {
    return absl::Status(bound.status().code(), absl::StrCat(path, ": ", bound.status().message()));
  }
  return GraphFromProto(*bound, path);
}

proto::Graph GraphToProto(const Graph& graph) {
  proto::Graph out;
  out.set_name(graph.name);
  for (ValueId id : graph.inputs()) {
    proto::Input* input = out.add_input();
    input->set_name(graph.value(id).name);
    SetType(graph.value(id).type, *input->mutable_type());
  }
  for (ValueId id : graph.weights()) SetInitializer(graph, id, *out.add_weight());
  for (ValueId id : graph.constants()) {
    SetInitializer(graph, id, *out.add_constant());
  }
  for (const Node& node : graph.nodes()) {
    proto::Node* n = out.add_node();
    n->set_name(node.name);
    n->set_op(std::string(node.op));
    for (ValueId id : node.inputs) n->add_input(graph.value(id).name);
    for (ValueId id : node.outputs) n->add_output(graph.value(id).name);
    for (const auto& [name, value] : node.attrs.entries()) {
      *n->add_attr() = AttrToProto(name, value);
    }
  }
  for (ValueId id : graph.outputs()) out.add_output(graph.value(id).name);
  return out;
}

std::string GraphProtoToText(const proto::Graph& graph_proto) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseShortRepeatedPrimitives(true);
  std::string text;
  printer.PrintToString(graph_proto, &text);
  return text;
}

std::string GraphToText(const Graph& graph) { return GraphProtoToText(GraphToProto(graph)); }

}  // namespace loom
