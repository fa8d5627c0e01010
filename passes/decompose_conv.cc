// conv, max_pool and average_pool as views and ops that already lower, fuse
// and run fast. Each kernel position is a strided slice (a view) of the
// padded input: for position k along a spatial dim, elements k * dilation,
// k * dilation + stride, ... of the padded dim, one per output position.
//
// - conv, im2col: the slices stacked along a new axis after the channels,
//   [N, C, K, O...], are viewed as the column matrix [N, G, C/G * K, P]
//   (K the kernel positions, P the output positions), whose rows are in the
//   weight's order, so that one matmul with the weight viewed as
//   [G, M/G, C/G * K] gives [N, G, M/G, P], the output (a GEMM call,
//   batched over the groups).
// - conv, shifted: a gemm call per kernel position over the padded input
//   in place. On the padded width (outputs [N, M, O_0, P_1, ...], of which
//   the first O_d of each dim past the first are the conv's), kernel
//   position t reads the image [C, P] shifted by t's offset, so the output
//   is the sum over t of weight_t [M, C] x image_t [C, P]: as_strided
//   gives the image as [N, 1, G..., K..., C] (G the grid, K the positions),
//   and reduce_sum of its product with the weight as [1, M, 1..., K..., C]
//   over K and C lowers to one product node whose calls accumulate over K
//   (ir/gemm.h). No column matrix; extra zero rows at the end keep the last
//   channel's reads past its image inside the padded input.
// - conv, direct: the sum over input channels of a group and kernel
//   positions of slice * weight element, pointwise ops over the output
//   [N, G, M/G, O...] that fuse into one loop; no column buffer. For
//   stride 1 and an output as wide as the input (a depthwise 3x3 with pads
//   1), the slices are flat runs of the input padded as rows back to back,
//   and masks drop what a run reads of a neighbouring row (FlatWindows):
//   one loop over all of a channel's positions rather than one per row of
//   7 to 14, which GCC vectorises poorly. Depthwise, pads 1 (2 for 5x5) and
//   a clip after, batch 1, two threads, medians of `loom run --iters=200`
//   alternating 3 times with ONNX Runtime 1.32, rows vs flat (with the
//   loops merged, merge-loops) in ms:
//     C=144 56x56    0.49 vs 0.32 (ORT 0.44)
//     C=32 112x112   0.39 vs 0.27 (ORT 0.36)
//     C=384 14x14    0.16 vs 0.06 (ORT 0.09)
//     C=960 7x7      0.37 vs 0.14 (ORT 0.07)
//     C=240 14x14, 5x5  0.31 vs 0.11 (ORT 0.07)
// - conv, one call (DecomposeOptions::conv_calls, in the CPU pipelines):
//   the sum over channels and kernel positions of windows of the padded
//   input (as_strided) times the weight, which lowers to one node that the
//   C++ backend runs as oneDNN's convolution (ir/conv_call.h,
//   backends/cpp/dnnl_conv.inc): Winograd where oneDNN has it for the shape
//   and CPU, or loom's own for 3x3 convs of 64 channels or more in code
//   without AVX-512, else oneDNN's direct convolution. For 2-D f32 convs
//   that are not direct ones, with a kernel of several positions, a weight
//   known at compile time and, with one group, 16 output positions or
//   more (UsesConvCall); the
//   ResNet block of tests/bench/peers (two 3x3 convs of 64 channels on
//   56x56) ran in 0.56 ms against 1.05 ms with shifted gemm calls and
//   0.97 ms in ONNX Runtime (run.sh --cases=resnet, 5 rounds alternating).
// - max_pool: the maximum over the slices of the input padded with -inf
//   (its indices: the first slice, inside x, that holds it);
//   average_pool: their sum (padded with 0s) divided by the count of
//   positions each window counts, a scalar when every window counts the
//   whole kernel, and otherwise the same windows summed over ones where
//   positions count (an element per output position, broadcast over N, C).
//
// Which conv: shifted for stride 1, one group, C >= 16, a known weight and
// a grid of at most 1.25x the output positions; direct for grouped convs
// whose groups are small, i.e. when G > 1 and (C/G) * (M/G) <= 8
// (depthwise convs, with a channel multiplier up to 8); im2col otherwise,
// even for one input channel, where a single GEMM still wins. Shifted
// against im2col, 3x3 pads 1, batch 1, two threads, `loom run --iters=50`
// alternating, medians in ms:
//   C=64  M=64  56x56 (ResNet block, both convs)   1.08-1.12 vs 1.22-1.32
//   C=128 M=128 28x28                              0.607 vs 0.669-0.679
//   C=256 M=256 14x14                              0.542-0.550 vs 0.551-0.564
//   C=32  M=64  56x56                              0.270-0.274 vs 0.271-0.272
//   C=16  M=64  56x56                              0.291-0.341 vs 0.304-0.315
// (7x7 of 512 channels would compute 63 positions for 49: im2col.) The
// measurements of the direct rule, with `loom run
// --iters=50` on one thread (OMP_NUM_THREADS=1; two threads measured mostly
// the scheduling of this loaded 2-core machine), 3x3 pads 1 on 56x56, batch
// 1, direct vs im2col in ms:
//   C=64 M=64 G=64 (depthwise)    0.074 vs 0.268
//   C=32 M=64 G=32 (x2)           0.062 vs 0.149
//   C=16 M=64 G=16 (x4)           0.054 vs 0.081
//   C=8  M=64 G=8  (x8)           0.053 vs 0.056
//   C=64 M=64 G=32 (2 x 2)        0.129 vs 0.262
//   C=64 M=128 G=32 (2 x 4)       0.253 vs 0.326
//   C=64 M=64 G=16 (4 x 4)        0.315 vs 0.270
//   C=64 M=64 G=8  (8 x 8)        0.683 vs 0.313
//   C=1  M=8 / C=2 M=4 / C=8 M=8  0.007 / 0.007 / 0.085 vs 0.004 / 0.005 / 0.032
//   C=1  M=16 / C=4 M=16          0.014 / 0.077 vs 0.008 / 0.025
//   C=64 M=64 (ResNet)            155 vs 1.2
// and 3x3x3 depthwise on 32 x 16^3: 0.125 vs 0.868.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/ops/conv.h"
#include "ir/status_macros.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

constexpr int64_t kDirectMaxGroupSize = 8;
constexpr int64_t kShiftedMinChannels = 16;
constexpr int64_t kConvCallMinPositions = 16;
// Each kernel position is a few nodes.
constexpr int64_t kMaxKernelPositions = int64_t{1} << 16;
// max_pool's indices are computed from tables per dim (MaxPoolIndices),
// and flat windows masked by a table per kernel column (FlatWindows).
constexpr int64_t kMaxIndexTableEntries = int64_t{1} << 24;

Attrs AxisAttr(int64_t axis) {
  Attrs attrs;
  attrs.Set("axis", axis);
  return attrs;
}

// Every kernel position of `g` in row-major order.
std::vector<std::vector<int64_t>> KernelPositions(const WindowGeometry& g) {
  std::vector<std::vector<int64_t>> positions;
  std::vector<int64_t> tap(g.num_spatial(), 0);
  while (true) {
    positions.push_back(tap);
    int d = g.num_spatial() - 1;
    for (; d >= 0; --d) {
      if (++tap[d] < g.kernel[d]) break;
      tap[d] = 0;
    }
    if (d < 0) return positions;
  }
}

absl::Status CheckKernelSize(const WindowGeometry& g) {
  if (g.KernelSize() <= kMaxKernelPositions) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the kernel has ", g.KernelSize(),
                                                 " positions; loom decomposes kernels of at "
                                                 "most 2^16 positions"));
}

bool NeedsPadding(const WindowGeometry& g) {
  for (int d = 0; d < g.num_spatial(); ++d) {
    if (g.pads_begin[d] != 0 || g.pads_end[d] + g.ceil_extra[d] != 0) {
      return true;
    }
  }
  return false;
}

// x [N, C, S...] padded with `value` as the windows need (the explicit pads
// and ceil_mode's extra end).
ValueId PadInput(DecompositionBuilder& b, ValueId x, const WindowGeometry& g, double value,
                 int64_t extra_rows = 0) {
  if (!NeedsPadding(g) && extra_rows == 0) return x;
  std::vector<int64_t> pads = {0, 0};
  pads.insert(pads.end(), g.pads_begin.begin(), g.pads_begin.end());
  pads.insert(pads.end(), {0, 0});
  for (int d = 0; d < g.num_spatial(); ++d) {
    pads.push_back(g.pads_end[d] + g.ceil_extra[d] + (d == 0 ? extra_rows : 0));
  }
  Attrs attrs = Ints("pads", std::move(pads));
  attrs.Set("value", value);
  return b.Add("pad", "pad", {x}, std::move(attrs));
}

// The view of the padded input [N, C, ...] that kernel position `tap`
// reads for every output position: [N, C, O...].
ValueId WindowSlice(DecompositionBuilder& b, ValueId padded, const WindowGeometry& g,
                    absl::Span<const int64_t> tap, absl::string_view suffix) {
  std::vector<int64_t> starts, ends, axes, steps;
  for (int d = 0; d < g.num_spatial(); ++d) {
    const int64_t start = tap[d] * g.dilations[d];
    const int64_t padded_size = g.input[d] + g.pads_begin[d] + g.pads_end[d] + g.ceil_extra[d];
    const int64_t end = start + (g.output[d] - 1) * g.strides[d] + 1;
    if (start == 0 && end == padded_size && g.strides[d] == 1) continue;
    starts.push_back(start);
    ends.push_back(end);
    axes.push_back(d + 2);
    steps.push_back(g.strides[d]);
  }
  if (axes.empty()) return padded;
  Attrs attrs = Ints("starts", std::move(starts));
  attrs.Set("ends", std::move(ends));
  attrs.Set("axes", std::move(axes));
  attrs.Set("steps", std::move(steps));
  return b.Add(suffix, "slice", {padded}, std::move(attrs));
}

Shape Concat(Shape front, absl::Span<const int64_t> back) {
  front.insert(front.end(), back.begin(), back.end());
  return front;
}

// Writes `value` (of the output's element count) into `output` of shape
// `shape`, adding the per-channel bias [M] when there is one.
void WriteConvOutput(DecompositionBuilder& b, const Node& node, ValueId value, const Shape& shape) {
  if (node.inputs.size() < 3) {
    b.AddWriting("output", "reshape", {value}, node.outputs[0], Ints("shape", shape));
    return;
  }
  Shape channel(shape.size() - 1, 1);
  channel[0] = shape[1];
  const ValueId y = b.Add("output", "reshape", {value}, Ints("shape", shape));
  const ValueId bias = b.Add("bias_shape", "reshape", {node.inputs[2]}, Ints("shape", channel));
  b.AddWriting("bias", "add", {y, bias}, node.outputs[0]);
}

// conv as one matmul of the weight with the column matrix (see the top).
void ConvIm2col(DecompositionBuilder& b, const Node& node, const ConvSpec& spec, ValueId padded,
                const Shape& out_shape) {
  const WindowGeometry& g = spec.window;
  const std::vector<std::vector<int64_t>> taps = KernelPositions(g);
  std::vector<ValueId> columns;
  for (size_t k = 0; k < taps.size(); ++k) {
    const ValueId slice = WindowSlice(b, padded, g, taps[k], absl::StrCat("tap", k));
    columns.push_back(taps.size() == 1 ? slice
                                       : b.Add(absl::StrCat("column", k), "unsqueeze", {slice},
                                               Ints("axes", {2})));
  }
  const ValueId stacked =
      columns.size() == 1 ? columns[0] : b.Add("columns", "concat", columns, AxisAttr(2));
  const int64_t groups = spec.groups;
  const int64_t rows = spec.in_channels / groups * static_cast<int64_t>(taps.size());
  const int64_t positions = NumElements(g.output);
  const int64_t group_out = spec.out_channels / groups;
  const Shape column_shape =
      groups == 1 ? Shape{spec.batch, rows, positions} : Shape{spec.batch, groups, rows, positions};
  const Shape weight_shape = groups == 1 ? Shape{group_out, rows} : Shape{groups, group_out, rows};
  const ValueId column_matrix =
      b.Add("column_matrix", "reshape", {stacked}, Ints("shape", column_shape));
  const ValueId weight_matrix =
      b.Add("weight_matrix", "reshape", {node.inputs[1]}, Ints("shape", weight_shape));
  const ValueId product = b.Add("matmul", "matmul", {weight_matrix, column_matrix});
  WriteConvOutput(b, node, product, out_shape);
}

// The windows a direct conv reads: per kernel position, the view of the
// input it reads at every output position, [N, C, positions...].
struct Windows {
  std::vector<ValueId> taps;  // in KernelPositions' order
  Shape positions;
  // Flat windows only: per kernel position along the last dim, the output
  // positions where its reads are the conv's (bool, [positions]); none
  // where they all are.
  std::vector<std::optional<ValueId>> column_masks;
};

// The windows as strided slices of the padded input: positions O....
Windows RowWindows(DecompositionBuilder& b, ValueId padded, const WindowGeometry& g) {
  Windows w;
  const std::vector<std::vector<int64_t>> taps = KernelPositions(g);
  for (size_t k = 0; k < taps.size(); ++k) {
    w.taps.push_back(WindowSlice(b, padded, g, taps[k], absl::StrCat("tap", k)));
  }
  w.positions = g.output;
  return w;
}

// Whether a 2-D conv's windows may be flat (FlatWindows): stride 1, and
// as many output columns as input columns (its pads make up its kernel's
// extent along the rows); and masks of a size that tables may have.
bool FitsFlatWindows(const WindowGeometry& g) {
  if (g.num_spatial() != 2 || g.output[1] != g.input[1] ||
      g.output[0] > kMaxIndexTableEntries / std::max<int64_t>(g.input[1], 1)) {
    return false;
  }
  for (int d = 0; d < 2; ++d) {
    if (g.strides[d] != 1 || g.pads_begin[d] < 0 || g.pads_end[d] < 0 || g.ceil_extra[d] != 0) {
      return false;
    }
  }
  return true;
}

// The windows of a conv that FitsFlatWindows, flat: the input [N, C, H, W]
// as rows of W back to back, [N, C, H * W], padded with zeros by whole
// rows above and below and by the column pads at either end. Output
// position p = y * W + x reads kernel position (r, s) at p + r * d0 * W +
// s * d1 of it: one contiguous run per kernel position, which vectorises
// where W is too short a row. Where x + s * d1 falls outside the row
// (into the padding, on a 2-D image), the flat input holds the end of a
// neighbouring row; a mask per kernel column drops those terms.
Windows FlatWindows(DecompositionBuilder& b, ValueId x, const WindowGeometry& g, int64_t batch,
                    int64_t channels) {
  const int64_t width = g.input[1], positions = g.output[0] * width;
  const ValueId rows =
      b.Add("rows", "reshape", {x}, Ints("shape", {batch, channels, g.input[0] * width}));
  const ValueId padded = b.Add("pad", "pad", {rows},
                               Ints("pads", {0, 0, g.pads_begin[0] * width + g.pads_begin[1], 0, 0,
                                             g.pads_end[0] * width + g.pads_end[1]}));
  Windows w;
  for (const std::vector<int64_t>& tap : KernelPositions(g)) {
    const int64_t start = tap[0] * g.dilations[0] * width + tap[1] * g.dilations[1];
    Attrs attrs = Ints("starts", {start});
    attrs.Set("ends", AttrInts{start + positions});
    attrs.Set("axes", AttrInts{2});
    w.taps.push_back(
        b.Add(absl::StrCat("tap", w.taps.size()), "slice", {padded}, std::move(attrs)));
  }
  w.positions = {positions};
  for (int64_t s = 0; s < g.kernel[1]; ++s) {
    const int64_t shift = s * g.dilations[1] - g.pads_begin[1];
    if (shift == 0) {
      w.column_masks.push_back(std::nullopt);
      continue;
    }
    Tensor mask(DType::kBool, {positions});
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t column = p % width + shift;
      mask.SetInt(p, column >= 0 && column < width);
    }
    w.column_masks.push_back(b.Constant(absl::StrCat("column", s, "_mask"), std::move(mask)));
  }
  return w;
}

// conv as a sum of window * weight element (see the top), over the output
// viewed as [N, G, M/G, positions...].
void ConvDirect(DecompositionBuilder& b, const Node& node, const ConvSpec& spec,
                const Windows& windows, const Shape& out_shape) {
  const WindowGeometry& g = spec.window;
  const int64_t groups = spec.groups;
  const int64_t group_in = spec.in_channels / groups;
  const int64_t group_out = spec.out_channels / groups;
  const int spatial = g.num_spatial();
  const std::vector<std::vector<int64_t>> taps = KernelPositions(g);
  const Shape grouped_slice = Concat({spec.batch, groups, group_in}, windows.positions);
  const Shape weight_shape = Concat({groups, group_out}, Shape(windows.positions.size(), 1));
  // The sums of the terms of each masked kernel column (all in one where
  // there are no masks).
  std::vector<std::optional<ValueId>> sums(std::max<size_t>(windows.column_masks.size(), 1));
  for (size_t k = 0; k < taps.size(); ++k) {
    const ValueId slice = b.Add(absl::StrCat("tap", k, "_groups"), "reshape", {windows.taps[k]},
                                Ints("shape", grouped_slice));
    std::optional<ValueId>& sum = sums[windows.column_masks.empty() ? 0 : taps[k].back()];
    for (int64_t c = 0; c < group_in; ++c) {
      const std::string term = absl::StrCat("tap", k, "_c", c);
      ValueId channel = slice;
      if (group_in > 1) {
        Attrs pick = Ints("starts", {c});
        pick.Set("ends", AttrInts{c + 1});
        pick.Set("axes", AttrInts{2});
        channel = b.Add(absl::StrCat(term, "_x"), "slice", {slice}, std::move(pick));
      }
      // The weight's elements [:, c, tap], one per output channel.
      std::vector<int64_t> starts = {c}, ends = {c + 1}, axes = {1};
      for (int d = 0; d < spatial; ++d) {
        starts.push_back(taps[k][d]);
        ends.push_back(taps[k][d] + 1);
        axes.push_back(d + 2);
      }
      Attrs pick = Ints("starts", std::move(starts));
      pick.Set("ends", std::move(ends));
      pick.Set("axes", std::move(axes));
      const ValueId weights =
          b.Add(absl::StrCat(term, "_w_shape"), "reshape",
                {b.Add(absl::StrCat(term, "_w"), "slice", {node.inputs[1]}, std::move(pick))},
                Ints("shape", weight_shape));
      const ValueId product = b.Add(absl::StrCat(term, "_mul"), "mul", {channel, weights});
      sum = sum.has_value() ? b.Add(absl::StrCat(term, "_add"), "add", {*sum, product}) : product;
    }
  }
  std::optional<ValueId> total, zero;
  for (size_t s = 0; s < sums.size(); ++s) {
    ValueId term = *sums[s];
    if (!windows.column_masks.empty() && windows.column_masks[s].has_value()) {
      if (!zero.has_value()) zero = b.Scalar("zero", 0, b.type(node.inputs[0]).dtype);
      term = b.Add(absl::StrCat("column", s, "_masked"), "where",
                   {*windows.column_masks[s], term, *zero});
    }
    total =
        total.has_value() ? b.Add(absl::StrCat("column", s, "_add"), "add", {*total, term}) : term;
  }
  WriteConvOutput(b, node, *total, out_shape);
}

// The weight [M, C, K...] as [M, K..., C], computed now: the kernel
// positions' products read it as row-major [M, C] matrices. None for a
// weight known only at run time.
std::optional<ValueId> ChannelsLastWeight(DecompositionBuilder& b, ValueId weight) {
  if (!b.graph().HasInitializer(weight)) return std::nullopt;
  const Tensor& w = b.graph().initializer(weight);
  const Shape& shape = w.shape();
  const int64_t out_channels = shape[0], channels = shape[1];
  const int64_t taps = NumElements(absl::MakeConstSpan(shape).subspan(2));
  Shape permuted = {out_channels};
  permuted.insert(permuted.end(), shape.begin() + 2, shape.end());
  permuted.push_back(channels);
  Tensor t(w.dtype(), permuted);
  for (int64_t m = 0; m < out_channels; ++m) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t k = 0; k < taps; ++k) {
        t.SetDouble((m * taps + k) * channels + c, w.GetDouble((m * channels + c) * taps + k));
      }
    }
  }
  return b.Constant("weight_channels_last", std::move(t));
}

// conv as gemm calls that read the padded input in place (see the top):
// for each kernel position, [M, C] weights times the padded image [C, P]
// shifted by the position, summed over the positions into the output on
// the padded width.
void ConvShifted(DecompositionBuilder& b, const Node& node, const ConvSpec& spec, ValueId weight,
                 const Shape& out_shape) {
  const WindowGeometry& g = spec.window;
  const int spatial = g.num_spatial();
  // Padded sizes, and the strides of the padded image's spatial dims.
  std::vector<int64_t> padded(spatial), strides(spatial, 1);
  for (int d = 0; d < spatial; ++d) padded[d] = g.input[d] + g.pads_begin[d] + g.pads_end[d];
  for (int d = spatial - 2; d >= 0; --d) strides[d] = strides[d + 1] * padded[d + 1];
  // Output positions on the padded width: O_0 x P_1 x ... The last ones of
  // the last channel read this far past the image; extra rows of zeros
  // keep them inside it.
  int64_t overrun = 0;
  for (int d = 1; d < spatial; ++d) overrun += (g.KernelExtent(d) - 1) * strides[d];
  const int64_t extra_rows = (overrun + strides[0] - 1) / strides[0];
  const ValueId image = PadInput(b, node.inputs[0], g, 0, extra_rows);
  const int64_t channel_stride = (padded[0] + extra_rows) * strides[0];
  // The image as [N, 1, G..., K..., C] (G the positions on the padded
  // width, K the kernel positions), broadcast over the output channels.
  Shape view_shape = {spec.batch, 1}, view_strides = {spec.in_channels * channel_stride, 0};
  Shape grid = {g.output[0]};
  grid.insert(grid.end(), padded.begin() + 1, padded.end());
  view_shape.insert(view_shape.end(), grid.begin(), grid.end());
  view_strides.insert(view_strides.end(), strides.begin(), strides.end());
  for (int d = 0; d < spatial; ++d) {
    view_shape.push_back(g.kernel[d]);
    view_strides.push_back(g.dilations[d] * strides[d]);
  }
  view_shape.push_back(spec.in_channels);
  view_strides.push_back(channel_stride);
  Attrs view = Ints("shape", view_shape);
  view.Set("strides", std::move(view_strides));
  const ValueId windows = b.Add("windows", "as_strided", {image}, std::move(view));
  // The weight as [1, M, 1..., K..., C].
  Shape weight_shape = Concat({1, spec.out_channels}, Shape(spatial, 1));
  weight_shape.insert(weight_shape.end(), g.kernel.begin(), g.kernel.end());
  weight_shape.push_back(spec.in_channels);
  const ValueId weights = b.Add("weight_shape", "reshape", {weight}, Ints("shape", weight_shape));
  const ValueId products = b.Add("products", "mul", {weights, windows});
  std::vector<int64_t> summed;
  for (int d = 0; d <= spatial; ++d) summed.push_back(2 + spatial + d);
  Attrs sum = Ints("axes", std::move(summed));
  sum.Set("keepdims", int64_t{0});
  const ValueId on_grid = b.Add("sum", "reduce_sum", {products}, std::move(sum));
  // The output positions of the grid.
  std::vector<int64_t> starts, ends, axes;
  for (int d = 1; d < spatial; ++d) {
    starts.push_back(0);
    ends.push_back(g.output[d]);
    axes.push_back(2 + d);
  }
  if (axes.empty()) {
    WriteConvOutput(b, node, on_grid, out_shape);
    return;
  }
  Attrs crop = Ints("starts", std::move(starts));
  crop.Set("ends", std::move(ends));
  crop.Set("axes", std::move(axes));
  WriteConvOutput(b, node, b.Add("crop", "slice", {on_grid}, std::move(crop)), out_shape);
}

// Whether a conv's kernel positions are gemm calls over the padded image
// (ConvShifted): stride 1, one group, a kernel of several positions and a
// weight known at compile time; and enough input channels (each call's
// sum) and few enough extra positions (those on the padding) that the
// calls beat one call on a column matrix the conv copies out first.
bool UsesShiftedConv(const ConvSpec& spec) {
  const WindowGeometry& g = spec.window;
  int64_t grid = g.output[0], positions = g.output[0];
  for (int d = 0; d < g.num_spatial(); ++d) {
    if (g.strides[d] != 1) return false;
    if (d > 0) {
      grid *= g.input[d] + g.pads_begin[d] + g.pads_end[d];
      positions *= g.output[d];
    }
  }
  return spec.groups == 1 && g.KernelSize() > 1 && spec.in_channels >= kShiftedMinChannels &&
         grid <= positions + positions / 4;
}

bool UsesDirectConv(const ConvSpec& spec) {
  const int64_t group_size = spec.in_channels / spec.groups * (spec.out_channels / spec.groups);
  return spec.groups > 1 && group_size <= kDirectMaxGroupSize;
}

// The conv's geometry, read from its inputs' shapes and its attributes.
absl::StatusOr<ConvSpec> ReadSpec(const Node& node, const DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 2, 3));
  const Shape& x = b.type(node.inputs[0]).shape;
  const Shape& weight = b.type(node.inputs[1]).shape;
  const Shape bias = node.inputs.size() > 2 ? b.type(node.inputs[2]).shape : Shape{};
  return ReadConvSpec(node, x, weight, node.inputs.size() > 2 ? &bias : nullptr);
}

absl::Status DecomposeConv(const Node& node, DecompositionBuilder& b) {
  LOOM_ASSIGN_OR_RETURN(const ConvSpec spec, ReadSpec(node, b));
  LOOM_RETURN_IF_ERROR(CheckKernelSize(spec.window));
  const Shape out_shape = Concat({spec.batch, spec.out_channels}, spec.window.output);
  if (UsesShiftedConv(spec)) {
    if (std::optional<ValueId> w = ChannelsLastWeight(b, node.inputs[1])) {
      ConvShifted(b, node, spec, *w, out_shape);
      return absl::OkStatus();
    }
  }
  const WindowGeometry& g = spec.window;
  if (!UsesDirectConv(spec)) {
    ConvIm2col(b, node, spec, PadInput(b, node.inputs[0], g, 0), out_shape);
  } else if (FitsFlatWindows(g)) {
    ConvDirect(b, node, spec, FlatWindows(b, node.inputs[0], g, spec.batch, spec.in_channels),
               out_shape);
  } else {
    ConvDirect(b, node, spec, RowWindows(b, PadInput(b, node.inputs[0], g, 0), g), out_shape);
  }
  return absl::OkStatus();
}

// Whether a conv is one library call (DecomposeOptions::conv_calls): 2-D,
// f32, not a direct conv (small groups run as loops), a kernel of several
// positions (a 1x1 conv is one gemm call already), a weight known at
// compile time (a call prepares it for its library once) and, with one
// group, at least kConvCallMinPositions output positions.
// 3x3 convs, pads 1, batch 1, `loom run --iters=200` alternating 3 times,
// call vs gemm calls in ms:
//   C=M=64  56x56   0.311-0.342 vs 0.586-0.605
//   C=M=128 28x28   0.241-0.242 vs 0.602-0.645
//   C=M=256 14x14   0.328-0.447 vs 0.641-0.704
//   C=M=512 7x7     0.935-1.016 vs 0.830-0.852 (a weight of 9.4 MB)
// when the call compared the whole weight with its copy on every run; once
// a bind (dnnl_conv.inc), on a 2-core Intel Xeon with AVX-512 (and with
// the code held to AVX2), alternating twice:
//   C=M=512 7x7     0.92-0.97 vs 1.78-1.82 (AVX2: 0.86-0.89 vs 2.54-3.28)
//   C=M=512 4x4     0.40-0.72 vs 0.41-0.52 (AVX2: 0.39-0.41 vs 0.66-0.70)
// Grouped, the alternative is a batch of small gemm calls over an im2col
// copy, slower at every size: RegNetY-400MF's 3x3 convs (groups of 8
// channels), batch 1, two threads on the loaded machine (load 4-5),
// medians of 300 calls alternating twice, call vs gemm calls (ONNX
// Runtime 1.32 in the same run) in ms:
//   C=M=104 28x28          0.109-0.110 vs 0.311-0.332 (0.19-0.33)
//   C=M=208 28x28 stride 2 0.132-0.133 vs 0.78-1.81   (0.24-0.25)
//   C=M=208 14x14          0.166-0.167 vs 4.2-6.0     (0.13-0.21)
//   C=M=440 7x7            0.103       vs 0.350-0.358 (0.11-0.17)
bool UsesConvCall(const ConvSpec& spec, const Node& node, const DecompositionBuilder& b) {
  const WindowGeometry& g = spec.window;
  return g.num_spatial() == 2 && !UsesDirectConv(spec) && g.KernelSize() > 1 &&
         (spec.groups > 1 || spec.batch * NumElements(g.output) >= kConvCallMinPositions) &&
         b.type(node.inputs[0]).dtype == DType::kF32 && b.graph().HasInitializer(node.inputs[1]);
}

// The sum over the last three dims (a group's channels and the kernel
// positions) of the windows of `image` (as_strided: `windows_shape`,
// `strides`) times node's weight as `weight_shape`: the node MatchConv
// takes.
ValueId WindowProductSum(DecompositionBuilder& b, const Node& node, ValueId image,
                         const Shape& windows_shape, AttrInts strides, const Shape& weight_shape) {
  Attrs view = Ints("shape", windows_shape);
  view.Set("strides", std::move(strides));
  const ValueId windows = b.Add("windows", "as_strided", {image}, std::move(view));
  const ValueId weights =
      b.Add("weight_shape", "reshape", {node.inputs[1]}, Ints("shape", weight_shape));
  const ValueId products = b.Add("products", "mul", {windows, weights});
  const int64_t first = static_cast<int64_t>(windows_shape.size()) - 3;
  Attrs sum = Ints("axes", {first, first + 1, first + 2});
  sum.Set("keepdims", int64_t{0});
  return b.Add("sum", "reduce_sum", {products}, std::move(sum));
}

// conv as one call over the padded input (ir/conv_call.h): the sum over
// input channels and kernel positions of the windows [N, 1, O0, O1, C, K0,
// K1] of the padded image (as_strided) times the weight as [1, M, 1, 1, C,
// K0, K1], which lowers to the node MatchConv takes. Grouped, a group dim
// comes before the channels': windows [N, G, 1, O0, O1, C/G, K0, K1] and
// the weight as [1, G, M/G, 1, 1, C/G, K0, K1].
void ConvCall(DecompositionBuilder& b, const Node& node, const ConvSpec& spec,
              const Shape& out_shape) {
  const WindowGeometry& g = spec.window;
  const ValueId image = PadInput(b, node.inputs[0], g, 0);
  const int64_t width = g.input[1] + g.pads_begin[1] + g.pads_end[1];
  const int64_t plane = (g.input[0] + g.pads_begin[0] + g.pads_end[0]) * width;
  const int64_t group_in = spec.in_channels / spec.groups;
  const int64_t group_out = spec.out_channels / spec.groups;
  Shape windows_shape = {spec.batch, 1,           g.output[0], g.output[1],
                         group_in,   g.kernel[0], g.kernel[1]};
  AttrInts strides = {spec.in_channels * plane,
                      0,
                      g.strides[0] * width,
                      g.strides[1],
                      plane,
                      g.dilations[0] * width,
                      g.dilations[1]};
  Shape weight_shape = {1, group_out, 1, 1, group_in, g.kernel[0], g.kernel[1]};
  if (spec.groups > 1) {
    windows_shape.insert(windows_shape.begin() + 1, spec.groups);
    strides.insert(strides.begin() + 1, group_in * plane);
    weight_shape.insert(weight_shape.begin() + 1, spec.groups);
  }
  WriteConvOutput(b, node,
                  WindowProductSum(b, node, image, windows_shape, std::move(strides), weight_shape),
                  out_shape);
}

absl::Status DecomposeConvAsCall(const Node& node, DecompositionBuilder& b) {
  LOOM_ASSIGN_OR_RETURN(const ConvSpec spec, ReadSpec(node, b));
  if (!UsesConvCall(spec, node, b)) return DecomposeConv(node, b);
  ConvCall(b, node, spec, Concat({spec.batch, spec.out_channels}, spec.window.output));
  return absl::OkStatus();
}

// Whether a conv is one channels-last call (DecomposeOptions::
// channels_last_conv_calls): 2-D, f32, a weight known at compile time and
// at least kConvCallMinPositions output positions, whatever its kernel and
// groups (1x1 and depthwise convs too: oneDNN's kernels for them on
// channels-last data beat loom's gemm calls and loops on NCHW, see
// docs/matrix-products.md).
bool UsesChannelsLastCall(const ConvSpec& spec, const Node& node, const DecompositionBuilder& b) {
  const WindowGeometry& g = spec.window;
  return g.num_spatial() == 2 && spec.batch * NumElements(g.output) >= kConvCallMinPositions &&
         b.type(node.inputs[0]).dtype == DType::kF32 && b.graph().HasInitializer(node.inputs[1]);
}

// conv as one call on its input channels-last: the input viewed as [N, H,
// W, C] and padded there; its windows [N, O0, O1, 1, C, K0, K1] times the
// weight as [1, 1, 1, M, C, K0, K1], summed over the last three, give [N,
// O0, O1, M] (grouped: windows [N, O0, O1, G, 1, C/G, K0, K1] and the
// weight as [1, 1, 1, G, M/G, C/G, K0, K1]), which lowers to the node
// MatchConv takes in its channels-last order (a 1x1 conv of one group is a
// matmul of the positions instead); the bias is added there and the result
// viewed as [N, M, O0, O1]. The views at both ends are what
// sink-transposes moves past the ops between two convs and cancels, so
// that a chain of convs keeps its activations channels-last.
void ChannelsLastConvCall(DecompositionBuilder& b, const Node& node, const ConvSpec& spec) {
  const WindowGeometry& g = spec.window;
  ValueId image = b.Add("nhwc", "transpose", {node.inputs[0]}, Ints("perm", {0, 2, 3, 1}));
  if (NeedsPadding(g)) {
    Attrs pads =
        Ints("pads", {0, g.pads_begin[0], g.pads_begin[1], 0, 0, g.pads_end[0], g.pads_end[1], 0});
    pads.Set("value", 0.0);
    image = b.Add("pad", "pad", {image}, std::move(pads));
  }
  const int64_t channels = spec.in_channels, groups = spec.groups;
  const int64_t group_in = channels / groups, group_out = spec.out_channels / groups;
  const int64_t row = (g.input[1] + g.pads_begin[1] + g.pads_end[1]) * channels;
  const int64_t image_size = (g.input[0] + g.pads_begin[0] + g.pads_end[0]) * row;
  ValueId output;
  if (groups == 1 && g.KernelSize() == 1) {
    // A matrix product of the positions [N, O0, O1, C] (the image itself at
    // stride 1) with the weight as [C, M]: a gemm call whose weight the
    // simplify pass transposes once (as [M, C] oneDNN's sgemm ran [3136,
    // 256] x [256, 64] in 9.0 ms against 0.59).
    ValueId positions = image;
    if (g.strides[0] != 1 || g.strides[1] != 1) {
      Attrs view = Ints("shape", {spec.batch, g.output[0], g.output[1], channels});
      view.Set("strides", AttrInts{image_size, g.strides[0] * row, g.strides[1] * channels, 1});
      positions = b.Add("positions", "as_strided", {image}, std::move(view));
    }
    const ValueId weight = b.Add("weight_t", "transpose",
                                 {b.Add("weight_shape", "reshape", {node.inputs[1]},
                                        Ints("shape", {spec.out_channels, channels}))},
                                 Ints("perm", {1, 0}));
    output = b.Add("matmul", "matmul", {positions, weight});
  } else {
    Shape windows_shape = {spec.batch, g.output[0], g.output[1], 1,
                           group_in,   g.kernel[0], g.kernel[1]};
    AttrInts strides = {image_size, g.strides[0] * row,   g.strides[1] * channels,  0,
                        1,          g.dilations[0] * row, g.dilations[1] * channels};
    Shape weight_shape = {1, 1, 1, group_out, group_in, g.kernel[0], g.kernel[1]};
    if (groups > 1) {
      windows_shape.insert(windows_shape.begin() + 3, groups);
      strides.insert(strides.begin() + 3, group_in);
      weight_shape.insert(weight_shape.begin() + 3, groups);
    }
    output =
        b.Add("output", "reshape",
              {WindowProductSum(b, node, image, windows_shape, std::move(strides), weight_shape)},
              Ints("shape", {spec.batch, g.output[0], g.output[1], spec.out_channels}));
  }
  if (node.inputs.size() > 2) output = b.Add("bias", "add", {output, node.inputs[2]});
  b.AddWriting("nchw", "transpose", {output}, node.outputs[0], Ints("perm", {0, 3, 1, 2}));
}

absl::Status DecomposeConvAsChannelsLastCall(const Node& node, DecompositionBuilder& b) {
  LOOM_ASSIGN_OR_RETURN(const ConvSpec spec, ReadSpec(node, b));
  if (!UsesChannelsLastCall(spec, node, b)) return DecomposeConvAsCall(node, b);
  ChannelsLastConvCall(b, node, spec);
  return absl::OkStatus();
}

// Whether every window of average_pool counts all its kernel positions (a
// sufficient condition: no window reaches a position that is not counted).
bool CountsWholeKernels(const WindowGeometry& g, bool count_pads) {
  for (int d = 0; d < g.num_spatial(); ++d) {
    const bool uncounted_pads = !count_pads && (g.pads_begin[d] != 0 || g.pads_end[d] != 0);
    if (uncounted_pads || g.ceil_extra[d] != 0) return false;
  }
  return true;
}

// The sum over kernel positions of the window slices of `padded`
// (written to `output` when given), combined with `combine`.
ValueId CombineWindows(DecompositionBuilder& b, ValueId padded, const WindowGeometry& g,
                       absl::Span<const std::vector<int64_t>> taps, const char* combine,
                       absl::string_view name, std::optional<ValueId> output = std::nullopt) {
  ValueId result = WindowSlice(b, padded, g, taps[0], absl::StrCat(name, "_tap0"));
  for (size_t k = 1; k < taps.size(); ++k) {
    const ValueId slice = WindowSlice(b, padded, g, taps[k], absl::StrCat(name, "_tap", k));
    const std::string suffix = absl::StrCat(name, "_combine", k);
    if (output.has_value() && k + 1 == taps.size()) {
      b.AddWriting(suffix, combine, {result, slice}, *output);
      return *output;
    }
    result = b.Add(suffix, combine, {result, slice});
  }
  return result;
}

// How many positions each window of average_pool divides by, [1, 1, O...]:
// the same windows summed over ones where positions count (x, and with
// `count_pads` its explicit padding) and zeros elsewhere. Computed in the
// graph: a constant would hold an element per output position.
ValueId WindowCounts(DecompositionBuilder& b, const WindowGeometry& g, bool count_pads,
                     absl::Span<const std::vector<int64_t>> taps, DType dtype) {
  Shape counted = {1, 1};
  std::vector<int64_t> begins = {0, 0}, ends = {0, 0};
  for (int d = 0; d < g.num_spatial(); ++d) {
    counted.push_back(g.input[d] + (count_pads ? g.pads_begin[d] + g.pads_end[d] : 0));
    begins.push_back(count_pads ? 0 : g.pads_begin[d]);
    ends.push_back(g.ceil_extra[d] + (count_pads ? 0 : g.pads_end[d]));
  }
  const ValueId ones =
      b.Add("ones", "expand", {b.Scalar("one", 1, dtype)}, Ints("shape", std::move(counted)));
  begins.insert(begins.end(), ends.begin(), ends.end());
  Attrs pads = Ints("pads", std::move(begins));
  pads.Set("value", 0.0);
  const ValueId padded = b.Add("ones_pad", "pad", {ones}, std::move(pads));
  return CombineWindows(b, padded, g, taps, "add", "count");
}

// max_pool's indices (ir/ops/conv.cc), [N, C, O...]: over the kernel
// positions from the last to the first, where the position lies inside x
// and its slice holds the maximum `max` (or a NaN), its flat index in x, a
// sum of tables per dim (n, c, and the spatial position along each dim).
void MaxPoolIndices(DecompositionBuilder& b, const Node& node, ValueId padded,
                    const WindowGeometry& g, absl::Span<const std::vector<int64_t>> taps,
                    const Shape& x, ValueId max) {
  const int spatial = g.num_spatial(), rank = spatial + 2;
  const bool column_major = node.attrs.GetInt("storage_order", 0) == 1;
  std::vector<double> strides(spatial);  // of the spatial dims in an index
  double plane = 1;
  for (int i = 0; i < spatial; ++i) {
    const int d = column_major ? i : spatial - 1 - i;
    strides[d] = plane;
    plane *= static_cast<double>(g.input[d]);
  }
  std::vector<double> batch(x[0]), channel(x[1]);
  for (int64_t n = 0; n < x[0]; ++n) batch[n] = static_cast<double>(n * x[1]) * plane;
  for (int64_t c = 0; c < x[1]; ++c) channel[c] = static_cast<double>(c) * plane;
  const ValueId base = b.Add("index_plane", "add",
                             {b.DimTable("index_n", DType::kI64, rank, 0, batch),
                              b.DimTable("index_c", DType::kI64, rank, 1, channel)});
  // Per dim and kernel offset: the position's share of the index, and
  // whether it lies inside x (-1: everywhere).
  std::vector<std::vector<ValueId>> share(spatial), inside(spatial);
  for (int d = 0; d < spatial; ++d) {
    for (int64_t t = 0; t < g.kernel[d]; ++t) {
      std::vector<double> terms(g.output[d]), valid(g.output[d]);
      bool all = true;
      for (int64_t o = 0; o < g.output[d]; ++o) {
        const int64_t p = o * g.strides[d] - g.pads_begin[d] + t * g.dilations[d];
        valid[o] = p >= 0 && p < g.input[d];
        all = all && valid[o];
        terms[o] = static_cast<double>(p) * strides[d];
      }
      const std::string name = absl::StrCat("index_d", d, "_k", t);
      share[d].push_back(b.DimTable(name, DType::kI64, rank, d + 2, terms));
      inside[d].push_back(
          all ? -1 : b.DimTable(absl::StrCat(name, "_inside"), DType::kBool, rank, d + 2, valid));
    }
  }
  ValueId index = b.Scalar("no_index", -1, DType::kI64);
  for (size_t k = taps.size(); k-- > 0;) {
    const std::string name = absl::StrCat("index", k);
    const ValueId slice = WindowSlice(b, padded, g, taps[k], absl::StrCat(name, "_tap"));
    ValueId hit = b.Add(absl::StrCat(name, "_hit"), "logical_or",
                        {b.Add(absl::StrCat(name, "_max"), "equal", {slice, max}),
                         b.Add(absl::StrCat(name, "_nan"), "not_equal", {slice, slice})});
    ValueId position = base;
    for (int d = 0; d < spatial; ++d) {
      const std::string part = absl::StrCat(name, "_d", d);
      position = b.Add(part, "add", {position, share[d][taps[k][d]]});
      if (inside[d][taps[k][d]] >= 0) {
        hit = b.Add(absl::StrCat(part, "_inside"), "logical_and", {hit, inside[d][taps[k][d]]});
      }
    }
    if (k == 0) {
      b.AddWriting("indices", "where", {hit, position, index}, node.outputs[1]);
    } else {
      index = b.Add(name, "where", {hit, position, index});
    }
  }
}

// max_pool and average_pool: a maximum or a sum over the window slices;
// max_pool's indices when it has a second output.
absl::Status DecomposePool(const Node& node, DecompositionBuilder& b, bool average) {
  const size_t outputs = !average && node.outputs.size() == 2 ? 2 : 1;
  LOOM_RETURN_IF_ERROR(CheckArity(node, 1, outputs));
  const ValueId x = node.inputs[0];
  const TensorType type = b.type(x);  // a copy: Add() moves values
  LOOM_ASSIGN_OR_RETURN(WindowGeometry g, ReadPoolGeometry(node, type.shape));
  LOOM_RETURN_IF_ERROR(CheckKernelSize(g));
  const double fill = average ? 0 : -std::numeric_limits<double>::infinity();
  const ValueId padded = PadInput(b, x, g, fill);
  const std::vector<std::vector<int64_t>> taps = KernelPositions(g);
  if (!average) {
    const ValueId max = CombineWindows(b, padded, g, taps, "maximum", "max", node.outputs[0]);
    if (max != node.outputs[0]) {  // a kernel of one position
      b.AddWriting("output", "reshape", {max}, node.outputs[0],
                   Ints("shape", Concat({type.shape[0], type.shape[1]}, g.output)));
    }
    if (outputs == 2) {
      // Tables: an entry per batch and channel, and per kernel offset and
      // output position along each spatial dim.
      int64_t entries = type.shape[0] + type.shape[1];  // each at most 2^40
      for (int d = 0; d < g.num_spatial(); ++d) {
        entries += std::min(SaturatingMul(g.kernel[d], g.output[d]), kMaxIndexTableEntries + 1);
      }
      if (entries > kMaxIndexTableEntries) {
        return absl::InvalidArgumentError(
            absl::StrCat("the indices need ", entries,
                         " entries of index tables; loom decomposes max_pool's "
                         "indices with at most 2^24"));
      }
      MaxPoolIndices(b, node, padded, g, taps, type.shape, node.outputs[0]);
    }
    return absl::OkStatus();
  }
  const ValueId sum = CombineWindows(b, padded, g, taps, "add", "sum");
  const bool count_pads = node.attrs.GetInt("count_include_pad", 0) != 0;
  const ValueId divisor = CountsWholeKernels(g, count_pads)
                              ? b.Scalar("count", static_cast<double>(g.KernelSize()), type.dtype)
                              : WindowCounts(b, g, count_pads, taps, type.dtype);
  b.AddWriting("average", "div", {sum, divisor}, node.outputs[0]);
  return absl::OkStatus();
}

absl::Status DecomposeMaxPool(const Node& node, DecompositionBuilder& b) {
  return DecomposePool(node, b, /*average=*/false);
}

absl::Status DecomposeAveragePool(const Node& node, DecompositionBuilder& b) {
  return DecomposePool(node, b, /*average=*/true);
}

constexpr Decomposition kConvDecompositions[] = {
    {"conv", DecomposeConv},
    {"max_pool", DecomposeMaxPool},
    {"average_pool", DecomposeAveragePool},
};

constexpr Decomposition kConvCallDecompositions[] = {{"conv", DecomposeConvAsCall}};

constexpr Decomposition kChannelsLastConvCallDecompositions[] = {
    {"conv", DecomposeConvAsChannelsLastCall}};

}  // namespace

absl::Span<const Decomposition> ConvDecompositions() { return kConvDecompositions; }

absl::Span<const Decomposition> ConvCallDecompositions() { return kConvCallDecompositions; }

absl::Span<const Decomposition> ChannelsLastConvCallDecompositions() {
  return kChannelsLastConvCallDecompositions;
}

}  // namespace loom
