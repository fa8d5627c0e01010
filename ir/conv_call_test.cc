#include "ir/conv_call.h"

#include <array>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/sum_of_products_for_test.h"

namespace loom {
namespace {

using Dims = std::array<int64_t, 4>;

// A conv node: pointwise loops (n, m, y, x) = x0..x3 over `out`, reduction
// loops (c, r, s) = x4..x6 over `kernel`, summing the product of the loads
// of buffer 0 at `first` and buffer 1 at `second`, stored at `store`.
ComputeNode Conv(std::vector<int64_t> out, std::vector<int64_t> kernel, Expr first, Expr second,
                 Expr store) {
  return SumOfProducts(std::move(out), std::move(kernel), first, second, store);
}

class ConvCallTest : public ::testing::Test {
 protected:
  // sum of coefficient * variable terms plus a constant
  Expr Affine(std::vector<std::pair<int64_t, int>> terms, int64_t constant = 0) {
    Expr e = ctx_.Const(constant);
    for (auto [coefficient, var] : terms) e = ctx_.Add(e, ctx_.Mul(ctx_.Var(var), coefficient));
    return e;
  }
  // A padded image [2, 3, 10, 12] read at (n, c, 2y + r, x + 2s), the
  // weight [4, 3, 3, 3] at (m, c, r, s), an output [2, 4, 4, 8].
  Expr Image(int64_t offset = 0) {
    return Affine({{360, 0}, {120, 4}, {24, 2}, {12, 5}, {1, 3}, {2, 6}}, offset);
  }
  Expr Weight() { return Affine({{27, 1}, {9, 4}, {3, 5}, {1, 6}}); }
  Expr Output() { return Affine({{128, 0}, {32, 1}, {8, 2}, {1, 3}}); }
  ExprContext ctx_;
};

TEST_F(ConvCallTest, StridedDilatedConv) {
  const std::optional<ConvCall> call =
      MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3}, Image(5), Weight(), Output()));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->input.buffer, 0);
  EXPECT_EQ(call->input.offset, 5);
  // Rows: 2 * 3 + 2 * 1 + 1 = 9 of the 10 read; columns 7 + 2 * 2 + 1 = 12.
  EXPECT_EQ(call->input.dims, (Dims{2, 3, 9, 12}));
  EXPECT_EQ(call->input.strides, (Dims{360, 120, 12, 1}));
  EXPECT_EQ(call->strides, (std::array<int64_t, 2>{2, 1}));
  EXPECT_EQ(call->dilations, (std::array<int64_t, 2>{1, 2}));
  EXPECT_EQ(call->weight.buffer, 1);
  EXPECT_EQ(call->weight.dims, (Dims{4, 3, 3, 3}));
  EXPECT_EQ(call->weight.strides, (Dims{27, 9, 3, 1}));
  EXPECT_EQ(call->output.buffer, 2);
  EXPECT_EQ(call->output.dims, (Dims{2, 4, 4, 8}));
  EXPECT_EQ(call->output.strides, (Dims{128, 32, 8, 1}));
}

// The padded image above ([2, 3, 10, 12]) as a pad's output: zero rows
// and columns at its edges.
Buffer PaddedImage(std::vector<int64_t> zero_border) {
  Buffer buffer;
  buffer.sizes = {2, 3, 10, 12};
  buffer.zero_border = std::move(zero_border);
  return buffer;
}

TEST_F(ConvCallTest, ZeroPadsAreTheBorderTheInputCovers) {
  const std::optional<ConvCall> call =
      MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3}, Image(), Weight(), Output()));
  ASSERT_TRUE(call.has_value());  // rows 0-8, columns 0-11
  using Pads = std::array<int64_t, 4>;
  EXPECT_EQ(ZeroPads(PaddedImage({0, 0, 1, 2, 0, 0, 1, 3}), call->input), (Pads{1, 2, 0, 3}));
  EXPECT_EQ(ZeroPads(PaddedImage({0, 0, 2, 1, 0, 0, 2, 1}), call->input), (Pads{2, 1, 1, 1}));
  // Nothing known, or no interior left.
  EXPECT_EQ(ZeroPads(PaddedImage({}), call->input), (Pads{0, 0, 0, 0}));
  EXPECT_EQ(ZeroPads(PaddedImage({0, 0, 5, 0, 0, 0, 5, 0}), call->input), (Pads{0, 0, 0, 0}));
  // A buffer of no elements (rows of none) has no layout to walk.
  Buffer empty = PaddedImage({0, 0, 1, 1, 0, 0, 1, 1});
  empty.sizes[3] = 0;
  EXPECT_EQ(ZeroPads(empty, call->input), (Pads{0, 0, 0, 0}));
}

TEST_F(ConvCallTest, ZeroPadsNeedTheBuffersOwnLayout) {
  // The input starting at row 1: its first row is the buffer's second.
  std::optional<ConvCall> call =
      MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3}, Image(12), Weight(), Output()));
  ASSERT_TRUE(call.has_value());
  using Pads = std::array<int64_t, 4>;
  EXPECT_EQ(ZeroPads(PaddedImage({0, 0, 2, 1, 0, 0, 1, 1}), call->input), (Pads{1, 1, 1, 1}));
  // Its rows two of the buffer's apart: not the buffer's layout.
  call->input.strides[2] = 24;
  EXPECT_EQ(ZeroPads(PaddedImage({0, 0, 2, 1, 0, 0, 1, 1}), call->input), (Pads{0, 0, 0, 0}));
}

// The same conv channels-last (passes/decompose_conv.cc's
// ChannelsLastConvCall): pointwise loops (n, y, x, m) over [2, 4, 8, 4],
// the image [2, 10, 12, 3] read at (n, 2y + r, x + 2s, c), the output [2,
// 4, 8, 4]; its zero pads from the same border as a [N, H, W, C] buffer's.
TEST_F(ConvCallTest, ChannelsLastConv) {
  const Expr image = Affine({{360, 0}, {72, 1}, {36, 5}, {3, 2}, {6, 6}, {1, 4}});
  const Expr weight = Affine({{27, 3}, {9, 4}, {3, 5}, {1, 6}});
  const Expr output = Affine({{128, 0}, {32, 1}, {4, 2}, {1, 3}});
  const std::optional<ConvCall> call =
      MatchConv(Conv({2, 4, 8, 4}, {3, 3, 3}, image, weight, output));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->input.dims, (Dims{2, 3, 9, 12}));
  EXPECT_EQ(call->input.strides, (Dims{360, 1, 36, 3}));
  EXPECT_EQ(call->strides, (std::array<int64_t, 2>{2, 1}));
  EXPECT_EQ(call->dilations, (std::array<int64_t, 2>{1, 2}));
  EXPECT_EQ(call->weight.dims, (Dims{4, 3, 3, 3}));
  EXPECT_EQ(call->output.dims, (Dims{2, 4, 4, 8}));
  EXPECT_EQ(call->output.strides, (Dims{128, 1, 32, 4}));
  Buffer buffer;
  buffer.sizes = {2, 10, 12, 3};
  buffer.zero_border = {0, 1, 2, 0, 0, 1, 3, 0};
  EXPECT_EQ(ZeroPads(buffer, call->input), (std::array<int64_t, 4>{1, 2, 0, 3}));
  // As an NCHW buffer of those sizes it is not the input's layout.
  buffer.sizes = {2, 3, 10, 12};
  buffer.zero_border = {0, 0, 1, 2, 0, 0, 1, 3};
  EXPECT_EQ(ZeroPads(buffer, call->input), (std::array<int64_t, 4>{0, 0, 0, 0}));
}

TEST_F(ConvCallTest, WeightLoadedFirst) {
  const std::optional<ConvCall> call =
      MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3}, Weight(), Image(), Output()));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->input.buffer, 1);
  EXPECT_EQ(call->weight.buffer, 0);
}

TEST_F(ConvCallTest, BatchOfOneTakesAnyStride) {
  // n has extent 1: its coefficient (none here) does not matter.
  const std::optional<ConvCall> call =
      MatchConv(Conv({1, 4, 4, 8}, {3, 3, 3}, Affine({{120, 4}, {24, 2}, {12, 5}, {1, 3}, {2, 6}}),
                     Weight(), Affine({{32, 1}, {8, 2}, {1, 3}})));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->input.dims[0], 1);
}

TEST_F(ConvCallTest, RefusesWhatIsNoConv) {
  // The weight varies with the output position.
  EXPECT_FALSE(MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3}, Image(),
                              Affine({{27, 1}, {9, 4}, {3, 5}, {1, 6}, {1, 3}}), Output()))
                   .has_value());
  // The image varies with the output channel.
  EXPECT_FALSE(
      MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3},
                     Affine({{360, 0}, {120, 4}, {24, 2}, {12, 5}, {1, 3}, {2, 6}, {1, 1}}),
                     Weight(), Output()))
          .has_value());
  // Two output positions at one address.
  EXPECT_FALSE(MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3}, Image(), Weight(),
                              Affine({{128, 0}, {32, 1}, {4, 2}, {1, 3}})))
                   .has_value());
  // A channel stride that overlaps the rows.
  EXPECT_FALSE(MatchConv(Conv({2, 4, 4, 8}, {3, 3, 3},
                              Affine({{360, 0}, {12, 4}, {24, 2}, {12, 5}, {1, 3}, {2, 6}}),
                              Weight(), Output()))
                   .has_value());
  // Three pointwise loops: no conv of this shape.
  EXPECT_FALSE(
      MatchConv(Conv({4, 4, 8}, {3, 3, 3}, Affine({{120, 3}, {24, 1}, {12, 4}, {1, 2}}),
                     Affine({{27, 0}, {9, 3}, {3, 4}, {1, 5}}), Affine({{32, 0}, {8, 1}, {1, 2}})))
          .has_value());
}

// Pointwise loops (n, g, m, y, x) = x0..x4 and reduction loops (c, r, s) =
// x5..x7: 2 groups of 2 input and 3 output channels, an image [1, 4, 6, 6]
// read at (n, 2g + c, y + r, x + s), the weight [6, 2, 3, 3] at (3g + m, c,
// r, s), the output [1, 6, 4, 4] at (n, 3g + m, y, x).
TEST_F(ConvCallTest, GroupedConv) {
  const Expr image = Affine({{144, 0}, {72, 1}, {6, 3}, {1, 4}, {36, 5}, {6, 6}, {1, 7}});
  const Expr weight = Affine({{54, 1}, {18, 2}, {9, 5}, {3, 6}, {1, 7}});
  const Expr output = Affine({{96, 0}, {48, 1}, {16, 2}, {4, 3}, {1, 4}});
  const std::optional<ConvCall> call =
      MatchConv(Conv({1, 2, 3, 4, 4}, {2, 3, 3}, image, weight, output));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->groups, 2);
  EXPECT_EQ(call->input.dims, (Dims{1, 4, 6, 6}));
  EXPECT_EQ(call->input.strides[1], 36);
  EXPECT_EQ(call->weight.dims, (Dims{6, 2, 3, 3}));
  EXPECT_EQ(call->weight.strides, (Dims{18, 9, 3, 1}));
  EXPECT_EQ(call->output.dims, (Dims{1, 6, 4, 4}));
  EXPECT_EQ(call->output.strides, (Dims{96, 16, 4, 1}));

  // A group that does not step over its input channels (2g + c read as 3g + c).
  EXPECT_FALSE(MatchConv(Conv({1, 2, 3, 4, 4}, {2, 3, 3},
                              Affine({{144, 0}, {108, 1}, {6, 3}, {1, 4}, {36, 5}, {6, 6}, {1, 7}}),
                              weight, output))
                   .has_value());
  // Nor over its output channels.
  EXPECT_FALSE(MatchConv(Conv({1, 2, 3, 4, 4}, {2, 3, 3}, image, weight,
                              Affine({{96, 0}, {64, 1}, {16, 2}, {4, 3}, {1, 4}})))
                   .has_value());
}

TEST_F(ConvCallTest, RefusesAnotherProduct) {
  ComputeNode node = Conv({2, 4, 4, 8}, {3, 3, 3}, Image(), Weight(), Output());
  node.body[2].fn = ScalarFn::kAdd;
  EXPECT_FALSE(MatchConv(node).has_value());
  node = Conv({2, 4, 4, 8}, {3, 3, 3}, Image(), Weight(), Output());
  node.reduce = ReduceKind::kMax;
  EXPECT_FALSE(MatchConv(node).has_value());
  node = Conv({2, 4, 4, 8}, {3, 3, 3}, Image(), Weight(), Output());
  for (ScalarOp& op : node.body) op.dtype = DType::kF64;
  EXPECT_FALSE(MatchConv(node).has_value());
}

}  // namespace
}  // namespace loom
