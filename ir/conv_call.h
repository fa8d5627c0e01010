#ifndef LOOM_IR_CONV_CALL_H_
#define LOOM_IR_CONV_CALL_H_

#include <array>
#include <cstdint>
#include <optional>

#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// A 4-D operand of a convolution call, where its buffer holds it: element
// [i0][i1][i2][i3] at offset + sum_d i_d * strides[d].
struct ConvOperand {
  BufferId buffer = -1;
  int64_t offset = 0;
  std::array<int64_t, 4> dims = {};
  std::array<int64_t, 4> strides = {};
};

// A 2-D convolution node (ExternOp::kConv) as one call of a convolution
// library, without padding (the input is the padded image), in `groups`
// groups of channels (G; M / G output channels each, C / G input channels):
//   output[n][m][y][x] = sum over c < C / G, r, s of
//       input[n][g * C / G + c][y * strides[0] + r * dilations[0]][x * strides[1] + s *
//       dilations[1]]
//       * weight[m][c][r][s],  g = m / (M / G) the group of output channel m;
// input [N, C, H, W], weight [M, C / G, R, S], output [N, M, Y, X], f32.
struct ConvCall {
  ConvOperand input, weight, output;
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> dilations = {1, 1};
  int64_t groups = 1;
  // Rows and columns at the input's edges (top, left, bottom, right) known
  // to hold zeros (its buffer's Buffer::zero_border): a library may read
  // the input without them and pad it itself, as the pad that wrote them.
  std::array<int64_t, 4> zero_pads = {0, 0, 0, 0};
};

// The call that computes `node`, or nullopt when `node` is not such a
// convolution: pointwise loops (n, m, y, x), or (n, g, m, y, x) with the
// group outermost of the channel loops, or channels-last (n, y, x, m) or
// (n, y, x, g, m); reduction loops (c, r, s), a body
// of two direct f32 loads (the input's and the weight's, either first) and
// their product, summed; every index affine, a group stepping over its
// channels in each operand, each operand's rows unit-stride, and no two
// elements of an operand at one address. Matching ignores node.extern_op.
std::optional<ConvCall> MatchConv(const ComputeNode& node);

// The convolution `kernel` computes, when it is a lone ExternOp::kConv
// node that a call can compute, which the backends call instead of
// printing loops; with the zero pads its input's buffer has.
std::optional<ConvCall> KernelConv(const LoopProgram& program, const Kernel& kernel);

// The rows and columns of the conv input `input` (top, left, bottom, right)
// that lie in `buffer`'s zero border, where `input` walks the buffer's dims
// [N, C, H, W] or, channels-last, [N, H, W, C]; zeros where nothing is
// known.
std::array<int64_t, 4> ZeroPads(const Buffer& buffer, const ConvOperand& input);

}  // namespace loom

#endif  // LOOM_IR_CONV_CALL_H_
