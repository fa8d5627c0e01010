#ifndef LOOM_COMPILER_CHECK_H_
#define LOOM_COMPILER_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace loom {

// The rule of `loom run --check` (docs/checking.md): a compiled
// model's outputs judged against the truth, the model evaluated in float64,
// rather than against another float32 computation.
//
// A float element passes when it is within the usual tolerance of the
// float32 reference interpreter's value r,
//   |actual - r| <= kCheckAbsTolerance + kCheckRelTolerance * |r|,
// or when its error against the float64 truth t is no more than the usual
// tolerance plus kCheckBoundFactor times what the computation allows,
//   |actual - t| <= kCheckAbsTolerance + kCheckRelTolerance * |t|
//                   + kCheckBoundFactor * max(bound, |r - t|),
// where `bound` carries each op's own rounding through the model as loom
// computes it (InterpretWithErrorBounds on the decomposed graph) and
// |r - t| is the float32 reference's own error. A float's bound counts
// for at most kCheckMaxBoundShare of the output's largest magnitude: worst-
// case bounds grow with depth (some 20 times a layer in a stack of matmul,
// layer_norm and gelu, to infinity by the fifth), while float32 rounding
// really stays near the reference's error, so a deep model's bound would
// pass any result. Integers and bools must match the reference or the
// truth, or lie within the bound (an index or a comparison that the
// inputs' errors leave open).
inline constexpr double kCheckRelTolerance = 1e-4;
inline constexpr double kCheckAbsTolerance = 1e-5;
inline constexpr double kCheckBoundFactor = 2;
inline constexpr double kCheckMaxBoundShare = 0.01;

// The ranges MakeInputs draws random inputs from: floats uniform in
// [low, high), integers the floor of a uniform draw from [int_low,
// int_high), bools 0 or 1.
struct InputRanges {
  double low = -1, high = 1;
  double int_low = 0, int_high = 10;
};

// Inputs for `graph`: each read from `dir`/<input name>.npy (its type must
// be the input's) or else `dir`/<input name>.bin (raw bytes) or, when `dir`
// is empty, drawn from `ranges` with `seed`.
absl::StatusOr<std::vector<Tensor>> MakeInputs(const Graph& graph, const std::string& dir,
                                               uint64_t seed, const InputRanges& ranges = {});

// The shapes of the arrays in `dir`/*.npy, by input name (the file's name
// less .npy): what binds a model's named dims at `loom run --inputs`.
absl::StatusOr<absl::flat_hash_map<std::string, Shape>> NpyInputShapes(const std::string& dir);

// What a result is judged against.
struct CheckReferences {
  std::vector<Tensor> float32;  // the reference interpreter, dtypes as the graph says
  std::vector<Tensor> truth;    // the graph in float64 (InterpretInFloat64)
  // InterpretWithErrorBounds on the decomposed graph: loom's computation.
  std::vector<Tensor> bounds;
};

// The references of `graph` (as imported) on `inputs`.
absl::StatusOr<CheckReferences> ComputeCheckReferences(const Graph& graph,
                                                       absl::Span<const Tensor> inputs);

// For a float element judged against another implementation's reference
// data r with a tolerance (ONNX's test data): whether it passes although
// outside that tolerance, because the reference's own error against the
// truth t is one that float32 rounding allows,
//   |r - t| <= tolerance_at_truth + kCheckBoundFactor * bound + 2^-23 scale,
// and the element's is no larger, |actual - t| <= |r - t|. `bound` is loom's
// bound for its own way of computing the element; `scale`, the largest
// magnitude of the output's truth, allows for a reference computed another
// way, whose roundings scale with the values it goes through (a float32
// FFT's inverse leaves noise of a fraction of the output's ulps where the
// exact result is 0). It never passes a result further from the truth than
// the reference, nor one whose reference disagrees with the truth beyond
// rounding (a question of semantics, which the truth, loom's own
// interpreter, cannot settle).
bool CloserToTruthThanReference(double actual, double reference, double truth, double bound,
                                double tolerance_at_truth, double scale);

// The largest finite magnitude of an output's truth: its scale.
double OutputScale(const Tensor& truth);

struct CheckResult {
  bool pass = true;
  // Against the float64 truth, over the elements that differ from it.
  double max_abs_error = 0;
  double max_rel_error = 0;
  // The element furthest past what the rule allows, when one is.
  std::string worst;
};

// Judges `outputs`, a compiled model's results for `graph` (as imported,
// composite ops included) on `inputs`, by the rule above.
absl::StatusOr<CheckResult> CheckOutputs(const Graph& graph, absl::Span<const Tensor> inputs,
                                         absl::Span<const Tensor> outputs);

}  // namespace loom

#endif  // LOOM_COMPILER_CHECK_H_
