// Lowering rules of the reductions: reduce_*, argmax and argmin, cumsum.
#include <utility>

#include "passes/lower_internal.h"

namespace loom {
namespace lowering {

void Lowering::AddReductionRules(RuleTable& rules) {
  const std::pair<const char*, ReduceKind> reductions[] = {
      {"reduce_sum", ReduceKind::kSum}, {"reduce_max", ReduceKind::kMax},
      {"reduce_min", ReduceKind::kMin}, {"reduce_prod", ReduceKind::kProd},
      {"reduce_var", ReduceKind::kVar},
  };
  for (const auto& [op, kind] : reductions) {
    rules[op] = LoweringRule::Reduction(&Lowering::LowerReduce, kind);
  }
  rules["reduce_mean"] = {&Lowering::LowerReduceMean};
  rules["argmax"] = LoweringRule::Reduction(&Lowering::LowerArgReduce, ReduceKind::kArgMax);
  rules["argmin"] = LoweringRule::Reduction(&Lowering::LowerArgReduce, ReduceKind::kArgMin);
  rules["cumsum"] = {&Lowering::LowerCumsum, InputReads::kPerPair};
}

absl::Status Lowering::LowerReduce(const Node& node, const LoweringRule& rule) {
  int root;
  ComputeNode compute = ReductionNode(node, rule.reduce, root);
  if (rule.reduce == ReduceKind::kSum) MarkContraction(compute, root);
  Finish(std::move(compute), node.outputs[0], root);
  return absl::OkStatus();
}

// The sum (node and buffer `<node>.sum`), then a pointwise divide by the
// reduced element count, which computes the value.
absl::Status Lowering::LowerReduceMean(const Node& node, const LoweringRule&) {
  const ValueId out = node.outputs[0];
  const DType dtype = graph_.value(out).type.dtype;
  int root;
  ComputeNode compute = ReductionNode(node, ReduceKind::kSum, root);
  const int64_t count = NumElements(compute.reduction_ranges);
  const Expr offset = ContiguousOffset(compute.ranges);
  const LoweredValue sum = LoweredValue::Stored(
      StoreTemp(std::move(compute), root, dtype, absl::StrCat(node.name, ".sum")), offset);
  ComputeNode divide = PointwiseNode(node, out);
  const int total = LoadFrom(divide, sum, dtype, Vars(0, static_cast<int>(divide.ranges.size())));
  const int n = Constant(divide, static_cast<double>(count), dtype);
  const int quotient = Call(divide, ScalarFn::kDiv, dtype, {total, n});
  Finish(std::move(divide), out, quotient);
  return absl::OkStatus();
}

ComputeNode Lowering::ReductionNode(const Node& node, ReduceKind kind, int& root) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const AttrInts axes = IntsOrEmpty(node, "axes");
  std::vector<bool> reduced(in_shape.size(), axes.empty());
  for (int64_t axis : axes) {
    reduced[Axis(axis, in_shape.size())] = true;
  }
  const bool keepdims = node.attrs.GetInt("keepdims", 0) != 0;

  // Pointwise loops follow the output's dims; reduction loops come after.
  ComputeNode compute = PointwiseNode(node, out);
  const int num_pointwise = static_cast<int>(compute.ranges.size());
  std::vector<Expr> indices;
  int next_pointwise = 0;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (reduced[i]) {
      indices.push_back(Var(num_pointwise + static_cast<int>(compute.reduction_ranges.size())));
      compute.reduction_ranges.push_back(in_shape[i]);
      if (keepdims) ++next_pointwise;
    } else {
      indices.push_back(Var(next_pointwise++));
    }
  }
  if (compute.reduction_ranges.empty()) compute.reduction_ranges.push_back(1);
  compute.reduce = kind;
  root = Load(compute, in, indices);
  return compute;
}

absl::Status Lowering::LowerArgReduce(const Node& node, const LoweringRule& rule) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& in_shape = graph_.value(in).type.shape;
  const int axis = Axis(node.attrs.GetInt("axis", 0), in_shape.size());
  const bool keepdims = node.attrs.GetInt("keepdims", 1) != 0;
  const bool last = node.attrs.GetInt("select_last_index", 0) != 0;

  ComputeNode compute = PointwiseNode(node, out);
  const int num_pointwise = static_cast<int>(compute.ranges.size());
  compute.reduction_ranges = {in_shape[axis]};
  const bool max = rule.reduce == ReduceKind::kArgMax;
  compute.reduce = !last ? rule.reduce : max ? ReduceKind::kArgMaxLast : ReduceKind::kArgMinLast;
  std::vector<Expr> indices;
  int next_pointwise = 0;
  for (int i = 0; i < static_cast<int>(in_shape.size()); ++i) {
    if (i == axis) {
      indices.push_back(Var(num_pointwise));
      if (keepdims) ++next_pointwise;
    } else {
      indices.push_back(Var(next_pointwise++));
    }
  }
  const int root = Load(compute, in, indices);
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

// out[.., i, ..] = sum over j of in[.., j, ..] masked to j <= i (j < i when
// exclusive; j >= i, j > i when reversed): a reduction whose body compares
// the loop positions. Quadratic in the axis length, which stays small in
// the models loom targets; a scan kind would make it linear.
absl::Status Lowering::LowerCumsum(const Node& node, const LoweringRule&) {
  const ValueId in = node.inputs[0], out = node.outputs[0];
  const Shape& shape = graph_.value(in).type.shape;
  const DType dtype = graph_.value(out).type.dtype;
  const int rank = static_cast<int>(shape.size());
  const int axis = Axis(node.attrs.GetInt("axis", 0), shape.size());
  const bool exclusive = node.attrs.GetInt("exclusive", 0) != 0;
  const bool reverse = node.attrs.GetInt("reverse", 0) != 0;

  ComputeNode compute = PointwiseNode(node, out);
  compute.reduction_ranges = {shape[axis]};
  compute.reduce = ReduceKind::kSum;
  Indices indices = Vars(0, rank);
  indices[axis] = Var(rank);
  const int value = Load(compute, in, indices);
  ScalarOp position{ScalarOp::Kind::kIndex, DType::kI64};
  position.index = Var(rank);
  const int j = Step(compute, position);
  position.index = Var(axis);
  const int i = Step(compute, position);
  const ScalarFn compare = reverse ? (exclusive ? ScalarFn::kGt : ScalarFn::kGe)
                                   : (exclusive ? ScalarFn::kLt : ScalarFn::kLe);
  const int in_prefix = Call(compute, compare, DType::kBool, {j, i});
  const int zero = Constant(compute, 0, dtype);
  const int root = Call(compute, ScalarFn::kSelect, dtype, {in_prefix, value, zero});
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

}  // namespace lowering
}  // namespace loom
