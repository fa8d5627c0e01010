// Linear algebra, the derived reductions and the shape ops that are views
// or slices of their input.
#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

// Maps a possibly negative axis into [0, rank) (or [0, rank] when
// `inclusive_end`), or fails naming the attribute.
absl::StatusOr<int64_t> NormalizedAxis(const Node& node, int64_t default_axis, int64_t rank,
                                       bool inclusive_end = false) {
  const int64_t axis = node.attrs.GetInt("axis", default_axis);
  const int64_t normalized = axis < 0 ? axis + rank : axis;
  const int64_t limit = inclusive_end ? rank : rank - 1;
  if (normalized < 0 || normalized > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'axis' ", axis, " is out of range for rank ", rank));
  }
  return normalized;
}

// linear(x [..., in], weight [out, in], bias [out]?) = x @ weight^T + bias.
// The transpose is a view, so the matmul reads the weight in place.
absl::Status DecomposeLinear(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 2, 3));
  const ValueId weight_t = b.Add("weight_t", "transpose", {node.inputs[1]}, Ints("perm", {1, 0}));
  if (node.inputs.size() == 2) {
    b.AddWriting("matmul", "matmul", {node.inputs[0], weight_t}, node.outputs[0]);
    return absl::OkStatus();
  }
  const ValueId product = b.Add("matmul", "matmul", {node.inputs[0], weight_t});
  b.AddWriting("bias", "add", {product, node.inputs[2]}, node.outputs[0]);
  return absl::OkStatus();
}

// gemm(A, B, C?) = alpha * op(A) @ op(B) + beta * C; multiplications by 1
// are left out (they are exact).
absl::Status DecomposeGemm(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 2, 3));
  const DType dtype = b.type(node.inputs[0]).dtype;
  auto operand = [&](int i, const char* attr) {
    if (node.attrs.GetInt(attr, 0) == 0) return node.inputs[i];
    return b.Add(absl::StrCat(attr), "transpose", {node.inputs[i]}, Ints("perm", {1, 0}));
  };
  const ValueId a = operand(0, "trans_a");
  const ValueId bm = operand(1, "trans_b");
  const double alpha = node.attrs.GetFloat("alpha", 1.0);
  const double beta = node.attrs.GetFloat("beta", 1.0);
  const bool scaled = alpha != 1.0, has_c = node.inputs.size() == 3;
  // The last step writes the composite's output.
  auto step = [&](absl::string_view suffix, OpName op, absl::Span<const ValueId> inputs,
                  bool last) {
    if (!last) return b.Add(suffix, op, inputs);
    b.AddWriting(suffix, op, inputs, node.outputs[0]);
    return node.outputs[0];
  };
  ValueId y = step("matmul", "matmul", {a, bm}, !scaled && !has_c);
  if (scaled) {
    y = step("alpha_mul", "mul", {y, b.Scalar("alpha", alpha, dtype)}, !has_c);
  }
  if (has_c) {
    ValueId c = node.inputs[2];
    if (beta != 1.0) {
      c = b.Add("beta_mul", "mul", {c, b.Scalar("beta", beta, dtype)});
    }
    step("add", "add", {y, c}, true);
  }
  return absl::OkStatus();
}

// The reduction's own attributes (axes, keepdims) passed on.
Attrs ReduceAttrs(const Node& node) {
  Attrs attrs;
  attrs.Set("axes", node.attrs.GetInts("axes"));
  attrs.Set("keepdims", node.attrs.GetInt("keepdims", 0));
  return attrs;
}

// reduce_l1 = sum |x|.
absl::Status DecomposeReduceL1(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  b.AddWriting("sum", "reduce_sum", {b.Add("abs", "abs", {node.inputs[0]})}, node.outputs[0],
               ReduceAttrs(node));
  return absl::OkStatus();
}

ValueId Square(DecompositionBuilder& b, ValueId x) { return b.Add("square", "mul", {x, x}); }

// reduce_sum_square = sum x^2.
absl::Status DecomposeReduceSumSquare(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  b.AddWriting("sum", "reduce_sum", {Square(b, node.inputs[0])}, node.outputs[0],
               ReduceAttrs(node));
  return absl::OkStatus();
}

// reduce_l2 = sqrt(sum x^2).
absl::Status DecomposeReduceL2(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId sum = b.Add("sum", "reduce_sum", {Square(b, node.inputs[0])}, ReduceAttrs(node));
  b.AddWriting("sqrt", "sqrt", {sum}, node.outputs[0]);
  return absl::OkStatus();
}

// reduce_log_sum = log(sum x).
absl::Status DecomposeReduceLogSum(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId sum = b.Add("sum", "reduce_sum", {node.inputs[0]}, ReduceAttrs(node));
  b.AddWriting("log", "log", {sum}, node.outputs[0]);
  return absl::OkStatus();
}

// reduce_log_sum_exp = max + log(sum exp(x - max)): exp never overflows.
// The max is kept with its reduced dims (to broadcast against x) and
// viewed in the output's shape for the final add. An infinite max is the
// result itself (x - max would be NaN there).
absl::Status DecomposeReduceLogSumExp(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ValueId x = node.inputs[0];
  const DType dtype = b.type(x).dtype;
  const Shape in_shape = b.type(x).shape;
  const int64_t rank = in_shape.size();
  // The output's shape: reduced dims dropped unless keepdims.
  std::vector<bool> reduced(rank, node.attrs.GetInts("axes").empty());
  for (int64_t axis : node.attrs.GetInts("axes")) {
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute 'axes': ", axis, " is out of range for rank ", rank));
    }
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  Shape out_shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out_shape.push_back(in_shape[d]);
    } else if (node.attrs.GetInt("keepdims", 0) != 0) {
      out_shape.push_back(1);
    }
  }
  // Over no elements the sum is 0 and the result log(0), -inf (reduce_max
  // has no value there).
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d] && in_shape[d] == 0) {
      b.AddWriting("empty", "expand",
                   {b.Scalar("minus_inf", -std::numeric_limits<double>::infinity(), dtype)},
                   node.outputs[0], Ints("shape", out_shape));
      return absl::OkStatus();
    }
  }
  Attrs keep = ReduceAttrs(node);
  keep.Set("keepdims", int64_t{1});
  const ValueId max = b.Add("max", "reduce_max", {x}, keep);
  const ValueId exp = b.Add("exp", "exp", {b.Add("sub", "sub", {x, max})});
  const ValueId sum = b.Add("sum", "reduce_sum", {exp}, ReduceAttrs(node));
  const ValueId max_out = b.Add("max_shape", "reshape", {max}, Ints("shape", out_shape));
  const ValueId lse = b.Add("add", "add", {b.Add("log", "log", {sum}), max_out});
  const ValueId infinite = b.Add("is_inf", "equal",
                                 {b.Add("abs", "abs", {max_out}),
                                  b.Scalar("inf", std::numeric_limits<double>::infinity(), dtype)});
  b.AddWriting("where", "where", {infinite, max_out, lse}, node.outputs[0]);
  return absl::OkStatus();
}

// flatten(x) = reshape to [prod(dims[:axis]), prod(dims[axis:])].
absl::Status DecomposeFlatten(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const Shape shape = b.type(node.inputs[0]).shape;
  LOOM_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizedAxis(node, 1, shape.size(), /*inclusive_end=*/true));
  const int64_t outer = NumElements(absl::MakeConstSpan(shape).first(axis));
  const int64_t inner = NumElements(absl::MakeConstSpan(shape).subspan(axis));
  b.AddWriting("reshape", "reshape", {node.inputs[0]}, node.outputs[0],
               Ints("shape", {outer, inner}));
  return absl::OkStatus();
}

// dropout at inference is the identity: a same-shape reshape, i.e. a view.
absl::Status DecomposeDropout(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  b.AddWriting("identity", "reshape", {node.inputs[0]}, node.outputs[0],
               Ints("shape", b.type(node.inputs[0]).shape));
  return absl::OkStatus();
}

constexpr Decomposition kTensorOpDecompositions[] = {
    {"linear", DecomposeLinear},
    {"gemm", DecomposeGemm},
    {"reduce_l1", DecomposeReduceL1},
    {"reduce_l2", DecomposeReduceL2},
    {"reduce_log_sum", DecomposeReduceLogSum},
    {"reduce_log_sum_exp", DecomposeReduceLogSumExp},
    {"reduce_sum_square", DecomposeReduceSumSquare},
    {"flatten", DecomposeFlatten},
    {"dropout", DecomposeDropout},
};

}  // namespace

absl::Span<const Decomposition> TensorOpDecompositions() { return kTensorOpDecompositions; }

}  // namespace loom
