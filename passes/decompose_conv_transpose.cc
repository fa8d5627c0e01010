// conv_transpose (see ir/ops/conv.h) as ops that already lower, fuse and
// run fast, in one of two ways:
//
// - columns: one GEMM computes every product the op scatters, the weight
//   viewed as [G, M/G * K, C/G] (K the kernel positions) times x viewed as
//   [N, G, C/G, P] (P the input positions): the columns [N, M, K..., S...].
//   Column k of input position s belongs at full output position
//   f = s * stride + k * dilation (the output is f - pad_begin). Writing
//   f = q * stride + r, kernel position k reaches only phase
//   r = (k * dilation) % stride, from s = q - (k * dilation) / stride: so
//   each phase is a sum of plain slices (views) of the columns (padded by
//   whole input positions where a slice would reach out), fused into one
//   loop; the phases, concatenated, transposed and merged, interleave into
//   the full positions, and the output is a slice of those. No product with
//   an inserted zero, and no zero-filled buffer of the output's size per
//   kernel position.
// - conv: the same output is the conv of the zero-interleaved x (a size-1
//   dim after each strided spatial dim, padded to the stride, merged) with
//   the weight transposed per group to [M, C/G, K...] and flipped along
//   every spatial dim, padded by dilation * (K - 1) - pads (cropped where
//   that is negative); that conv decomposes by its own rule (im2col GEMM or
//   direct sums). It multiplies the inserted zeros too (stride^D times the
//   columns' products) but needs no columns buffer.
//
// Which: conv for groups of one input channel (C/G = 1: depthwise, or a
// single input channel), columns otherwise. Measured with `loom run
// --iters=50` on one thread (OMP_NUM_THREADS=1), batch 1, columns vs conv in
// ms (C -> M channels, G groups, kernel k, stride s, pads p, output_padding
// op, input size):
//   128 -> 64, k2 s2, 32x32                      0.358 vs 1.78
//   128 -> 64, k4 s2 p1, 16x16                   0.375 vs 1.44
//   64 -> 32, k3 s2 p1 op1, 28x28                0.19  vs 0.75
//   64 -> 64, G=8 (8 x 8), k3 s2 p1 op1, 28x28   0.198 vs 0.43
//   64 -> 64, G=16 (4 x 4), same                 0.185 vs 0.375
//   64 -> 64, G=32 (2 x 2), same                 0.185 vs 0.213
//   32 -> 32, G=32 (depthwise), same             0.091 vs 0.073
//   1 -> 8, k3 s2 p1 op1, 32x32                  0.036 vs 0.007
//   64 -> 64, k3 s1 p1, 56x56                    1.16  vs 1.20
//   64 -> 32, k3 s1 p1, 28x28                    0.15  vs 0.185
//   32 -> 32, G=32 (depthwise), k3 s1 p1, 56x56  0.205 vs 0.035
// (A first columns form, the columns zero-interleaved to the output's size
// and one slice of those per kernel position summed, took 1.16, 1.34 and
// 0.865 ms on the first three: its interleaving copy dominated.)
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

// The columns way emits a few nodes per kernel position and per output
// phase (the product of the strides).
constexpr int64_t kMaxColumnTaps = int64_t{1} << 16;
constexpr int64_t kMaxPhases = int64_t{1} << 12;

// Writes `sum` (the output without its bias, of the output's element
// count) to the node's output of shape `shape`, adding the bias [M].
void WriteOutput(DecompositionBuilder& b, const Node& node, ValueId sum, const Shape& shape) {
  if (node.inputs.size() < 3) {
    b.AddWriting("output", "reshape", {sum}, node.outputs[0], Ints("shape", shape));
    return;
  }
  const ValueId y = b.Add("output", "reshape", {sum}, Ints("shape", shape));
  Shape per_channel(shape.size() - 1, 1);
  per_channel[0] = shape[1];
  const ValueId bias =
      b.Add("bias_channels", "reshape", {node.inputs[2]}, Ints("shape", per_channel));
  b.AddWriting("bias", "add", {y, bias}, node.outputs[0]);
}

// Python's floor division, for begin pads that may be negative.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((b - 1 - a) / b); }

// The GEMM of the weight viewed as [G, M/G * K, C/G] with x viewed as
// [N, G, C/G, P] (without G for one group): every product, once.
ValueId ColumnsProduct(DecompositionBuilder& b, const Node& node, const ConvTransposeSpec& spec,
                       int64_t taps) {
  const int64_t groups = spec.groups;
  const int64_t group_in = spec.in_channels / groups;
  const int64_t rows = spec.out_channels / groups * taps;
  const int64_t positions = NumElements(spec.window.input);
  const ValueId x_matrix =
      b.Add("x_matrix", "reshape", {node.inputs[0]},
            Ints("shape", groups == 1 ? Shape{spec.batch, group_in, positions}
                                      : Shape{spec.batch, groups, group_in, positions}));
  const ValueId weight_rows =
      b.Add("weight_rows", "reshape", {node.inputs[1]},
            Ints("shape", groups == 1 ? Shape{group_in, rows} : Shape{groups, group_in, rows}));
  const ValueId weight_matrix =
      b.Add("weight_matrix", "transpose", {weight_rows},
            Ints("perm", groups == 1 ? AttrInts{1, 0} : AttrInts{0, 2, 1}));
  return b.Add("columns", "matmul", {weight_matrix, x_matrix});
}

// Per spatial dim: output position o is full position f = o + pad_begin
// = q * stride + r (phase r); kernel position k reaches phase
// (k * dilation) % stride from input position q - (k * dilation) / stride.
// Phase sums cover q in [first, last), the columns padded (in input
// positions) by `before` and `after` so that every slice lies inside.
struct PhaseBounds {
  std::vector<int64_t> first, last, before, after;
};

PhaseBounds BoundsOf(const ConvTransposeSpec& spec) {
  PhaseBounds p;
  for (int d = 0; d < spec.window.num_spatial(); ++d) {
    const int64_t s = spec.window.strides[d];
    p.first.push_back(FloorDiv(spec.window.pads_begin[d], s));
    p.last.push_back(FloorDiv(spec.window.pads_begin[d] + spec.window.output[d] - 1, s) + 1);
    const int64_t most_shift = spec.window.dilations[d] * (spec.window.kernel[d] - 1) / s;
    p.before.push_back(std::max<int64_t>(0, most_shift - p.first.back()));
    p.after.push_back(std::max<int64_t>(0, p.last.back() - spec.window.input[d]));
  }
  return p;
}

// The GEMM's product as columns [N, M, K..., S...], padded by the bounds.
ValueId PaddedColumns(DecompositionBuilder& b, const ConvTransposeSpec& spec, ValueId product,
                      const PhaseBounds& p) {
  const int spatial = spec.window.num_spatial();
  Shape columns_shape = {spec.batch, spec.out_channels};
  columns_shape.insert(columns_shape.end(), spec.window.kernel.begin(), spec.window.kernel.end());
  columns_shape.insert(columns_shape.end(), spec.window.input.begin(), spec.window.input.end());
  const ValueId columns = b.Add("columns_taps", "reshape", {product}, Ints("shape", columns_shape));
  auto positive = [](int64_t v) { return v > 0; };
  if (std::none_of(p.before.begin(), p.before.end(), positive) &&
      std::none_of(p.after.begin(), p.after.end(), positive)) {
    return columns;
  }
  std::vector<int64_t> pads(2 + spatial, 0);
  pads.insert(pads.end(), p.before.begin(), p.before.end());
  pads.insert(pads.end(), 2 + spatial, 0);
  pads.insert(pads.end(), p.after.begin(), p.after.end());
  Attrs zeros = Ints("pads", std::move(pads));
  zeros.Set("value", 0.0);
  return b.Add("columns_pad", "pad", {columns}, std::move(zeros));
}

// Per phase (row-major), the sum of the slices of `columns` of the kernel
// positions that reach it, or none.
std::vector<std::optional<ValueId>> TapSums(DecompositionBuilder& b, const ConvTransposeSpec& spec,
                                            ValueId columns, const PhaseBounds& p,
                                            int64_t num_phases) {
  const int spatial = spec.window.num_spatial();
  const int64_t taps = spec.window.KernelSize();
  std::vector<std::optional<ValueId>> sums(num_phases);
  std::vector<int64_t> tap(spatial, 0);
  for (int64_t k = 0; k < taps; ++k) {
    std::vector<int64_t> starts, ends, axes;
    int64_t phase = 0;
    for (int d = 0; d < spatial; ++d) {
      starts.push_back(tap[d]);
      ends.push_back(tap[d] + 1);
      axes.push_back(2 + d);
      phase = phase * spec.window.strides[d] +
              tap[d] * spec.window.dilations[d] % spec.window.strides[d];
    }
    for (int d = 0; d < spatial; ++d) {
      const int64_t shift = tap[d] * spec.window.dilations[d] / spec.window.strides[d];
      starts.push_back(p.first[d] - shift + p.before[d]);
      ends.push_back(p.last[d] - shift + p.before[d]);
      axes.push_back(2 + spatial + d);
    }
    Attrs pick = Ints("starts", std::move(starts));
    pick.Set("ends", std::move(ends));
    pick.Set("axes", std::move(axes));
    const ValueId slice = b.Add(absl::StrCat("tap", k), "slice", {columns}, std::move(pick));
    std::optional<ValueId>& sum = sums[phase];
    sum = sum.has_value() ? b.Add(absl::StrCat("tap", k, "_add"), "add", {*sum, slice}) : slice;
    for (int d = spatial - 1; d >= 0 && ++tap[d] == spec.window.kernel[d]; --d) tap[d] = 0;
  }
  return sums;
}

// The phases [N, M, R, Q...] (R in row-major order of the strides) as
// [N, M, s..., Q...], transposed to [N, M, Q1, s1, Q2, s2, ...] and merged
// to full positions [first * s, last * s), of which the output is a slice.
ValueId InterleavePhases(DecompositionBuilder& b, const ConvTransposeSpec& spec,
                         const std::vector<ValueId>& phases, const Shape& phase_shape,
                         const PhaseBounds& p) {
  const int spatial = spec.window.num_spatial();
  ValueId full = phases[0];
  if (phases.size() > 1) {
    Attrs axis;
    axis.Set("axis", int64_t{2});
    full = b.Add("phases", "concat", phases, std::move(axis));
  }
  Shape split = {spec.batch, spec.out_channels};
  split.insert(split.end(), spec.window.strides.begin(), spec.window.strides.end());
  split.insert(split.end(), phase_shape.begin() + 3, phase_shape.end());
  AttrInts perm = {0, 1};
  Shape merged = {spec.batch, spec.out_channels};
  std::vector<int64_t> starts, ends, axes;
  for (int d = 0; d < spatial; ++d) {
    perm.push_back(2 + spatial + d);
    perm.push_back(2 + d);
    merged.push_back(phase_shape[3 + d] * spec.window.strides[d]);
    starts.push_back(spec.window.pads_begin[d] - p.first[d] * spec.window.strides[d]);
    ends.push_back(starts.back() + spec.window.output[d]);
    axes.push_back(2 + d);
  }
  full = b.Add("phases_split", "reshape", {full}, Ints("shape", split));
  full = b.Add("phases_interleave", "transpose", {full}, Ints("perm", std::move(perm)));
  full = b.Add("phases_merge", "reshape", {full}, Ints("shape", merged));
  Attrs crop = Ints("starts", std::move(starts));
  crop.Set("ends", std::move(ends));
  crop.Set("axes", std::move(axes));
  return b.Add("crop", "slice", {full}, std::move(crop));
}

// conv_transpose as a GEMM into columns and, per output phase, a sum of
// their slices (see the top).
absl::Status ColumnsConvTranspose(DecompositionBuilder& b, const Node& node,
                                  const ConvTransposeSpec& spec, const Shape& out_shape,
                                  DType dtype) {
  const int64_t taps = spec.window.KernelSize();
  if (taps > kMaxColumnTaps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the kernel has ", taps, " positions; loom decomposes kernels of at most 2^16 positions"));
  }
  const ValueId product = ColumnsProduct(b, node, spec, taps);
  const PhaseBounds bounds = BoundsOf(spec);
  const ValueId columns = PaddedColumns(b, spec, product, bounds);
  // Each phase [N, M, 1, Q...]: its slices' sum, or zeros when none reaches it.
  Shape phase_shape = {spec.batch, spec.out_channels, 1};
  for (int d = 0; d < spec.window.num_spatial(); ++d) {
    phase_shape.push_back(bounds.last[d] - bounds.first[d]);
  }
  const int64_t num_phases = NumElements(spec.window.strides);
  const std::vector<std::optional<ValueId>> sums = TapSums(b, spec, columns, bounds, num_phases);
  std::vector<ValueId> phases;
  for (int64_t r = 0; r < num_phases; ++r) {
    const std::string name = absl::StrCat("phase", r);
    phases.push_back(sums[r].has_value()
                         ? b.Add(name, "reshape", {*sums[r]}, Ints("shape", phase_shape))
                         : b.Add(name, "expand", {b.Scalar(absl::StrCat(name, "_zero"), 0, dtype)},
                                 Ints("shape", phase_shape)));
  }
  const ValueId y = InterleavePhases(b, spec, phases, phase_shape, bounds);
  WriteOutput(b, node, y, out_shape);
  return absl::OkStatus();
}

// x [N, C, S...] with every spatial element moved to position s * stride,
// zeros between and stride - 1 after the last: a size-1 dim after each
// strided spatial dim, padded to the stride, merged.
ValueId Interleave(DecompositionBuilder& b, ValueId x, const Shape& shape,
                   const ConvTransposeSpec& spec) {
  Shape split = {shape[0], shape[1]};
  Shape merged = split;
  std::vector<int64_t> ends = {0, 0};
  for (int d = 0; d < spec.window.num_spatial(); ++d) {
    split.push_back(shape[2 + d]);
    ends.push_back(0);
    if (spec.window.strides[d] > 1) {
      split.push_back(1);
      ends.push_back(spec.window.strides[d] - 1);
    }
    merged.push_back(shape[2 + d] * spec.window.strides[d]);
  }
  if (split.size() == shape.size()) return x;  // no stride
  std::vector<int64_t> pads(split.size(), 0);
  pads.insert(pads.end(), ends.begin(), ends.end());
  Attrs zeros = Ints("pads", std::move(pads));
  zeros.Set("value", 0.0);
  const ValueId viewed = b.Add("x_split", "reshape", {x}, Ints("shape", split));
  const ValueId padded = b.Add("x_interleave", "pad", {viewed}, std::move(zeros));
  return b.Add("x_merge", "reshape", {padded}, Ints("shape", merged));
}

// conv_transpose as the conv of the zero-interleaved input with the
// flipped, transposed weight (see the top).
void ConvOfInterleaved(DecompositionBuilder& b, const Node& node, const ConvTransposeSpec& spec,
                       const Shape& x_shape, const Shape& weight_shape) {
  const int spatial = spec.window.num_spatial();
  ValueId z = Interleave(b, node.inputs[0], x_shape, spec);
  // Pads of the conv over z (z has stride - 1 zeros after its last element).
  std::vector<int64_t> pads_begin, pads_end;
  std::vector<int64_t> starts, ends, axes;
  for (int d = 0; d < spatial; ++d) {
    const int64_t reach = spec.window.dilations[d] * (spec.window.kernel[d] - 1);
    const int64_t length = spec.window.input[d] * spec.window.strides[d];
    const int64_t begin = reach - spec.window.pads_begin[d];
    const int64_t end =
        reach - spec.window.pads_end[d] + spec.output_padding[d] - (spec.window.strides[d] - 1);
    pads_begin.push_back(std::max<int64_t>(begin, 0));
    pads_end.push_back(std::max<int64_t>(end, 0));
    if (begin < 0 || end < 0) {
      starts.push_back(std::max<int64_t>(-begin, 0));
      ends.push_back(length - std::max<int64_t>(-end, 0));
      axes.push_back(2 + d);
    }
  }
  if (!axes.empty()) {
    Attrs crop = Ints("starts", std::move(starts));
    crop.Set("ends", std::move(ends));
    crop.Set("axes", std::move(axes));
    z = b.Add("x_crop", "slice", {z}, std::move(crop));
  }
  // The weight [C, M/G, K...] as [M, C/G, K...], flipped.
  const int64_t groups = spec.groups;
  const int64_t group_in = spec.in_channels / groups;
  const int64_t group_out = spec.out_channels / groups;
  const Shape kernel(weight_shape.begin() + 2, weight_shape.end());
  Shape grouped = {groups, group_in, group_out};
  grouped.insert(grouped.end(), kernel.begin(), kernel.end());
  AttrInts perm = {0, 2, 1};
  for (int d = 0; d < spatial; ++d) perm.push_back(3 + d);
  Shape conv_weight = {spec.out_channels, group_in};
  conv_weight.insert(conv_weight.end(), kernel.begin(), kernel.end());
  ValueId w = b.Add("weight_groups", "reshape", {node.inputs[1]}, Ints("shape", grouped));
  w = b.Add("weight_transpose", "transpose", {w}, Ints("perm", std::move(perm)));
  w = b.Add("weight", "reshape", {w}, Ints("shape", conv_weight));
  std::vector<int64_t> flip_starts, flip_ends, flip_axes, flip_steps;
  for (int d = 0; d < spatial; ++d) {
    if (kernel[d] == 1) continue;
    flip_starts.push_back(kernel[d] - 1);
    flip_ends.push_back(std::numeric_limits<int64_t>::min());
    flip_axes.push_back(2 + d);
    flip_steps.push_back(-1);
  }
  if (!flip_axes.empty()) {
    Attrs flip = Ints("starts", std::move(flip_starts));
    flip.Set("ends", std::move(flip_ends));
    flip.Set("axes", std::move(flip_axes));
    flip.Set("steps", std::move(flip_steps));
    w = b.Add("weight_flip", "slice", {w}, std::move(flip));
  }
  std::vector<ValueId> inputs = {z, w};
  if (node.inputs.size() > 2) inputs.push_back(node.inputs[2]);
  pads_begin.insert(pads_begin.end(), pads_end.begin(), pads_end.end());
  Attrs attrs = Ints("pads", std::move(pads_begin));
  attrs.Set("dilations", AttrInts(spec.window.dilations.begin(), spec.window.dilations.end()));
  attrs.Set("group", groups);
  b.AddWriting("conv", "conv", inputs, node.outputs[0], std::move(attrs));
}

// The conv way for groups of one input channel (depthwise, or C = 1): the
// columns' GEMM would be an outer product, its columns K times the input.
// Also when the strides make more phases than the columns way emits nodes
// for.
bool UsesColumns(const ConvTransposeSpec& spec) {
  return spec.in_channels / spec.groups > 1 && NumElements(spec.window.strides) <= kMaxPhases;
}

absl::Status DecomposeConvTranspose(const Node& node, DecompositionBuilder& b) {
  LOOM_RETURN_IF_ERROR(CheckInputCount(node, 2, 3));
  std::vector<TensorType> in;  // copies: Add() moves values
  for (ValueId input : node.inputs) in.push_back(b.type(input));
  LOOM_ASSIGN_OR_RETURN(ConvTransposeSpec spec,
                        ReadConvTransposeSpec(node, in[0].shape, in[1].shape,
                                              in.size() > 2 ? &in[2].shape : nullptr));
  Shape out_shape = {spec.batch, spec.out_channels};
  out_shape.insert(out_shape.end(), spec.window.output.begin(), spec.window.output.end());
  if (NumElements(in[0].shape) == 0 || NumElements(in[1].shape) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "x ", ShapeToString(in[0].shape), " or the weight ", ShapeToString(in[1].shape),
        " is empty; loom compiles conv_transpose of non-empty tensors only"));
  }
  if (UsesColumns(spec)) {
    return ColumnsConvTranspose(b, node, spec, out_shape, in[0].dtype);
  }
  ConvOfInterleaved(b, node, spec, in[0].shape, in[1].shape);
  return absl::OkStatus();
}

constexpr Decomposition kConvTransposeDecompositions[] = {
    {"conv_transpose", DecomposeConvTranspose},
};

}  // namespace

absl::Span<const Decomposition> ConvTransposeDecompositions() {
  return kConvTransposeDecompositions;
}

}  // namespace loom
