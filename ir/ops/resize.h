#ifndef LOOM_IR_OPS_RESIZE_H_
#define LOOM_IR_OPS_RESIZE_H_

// resize(x): ONNX's Resize (opsets 11 and 13; the importer maps opset 10
// and Upsample onto it) over floats of any rank, separable per dim. Its
// attributes, read and checked in one place for the op definition
// (resize.cc) and the decomposition (passes/decompose_resize.cc):
// - mode: "nearest" (default), "linear" (N-linear) or "cubic";
// - coordinate_transformation_mode: "half_pixel" (default),
//   "pytorch_half_pixel", "align_corners", "asymmetric",
//   "tf_half_pixel_for_nn", "tf_crop_and_resize";
// - nearest_mode: "round_prefer_floor" (default), "round_prefer_ceil",
//   "floor", "ceil";
// - cubic_coeff_a (default -0.75), exclude_outside (0 or 1),
//   extrapolation_value (default 0, for tf_crop_and_resize);
// - antialias (0 or 1): with linear and cubic, along dims that shrink
//   (scale < 1), the interpolation kernel stretched by 1 / scale (ONNX's
//   opset 18);
// - scales (floats, one per dim, > 0) and / or sizes (ints, the output
//   shape); with sizes alone, each dim's scale is size / input size; with
//   scales alone, the output has floor(input size * scale) positions; with
//   both, the sizes are the output shape and the scales map coordinates
//   (ONNX's keep_aspect_ratio_policy);
// - roi (floats, all starts then all ends, one per dim each; required by
//   tf_crop_and_resize, unused otherwise).
//
// Along dim d with input size I, scale s and output width W = s * I (a
// float, as ONNX's reference computes it), output position x maps to the
// source coordinate
//   half_pixel:            (x + 0.5) / s - 0.5
//   pytorch_half_pixel:    (x + 0.5) / s - 0.5, or -0.5 when W == 1
//   align_corners:         x (I - 1) / (W - 1), or 0 when W == 1
//   asymmetric:            x / s
//   tf_half_pixel_for_nn:  (x + 0.5) / s
//   half_pixel_symmetric:  I / 2 (1 - O / W) + (x + 0.5) / s - 0.5, for O
//                          output positions
//   tf_crop_and_resize:    roi_start (I - 1) + x (roi_end - roi_start)
//                          (I - 1) / (W - 1), or the middle of the roi when
//                          W == 1; outside [0, I - 1] the output element is
//                          extrapolation_value.
// With f = floor(c) and r = c - f, except that an integer c counts as f =
// c - 1, r = 1 (ONNX's convention), the taps are: nearest, one, f or f + 1
// by nearest_mode (round_prefer_floor: f + 1 when r > 0.5; round_prefer_ceil:
// when r >= 0.5; floor: f but for r = 1; ceil: f + 1); linear, f and f + 1
// with weights 1 - r and r; cubic, f - 1 .. f + 2 with Keys' weights for
// cubic_coeff_a; antialiased, the 2n taps f - n + 1 .. f + n for n =
// ceil(support / s) (support 1 linear, 2 cubic), weighted by the kernel at
// s times their distance to c and normalised to sum to 1. Tap indices are
// clamped into [0, I - 1] (ONNX's edge padding); with exclude_outside, taps
// outside it get weight 0 and the others are scaled to sum to 1. The output
// is the sum over the taps of every dim of the product of their weights
// times the input element; taps of weight 0 are not read (a NaN or infinity
// there does not reach the output).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace loom {

enum class ResizeMode { kNearest, kLinear, kCubic };

struct ResizeSpec {
  ResizeMode mode = ResizeMode::kNearest;
  std::string coordinates = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  Shape input;
  Shape output;
  std::vector<double> scales;  // one per dim
  std::vector<double> roi;     // all starts, then all ends
  bool antialias = false;

  int rank() const { return static_cast<int>(input.size()); }
  // Whether `dim` takes antialias's stretched taps (linear and cubic,
  // shrinking to a nonempty output, whose scale is > 0).
  bool Antialiased(int dim) const {
    return antialias && mode != ResizeMode::kNearest && scales[dim] > 0 && scales[dim] < 1;
  }
  // Taps per output position along `dim`: 1, 2 or 4; antialiased, more.
  int taps(int dim) const;
};

// Reads and checks a resize node against its input's shape. Errors describe
// the cause only; callers add the node.
absl::StatusOr<ResizeSpec> ReadResizeSpec(const Node& node, const Shape& x);

// The taps of one dim: for output position x, taps k < spec.taps() at
// index[x * taps + k] (clamped into the input) with weight[x * taps + k];
// extrapolated[x] when x's source lies outside the input
// (tf_crop_and_resize), where the weights are all 0.
struct ResizeAxisTaps {
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> extrapolated;
};
ResizeAxisTaps ResizeTaps(const ResizeSpec& spec, int dim);

}  // namespace loom

#endif  // LOOM_IR_OPS_RESIZE_H_
