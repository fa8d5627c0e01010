// Ops that move data without computing: reshape, transpose, squeeze,
// unsqueeze, expand, concat, slice, as_strided. They copy elements bit for
// bit, so they work for every dtype.
//
// Semantics worth stating:
// - reshape: at most one -1, inferred from the element count; 0 is a
//   zero-size dimension, NOT ONNX's "copy the input dimension".
// - transpose: `perm` defaults to reversing the dimensions.
// - squeeze: `axes` absent or empty removes every size-1 dimension.
// - unsqueeze: `axes` are positions in the output (negative ones count from
//   the output's end).
// - expand: the result is broadcast(input shape, `shape`), as ONNX Expand.
// - slice: exactly ONNX Slice (opset 13 wording), including negative
//   indices, clamping of out-of-range starts and ends (INT64_MAX / INT64_MIN
//   style) and negative steps. Where that wording and numpy differ, the
//   wording wins: with a negative step a start before the first element
//   clamps to 0 and selects it (numpy selects nothing).
// - as_strided: element x of the output (`shape`) is element
//   offset + sum_i strides[i] * x[i] of the input in row-major order, as
//   torch.as_strided; windows may overlap (a convolution's taps over a
//   padded image), every element read must exist.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
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

// For ops whose output has the input's elements in the same order.
absl::Status CopyAll(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  std::memcpy(out[0].data(), in[0]->data(), out[0].num_bytes());
  return absl::OkStatus();
}

// --- reshape ---------------------------------------------------------------

ShapeResult ReshapeShape(const Node& node, absl::Span<const TensorType> in) {
  Shape shape = node.attrs.GetInts("shape");
  int inferred = -1;
  int64_t known = 1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("attribute 'shape' ", ShapeToString(shape), " has more than one -1"));
      }
      inferred = i;
    } else if (shape[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'shape' ", ShapeToString(shape),
                                                     " has invalid entry ", shape[i]));
    } else {
      const std::optional<int64_t> product = CheckedMul(known, shape[i]);
      if (!product.has_value() || *product > kMaxTensorElements) {
        return absl::InvalidArgumentError(absl::StrCat("attribute 'shape' ", ShapeToString(shape),
                                                       " has more than 2^40 elements"));
      }
      known = *product;
    }
  }
  const int64_t total = NumElements(in[0].shape);
  const std::string mismatch = absl::StrCat("cannot reshape ", ShapeToString(in[0].shape), " (",
                                            total, " elements) to ", ShapeToString(shape));
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat(mismatch, ": the -1 cannot be inferred"));
    }
    shape[inferred] = total / known;
  } else if (known != total) {
    return absl::InvalidArgumentError(absl::StrCat(mismatch, " (", known, " elements)"));
  }
  return OneOutput(in[0].dtype, std::move(shape));
}

// --- transpose -------------------------------------------------------------

absl::StatusOr<std::vector<int64_t>> Permutation(const Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.attrs.GetInts("perm");
  if (!node.attrs.Has("perm")) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  std::vector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t d : perm) {
    valid = valid && d >= 0 && d < rank && !seen[d];
    if (valid) seen[d] = true;
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'perm' ", ShapeToString(perm),
                                                   " is not a permutation of the ", rank,
                                                   " input dims"));
  }
  return perm;
}

ShapeResult TransposeShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(node, in[0].shape.size()));
  Shape shape;
  for (int64_t d : perm) shape.push_back(in[0].shape[d]);
  return OneOutput(in[0].dtype, std::move(shape));
}

absl::Status TransposeEval(const Node& node, absl::Span<const Tensor* const> in,
                           absl::Span<Tensor> out) {
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(node, in[0]->rank()));
  const std::vector<int64_t> in_strides = ContiguousStrides(in[0]->shape());
  std::vector<int64_t> strides;
  for (int64_t d : perm) strides.push_back(in_strides[d]);
  StridedWalk walk(out[0].shape(), {std::move(strides)});
  for (int64_t i = 0; i < out[0].num_elements(); ++i, walk.Next()) {
    CopyElement(*in[0], walk.offset(0), out[0], i);
  }
  return absl::OkStatus();
}

// --- squeeze / unsqueeze ---------------------------------------------------

ShapeResult SqueezeShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape& shape = in[0].shape;
  const int64_t rank = shape.size();
  std::vector<bool> removed(rank, false);
  const std::vector<int64_t> listed = node.attrs.GetInts("axes");
  if (listed.empty()) {
    for (int64_t d = 0; d < rank; ++d) removed[d] = shape[d] == 1;
  }
  absl::StatusOr<std::vector<int64_t>> axes = NormalizeAxes(listed, rank);
  if (!axes.ok()) return AttrError("axes", axes.status());
  for (int64_t d : *axes) {
    if (shape[d] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("cannot squeeze axis ", d, " of ",
                                                     ShapeToString(shape), ": its size is ",
                                                     shape[d], ", not 1"));
    }
    removed[d] = true;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!removed[d]) out.push_back(shape[d]);
  }
  return OneOutput(in[0].dtype, std::move(out));
}

ShapeResult UnsqueezeShape(const Node& node, absl::Span<const TensorType> in) {
  const std::vector<int64_t> listed = node.attrs.GetInts("axes");
  const int64_t out_rank = in[0].shape.size() + listed.size();
  absl::StatusOr<std::vector<int64_t>> axes = NormalizeAxes(listed, out_rank);
  if (!axes.ok()) return AttrError("axes", axes.status());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t d : *axes) inserted[d] = true;
  Shape out;
  auto next_input_dim = in[0].shape.begin();
  for (int64_t d = 0; d < out_rank; ++d) {
    out.push_back(inserted[d] ? 1 : *next_input_dim++);
  }
  return OneOutput(in[0].dtype, std::move(out));
}

// --- expand ----------------------------------------------------------------

ShapeResult ExpandShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape target = node.attrs.GetInts("shape");
  for (int64_t d : target) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'shape' ", ShapeToString(target), " has a negative entry"));
    }
  }
  LOOM_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(in[0].shape, target));
  return OneOutput(in[0].dtype, std::move(shape));
}

absl::Status ExpandEval(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  StridedWalk walk(out[0].shape(), {BroadcastStrides(in[0]->shape(), out[0].shape())});
  for (int64_t i = 0; i < out[0].num_elements(); ++i, walk.Next()) {
    CopyElement(*in[0], walk.offset(0), out[0], i);
  }
  return absl::OkStatus();
}

// --- concat ----------------------------------------------------------------

ShapeResult ConcatShape(const Node& node, absl::Span<const TensorType> in) {
  const Shape& first = in[0].shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(node.attrs.GetInt("axis", 0), first.size());
  if (!axis.ok()) return AttrError("axis", axis.status());
  Shape out = first;
  for (int i = 1; i < static_cast<int>(in.size()); ++i) {
    LOOM_RETURN_IF_ERROR(CheckSameDType(in, 0, i));
    const Shape& shape = in[i].shape;
    bool compatible = shape.size() == first.size();
    for (size_t d = 0; compatible && d < shape.size(); ++d) {
      compatible = static_cast<int64_t>(d) == *axis || shape[d] == first[d];
    }
    if (!compatible) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " has shape ", ShapeToString(shape), " but input 0 has ",
                       ShapeToString(first), "; they may differ only on axis ", *axis));
    }
    if (shape[*axis] > kMaxTensorElements - out[*axis]) {
      return absl::InvalidArgumentError(
          absl::StrCat("the inputs' sizes on axis ", *axis, " add up to more than 2^40"));
    }
    out[*axis] += shape[*axis];
  }
  return OneOutput(in[0].dtype, std::move(out));
}

absl::Status ConcatEval(const Node& node, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) {
  Tensor& result = out[0];
  LOOM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node.attrs.GetInt("axis", 0), result.rank()));
  // Each input contributes a contiguous chunk to every row of the dims
  // before the axis.
  const int64_t outer = NumElements(absl::MakeConstSpan(result.shape()).first(axis));
  if (outer == 0) return absl::OkStatus();
  const int64_t element_size = DTypeSize(result.dtype());
  const int64_t row_bytes = result.num_bytes() / outer;
  char* dst = static_cast<char*>(result.data());
  int64_t column = 0;  // bytes into each output row
  for (const Tensor* input : in) {
    const int64_t chunk = input->num_elements() / outer * element_size;
    const char* src = static_cast<const char*>(input->data());
    for (int64_t row = 0; row < outer; ++row) {
      std::memcpy(dst + row * row_bytes + column, src + row * chunk, chunk);
    }
    column += chunk;
  }
  return absl::OkStatus();
}

// --- slice -----------------------------------------------------------------

struct DimSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};

int64_t Clamp(int64_t x, int64_t lo, int64_t hi) { return std::max(lo, std::min(x, hi)); }

// ONNX Slice on one dimension of size `dim` (no overflow for any int64
// start, end or non-zero step).
DimSlice SliceDim(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  DimSlice slice;
  slice.step = step;
  if (dim == 0) return slice;
  if (step > 0) {
    slice.start = Clamp(start, 0, dim);
    end = Clamp(end, 0, dim);
    slice.length = end > slice.start ? (end - slice.start - 1) / step + 1 : 0;
  } else {
    slice.start = Clamp(start, 0, dim - 1);
    end = Clamp(end, -1, dim - 1);
    const uint64_t magnitude = 0 - static_cast<uint64_t>(step);
    slice.length =
        slice.start > end
            ? static_cast<int64_t>(static_cast<uint64_t>(slice.start - end - 1) / magnitude) + 1
            : 0;
  }
  // A step only matters between two selected elements, so |step| < dim
  // then; normalising it otherwise keeps stride * step from overflowing.
  if (slice.length <= 1) slice.step = 1;
  return slice;
}

absl::StatusOr<std::vector<DimSlice>> PlanSlice(const Node& node, const Shape& shape) {
  // Read in place: shape inference plans every slice of an unrolled
  // recurrence, millions of them.
  auto ints = [&node](absl::string_view name) -> absl::Span<const int64_t> {
    const AttrInts* values = node.attrs.FindInts(name);
    if (values == nullptr) return {};
    return *values;
  };
  const int64_t rank = shape.size();
  const absl::Span<const int64_t> starts = ints("starts");
  const absl::Span<const int64_t> ends = ints("ends");
  const size_t count = starts.size();
  const bool has_axes = node.attrs.Has("axes");
  // Steps of another type read as absent, as GetInts would have them.
  const bool has_steps = node.attrs.FindInts("steps") != nullptr;
  const absl::Span<const int64_t> steps = ints("steps");
  const size_t num_axes = has_axes ? ints("axes").size() : count;
  const size_t num_steps = has_steps ? steps.size() : count;
  if (ends.size() != count || num_axes != count || num_steps != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("attributes 'starts', 'ends', 'axes' and 'steps' must have the same "
                     "length, got ",
                     starts.size(), ", ", ends.size(), ", ", num_axes, " and ", num_steps));
  }
  absl::InlinedVector<int64_t, 4> leading_axes;
  if (!has_axes) {
    for (size_t i = 0; i < count; ++i) leading_axes.push_back(i);
  }
  absl::StatusOr<std::vector<int64_t>> axes =
      NormalizeAxes(has_axes ? ints("axes") : absl::MakeConstSpan(leading_axes), rank);
  if (!axes.ok()) return AttrError("axes", axes.status());
  std::vector<DimSlice> plan(rank);
  for (int64_t d = 0; d < rank; ++d) plan[d].length = shape[d];
  for (size_t i = 0; i < count; ++i) {
    const int64_t step = has_steps ? steps[i] : 1;
    if (step == 0) {
      return absl::InvalidArgumentError("attribute 'steps' has a 0 entry");
    }
    const int64_t d = (*axes)[i];
    plan[d] = SliceDim(starts[i], ends[i], step, shape[d]);
  }
  return plan;
}

ShapeResult SliceShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(std::vector<DimSlice> plan, PlanSlice(node, in[0].shape));
  Shape shape;
  for (const DimSlice& dim : plan) shape.push_back(dim.length);
  return OneOutput(in[0].dtype, std::move(shape));
}

absl::Status SliceEval(const Node& node, absl::Span<const Tensor* const> in,
                       absl::Span<Tensor> out) {
  LOOM_ASSIGN_OR_RETURN(std::vector<DimSlice> plan, PlanSlice(node, in[0]->shape()));
  const std::vector<int64_t> in_strides = ContiguousStrides(in[0]->shape());
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < plan.size(); ++d) {
    strides.push_back(in_strides[d] * plan[d].step);
    base += in_strides[d] * plan[d].start;
  }
  StridedWalk walk(out[0].shape(), {std::move(strides)}, {base});
  for (int64_t i = 0; i < out[0].num_elements(); ++i, walk.Next()) {
    CopyElement(*in[0], walk.offset(0), out[0], i);
  }
  return absl::OkStatus();
}

// --- as_strided --------------------------------------------------------------

ShapeResult AsStridedShape(const Node& node, absl::Span<const TensorType> in) {
  const std::vector<int64_t> shape = node.attrs.GetInts("shape");
  const std::vector<int64_t> strides = node.attrs.GetInts("strides");
  const int64_t offset = node.attrs.GetInt("offset", 0);
  if (shape.size() != strides.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attributes 'shape' and 'strides' must have the same length, got ",
                     shape.size(), " and ", strides.size()));
  }
  if (offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'offset' is negative: ", offset));
  }
  Shape out = shape;
  if (absl::Status status = CheckShapeLimits(out); !status.ok()) return AttrError("shape", status);
  // The last element read; nothing is read from an empty output.
  int64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'strides' has a negative entry: ", strides[i]));
    }
    if (shape[i] == 0) return OneOutput(in[0].dtype, std::move(out));
    last = SaturatingMul(shape[i] - 1, strides[i]) > INT64_MAX - last
               ? INT64_MAX
               : last + SaturatingMul(shape[i] - 1, strides[i]);
  }
  const int64_t available = NumElements(in[0].shape);
  if (last >= available) {
    return absl::InvalidArgumentError(absl::StrCat("the view reads element ", last,
                                                   " of an input of ", available, " elements (",
                                                   TypeToString(in[0]), ")"));
  }
  return OneOutput(in[0].dtype, std::move(out));
}

absl::Status AsStridedEval(const Node& node, absl::Span<const Tensor* const> in,
                           absl::Span<Tensor> out) {
  StridedWalk walk(out[0].shape(), {node.attrs.GetInts("strides")},
                   {node.attrs.GetInt("offset", 0)});
  for (int64_t i = 0; i < out[0].num_elements(); ++i, walk.Next()) {
    CopyElement(*in[0], walk.offset(0), out[0], i);
  }
  return absl::OkStatus();
}

OpDef ConcatOp() {
  OpDef def = FixedArityOp("concat", 1, {{"axis", AttrType::kInt, true}}, ConcatShape, ConcatEval);
  def.max_inputs = -1;
  return def;
}

}  // namespace

absl::Status RegisterShapeOps(OpRegistry& registry) {
  std::vector<OpDef> defs = {
      View(FixedArityOp("reshape", 1, {{"shape", AttrType::kInts, true}}, ReshapeShape, CopyAll)),
      View(FixedArityOp("transpose", 1, {{"perm", AttrType::kInts, false}}, TransposeShape,
                        TransposeEval)),
      View(FixedArityOp("squeeze", 1, {{"axes", AttrType::kInts, false}}, SqueezeShape, CopyAll)),
      View(
          FixedArityOp("unsqueeze", 1, {{"axes", AttrType::kInts, true}}, UnsqueezeShape, CopyAll)),
      View(FixedArityOp("expand", 1, {{"shape", AttrType::kInts, true}}, ExpandShape, ExpandEval)),
      WithPattern(ConcatOp(), OpPattern::kInjective),
      View(FixedArityOp("slice", 1,
                        {{"starts", AttrType::kInts, true},
                         {"ends", AttrType::kInts, true},
                         {"axes", AttrType::kInts, false},
                         {"steps", AttrType::kInts, false}},
                        SliceShape, SliceEval)),
      View(FixedArityOp("as_strided", 1,
                        {{"shape", AttrType::kInts, true},
                         {"strides", AttrType::kInts, true},
                         {"offset", AttrType::kInt, false}},
                        AsStridedShape, AsStridedEval)),
  };
  // Data movement: every result is a copy of an input element.
  for (OpDef& def : defs) def = Exact(std::move(def));
  return RegisterAll(registry, std::move(defs));
}

}  // namespace loom
