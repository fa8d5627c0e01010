#include "ir/conv_call.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/expr.h"

namespace loom {
namespace {

// The node's loop variables, pointwise then reduction. A node without a
// group loop has kG of extent 1.
enum Loop { kN, kG, kM, kY, kX, kC, kR, kS, kNumLoops };

using Coefficients = std::array<int64_t, kNumLoops>;

// The coefficients of `index` over the node's loops, `loops` naming them in
// order (the first num_vars of them).
std::optional<Coefficients> Affine(Expr index, absl::Span<const Loop> loops, int num_vars,
                                   int64_t& constant) {
  std::array<int64_t, kNumLoops> by_position = {};
  if (!AffineCoefficients(index, absl::MakeSpan(by_position.data(), num_vars), constant)) {
    return std::nullopt;
  }
  Coefficients coefficients = {};
  for (int v = 0; v < num_vars; ++v) coefficients[loops[v]] = by_position[v];
  return coefficients;
}

// Whether every loop in `loops` whose extent is not 1 has a zero coefficient.
bool Ignores(const Coefficients& coefficients, const Coefficients& extents,
             std::initializer_list<Loop> loops) {
  for (Loop loop : loops) {
    if (extents[loop] != 1 && coefficients[loop] != 0) return false;
  }
  return true;
}

// Sets the stride of each dim of extent 1 (which no element uses) past the
// others, and checks that no two elements share an address: sorted by
// stride, each dim steps over all of the ones inside it.
bool FinishStrides(ConvOperand& operand) {
  int64_t end = 1;
  for (int d = 0; d < 4; ++d) {
    if (operand.strides[d] < 0) return false;
    if (operand.dims[d] > 1)
      end = std::max(end, SaturatingMul(operand.strides[d], operand.dims[d]));
  }
  std::vector<int> dims;
  for (int d = 0; d < 4; ++d) {
    if (operand.dims[d] == 1) {
      operand.strides[d] = end;
    } else {
      dims.push_back(d);
    }
  }
  std::sort(dims.begin(), dims.end(),
            [&](int a, int b) { return operand.strides[a] < operand.strides[b]; });
  int64_t inside = 1;
  for (int d : dims) {
    if (operand.strides[d] < inside) return false;
    inside = SaturatingMul(operand.strides[d], operand.dims[d]);
  }
  return inside <= kMaxTensorElements;
}

// The step along one of the input's spatial dims and the conv's stride and
// dilation there, from the coefficients of that dim's output loop and
// kernel loop: the step divides both.
bool SpatialDim(int64_t output_coefficient, int64_t output_extent, int64_t kernel_coefficient,
                int64_t kernel_extent, int64_t& step, int64_t& stride, int64_t& dilation) {
  const int64_t out = output_extent > 1 ? output_coefficient : 0;
  const int64_t kernel = kernel_extent > 1 ? kernel_coefficient : 0;
  if (out < 0 || kernel < 0) return false;
  step = std::gcd(out, kernel);
  if (step == 0) step = 1;
  stride = out == 0 ? 1 : out / step;
  dilation = kernel == 0 ? 1 : kernel / step;
  return true;
}

// The stride of the channel dim that `channel` (kC or kM) and kG index
// together, channel = g * extents[channel] + c: the group steps over its
// channels. Nullopt where it does not.
std::optional<int64_t> ChannelStride(const Coefficients& coefficients, const Coefficients& extents,
                                     Loop channel) {
  if (extents[kG] == 1) return coefficients[channel];
  const int64_t stride = coefficients[kG] / extents[channel];
  if (coefficients[kG] % extents[channel] != 0 ||
      (extents[channel] > 1 && coefficients[channel] != stride)) {
    return std::nullopt;
  }
  return stride;
}

// The call, taking `input` and `weight` as the loads' indices.
std::optional<ConvCall> MatchOperands(const ComputeNode& node, const Coefficients& extents,
                                      const Coefficients& input, int64_t input_offset,
                                      const Coefficients& weight, int64_t weight_offset,
                                      const Coefficients& output, int64_t output_offset) {
  if (!Ignores(input, extents, {kM}) || !Ignores(weight, extents, {kN, kY, kX})) {
    return std::nullopt;
  }
  const std::optional<int64_t> input_channel = ChannelStride(input, extents, kC);
  const std::optional<int64_t> weight_row = ChannelStride(weight, extents, kM);
  const std::optional<int64_t> output_channel = ChannelStride(output, extents, kM);
  if (!input_channel || !weight_row || !output_channel) return std::nullopt;
  ConvCall call;
  call.groups = extents[kG];
  const int64_t in_channels = extents[kG] * extents[kC];
  const int64_t out_channels = extents[kG] * extents[kM];
  int64_t row = 1, col = 1;
  if (!SpatialDim(input[kY], extents[kY], input[kR], extents[kR], row, call.strides[0],
                  call.dilations[0]) ||
      !SpatialDim(input[kX], extents[kX], input[kS], extents[kS], col, call.strides[1],
                  call.dilations[1])) {
    return std::nullopt;
  }
  const int64_t height =
      (extents[kY] - 1) * call.strides[0] + (extents[kR] - 1) * call.dilations[0] + 1;
  const int64_t width =
      (extents[kX] - 1) * call.strides[1] + (extents[kS] - 1) * call.dilations[1] + 1;
  call.input = {node.body[0].buffer,
                input_offset,
                {extents[kN], in_channels, height, width},
                {input[kN], *input_channel, row, col}};
  call.weight = {node.body[1].buffer,
                 weight_offset,
                 {out_channels, extents[kC], extents[kR], extents[kS]},
                 {*weight_row, weight[kC], weight[kR], weight[kS]}};
  call.output = {node.output,
                 output_offset,
                 {extents[kN], out_channels, extents[kY], extents[kX]},
                 {output[kN], *output_channel, output[kY], output[kX]}};
  if (input_offset < 0 || weight_offset < 0 || output_offset < 0 || !FinishStrides(call.input) ||
      !FinishStrides(call.weight) || !FinishStrides(call.output)) {
    return std::nullopt;
  }
  return call;
}

bool IsDirectF32Load(const ScalarOp& op) {
  return op.kind == ScalarOp::Kind::kLoad && op.args.empty() && op.dtype == DType::kF32;
}

// The call of `node` with its loops in the order `loops` names them.
std::optional<ConvCall> MatchLoops(const ComputeNode& node, absl::Span<const Loop> loops) {
  const std::vector<ScalarOp>& body = node.body;
  const int pointwise = static_cast<int>(node.ranges.size());
  Coefficients extents;
  extents.fill(1);
  const std::vector<int64_t> all = node.AllRanges();
  for (size_t v = 0; v < all.size(); ++v) extents[loops[v]] = all[v];
  const int num_vars = static_cast<int>(all.size());
  int64_t first_offset = 0, second_offset = 0, output_offset = 0;
  const std::optional<Coefficients> first = Affine(body[0].index, loops, num_vars, first_offset);
  const std::optional<Coefficients> second = Affine(body[1].index, loops, num_vars, second_offset);
  const std::optional<Coefficients> output =
      Affine(node.store_index, loops, pointwise, output_offset);
  if (!first.has_value() || !second.has_value() || !output.has_value()) return std::nullopt;
  if (std::optional<ConvCall> call = MatchOperands(node, extents, *first, first_offset, *second,
                                                   second_offset, *output, output_offset)) {
    return call;
  }
  std::optional<ConvCall> call = MatchOperands(node, extents, *second, second_offset, *first,
                                               first_offset, *output, output_offset);
  if (call.has_value()) std::swap(call->input.buffer, call->weight.buffer);
  return call;
}

}  // namespace

std::optional<ConvCall> MatchConv(const ComputeNode& node) {
  const std::vector<ScalarOp>& body = node.body;
  if (node.reduce != ReduceKind::kSum || (node.ranges.size() != 4 && node.ranges.size() != 5) ||
      node.reduction_ranges.size() != 3 || body.size() != 3 || node.root != 2) {
    return std::nullopt;
  }
  const ScalarOp& product = body[2];
  if (!IsDirectF32Load(body[0]) || !IsDirectF32Load(body[1]) ||
      product.kind != ScalarOp::Kind::kCall || product.fn != ScalarFn::kMul ||
      product.dtype != DType::kF32 || product.args != StepArgs{0, 1}) {
    return std::nullopt;
  }
  // The output's channels outside its image (NCHW), or innermost
  // (channels-last: passes/decompose_conv.cc's ChannelsLastConvCall).
  static constexpr Loop kChannelsFirst[] = {kN, kM, kY, kX, kC, kR, kS};
  static constexpr Loop kChannelsFirstGrouped[] = {kN, kG, kM, kY, kX, kC, kR, kS};
  static constexpr Loop kChannelsLast[] = {kN, kY, kX, kM, kC, kR, kS};
  static constexpr Loop kChannelsLastGrouped[] = {kN, kY, kX, kG, kM, kC, kR, kS};
  const bool grouped = node.ranges.size() == 5;
  for (absl::Span<const Loop> loops :
       {grouped ? absl::Span<const Loop>(kChannelsFirstGrouped) : kChannelsFirst,
        grouped ? absl::Span<const Loop>(kChannelsLastGrouped) : kChannelsLast}) {
    if (std::optional<ConvCall> call = MatchLoops(node, loops)) return call;
  }
  return std::nullopt;
}

std::optional<ConvCall> KernelConv(const LoopProgram& program, const Kernel& kernel) {
  if (kernel.nodes.size() != 1) return std::nullopt;
  const ComputeNode& node = program.nodes[kernel.nodes[0]];
  if (node.extern_op != ExternOp::kConv) return std::nullopt;
  std::optional<ConvCall> call = MatchConv(node);
  if (call.has_value())
    call->zero_pads = ZeroPads(program.buffers[call->input.buffer], call->input);
  return call;
}

std::array<int64_t, 4> ZeroPads(const Buffer& buffer, const ConvOperand& input) {
  const std::array<int64_t, 4> none = {0, 0, 0, 0};
  const std::vector<int64_t>& border = buffer.zero_border;
  const Shape& sizes = buffer.sizes;
  if (sizes.size() != 4 || border.size() != 8 || NumElements(sizes) == 0) return none;
  // The input must walk the buffer's own dims row-major, [N, C, H, W] or,
  // channels-last, [N, H, W, C]: `dim` maps the input's dims to them.
  const std::vector<int64_t> strides = ContiguousStrides(sizes);
  const bool channels_last = input.dims[1] > 1 && input.strides[1] == 1 && strides[3] == 1;
  const std::array<int, 4> dim =
      channels_last ? std::array<int, 4>{0, 3, 1, 2} : std::array<int, 4>{0, 1, 2, 3};
  int64_t corner[4];  // the buffer position of the input's first element
  int64_t rest = input.offset;
  for (int d = 0; d < 4; ++d) {
    corner[d] = rest / strides[d];
    rest %= strides[d];
  }
  for (int d = 0; d < 4; ++d) {
    const int b = dim[d];
    if (input.dims[d] > 1 && input.strides[d] != strides[b]) return none;
    if (corner[b] + input.dims[d] > sizes[b]) return none;
  }
  std::array<int64_t, 4> pads = none;
  for (int d : {2, 3}) {
    const int b = dim[d];
    const int64_t first = corner[b], end = corner[b] + input.dims[d];
    const int64_t top = std::max<int64_t>(0, border[b] - first);
    const int64_t bottom = std::max<int64_t>(0, end - (sizes[b] - border[4 + b]));
    if (top + bottom >= input.dims[d]) return none;  // no interior left
    pads[d - 2] = top;
    pads[d] = bottom;
  }
  return pads;
}

}  // namespace loom
