// Reductions over a set of axes. Attributes: `axes` (empty or absent: every
// axis; negative axes count from the end), `keepdims` (0 or 1, default 0).
// Summing zero elements gives 0 (and reduce_mean NaN, as 0/0); reduce_max and
// reduce_min over an empty axis are rejected by the shape function, since
// they have no identity. Floats accumulate in double, integers exactly in
// int64 (wrapping); max and min propagate NaN.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"

namespace loom {
namespace {

enum class Reduction { kSum, kMean, kMax, kMin };

struct ReductionPlan {
  std::vector<bool> reduced;  // per input dimension
  int64_t reduced_count = 1;  // input elements per output element
  Shape kept_shape;           // the input shape with reduced dims set to 1
  Shape out_shape;            // kept_shape, or without the reduced dims
};

absl::StatusOr<ReductionPlan> PlanReduction(const Node& node, const Shape& in) {
  const int64_t rank = in.size();
  const int64_t keepdims = node.attrs.GetInt("keepdims", 0);
  if (keepdims != 0 && keepdims != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'keepdims' must be 0 or 1, got ", keepdims));
  }
  absl::StatusOr<std::vector<int64_t>> axes =
      NormalizeAxes(node.attrs.GetInts("axes"), rank);
  if (!axes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'axes': ", axes.status().message()));
  }
  ReductionPlan plan;
  plan.reduced.assign(rank, axes->empty());
  for (int64_t axis : *axes) plan.reduced[axis] = true;
  for (int64_t d = 0; d < rank; ++d) {
    plan.kept_shape.push_back(plan.reduced[d] ? 1 : in[d]);
    if (plan.reduced[d]) plan.reduced_count *= in[d];
    if (!plan.reduced[d] || keepdims) {
      plan.out_shape.push_back(plan.kept_shape.back());
    }
  }
  return plan;
}

ShapeFn ReductionShapeFn(Reduction kind) {
  return [kind](const Node& node, absl::Span<const TensorType> in)
             -> absl::StatusOr<std::vector<TensorType>> {
    const DTypeClass accepted =
        kind == Reduction::kMean ? DTypeClass::kFloat : DTypeClass::kNumeric;
    absl::Status dtype = CheckDType(in[0].dtype, accepted, 0);
    if (!dtype.ok()) return dtype;
    absl::StatusOr<ReductionPlan> plan = PlanReduction(node, in[0].shape);
    if (!plan.ok()) return plan.status();
    if (kind == Reduction::kMax || kind == Reduction::kMin) {
      for (size_t d = 0; d < in[0].shape.size(); ++d) {
        if (plan->reduced[d] && in[0].shape[d] == 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot reduce over the empty axis ", d, " of ",
              ShapeToString(in[0].shape), " (no identity for ", node.op, ")"));
        }
      }
    }
    return std::vector<TensorType>{{in[0].dtype, plan->out_shape}};
  };
}

template <typename T>
T InitialValue(Reduction kind) {
  using Limits = std::numeric_limits<T>;
  switch (kind) {
    case Reduction::kSum:
    case Reduction::kMean:
      return 0;
    case Reduction::kMax:
      return Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    case Reduction::kMin:
      return Limits::has_infinity ? Limits::infinity() : Limits::max();
  }
  return 0;
}

// Folds every input element into its output's accumulator. `T` is double
// for floats and int64_t for integers.
template <typename T>
std::vector<T> Accumulate(Reduction kind, const Tensor& x,
                          const ReductionPlan& plan) {
  constexpr bool kIsFloat = std::is_floating_point_v<T>;
  std::vector<T> acc(NumElements(plan.kept_shape), InitialValue<T>(kind));

  std::vector<int64_t> out_strides = ContiguousStrides(plan.kept_shape);
  for (size_t d = 0; d < out_strides.size(); ++d) {
    if (plan.reduced[d]) out_strides[d] = 0;
  }
  StridedWalk walk(x.shape(), {std::move(out_strides)});
  for (int64_t i = 0; i < x.num_elements(); ++i, walk.Next()) {
    T& a = acc[walk.offset(0)];
    const T v =
        kIsFloat ? static_cast<T>(x.GetDouble(i)) : static_cast<T>(x.GetInt(i));
    switch (kind) {
      case Reduction::kSum:
      case Reduction::kMean:
        if constexpr (kIsFloat) {
          a += v;
        } else {
          a = static_cast<T>(static_cast<uint64_t>(a) +
                             static_cast<uint64_t>(v));  // wraps
        }
        break;
      case Reduction::kMax:
        if (std::isnan(static_cast<double>(v)) || v > a) a = v;
        break;
      case Reduction::kMin:
        if (std::isnan(static_cast<double>(v)) || v < a) a = v;
        break;
    }
  }
  return acc;
}

EvalFn ReductionEval(Reduction kind) {
  return [kind](const Node& node, absl::Span<const Tensor* const> in,
                absl::Span<Tensor> out) -> absl::Status {
    const Tensor& x = *in[0];
    absl::StatusOr<ReductionPlan> plan = PlanReduction(node, x.shape());
    if (!plan.ok()) return plan.status();
    Tensor& result = out[0];
    if (IsFloat(x.dtype())) {
      std::vector<double> acc = Accumulate<double>(kind, x, *plan);
      const double count = static_cast<double>(plan->reduced_count);
      for (size_t i = 0; i < acc.size(); ++i) {
        result.SetDouble(i, kind == Reduction::kMean ? acc[i] / count : acc[i]);
      }
    } else {
      std::vector<int64_t> acc = Accumulate<int64_t>(kind, x, *plan);
      for (size_t i = 0; i < acc.size(); ++i) result.SetInt(i, acc[i]);
    }
    return absl::OkStatus();
  };
}

OpDef ReductionOp(std::string name, Reduction kind) {
  return FixedArityOp(
      std::move(name), 1,
      {{"axes", AttrType::kInts, false}, {"keepdims", AttrType::kInt, false}},
      ReductionShapeFn(kind), ReductionEval(kind));
}

}  // namespace

absl::Status RegisterReductionOps(OpRegistry& registry) {
  return RegisterAll(registry, {
                                   ReductionOp("reduce_sum", Reduction::kSum),
                                   ReductionOp("reduce_mean", Reduction::kMean),
                                   ReductionOp("reduce_max", Reduction::kMax),
                                   ReductionOp("reduce_min", Reduction::kMin),
                               });
}

}  // namespace loom
