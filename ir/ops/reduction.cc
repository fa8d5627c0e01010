// Reductions over a set of axes. Attributes: `axes` (empty or absent: every
// axis; negative axes count from the end), `keepdims` (0 or 1, default 0).
// Summing zero elements gives 0 (and reduce_mean NaN, as 0/0); reduce_max and
// reduce_min over an empty axis are rejected by the shape function, since
// they have no identity. Floats accumulate in double, integers exactly in
// int64 (wrapping); max and min propagate NaN.
//
// reduce_prod, reduce_l1 (sum |x|) and reduce_sum_square take any numeric
// dtype; reduce_mean, reduce_l2 (sqrt(sum x^2)), reduce_log_sum (log(sum x))
// and reduce_log_sum_exp (max + log(sum exp(x - max)); an infinite or NaN max
// is the result itself) take floats, and so does reduce_var: the population
// variance, the mean of the squared deviations from the mean (NaN over zero
// elements). Over zero elements reduce_prod gives 1
// and the log reductions -inf.
//
// argmax and argmin reduce one `axis` (default 0; `keepdims` default 1) to
// i64 indices. Ties pick the first index, or the last with
// `select_last_index` 1. NaN counts as larger than everything for argmax and
// smaller for argmin, and NaNs tie with each other, so the first NaN wins (the
// last with select_last_index 1, as ONNX's reference computes it). An empty
// axis is an error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

enum class Reduction {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL1,
  kL2,
  kLogSum,
  kLogSumExp,
  kSumSquare,
  kVar,
};

bool TakesFloatsOnly(Reduction kind) {
  return kind == Reduction::kMean || kind == Reduction::kL2 || kind == Reduction::kLogSum ||
         kind == Reduction::kLogSumExp || kind == Reduction::kVar;
}

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
  absl::StatusOr<std::vector<int64_t>> axes = NormalizeAxes(node.attrs.GetInts("axes"), rank);
  if (!axes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'axes': ", axes.status().message()));
  }
  ReductionPlan plan;
  plan.reduced.assign(rank, axes->empty());
  for (int64_t axis : *axes) plan.reduced[axis] = true;
  for (int64_t d = 0; d < rank; ++d) {
    plan.kept_shape.push_back(plan.reduced[d] ? 1 : in[d]);
    if (plan.reduced[d]) plan.reduced_count = SaturatingMul(plan.reduced_count, in[d]);
    if (!plan.reduced[d] || keepdims) {
      plan.out_shape.push_back(plan.kept_shape.back());
    }
  }
  return plan;
}

ShapeFn ReductionShapeFn(Reduction kind) {
  return [kind](const Node& node, absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    const DTypeClass accepted = TakesFloatsOnly(kind) ? DTypeClass::kFloat : DTypeClass::kNumeric;
    LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, accepted, 0));
    LOOM_ASSIGN_OR_RETURN(ReductionPlan plan, PlanReduction(node, in[0].shape));
    if (kind == Reduction::kMax || kind == Reduction::kMin) {
      for (size_t d = 0; d < in[0].shape.size(); ++d) {
        if (plan.reduced[d] && in[0].shape[d] == 0) {
          return absl::InvalidArgumentError(absl::StrCat("cannot reduce over the empty axis ", d,
                                                         " of ", ShapeToString(in[0].shape),
                                                         " (no identity for ", node.op, ")"));
        }
      }
    }
    return OneOutput(in[0].dtype, std::move(plan.out_shape));
  };
}

template <typename T>
T InitialValue(Reduction kind) {
  using Limits = std::numeric_limits<T>;
  switch (kind) {
    case Reduction::kMax:
      return Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
    case Reduction::kMin:
      return Limits::has_infinity ? Limits::infinity() : Limits::max();
    case Reduction::kProd:
      return 1;
    default:
      return 0;
  }
}

// Integers wrap (two's complement); floats are plain double arithmetic.
template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
}
template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a * b;
  } else {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
}

// Folds element `v` into accumulator `a` (kLogSumExp is not a fold).
template <typename T>
void Fold(Reduction kind, T v, T& a) {
  switch (kind) {
    case Reduction::kSum:
    case Reduction::kMean:
    case Reduction::kLogSum:
      a = WrapAdd(a, v);
      break;
    case Reduction::kL1:
      a = WrapAdd(a, v < 0 ? WrapMul(v, T(-1)) : v);
      break;
    case Reduction::kL2:
    case Reduction::kSumSquare:
      a = WrapAdd(a, WrapMul(v, v));
      break;
    case Reduction::kProd:
      a = WrapMul(a, v);
      break;
    case Reduction::kMax:
      if (std::isnan(static_cast<double>(v)) || v > a) a = v;
      break;
    case Reduction::kMin:
      if (std::isnan(static_cast<double>(v)) || v < a) a = v;
      break;
    case Reduction::kLogSumExp:
    case Reduction::kVar:
      break;
  }
}

// Calls fn(o, i) for every element i of `x`, where o is the output element
// that i reduces into.
template <typename Fn>
void ForEachReduced(const Tensor& x, const ReductionPlan& plan, Fn fn) {
  std::vector<int64_t> out_strides = ContiguousStrides(plan.kept_shape);
  for (size_t d = 0; d < out_strides.size(); ++d) {
    if (plan.reduced[d]) out_strides[d] = 0;
  }
  StridedWalk walk(x.shape(), {std::move(out_strides)});
  for (int64_t i = 0; i < x.num_elements(); ++i, walk.Next()) {
    fn(walk.offset(0), i);
  }
}

// Folds every input element into its output's accumulator. `T` is double
// for floats and int64_t for integers.
template <typename T>
std::vector<T> Accumulate(Reduction kind, const Tensor& x, const ReductionPlan& plan) {
  std::vector<T> acc(NumElements(plan.kept_shape), InitialValue<T>(kind));
  ForEachReduced(x, plan, [&](int64_t o, int64_t i) {
    if constexpr (std::is_floating_point_v<T>) {
      Fold<T>(kind, x.GetDouble(i), acc[o]);
    } else {
      Fold<T>(kind, x.GetInt(i), acc[o]);
    }
  });
  return acc;
}

// max + log(sum exp(x - max)), so that exp never overflows.
std::vector<double> LogSumExp(const Tensor& x, const ReductionPlan& plan) {
  std::vector<double> max = Accumulate<double>(Reduction::kMax, x, plan);
  std::vector<double> sum(max.size(), 0.0);
  ForEachReduced(x, plan,
                 [&](int64_t o, int64_t i) { sum[o] += std::exp(x.GetDouble(i) - max[o]); });
  for (size_t o = 0; o < max.size(); ++o) {
    // An infinite max (+inf, or -inf from all -inf or no elements) is the
    // answer; x - max would be NaN.
    if (!std::isinf(max[o])) max[o] += std::log(sum[o]);
  }
  return max;
}

// The population variance, in two passes (the mean first) for accuracy.
std::vector<double> Variance(const Tensor& x, const ReductionPlan& plan) {
  const double count = static_cast<double>(plan.reduced_count);
  std::vector<double> mean = Accumulate<double>(Reduction::kMean, x, plan);
  for (double& m : mean) m /= count;
  std::vector<double> var(mean.size(), 0.0);
  ForEachReduced(x, plan, [&](int64_t o, int64_t i) {
    const double d = x.GetDouble(i) - mean[o];
    var[o] += d * d;
  });
  for (double& v : var) v /= count;
  return var;
}

double Finish(Reduction kind, double acc, int64_t count) {
  switch (kind) {
    case Reduction::kMean:
      return acc / static_cast<double>(count);
    case Reduction::kL2:
      return std::sqrt(acc);
    case Reduction::kLogSum:
      return std::log(acc);
    default:
      return acc;
  }
}

EvalFn ReductionEval(Reduction kind) {
  return [kind](const Node& node, absl::Span<const Tensor* const> in,
                absl::Span<Tensor> out) -> absl::Status {
    const Tensor& x = *in[0];
    LOOM_ASSIGN_OR_RETURN(ReductionPlan plan, PlanReduction(node, x.shape()));
    Tensor& result = out[0];
    if (kind == Reduction::kLogSumExp || kind == Reduction::kVar) {
      std::vector<double> values = kind == Reduction::kVar ? Variance(x, plan) : LogSumExp(x, plan);
      for (size_t i = 0; i < values.size(); ++i) result.SetDouble(i, values[i]);
    } else if (IsFloat(x.dtype())) {
      std::vector<double> acc = Accumulate<double>(kind, x, plan);
      for (size_t i = 0; i < acc.size(); ++i) {
        result.SetDouble(i, Finish(kind, acc[i], plan.reduced_count));
      }
    } else if (IsUnsigned(x.dtype())) {  // u64 above INT64_MAX
      std::vector<uint64_t> acc = Accumulate<uint64_t>(kind, x, plan);
      for (size_t i = 0; i < acc.size(); ++i) {
        result.SetInt(i, static_cast<int64_t>(acc[i]));
      }
    } else {
      std::vector<int64_t> acc = Accumulate<int64_t>(kind, x, plan);
      for (size_t i = 0; i < acc.size(); ++i) result.SetInt(i, acc[i]);
    }
    return absl::OkStatus();
  };
}

// --- argmax / argmin ---------------------------------------------------------

struct ArgPlan {
  int64_t axis = 0;
  bool select_last = false;
  Shape out_shape;
};

absl::StatusOr<ArgPlan> PlanArg(const Node& node, const TensorType& in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in.dtype, DTypeClass::kNumeric, 0));
  const Shape& shape = in.shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(node.attrs.GetInt("axis", 0), shape.size());
  if (!axis.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'axis': ", axis.status().message()));
  }
  const int64_t keepdims = node.attrs.GetInt("keepdims", 1);
  const int64_t select_last = node.attrs.GetInt("select_last_index", 0);
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"keepdims", keepdims},
                                    {"select_last_index", select_last}}) {
    if (value != 0 && value != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", name, "' must be 0 or 1, got ", value));
    }
  }
  if (shape[*axis] == 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot take ", node.op, " over the empty axis ",
                                                   *axis, " of ", ShapeToString(shape)));
  }
  ArgPlan plan;
  plan.axis = *axis;
  plan.select_last = select_last == 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d != plan.axis) {
      plan.out_shape.push_back(shape[d]);
    } else if (keepdims == 1) {
      plan.out_shape.push_back(1);
    }
  }
  return plan;
}

// Whether `v` beats `best` for argmax (`is_max`) or argmin, NaN being the
// most extreme value; `or_equal` also accepts a tie.
template <typename T>
bool Beats(T v, T best, bool is_max, bool or_equal) {
  const bool v_nan = std::isnan(static_cast<double>(v));
  const bool best_nan = std::isnan(static_cast<double>(best));
  if (v_nan || best_nan) return v_nan && (!best_nan || or_equal);
  if (v == best) return or_equal;
  return is_max ? v > best : v < best;
}

template <typename T>
T ElementAs(const Tensor& x, int64_t i) {
  if constexpr (std::is_floating_point_v<T>) {
    return x.GetDouble(i);
  } else {
    return x.GetInt(i);
  }
}

// Calls fn(out, base, stride) for each row along the plan's axis: element j
// of the row is x's element base + j * stride, its index output element out.
template <typename Fn>
void ForEachArgRow(const Shape& shape, const ArgPlan& plan, Fn fn) {
  const int64_t length = shape[plan.axis];
  const int64_t stride = ContiguousStrides(shape)[plan.axis];
  const int64_t outer = NumElements(absl::MakeConstSpan(shape).first(plan.axis));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t inner = 0; inner < stride; ++inner) {
      fn(o * stride + inner, o * length * stride + inner, stride);
    }
  }
}

template <typename T>
void ArgReduce(const Tensor& x, const ArgPlan& plan, bool is_max, Tensor& result) {
  const int64_t length = x.shape()[plan.axis];
  int64_t* indices = result.data_as<int64_t>();
  ForEachArgRow(x.shape(), plan, [&](int64_t out, int64_t base, int64_t stride) {
    int64_t best_index = 0;
    T best = ElementAs<T>(x, base);
    for (int64_t j = 1; j < length; ++j) {
      const T v = ElementAs<T>(x, base + j * stride);
      if (Beats(v, best, is_max, plan.select_last)) {
        best = v;
        best_index = j;
      }
    }
    indices[out] = best_index;
  });
}

// An index is as uncertain as the values it picks between: where another
// element lies within both their bounds of the chosen one, either may be
// the extreme, and the bound is how far apart their indices are.
absl::Status ArgBound(const BoundContext& context, absl::Span<Tensor> bounds) {
  const Tensor& x = *context.inputs[0];
  const Tensor* e = context.input_bounds[0];
  if (e == nullptr) return absl::OkStatus();
  LOOM_ASSIGN_OR_RETURN(ArgPlan plan, PlanArg(context.node, x.type()));
  const int64_t length = x.shape()[plan.axis];
  ForEachArgRow(x.shape(), plan, [&](int64_t out, int64_t base, int64_t stride) {
    const int64_t chosen = context.outputs[0].GetInt(out);
    const double value = x.GetDouble(base + chosen * stride);
    const double bound = e->GetDouble(base + chosen * stride);
    int64_t farthest = 0;
    for (int64_t j = 0; j < length; ++j) {
      const int64_t at = base + j * stride;
      if (std::fabs(x.GetDouble(at) - value) <= e->GetDouble(at) + bound) {
        farthest = std::max(farthest, std::abs(j - chosen));
      }
    }
    bounds[0].SetDouble(out, static_cast<double>(farthest));
  });
  return absl::OkStatus();
}

OpDef ArgOp(std::string name, bool is_max) {
  ShapeFn infer = [](const Node& node,
                     absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    LOOM_ASSIGN_OR_RETURN(ArgPlan plan, PlanArg(node, in[0]));
    return OneOutput(DType::kI64, std::move(plan.out_shape));
  };
  EvalFn eval = [is_max](const Node& node, absl::Span<const Tensor* const> in,
                         absl::Span<Tensor> out) -> absl::Status {
    LOOM_ASSIGN_OR_RETURN(ArgPlan plan, PlanArg(node, in[0]->type()));
    if (IsFloat(in[0]->dtype())) {
      ArgReduce<double>(*in[0], plan, is_max, out[0]);
    } else if (IsUnsigned(in[0]->dtype())) {  // u64 above INT64_MAX
      ArgReduce<uint64_t>(*in[0], plan, is_max, out[0]);
    } else {
      ArgReduce<int64_t>(*in[0], plan, is_max, out[0]);
    }
    return absl::OkStatus();
  };
  return WithBound(FixedArityOp(std::move(name), 1,
                                {{"axis", AttrType::kInt, false},
                                 {"keepdims", AttrType::kInt, false},
                                 {"select_last_index", AttrType::kInt, false}},
                                std::move(infer), std::move(eval)),
                   ArgBound);
}

// reduce_var: an element moved by e moves the variance by at most
// 2 |x - mean| e / n + e^2 / n. The implementation's own rounding (Welford's
// updates in lanes joined by Chan's formula, or two passes) is that of a
// sum of n squared deviations, 2 r var with r = SumRoundingUnits(n) units,
// plus the running means' rounding (a few units of |mean|) entering every
// deviation: 8 units of |mean| mean|x - mean|.
absl::Status VarianceBound(const BoundContext& context, absl::Span<Tensor> bounds) {
  const Tensor& x = *context.inputs[0];
  const Tensor* e = context.input_bounds[0];
  LOOM_ASSIGN_OR_RETURN(ReductionPlan plan, PlanReduction(context.node, x.shape()));
  const double n = static_cast<double>(plan.reduced_count);
  std::vector<double> mean = Accumulate<double>(Reduction::kMean, x, plan);
  for (double& m : mean) m /= n;
  std::vector<double> spread(mean.size(), 0.0), carried(mean.size(), 0.0);
  ForEachReduced(x, plan, [&](int64_t o, int64_t i) {
    const double deviation = std::fabs(x.GetDouble(i) - mean[o]);
    spread[o] += deviation / n;
    if (e != nullptr) {
      const double moved = e->GetDouble(i);
      carried[o] += (2 * deviation * moved + moved * moved) / n;
    }
  });
  const double unit = context.units[0];
  const double r = SumRoundingUnits(plan.reduced_count) * unit;
  for (size_t o = 0; o < mean.size(); ++o) {
    const double var = context.outputs[0].GetDouble(o);
    bounds[0].SetDouble(o, carried[o] + 2 * r * var + 8 * unit * std::fabs(mean[o]) * spread[o]);
  }
  return absl::OkStatus();
}

// Each term of a sum over the reduced elements carries SumRoundingUnits of
// their count.
double ReducedTermUnits(const BoundContext& context) {
  absl::StatusOr<ReductionPlan> plan = PlanReduction(context.node, context.inputs[0]->shape());
  return SumRoundingUnits(plan.ok() ? plan->reduced_count : 1);
}

// The error model of each reduction: sums (and a product, each factor
// rounding once) of their elements' magnitudes, the exact max and min,
// the variance's own; the log and squared sums are decomposed first.
OpDef WithErrorModel(OpDef def, Reduction kind) {
  switch (kind) {
    case Reduction::kSum:
    case Reduction::kMean:
    case Reduction::kL1:
    case Reduction::kL2:
      return WithBound(std::move(def), SumOfProductsBound(ReducedTermUnits));
    case Reduction::kProd:
      return WithBound(std::move(def), SumOfProductsBound([](const BoundContext&) { return 2; }));
    case Reduction::kMax:
    case Reduction::kMin:
      return Exact(std::move(def));
    case Reduction::kVar:
      return WithBound(std::move(def), VarianceBound);
    case Reduction::kLogSum:
    case Reduction::kLogSumExp:
    case Reduction::kSumSquare:
      break;
  }
  return Composite(std::move(def));
}

OpDef ReductionOp(std::string name, Reduction kind) {
  return WithErrorModel(
      FixedArityOp(std::move(name), 1,
                   {{"axes", AttrType::kInts, false}, {"keepdims", AttrType::kInt, false}},
                   ReductionShapeFn(kind), ReductionEval(kind)),
      kind);
}

}  // namespace

absl::Status RegisterReductionOps(OpRegistry& registry) {
  std::vector<OpDef> defs = {
      ReductionOp("reduce_sum", Reduction::kSum),
      ReductionOp("reduce_mean", Reduction::kMean),
      ReductionOp("reduce_max", Reduction::kMax),
      ReductionOp("reduce_min", Reduction::kMin),
      ReductionOp("reduce_prod", Reduction::kProd),
      ReductionOp("reduce_l1", Reduction::kL1),
      ReductionOp("reduce_l2", Reduction::kL2),
      ReductionOp("reduce_log_sum", Reduction::kLogSum),
      ReductionOp("reduce_log_sum_exp", Reduction::kLogSumExp),
      ReductionOp("reduce_sum_square", Reduction::kSumSquare),
      ReductionOp("reduce_var", Reduction::kVar),
      ArgOp("argmax", /*is_max=*/true),
      ArgOp("argmin", /*is_max=*/false),
  };
  for (OpDef& def : defs) def = WithPattern(std::move(def), OpPattern::kReduction);
  return RegisterAll(registry, std::move(defs));
}

}  // namespace loom
