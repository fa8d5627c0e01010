#include "ir/ops/error_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool IsExact(const Tensor* bound) {
  if (bound == nullptr) return true;
  for (int64_t i = 0; i < bound->num_elements(); ++i) {
    if (bound->GetDouble(i) != 0) return false;
  }
  return true;
}

// `x` moved by `sign` times its bound, element by element, in x's dtype: an
// integer by the bound rounded up (capped far from overflow), a bool
// flipped where its bound is at least 1/2 (either sign flips it).
Tensor Moved(const Tensor& x, const Tensor& bound, double sign) {
  Tensor moved = x;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double e = bound.GetDouble(i);
    if (e == 0) continue;
    if (IsFloat(x.dtype())) {
      moved.SetDouble(i, x.GetDouble(i) + sign * e);
    } else if (x.dtype() == DType::kBool) {
      moved.SetInt(i, e >= 0.5 ? !x.GetInt(i) : x.GetInt(i));
    } else {
      const double step = std::min(std::ceil(e), 0x1p52);
      moved.SetInt(i, x.GetInt(i) + static_cast<int64_t>(sign * step));
    }
  }
  return moved;
}

// How far `moved` is from `value`: 0 when both are the same NaN or
// infinity, infinite when only one is NaN.
double Change(double value, double moved) {
  if (std::isnan(value) || std::isnan(moved)) {
    return std::isnan(value) && std::isnan(moved) ? 0 : kInfinity;
  }
  if (value == moved) return 0;
  return std::fabs(moved - value);
}

std::vector<Tensor> LikeOutputs(const BoundContext& context) {
  std::vector<Tensor> results;
  for (const Tensor& output : context.outputs) results.emplace_back(output.type());
  return results;
}

void SetAll(absl::Span<Tensor> bounds, double value) {
  for (Tensor& bound : bounds) {
    for (int64_t i = 0; i < bound.num_elements(); ++i) bound.SetDouble(i, value);
  }
}

// Adds `ulps` of each float output element's own magnitude.
void AddRounding(const BoundContext& context, double ulps, absl::Span<Tensor> bounds) {
  for (size_t k = 0; k < bounds.size(); ++k) {
    const double unit = context.units[k];
    if (unit == 0 || ulps == 0) continue;
    const Tensor& output = context.outputs[k];
    for (int64_t i = 0; i < output.num_elements(); ++i) {
      const double magnitude = std::fabs(output.GetDouble(i));
      if (std::isfinite(magnitude)) {
        bounds[k].SetDouble(i, bounds[k].GetDouble(i) + ulps * unit * magnitude);
      }
    }
  }
}

// |x|, for a float x; integers and bools as they are.
Tensor Magnitude(const Tensor& x) {
  Tensor magnitude = x;
  if (!IsFloat(x.dtype())) return magnitude;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    magnitude.SetDouble(i, std::fabs(x.GetDouble(i)));
  }
  return magnitude;
}

// |x| (1 + relative) + bound, for a float x; an integer grows by its bound.
Tensor Widened(const Tensor& x, const Tensor* bound, double relative) {
  Tensor widened = Magnitude(x);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double e = bound == nullptr ? 0 : bound->GetDouble(i);
    if (IsFloat(x.dtype())) {
      widened.SetDouble(i, widened.GetDouble(i) * (1 + relative) + e);
    } else if (e > 0) {
      const double step = std::min(std::ceil(e), 0x1p52);
      widened.SetInt(i, widened.GetInt(i) + static_cast<int64_t>(step));
    }
  }
  return widened;
}

}  // namespace

double RoundingUnit(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 0x1p-24;
    case DType::kF64:
      return 0x1p-53;
    case DType::kF16:
      return 0x1p-11;
    case DType::kBF16:
      return 0x1p-8;
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
      return 0x1p-4;
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
      return 0x1p-3;
    case DType::kF4E2M1:
      return 0x1p-2;
    case DType::kF8E8M0:
      return 1;  // it rounds up to a power of two: up to twice the value
    default:
      return 0;
  }
}

double SumRoundingUnits(int64_t terms) {
  const double n = static_cast<double>(std::max<int64_t>(terms, 1));
  return std::min(n, 8 * std::sqrt(n));
}

absl::Status PointwiseBound(const BoundContext& context, double ulps, absl::Span<Tensor> bounds) {
  for (size_t j = 0; j < context.inputs.size(); ++j) {
    if (IsExact(context.input_bounds[j])) continue;
    std::vector<std::vector<double>> share(bounds.size());
    for (size_t k = 0; k < bounds.size(); ++k) share[k].assign(bounds[k].num_elements(), 0);
    for (const double sign : {1.0, -1.0}) {
      const Tensor moved = Moved(*context.inputs[j], *context.input_bounds[j], sign);
      std::vector<const Tensor*> args(context.inputs.begin(), context.inputs.end());
      args[j] = &moved;
      std::vector<Tensor> results = LikeOutputs(context);
      if (!context.eval(context.node, args, absl::MakeSpan(results)).ok()) {
        SetAll(bounds, kInfinity);
        return absl::OkStatus();
      }
      for (size_t k = 0; k < bounds.size(); ++k) {
        for (int64_t i = 0; i < bounds[k].num_elements(); ++i) {
          share[k][i] = std::max(share[k][i],
                                 Change(context.outputs[k].GetDouble(i), results[k].GetDouble(i)));
        }
      }
    }
    for (size_t k = 0; k < bounds.size(); ++k) {
      for (int64_t i = 0; i < bounds[k].num_elements(); ++i) {
        bounds[k].SetDouble(i, bounds[k].GetDouble(i) + share[k][i]);
      }
    }
  }
  AddRounding(context, ulps, bounds);
  return absl::OkStatus();
}

BoundFn SumOfProductsBound(std::function<double(const BoundContext&)> units) {
  return [units = std::move(units)](const BoundContext& context,
                                    absl::Span<Tensor> bounds) -> absl::Status {
    const double relative = units(context) * context.units[0];
    std::vector<Tensor> magnitudes, widened;
    for (size_t j = 0; j < context.inputs.size(); ++j) {
      magnitudes.push_back(Magnitude(*context.inputs[j]));
      widened.push_back(Widened(*context.inputs[j], context.input_bounds[j], relative));
    }
    std::vector<Tensor> low = LikeOutputs(context), high = LikeOutputs(context);
    std::vector<const Tensor*> low_args, high_args;
    for (size_t j = 0; j < magnitudes.size(); ++j) {
      low_args.push_back(&magnitudes[j]);
      high_args.push_back(&widened[j]);
    }
    LOOM_RETURN_IF_ERROR(context.eval(context.node, low_args, absl::MakeSpan(low)));
    LOOM_RETURN_IF_ERROR(context.eval(context.node, high_args, absl::MakeSpan(high)));
    for (int64_t i = 0; i < bounds[0].num_elements(); ++i) {
      const double change = high[0].GetDouble(i) - low[0].GetDouble(i);
      bounds[0].SetDouble(i, std::isnan(change) ? kInfinity : std::max(change, 0.0));
    }
    AddRounding(context, 2, bounds);
    return absl::OkStatus();
  };
}

OpDef Exact(OpDef def) { return WithRoundingUlps(std::move(def), 0); }

OpDef WithRoundingUlps(OpDef def, double ulps) {
  def.rounding_ulps = ulps;
  return def;
}

OpDef WithBound(OpDef def, BoundFn bound) {
  def.bound = std::move(bound);
  return def;
}

OpDef Composite(OpDef def) {
  def.bound = [](const BoundContext& context, absl::Span<Tensor>) {
    return absl::UnimplementedError(
        absl::StrCat("the error bounds of op '", context.node.op,
                     "' are modelled only once it is decomposed into primitives"));
  };
  return def;
}

}  // namespace loom
