// top_k, reverse_sequence and lrn as primitives (ir/ops/sequence_ops.cc,
// ir/ops/lrn.cc for their definitions).
//
// top_k selects k <= 16 outputs one by one (TopKOneByOne); a larger k
// along an axis of n elements ranks every element by counting the
// ones before it (larger, or equal at a lower index; NaN above all numbers):
// a sum over an n x n broadcast comparison, which fuses into one reduction
// (O(n^2) work per row, no n x n buffer). The ranks are a permutation, so
// output r is the one element of rank r: its value a maximum over
// where(rank == r, x, lowest) and its index a sum of where(rank == r, i, 0),
// O(k n) more.
//
// reverse_sequence gathers along the time axis at index L - 1 - t for t < L
// and t past it (gather_elements, whose kernels check each index: a length
// above T reads past the end and is an error, and a negative one is sent
// past the start on purpose, as the reference refuses it too).
//
// lrn squares x, pads the channels with (size - 1) / 2 zeros before and the
// rest after (at most C - 1 each side), sums the shifted channel slices
// (views, one per window position) and multiplies x
// by exp(-beta log(bias + alpha / size * sum)), log from PointwiseMath (the
// CPU backend's pow and log are per-lane libm calls; its exp is vectorised).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"
#include "passes/pointwise_math.h"

namespace loom {
namespace {

// 0, 1, ..., n - 1 (i64) along the first of 1 + `ones` dims, [n, 1, ...].
ValueId Iota(DecompositionBuilder& b, absl::string_view suffix, int64_t n, int64_t ones) {
  Shape shape(1 + ones, 1);
  shape[0] = n;
  Tensor data(DType::kI64, shape);
  for (int64_t i = 0; i < n; ++i) data.SetInt(i, i);
  return b.Constant(suffix, std::move(data));
}

Attrs AxesAttrs(std::vector<int64_t> axes, bool keepdims) {
  Attrs attrs = Ints("axes", std::move(axes));
  attrs.Set("keepdims", int64_t{keepdims ? 1 : 0});
  return attrs;
}

// The highest or lowest value of `dtype` (+-inf for floats), set exactly.
ValueId Extreme(DecompositionBuilder& b, absl::string_view suffix, DType dtype, bool highest) {
  Tensor data(dtype, {});
  if (IsFloat(dtype)) {
    data.SetDouble(0, highest ? INFINITY : -INFINITY);
  } else {
    data.SetInt(0, highest ? IntegerMaxBits(dtype) : IntegerMinBits(dtype));
  }
  return b.Constant(suffix, std::move(data));
}

// Whether a comes before b among the largest: a > b, or a is NaN and b not.
ValueId Greater(DecompositionBuilder& b, ValueId a, ValueId c, bool is_float) {
  const ValueId greater = b.Add("greater", "greater", {a, c});
  if (!is_float) return greater;
  const ValueId a_nan = b.Add("a_nan", "not_equal", {a, a});
  const ValueId c_number = b.Add("c_number", "equal", {c, c});
  return b.Add("or", "logical_or", {greater, b.Add("nan_first", "logical_and", {a_nan, c_number})});
}

// Equal, with NaN equal to NaN.
ValueId Same(DecompositionBuilder& b, ValueId a, ValueId c, bool is_float) {
  const ValueId equal = b.Add("equal", "equal", {a, c});
  if (!is_float) return equal;
  const ValueId both_nan =
      b.Add("both_nan", "logical_and",
            {b.Add("a_nan", "not_equal", {a, a}), b.Add("c_nan", "not_equal", {c, c})});
  return b.Add("or", "logical_or", {equal, both_nan});
}

// Up to this k, top_k selects its outputs one by one (O(k n) work, a graph
// of O(k) nodes); beyond, it ranks every element (O(n^2) work).
constexpr int64_t kMaxSelectedOneByOne = 16;

// A top_k node's input and attributes, as both forms read them.
struct TopKParams {
  ValueId x;
  DType dtype;
  bool is_float, largest;
  int64_t rank, axis, n, k;
};

TopKParams ReadTopK(const Node& node, const DecompositionBuilder& b) {
  TopKParams t;
  t.x = node.inputs[0];
  const TensorType& type = b.type(t.x);
  t.dtype = type.dtype;
  t.is_float = IsFloat(t.dtype);
  t.largest = node.attrs.GetInt("largest", 1) == 1;
  t.rank = static_cast<int64_t>(type.shape.size());
  t.axis = node.attrs.GetInt("axis", -1);
  if (t.axis < 0) t.axis += t.rank;
  t.n = type.shape[t.axis];
  t.k = node.attrs.GetInt("k", 0);
  return t;
}

// top_k by ranks (the file comment).
absl::Status TopKByRanks(const Node& node, const TopKParams& t, DecompositionBuilder& b) {
  const ValueId x = t.x;
  const DType dtype = t.dtype;
  const bool is_float = t.is_float;
  const int64_t axis = t.axis, n = t.n, k = t.k;
  const int64_t after = t.rank - axis - 1;  // dims after the axis
  // Element i along `axis`, j along axis + 1.
  const ValueId xi = b.Add("xi", "unsqueeze", {x}, Ints("axes", {axis + 1}));
  const ValueId xj = b.Add("xj", "unsqueeze", {x}, Ints("axes", {axis}));
  // j before i: x_j beyond x_i (larger, or smaller for the smallest), or
  // equal at a lower index.
  const bool largest = t.largest;
  const ValueId beyond = largest ? Greater(b, xj, xi, is_float) : Greater(b, xi, xj, is_float);
  Shape lower_shape(2 + after, 1);
  lower_shape[0] = lower_shape[1] = n;
  Tensor lower(DType::kBool, lower_shape);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) lower.SetInt(i * n + j, 1);
  }
  const ValueId tie = b.Add("tie", "logical_and",
                            {Same(b, xj, xi, is_float), b.Constant("lower", std::move(lower))});
  const ValueId before = b.Add("before", "logical_or", {beyond, tie});
  Attrs to_i64;
  to_i64.Set("to", std::string("i64"));
  const ValueId counted = b.Add("count", "cast", {before}, to_i64);
  const ValueId ranks = b.Add("rank", "reduce_sum", {counted}, AxesAttrs({axis + 1}, false));
  // [..., k, n, ...]: whether element i (along axis + 1) has rank r.
  const ValueId picked = b.Add(
      "picked", "equal",
      {b.Add("rank_i", "unsqueeze", {ranks}, Ints("axes", {axis})), Iota(b, "r", k, after + 1)});
  const ValueId candidates =
      b.Add("candidates", "where", {picked, xj, Extreme(b, "lowest", dtype, /*highest=*/false)});
  b.AddWriting("values", "reduce_max", {candidates}, node.outputs[0], AxesAttrs({axis + 1}, false));
  const ValueId positions = b.Add(
      "positions", "where", {picked, Iota(b, "i", n, after), b.Scalar("zero", 0, DType::kI64)});
  b.AddWriting("indices", "reduce_sum", {positions}, node.outputs[1], AxesAttrs({axis + 1}, false));
  return absl::OkStatus();
}

// top_k by k selections: output r is the extreme of the elements not yet
// taken (reduce_max, or reduce_min with NaN set aside as +inf, since NaN
// comes last among the smallest), at the lowest index that holds it; that
// element is then taken. Where only NaN is left among the smallest, output
// r is the first NaN not taken.
absl::Status TopKOneByOne(const Node& node, const TopKParams& t, DecompositionBuilder& b) {
  const ValueId x = t.x;
  const DType dtype = t.dtype;
  const bool is_float = t.is_float, largest = t.largest;
  const int64_t axis = t.axis, n = t.n, k = t.k, rank = t.rank;
  const ValueId iota = Iota(b, "i", n, rank - axis - 1);
  const ValueId none = b.Scalar("n", static_cast<double>(n), DType::kI64);
  // What a taken element becomes: never chosen again.
  const ValueId beyond_c = Extreme(b, "beyond", dtype, /*highest=*/!largest);
  // Among the smallest, NaN comes last: set aside until only NaN is left.
  const bool nan_last = is_float && !largest;
  const ValueId nan = nan_last ? b.Add("nan", "not_equal", {x, x}) : x;
  // The lowest index where `match` holds, or n.
  auto first = [&](ValueId match) {
    return b.Add("first", "reduce_min", {b.Add("at", "where", {match, iota, none})},
                 AxesAttrs({axis}, true));
  };
  // Before output r > 0: `taken` (bool, x's shape) and its negation `free`.
  ValueId taken = x, free = x;
  std::vector<ValueId> values, indices;
  for (int64_t r = 0; r < k; ++r) {
    if (r > 0) free = b.Add("free", "logical_not", {taken});
    ValueId candidates = x;
    if (r > 0 || nan_last) {
      const ValueId excluded = r == 0     ? nan
                               : nan_last ? b.Add("excluded", "logical_or", {taken, nan})
                                          : taken;
      candidates = b.Add("candidates", "where", {excluded, beyond_c, x});
    }
    ValueId value = b.Add("extreme", largest ? "reduce_max" : "reduce_min", {candidates},
                          AxesAttrs({axis}, true));
    ValueId match = largest ? Same(b, x, value, is_float) : b.Add("equal", "equal", {x, value});
    if (r > 0) match = b.Add("open", "logical_and", {match, free});
    ValueId index = first(match);
    if (nan_last) {
      // Only NaN left: the first NaN not taken.
      const ValueId open_nan = r > 0 ? b.Add("open_nan", "logical_and", {nan, free}) : nan;
      const ValueId only_nan = b.Add("only_nan", "equal", {index, none});
      index = b.Add("index", "where", {only_nan, first(open_nan), index});
      value = b.Add("value", "where", {only_nan, b.Scalar("nan_c", NAN, dtype), value});
    }
    const ValueId chosen = b.Add("chosen", "equal", {iota, index});
    taken = r > 0 ? b.Add("taken", "logical_or", {taken, chosen}) : chosen;
    values.push_back(value);
    indices.push_back(index);
  }
  Attrs along;
  along.Set("axis", axis);
  b.AddWriting("values", "concat", values, node.outputs[0], along);
  b.AddWriting("indices", "concat", indices, node.outputs[1], along);
  return absl::OkStatus();
}

absl::Status DecomposeTopK(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  const TopKParams t = ReadTopK(node, b);
  return t.k >= 1 && t.k <= kMaxSelectedOneByOne ? TopKOneByOne(node, t, b)
                                                 : TopKByRanks(node, t, b);
}

absl::Status DecomposeReverseSequence(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 2, 1));
  const ValueId x = node.inputs[0], lengths = node.inputs[1];
  const Shape shape = b.type(x).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t time_axis = node.attrs.GetInt("time_axis", 0);
  const int64_t steps = shape[time_axis];
  // In the [d0, d1] layout of x's first two dims.
  const ValueId length = b.Add("length", "unsqueeze", {lengths}, Ints("axes", {time_axis}));
  ValueId t = Iota(b, "t", steps, 1);  // [T, 1]
  if (time_axis == 1) t = b.Add("t_row", "reshape", {t}, Ints("shape", {1, steps}));
  const ValueId one = b.Scalar("one", 1, DType::kI64);
  const ValueId reversed = b.Add("reversed", "sub", {b.Add("last", "sub", {length, one}), t});
  // A negative length: an index before the start (the gather refuses it).
  const ValueId refused =
      b.Add("refused", "sub",
            {b.Add("before_start", "sub", {length, one}), b.Scalar("steps", steps, DType::kI64)});
  const ValueId past =
      b.Add("past", "where",
            {b.Add("negative", "less", {length, b.Scalar("zero", 0, DType::kI64)}), refused, t});
  ValueId index = b.Add("index", "where", {b.Add("inside", "less", {t, length}), reversed, past});
  if (rank > 2) {
    std::vector<int64_t> axes;
    for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
    index = b.Add("index_nd", "unsqueeze", {index}, Ints("axes", std::move(axes)));
  }
  const ValueId full = b.Add("index_full", "expand", {index}, Ints("shape", shape));
  Attrs gather;
  gather.Set("axis", time_axis);
  b.AddWriting("gather", "gather_elements", {x, full}, node.outputs[0], gather);
  return absl::OkStatus();
}

absl::Status DecomposeLrn(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const Shape shape = b.type(x).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t size = node.attrs.GetInt("size", 1);
  const double alpha = node.attrs.GetFloat("alpha", 1e-4);
  const double beta = node.attrs.GetFloat("beta", 0.75);
  const double bias = node.attrs.GetFloat("bias", 1.0);
  PointwiseMath p(b, x);
  const ValueId square = p.Mul(x, x);
  ValueId sum = square;
  // The window's reach either side, within the channels: a wider window
  // adds only zeros (and a size of 2^40 would add 2^40 slices).
  const int64_t channels = shape[1];
  const int64_t reach = std::max<int64_t>(channels - 1, 0);
  const int64_t before = std::min((size - 1) / 2, reach);
  const int64_t after = std::min(size - 1 - (size - 1) / 2, reach);
  if (before + after > 0) {
    std::vector<int64_t> pads(2 * rank, 0);
    pads[1] = before;
    pads[rank + 1] = after;
    Attrs pad = Ints("pads", std::move(pads));
    pad.Set("value", 0.0);
    const ValueId padded = b.Add("pad", "pad", {square}, std::move(pad));
    for (int64_t j = 0; j <= before + after; ++j) {
      Attrs slice = Ints("starts", {j});
      slice.Set("ends", std::vector<int64_t>{j + channels});
      slice.Set("axes", std::vector<int64_t>{1});
      const ValueId shifted = b.Add(absl::StrCat("window", j), "slice", {padded}, std::move(slice));
      sum = j == 0 ? shifted : p.Add(sum, shifted);
    }
  }
  const ValueId base = p.Add(p.Mul(sum, p.C(alpha / size)), p.C(bias));
  const ValueId factor = p.Op("exp", {p.Mul(p.LogOfAny(base), p.C(-beta))});
  p.Write("mul", {x, factor}, node.outputs[0]);
  return absl::OkStatus();
}

constexpr Decomposition kSequenceDecompositions[] = {
    {"top_k", DecomposeTopK},
    {"reverse_sequence", DecomposeReverseSequence},
    {"lrn", DecomposeLrn},
};

}  // namespace

absl::Span<const Decomposition> SequenceDecompositions() { return kSequenceDecompositions; }

}  // namespace loom
