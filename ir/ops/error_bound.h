#ifndef LOOM_IR_OPS_ERROR_BOUND_H_
#define LOOM_IR_OPS_ERROR_BOUND_H_

// Error models of the ops, for the interpreter's bounds
// (InterpretWithErrorBounds): per output element, how far a float32
// implementation may legitimately be from the exact result. A bound has
// two parts: the inputs' errors carried through the op (by re-evaluating
// its reference implementation on moved inputs, so cancellation, flat and
// steep regions and discontinuities are the op's own), and the op's own
// rounding. Bounds are first order and worst case, except that sums of
// many terms use a probabilistic bound (SumRoundingUnits).

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/tensor.h"

namespace loom {

// Half an ulp of 1 in `dtype`: 2^-24 for f32, 2^-53 for f64, 2^-11 for
// f16, 2^-8 for bf16, 2^-4, 2^-3 and 2^-2 for the E4M3, E5M2 and E2M1
// floats; 1 for f8e8m0 (which rounds up); 0 for
// integers and bools, which do not round.
double RoundingUnit(DType dtype);

// How many rounding units of its own magnitude each term of an n-term sum
// may carry into the sum, in any order of summation: n up to 64 terms (the
// worst case), 8·sqrt(n) beyond (Higham and Mary's probabilistic bound,
// "A New Approach to Probabilistic Rounding Error Analysis", 2019, with
// lambda = 8: exceeded with probability below 1e-13 when rounding errors
// are independent).
double SumRoundingUnits(int64_t terms);

// The default model, for ops each of whose output elements depends on at
// most one element of each input (elementwise ops, broadcasting, data
// movement, select, cast, comparisons): each input's bound carried through
// by re-evaluating the op with that input moved by +bound and by -bound
// (the larger change counts; the inputs' shares add up), plus `ulps` of
// each float output element. A re-evaluation that fails (an integer
// divisor moved to 0) leaves the bounds infinite: nothing is known.
absl::Status PointwiseBound(const BoundContext& context, double ulps, absl::Span<Tensor> bounds);

// For ops whose one output's elements are sums of products of input
// elements (sums and means, norms, products, matmul, cumsum), each growing
// with the magnitude of every term: the bound is op(|x| (1 + r) + e) -
// op(|x|) for inputs x with bounds e, where r = units(context) times the
// output's rounding unit is each term's own rounding, plus 2 ulps of the
// output (a final division or square root).
BoundFn SumOfProductsBound(std::function<double(const BoundContext&)> units);

// `def` with results that are exact (rounding_ulps 0): data movement,
// comparisons, selection, max, min, neg, abs, floor.
OpDef Exact(OpDef def);
// `def` whose float results may be off by `ulps` beyond its inputs' errors.
OpDef WithRoundingUlps(OpDef def, double ulps);
// `def` with the error model `bound`.
OpDef WithBound(OpDef def, BoundFn bound);
// `def`, a composite op whose several rounding steps the bounds model only
// once decomposed into primitives: its bound is an error saying so.
OpDef Composite(OpDef def);

}  // namespace loom

#endif  // LOOM_IR_OPS_ERROR_BOUND_H_
