// resize (see resize.h for its attributes and taps), for floats, computed
// in double straight from its definition: per output element, the sum over
// the taps of every dim of the product of their weights times the input
// element (taps of weight 0 not read), or extrapolation_value when the
// element's source lies outside the input along some dim.
#include "ir/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {

int ResizeSpec::taps(int dim) const {
  if (Antialiased(dim)) {
    // Taps f + start .. f - start + 1 for start = floor(-support / scale) + 1
    // (ReadResizeSpec bounds the scale).
    const double support = mode == ResizeMode::kLinear ? 1 : 2;
    return static_cast<int>(-2 * std::floor(-support / scales[dim]));
  }
  switch (mode) {
    case ResizeMode::kNearest:
      return 1;
    case ResizeMode::kLinear:
      return 2;
    default:
      return 4;
  }
}

namespace {

constexpr const char* kCoordinateModes[] = {
    "half_pixel",           "pytorch_half_pixel", "align_corners",       "asymmetric",
    "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
constexpr const char* kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};

// The string attribute `name` (default `fallback`), which must be one of
// `allowed`.
template <size_t N>
absl::StatusOr<std::string> OneOf(const Node& node, absl::string_view name,
                                  const char* const (&allowed)[N], const char* fallback) {
  std::string value = node.attrs.GetString(name, fallback);
  for (const char* a : allowed) {
    if (value == a) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "attribute '", name, "' \"", value, "\" is not one of ", absl::StrJoin(allowed, ", ")));
}

// The interpolation attributes: mode, coordinate transformation, nearest
// rounding, the cubic coefficient and exclude_outside.
absl::Status ReadInterpolation(const Node& node, ResizeSpec& spec) {
  constexpr const char* kModes[] = {"nearest", "linear", "cubic"};
  LOOM_ASSIGN_OR_RETURN(std::string mode, OneOf(node, "mode", kModes, "nearest"));
  spec.mode = mode == "nearest"  ? ResizeMode::kNearest
              : mode == "linear" ? ResizeMode::kLinear
                                 : ResizeMode::kCubic;
  LOOM_ASSIGN_OR_RETURN(std::string coordinates, OneOf(node, "coordinate_transformation_mode",
                                                       kCoordinateModes, "half_pixel"));
  spec.coordinates = std::move(coordinates);
  LOOM_ASSIGN_OR_RETURN(std::string nearest,
                        OneOf(node, "nearest_mode", kNearestModes, "round_prefer_floor"));
  spec.nearest_mode = std::move(nearest);
  spec.cubic_a = node.attrs.GetFloat("cubic_coeff_a", -0.75);
  spec.extrapolation_value = node.attrs.GetFloat("extrapolation_value", 0);
  if (!std::isfinite(spec.cubic_a)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'cubic_coeff_a' must be finite, got ", spec.cubic_a));
  }
  const int64_t exclude = node.attrs.GetInt("exclude_outside", 0);
  if (exclude != 0 && exclude != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'exclude_outside' must be 0 or 1, got ", exclude));
  }
  spec.exclude_outside = exclude == 1;
  const int64_t antialias = node.attrs.GetInt("antialias", 0);
  if (antialias != 0 && antialias != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'antialias' must be 0 or 1, got ", antialias));
  }
  spec.antialias = antialias == 1;
  return absl::OkStatus();
}

// The output sizes from the attribute 'scales' (floored).
absl::Status ReadScales(const Node& node, const Shape& x, ResizeSpec& spec) {
  const size_t rank = x.size();
  spec.scales = node.attrs.GetFloats("scales");
  if (spec.scales.size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat("attribute 'scales' has ", spec.scales.size(),
                                                   " entries; the input ", ShapeToString(x),
                                                   " needs ", rank));
  }
  for (size_t d = 0; d < rank; ++d) {
    const double s = spec.scales[d];
    const double size = s * static_cast<double>(x[d]);
    if (!(s > 0) || !std::isfinite(s) || !(size <= static_cast<double>(kMaxTensorElements))) {
      return absl::InvalidArgumentError(absl::StrCat("attribute 'scales' [",
                                                     absl::StrJoin(spec.scales, ", "),
                                                     "] must hold finite values > 0 "
                                                     "whose output sizes are at most 2^40; input ",
                                                     ShapeToString(x)));
    }
    spec.output.push_back(static_cast<int64_t>(std::floor(size)));
  }
  return absl::OkStatus();
}

// The scales from the attribute 'sizes' (1 along an empty input dim).
absl::Status ReadSizes(const Node& node, const Shape& x, ResizeSpec& spec) {
  const size_t rank = x.size();
  spec.output = node.attrs.GetInts("sizes");
  if (spec.output.size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'sizes' ", ShapeToString(spec.output), " has ", spec.output.size(),
                     " entries; the input ", ShapeToString(x), " needs ", rank));
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = spec.output[d];
    if (size < 0 || size > kMaxTensorElements) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute 'sizes' ", ShapeToString(spec.output), " has an entry outside [0, 2^40]"));
    }
    spec.scales.push_back(x[d] == 0 ? 1.0 : static_cast<double>(size) / static_cast<double>(x[d]));
  }
  return absl::OkStatus();
}

// The output shape and scales, from 'scales' or 'sizes'; with both, the
// sizes give the output shape and the scales the coordinates.
absl::Status ReadOutputShape(const Node& node, const Shape& x, ResizeSpec& spec) {
  const bool has_scales = node.attrs.Has("scales"), has_sizes = node.attrs.Has("sizes");
  if (!has_scales && !has_sizes) {
    return absl::InvalidArgumentError("one of the attributes 'scales' and 'sizes' must be given");
  }
  if (has_sizes) LOOM_RETURN_IF_ERROR(ReadSizes(node, x, spec));
  if (has_scales) {
    ResizeSpec scaled;
    LOOM_RETURN_IF_ERROR(ReadScales(node, x, scaled));
    spec.scales = std::move(scaled.scales);
    if (!has_sizes) spec.output = std::move(scaled.output);
  }
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] == 0 && spec.output[d] > 0) {
      return absl::InvalidArgumentError(absl::StrCat("dim ", d, " of the input ", ShapeToString(x),
                                                     " is empty: nothing to resize it to ",
                                                     spec.output[d], " positions from"));
    }
  }
  return absl::OkStatus();
}

// The region of interest: all starts, then all ends (default [0, 1] per dim).
absl::Status ReadRoi(const Node& node, const Shape& x, ResizeSpec& spec) {
  const size_t rank = x.size();
  if (!node.attrs.Has("roi")) {
    spec.roi.assign(rank, 0.0);
    spec.roi.resize(2 * rank, 1.0);
    return absl::OkStatus();
  }
  spec.roi = node.attrs.GetFloats("roi");
  if (spec.roi.size() != 2 * rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'roi' has ", spec.roi.size(), " entries; the input ",
                     ShapeToString(x), " needs ", 2 * rank, " (all starts, then all ends)"));
  }
  for (double v : spec.roi) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError("attribute 'roi' must hold finite values");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ResizeSpec> ReadResizeSpec(const Node& node, const Shape& x) {
  ResizeSpec spec;
  spec.input = x;
  LOOM_RETURN_IF_ERROR(ReadInterpolation(node, spec));
  LOOM_RETURN_IF_ERROR(ReadOutputShape(node, x, spec));
  LOOM_RETURN_IF_ERROR(ReadRoi(node, x, spec));
  for (int d = 0; d < spec.rank(); ++d) {
    // An antialiased dim has about 4 / scale taps (cubic).
    if (spec.Antialiased(d) && !(spec.scales[d] >= 1.0 / (1 << 20))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "antialias shrinks dim ", d, " by ", spec.scales[d], "; loom takes scales >= 2^-20"));
    }
  }
  return spec;
}

namespace {

// Keys' cubic convolution weights of the taps f - 1 .. f + 2 for a source
// at f + r (ONNX's formulas).
void CubicWeights(double r, double a, double* w) {
  const double s = 1 - r;
  w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

// The weights of the antialiased taps f + start + k of a source at f + r:
// the linear (triangle) or cubic (Keys) kernel stretched by 1 / scale,
// normalised to sum to 1 (ONNX's formulas).
void AntialiasWeights(const ResizeSpec& spec, int dim, double r, double* w) {
  const int taps = spec.taps(dim);
  const double scale = spec.scales[dim], a = spec.cubic_a;
  const int start = 1 - taps / 2;
  double sum = 0;
  for (int k = 0; k < taps; ++k) {
    const double x = std::abs((start + k - r) * scale);
    if (spec.mode == ResizeMode::kLinear) {
      w[k] = std::max(0.0, 1 - x);
    } else if (x <= 1) {
      w[k] = ((a + 2) * x - (a + 3)) * x * x + 1;
    } else {
      w[k] = x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0;
    }
    sum += w[k];
  }
  for (int k = 0; k < taps; ++k) w[k] /= sum;
}

// Whether nearest_mode picks f + 1 rather than f for a source at f + r.
bool RoundsUp(const std::string& nearest_mode, double r) {
  if (r == 1) return true;  // an integer source: itself
  if (nearest_mode == "round_prefer_floor") return r > 0.5;
  if (nearest_mode == "round_prefer_ceil") return r >= 0.5;
  return nearest_mode == "ceil";
}

}  // namespace

ResizeAxisTaps ResizeTaps(const ResizeSpec& spec, int dim) {
  ResizeAxisTaps t;
  t.taps = spec.taps(dim);
  const int64_t in = spec.input[dim], out = spec.output[dim];
  const double size = static_cast<double>(in);
  const double s = spec.scales[dim];
  const double width = s * size;
  const double roi_start = spec.roi[dim], roi_end = spec.roi[spec.rank() + dim];
  t.index.assign(out * t.taps, 0);
  t.weight.assign(out * t.taps, 0);
  t.extrapolated.assign(out, false);
  const std::string& mode = spec.coordinates;
  for (int64_t x = 0; x < out; ++x) {
    const double p = static_cast<double>(x);
    double c;
    if (mode == "half_pixel") {
      c = (p + 0.5) / s - 0.5;
    } else if (mode == "pytorch_half_pixel") {
      c = width == 1 ? -0.5 : (p + 0.5) / s - 0.5;
    } else if (mode == "align_corners") {
      c = width == 1 ? 0 : p * (size - 1) / (width - 1);
    } else if (mode == "asymmetric") {
      c = p / s;
    } else if (mode == "tf_half_pixel_for_nn") {
      c = (p + 0.5) / s;
    } else if (mode == "half_pixel_symmetric") {
      c = size / 2 * (1 - static_cast<double>(out) / width) + (p + 0.5) / s - 0.5;
    } else {  // tf_crop_and_resize
      c = width == 1 ? (roi_end - roi_start) * (size - 1) / 2
                     : p * (roi_end - roi_start) * (size - 1) / (width - 1);
      c += roi_start * (size - 1);
      if (!(c >= 0 && c <= size - 1)) {
        t.extrapolated[x] = true;
        continue;
      }
    }
    // Within [-0.5, I] for every mode (extrapolated ones aside).
    double f = std::floor(c);
    double r = c - f;
    if (r == 0) {  // ONNX's convention: the source is the right-hand tap
      f -= 1;
      r = 1;
    }
    const int64_t base = static_cast<int64_t>(f);
    int64_t* index = &t.index[x * t.taps];
    double* weight = &t.weight[x * t.taps];
    if (spec.Antialiased(dim)) {
      for (int k = 0; k < t.taps; ++k) index[k] = base + 1 - t.taps / 2 + k;
      AntialiasWeights(spec, dim, r, weight);
    } else {
      switch (spec.mode) {
        case ResizeMode::kNearest:
          index[0] = base + (RoundsUp(spec.nearest_mode, r) ? 1 : 0);
          weight[0] = 1;
          break;
        case ResizeMode::kLinear:
          index[0] = base;
          index[1] = base + 1;
          weight[0] = 1 - r;
          weight[1] = r;
          break;
        case ResizeMode::kCubic:
          for (int k = 0; k < 4; ++k) index[k] = base - 1 + k;
          CubicWeights(r, spec.cubic_a, weight);
          break;
      }
    }
    if (spec.exclude_outside && spec.mode != ResizeMode::kNearest) {
      double sum = 0;
      for (int k = 0; k < t.taps; ++k) {
        if (index[k] < 0 || index[k] >= in) weight[k] = 0;
        sum += weight[k];
      }
      for (int k = 0; k < t.taps; ++k) weight[k] /= sum;
    }
    for (int k = 0; k < t.taps; ++k) index[k] = std::clamp<int64_t>(index[k], 0, in - 1);
  }
  return t;
}

namespace {

using ShapeResult = absl::StatusOr<OutputTypes>;

ShapeResult ResizeShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, DTypeClass::kFloat, 0));
  LOOM_ASSIGN_OR_RETURN(ResizeSpec spec, ReadResizeSpec(node, in[0].shape));
  return OneOutput(in[0].dtype, spec.output);
}

// Per dim, for each output position, its taps of nonzero weight: the
// input offset (index times the dim's stride) and the weight.
struct NonzeroTaps {
  std::vector<int64_t> begin;  // per output position, into offset / weight
  std::vector<int64_t> offset;
  std::vector<double> weight;
  std::vector<bool> extrapolated;
};

NonzeroTaps CompactTaps(const ResizeAxisTaps& t, int64_t stride) {
  NonzeroTaps n;
  const int64_t out = static_cast<int64_t>(t.extrapolated.size());
  for (int64_t x = 0; x < out; ++x) {
    n.begin.push_back(static_cast<int64_t>(n.offset.size()));
    for (int k = 0; k < t.taps; ++k) {
      const double w = t.weight[x * t.taps + k];
      if (w == 0) continue;
      n.offset.push_back(t.index[x * t.taps + k] * stride);
      n.weight.push_back(w);
    }
  }
  n.begin.push_back(static_cast<int64_t>(n.offset.size()));
  n.extrapolated = t.extrapolated;
  return n;
}

absl::Status ResizeEval(const Node& node, absl::Span<const Tensor* const> in,
                        absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  LOOM_ASSIGN_OR_RETURN(ResizeSpec spec, ReadResizeSpec(node, x.shape()));
  const int rank = spec.rank();
  const std::vector<int64_t> strides = ContiguousStrides(x.shape());
  std::vector<NonzeroTaps> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(CompactTaps(ResizeTaps(spec, d), strides[d]));
  std::vector<int64_t> at(rank, 0);   // the output element's coordinates
  std::vector<int64_t> tap(rank, 0);  // into each dim's taps of at[d]
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    bool extrapolated = false;
    bool empty = false;
    for (int d = 0; d < rank; ++d) {
      extrapolated = extrapolated || dims[d].extrapolated[at[d]];
      tap[d] = dims[d].begin[at[d]];
      empty = empty || tap[d] == dims[d].begin[at[d] + 1];
    }
    double sum = 0;
    while (!extrapolated && !empty) {
      double w = 1;
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d) {
        w *= dims[d].weight[tap[d]];
        offset += dims[d].offset[tap[d]];
      }
      sum += w * x.GetDouble(offset);
      int d = rank - 1;
      for (; d >= 0; --d) {
        if (++tap[d] < dims[d].begin[at[d] + 1]) break;
        tap[d] = dims[d].begin[at[d]];
      }
      if (d < 0) break;
    }
    y.SetDouble(i, extrapolated ? spec.extrapolation_value : sum);
    for (int d = rank - 1; d >= 0; --d) {
      if (++at[d] < spec.output[d]) break;
      at[d] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterResizeOps(OpRegistry& registry) {
  return RegisterAll(registry,
                     // Interpolates between input elements (a copy of one only in mode
                     // "nearest").
                     {WithPattern(Composite(FixedArityOp(
                                      "resize", 1,
                                      {{"mode", AttrType::kString, false},
                                       {"coordinate_transformation_mode", AttrType::kString, false},
                                       {"nearest_mode", AttrType::kString, false},
                                       {"cubic_coeff_a", AttrType::kFloat, false},
                                       {"exclude_outside", AttrType::kInt, false},
                                       {"extrapolation_value", AttrType::kFloat, false},
                                       {"antialias", AttrType::kInt, false},
                                       {"scales", AttrType::kFloats, false},
                                       {"sizes", AttrType::kInts, false},
                                       {"roi", AttrType::kFloats, false}},
                                      ResizeShape, ResizeEval)),
                                  OpPattern::kOpaque)});
}

}  // namespace loom
