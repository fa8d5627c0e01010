// matmul with numpy semantics: the last two dims multiply, the leading
// (batch) dims broadcast; a 1-D first operand is a row vector and a 1-D
// second operand a column vector, and the dimension added for them is removed
// from the result. Floats accumulate in double, integers exactly in int64
// (wrapping).
//
// linear(x [..., in], weight [out, in], optional bias [out]) is
// x @ weight^T + bias (PyTorch layout), for numeric dtypes.
// gemm(A, B, optional C) is alpha * op(A) @ op(B) + beta * C for floats, where
// op transposes when trans_a / trans_b is 1 and C broadcasts to [M, N].
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

struct MatmulPlan {
  Shape batch;  // the broadcast batch dims
  Shape a_batch;
  Shape b_batch;
  int64_t m = 1;
  int64_t k = 1;
  int64_t n = 1;
  Shape out;
};

absl::StatusOr<MatmulPlan> PlanMatmul(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("operands must have rank >= 1, got ",
                                                   ShapeToString(a), " and ", ShapeToString(b)));
  }
  // Promote 1-D operands to matrices.
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  MatmulPlan plan;
  plan.m = a2[a2.size() - 2];
  plan.k = a2.back();
  plan.n = b2.back();
  if (b2[b2.size() - 2] != plan.k) {
    return absl::InvalidArgumentError(
        absl::StrCat("inner dimensions do not agree: ", ShapeToString(a), " x ", ShapeToString(b)));
  }
  plan.a_batch.assign(a2.begin(), a2.end() - 2);
  plan.b_batch.assign(b2.begin(), b2.end() - 2);
  absl::StatusOr<Shape> batch = BroadcastShapes(plan.a_batch, plan.b_batch);
  if (!batch.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch dimensions do not broadcast: ", ShapeToString(a), " x ", ShapeToString(b)));
  }
  plan.batch = *std::move(batch);
  plan.out = plan.batch;
  if (a.size() > 1) plan.out.push_back(plan.m);
  if (b.size() > 1) plan.out.push_back(plan.n);
  return plan;
}

absl::StatusOr<OutputTypes> MatmulShape(const Node&, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckSameDType(in, 0, 1));
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kNumeric, 0));
  LOOM_ASSIGN_OR_RETURN(MatmulPlan plan, PlanMatmul(in[0].shape, in[1].shape));
  return OneOutput(in[0].dtype, std::move(plan.out));
}

// `T` is double for floats; uint64_t for integers, whose wrapping arithmetic
// is the exact int64 result modulo 2^64.
template <typename T>
std::vector<T> Elements(const Tensor& t) {
  std::vector<T> values(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      values[i] = t.GetDouble(i);
    } else {
      values[i] = static_cast<T>(t.GetInt(i));
    }
  }
  return values;
}

template <typename T>
void Multiply(const Tensor& a_tensor, const Tensor& b_tensor, const MatmulPlan& plan,
              Tensor& result) {
  const std::vector<T> a = Elements<T>(a_tensor);
  const std::vector<T> b = Elements<T>(b_tensor);
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  std::vector<int64_t> a_strides = BroadcastStrides(plan.a_batch, plan.batch);
  std::vector<int64_t> b_strides = BroadcastStrides(plan.b_batch, plan.batch);
  for (int64_t& s : a_strides) s = SaturatingMul(s, SaturatingMul(m, k));
  for (int64_t& s : b_strides) s = SaturatingMul(s, SaturatingMul(k, n));
  StridedWalk walk(plan.batch, {std::move(a_strides), std::move(b_strides)});
  std::vector<T> row(n);
  const int64_t batches = NumElements(plan.batch);
  for (int64_t batch = 0; batch < batches; ++batch, walk.Next()) {
    const T* a_matrix = a.data() + walk.offset(0);
    const T* b_matrix = b.data() + walk.offset(1);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), T(0));
      for (int64_t p = 0; p < k; ++p) {
        const T a_ip = a_matrix[i * k + p];
        const T* b_row = b_matrix + p * n;
        for (int64_t j = 0; j < n; ++j) row[j] += a_ip * b_row[j];
      }
      const int64_t out_row = (batch * m + i) * n;
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_floating_point_v<T>) {
          result.SetDouble(out_row + j, row[j]);
        } else {
          result.SetInt(out_row + j, static_cast<int64_t>(row[j]));
        }
      }
    }
  }
}

absl::Status MatmulEval(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  LOOM_ASSIGN_OR_RETURN(MatmulPlan plan, PlanMatmul(in[0]->shape(), in[1]->shape()));
  if (IsFloat(out[0].dtype())) {
    Multiply<double>(*in[0], *in[1], plan, out[0]);
  } else {
    Multiply<uint64_t>(*in[0], *in[1], plan, out[0]);
  }
  return absl::OkStatus();
}

template <typename T>
void Store(Tensor& t, int64_t i, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    t.SetDouble(i, v);
  } else {
    t.SetInt(i, static_cast<int64_t>(v));
  }
}

absl::Status CheckAllSameDType(absl::Span<const TensorType> in, DTypeClass accepted) {
  absl::Status status = CheckDType(in[0].dtype, accepted, 0);
  for (int i = 1; status.ok() && i < static_cast<int>(in.size()); ++i) {
    status = CheckSameDType(in, 0, i);
  }
  return status;
}

// --- linear ------------------------------------------------------------------

absl::StatusOr<OutputTypes> LinearShape(const Node&, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckAllSameDType(in, DTypeClass::kNumeric));
  const Shape& x = in[0].shape;
  const Shape& weight = in[1].shape;
  if (x.empty() || weight.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("x must have rank >= 1 and weight rank 2 ([out, in]), got ", ShapeToString(x),
                     " and ", ShapeToString(weight)));
  }
  if (x.back() != weight[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("inner dimensions do not agree: x ", ShapeToString(x), " has ", x.back(),
                     " features but weight ", ShapeToString(weight), " takes ", weight[1]));
  }
  if (in.size() == 3 && in[2].shape != Shape{weight[0]}) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias must have shape [", weight[0], "], got ", ShapeToString(in[2].shape)));
  }
  Shape out = x;
  out.back() = weight[0];
  return OneOutput(in[0].dtype, std::move(out));
}

template <typename T>
void LinearKernel(absl::Span<const Tensor* const> in, Tensor& result) {
  const std::vector<T> x = Elements<T>(*in[0]);
  const std::vector<T> weight = Elements<T>(*in[1]);
  const std::vector<T> bias = in.size() == 3 ? Elements<T>(*in[2]) : std::vector<T>();
  const int64_t features_out = in[1]->shape()[0];
  const int64_t features_in = in[1]->shape()[1];
  const Shape& x_shape = in[0]->shape();
  const int64_t rows = NumElements(Shape(x_shape.begin(), x_shape.end() - 1));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < features_out; ++o) {
      T sum = bias.empty() ? T(0) : bias[o];
      for (int64_t k = 0; k < features_in; ++k) {
        sum += x[r * features_in + k] * weight[o * features_in + k];
      }
      Store(result, r * features_out + o, sum);
    }
  }
}

absl::Status LinearEval(const Node&, absl::Span<const Tensor* const> in, absl::Span<Tensor> out) {
  if (IsFloat(out[0].dtype())) {
    LinearKernel<double>(in, out[0]);
  } else {
    LinearKernel<uint64_t>(in, out[0]);
  }
  return absl::OkStatus();
}

// --- gemm --------------------------------------------------------------------

struct GemmPlan {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
};

absl::StatusOr<bool> FlagAttr(const Node& node, absl::string_view name) {
  const int64_t value = node.attrs.GetInt(name, 0);
  if (value != 0 && value != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' must be 0 or 1, got ", value));
  }
  return value == 1;
}

absl::StatusOr<GemmPlan> PlanGemm(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckAllSameDType(in, DTypeClass::kFloat));
  LOOM_ASSIGN_OR_RETURN(bool trans_a, FlagAttr(node, "trans_a"));
  LOOM_ASSIGN_OR_RETURN(bool trans_b, FlagAttr(node, "trans_b"));
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.size() != 2 || b.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("A and B must have rank 2, got ",
                                                   ShapeToString(a), " and ", ShapeToString(b)));
  }
  GemmPlan plan;
  plan.trans_a = trans_a;
  plan.trans_b = trans_b;
  plan.m = a[plan.trans_a ? 1 : 0];
  plan.k = a[plan.trans_a ? 0 : 1];
  const int64_t b_k = b[plan.trans_b ? 1 : 0];
  plan.n = b[plan.trans_b ? 0 : 1];
  if (b_k != plan.k) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions do not agree: op(A) is [", plan.m, ",", plan.k, "] and op(B) is [", b_k,
        ",", plan.n, "] (trans_a ", plan.trans_a, ", trans_b ", plan.trans_b, ")"));
  }
  if (in.size() == 3) {
    const Shape out{plan.m, plan.n};
    absl::StatusOr<Shape> broadcast = BroadcastShapes(in[2].shape, out);
    if (!broadcast.ok() || *broadcast != out) {
      return absl::InvalidArgumentError(absl::StrCat(
          "C ", ShapeToString(in[2].shape), " does not broadcast to ", ShapeToString(out)));
    }
  }
  return plan;
}

absl::StatusOr<OutputTypes> GemmShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_ASSIGN_OR_RETURN(GemmPlan plan, PlanGemm(node, in));
  return OneOutput(in[0].dtype, {plan.m, plan.n});
}

absl::Status GemmEval(const Node& node, absl::Span<const Tensor* const> in,
                      absl::Span<Tensor> out) {
  std::vector<TensorType> types;
  for (const Tensor* t : in) types.push_back(t->type());
  LOOM_ASSIGN_OR_RETURN(GemmPlan plan, PlanGemm(node, types));
  const double alpha = node.attrs.GetFloat("alpha", 1.0);
  const double beta = node.attrs.GetFloat("beta", 1.0);
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  // Element (i, p) of op(A) and (p, j) of op(B).
  auto a_at = [&](int64_t i, int64_t p) {
    return a.GetDouble(plan.trans_a ? p * m + i : i * k + p);
  };
  auto b_at = [&](int64_t p, int64_t j) {
    return b.GetDouble(plan.trans_b ? j * k + p : p * n + j);
  };
  std::vector<int64_t> c_strides;
  if (in.size() == 3) c_strides = BroadcastStrides(in[2]->shape(), {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a_at(i, p) * b_at(p, j);
      double y = alpha * sum;
      if (in.size() == 3) {
        y += beta * in[2]->GetDouble(i * c_strides[0] + j * c_strides[1]);
      }
      out[0].SetDouble(i * n + j, y);
    }
  }
  return absl::OkStatus();
}

// Each dot product has the inner dimension's count of terms.
double DotTermUnits(const BoundContext& context) {
  return SumRoundingUnits(context.inputs[0]->shape().back());
}

}  // namespace

absl::Status RegisterMatmulOps(OpRegistry& registry) {
  OpDef linear = FixedArityOp("linear", 3, {}, LinearShape, LinearEval);
  linear.min_inputs = 2;
  linear = WithPattern(Composite(std::move(linear)), OpPattern::kContraction);
  OpDef gemm = FixedArityOp("gemm", 3,
                            {{"alpha", AttrType::kFloat, false},
                             {"beta", AttrType::kFloat, false},
                             {"trans_a", AttrType::kInt, false},
                             {"trans_b", AttrType::kInt, false}},
                            GemmShape, GemmEval);
  gemm.min_inputs = 2;
  gemm = WithPattern(Composite(std::move(gemm)), OpPattern::kContraction);
  return RegisterAll(
      registry, {
                    WithPattern(WithBound(FixedArityOp("matmul", 2, {}, MatmulShape, MatmulEval),
                                          SumOfProductsBound(DotTermUnits)),
                                OpPattern::kContraction),
                    std::move(linear),
                    std::move(gemm),
                });
}

}  // namespace loom
