// conv_transpose (see ir/ops/conv.h) as ops that already lower, fuse and
// run fast, in one of two ways:
//
// - columns: one GEMM computes every product the op scatters, the weight
//   viewed as [G, M/G * K, C/G] (K the kernel positions) times x viewed as
//   [N, G, C/G, P] (P the input positions): the columns [N, M, K..., S...].
//   Column k of input position s belongs at output position
//   s * stride + k * dilation - pad_begin. The columns are spread out to
//   s * stride (zero-interleaved: a size-1 dim after each spatial dim,
//   padded to the stride, merged back) with whole strides of zeros around,
//   so that each kernel position's contribution is a plain slice (a view);
//   the output is the sum of those slices (one fused pointwise loop).
// - conv: the same output is the conv of the zero-interleaved x with the
//   weight transposed per group to [M, C/G, K...] and flipped along every
//   spatial dim, padded by dilation * (K - 1) - pads (cropped where that is
//   negative); that conv decomposes by its own rule (im2col GEMM or direct).
//   It multiplies the zeros too: stride^D times the products of the
//   columns' GEMM, but reads x once per kernel position where the columns
//   way writes and re-reads K times the output.
//
// Which: MEASUREMENTS_PENDING
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/ops/conv.h"
#include "passes/decomposition.h"

namespace loom {
namespace {

// Groups of at most this many input * output channels take the conv way,
// whose direct form suits them (see passes/decompose_conv.cc).
constexpr int64_t kConvMaxGroupSize = 8;
// The columns way emits a few nodes per kernel position.
constexpr int64_t kMaxColumnTaps = int64_t{1} << 16;

// The smallest multiple of `step` that is at least `value` (>= 0), in
// units of `step`.
int64_t WholeSteps(int64_t value, int64_t step) {
  return value <= 0 ? 0 : (value + step - 1) / step;
}

bool Strided(const ConvTransposeSpec& spec) {
  return std::any_of(spec.strides.begin(), spec.strides.end(), [](int64_t s) { return s > 1; });
}

// `value` [N, ch, ..., S...] (its last num_spatial dims the spatial ones,
// `sizes`) with every spatial element moved to position s * stride, zeros
// between, and `before` / `after` whole strides of zeros around: a size-1
// dim after each strided spatial dim, padded to the stride, then merged.
ValueId Interleave(DecompositionBuilder& b, ValueId value, const Shape& shape,
                   const ConvTransposeSpec& spec, absl::Span<const int64_t> before,
                   absl::Span<const int64_t> after, absl::string_view name) {
  const int spatial = spec.num_spatial();
  const size_t lead = shape.size() - spatial;
  Shape split(shape.begin(), shape.begin() + lead);
  std::vector<int64_t> begins(lead, 0), ends(lead, 0);
  Shape merged = split;
  bool pads = false;
  for (int d = 0; d < spatial; ++d) {
    split.push_back(shape[lead + d]);
    begins.push_back(before[d]);
    ends.push_back(after[d]);
    pads |= before[d] != 0 || after[d] != 0;
    if (spec.strides[d] > 1) {
      split.push_back(1);
      begins.push_back(0);
      ends.push_back(spec.strides[d] - 1);
      pads = true;
    }
    merged.push_back((shape[lead + d] + before[d] + after[d]) * spec.strides[d]);
  }
  if (!pads) return value;
  const ValueId viewed =
      b.Add(absl::StrCat(name, "_split"), "reshape", {value}, Ints("shape", split));
  begins.insert(begins.end(), ends.begin(), ends.end());
  Attrs zeros = Ints("pads", std::move(begins));
  zeros.Set("value", 0.0);
  const ValueId padded = b.Add(absl::StrCat(name, "_pad"), "pad", {viewed}, std::move(zeros));
  return b.Add(absl::StrCat(name, "_merge"), "reshape", {padded}, Ints("shape", merged));
}

// Writes `sum` (the output without its bias, of the output's element
// count) to the node's output of shape `shape`, adding the bias [M].
void WriteOutput(DecompositionBuilder& b, const Node& node, ValueId sum, const Shape& shape) {
  const bool has_bias = node.inputs.size() > 2;
  const ValueId y = has_bias ? b.Add("output", "reshape", {sum}, Ints("shape", shape)) : sum;
  if (!has_bias) {
    b.AddWriting("output", "reshape", {sum}, node.outputs[0], Ints("shape", shape));
    return;
  }
  Shape per_channel(shape.size() - 1, 1);
  per_channel[0] = shape[1];
  const ValueId bias =
      b.Add("bias_channels", "reshape", {node.inputs[2]}, Ints("shape", per_channel));
  b.AddWriting("bias", "add", {y, bias}, node.outputs[0]);
}

// conv_transpose as a GEMM into columns and a sum of their slices (see the
// top).
absl::Status ColumnsConvTranspose(DecompositionBuilder& b, const Node& node,
                                  const ConvTransposeSpec& spec, const Shape& out_shape) {
  const int spatial = spec.num_spatial();
  const int64_t taps = spec.KernelSize();
  if (taps > kMaxColumnTaps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the kernel has ", taps, " positions; loom decomposes kernels of at most 2^16"));
  }
  const int64_t groups = spec.groups;
  const int64_t group_in = spec.in_channels / groups;
  const int64_t rows = spec.out_channels / groups * taps;
  const int64_t positions = NumElements(spec.input);
  const ValueId x_matrix =
      b.Add("x_matrix", "reshape", {node.inputs[0]},
            Ints("shape", groups == 1 ? Shape{spec.batch, group_in, positions}
                                      : Shape{spec.batch, groups, group_in, positions}));
  const ValueId weight_rows =
      b.Add("weight_rows", "reshape", {node.inputs[1]},
            Ints("shape", groups == 1 ? Shape{group_in, rows} : Shape{groups, group_in, rows}));
  const ValueId weight_matrix = b.Add("weight_matrix", "transpose", {weight_rows},
                                      Ints("perm", groups == 1 ? AttrInts{1, 0}
                                                               : AttrInts{0, 2, 1}));
  const ValueId product = b.Add("columns", "matmul", {weight_matrix, x_matrix});
  // [N, M, K..., S...]
  Shape columns_shape = {spec.batch, spec.out_channels};
  columns_shape.insert(columns_shape.end(), spec.kernel.begin(), spec.kernel.end());
  columns_shape.insert(columns_shape.end(), spec.input.begin(), spec.input.end());
  const ValueId columns =
      b.Add("columns_taps", "reshape", {product}, Ints("shape", columns_shape));
  // Whole strides of zeros before and after, so that every kernel
  // position's slice lies inside.
  std::vector<int64_t> before, after;
  for (int d = 0; d < spatial; ++d) {
    const int64_t s = spec.strides[d];
    const int64_t reach = spec.dilations[d] * (spec.kernel[d] - 1);
    before.push_back(WholeSteps(reach - spec.pads_begin[d], s));
    const int64_t first = spec.pads_begin[d] + before.back() * s;  // kernel position 0
    after.push_back(WholeSteps(first + spec.output[d] - (spec.input[d] + before.back()) * s, s));
  }
  const ValueId spread = Interleave(b, columns, columns_shape, spec, before, after, "spread");
  std::optional<ValueId> sum;
  std::vector<int64_t> tap(spatial, 0);
  for (int64_t k = 0; k < taps; ++k) {
    std::vector<int64_t> starts, ends, axes;
    for (int d = 0; d < spatial; ++d) {
      starts.push_back(tap[d]);
      ends.push_back(tap[d] + 1);
      axes.push_back(2 + d);
    }
    for (int d = 0; d < spatial; ++d) {
      const int64_t start =
          spec.pads_begin[d] + before[d] * spec.strides[d] - tap[d] * spec.dilations[d];
      starts.push_back(start);
      ends.push_back(start + spec.output[d]);
      axes.push_back(2 + spatial + d);
    }
    Attrs pick = Ints("starts", std::move(starts));
    pick.Set("ends", std::move(ends));
    pick.Set("axes", std::move(axes));
    const ValueId slice = b.Add(absl::StrCat("tap", k), "slice", {spread}, std::move(pick));
    sum = sum.has_value() ? b.Add(absl::StrCat("tap", k, "_add"), "add", {*sum, slice}) : slice;
    for (int d = spatial - 1; d >= 0 && ++tap[d] == spec.kernel[d]; --d) tap[d] = 0;
  }
  WriteOutput(b, node, *sum, out_shape);
  return absl::OkStatus();
}

// conv_transpose as the conv of the zero-interleaved input with the
// flipped, transposed weight (see the top).
void ConvOfInterleaved(DecompositionBuilder& b, const Node& node, const ConvTransposeSpec& spec,
                       const Shape& x_shape, const Shape& weight_shape) {
  const int spatial = spec.num_spatial();
  const std::vector<int64_t> none(spatial, 0);
  ValueId z = Interleave(b, node.inputs[0], x_shape, spec, none, none, "x");
  // Pads of the conv over z (z has stride - 1 zeros after its last element).
  std::vector<int64_t> pads_begin, pads_end;
  std::vector<int64_t> starts, ends, axes;
  for (int d = 0; d < spatial; ++d) {
    const int64_t reach = spec.dilations[d] * (spec.kernel[d] - 1);
    const int64_t length = spec.input[d] * spec.strides[d];
    const int64_t begin = reach - spec.pads_begin[d];
    const int64_t end =
        reach - spec.pads_end[d] + spec.output_padding[d] - (spec.strides[d] - 1);
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
  attrs.Set("dilations", AttrInts(spec.dilations.begin(), spec.dilations.end()));
  attrs.Set("group", groups);
  b.AddWriting("conv", "conv", inputs, node.outputs[0], std::move(attrs));
}

bool UsesColumns(const ConvTransposeSpec& spec) {
  const int64_t group_size = spec.in_channels / spec.groups * (spec.out_channels / spec.groups);
  return Strided(spec) && group_size > kConvMaxGroupSize;
}

absl::Status DecomposeConvTranspose(const Node& node, DecompositionBuilder& b) {
  if (absl::Status s = CheckInputCount(node, 2, 3); !s.ok()) return s;
  const Shape x = b.type(node.inputs[0]).shape;  // copies: Add() moves values
  const Shape weight = b.type(node.inputs[1]).shape;
  const Shape bias = node.inputs.size() > 2 ? b.type(node.inputs[2]).shape : Shape{};
  absl::StatusOr<ConvTransposeSpec> spec =
      ReadConvTransposeSpec(node, x, weight, node.inputs.size() > 2 ? &bias : nullptr);
  if (!spec.ok()) return spec.status();
  Shape out_shape = {spec->batch, spec->out_channels};
  out_shape.insert(out_shape.end(), spec->output.begin(), spec->output.end());
  if (UsesColumns(*spec)) return ColumnsConvTranspose(b, node, *spec, out_shape);
  ConvOfInterleaved(b, node, *spec, x, weight);
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
