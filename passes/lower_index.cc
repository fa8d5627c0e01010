// Lowering rules of the index ops: the gather and scatter families, with the
// checks of their indices.
#include <algorithm>
#include <limits>
#include <optional>

#include "ir/expr_analysis.h"
#include "ir/index_error.h"
#include "ir/status_macros.h"
#include "passes/lower_internal.h"

namespace loom {
namespace lowering {

namespace {

// A scatter's fold of its updates into the data, by its "reduction".
struct ScatterFold {
  ReduceKind reduce;  // over the updates that address an element
  ScalarFn combine;   // of the data's element with that fold
};

ScatterFold FoldOf(const std::string& reduction) {
  if (reduction == "add") return {ReduceKind::kSum, ScalarFn::kAdd};
  if (reduction == "mul") return {ReduceKind::kProd, ScalarFn::kMul};
  if (reduction == "max") return {ReduceKind::kMax, ScalarFn::kMax};
  return {ReduceKind::kMin, ScalarFn::kMin};
}

// The value a fold starts from, which leaves what it folds unchanged.
double FoldIdentity(ReduceKind kind, DType dtype) {
  switch (kind) {
    case ReduceKind::kSum:
      return 0;
    case ReduceKind::kProd:
      return 1;
    case ReduceKind::kMax:
      return IsFloat(dtype) ? -std::numeric_limits<double>::infinity()
                            : static_cast<double>(std::numeric_limits<int64_t>::min());
    default:
      return IsFloat(dtype) ? std::numeric_limits<double>::infinity()
                            : static_cast<double>(std::numeric_limits<int64_t>::max());
  }
}

}  // namespace

void Lowering::AddIndexRules(RuleTable& rules) {
  rules["gather"] = {&Lowering::LowerGather, InputReads::kPerOutputElement, /*may_view=*/true};
  rules["gather_elements"] = {&Lowering::LowerGatherElements};
  rules["gather_nd"] = {&Lowering::LowerGatherNd};
  rules["scatter_elements"] = {&Lowering::LowerScatterElements};
  rules["scatter_nd"] = {&Lowering::LowerScatterNd};
}

// A step giving the index that `indices` holds at `coords` (over
// `compute`'s loops) into dim `axis` (of size `extent`) of `node`'s data,
// wrapped when negative; with `component` >= 0 (scatter_nd), the index is
// indices[coords..., component]. Indices known at compile time are read and
// checked here (KnownIndexStep); indices known only at run time are read
// from CheckedIndices, which checks each once.
absl::StatusOr<int> Lowering::IndexAt(ComputeNode& compute, const Node& node, ValueId indices,
                                      absl::Span<const Expr> coords, int64_t axis, int64_t extent,
                                      int component) {
  if (!IsKnown(indices)) {
    const LoweredValue checked = CheckedIndices(node, indices, axis, extent, component);
    return LoadFrom(compute, checked, DType::kI64, coords);
  }
  Indices at(coords.begin(), coords.end());
  if (component >= 0) at.push_back(ctx_.Const(component));
  const int loaded = Load(compute, indices, at);
  return KnownIndexStep(compute, node, indices, loaded, axis, extent, component);
}

// `index`, a step loading `indices` known at compile time, whose elements
// (those of `component`, or all) are checked here: an error names the
// first out of range; wrapped in the body when one is negative.
absl::StatusOr<int> Lowering::KnownIndexStep(ComputeNode& compute, const Node& node,
                                             ValueId indices, int index, int64_t axis,
                                             int64_t extent, int component) {
  const Value& index_value = graph_.value(indices);
  const Tensor& index_data = graph_.initializer(indices);
  const int64_t every = component < 0 ? 1 : index_value.type.shape.back();
  bool any_negative = false;
  for (int64_t i = std::max(component, 0); i < index_data.num_elements(); i += every) {
    const int64_t value = index_data.GetInt(i);
    if (value < -extent || value >= extent) {
      return NodeError(node, absl::StrCat(IndexOutOfRangeCause(value, axis, extent), " (element ",
                                          i, " of '", index_value.name, "')"));
    }
    any_negative |= value < 0;
  }
  if (!any_negative) return index;
  const DType index_type = index_value.type.dtype;
  const int zero = Constant(compute, 0, index_type);
  const int negative = Call(compute, ScalarFn::kLt, DType::kBool, {index, zero});
  const int size = Constant(compute, static_cast<double>(extent), index_type);
  const int wrapped = Call(compute, ScalarFn::kAdd, index_type, {index, size});
  return Call(compute, ScalarFn::kSelect, index_type, {negative, wrapped, index});
}

// Indices known only at run time, each checked once (kCheckIndex) by a
// node of its own into an i64 temporary of the indices' shape (without the
// last dim for a `component`; both named `<node>.indices`, or
// `<node>.indices<component>`): a reader loads them checked and wrapped. An
// embedding's reader then checks once per token, not per element, in the
// outer loop it shares with this node once they are fused (its inner loop
// stays free to vectorise), and every index is checked even where no
// element reads it (an empty data dim), as the interpreter checks it.
LoweredValue Lowering::CheckedIndices(const Node& node, ValueId indices, int64_t axis,
                                      int64_t extent, int component) {
  const Shape& shape = graph_.value(indices).type.shape;
  const std::string name = component < 0 ? absl::StrCat(node.name, ".indices")
                                         : absl::StrCat(node.name, ".indices", component);
  const Shape ranges(shape.begin(), component < 0 ? shape.end() : shape.end() - 1);
  ComputeNode checker;
  checker.ranges = ranges;
  Indices at = Vars(0, static_cast<int>(ranges.size()));
  if (component >= 0) at.push_back(ctx_.Const(component));
  const int loaded = Load(checker, indices, at);
  const int checked = CheckIndex(checker, node, loaded, axis, extent);
  const BufferId buffer = StoreTemp(std::move(checker), checked, DType::kI64, name);
  return LoweredValue::Stored(buffer, ContiguousOffset(ranges));
}

int Lowering::CheckIndex(ComputeNode& compute, const Node& node, int index, int64_t axis,
                         int64_t extent) {
  if (program_.index_errors < 0) {
    Buffer errors;
    errors.name = "index_errors";
    errors.dtype = DType::kI64;
    errors.sizes = {2};
    errors.kind = BufferKind::kIndexErrors;
    program_.buffers.push_back(std::move(errors));
    program_.index_errors = static_cast<BufferId>(program_.buffers.size() - 1);
  }
  ScalarOp check{ScalarOp::Kind::kCheckIndex, DType::kI64};
  check.site = static_cast<int32_t>(program_.index_checks.size());
  check.extent = extent;
  check.args = {index};
  program_.index_checks.push_back(IndexCheck{node.name, std::string(node.op), axis, extent});
  return Step(compute, std::move(check));
}

bool Lowering::IsKnown(ValueId value) const { return graph_.HasInitializer(value); }

// `value` as a stored buffer whose offset is linear in variable `var` (with
// the coefficient in `stride`): as it is, or copied into a contiguous one
// (a compute node and buffer named `name`).
LoweredValue Lowering::LinearSource(const std::string& name, ValueId value, int var,
                                    int64_t& stride) {
  LoweredValue source = lowered_[value];
  std::optional<int64_t> coefficient;
  if (!source.inline_constant && source.inline_node < 0) {
    coefficient = LinearCoefficient(source.offset, var);
  }
  if (!coefficient.has_value()) {
    source = Materialize(name, value);
    coefficient = LinearCoefficient(source.offset, var);  // contiguous: always linear
  }
  stride = *coefficient;
  return source;
}

// A load of `data` (lowered as `source`, linear in its dim `axis` with
// `stride`) at `data_indices` with dim `axis` moved by the value of step
// `index`.
int Lowering::IndirectLoad(ComputeNode& compute, ValueId data, const LoweredValue& source,
                           absl::Span<const Expr> data_indices, int64_t stride, int index) {
  ScalarOp load{ScalarOp::Kind::kLoad, graph_.value(data).type.dtype};
  load.buffer = source.buffer;
  load.index = Reindex(source.offset, data_indices, Extents(compute));
  if (stride != 0) {  // a data dim of 1 needs no index
    load.stride = stride;
    load.args = {index};
  }
  return Step(compute, std::move(load));
}

// out[a, i, b] = data[a, indices[i], b] (a: the dims before `axis`, i: the
// index's dims, b: the dims after it). Each index becomes an indirect load
// whose flat index is affine in the loop variables plus stride * index;
// indices known only at run time are checked once each (IndexAt).
absl::Status Lowering::LowerGather(const Node& node, const LoweringRule&) {
  const ValueId data = node.inputs[0], indices = node.inputs[1], out = node.outputs[0];
  const Shape& data_shape = graph_.value(data).type.shape;
  const int data_rank = static_cast<int>(data_shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), data_shape.size());
  const int64_t dim = data_shape[axis];
  const int index_rank = static_cast<int>(graph_.value(indices).type.shape.size());
  // data's index for the output's loop variables, with `axis` left at 0.
  Indices data_indices = Vars(0, axis);
  data_indices.push_back(ctx_.Const(0));
  for (int i = axis + 1; i < data_rank; ++i) {
    data_indices.push_back(Var(i - 1 + index_rank));
  }
  if (lowered_[indices].inline_constant) {  // one index: a plain view
    const int64_t index = static_cast<int64_t>(lowered_[indices].constant);
    if (index < -dim || index >= dim) {
      return NodeError(node, IndexOutOfRangeCause(index, axis, dim));
    }
    data_indices[axis] = ctx_.Const(index < 0 ? index + dim : index);
    DefineView(out, data, data_indices);
    return absl::OkStatus();
  }
  ComputeNode compute = PointwiseNode(node, out);
  LOOM_ASSIGN_OR_RETURN(int index,
                        IndexAt(compute, node, indices, Vars(axis, index_rank), axis, dim));
  if (lowered_[data].inline_constant && IsKnown(indices)) {
    DefineView(out, data, data_indices);  // one element: every index picks it
    return absl::OkStatus();
  }
  int64_t stride;
  const LoweredValue source = LinearSource(absl::StrCat(node.name, ".data"), data, axis, stride);
  const int root = IndirectLoad(compute, data, source, data_indices, stride, index);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// out[x] = data[x with x[axis] = indices[x]], over the indices' shape.
absl::Status Lowering::LowerGatherElements(const Node& node, const LoweringRule&) {
  const ValueId data = node.inputs[0], indices = node.inputs[1], out = node.outputs[0];
  const Shape& data_shape = graph_.value(data).type.shape;
  const int rank = static_cast<int>(data_shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), data_shape.size());
  ComputeNode compute = PointwiseNode(node, out);
  LOOM_ASSIGN_OR_RETURN(int index,
                        IndexAt(compute, node, indices, Vars(0, rank), axis, data_shape[axis]));
  Indices data_indices = Vars(0, rank);
  data_indices[axis] = ctx_.Const(0);
  int64_t stride;
  const LoweredValue source = LinearSource(absl::StrCat(node.name, ".data"), data, axis, stride);
  const int root = IndirectLoad(compute, data, source, data_indices, stride, index);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

bool Lowering::Replaces(const Node& node) {
  return node.attrs.GetString("reduction", "none") == "none";
}

// A scatter is lowered as a pull from its output: element x of the output
// looks at every update position j (the reduction loops of `pull`, whose
// step `match` says whether update j addresses x, its index checked) and
// takes from the updates either the last j that matches ("none") or the
// fold of those that match, which a second node combines with data[x]. No
// store goes to a computed place, so any two elements may be computed in
// any order or at once; the cost is the output's size times the updates'.
// `position`: j's row-major position among the update positions;
// `update_coords`: the updates' coordinates of j in `pull`; for "none",
// `last_source`, `last_coords` and `last_stride`: the updates lowered so
// that update j's element for output x is at last_coords + last_stride *
// position.
absl::Status Lowering::FinishScatter(const Node& node, ComputeNode pull, int match, Expr position,
                                     absl::Span<const Expr> update_coords,
                                     const LoweredValue& last_source,
                                     absl::Span<const Expr> last_coords, int64_t last_stride) {
  const ValueId data = node.inputs[0], updates = node.inputs[2], out = node.outputs[0];
  const DType dtype = graph_.value(out).type.dtype;
  const int rank = static_cast<int>(pull.ranges.size());
  const bool replaces = Replaces(node);
  const ScatterFold fold = replaces ? ScatterFold{ReduceKind::kMax, ScalarFn::kMax}
                                    : FoldOf(node.attrs.GetString("reduction", "none"));
  pull.reduce = fold.reduce;
  const int chosen = replaces ? Position(pull, position) : Load(pull, updates, update_coords);
  const DType chosen_type = replaces ? DType::kI64 : dtype;
  const int none = Constant(pull, replaces ? -1 : FoldIdentity(fold.reduce, dtype), chosen_type);
  const int pulled = Call(pull, ScalarFn::kSelect, chosen_type, {match, chosen, none});
  const BufferId folded =
      StoreTemp(std::move(pull), pulled, chosen_type, absl::StrCat(node.name, ".pulled"));

  ComputeNode compute = PointwiseNode(node, out);
  const int old = Load(compute, data, Vars(0, rank));
  ScalarOp load{ScalarOp::Kind::kLoad, chosen_type};
  load.buffer = folded;
  load.index = ContiguousOffset(compute.ranges);
  const int found = Step(compute, std::move(load));
  int root;
  if (replaces) {  // found: the last update's position, or -1
    const int zero = Constant(compute, 0, DType::kI64);
    const int any = Call(compute, ScalarFn::kGe, DType::kBool, {found, zero});
    const int last = Call(compute, ScalarFn::kMax, DType::kI64, {found, zero});
    const int update = IndirectLoad(compute, updates, last_source, last_coords, last_stride, last);
    root = Call(compute, ScalarFn::kSelect, dtype, {any, update, old});
  } else {
    root = Call(compute, fold.combine, dtype, {old, found});
  }
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// Update j (the indices' and updates' element) goes to the output element
// at j with j[axis] = indices[j].
absl::Status Lowering::LowerScatterElements(const Node& node, const LoweringRule&) {
  const ValueId indices = node.inputs[1], updates = node.inputs[2], out = node.outputs[0];
  const Shape& shape = graph_.value(out).type.shape;
  const Shape& index_shape = graph_.value(indices).type.shape;
  const int rank = static_cast<int>(shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), shape.size());
  ComputeNode pull = PointwiseNode(node, out);
  pull.reduction_ranges = {index_shape[axis]};
  // Update j for output element x: x but along the axis, where the
  // reduction loop runs; a dim the indices have fewer of than the data is
  // read in range (modulo) and masked.
  Indices update_coords = Vars(0, rank);
  update_coords[axis] = Var(rank);
  int match = -1;
  for (int d = 0; d < rank; ++d) {
    if (d == axis || index_shape[d] == shape[d]) continue;
    update_coords[d] = ctx_.Mod(Var(d), index_shape[d]);
    const int bound = Constant(pull, static_cast<double>(index_shape[d]), DType::kI64);
    match =
        And(pull, match, Call(pull, ScalarFn::kLt, DType::kBool, {Position(pull, Var(d)), bound}));
  }
  LOOM_ASSIGN_OR_RETURN(int index, IndexAt(pull, node, indices, update_coords, axis, shape[axis]));
  const int target = AsI64(pull, index);
  match = And(pull, match,
              Call(pull, ScalarFn::kEq, DType::kBool, {target, Position(pull, Var(axis))}));
  Indices last_coords = update_coords;
  last_coords[axis] = ctx_.Const(0);
  int64_t stride = 0;
  LoweredValue source;
  if (Replaces(node)) {
    source = LinearSource(absl::StrCat(node.name, ".updates"), updates, axis, stride);
  }
  return FinishScatter(node, std::move(pull), match, Var(rank), update_coords, source, last_coords,
                       stride);
}

// Update slice j (the indices' leading dims) goes to the output at the k
// coordinates indices[j, :] (and every element of the remaining dims).
absl::Status Lowering::LowerScatterNd(const Node& node, const LoweringRule&) {
  const ValueId indices = node.inputs[1], updates = node.inputs[2], out = node.outputs[0];
  const Shape& shape = graph_.value(out).type.shape;
  const Shape& index_shape = graph_.value(indices).type.shape;
  const int rank = static_cast<int>(shape.size());
  const int tuple_rank = static_cast<int>(index_shape.size()) - 1;
  const int k = static_cast<int>(index_shape.back());
  ComputeNode pull = PointwiseNode(node, out);
  pull.reduction_ranges.assign(index_shape.begin(), index_shape.end() - 1);
  Indices tuple = Vars(rank, tuple_rank);
  int match = -1;
  for (int c = 0; c < k; ++c) {
    LOOM_ASSIGN_OR_RETURN(int index, IndexAt(pull, node, indices, tuple, c, shape[c], c));
    const int target = AsI64(pull, index);
    match =
        And(pull, match, Call(pull, ScalarFn::kEq, DType::kBool, {target, Position(pull, Var(c))}));
  }
  if (match < 0) match = Constant(pull, 1, DType::kBool);  // k = 0: the whole data
  Indices update_coords = tuple;
  for (int d = k; d < rank; ++d) update_coords.push_back(Var(d));
  // Update j's slice read from a contiguous copy: j's row-major position
  // times the slice's size, plus the place within the slice.
  LoweredValue source = lowered_[updates];
  if (Replaces(node) && (source.inline_constant || source.inline_node >= 0 ||
                         source.offset != ContiguousOffset(graph_.value(updates).type.shape))) {
    source = Materialize(absl::StrCat(node.name, ".updates"), updates);
  }
  Indices last_coords(tuple_rank, ctx_.Const(0));
  for (int d = k; d < rank; ++d) last_coords.push_back(Var(d));
  const int64_t slice = NumElements(absl::MakeConstSpan(shape).subspan(k));
  return FinishScatter(node, std::move(pull), match,
                       ContiguousOffset(Shape(index_shape.begin(), index_shape.end() - 1), rank),
                       update_coords, source, last_coords, slice);
}

// out[b, j, r] = data[b, indices[b, j, 0], .., indices[b, j, k - 1], r]
// (b: the batch_dims leading dims, j: the indices' other leading dims, r:
// the data's dims after the k indexed ones). The k indices (each known
// only at run time checked once, IndexAt) make one flat offset into the
// data, stored contiguously: an indirect load.
absl::Status Lowering::LowerGatherNd(const Node& node, const LoweringRule&) {
  const ValueId data = node.inputs[0], indices = node.inputs[1], out = node.outputs[0];
  const Shape& data_shape = graph_.value(data).type.shape;
  const Shape& index_shape = graph_.value(indices).type.shape;
  const int batch = static_cast<int>(node.attrs.GetInt("batch_dims", 0));
  const int tuple_rank = static_cast<int>(index_shape.size()) - 1;
  const int k = static_cast<int>(index_shape.back());
  const int data_rank = static_cast<int>(data_shape.size());
  ComputeNode compute = PointwiseNode(node, out);
  const Indices tuple = Vars(0, tuple_rank);
  const std::vector<int64_t> strides = ContiguousStrides(data_shape);
  int flat = -1;
  for (int c = 0; c < k; ++c) {
    const int axis = batch + c;
    LOOM_ASSIGN_OR_RETURN(int index,
                          IndexAt(compute, node, indices, tuple, axis, data_shape[axis], c));
    int term = AsI64(compute, index);
    if (strides[axis] != 1) {
      const int stride = Constant(compute, static_cast<double>(strides[axis]), DType::kI64);
      term = Call(compute, ScalarFn::kMul, DType::kI64, {term, stride});
    }
    flat = flat < 0 ? term : Call(compute, ScalarFn::kAdd, DType::kI64, {flat, term});
  }
  LoweredValue source = lowered_[data];
  if (source.inline_constant || source.inline_node >= 0 ||
      source.offset != ContiguousOffset(data_shape)) {
    source = Materialize(absl::StrCat(node.name, ".data"), data);
  }
  Indices data_indices = Vars(0, batch);
  for (int c = 0; c < k; ++c) data_indices.push_back(ctx_.Const(0));
  for (int d = batch + k; d < data_rank; ++d) {
    data_indices.push_back(Var(tuple_rank + d - batch - k));
  }
  const int root = IndirectLoad(compute, data, source, data_indices, 1, flat);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

}  // namespace lowering
}  // namespace loom
