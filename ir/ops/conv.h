#ifndef LOOM_IR_OPS_CONV_H_
#define LOOM_IR_OPS_CONV_H_

// The sliding-window ops conv, conv_transpose, max_pool and average_pool
// over x [N, C, spatial...] (one or more spatial dims): their attributes and
// shapes, read and checked in one place for the op definitions (conv.cc)
// and the decompositions (passes/decompose_conv.cc,
// passes/decompose_conv_transpose.cc).
//
// Attributes, each a list with one entry per spatial dim unless said:
// - strides (default 1s) and dilations (default 1s), each >= 1;
// - pads: all begins, then all ends (ONNX order; default 0s), each >= 0
//   (conv_transpose: see ConvTransposeSpec);
// - conv: group (int, default 1) divides C and M; the kernel is the
//   weight's spatial shape;
// - pools: kernel_shape (required), ceil_mode (int, default 0);
//   average_pool: count_include_pad (int, default 0).
//
// Output size per spatial dim (conv_transpose: see ConvTransposeSpec), with
// the kernel's extent e = d (k - 1) + 1:
//   floor((S + pad_begin + pad_end - e) / stride) + 1,
// or with ceil_mode the ceiling of the division, less one when the last
// window would start past the input and its begin padding (PyTorch's rule,
// ONNX's since 1.16): every window then overlaps the input or the begin
// padding. Windows may reach past the end padding by `ceil_extra`; those
// positions are never counted, even with count_include_pad (PyTorch).

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace loom {

// Where the windows of a sliding-window op lie, per spatial dim.
struct WindowGeometry {
  std::vector<int64_t> input;  // the input's spatial sizes
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
  // Positions past the end padding that ceil_mode's last window reaches.
  std::vector<int64_t> ceil_extra;
  std::vector<int64_t> output;  // the output's spatial sizes

  int num_spatial() const { return static_cast<int>(input.size()); }
  // d (k - 1) + 1: the span one window covers along `dim`.
  int64_t KernelExtent(int dim) const { return dilations[dim] * (kernel[dim] - 1) + 1; }
  // The number of kernel positions: the product of the kernel sizes.
  int64_t KernelSize() const;
};

// The channels of a conv or conv_transpose node.
struct ConvChannels {
  int64_t batch = 0;
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M
  int64_t groups = 1;
};

// One conv node: x [N, C, S...], weight [M, C / group, K...], bias [M].
struct ConvSpec : ConvChannels {
  WindowGeometry window;
};

// One conv_transpose node: x [N, C, S...], weight [C, M/group, K...],
// bias [M]; the gradient of conv with respect to its input. Input position
// s and kernel position k add x[n, c, s] * w[c, m, k] to output position
//   o = s * stride + k * dilation - pad_begin   (per spatial dim),
// kept when 0 <= o < O, where the output has, per spatial dim,
//   O = stride (S - 1) + dilation (K - 1) + 1 + output_padding
//       - pad_begin - pad_end
// positions (at least 1). Attributes: strides, dilations (each >= 1),
// pads (begins, then ends; negative entries, which ONNX's output_shape can
// ask for, add positions that only the bias reaches), output_padding
// (each >= 0, default 0s) and group (divides C and M).
struct ConvTransposeSpec : ConvChannels {
  // The input's and the output's sizes, kernel, strides, dilations and pads
  // (ceil_extra unused).
  WindowGeometry window;
  std::vector<int64_t> output_padding;
};

// Reads and checks a conv node against its input shapes (bias null when
// absent). Errors describe the cause only; callers add the node.
absl::StatusOr<ConvSpec> ReadConvSpec(const Node& node, const Shape& x, const Shape& weight,
                                      const Shape* bias);

// Reads and checks a conv_transpose node against its input shapes (bias
// null when absent).
absl::StatusOr<ConvTransposeSpec> ReadConvTransposeSpec(const Node& node, const Shape& x,
                                                        const Shape& weight, const Shape* bias);

// Reads and checks a max_pool or average_pool node against x's shape.
absl::StatusOr<WindowGeometry> ReadPoolGeometry(const Node& node, const Shape& x);

}  // namespace loom

#endif  // LOOM_IR_OPS_CONV_H_
