// Runs ONNX's backend node tests through loom: for each test directory
// (model.onnx plus test_data_set_*/input_N.pb and output_N.pb), imports the
// model, compiles it with the built-in `cpu` pipeline, runs it on every data
// set and compares with the expected outputs as ONNX's runner does (floats:
// |actual - expected| <= 1e-7 + 1e-3 |expected|, 2^-6 |expected| for
// bfloat16, two of its ulps; NaN equals NaN; integers and bools exactly;
// shapes and dtypes must match). A float element outside
// that tolerance still passes when loom's value is at least as close to the
// truth (the model evaluated in float64) as the reference data, and the
// reference's own error is one float32 rounding allows
// (CloserToTruthThanReference, compiler/check.h); the PASS line then gives
// the reason. Prints one line per test,
//   PASS name [(closer to the float64 truth than the reference: ...)]
//   | FAIL name <largest error> | UNSUPPORTED name <reason>
// then the unsupported tests counted by reason, and
//   conformance: P passed, F failed, U unsupported
// Exit status: 0, or 1 when a test fails or fewer than --min_passed pass;
// 2 on bad usage.
//
// Tests are compiled in batches: the graphs of up to --batch tests are
// merged into one graph (side by side, sharing nothing), so that the native
// compiler runs once per batch rather than once per test; a batch that fails
// to compile or run is retried test by test, so each test gets its own
// verdict.
//
// Only inputs that loom needs at compile time (a Reshape's target shape, a
// Squeeze's axes, ... fed as graph inputs, as node tests do) are bound to
// the data set's values at import (OnnxImportOptions::bound_inputs); data,
// gather and scatter indices included, stays an input of the compiled
// model. A sequence or optional input or output (SequenceProto,
// OptionalProto data) is flattened as the importer flattens it
// (OnnxImportOptions::structured_inputs): its structure given at import,
// its tensors compared by their loom names. A line before the summary
// counts the passed tests that had inputs bound, by the op that needed
// them at compile time, and those whose outputs were all computed at
// import (Shape, Range, ...), where loom's compiled code only copies
// constants; --verbose marks the latter.
//
// Usage: conformance [--min_passed=N] [--batch=N] [--cache_dir=D] [--verbose]
//                    PATH...
// where each PATH is a test directory or a directory of test directories.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compiler/check.h"
#include "compiler/driver.h"
#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "onnx/onnx-data_pb.h"

ABSL_FLAG(int, min_passed, 0, "fail unless at least this many tests pass");
ABSL_FLAG(std::string, cache_dir, "", "kernel cache directory (default: the runtime's)");
ABSL_FLAG(bool, verbose, false, "print the full reason of every UNSUPPORTED");
ABSL_FLAG(int, batch, 32, "tests compiled together in one translation unit");

namespace loom {
namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kBFloat16Rtol = 0x1p-6;  // ONNX's runner: two bfloat16 ulps
constexpr double kAtol = 1e-7;

enum class Verdict { kPass, kFail, kUnsupported };

struct Outcome {
  Verdict verdict = Verdict::kPass;
  // The largest error, or the reason (of an UNSUPPORTED, or of a PASS
  // closer to the truth than the reference).
  std::string detail;
  bool bound = false;  // see Unit
  bool folded = false;
  std::set<std::string> bound_by;  // see Unit
};

Outcome Unsupported(const absl::Status& status) {
  return {Verdict::kUnsupported, std::string(status.message())};
}

Outcome Fail(std::string detail) { return {Verdict::kFail, std::move(detail)}; }

// How many files a data set has of `prefix` (input_0.pb, input_1.pb, ...).
int CountValueFiles(const fs::path& dir, const std::string& prefix) {
  int count = 0;
  while (fs::exists(dir / absl::StrCat(prefix, "_", count, ".pb"))) ++count;
  return count;
}

// One value of a data set flattened as the importer flattens a graph input
// or output (OnnxImportOptions::structured_inputs): its tensors, by their
// loom names, and a sequence's or optional's structure.
struct FlatValue {
  std::vector<std::pair<std::string, onnx::TensorProto>> tensors;
  std::optional<OnnxImportOptions::StructuredInput> structure;
};

template <typename Proto>
absl::StatusOr<Proto> ReadProtoFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  Proto proto;
  if (!file || !proto.ParseFromIstream(&file)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": not a serialised ", Proto::descriptor()->name()));
  }
  return proto;
}

absl::Status AppendSequence(const std::string& name, const onnx::SequenceProto& sequence,
                            FlatValue& value) {
  if (sequence.tensor_values_size() == 0 &&
      (sequence.sequence_values_size() > 0 || sequence.map_values_size() > 0 ||
       sequence.optional_values_size() > 0 || sequence.sparse_tensor_values_size() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph value '", name, "' is not a tensor (a sequence of other than tensors)"));
  }
  for (int k = 0; k < sequence.tensor_values_size(); ++k) {
    const onnx::TensorProto& tensor = sequence.tensor_values(k);
    value.tensors.push_back({SequenceElementName(name, k), tensor});
    value.structure->elements.push_back(Shape(tensor.dims().begin(), tensor.dims().end()));
  }
  return absl::OkStatus();
}

// Reads `path`, the data of graph value `info`, as its declared type says:
// a TensorProto, a SequenceProto or an OptionalProto.
absl::StatusOr<FlatValue> ReadValue(const fs::path& path, const onnx::ValueInfoProto& info) {
  FlatValue value;
  const onnx::TypeProto& type = info.type();
  if (type.has_sequence_type()) {
    absl::StatusOr<onnx::SequenceProto> sequence = ReadProtoFile<onnx::SequenceProto>(path);
    if (!sequence.ok()) return sequence.status();
    value.structure.emplace();
    if (absl::Status s = AppendSequence(info.name(), *sequence, value); !s.ok()) return s;
    return value;
  }
  if (type.has_optional_type()) {
    absl::StatusOr<onnx::OptionalProto> optional = ReadProtoFile<onnx::OptionalProto>(path);
    if (!optional.ok()) return optional.status();
    value.structure.emplace();
    value.structure->present = optional->has_tensor_value() || optional->has_sequence_value();
    if (optional->has_tensor_value()) {
      const onnx::TensorProto& tensor = optional->tensor_value();
      value.tensors.push_back({info.name(), tensor});
      value.structure->elements.push_back(Shape(tensor.dims().begin(), tensor.dims().end()));
    } else if (optional->has_sequence_value()) {
      absl::Status s = AppendSequence(info.name(), optional->sequence_value(), value);
      if (!s.ok()) return s;
    }
    return value;
  }
  if (!type.has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph value '", info.name(), "' is not a tensor (maps are not supported)"));
  }
  absl::StatusOr<onnx::TensorProto> tensor = ReadTensorProtoFile(path);
  if (!tensor.ok()) return tensor.status();
  value.tensors.push_back({info.name(), *std::move(tensor)});
  return value;
}

std::vector<fs::path> SortedSubdirs(const fs::path& dir, absl::string_view prefix) {
  std::vector<fs::path> dirs;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_directory() && absl::StartsWith(entry.path().filename().string(), prefix)) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// One data set of one test, imported and ready to compile.
struct Unit {
  size_t test = 0;  // index into the test list
  // Some graph inputs were bound to the data set's values at import, for
  // the ops (the first reader of each) in `bound_by`.
  bool bound = false;
  std::set<std::string> bound_by;
  // Every output was computed at import (loom's compiled code only copies).
  bool folded = false;
  Graph graph;
  std::vector<Tensor> inputs;  // in the order of graph.inputs()
  std::vector<Tensor> expected;
  // The loom output that each expected tensor is (a sequence's elements
  // named by SequenceElementName).
  std::vector<std::string> expected_names;
};

// The graph inputs of `model`, in order: those that are not initializers.
std::vector<const onnx::ValueInfoProto*> GraphInputs(const onnx::ModelProto& model) {
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    bool is_initializer = false;
    for (const onnx::TensorProto& init : model.graph().initializer()) {
      is_initializer = is_initializer || init.name() == input.name();
    }
    if (!is_initializer) inputs.push_back(&input);
  }
  return inputs;
}

// The op type of the first node of `model` that reads value `name`.
std::string FirstReader(const onnx::ModelProto& model, const std::string& name) {
  for (const onnx::NodeProto& node : model.graph().node()) {
    for (const std::string& input : node.input()) {
      if (input == name) return node.op_type();
    }
  }
  return "no node";
}

// `status`'s message followed by the model's ops: for the refusals that
// come before any node is imported (a graph value's type), so that every
// UNSUPPORTED test names the ops it tests.
absl::Status WithOps(const absl::Status& status, const onnx::ModelProto& model) {
  std::set<std::string> ops;
  for (const onnx::NodeProto& node : model.graph().node()) ops.insert(node.op_type());
  return absl::Status(
      status.code(),
      absl::StrCat(status.message(), " (the test's ops: ", absl::StrJoin(ops, ", "), ")"));
}

// The element type `model` declares for its graph input or output `name`.
int32_t DeclaredElemType(const onnx::ModelProto& model, const std::string& name) {
  for (const auto* list : {&model.graph().input(), &model.graph().output()}) {
    for (const onnx::ValueInfoProto& value : *list) {
      if (value.name() == name) return value.type().tensor_type().elem_type();
    }
  }
  return onnx::TensorProto::UNDEFINED;
}

// ONNX's generators before 1.14 (Debian's 1.12 set) wrote bfloat16 data as
// UINT16 tensors of its bits, numpy having no bfloat16: such data for a
// value the model declares BFLOAT16 is read as bfloat16.
void RetypeBFloat16Bits(onnx::TensorProto& proto, int32_t declared) {
  if (proto.data_type() == onnx::TensorProto::UINT16 && declared == onnx::TensorProto::BFLOAT16) {
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  }
}

// Reads a data set and imports the model with it: a Unit, or the reason
// why loom cannot run the test.
absl::StatusOr<Unit> ImportUnit(const onnx::ModelProto& model, const fs::path& data_dir) {
  const std::vector<const onnx::ValueInfoProto*> inputs = GraphInputs(model);
  const int input_files = CountValueFiles(data_dir, "input");
  if (static_cast<int>(inputs.size()) != input_files) {
    return absl::InvalidArgumentError(
        absl::StrCat("the data set has ", input_files, " inputs, the model ", inputs.size()));
  }
  OnnxImportOptions options;
  std::vector<std::vector<std::string>> flat_input_names;  // per ONNX input
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<FlatValue> value =
        ReadValue(data_dir / absl::StrCat("input_", i, ".pb"), *inputs[i]);
    if (!value.ok()) return value.status();
    if (value->structure.has_value()) {
      options.structured_inputs[inputs[i]->name()] = *value->structure;
    }
    flat_input_names.emplace_back();
    for (auto& [name, proto] : value->tensors) {
      RetypeBFloat16Bits(proto, DeclaredElemType(model, inputs[i]->name()));
      absl::StatusOr<Tensor> tensor = TensorFromOnnx(proto, absl::StrCat("input '", name, "'"));
      if (!tensor.ok()) return tensor.status();
      if (!value->structure.has_value()) options.input_shapes[name] = tensor->shape();
      options.bound_inputs.emplace(name, *std::move(tensor));
      flat_input_names.back().push_back(name);
    }
  }
  Unit unit;
  const int output_files = CountValueFiles(data_dir, "output");
  for (int i = 0; i < output_files && i < model.graph().output_size(); ++i) {
    const onnx::ValueInfoProto& info = model.graph().output(i);
    absl::StatusOr<FlatValue> value = ReadValue(data_dir / absl::StrCat("output_", i, ".pb"), info);
    if (!value.ok()) return value.status();
    for (auto& [name, proto] : value->tensors) {
      RetypeBFloat16Bits(proto, info.type().tensor_type().elem_type());
      absl::StatusOr<Tensor> tensor = TensorFromOnnx(proto, absl::StrCat("expected output ", i));
      if (!tensor.ok()) return tensor.status();
      unit.expected.push_back(*std::move(tensor));
      unit.expected_names.push_back(name);
    }
  }
  absl::StatusOr<Graph> graph = ImportOnnxModel(model, options);
  if (!graph.ok()) return graph.status();
  unit.graph = *std::move(graph);
  std::set<std::string> kept;
  for (ValueId id : unit.graph.inputs()) {
    kept.insert(unit.graph.value(id).name);
    unit.inputs.push_back(options.bound_inputs.at(unit.graph.value(id).name));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<std::string>& names = flat_input_names[i];
    if (!names.empty() && std::none_of(names.begin(), names.end(), [&](const std::string& name) {
          return kept.count(name) > 0;
        })) {
      unit.bound_by.insert(FirstReader(model, inputs[i]->name()));
    }
  }
  unit.bound = !unit.bound_by.empty();
  unit.folded = true;
  for (ValueId id : unit.graph.outputs()) {
    const ValueKind kind = unit.graph.value(id).kind;
    unit.folded = unit.folded && (kind == ValueKind::kConstant || kind == ValueKind::kWeight);
  }
  return unit;
}

// ImportUnit, with the model's ops named in a refusal that names no node.
absl::StatusOr<Unit> PrepareUnit(const onnx::ModelProto& model, const fs::path& data_dir) {
  absl::StatusOr<Unit> unit = ImportUnit(model, data_dir);
  if (!unit.ok() && !absl::StartsWith(unit.status().message(), "node '")) {
    return WithOps(unit.status(), model);
  }
  return unit;
}

// Adds a copy of `part` to `merged` with every name prefixed; returns the
// merged ids of part's outputs.
absl::StatusOr<std::vector<ValueId>> AppendGraph(const Graph& part, absl::string_view prefix,
                                                 Graph& merged) {
  std::vector<ValueId> ids(part.values().size(), -1);
  auto name = [&](ValueId id) { return absl::StrCat(prefix, part.value(id).name); };
  for (ValueId id : part.inputs()) {
    absl::StatusOr<ValueId> added = merged.AddInput(name(id), part.value(id).type);
    if (!added.ok()) return added.status();
    ids[id] = *added;
  }
  for (const auto* list : {&part.weights(), &part.constants()}) {
    for (ValueId id : *list) {
      absl::StatusOr<ValueId> added =
          merged.AddInitializer(name(id), part.value(id).kind, part.initializer(id));
      if (!added.ok()) return added.status();
      ids[id] = *added;
    }
  }
  for (const Node& node : part.nodes()) {
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(ids[input]);
    std::vector<std::string> outputs;
    for (ValueId output : node.outputs) outputs.push_back(name(output));
    absl::StatusOr<NodeId> added = merged.AddNode(absl::StrCat(prefix, node.name), node.op,
                                                  std::move(inputs), outputs, node.attrs);
    if (!added.ok()) return added.status();
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const ValueId id = merged.node(*added).outputs[k];
      ids[node.outputs[k]] = id;
      merged.mutable_value(id).type = part.value(node.outputs[k]).type;
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId id : part.outputs()) outputs.push_back(ids[id]);
  return outputs;
}

double Tolerance(double expected, DType dtype) {
  return kAtol + (dtype == DType::kBF16 ? kBFloat16Rtol : kRtol) * std::fabs(expected);
}

// How far past the tolerance element i of `actual` is from `expected`
// (<= 0: within).
double Excess(const Tensor& actual, const Tensor& expected, int64_t i) {
  if (!IsFloat(expected.dtype())) {  // any mismatch counts
    if (actual.GetInt(i) == expected.GetInt(i)) return 0;
    return std::max(std::fabs(actual.GetDouble(i) - expected.GetDouble(i)), 1.0);
  }
  const double a = actual.GetDouble(i), e = expected.GetDouble(i);
  if ((std::isnan(e) && std::isnan(a)) || a == e) return 0;
  if (!std::isfinite(a) || !std::isfinite(e)) return INFINITY;  // must match exactly
  return std::fabs(a - e) - Tolerance(e, expected.dtype());
}

// A unit's truth and error bounds (compiler/check.h), computed once and only
// for a unit with an element outside the tolerance.
class Truth {
 public:
  explicit Truth(const Unit& unit) : unit_(unit) {}

  // Null when the interpreter cannot evaluate the unit.
  const CheckReferences* Get() {
    if (!computed_) {
      computed_ = true;
      absl::StatusOr<CheckReferences> references =
          ComputeCheckReferences(unit_.graph, unit_.inputs);
      if (references.ok()) references_ = *std::move(references);
    }
    return references_.has_value() ? &*references_ : nullptr;
  }

  // The largest magnitude of output `index`'s truth (after Get, non-null).
  double Scale(int index) {
    if (scales_.empty()) {
      for (const Tensor& truth : references_->truth) scales_.push_back(OutputScale(truth));
    }
    return scales_[index];
  }

 private:
  const Unit& unit_;
  bool computed_ = false;
  std::optional<CheckReferences> references_;
  std::vector<double> scales_;
};

// Whether element i of output `index`, outside the tolerance, is closer to
// the truth than the reference (CloserToTruthThanReference).
bool Forgiven(double a, double e, DType dtype, int index, int64_t i, Truth& truth) {
  const CheckReferences* references = truth.Get();
  if (references == nullptr) return false;
  const double t = references->truth[index].GetDouble(i);
  return CloserToTruthThanReference(a, e, t, references->bounds[index].GetDouble(i),
                                    Tolerance(t, dtype), truth.Scale(index));
}

// Compares one output. On a mismatch `detail` describes the largest error;
// when it matches only because elements outside the tolerance are closer
// to the truth than the reference, `reason` describes the one furthest out.
bool Matches(const Tensor& actual, const Tensor& expected, int index, Truth& truth,
             std::string& detail, std::string& reason) {
  if (actual.type() != expected.type()) {
    detail = absl::StrCat("output ", index, ": got ", TypeToString(actual.type()), ", expected ",
                          TypeToString(expected.type()));
    return false;
  }
  double worst_excess = 0, worst_forgiven_excess = 0;  // error beyond the tolerance
  int64_t worst = -1, worst_forgiven = -1;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    const double excess = Excess(actual, expected, i);
    if (excess <= 0) continue;
    if (IsFloat(expected.dtype()) && std::isfinite(excess) &&
        Forgiven(actual.GetDouble(i), expected.GetDouble(i), expected.dtype(), index, i, truth)) {
      if (excess > worst_forgiven_excess) {
        worst_forgiven_excess = excess;
        worst_forgiven = i;
      }
    } else if (worst < 0 || excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (worst >= 0) {
    detail = absl::StrFormat("max_abs_error=%g (output %d, element %d: got %.9g, expected %.9g)",
                             std::fabs(actual.GetDouble(worst) - expected.GetDouble(worst)), index,
                             worst, actual.GetDouble(worst), expected.GetDouble(worst));
    return false;
  }
  if (worst_forgiven >= 0 && reason.empty()) {
    const double t = truth.Get()->truth[index].GetDouble(worst_forgiven);
    const double a = actual.GetDouble(worst_forgiven), e = expected.GetDouble(worst_forgiven);
    reason = absl::StrFormat(
        "closer to the float64 truth than the reference: output %d, element %d: got %.9g "
        "(error %.3g), expected %.9g (error %.3g), truth %.12g",
        index, worst_forgiven, a, std::fabs(a - t), e, std::fabs(e - t), t);
  }
  return true;
}

Outcome Compare(const Unit& unit, const std::vector<Tensor>& outputs, size_t first) {
  const size_t count = unit.graph.outputs().size();
  if (count != unit.expected.size()) {
    return Fail(absl::StrCat(count, " outputs, expected ", unit.expected.size()));
  }
  for (size_t i = 0; i < count; ++i) {
    if (unit.graph.output_name(i) != unit.expected_names[i]) {
      return Fail(absl::StrCat("output ", i, " is '", unit.graph.output_name(i), "', expected '",
                               unit.expected_names[i], "'"));
    }
  }
  Truth truth(unit);
  Outcome outcome;
  for (size_t i = 0; i < count; ++i) {
    std::string detail;
    if (!Matches(outputs[first + i], unit.expected[i], i, truth, detail, outcome.detail)) {
      return Fail(detail);
    }
  }
  return outcome;
}

// Compiles `units` as one graph, runs it once and compares each unit's
// outputs. Returns one outcome per unit, or an error when the batch as a
// whole does not compile or run.
absl::StatusOr<std::vector<Outcome>> RunBatch(const std::vector<const Unit*>& units) {
  Graph merged;
  merged.name = "conformance_batch";
  std::vector<Tensor> inputs;
  std::vector<size_t> first_output;
  for (size_t u = 0; u < units.size(); ++u) {
    absl::StatusOr<std::vector<ValueId>> outputs =
        AppendGraph(units[u]->graph, absl::StrCat("u", u, "/"), merged);
    if (!outputs.ok()) return outputs.status();
    first_output.push_back(merged.outputs().size());
    for (ValueId id : *outputs) merged.AddOutput(id);
    inputs.insert(inputs.end(), units[u]->inputs.begin(), units[u]->inputs.end());
  }
  CompileOptions options;
  options.model = merged.name;
  options.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  absl::StatusOr<CompiledModel> compiled = CompileGraph(std::move(merged), options);
  if (!compiled.ok()) {
    return absl::Status(compiled.status().code(),
                        absl::StrCat("compile: ", compiled.status().message()));
  }
  absl::StatusOr<std::vector<Tensor>> outputs = compiled->executable->Run(inputs);
  if (!outputs.ok()) {
    return absl::Status(outputs.status().code(), absl::StrCat("run: ", outputs.status().message()));
  }
  std::vector<Outcome> outcomes;
  for (size_t u = 0; u < units.size(); ++u) {
    outcomes.push_back(Compare(*units[u], *outputs, first_output[u]));
  }
  return outcomes;
}

// RunBatch, retried unit by unit when the batch fails as a whole.
std::vector<Outcome> RunUnits(const std::vector<const Unit*>& units) {
  absl::StatusOr<std::vector<Outcome>> outcomes = RunBatch(units);
  if (outcomes.ok()) return *std::move(outcomes);
  if (units.size() == 1) {
    return {Fail(std::string(outcomes.status().message()))};
  }
  std::vector<Outcome> each;
  for (const Unit* unit : units) each.push_back(RunUnits({unit})[0]);
  return each;
}

// A short, countable reason: "op Resize", "dtype UINT8", or the message's
// cause with the node's name left out.
std::string ReasonKey(const std::string& detail) {
  size_t at = detail.find(": op ");
  if (at != std::string::npos) {
    const size_t start = at + 5;
    return absl::StrCat("op ", detail.substr(start, detail.find(' ', start) - start));
  }
  at = detail.find("element type ");
  if (at != std::string::npos) {
    const size_t start = at + 13;
    return absl::StrCat("dtype ", detail.substr(start, detail.find(' ', start) - start));
  }
  if (absl::StrContains(detail, "is not a tensor (")) {
    return "sequence, map or optional values";
  }
  // Drop "node 'NAME' (Op): " and keep the op and the cause.
  if (absl::StartsWith(detail, "node '")) {
    const size_t open = detail.find("' (");
    if (open != std::string::npos) return detail.substr(open + 2);
  }
  return detail;
}

// The key, and the test's ops where the reason names no node (WithOps).
std::string KeyWithOps(const std::string& key, const std::string& detail) {
  const size_t ops = detail.rfind(" (the test's ops: ");
  return ops == std::string::npos ? key : absl::StrCat(key, detail.substr(ops));
}

std::vector<fs::path> TestDirs(const std::vector<char*>& args) {
  std::vector<fs::path> dirs;
  for (size_t i = 1; i < args.size(); ++i) {
    const fs::path path(args[i]);
    if (fs::exists(path / "model.onnx")) {
      dirs.push_back(path);
      continue;
    }
    for (const fs::path& sub : SortedSubdirs(path, "")) {
      if (fs::exists(sub / "model.onnx")) dirs.push_back(sub);
    }
  }
  return dirs;
}

// Tallies and prints verdicts, in test order.
class Report {
 public:
  void Print(const std::string& name, const Outcome& outcome) {
    switch (outcome.verdict) {
      case Verdict::kPass:
        ++passed_;
        bound_ += outcome.bound;
        for (const std::string& op : outcome.bound_by) ++bound_by_[op];
        folded_ += outcome.folded;
        closer_to_truth_ += !outcome.detail.empty();
        std::cout << "PASS " << name
                  << (absl::GetFlag(FLAGS_verbose) && outcome.folded ? " (computed at import)" : "")
                  << (outcome.detail.empty() ? "" : absl::StrCat(" (", outcome.detail, ")"))
                  << "\n";
        break;
      case Verdict::kFail:
        ++failed_;
        std::cout << "FAIL " << name << " " << outcome.detail << "\n";
        break;
      case Verdict::kUnsupported: {
        ++unsupported_;
        const std::string key = ReasonKey(outcome.detail);
        ++reasons_[key];
        std::cout << "UNSUPPORTED " << name << " "
                  << (absl::GetFlag(FLAGS_verbose) ? outcome.detail
                                                   : KeyWithOps(key, outcome.detail))
                  << "\n";
        break;
      }
    }
    std::cout.flush();
  }

  // The summary; returns the exit status.
  int Finish(int min_passed) {
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [reason, count] : reasons_) {
      by_count.push_back({-count, reason});
    }
    std::sort(by_count.begin(), by_count.end());
    for (const auto& [count, reason] : by_count) {
      std::cout << "unsupported: " << -count << " " << reason << "\n";
    }
    std::vector<std::string> by_op;
    for (const auto& [op, count] : bound_by_) by_op.push_back(absl::StrCat(op, " ", count));
    std::cout << "passed with inputs bound at import: " << bound_
              << " (only operands needed at compile time; tests by the op that needs them: "
              << (by_op.empty() ? "none" : absl::StrJoin(by_op, ", ")) << ")"
              << "; passed with every output computed at import: " << folded_
              << "; passed closer to the float64 truth than the reference: " << closer_to_truth_
              << "\n";
    std::cout << "conformance: " << passed_ << " passed, " << failed_ << " failed, " << unsupported_
              << " unsupported\n";
    if (passed_ < min_passed) {
      std::cout << "conformance: fewer than the required " << min_passed << " passed\n";
    }
    return failed_ > 0 || passed_ < min_passed ? 1 : 0;
  }

 private:
  int passed_ = 0, failed_ = 0, unsupported_ = 0;
  int bound_ = 0, folded_ = 0, closer_to_truth_ = 0;  // among the passed
  std::map<std::string, int> bound_by_;               // among the passed
  std::map<std::string, int> reasons_;
};

// Runs the tests in batches, printing each test's verdict once all of its
// data sets have run.
class Runner {
 public:
  explicit Runner(std::vector<fs::path> dirs)
      : dirs_(std::move(dirs)), outcomes_(dirs_.size()), pending_(dirs_.size(), 0) {}

  int Run() {
    const size_t batch = std::max(1, absl::GetFlag(FLAGS_batch));
    for (size_t t = 0; t < dirs_.size(); ++t) {
      Prepare(t);
      prepared_ = t + 1;
      if (units_.size() >= batch) Flush();
      PrintFinished();
    }
    Flush();
    PrintFinished();
    return report_.Finish(absl::GetFlag(FLAGS_min_passed));
  }

 private:
  void Prepare(size_t t) {
    absl::StatusOr<onnx::ModelProto> model = ReadOnnxModelFile((dirs_[t] / "model.onnx").string());
    if (!model.ok()) return Record(t, Unsupported(model.status()));
    const std::vector<fs::path> data_sets = SortedSubdirs(dirs_[t], "test_data_set_");
    if (data_sets.empty()) {
      return Record(t, Unsupported(absl::InvalidArgumentError("no test_data_set_* directory")));
    }
    std::vector<Unit> units;
    for (const fs::path& data_dir : data_sets) {
      absl::StatusOr<Unit> unit = PrepareUnit(*model, data_dir);
      if (!unit.ok()) return Record(t, Unsupported(unit.status()));
      unit->test = t;
      units.push_back(*std::move(unit));
    }
    for (Unit& unit : units) units_.push_back(std::move(unit));
    pending_[t] = data_sets.size();
  }

  void Flush() {
    if (units_.empty()) return;
    std::vector<const Unit*> units;
    for (const Unit& unit : units_) units.push_back(&unit);
    const std::vector<Outcome> outcomes = RunUnits(units);
    for (size_t u = 0; u < units_.size(); ++u) {
      const size_t t = units_[u].test;
      --pending_[t];
      if (outcomes_[t].verdict == Verdict::kPass) {
        const bool bound = outcomes_[t].bound || units_[u].bound;
        std::set<std::string> bound_by = outcomes_[t].bound_by;
        bound_by.insert(units_[u].bound_by.begin(), units_[u].bound_by.end());
        const bool folded = outcomes_[t].folded || units_[u].folded;
        const std::string reason = outcomes_[t].detail;  // of an earlier data set
        outcomes_[t] = outcomes[u];
        outcomes_[t].bound = bound;
        outcomes_[t].bound_by = std::move(bound_by);
        outcomes_[t].folded = folded;
        if (outcomes_[t].verdict == Verdict::kPass && outcomes_[t].detail.empty()) {
          outcomes_[t].detail = reason;
        }
      }
    }
    units_.clear();
  }

  void Record(size_t t, Outcome outcome) { outcomes_[t] = std::move(outcome); }

  void PrintFinished() {
    for (; printed_ < prepared_ && pending_[printed_] == 0; ++printed_) {
      report_.Print(dirs_[printed_].filename().string(), outcomes_[printed_]);
    }
  }

  std::vector<fs::path> dirs_;
  std::vector<Outcome> outcomes_;
  std::vector<size_t> pending_;  // data sets not yet run, per test
  std::vector<Unit> units_;      // prepared, waiting for a batch
  size_t prepared_ = 0;          // tests [0, prepared_) are prepared
  size_t printed_ = 0;
  Report report_;
};

int Main(int argc, char** argv) {
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  std::vector<fs::path> dirs = TestDirs(args);
  if (dirs.empty()) {
    std::cerr << "conformance: no test directories (each holds model.onnx) "
                 "under the given paths\n";
    return 2;
  }
  return Runner(std::move(dirs)).Run();
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) { return loom::Main(argc, argv); }
