// conv, max_pool and average_pool (see conv.h for their attributes and
// output sizes), for floats (max_pool also for integers, exactly), computed
// in double straight from their definitions:
// - conv(x [N, C, S...], w [M, C/G, K...], optional bias [M]):
//     y[n, m, o] = bias[m] + sum over c < C/G and kernel positions k of
//                  x[n, g C/G + c, o * stride - pad_begin + k * dilation]
//                  * w[m, c, k],  with g = m / (M/G) the group of m,
//   where positions outside x (the padding) contribute nothing.
// - conv_transpose(x [N, C, S...], w [C, M/G, K...], optional bias [M]):
//     y[n, m, o] = bias[m] + the sum of x[n, c, s] * w[c, m - g M/G, k]
//   over the input positions s, the channels c of m's group g and the
//   kernel positions k with o = s * stride + k * dilation - pad_begin.
// - max_pool: the largest of the window's elements inside x (NaN
//   propagates; -inf, or an integer type's minimum, for a window with none);
//   an optional second output holds its index in x, flat (n, c and the
//   spatial position in row-major order, or with storage_order 1
//   column-major, as ONNX Runtime counts): the first such element in the
//   window's row-major order (the first NaN where the maximum is NaN), -1
//   for a window with none.
// - average_pool: their sum divided by their count, or with
//   count_include_pad by the number of window positions inside x and its
//   explicit padding (padding elements are zeros); 0/0 is NaN.
#include "ir/ops/conv.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/ops/error_bound.h"
#include "ir/ops/op_util.h"
#include "ir/ops/ops.h"
#include "ir/status_macros.h"

namespace loom {

int64_t WindowGeometry::KernelSize() const {
  int64_t size = 1;
  for (int64_t k : kernel) size = SaturatingMul(size, k);
  return size;
}

namespace {

using ShapeResult = absl::StatusOr<OutputTypes>;

// The list attribute `name` with one entry per spatial dim (`count` of
// them), each at least `min` (and at most 2^40); `fill` for each when absent.
absl::StatusOr<std::vector<int64_t>> SpatialInts(const Node& node, absl::string_view name,
                                                 size_t count, int64_t min, int64_t fill) {
  if (!node.attrs.Has(name)) return std::vector<int64_t>(count, fill);
  std::vector<int64_t> values = node.attrs.GetInts(name);
  if (values.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' ", ShapeToString(values),
                                                   " has ", values.size(), " entries; expected ",
                                                   count));
  }
  for (int64_t v : values) {
    if (v < min || v > kMaxTensorElements) {
      return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' ",
                                                     ShapeToString(values),
                                                     " has an entry outside [", min, ", 2^40]"));
    }
  }
  return values;
}

// Reads the attributes every sliding-window op has, for x [N, C,
// spatial...] and the given kernel; computes the output size.
absl::StatusOr<WindowGeometry> ReadWindow(const Node& node, const Shape& x,
                                          std::vector<int64_t> kernel, bool ceil_mode) {
  WindowGeometry g;
  const size_t spatial = kernel.size();
  g.input.assign(x.begin() + 2, x.end());
  g.kernel = std::move(kernel);
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialInts(node, "strides", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                        SpatialInts(node, "dilations", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialInts(node, "pads", 2 * spatial, 0, 0));
  g.strides = std::move(strides);
  g.dilations = std::move(dilations);
  g.pads_begin.assign(pads.begin(), pads.begin() + spatial);
  g.pads_end.assign(pads.begin() + spatial, pads.end());
  for (size_t d = 0; d < spatial; ++d) {
    // Capped (the padded input is at most 3 * 2^40): no overflow below.
    const int64_t extent =
        std::min(SaturatingMul(g.dilations[d], g.kernel[d] - 1), kMaxTensorElements) + 1;
    const int64_t padded = g.input[d] + g.pads_begin[d] + g.pads_end[d];
    if (extent > padded) {
      return absl::InvalidArgumentError(
          absl::StrCat("the kernel spans ", extent, " positions along spatial dim ", d,
                       ", more than the ", padded, " of the padded input ", ShapeToString(x)));
    }
    const int64_t span = padded - extent;
    int64_t out = span / g.strides[d] + 1;
    if (ceil_mode && span % g.strides[d] != 0) {
      ++out;
      // A last window starting past the input and its begin padding is
      // dropped.
      if ((out - 1) * g.strides[d] >= g.input[d] + g.pads_begin[d]) --out;
    }
    g.output.push_back(out);
    g.ceil_extra.push_back(std::max<int64_t>(0, (out - 1) * g.strides[d] + extent - padded));
  }
  return g;
}

absl::Status CheckSpatialInput(absl::string_view name, const Shape& x) {
  if (x.size() >= 3) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must have rank >= 3 ([N, C, spatial...]), got ", ShapeToString(x)));
}

// Reads the channels that conv and conv_transpose read alike from x [N,
// C, S...], the weight ([M, C/group, K...] for conv, [C, M/group, K...]
// transposed) and the bias [M] into `c`; returns the kernel.
absl::StatusOr<std::vector<int64_t>> ReadChannels(const Node& node, const Shape& x,
                                                  const Shape& weight, const Shape* bias,
                                                  bool transposed, ConvChannels& c) {
  LOOM_RETURN_IF_ERROR(CheckSpatialInput("x", x));
  const char* layout = transposed ? "[C, M/group, kernel...]" : "[M, C/group, kernel...]";
  if (weight.size() != x.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the weight ", ShapeToString(weight),
                                                   " must have x's rank ", x.size(), " (", layout,
                                                   "); x is ", ShapeToString(x)));
  }
  c.batch = x[0];
  c.in_channels = x[1];
  c.groups = node.attrs.GetInt("group", 1);
  if (transposed) {
    if (weight[0] != c.in_channels) {
      return absl::InvalidArgumentError(
          absl::StrCat("the weight ", ShapeToString(weight), " (", layout, ") has ", weight[0],
                       " input channels; x ", ShapeToString(x), " has ", c.in_channels));
    }
    c.out_channels = c.groups >= 1 ? SaturatingMul(weight[1], c.groups) : 0;
  } else {
    c.out_channels = weight[0];
  }
  if (c.groups < 1 || c.in_channels % c.groups != 0 || c.out_channels % c.groups != 0 ||
      c.out_channels > kMaxTensorElements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute 'group' (", c.groups, ") must be positive and divide the input channels (",
        c.in_channels, ") and the output channels (", c.out_channels, ")"));
  }
  if (!transposed && weight[1] != c.in_channels / c.groups) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the weight ", ShapeToString(weight), " has ", weight[1], " input channels per group; x ",
        ShapeToString(x), " with group ", c.groups, " has ", c.in_channels / c.groups));
  }
  std::vector<int64_t> kernel(weight.begin() + 2, weight.end());
  for (int64_t k : kernel) {
    if (k < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("the weight ", ShapeToString(weight), " has an empty kernel"));
    }
  }
  if (bias != nullptr && *bias != Shape{c.out_channels}) {
    return absl::InvalidArgumentError(absl::StrCat("the bias must have shape [", c.out_channels,
                                                   "], got ", ShapeToString(*bias)));
  }
  return kernel;
}

}  // namespace

absl::StatusOr<ConvSpec> ReadConvSpec(const Node& node, const Shape& x, const Shape& weight,
                                      const Shape* bias) {
  ConvSpec spec;
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                        ReadChannels(node, x, weight, bias, /*transposed=*/false, spec));
  LOOM_ASSIGN_OR_RETURN(WindowGeometry window,
                        ReadWindow(node, x, std::move(kernel), /*ceil_mode=*/false));
  spec.window = std::move(window);
  return spec;
}

absl::StatusOr<ConvTransposeSpec> ReadConvTransposeSpec(const Node& node, const Shape& x,
                                                        const Shape& weight, const Shape* bias) {
  ConvTransposeSpec spec;
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                        ReadChannels(node, x, weight, bias, /*transposed=*/true, spec));
  spec.window.kernel = std::move(kernel);
  spec.window.input.assign(x.begin() + 2, x.end());
  const size_t spatial = spec.window.input.size();
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, SpatialInts(node, "strides", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations,
                        SpatialInts(node, "dilations", spatial, 1, 1));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                        SpatialInts(node, "pads", 2 * spatial, -kMaxTensorElements, 0));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding,
                        SpatialInts(node, "output_padding", spatial, 0, 0));
  spec.window.strides = std::move(strides);
  spec.window.dilations = std::move(dilations);
  spec.window.pads_begin.assign(pads.begin(), pads.begin() + spatial);
  spec.window.pads_end.assign(pads.begin() + spatial, pads.end());
  spec.output_padding = std::move(output_padding);
  for (size_t d = 0; d < spatial; ++d) {
    // Each term is capped at 2^40 (in magnitude): no overflow.
    const int64_t spread = std::min(SaturatingMul(spec.window.strides[d], spec.window.input[d] - 1),
                                    kMaxTensorElements);
    const int64_t extent =
        std::min(SaturatingMul(spec.window.dilations[d], spec.window.kernel[d] - 1),
                 kMaxTensorElements) +
        1;
    const int64_t out = spread + extent + spec.output_padding[d] - spec.window.pads_begin[d] -
                        spec.window.pads_end[d];
    if (spec.window.input[d] < 1 || out < 1 || out > kMaxTensorElements) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the output would have ", out, " positions along spatial dim ", d,
          " (stride * (input - 1) + dilation * (kernel - 1) + 1 + output_padding - pads, "
          "with input ",
          spec.window.input[d], "); it must have 1 to 2^40"));
    }
    spec.window.output.push_back(out);
  }
  return spec;
}

absl::StatusOr<WindowGeometry> ReadPoolGeometry(const Node& node, const Shape& x) {
  LOOM_RETURN_IF_ERROR(CheckSpatialInput("x", x));
  LOOM_ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                        SpatialInts(node, "kernel_shape", x.size() - 2, 1, 1));
  const int64_t ceil_mode = node.attrs.GetInt("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'ceil_mode' must be 0 or 1, got ", ceil_mode));
  }
  return ReadWindow(node, x, std::move(kernel), ceil_mode == 1);
}

namespace {

// Steps `index` to the next coordinates of `shape` in row-major order;
// false (and all zeros) after the last.
bool NextIndex(std::vector<int64_t>& index, absl::Span<const int64_t> shape) {
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

// The flat offset, in x [N, C, S...], of window position `tap` of output
// position `out` in channel plane `plane` (n * C + c); -1 when the position
// lies in the padding.
int64_t InputOffset(const WindowGeometry& g, int64_t plane, absl::Span<const int64_t> out,
                    absl::Span<const int64_t> tap) {
  int64_t offset = plane;
  for (int d = 0; d < g.num_spatial(); ++d) {
    const int64_t position = out[d] * g.strides[d] - g.pads_begin[d] + tap[d] * g.dilations[d];
    if (position < 0 || position >= g.input[d]) return -1;
    offset = offset * g.input[d] + position;
  }
  return offset;
}

// Whether window position `tap` of output position `out` lies inside x and
// its explicit padding.
bool InsidePadded(const WindowGeometry& g, absl::Span<const int64_t> out,
                  absl::Span<const int64_t> tap) {
  for (int d = 0; d < g.num_spatial(); ++d) {
    const int64_t position = out[d] * g.strides[d] - g.pads_begin[d] + tap[d] * g.dilations[d];
    if (position < -g.pads_begin[d] || position >= g.input[d] + g.pads_end[d]) {
      return false;
    }
  }
  return true;
}

Shape OutputShape(const Shape& x, int64_t channels, const WindowGeometry& g) {
  Shape shape = {x[0], channels};
  shape.insert(shape.end(), g.output.begin(), g.output.end());
  return shape;
}

// --- conv --------------------------------------------------------------------

const Shape* OptionalShape(absl::Span<const TensorType> in, int index) {
  return index < static_cast<int>(in.size()) ? &in[index].shape : nullptr;
}

// x a float, the weight and the bias of its dtype.
absl::Status CheckConvDTypes(absl::Span<const TensorType> in) {
  absl::Status status = CheckDType(in[0].dtype, DTypeClass::kFloat, 0);
  for (int i = 1; status.ok() && i < static_cast<int>(in.size()); ++i) {
    status = CheckSameDType(in, 0, i);
  }
  return status;
}

ShapeResult ConvShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckConvDTypes(in));
  LOOM_ASSIGN_OR_RETURN(ConvSpec spec,
                        ReadConvSpec(node, in[0].shape, in[1].shape, OptionalShape(in, 2)));
  return OneOutput(in[0].dtype, OutputShape(in[0].shape, spec.out_channels, spec.window));
}

absl::Status ConvEval(const Node& node, absl::Span<const Tensor* const> in,
                      absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  LOOM_ASSIGN_OR_RETURN(ConvSpec spec, ReadConvSpec(node, x.shape(), w.shape(),
                                                    bias == nullptr ? nullptr : &bias->shape()));
  const WindowGeometry& g = spec.window;
  const int64_t group_in = spec.in_channels / spec.groups;
  const int64_t group_out = spec.out_channels / spec.groups;
  const int64_t kernel_size = g.KernelSize();
  std::vector<int64_t> position(g.num_spatial(), 0);
  std::vector<int64_t> tap(g.num_spatial(), 0);
  int64_t i = 0;  // the output element
  for (int64_t n = 0; n < spec.batch; ++n) {
    for (int64_t m = 0; m < spec.out_channels; ++m) {
      const int64_t first_channel = m / group_out * group_in;
      do {
        double sum = bias == nullptr ? 0 : bias->GetDouble(m);
        for (int64_t c = 0; c < group_in; ++c) {
          const int64_t plane = n * spec.in_channels + first_channel + c;
          int64_t k = 0;  // the kernel position, flat
          do {
            const int64_t at = InputOffset(g, plane, position, tap);
            if (at >= 0) {
              sum += x.GetDouble(at) * w.GetDouble((m * group_in + c) * kernel_size + k);
            }
            ++k;
          } while (NextIndex(tap, g.kernel));
        }
        out[0].SetDouble(i++, sum);
      } while (NextIndex(position, g.output));
    }
  }
  return absl::OkStatus();
}

// --- conv_transpose ------------------------------------------------------------

ShapeResult ConvTransposeShape(const Node& node, absl::Span<const TensorType> in) {
  LOOM_RETURN_IF_ERROR(CheckConvDTypes(in));
  LOOM_ASSIGN_OR_RETURN(
      ConvTransposeSpec spec,
      ReadConvTransposeSpec(node, in[0].shape, in[1].shape, OptionalShape(in, 2)));
  Shape shape = {spec.batch, spec.out_channels};
  shape.insert(shape.end(), spec.window.output.begin(), spec.window.output.end());
  return OneOutput(in[0].dtype, std::move(shape));
}

// Scatters every product x[n, c, s] * w[c, m, k] into its output position
// (see conv.h), summed in double.
absl::Status ConvTransposeEval(const Node& node, absl::Span<const Tensor* const> in,
                               absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  LOOM_ASSIGN_OR_RETURN(ConvTransposeSpec spec,
                        ReadConvTransposeSpec(node, x.shape(), w.shape(),
                                              bias == nullptr ? nullptr : &bias->shape()));
  const int spatial = spec.window.num_spatial();
  const int64_t group_in = spec.in_channels / spec.groups;
  const int64_t group_out = spec.out_channels / spec.groups;
  const int64_t kernel_size = spec.window.KernelSize();
  const int64_t positions = NumElements(spec.window.output);
  std::vector<double> y(out[0].num_elements(), 0.0);
  for (int64_t n = 0; n < spec.batch; ++n) {
    for (int64_t m = 0; m < spec.out_channels; ++m) {
      const double b = bias == nullptr ? 0 : bias->GetDouble(m);
      for (int64_t i = 0; i < positions; ++i) y[(n * spec.out_channels + m) * positions + i] = b;
    }
  }
  std::vector<int64_t> position(spatial, 0);
  std::vector<int64_t> tap(spatial, 0);
  int64_t i = 0;  // the input element
  for (int64_t n = 0; n < spec.batch; ++n) {
    for (int64_t c = 0; c < spec.in_channels; ++c) {
      const int64_t first_out = c / group_in * group_out;
      do {
        const double value = x.GetDouble(i++);
        int64_t k = 0;  // the kernel position, flat
        do {
          int64_t at = 0;  // the output position, flat; -1 outside
          for (int d = 0; d < spatial && at >= 0; ++d) {
            const int64_t o = position[d] * spec.window.strides[d] +
                              tap[d] * spec.window.dilations[d] - spec.window.pads_begin[d];
            at = o < 0 || o >= spec.window.output[d] ? -1 : at * spec.window.output[d] + o;
          }
          if (at >= 0) {
            for (int64_t j = 0; j < group_out; ++j) {
              const int64_t m = first_out + j;
              y[(n * spec.out_channels + m) * positions + at] +=
                  value * w.GetDouble((c * group_out + j) * kernel_size + k);
            }
          }
          ++k;
        } while (NextIndex(tap, spec.window.kernel));
      } while (NextIndex(position, spec.window.input));
    }
  }
  for (int64_t e = 0; e < static_cast<int64_t>(y.size()); ++e) out[0].SetDouble(e, y[e]);
  return absl::OkStatus();
}

// --- max_pool / average_pool -------------------------------------------------

// max_pool takes integers too (exactly: a maximum rounds nothing).
ShapeResult PoolShape(const Node& node, absl::Span<const TensorType> in) {
  const DTypeClass accepted = node.op == "max_pool" ? DTypeClass::kNumeric : DTypeClass::kFloat;
  LOOM_RETURN_IF_ERROR(CheckDType(in[0].dtype, accepted, 0));
  LOOM_ASSIGN_OR_RETURN(WindowGeometry g, ReadPoolGeometry(node, in[0].shape));
  OutputTypes types = OneOutput(in[0].dtype, OutputShape(in[0].shape, in[0].shape[1], g));
  if (node.outputs.size() == 1) return types;
  // max_pool's indices.
  const int64_t storage_order = node.attrs.GetInt("storage_order", 0);
  if (node.outputs.size() > 2 || (storage_order != 0 && storage_order != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_pool has one or two outputs (the maxima, their indices) and 'storage_order' 0 or "
        "1; got ",
        node.outputs.size(), " outputs and 'storage_order' ", storage_order));
  }
  types.push_back({DType::kI64, types[0].shape});
  return types;
}

// For every output element in order: start(), then fold(offset, inside)
// for each window position (its offset in x, or -1 in the padding; whether
// it lies inside x and its explicit padding), then the element is set to
// finish(y, i) (which sets y's element i).
template <typename Start, typename Fold, typename Finish>
absl::Status EvalPool(const Node& node, const Tensor& x, Tensor& y, Start start, Fold fold,
                      Finish finish) {
  LOOM_ASSIGN_OR_RETURN(WindowGeometry g, ReadPoolGeometry(node, x.shape()));
  const int64_t planes = x.shape()[0] * x.shape()[1];
  std::vector<int64_t> position(g.num_spatial(), 0);
  std::vector<int64_t> tap(g.num_spatial(), 0);
  int64_t i = 0;
  for (int64_t plane = 0; plane < planes; ++plane) {
    do {
      start();
      do {
        fold(InputOffset(g, plane, position, tap), InsidePadded(g, position, tap));
      } while (NextIndex(tap, g.kernel));
      finish(y, i++);
    } while (NextIndex(position, g.output));
  }
  return absl::OkStatus();
}

// The index max_pool reports for element `at` of x [N, C, S...]: `at`
// itself, or with `column_major` (storage_order 1) the plane's offset plus
// the spatial position in column-major order (ONNX Runtime's).
int64_t StoredIndex(const Shape& x, int64_t at, bool column_major) {
  if (at < 0 || !column_major) return at;
  const int64_t plane_size = NumElements(absl::MakeConstSpan(x).subspan(2));
  int64_t rest = at % plane_size, index = 0, stride = 1;
  std::vector<int64_t> position(x.size() - 2);
  for (int d = static_cast<int>(position.size()) - 1; d >= 0; --d) {
    position[d] = rest % x[d + 2];
    rest /= x[d + 2];
  }
  for (size_t d = 0; d < position.size(); ++d) {
    index += position[d] * stride;
    stride *= x[d + 2];
  }
  return at - at % plane_size + index;
}

// The maxima, and with a second output their indices: the first element of
// the window inside x that holds the maximum (the first NaN where it is
// NaN), -1 for a window with none.
absl::Status MaxPoolEval(const Node& node, absl::Span<const Tensor* const> in,
                         absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const DType dtype = x.dtype();
  const bool column_major = node.attrs.GetInt("storage_order", 0) == 1;
  int64_t argmax = -1, element = 0;
  auto write_index = [&] {
    if (out.size() > 1) out[1].SetInt(element++, StoredIndex(x.shape(), argmax, column_major));
  };
  if (IsInteger(dtype)) {  // a window all in the padding gives the minimum
    int64_t max = 0;
    return EvalPool(
        node, x, out[0],
        [&] {
          max = IntegerMinBits(dtype);
          argmax = -1;
        },
        [&](int64_t at, bool) {
          if (at >= 0 && (argmax < 0 || IntegerLess(max, x.GetInt(at), dtype))) {
            max = x.GetInt(at);
            argmax = at;
          }
        },
        [&](Tensor& y, int64_t i) {
          y.SetInt(i, max);
          write_index();
        });
  }
  double max = 0;
  return EvalPool(
      node, x, out[0],
      [&] {
        max = -std::numeric_limits<double>::infinity();
        argmax = -1;
      },
      [&](int64_t at, bool) {
        if (at < 0 || std::isnan(max)) return;
        const double v = x.GetDouble(at);
        if (argmax < 0 || std::isnan(v) || v > max) {
          max = v;
          argmax = at;
        }
      },
      [&](Tensor& y, int64_t i) {
        y.SetDouble(i, max);
        write_index();
      });
}

absl::Status AveragePoolEval(const Node& node, absl::Span<const Tensor* const> in,
                             absl::Span<Tensor> out) {
  const Tensor& x = *in[0];
  const bool count_pads = node.attrs.GetInt("count_include_pad", 0) != 0;
  double sum = 0;
  int64_t count = 0;
  return EvalPool(
      node, x, out[0],
      [&] {
        sum = 0;
        count = 0;
      },
      [&](int64_t at, bool inside_padded) {
        if (at >= 0) sum += x.GetDouble(at);
        if (at >= 0 || (count_pads && inside_padded)) ++count;
      },
      [&](Tensor& y, int64_t i) { y.SetDouble(i, sum / static_cast<double>(count)); });
}

std::vector<AttrSpec> WindowAttrs() {
  return {{"strides", AttrType::kInts, false},
          {"dilations", AttrType::kInts, false},
          {"pads", AttrType::kInts, false}};
}

std::vector<AttrSpec> PoolAttrs(bool average) {
  std::vector<AttrSpec> attrs = WindowAttrs();
  attrs.push_back({"kernel_shape", AttrType::kInts, true});
  attrs.push_back({"ceil_mode", AttrType::kInt, false});
  attrs.push_back(average ? AttrSpec{"count_include_pad", AttrType::kInt, false}
                          : AttrSpec{"storage_order", AttrType::kInt, false});
  return attrs;
}

// max_pool's second output, when it has one, holds the indices.
OpDef MaxPoolOp() {
  OpDef def = FixedArityOp("max_pool", 1, PoolAttrs(false), PoolShape, MaxPoolEval);
  def.num_outputs = -1;
  return def;
}

OpDef ConvOp() {
  std::vector<AttrSpec> attrs = WindowAttrs();
  attrs.push_back({"group", AttrType::kInt, false});
  OpDef def = FixedArityOp("conv", 3, std::move(attrs), ConvShape, ConvEval);
  def.min_inputs = 2;
  return def;
}

OpDef ConvTransposeOp() {
  std::vector<AttrSpec> attrs = WindowAttrs();
  attrs.push_back({"group", AttrType::kInt, false});
  attrs.push_back({"output_padding", AttrType::kInts, false});
  OpDef def =
      FixedArityOp("conv_transpose", 3, std::move(attrs), ConvTransposeShape, ConvTransposeEval);
  def.min_inputs = 2;
  return def;
}

}  // namespace

absl::Status RegisterConvOps(OpRegistry& registry) {
  return RegisterAll(registry,
                     {
                         WithPattern(Composite(ConvOp()), OpPattern::kContraction),
                         WithPattern(Composite(ConvTransposeOp()), OpPattern::kContraction),
                         WithPattern(Composite(MaxPoolOp()), OpPattern::kReduction),
                         WithPattern(Composite(FixedArityOp("average_pool", 1, PoolAttrs(true),
                                                            PoolShape, AveragePoolEval)),
                                     OpPattern::kReduction),
                     });
}

}  // namespace loom
