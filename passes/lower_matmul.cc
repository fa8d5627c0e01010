// Lowering rules of matmul, and of the sums of products that gemm and conv
// calls compute (ir/gemm.h, ir/conv_call.h).
#include <optional>

#include "ir/conv_call.h"
#include "ir/gemm.h"
#include "passes/lower_internal.h"

namespace loom {

int64_t DefaultGemmMinRows(int64_t operand_elements, bool operand_is_weight) {
  return operand_is_weight && operand_elements < kSmallOperandElements ? kSmallOperandGemmMinRows
                                                                       : kDefaultGemmMinRows;
}

bool IsGemmOperand(const Graph& graph, const Node& node, ValueId value) {
  if (node.op != "matmul" || node.inputs.size() != 2 || node.inputs[1] != value ||
      node.inputs[0] == value) {
    return false;
  }
  const Shape& a = graph.value(node.inputs[0]).type.shape;
  // Asked of weights and of views of them: an operand computed at run time
  // has no data for a pass to lay out otherwise.
  const int64_t min_rows = DefaultGemmMinRows(NumElements(graph.value(value).type.shape),
                                              /*operand_is_weight=*/true);
  return a.size() >= 2 && a.back() > 0 && NumElements(a) / a.back() >= min_rows;
}

std::vector<ValueId> GemmOperandWeights(const Graph& graph,
                                        const std::function<bool(const Node&)>& product_fits,
                                        const std::function<bool(const TensorType&)>& fits) {
  std::vector<bool> refused(graph.values().size(), false);
  std::vector<bool> read(graph.values().size(), false);
  for (const Node& node : graph.nodes()) {
    for (ValueId input : node.inputs) {
      read[input] = true;
      if (!IsGemmOperand(graph, node, input) || !product_fits(node)) refused[input] = true;
    }
  }
  for (ValueId output : graph.outputs()) refused[output] = true;
  std::vector<ValueId> weights;
  for (const auto* list : {&graph.weights(), &graph.constants()}) {
    for (ValueId id : *list) {
      if (read[id] && !refused[id] && fits(graph.value(id).type)) weights.push_back(id);
    }
  }
  return weights;
}

namespace lowering {

void Lowering::AddMatmulRules(RuleTable& rules) {
  rules["matmul"] = {&Lowering::LowerMatmul, InputReads::kPerProductTerm};
}

absl::Status Lowering::LowerMatmul(const Node& node, const LoweringRule&) {
  const ValueId a = node.inputs[0], b = node.inputs[1], out = node.outputs[0];
  ComputeNode compute =
      MayBeGemm(node) ? GemmNode(node) : MatmulNode(node, lowered_[a], lowered_[b]);
  const int root = compute.root;
  Finish(std::move(compute), out, root);
  return absl::OkStatus();
}

void Lowering::MarkContraction(ComputeNode& compute, int root) {
  if (options_.gemm_min_rows < 0) return;
  compute.root = root;                                     // as Finish will
  compute.store_index = ContiguousOffset(compute.ranges);  // set them
  const std::optional<Gemm> gemm = MatchGemm(compute);
  if (gemm.has_value() && gemm->m >= GemmMinRows(0, /*operand_is_weight=*/false)) {
    compute.extern_op = ExternOp::kGemm;
  } else if (MatchConv(compute).has_value()) {
    compute.extern_op = ExternOp::kConv;
  }
}

int64_t Lowering::GemmMinRows(int64_t operand_elements, bool operand_is_weight) const {
  return options_.gemm_min_rows > 0 ? options_.gemm_min_rows
                                    : DefaultGemmMinRows(operand_elements, operand_is_weight);
}

bool Lowering::MayBeGemm(const Node& node) const {
  const Value& a = graph_.value(node.inputs[0]);
  const Value& b = graph_.value(node.inputs[1]);
  const DType dtype = graph_.value(node.outputs[0]).type.dtype;
  return options_.gemm_min_rows >= 0 && a.type.shape.size() >= 2 && b.type.shape.size() >= 2 &&
         a.type.dtype == dtype && b.type.dtype == dtype &&
         (dtype == DType::kF32 || dtype == DType::kF64);
}

ComputeNode Lowering::GemmNode(const Node& node) {
  const ValueId a = node.inputs[0], b = node.inputs[1];
  ComputeNode compute;
  auto match = [&](const LoweredValue& a_source, const LoweredValue& b_source) {
    compute = MatmulNode(node, a_source, b_source);
    compute.store_index = ContiguousOffset(compute.ranges);  // as Finish will
    return MatchGemm(compute);
  };
  // A call reads its operands where they are stored: an inline value, or
  // a view that is no strided matrix (a reshape of a transpose, say), is
  // copied into a buffer first. Materialize counts as the value's reader,
  // so each operand is copied at most once.
  const std::string a_copy = absl::StrCat(node.name, ".a");
  const std::string b_copy = absl::StrCat(node.name, ".b");
  const bool a_view = IsAffineView(a), b_view = IsAffineView(b);
  const LoweredValue a_source = a_view ? lowered_[a] : Materialize(a_copy, a);
  const LoweredValue b_source = b_view ? lowered_[b] : Materialize(b_copy, b);
  std::optional<Gemm> gemm = match(a_source, b_source);
  const bool b_weight = b_view && program_.buffers[lowered_[b].buffer].kind == BufferKind::kWeight;
  const int64_t min_rows = GemmMinRows(NumElements(graph_.value(b).type.shape), b_weight);
  if (gemm.has_value() && a_view && b_view && gemm->m < min_rows && gemm->b.transposed) {
    return compute;  // dot products that fuse with their consumers
  }
  if (!gemm.has_value()) {  // strided along both dims: copy the views too
    gemm = match(a_view ? Materialize(a_copy, a) : a_source,
                 b_view ? Materialize(b_copy, b) : b_source);
  }
  if (!gemm.has_value()) return compute;  // not reached: all contiguous
  compute.extern_op = ExternOp::kGemm;
  return compute;
}

bool Lowering::IsAffineView(ValueId value) {
  const LoweredValue& lowered = lowered_[value];
  if (lowered.inline_node >= 0 || lowered.inline_constant) return false;
  absl::InlinedVector<int64_t, 8> coefficients(graph_.value(value).type.shape.size());
  int64_t constant;
  return AffineCoefficients(lowered.offset, absl::MakeSpan(coefficients), constant);
}

ComputeNode Lowering::MatmulNode(const Node& node, const LoweredValue& a_source,
                                 const LoweredValue& b_source) {
  const ValueId a = node.inputs[0], b = node.inputs[1], out = node.outputs[0];
  const Shape& a_shape = graph_.value(a).type.shape;
  const Shape& b_shape = graph_.value(b).type.shape;
  const DType dtype = graph_.value(out).type.dtype;
  ComputeNode compute = PointwiseNode(node, out);
  const int out_rank = static_cast<int>(compute.ranges.size());
  const int64_t k = a_shape.back();
  compute.reduction_ranges = {k};
  compute.reduce = ReduceKind::kSum;
  const Expr kvar = Var(out_rank);

  // numpy matmul: a 1-D operand gains a dim of 1 (first for a, last for b)
  // that the output drops; batch dims broadcast.
  const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  const int n_var = out_rank - 1;
  const int m_var = b_vector ? out_rank - 1 : out_rank - 2;
  const int batch_rank = out_rank - (a_vector ? 0 : 1) - (b_vector ? 0 : 1);
  auto batch_indices = [&](const Shape& shape) {
    Shape batch(shape.begin(), shape.end() - 2);
    return BroadcastIndices(batch, batch_rank);
  };
  Indices a_idx, b_idx;
  if (a_vector) {
    a_idx = {kvar};
  } else {
    a_idx = batch_indices(a_shape);
    a_idx.push_back(a_shape[a_shape.size() - 2] == 1 ? ctx_.Const(0) : Var(m_var));
    a_idx.push_back(kvar);
  }
  if (b_vector) {
    b_idx = {kvar};
  } else {
    b_idx = batch_indices(b_shape);
    b_idx.push_back(kvar);
    b_idx.push_back(b_shape.back() == 1 ? ctx_.Const(0) : Var(n_var));
  }
  const int lhs = LoadFrom(compute, a_source, graph_.value(a).type.dtype, a_idx);
  const int rhs = LoadFrom(compute, b_source, graph_.value(b).type.dtype, b_idx);
  compute.root = Call(compute, ScalarFn::kMul, dtype, {lhs, rhs});
  return compute;
}

}  // namespace lowering
}  // namespace loom
