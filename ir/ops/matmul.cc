// matmul with numpy semantics: the last two dims multiply, the leading
// (batch) dims broadcast; a 1-D first operand is a row vector and a 1-D
// second operand a column vector, and the dimension added for them is removed
// from the result. Floats accumulate in double, integers exactly in int64
// (wrapping).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"

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
    return absl::InvalidArgumentError(
        absl::StrCat("operands must have rank >= 1, got ", ShapeToString(a),
                     " and ", ShapeToString(b)));
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
        absl::StrCat("inner dimensions do not agree: ", ShapeToString(a), " x ",
                     ShapeToString(b)));
  }
  plan.a_batch.assign(a2.begin(), a2.end() - 2);
  plan.b_batch.assign(b2.begin(), b2.end() - 2);
  absl::StatusOr<Shape> batch = BroadcastShapes(plan.a_batch, plan.b_batch);
  if (!batch.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch dimensions do not broadcast: ", ShapeToString(a),
                     " x ", ShapeToString(b)));
  }
  plan.batch = *std::move(batch);
  plan.out = plan.batch;
  if (a.size() > 1) plan.out.push_back(plan.m);
  if (b.size() > 1) plan.out.push_back(plan.n);
  return plan;
}

absl::StatusOr<std::vector<TensorType>> MatmulShape(
    const Node&, absl::Span<const TensorType> in) {
  absl::Status same = CheckSameDType(in, 0, 1);
  if (!same.ok()) return same;
  absl::Status dtype = CheckDType(in[0].dtype, DTypeClass::kNumeric, 0);
  if (!dtype.ok()) return dtype;
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(in[0].shape, in[1].shape);
  if (!plan.ok()) return plan.status();
  return std::vector<TensorType>{{in[0].dtype, plan->out}};
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
void Multiply(const Tensor& a_tensor, const Tensor& b_tensor,
              const MatmulPlan& plan, Tensor& result) {
  const std::vector<T> a = Elements<T>(a_tensor);
  const std::vector<T> b = Elements<T>(b_tensor);
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  std::vector<int64_t> a_strides = BroadcastStrides(plan.a_batch, plan.batch);
  std::vector<int64_t> b_strides = BroadcastStrides(plan.b_batch, plan.batch);
  for (int64_t& s : a_strides) s *= m * k;
  for (int64_t& s : b_strides) s *= k * n;
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

absl::Status MatmulEval(const Node&, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) {
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(in[0]->shape(), in[1]->shape());
  if (!plan.ok()) return plan.status();
  if (IsFloat(out[0].dtype())) {
    Multiply<double>(*in[0], *in[1], *plan, out[0]);
  } else {
    Multiply<uint64_t>(*in[0], *in[1], *plan, out[0]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterMatmulOps(OpRegistry& registry) {
  return registry.Register(
      FixedArityOp("matmul", 2, {}, MatmulShape, MatmulEval));
}

}  // namespace loom
