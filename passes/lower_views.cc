// Lowering rules of the views (OpDef::is_view): each output is its input read
// at other indices (DefineView), with no compute node of its own.
#include <algorithm>

#include "passes/lower_internal.h"

namespace loom {
namespace lowering {

void Lowering::AddViewRules(RuleTable& rules) {
  rules["reshape"] = {&Lowering::LowerReshape};
  rules["transpose"] = {&Lowering::LowerTranspose};
  rules["squeeze"] = {&Lowering::LowerSqueezeLike};
  rules["unsqueeze"] = {&Lowering::LowerSqueezeLike};
  rules["expand"] = {&Lowering::LowerExpand};
  rules["slice"] = {&Lowering::LowerSlice};
  rules["as_strided"] = {&Lowering::LowerAsStrided};
  rules["split"] = {&Lowering::LowerSplit};
  rules["tile"] = {&Lowering::LowerTile};
}

void Lowering::DefineView(ValueId out, ValueId in, absl::Span<const Expr> in_indices) {
  const LoweredValue& source = lowered_[in];
  if (source.inline_constant) {
    lowered_[out] = source;
    return;
  }
  const Shape& out_shape = graph_.value(out).type.shape;
  if (source.inline_node >= 0) {
    LoweredValue view = source;
    std::vector<Expr>& coords = inline_templates_[source.inline_node].coords;
    view.coords_begin = static_cast<uint32_t>(coords.size());
    for (uint32_t i = 0; i < source.num_coords; ++i) {
      // By position: the list may move as it grows.
      const Expr coord = coords[source.coords_begin + i];
      coords.push_back(Reindex(coord, in_indices, out_shape));
    }
    lowered_[out] = view;
    return;
  }
  lowered_[out] =
      LoweredValue::Stored(source.buffer, Reindex(source.offset, in_indices, out_shape));
}

absl::Status Lowering::LowerReshape(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const Shape& out_shape = graph_.value(out).type.shape;
  Indices in_indices;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    // Input index i depends on the two shapes only (memoised).
    key_.Start(kReshapeIndex)
        .Add(static_cast<int64_t>(i))
        .Add(static_cast<int64_t>(in_shape.size()))
        .Add(in_shape)
        .Add(out_shape);
    in_indices.push_back(memo_.Get(key_, [&] {
      // The flat position of the output element, unflattened over the
      // input shape. A stride or dim of 0 means the tensor has no
      // elements: any index will do, as long as building it does not
      // divide by zero.
      const Expr flat = ContiguousOffset(out_shape);
      const int64_t stride = ContiguousStrides(in_shape)[i];
      return ctx_.Mod(ctx_.FloorDiv(flat, std::max<int64_t>(stride, 1)),
                      std::max<int64_t>(in_shape[i], 1));
    }));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

absl::Status Lowering::LowerTranspose(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const size_t rank = graph_.value(in).type.shape.size();
  AttrInts perm = IntsOrEmpty(node, "perm");
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(rank - 1 - i);
  }
  // out[x] = in[y] with y[perm[i]] = x[i].
  std::vector<Expr> in_indices(rank);
  for (size_t i = 0; i < rank; ++i) in_indices[perm[i]] = Var(static_cast<int>(i));
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

absl::Status Lowering::LowerSqueezeLike(const Node& node, const LoweringRule&) {
  // Squeeze and unsqueeze only add or drop dims of size 1, so the dims of
  // size > 1 appear in the same order in both shapes: pair them up.
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const Shape& out_shape = graph_.value(out).type.shape;
  std::vector<Expr> in_indices;
  size_t j = 0;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (in_shape[i] == 1) {
      in_indices.push_back(ctx_.Const(0));
      continue;
    }
    while (out_shape[j] == 1) ++j;
    in_indices.push_back(Var(static_cast<int>(j++)));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

absl::Status Lowering::LowerExpand(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  DefineView(out, in,
             BroadcastIndices(graph_.value(in).type.shape, graph_.value(out).type.shape.size()));
  return absl::OkStatus();
}

absl::Status Lowering::LowerSlice(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const Shape& out_shape = graph_.value(out).type.shape;
  const size_t rank = in_shape.size();
  const AttrInts starts = IntsOrEmpty(node, "starts");
  AttrInts axes = IntsOrEmpty(node, "axes");
  AttrInts steps = IntsOrEmpty(node, "steps");
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  Indices in_indices = Vars(0, static_cast<int>(rank));
  for (size_t i = 0; i < axes.size(); ++i) {
    const int axis = Axis(axes[i], rank);
    const int64_t dim = in_shape[axis];
    // ONNX Slice: negative starts count from the end, then clamp to the
    // valid range for the step's direction.
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    start =
        steps[i] > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
    // A step only matters between two selected elements (|step| < dim
    // then); with one or none selected, any step as large as INT64_MIN
    // would only overflow the index arithmetic, so use 1.
    const int64_t step = out_shape[axis] <= 1 ? 1 : steps[i];
    in_indices[axis] = ctx_.Add(ctx_.Const(start), ctx_.Mul(Var(axis), step));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

// out[x] = the input's element offset + sum_i strides[i] * x[i] in row-major
// order: an affine view of a buffer that stores the input so (a padded
// image whose overlapping windows a convolution reads as one matrix); any
// other input (inlined, or a view in another order) is copied into one
// first, so that the view stays affine.
absl::Status Lowering::LowerAsStrided(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const std::vector<int64_t> strides = node.attrs.GetInts("strides");
  Expr flat = ctx_.Const(node.attrs.GetInt("offset", 0));
  for (size_t i = 0; i < strides.size(); ++i) {
    flat = ctx_.Add(flat, ctx_.Mul(Var(static_cast<int>(i)), strides[i]));
  }
  LoweredValue source = lowered_[in];
  std::vector<int64_t> coefficients(in_shape.size());
  int64_t base = 0;
  bool contiguous = source.inline_node < 0 && !source.inline_constant &&
                    AffineCoefficients(source.offset, absl::MakeSpan(coefficients), base);
  const std::vector<int64_t> contiguous_strides = ContiguousStrides(in_shape);
  for (size_t d = 0; contiguous && d < in_shape.size(); ++d) {
    contiguous = in_shape[d] == 1 || coefficients[d] == contiguous_strides[d];
  }
  if (!contiguous) {
    source = Materialize(absl::StrCat(node.name, ".input"), in);
    base = 0;
  }
  lowered_[out] = LoweredValue::Stored(source.buffer, ctx_.Add(flat, ctx_.Const(base)));
  return absl::OkStatus();
}

absl::Status Lowering::LowerSplit(const Node& node, const LoweringRule&) {
  // Each part is a view of the input from where the parts before it end
  // along the axis (shape inference has checked that they tile it).
  const ValueId in = node.inputs[0];
  const size_t rank = graph_.value(in).type.shape.size();
  const int axis = Axis(node.attrs.GetInt("axis", 0), rank);
  int64_t start = 0;
  for (ValueId out : node.outputs) {
    Indices in_indices = Vars(0, static_cast<int>(rank));
    in_indices[axis] = ctx_.Add(Var(axis), ctx_.Const(start));
    DefineView(out, in, in_indices);
    start += graph_.value(out).type.shape[axis];
  }
  return absl::OkStatus();
}

absl::Status Lowering::LowerTile(const Node& node, const LoweringRule&) {
  // out[x] = in[x % in_dims], per dim.
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  std::vector<Expr> in_indices;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    in_indices.push_back(in_shape[i] <= 1 ? ctx_.Const(0)
                                          : ctx_.Mod(Var(static_cast<int>(i)), in_shape[i]));
  }
  DefineView(out, in, in_indices);
  return absl::OkStatus();
}

}  // namespace lowering
}  // namespace loom
