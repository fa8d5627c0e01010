#include "compiler/check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "ir/file_io.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/npy.h"
#include "ir/random.h"
#include "ir/status_macros.h"
#include "passes/decompose.h"

namespace loom {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

absl::StatusOr<Graph> Decomposed(const Graph& graph) {
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<DecomposePass> pass,
                        DecomposePass::Create(proto::DecomposeOptions()));
  Module module;
  module.graph = graph;
  if (absl::StatusOr<bool> changed = pass->Run(module); !changed.ok()) {
    return changed.status();
  }
  return std::move(module.graph);
}

// DIR/<name>.npy, whose type must be the input's.
absl::StatusOr<Tensor> ReadNpyInput(const std::string& path, const Value& value) {
  LOOM_ASSIGN_OR_RETURN(Tensor tensor, ReadNpy(path));
  if (tensor.type() != value.type) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", TypeToString(tensor.type()),
                                                   ", but input '", value.name, "' is ",
                                                   TypeToString(value.type)));
  }
  return tensor;
}

// DIR/<name>.bin, raw bytes of the input's type.
absl::StatusOr<Tensor> ReadRawInput(const std::string& path, const Value& value) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        bytes.status().message(), " (the data of input '", value.name, "': <name>.npy or .bin)"));
  }
  const std::string& data = *bytes;
  Tensor tensor(value.type);
  if (static_cast<int64_t>(data.size()) != tensor.num_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", data.size(), " bytes, but input '",
                                                   value.name, "' (", TypeToString(value.type),
                                                   ") needs ", tensor.num_bytes()));
  }
  std::memcpy(tensor.data(), data.data(), data.size());
  return tensor;
}

absl::StatusOr<Tensor> ReadInput(const std::string& dir, const Value& value) {
  const std::string npy = absl::StrCat(dir, "/", value.name, ".npy");
  if (std::filesystem::exists(npy)) return ReadNpyInput(npy, value);
  return ReadRawInput(absl::StrCat(dir, "/", value.name, ".bin"), value);
}

}  // namespace

absl::StatusOr<absl::flat_hash_map<std::string, Shape>> NpyInputShapes(const std::string& dir) {
  absl::flat_hash_map<std::string, Shape> shapes;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string file = entry.path().filename().string();
    if (!absl::EndsWith(file, ".npy")) continue;
    LOOM_ASSIGN_OR_RETURN(TensorType type, ReadNpyType(entry.path().string()));
    shapes[absl::StripSuffix(file, ".npy")] = std::move(type.shape);
  }
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": cannot list the input files (", error.message(), ")"));
  }
  return shapes;
}

absl::StatusOr<std::vector<Tensor>> MakeInputs(const Graph& graph, const std::string& dir,
                                               uint64_t seed, const InputRanges& ranges) {
  std::vector<Tensor> inputs;
  for (ValueId id : graph.inputs()) {
    const Value& value = graph.value(id);
    if (!dir.empty()) {
      LOOM_ASSIGN_OR_RETURN(Tensor tensor, ReadInput(dir, value));
      inputs.push_back(std::move(tensor));
      continue;
    }
    Tensor tensor(value.type);
    const uint64_t stream = SplitMix64(seed) + id;
    if (IsFloat(value.type.dtype)) {
      FillUniform(tensor, stream, ranges.low, ranges.high);
    } else if (value.type.dtype == DType::kBool) {
      FillUniform(tensor, stream, 0, 2);
    } else {
      FillUniform(tensor, stream, ranges.int_low, ranges.int_high);
    }
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

absl::StatusOr<CheckReferences> ComputeCheckReferences(const Graph& graph,
                                                       absl::Span<const Tensor> inputs) {
  CheckReferences references;
  LOOM_ASSIGN_OR_RETURN(std::vector<Tensor> float32, Interpret(graph, inputs));
  references.float32 = std::move(float32);
  LOOM_ASSIGN_OR_RETURN(std::vector<Tensor> truth, InterpretInFloat64(graph, inputs));
  references.truth = std::move(truth);
  LOOM_ASSIGN_OR_RETURN(Graph decomposed, Decomposed(graph));
  LOOM_ASSIGN_OR_RETURN(BoundedOutputs bounded, InterpretWithErrorBounds(decomposed, inputs));
  references.bounds = std::move(bounded.bounds);
  return references;
}

bool CloserToTruthThanReference(double actual, double reference, double truth, double bound,
                                double tolerance_at_truth, double scale) {
  const double own_error = std::fabs(reference - truth);
  return std::fabs(actual - truth) <= own_error &&
         own_error <= tolerance_at_truth + kCheckBoundFactor * bound + 0x1p-23 * scale;
}

double OutputScale(const Tensor& truth) {
  double scale = 0;
  for (int64_t i = 0; i < truth.num_elements(); ++i) {
    const double t = std::fabs(truth.GetDouble(i));
    if (std::isfinite(t)) scale = std::max(scale, t);
  }
  return scale;
}

namespace {

bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

double Tolerance(double expected) {
  return kCheckAbsTolerance + kCheckRelTolerance * std::fabs(expected);
}

// How far past what the rule allows `actual` is (<= 0: it passes).
// `bound_cap` caps a float's bound (kCheckMaxBoundShare).
double Excess(double actual, double reference, double truth, double bound, bool exact,
              double bound_cap) {
  if (Same(actual, reference) || Same(actual, truth)) return 0;
  // An infinite or NaN bound: the inputs' errors leave the result open, as
  // in sqrt of a value that may be either side of 0. A finite float result
  // is still judged, with the capped bound.
  const bool open = !std::isfinite(bound);
  if (open && (exact || !std::isfinite(actual) || !std::isfinite(truth))) return 0;
  const double error = std::fabs(actual - truth);
  if (std::isnan(error)) return kInfinity;
  if (exact) return error - bound;
  if (std::fabs(actual - reference) <= Tolerance(reference)) return 0;
  bound = open ? bound_cap : std::min(bound, bound_cap);
  const double own_error = std::fabs(reference - truth);
  const double allowed =
      Tolerance(truth) +
      kCheckBoundFactor * std::max(bound, std::isnan(own_error) ? 0.0 : own_error);
  return error - allowed;
}

void CheckOutput(const std::string& name, const Tensor& actual, const Tensor& reference,
                 const Tensor& truth, const Tensor& bound, CheckResult& result,
                 double& worst_excess) {
  const bool exact = !IsFloat(reference.dtype());
  const double bound_cap = kCheckMaxBoundShare * OutputScale(truth);
  for (int64_t i = 0; i < reference.num_elements(); ++i) {
    const double a = actual.GetDouble(i), t = truth.GetDouble(i);
    const double excess =
        Excess(a, reference.GetDouble(i), t, bound.GetDouble(i), exact, bound_cap);
    if (excess > 0) {
      result.pass = false;
      if (excess > worst_excess) {
        worst_excess = excess;
        result.worst = absl::StrFormat(
            "output '%s' element %d: %.9g, the float64 truth %.9g, the float32 reference "
            "%.9g, error bound %.3g",
            name, i, a, t, reference.GetDouble(i), bound.GetDouble(i));
      }
    }
    if (Same(a, t)) continue;
    const double error = std::fabs(a - t);
    if (std::isnan(error)) {
      result.max_abs_error = result.max_rel_error = kInfinity;
      continue;
    }
    result.max_abs_error = std::max(result.max_abs_error, error);
    result.max_rel_error = std::max(result.max_rel_error, t == 0 ? error : error / std::fabs(t));
  }
}

}  // namespace

absl::StatusOr<CheckResult> CheckOutputs(const Graph& graph, absl::Span<const Tensor> inputs,
                                         absl::Span<const Tensor> outputs) {
  if (outputs.size() != graph.outputs().size()) {
    return absl::InternalError(absl::StrFormat("%d outputs to check, the graph has %d",
                                               outputs.size(), graph.outputs().size()));
  }
  LOOM_ASSIGN_OR_RETURN(CheckReferences references, ComputeCheckReferences(graph, inputs));
  CheckResult result;
  double worst_excess = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].type() != references.float32[i].type()) {
      return absl::InternalError(absl::StrFormat("output %d is %s, the model's is %s", i,
                                                 TypeToString(outputs[i].type()),
                                                 TypeToString(references.float32[i].type())));
    }
    CheckOutput(graph.value(graph.outputs()[i]).name, outputs[i], references.float32[i],
                references.truth[i], references.bounds[i], result, worst_excess);
  }
  return result;
}

}  // namespace loom
