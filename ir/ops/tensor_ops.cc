// Tensor ops beyond plain views: split, tile, pad, the gathers and
// scatters, flatten and dropout move elements bit for bit (any dtype, except
// dropout: floats; a scatter's reduction may also combine them); cumsum adds
// (numeric dtypes).
//
// Semantics worth stating:
// - split: one output per part (variadic outputs). `split` lists the sizes
//   along `axis` (each >= 0, one per output, summing to the dim); absent, the
//   dim is cut into equal parts, one per output, and must divide evenly.
// - pad: `pads` holds all begins then all ends (ONNX order), each >= 0.
//   `mode` "constant" (the default) fills with `value`, converted to the
//   data's dtype as cast does (truncated toward zero and saturated for
//   integers, != 0 for bool); "reflect" mirrors the data about its first
//   and last elements (excluded: pads of at most dim - 1), "edge" repeats
//   them (a dim of at least 1 when padded); `value` is then unused.
// - gather, gather_elements, gather_nd, scatter_elements, scatter_nd: a
//   negative index wraps once (i + dim); anything still outside [0, dim) is
//   an error of the run, naming the index (ir/index_error.h). gather_nd's
//   indices [B..., J..., k] share the data's first batch_dims dims B and
//   address its next k dims; its output is [B..., J..., the data's dims
//   after those]. gather_elements' output and
//   scatter_elements' updates have the indices' shape (the data's rank, no
//   dim larger than the data's but along `axis`); scatter_nd's indices
//   [..., k] address the data's first k dims, its updates are the indices'
//   leading dims and the data's remaining ones. A scatter copies the data
//   and combines each update in index order by `reduction`: "none" (the
//   default) replaces, so the last update of an element wins; "add",
//   "mul", "max", "min" fold (numeric dtypes; integers wrap, max and min
//   keep NaN).
// - cumsum: floats accumulate in double, integers in int64 (wrapping).
//   `exclusive` 1 leaves out the element itself, `reverse` 1 sums from the
//   end.
// - flatten: `axis` (default 1) may be anything in [-rank, rank].
// - dropout is inference-time: the identity; `ratio` is accepted and ignored.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/index_error.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using ShapeResult = absl::StatusOr<OutputTypes>;

absl::Status AttrError(absl::string_view attr, const absl::Status& cause) {
  return absl::InvalidArgumentError(absl::StrCat("attribute '", attr, "': ", cause.message()));
}

absl::StatusOr<int64_t> AxisAttr(const Node& node, int64_t default_axis, int64_t rank) {
  absl::StatusOr<int64_t> axis = NormalizeAxis(node.attrs.GetInt("axis", default_axis), rank);
  if (!axis.ok()) return AttrError("axis", axis.status());
  return axis;
}

absl::StatusOr<bool> FlagAttr(const Node& node, absl::string_view name) {
  const int64_t value = node.attrs.GetInt(name, 0);
  if (value != 0 && value != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' must be 0 or 1, got ", value));
  }
  return value == 1;
}

// Product of shape[begin, end).
int64_t DimProduct(const Shape& shape, int64_t begin, int64_t end) {
  return NumElements(absl::MakeConstSpan(shape).subspan(begin, end - begin));
}

// --- split -------------------------------------------------------------------

struct SplitPlan {
  int64_t axis = 0;
  std::vector<int64_t> sizes;  // one per output
};

absl::StatusOr<SplitPlan> PlanSplit(const Node& node, const Shape& shape) {
  SplitPlan plan;
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, shape.size()));
  plan.axis = axis;
  const int64_t dim = shape[plan.axis];
  const int64_t parts = node.outputs.size();
  if (!node.attrs.Has("split")) {
    if (dim % parts != 0) {
      return absl::InvalidArgumentError(absl::StrCat("axis ", plan.axis, " of ",
                                                     ShapeToString(shape), " (size ", dim,
                                                     ") does not split into ", parts,
                                                     " equal parts; list the sizes in "
                                                     "attribute 'split'"));
    }
    plan.sizes.assign(parts, dim / parts);
    return plan;
  }
  plan.sizes = node.attrs.GetInts("split");
  if (static_cast<int64_t>(plan.sizes.size()) != parts) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'split' ", ShapeToString(plan.sizes),
                                                   " has ", plan.sizes.size(), " sizes for ", parts,
                                                   " outputs"));
  }
  int64_t total = 0;  // stays <= dim, so it cannot overflow
  bool fits = true;
  for (int64_t size : plan.sizes) {
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'split' ", ShapeToString(plan.sizes), " has a negative size"));
    }
    fits = fits && size <= dim - total;
    if (fits) total += size;
  }
  if (!fits || total != dim) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'split' ", ShapeToString(plan.sizes),
                                                   " does not sum to ", dim, ", the size of axis ",
                                                   plan.axis, " of ", ShapeToString(shape)));
  }
  return plan;
}

ShapeResult SplitShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(SplitPlan plan, PlanSplit(node, in[0].shape));
  OutputTypes out;
  for (int64_t size : plan.sizes) {
    Shape shape = in[0].shape;
    shape[plan.axis] = size;
    out.push_back({in[0].dtype, std::move(shape)});
  }
  return out;
}

absl::Status SplitEval(const Node& node, absl::Span<const Tensor* const> in,
                       absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  LOOM_ASSIGN_OR_RETURN(SplitPlan plan, PlanSplit(node, x.shape()));
  const int64_t outer = DimProduct(x.shape(), 0, plan.axis);
  const int64_t inner = DimProduct(x.shape(), plan.axis + 1, x.rank());
  const int64_t dim = x.shape()[plan.axis];
  const int64_t element_size = DTypeSize(x.dtype());
  const char* src = static_cast<const char*>(x.data());
  int64_t start = 0;  // along the axis
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t chunk = plan.sizes[k] * inner * element_size;
    char* dst = static_cast<char*>(out[k].data());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + o * chunk, src + (o * dim + start) * inner * element_size, chunk);
    }
    start += plan.sizes[k];
  }
  return absl::OkStatus();
}

OpDef SplitOp() {
  OpDef def =
      FixedArityOp("split", 1, {{"axis", AttrType::kInt, false}, {"split", AttrType::kInts, false}},
                   SplitShape, SplitEval);
  def.num_outputs = -1;
  return def;
}

// --- tile --------------------------------------------------------------------

absl::StatusOr<std::vector<int64_t>> TileRepeats(const Node& node, const Shape& shape) {
  std::vector<int64_t> repeats = node.attrs.GetInts("repeats");
  if (repeats.size() != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'repeats' ", ShapeToString(repeats),
                                                   " needs one entry per "
                                                   "dim of ",
                                                   ShapeToString(shape)));
  }
  for (int64_t r : repeats) {
    if (r < 0) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'repeats' ", ShapeToString(repeats),
                                                     " has a negative "
                                                     "entry"));
    }
  }
  return repeats;
}

ShapeResult TileShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, TileRepeats(node, in[0].shape));
  Shape shape = in[0].shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::optional<int64_t> tiled = CheckedMul(shape[d], repeats[d]);
    if (!tiled.has_value() || *tiled > kMaxTensorElements) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'repeats' ", ShapeToString(repeats),
                                                     " makes dim ", d, " of ", ShapeToString(shape),
                                                     " larger than 2^40"));
    }
    shape[d] = *tiled;
  }
  return OneOutput(in[0].dtype, std::move(shape));
}

// Calls fn(i, index) for every element i of a tensor of `shape`, with its
// coordinates `index` (row-major order).
template <typename Fn>
void ForEachIndex(const Shape& shape, Fn fn) {
  std::vector<int64_t> index(shape.size(), 0);
  const int64_t count = NumElements(shape);
  for (int64_t i = 0; i < count; ++i) {
    fn(i, index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

absl::Status TileEval(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const std::vector<int64_t> strides = ContiguousStrides(x.shape());
  ForEachIndex(out[0].shape(), [&](int64_t i, const std::vector<int64_t>& at) {
    int64_t from = 0;
    for (size_t d = 0; d < at.size(); ++d) {
      from += at[d] % x.shape()[d] * strides[d];
    }
    CopyElement(x, from, out[0], i);
  });
  return absl::OkStatus();
}

// --- pad ---------------------------------------------------------------------

absl::StatusOr<std::vector<int64_t>> PadAmounts(const Node& node, const Shape& shape) {
  const std::string mode = node.attrs.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'mode' \"", mode,
                     "\" is not supported (only \"constant\", \"reflect\", \"edge\")"));
  }
  std::vector<int64_t> pads = node.attrs.GetInts("pads");
  if (pads.size() != 2 * shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'pads' ", ShapeToString(pads), " has ", pads.size(), " entries; input ",
        ShapeToString(shape), " needs ", 2 * shape.size(), " (all begins, then all ends)"));
  }
  for (int64_t p : pads) {
    if (p < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'pads' ", ShapeToString(pads), " has a negative entry"));
    }
    if (p > kMaxTensorElements) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'pads' ", ShapeToString(pads), " has an entry larger than 2^40"));
    }
  }
  if (mode == "constant") return pads;
  const size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d) {
    const int64_t most = std::max(pads[d], pads[rank + d]);
    if (most == 0) continue;
    // reflect mirrors about the first and last elements, which it leaves
    // out; edge repeats them.
    const int64_t limit = mode == "reflect" ? shape[d] - 1 : (shape[d] > 0 ? most : 0);
    if (most > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mode \"", mode, "\" pads dim ", d, " of ", ShapeToString(shape), " by ", most,
          mode == "reflect" ? "; it allows at most the dim's size - 1"
                            : "; it needs a non-empty dim"));
    }
  }
  return pads;
}

// The input position that output position `o` (of a dim of `size` input
// elements padded by `begin` before) copies in mode "reflect" or "edge"
// (whose pads PadAmounts has checked).
int64_t PaddedSource(int64_t o, int64_t begin, int64_t size, bool reflect) {
  const int64_t i = o - begin;
  if (i < 0) return reflect ? -i : 0;
  if (i >= size) return reflect ? 2 * (size - 1) - i : size - 1;
  return i;
}

ShapeResult PadShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads, PadAmounts(node, in[0].shape));
  Shape shape = in[0].shape;
  const size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d) {
    shape[d] += pads[d] + pads[rank + d];
  }
  return OneOutput(in[0].dtype, std::move(shape));
}

// `value` in `dtype`, converted as cast converts a float.
Tensor PadValue(double value, DType dtype) {
  Tensor t(dtype, {});
  t.SetDouble(0, value);
  return t;
}

absl::Status PadEval(const Node& node, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  Tensor& result = out[0];
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads, PadAmounts(node, x.shape()));
  const std::string mode = node.attrs.GetString("mode", "constant");
  if (mode != "constant") {
    const bool reflect = mode == "reflect";
    const int64_t rank = x.rank();
    const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
    std::vector<int64_t> position(rank, 0);
    for (int64_t i = 0; i < result.num_elements(); ++i) {
      int64_t source = 0;
      for (int64_t d = 0; d < rank; ++d) {
        source += in_strides[d] * PaddedSource(position[d], pads[d], x.shape()[d], reflect);
      }
      CopyElement(x, source, result, i);
      for (int64_t d = rank - 1; d >= 0 && ++position[d] == result.shape()[d]; --d) {
        position[d] = 0;
      }
    }
    return absl::OkStatus();
  }
  const Tensor fill = PadValue(node.attrs.GetFloat("value", 0), x.dtype());
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    CopyElement(fill, 0, result, i);
  }
  // Input element `index` lands at index + begins.
  const std::vector<int64_t> out_strides = ContiguousStrides(result.shape());
  int64_t base = 0;
  for (int64_t d = 0; d < x.rank(); ++d) base += pads[d] * out_strides[d];
  StridedWalk walk(x.shape(), {out_strides}, {base});
  for (int64_t i = 0; i < x.num_elements(); ++i, walk.Next()) {
    CopyElement(x, i, result, walk.offset(0));
  }
  return absl::OkStatus();
}

// --- gather ------------------------------------------------------------------

ShapeResult GatherShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape& data = in[0].shape;
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, data.size()));
  if (in[1].dtype != DType::kI32 && in[1].dtype != DType::kI64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 1 (indices) has dtype ", DTypeName(in[1].dtype), ", expected i32 or i64"));
  }
  Shape shape(data.begin(), data.begin() + axis);
  shape.insert(shape.end(), in[1].shape.begin(), in[1].shape.end());
  shape.insert(shape.end(), data.begin() + axis + 1, data.end());
  return OneOutput(in[0].dtype, std::move(shape));
}

absl::Status GatherEval(const Node& node, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, data.rank()));
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> wrapped(indices.num_elements());
  for (int64_t k = 0; k < indices.num_elements(); ++k) {
    const int64_t index = indices.GetInt(k);
    wrapped[k] = index < 0 ? index + dim : index;
    if (wrapped[k] < 0 || wrapped[k] >= dim) {
      return absl::InvalidArgumentError(IndexOutOfRangeCause(index, axis, dim));
    }
  }
  const int64_t outer = DimProduct(data.shape(), 0, axis);
  const int64_t inner = DimProduct(data.shape(), axis + 1, data.rank());
  int64_t i = 0;  // output element, in row-major order
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : wrapped) {
      for (int64_t r = 0; r < inner; ++r) {
        CopyElement(data, (o * dim + index) * inner + r, out[0], i++);
      }
    }
  }
  return absl::OkStatus();
}

// --- gather_elements, scatter_elements, scatter_nd ---------------------------

// The index at element k of `indices` into a dim of `size` (dim `axis` of
// the data), wrapped once when negative; an error when still out of range.
absl::StatusOr<int64_t> WrappedIndex(const Tensor& indices, int64_t k, int64_t axis, int64_t size) {
  const int64_t index = indices.GetInt(k);
  const int64_t wrapped = index < 0 ? index + size : index;
  if (wrapped < 0 || wrapped >= size) {
    return absl::InvalidArgumentError(IndexOutOfRangeCause(index, axis, size));
  }
  return wrapped;
}

absl::Status CheckIndexDType(DType dtype, int input) {
  if (dtype == DType::kI32 || dtype == DType::kI64) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("input ", input, " (indices) has dtype ",
                                                 DTypeName(dtype), ", expected i32 or i64"));
}

// Indices of the data's rank, each dim but `axis` at most the data's.
absl::Status CheckElementIndices(const Shape& data, const Shape& indices, int64_t axis) {
  bool fits = indices.size() == data.size();
  for (size_t d = 0; fits && d < data.size(); ++d) {
    fits = static_cast<int64_t>(d) == axis || indices[d] <= data[d];
  }
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("indices ", ShapeToString(indices), " must have the rank of the data ",
                   ShapeToString(data), " and no larger dim but along axis ", axis));
}

ShapeResult GatherElementsShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, in[0].shape.size()));
  LOOM_RETURN_IF_ERROR(CheckIndexDType(in[1].dtype, 1));
  LOOM_RETURN_IF_ERROR(CheckElementIndices(in[0].shape, in[1].shape, axis));
  return OneOutput(in[0].dtype, in[1].shape);
}

// The flat offset in a tensor of `strides` of coordinates `at` with dim
// `axis` replaced by `index`.
int64_t OffsetWithIndex(const std::vector<int64_t>& at, const std::vector<int64_t>& strides,
                        int64_t axis, int64_t index) {
  int64_t offset = 0;
  for (size_t d = 0; d < at.size(); ++d) {
    offset += (static_cast<int64_t>(d) == axis ? index : at[d]) * strides[d];
  }
  return offset;
}

absl::Status GatherElementsEval(const Node& node, absl::Span<const Tensor* const> in,
                                absl::Span<Tensor> out) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, data.rank()));
  const std::vector<int64_t> strides = ContiguousStrides(data.shape());
  absl::Status status;
  ForEachIndex(indices.shape(), [&](int64_t i, const std::vector<int64_t>& at) {
    if (!status.ok()) return;
    absl::StatusOr<int64_t> index = WrappedIndex(indices, i, axis, data.shape()[axis]);
    if (!index.ok()) {
      status = index.status();
      return;
    }
    CopyElement(data, OffsetWithIndex(at, strides, axis, *index), out[0], i);
  });
  return status;
}

// How a scatter combines an update with what the output holds: "none"
// replaces it (a later update of the same element wins), the others fold
// every update into it in order.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<ScatterReduction> ReductionAttr(const Node& node, DType dtype) {
  const std::string name = node.attrs.GetString("reduction", "none");
  ScatterReduction reduction;
  if (name == "none") {
    return ScatterReduction::kNone;
  } else if (name == "add") {
    reduction = ScatterReduction::kAdd;
  } else if (name == "mul") {
    reduction = ScatterReduction::kMul;
  } else if (name == "max") {
    reduction = ScatterReduction::kMax;
  } else if (name == "min") {
    reduction = ScatterReduction::kMin;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'reduction' \"", name,
                                                   "\" is not one of none, add, mul, max, min"));
  }
  if (absl::Status s = CheckDType(dtype, DTypeClass::kNumeric, 0); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("reduction \"", name, "\": ", s.message()));
  }
  return reduction;
}

// out[to] combined with updates[from] by `reduction`. Integers wrap; max and
// min keep a NaN.
void Combine(ScatterReduction reduction, const Tensor& updates, int64_t from, Tensor& out,
             int64_t to) {
  if (reduction == ScatterReduction::kNone) return CopyElement(updates, from, out, to);
  if (IsFloat(out.dtype())) {  // f32 through f64: the same rounding
    const double a = out.GetDouble(to), b = updates.GetDouble(from);
    const double nan = std::isnan(a) ? a : b;
    double v = 0;
    switch (reduction) {
      case ScatterReduction::kAdd:
        v = a + b;
        break;
      case ScatterReduction::kMul:
        v = a * b;
        break;
      case ScatterReduction::kMax:
        v = std::isnan(a) || std::isnan(b) ? nan : std::max(a, b);
        break;
      default:
        v = std::isnan(a) || std::isnan(b) ? nan : std::min(a, b);
        break;
    }
    return out.SetDouble(to, v);
  }
  const int64_t a = out.GetInt(to), b = updates.GetInt(from);
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  int64_t v = 0;
  switch (reduction) {
    case ScatterReduction::kAdd:
      v = static_cast<int64_t>(ua + ub);
      break;
    case ScatterReduction::kMul:
      v = static_cast<int64_t>(ua * ub);
      break;
    case ScatterReduction::kMax:
      v = IntegerLess(a, b, out.dtype()) ? b : a;
      break;
    default:
      v = IntegerLess(b, a, out.dtype()) ? b : a;
      break;
  }
  out.SetInt(to, v);
}

ShapeResult ScatterElementsShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, in[0].shape.size()));
  LOOM_RETURN_IF_ERROR(CheckIndexDType(in[1].dtype, 1));
  LOOM_RETURN_IF_ERROR(CheckElementIndices(in[0].shape, in[1].shape, axis));
  if (in[2].shape != in[1].shape || in[2].dtype != in[0].dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 2 (updates) is ", TypeToString(in[2]), ", expected the data's dtype ",
        DTypeName(in[0].dtype), " and the indices' shape ", ShapeToString(in[1].shape)));
  }
  if (absl::StatusOr<ScatterReduction> r = ReductionAttr(node, in[0].dtype); !r.ok()) {
    return r.status();
  }
  return OneOutput(in[0]);
}

// A scatter's reduction, with the output starting as a copy of the data.
absl::StatusOr<ScatterReduction> StartScatter(const Node& node, const Tensor& data, Tensor& out) {
  absl::StatusOr<ScatterReduction> reduction = ReductionAttr(node, data.dtype());
  if (reduction.ok()) std::memcpy(out.data(), data.data(), out.num_bytes());
  return reduction;
}

absl::Status ScatterElementsEval(const Node& node, absl::Span<const Tensor* const> in,
                                 absl::Span<Tensor> out) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  const Tensor& updates = *in[2];
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, data.rank()));
  LOOM_ASSIGN_OR_RETURN(ScatterReduction reduction, StartScatter(node, data, out[0]));
  const std::vector<int64_t> strides = ContiguousStrides(data.shape());
  absl::Status status;
  ForEachIndex(indices.shape(), [&](int64_t i, const std::vector<int64_t>& at) {
    if (!status.ok()) return;
    absl::StatusOr<int64_t> index = WrappedIndex(indices, i, axis, data.shape()[axis]);
    if (!index.ok()) {
      status = index.status();
      return;
    }
    Combine(reduction, updates, i, out[0], OffsetWithIndex(at, strides, axis, *index));
  });
  return status;
}

// indices [..., k] address k leading dims of the data; updates are
// indices' leading dims followed by the data's dims after those k.
ShapeResult ScatterNdShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape& data = in[0].shape;
  const Shape& indices = in[1].shape;
  LOOM_RETURN_IF_ERROR(CheckIndexDType(in[1].dtype, 1));
  if (indices.empty() || indices.back() > static_cast<int64_t>(data.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices ", ShapeToString(indices), " must have rank 1 or more and a last dim of at most ",
        data.size(), ", the data's rank"));
  }
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + indices.back(), data.end());
  if (in[2].shape != expected || in[2].dtype != in[0].dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("input 2 (updates) is ", TypeToString(in[2]), ", expected ",
                     TypeToString(TensorType{in[0].dtype, expected})));
  }
  if (absl::StatusOr<ScatterReduction> r = ReductionAttr(node, in[0].dtype); !r.ok()) {
    return r.status();
  }
  return OneOutput(in[0]);
}

absl::Status ScatterNdEval(const Node& node, absl::Span<const Tensor* const> in,
                           absl::Span<Tensor> out) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  const Tensor& updates = *in[2];
  LOOM_ASSIGN_OR_RETURN(ScatterReduction reduction, StartScatter(node, data, out[0]));
  const int64_t k = indices.shape().back();
  const int64_t tuples = DimProduct(indices.shape(), 0, indices.rank() - 1);
  const int64_t slice = DimProduct(data.shape(), k, data.rank());
  const std::vector<int64_t> strides = ContiguousStrides(data.shape());
  for (int64_t j = 0; j < tuples; ++j) {
    int64_t offset = 0;
    for (int64_t c = 0; c < k; ++c) {
      LOOM_ASSIGN_OR_RETURN(int64_t index, WrappedIndex(indices, j * k + c, c, data.shape()[c]));
      offset += index * strides[c];
    }
    for (int64_t r = 0; r < slice; ++r) {
      Combine(reduction, updates, j * slice + r, out[0], offset + r);
    }
  }
  return absl::OkStatus();
}

// --- gather_nd ----------------------------------------------------------------

// gather_nd's batch_dims b, checked against the data [B..., D...] and the
// indices [B..., J..., k] (the same b leading dims B; 1 <= k <= rank - b).
absl::StatusOr<int64_t> GatherNdBatchDims(const Node& node, const Shape& data,
                                          const Shape& indices) {
  const int64_t b = node.attrs.GetInt("batch_dims", 0);
  const int64_t rank = static_cast<int64_t>(data.size());
  const int64_t index_rank = static_cast<int64_t>(indices.size());
  if (b < 0 || b >= std::min(rank, index_rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'batch_dims' (", b, ") must be in [0, ", std::min(rank, index_rank),
                     ") for data ", ShapeToString(data), " and indices ", ShapeToString(indices)));
  }
  const int64_t k = indices.back();
  bool fits = k >= 1 && k <= rank - b;
  for (int64_t d = 0; fits && d < b; ++d) fits = indices[d] == data[d];
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat("indices ", ShapeToString(indices),
                                                   " must share the data's first ", b,
                                                   " dims (batch_dims) and have a last dim in [1, ",
                                                   rank - b, "]; data ", ShapeToString(data)));
  }
  return b;
}

ShapeResult GatherNdShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape& data = in[0].shape;
  const Shape& indices = in[1].shape;
  LOOM_RETURN_IF_ERROR(CheckIndexDType(in[1].dtype, 1));
  if (indices.empty()) {
    return absl::InvalidArgumentError("indices must have rank 1 or more, got a scalar");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t b, GatherNdBatchDims(node, data, indices));
  Shape shape(indices.begin(), indices.end() - 1);
  shape.insert(shape.end(), data.begin() + b + indices.back(), data.end());
  return OneOutput(in[0].dtype, std::move(shape));
}

// out[j, r] = data[batch of j, indices[j, 0], .., indices[j, k - 1], r] for
// each index tuple j (the indices' leading dims) and each element r of the
// data's dims after the batch dims and the k indexed ones.
absl::Status GatherNdEval(const Node& node, absl::Span<const Tensor* const> in,
                          absl::Span<Tensor> out) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  LOOM_ASSIGN_OR_RETURN(int64_t b, GatherNdBatchDims(node, data.shape(), indices.shape()));
  const int64_t k = indices.shape().back();
  const int64_t tuples = DimProduct(indices.shape(), 0, indices.rank() - 1);
  const int64_t per_batch = DimProduct(indices.shape(), b, indices.rank() - 1);
  const int64_t batch_size = DimProduct(data.shape(), b, data.rank());
  const int64_t slice = DimProduct(data.shape(), b + k, data.rank());
  const std::vector<int64_t> strides = ContiguousStrides(data.shape());
  for (int64_t j = 0; j < tuples; ++j) {
    int64_t offset = per_batch == 0 ? 0 : j / per_batch * batch_size;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t axis = b + c;
      LOOM_ASSIGN_OR_RETURN(int64_t index,
                            WrappedIndex(indices, j * k + c, axis, data.shape()[axis]));
      offset += index * strides[axis];
    }
    for (int64_t r = 0; r < slice; ++r) CopyElement(data, offset + r, out[0], j * slice + r);
  }
  return absl::OkStatus();
}

// --- cumsum ------------------------------------------------------------------

struct CumsumPlan {
  int64_t axis = 0;
  bool exclusive = false;
  bool reverse = false;
};

absl::StatusOr<CumsumPlan> PlanCumsum(const Node& node, const TensorType& in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in.dtype, DTypeClass::kNumeric, 0));
  CumsumPlan plan;
  LOOM_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(node, 0, in.shape.size()));
  LOOM_ASSIGN_OR_RETURN(bool exclusive, FlagAttr(node, "exclusive"));
  LOOM_ASSIGN_OR_RETURN(bool reverse, FlagAttr(node, "reverse"));
  plan.axis = axis;
  plan.exclusive = exclusive;
  plan.reverse = reverse;
  return plan;
}

ShapeResult CumsumShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(PlanCumsum(node, in[0]).status());
  return OneOutput(in[0]);
}

// Each running sum has at most the axis's length of terms.
double CumsumTermUnits(const BoundContext& context) {
  absl::StatusOr<CumsumPlan> plan = PlanCumsum(context.node, context.inputs[0]->type());
  return SumRoundingUnits(plan.ok() ? context.inputs[0]->shape()[plan->axis] : 1);
}

absl::Status CumsumEval(const Node& node, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  Tensor& result = out[0];
  LOOM_ASSIGN_OR_RETURN(CumsumPlan plan, PlanCumsum(node, x.type()));
  const bool is_float = IsFloat(x.dtype());
  const int64_t length = x.shape()[plan.axis];
  const int64_t outer = DimProduct(x.shape(), 0, plan.axis);
  const int64_t inner = DimProduct(x.shape(), plan.axis + 1, x.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < inner; ++r) {
      double float_sum = 0;
      uint64_t int_sum = 0;  // wraps
      for (int64_t step = 0; step < length; ++step) {
        const int64_t j = plan.reverse ? length - 1 - step : step;
        const int64_t at = (o * length + j) * inner + r;
        if (is_float) {
          const double v = x.GetDouble(at);
          result.SetDouble(at, plan.exclusive ? float_sum : float_sum + v);
          float_sum += v;
        } else {
          const uint64_t v = static_cast<uint64_t>(x.GetInt(at));
          result.SetInt(at, static_cast<int64_t>(plan.exclusive ? int_sum : int_sum + v));
          int_sum += v;
        }
      }
    }
  }
  return absl::OkStatus();
}

// --- flatten / dropout -------------------------------------------------------

ShapeResult FlattenShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape& shape = in[0].shape;
  const int64_t rank = shape.size();
  // The axis may equal the rank (everything goes into the first dim).
  const int64_t axis = node.attrs.GetInt("axis", 1);
  if (axis < -rank || axis > rank) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'axis': axis ", axis,
                                                   " is out of range [", -rank, ", ", rank,
                                                   "] for rank ", rank));
  }
  const int64_t split = axis < 0 ? axis + rank : axis;
  return OneOutput(in[0].dtype, {DimProduct(shape, 0, split), DimProduct(shape, split, rank)});
}

ShapeResult DropoutShape(const Node&, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
  return OneOutput(in[0]);
}

// Same elements in the same order.
absl::Status CopyAll(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  std::memcpy(out[0].data(), in[0]->data(), out[0].num_bytes());
  return absl::OkStatus();
}

// A gather: data movement that reads its data (input 0) where its indices
// say.
OpDef Gather(OpDef def) { return Indexed(Exact(std::move(def)), OpPattern::kInjective, {0}); }

// A scatter: every output element searches the indices (input 1) for the
// updates (input 2) that address it, and replaces or folds them in.
OpDef Scatter(OpDef def) { return Indexed(Exact(std::move(def)), OpPattern::kOpaque, {1, 2}); }

}  // namespace

absl::Status RegisterTensorOps(OpRegistry& registry) {
  // Data movement is exact: every result is a copy of an input element (or
  // pad's value).
  return RegisterAll(
      registry,
      {
          View(Exact(SplitOp())),
          View(Exact(
              FixedArityOp("tile", 1, {{"repeats", AttrType::kInts, true}}, TileShape, TileEval))),
          WithPattern(Exact(FixedArityOp("pad", 1,
                                         {{"pads", AttrType::kInts, true},
                                          {"value", AttrType::kFloat, false},
                                          {"mode", AttrType::kString, false}},
                                         PadShape, PadEval)),
                      OpPattern::kInjective),
          Gather(FixedArityOp("gather", 2, {{"axis", AttrType::kInt, false}}, GatherShape,
                              GatherEval)),
          Gather(FixedArityOp("gather_elements", 2, {{"axis", AttrType::kInt, false}},
                              GatherElementsShape, GatherElementsEval)),
          Scatter(FixedArityOp(
              "scatter_elements", 3,
              {{"axis", AttrType::kInt, false}, {"reduction", AttrType::kString, false}},
              ScatterElementsShape, ScatterElementsEval)),
          Gather(FixedArityOp("gather_nd", 2, {{"batch_dims", AttrType::kInt, false}},
                              GatherNdShape, GatherNdEval)),
          Scatter(FixedArityOp("scatter_nd", 3, {{"reduction", AttrType::kString, false}},
                               ScatterNdShape, ScatterNdEval)),
          WithPattern(WithBound(FixedArityOp("cumsum", 1,
                                             {{"axis", AttrType::kInt, true},
                                              {"exclusive", AttrType::kInt, false},
                                              {"reverse", AttrType::kInt, false}},
                                             CumsumShape, CumsumEval),
                                SumOfProductsBound(CumsumTermUnits)),
                      OpPattern::kReduction),
          View(Exact(FixedArityOp("flatten", 1, {{"axis", AttrType::kInt, false}}, FlattenShape,
                                  CopyAll))),
          WithPattern(Exact(FixedArityOp("dropout", 1, {{"ratio", AttrType::kFloat, false}},
                                         DropoutShape, CopyAll)),
                      OpPattern::kElementwise),
      });
}

}  // namespace loom
