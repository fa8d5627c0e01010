// resize as ops that already lower, fuse and vectorise, one dim at a time
// (the op is separable): a dim's taps depend only on the output position
// along it, so they are computed here, at compile time, into small
// constant tables (ResizeTaps, ir/ops/resize.h), one per tap:
// - a dim whose every output position reads one input element (nearest,
//   or linear / cubic sources at integers) is a gather at an index table
//   [O], or a view where the table is one: a strided slice (o * step +
//   start), or a repeat (o / r: unsqueeze, expand and reshape, an
//   upsampling by an integer factor);
// - otherwise the sum over its taps of a gather at the tap's index table
//   times the tap's weight table [1, .., O, .., 1] (broadcast over the
//   other dims), a tap's product masked to 0 where its weight is 0 (such a
//   tap is not read: a NaN or infinity there stays out) and taps of weight
//   0 everywhere left out.
// Dims that change are resampled from the most shrinking to the most
// growing, so the later, larger passes read fewer elements; each pass is
// pointwise over its output and fuses into one kernel (a gather's data is
// stored, so passes do not fuse with each other). tf_crop_and_resize's
// extrapolated positions are set last by a select per such dim.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/ops/resize.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

// The tables hold an entry per tap and output position along each dim.
constexpr int64_t kMaxTableEntries = int64_t{1} << 24;

// `y` [.., I, ..] (`shape`) read along `dim` at `index` (one entry per
// output position): a view where the indices step evenly, else a gather.
ValueId Pick(DecompositionBuilder& b, ValueId y, const Shape& shape, int dim,
             const std::vector<int64_t>& index, absl::string_view name) {
  const int64_t in = shape[dim], out = static_cast<int64_t>(index.size());
  bool identity = out == in, strided = out > 0, repeat = out > 0 && in > 0 && out % in == 0;
  const int64_t start = out > 0 ? index[0] : 0;
  const int64_t step = out > 1 ? index[1] - index[0] : 1;
  const int64_t factor = in > 0 ? out / in : 1;
  for (int64_t o = 0; o < out; ++o) {
    identity = identity && index[o] == o;
    strided = strided && step >= 1 && index[o] == start + o * step;
    repeat = repeat && index[o] == o / factor;
  }
  if (identity) return y;
  if (out == 0) {
    Attrs attrs = Ints("starts", {0});
    attrs.Set("ends", AttrInts{0});
    attrs.Set("axes", AttrInts{dim});
    return b.Add(absl::StrCat(name, "_empty"), "slice", {y}, std::move(attrs));
  }
  if (strided) {
    Attrs attrs = Ints("starts", {start});
    attrs.Set("ends", AttrInts{start + (out - 1) * step + 1});
    attrs.Set("axes", AttrInts{dim});
    attrs.Set("steps", AttrInts{step});
    return b.Add(absl::StrCat(name, "_slice"), "slice", {y}, std::move(attrs));
  }
  if (repeat) {
    Shape expanded = shape;
    expanded.insert(expanded.begin() + dim + 1, factor);
    Shape merged = shape;
    merged[dim] = out;
    const ValueId unsqueezed =
        b.Add(absl::StrCat(name, "_unsqueeze"), "unsqueeze", {y}, Ints("axes", {dim + 1}));
    const ValueId repeated = b.Add(absl::StrCat(name, "_repeat"), "expand", {unsqueezed},
                                   Ints("shape", std::move(expanded)));
    return b.Add(absl::StrCat(name, "_merge"), "reshape", {repeated}, Ints("shape", merged));
  }
  Tensor table(DType::kI64, {out});
  for (int64_t o = 0; o < out; ++o) table.SetInt(o, index[o]);
  Attrs axis;
  axis.Set("axis", int64_t{dim});
  return b.Add(absl::StrCat(name, "_gather"), "gather",
               {y, b.Constant(absl::StrCat(name, "_index"), std::move(table))}, std::move(axis));
}

// `y` of `shape` resampled along `dim` by `taps`.
ValueId ResampleDim(DecompositionBuilder& b, ValueId y, const Shape& shape, int dim,
                    const ResizeAxisTaps& taps, DType dtype) {
  const std::string name = absl::StrCat("d", dim);
  const int rank = static_cast<int>(shape.size());
  const int64_t out = static_cast<int64_t>(taps.extrapolated.size());
  // One input element per position: its index (extrapolated positions read
  // element 0, replaced later).
  std::vector<int64_t> single(out, 0);
  bool one_each = true;
  for (int64_t o = 0; o < out && one_each; ++o) {
    int nonzero = 0;
    for (int k = 0; k < taps.taps; ++k) {
      const double w = taps.weight[o * taps.taps + k];
      if (w == 0) continue;
      ++nonzero;
      single[o] = taps.index[o * taps.taps + k];
      one_each = one_each && w == 1;
    }
    one_each = one_each && nonzero <= 1;
  }
  if (one_each) return Pick(b, y, shape, dim, single, name);
  ValueId sum = -1;
  for (int k = 0; k < taps.taps; ++k) {
    std::vector<int64_t> index(out);
    std::vector<double> weight(out), nonzero(out);
    bool any = false, all = true;
    for (int64_t o = 0; o < out; ++o) {
      index[o] = taps.index[o * taps.taps + k];
      weight[o] = taps.weight[o * taps.taps + k];
      nonzero[o] = weight[o] != 0;
      any = any || weight[o] != 0;
      all = all && weight[o] != 0;
    }
    if (!any) continue;
    const std::string tap = absl::StrCat(name, "_tap", k);
    const ValueId picked = Pick(b, y, shape, dim, index, tap);
    ValueId term =
        b.Add(absl::StrCat(tap, "_mul"), "mul",
              {picked, b.DimTable(absl::StrCat(tap, "_weight"), dtype, rank, dim, weight)});
    if (!all) {
      term = b.Add(absl::StrCat(tap, "_masked"), "where",
                   {b.DimTable(absl::StrCat(tap, "_read"), DType::kBool, rank, dim, nonzero), term,
                    b.Scalar(absl::StrCat(tap, "_zero"), 0, dtype)});
    }
    sum = sum < 0 ? term : b.Add(absl::StrCat(tap, "_add"), "add", {sum, term});
  }
  if (sum >= 0) return sum;
  // Every position extrapolated: any value, replaced later.
  return Pick(b, y, shape, dim, single, name);
}

absl::Status DecomposeResize(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const TensorType type = b.type(node.inputs[0]);  // a copy: Add() moves values
  LOOM_ASSIGN_OR_RETURN(ResizeSpec spec, ReadResizeSpec(node, type.shape));
  const int rank = spec.rank();
  int64_t entries = 0;  // of the tables, at most 4 * 2^40 per dim
  for (int d = 0; d < rank; ++d) entries += spec.taps(d) * spec.output[d];
  if (entries > kMaxTableEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("the output ", ShapeToString(spec.output), " needs ", entries,
                     " entries of tap tables; loom decomposes resizes of at most 2^24"));
  }
  std::vector<ResizeAxisTaps> taps;
  std::vector<int> dims;
  for (int d = 0; d < rank; ++d) {
    taps.push_back(ResizeTaps(spec, d));
    dims.push_back(d);
  }
  // The most shrinking first; ties in dim order.
  auto ratio = [&](int d) {
    return spec.input[d] == 0
               ? 1.0
               : static_cast<double>(spec.output[d]) / static_cast<double>(spec.input[d]);
  };
  std::stable_sort(dims.begin(), dims.end(), [&](int a, int c) { return ratio(a) < ratio(c); });
  ValueId y = node.inputs[0];
  Shape shape = spec.input;
  for (int d : dims) {
    y = ResampleDim(b, y, shape, d, taps[d], type.dtype);
    shape[d] = spec.output[d];
  }
  for (int d = 0; d < rank; ++d) {
    const std::vector<bool>& outside = taps[d].extrapolated;
    if (std::find(outside.begin(), outside.end(), true) == outside.end()) continue;
    std::vector<double> inside(outside.size());
    for (size_t o = 0; o < outside.size(); ++o) inside[o] = outside[o] ? 0 : 1;
    const std::string name = absl::StrCat("d", d, "_extrapolate");
    y = b.Add(name, "where",
              {b.DimTable(absl::StrCat(name, "_inside"), DType::kBool, rank, d, inside), y,
               b.Scalar(absl::StrCat(name, "_value"), spec.extrapolation_value, type.dtype)});
  }
  b.AddWriting("output", "reshape", {y}, node.outputs[0], Ints("shape", spec.output));
  return absl::OkStatus();
}

constexpr Decomposition kResizeDecompositions[] = {
    {"resize", DecomposeResize},
};

}  // namespace

absl::Span<const Decomposition> ResizeDecompositions() { return kResizeDecompositions; }

}  // namespace loom
