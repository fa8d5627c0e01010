// The convolution emitted kernels' conv calls run (dnnl_conv.inc), against
// plain loops in double precision: oneDNN's Winograd and direct paths (and
// loom's Winograd, where oneDNN may use AVX2 at most: dnnl_conv_avx2_test),
// strides, dilations, a batch, strided operands, zero pads taken as
// padding, weights that change at one address, and several threads at once.
#include "backends/cpp/dnnl_conv.inc"

#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace {

using loom_dnnl::LoomConv2d;
using loom_dnnl::Operand;

struct Shape {
  int64_t n, c, h, w, m, r, s, stride, dilation;
  int64_t row_padding = 0;  // extra elements per input row (a strided view)
  int64_t groups = 1;       // of channels: weights [m, c / groups, r, s]
  int64_t group_inputs() const { return c / groups; }
  int64_t out_h() const { return (h - dilation * (r - 1) - 1) / stride + 1; }
  int64_t out_w() const { return (w - dilation * (s - 1) - 1) / stride + 1; }
  Operand input() const {
    const int64_t row = w + row_padding;
    return {{n, c, h, w}, {c * h * row, h * row, row, 1}};
  }
  Operand weight() const {
    return {{m, group_inputs(), r, s}, {group_inputs() * r * s, r * s, s, 1}};
  }
  Operand output() const {
    return {{n, m, out_h(), out_w()}, {m * out_h() * out_w(), out_h() * out_w(), out_w(), 1}};
  }
};

std::vector<float> Random(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

// Each output of `shape` within a bound of the exact sum: 1e-6 of the sum of
// the terms' magnitudes. Winograd's transforms add a few roundings: up to
// 4e-7 here with loom's points, 2e-6 with Lavin and Gray's (which this bound
// would reject); oneDNN's direct path and Winograd stay below 3e-7.
void ExpectMatches(const Shape& shape, const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& y) {
  const Operand in = shape.input(), out = shape.output();
  for (int64_t n = 0; n < shape.n; ++n) {
    for (int64_t m = 0; m < shape.m; ++m) {
      const int64_t first_input = m / (shape.m / shape.groups) * shape.group_inputs();
      for (int64_t i = 0; i < shape.out_h(); ++i) {
        for (int64_t j = 0; j < shape.out_w(); ++j) {
          double sum = 0, magnitude = 0;
          for (int64_t c = 0; c < shape.group_inputs(); ++c) {
            for (int64_t r = 0; r < shape.r; ++r) {
              for (int64_t s = 0; s < shape.s; ++s) {
                const double term =
                    static_cast<double>(x[n * in.strides[0] + (first_input + c) * in.strides[1] +
                                          (i * shape.stride + r * shape.dilation) * in.strides[2] +
                                          j * shape.stride + s * shape.dilation]) *
                    w[((m * shape.group_inputs() + c) * shape.r + r) * shape.s + s];
                sum += term;
                magnitude += std::fabs(term);
              }
            }
          }
          const float got = y[n * out.strides[0] + m * out.strides[1] + i * out.strides[2] + j];
          ASSERT_NEAR(got, sum, 1e-6 * magnitude + 1e-7)
              << "n " << n << " m " << m << " at " << i << ", " << j;
        }
      }
    }
  }
}

void ExpectConvMatches(const Shape& shape) {
  LoomConv2d conv(shape.input(), shape.weight(), shape.output(), shape.stride, shape.stride,
                  shape.dilation, shape.dilation, shape.groups);
  const std::vector<float> x = Random(loom_dnnl::Span(shape.input()), 1);
  const std::vector<float> w = Random(loom_dnnl::Span(shape.weight()), 2);
  std::vector<float> y(loom_dnnl::Span(shape.output()));
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, w, y);
}

TEST(DnnlConvTest, ResNetConvWinogradWhereAvailable) {
  ExpectConvMatches({1, 64, 58, 58, 64, 3, 3, 1, 1});
}

TEST(DnnlConvTest, WiderChannelsSmallerImage) {
  ExpectConvMatches({1, 128, 30, 30, 128, 3, 3, 1, 1});
}

// Winograd's 4x4 blocks past the output's last row and column, a batch,
// input rows wider than the image and more output channels than input.
TEST(DnnlConvTest, PartialBlocksBatchAndStridedRows) {
  Shape shape = {2, 64, 15, 17, 72, 3, 3, 1, 1};
  shape.row_padding = 5;
  ExpectConvMatches(shape);
}

// One pair of Winograd's blocks, the second partial: fewer than the
// threads that share it in dnnl_conv_avx2_test.
TEST(DnnlConvTest, FewerBlocksThanThreads) { ExpectConvMatches({1, 64, 6, 7, 64, 3, 3, 1, 1}); }

TEST(DnnlConvTest, StrideTwoSevenBySevenStem) { ExpectConvMatches({2, 3, 37, 37, 16, 7, 7, 2, 1}); }

// RegNet's and ResNeXt's convs: groups of 8 channels, stride 1 and 2.
TEST(DnnlConvTest, GroupedChannels) {
  ExpectConvMatches({1, 48, 16, 16, 48, 3, 3, 1, 1, /*row_padding=*/0, /*groups=*/6});
  ExpectConvMatches({2, 32, 17, 17, 64, 3, 3, 2, 1, /*row_padding=*/3, /*groups=*/4});
}

TEST(DnnlConvTest, Dilation) { ExpectConvMatches({1, 16, 20, 21, 8, 3, 3, 1, 2}); }

TEST(DnnlConvTest, InputRowsWiderThanTheImage) {
  Shape shape = {1, 8, 12, 10, 4, 3, 3, 1, 1};
  shape.row_padding = 3;
  ExpectConvMatches(shape);
}

// An input whose edges hold zeros (a pad's), `pads` rows and columns of them
// (top, left, bottom, right), that the call takes as padding.
void ExpectConvWithZeroPadsMatches(const Shape& shape, const int64_t (&pads)[4]) {
  const int64_t zero_pads[4] = {pads[0], pads[1], pads[2], pads[3]};
  LoomConv2d conv(shape.input(), shape.weight(), shape.output(), shape.stride, shape.stride,
                  shape.dilation, shape.dilation, shape.groups, zero_pads);
  EXPECT_TRUE(conv.TakesPads() || conv.RunsLoomWinograd());
  std::vector<float> x = Random(loom_dnnl::Span(shape.input()), 1);
  const Operand in = shape.input();
  for (int64_t n = 0; n < shape.n; ++n) {
    for (int64_t c = 0; c < shape.c; ++c) {
      for (int64_t i = 0; i < shape.h; ++i) {
        for (int64_t j = 0; j < shape.w; ++j) {
          const bool edge =
              i < pads[0] || j < pads[1] || i >= shape.h - pads[2] || j >= shape.w - pads[3];
          if (edge) x[n * in.strides[0] + c * in.strides[1] + i * in.strides[2] + j] = 0;
        }
      }
    }
  }
  const std::vector<float> w = Random(loom_dnnl::Span(shape.weight()), 2);
  std::vector<float> y(loom_dnnl::Span(shape.output()));
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, w, y);
}

// DenseNet's 3x3 convs of 32 outputs (with the pads taken, oneDNN's
// Winograd on AVX-512), a ResNet conv, a stride-2 stem with a zero row
// past the last window (ceil mode), a strided, batched and grouped input
// with uneven pads.
TEST(DnnlConvTest, ZeroPadsAreTakenAsPadding) {
  ExpectConvWithZeroPadsMatches({1, 128, 16, 16, 32, 3, 3, 1, 1}, {1, 1, 1, 1});
  ExpectConvWithZeroPadsMatches({1, 64, 30, 30, 64, 3, 3, 1, 1}, {1, 1, 1, 1});
  ExpectConvWithZeroPadsMatches({1, 3, 38, 38, 16, 7, 7, 2, 1}, {3, 3, 4, 4});
  Shape shape = {2, 32, 19, 17, 64, 3, 3, 2, 1, /*row_padding=*/3, /*groups=*/4};
  ExpectConvWithZeroPadsMatches(shape, {1, 2, 1, 0});
}

TEST(DnnlConvTest, NewWeightsAtTheSameAddressAreUsed) {
  const Shape shape = {1, 32, 18, 18, 32, 3, 3, 1, 1};
  LoomConv2d conv(shape.input(), shape.weight(), shape.output(), 1, 1, 1, 1, 1);
  const std::vector<float> x = Random(loom_dnnl::Span(shape.input()), 3);
  std::vector<float> w = Random(loom_dnnl::Span(shape.weight()), 4);
  std::vector<float> y(loom_dnnl::Span(shape.output()));
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, w, y);
  w = Random(static_cast<int64_t>(w.size()), 5);  // same buffer, new values
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, w, y);
  w = Random(static_cast<int64_t>(w.size()), 6);  // and a model bound with them
  loom_weights_bound();
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, w, y);
}

// Between binds the weights at an address are those seen there before:
// not compared again (a bound model's weights must not change).
TEST(DnnlConvTest, WeightsAreComparedOnceABind) {
  const Shape shape = {1, 16, 10, 10, 16, 3, 3, 1, 1};
  LoomConv2d conv(shape.input(), shape.weight(), shape.output(), 1, 1, 1, 1, 1);
  const std::vector<float> x = Random(loom_dnnl::Span(shape.input()), 8);
  const std::vector<float> bound = Random(loom_dnnl::Span(shape.weight()), 9);
  std::vector<float> w = bound;
  std::vector<float> y(loom_dnnl::Span(shape.output()));
  loom_weights_bound();
  conv.Run(x.data(), w.data(), y.data());
  w[0] += 1;  // behind the runtime's back
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, bound, y);
  loom_weights_bound();
  conv.Run(x.data(), w.data(), y.data());
  ExpectMatches(shape, x, w, y);
}

TEST(DnnlConvTest, MoreWeightBuffersThanAreKept) {
  const Shape shape = {1, 16, 10, 10, 16, 3, 3, 1, 1};
  LoomConv2d conv(shape.input(), shape.weight(), shape.output(), 1, 1, 1, 1, 1);
  const std::vector<float> x = Random(loom_dnnl::Span(shape.input()), 7);
  std::vector<std::vector<float>> weights;
  // More than the 64 kept: the least recently used are replaced.
  for (uint32_t i = 0; i < 70; ++i)
    weights.push_back(Random(loom_dnnl::Span(shape.weight()), 20 + i));
  std::vector<float> y(loom_dnnl::Span(shape.output()));
  for (int round = 0; round < 2; ++round) {
    for (const std::vector<float>& w : weights) {
      conv.Run(x.data(), w.data(), y.data());
      ExpectMatches(shape, x, w, y);
    }
  }
}

TEST(DnnlConvTest, ThreadsRunOneCallSiteAtOnce) {
  const Shape shape = {1, 64, 18, 18, 64, 3, 3, 1, 1};
  LoomConv2d conv(shape.input(), shape.weight(), shape.output(), 1, 1, 1, 1, 1);
  const std::vector<float> w = Random(loom_dnnl::Span(shape.weight()), 6);
  std::vector<std::vector<float>> xs, ys;
  for (uint32_t t = 0; t < 4; ++t) {
    xs.push_back(Random(loom_dnnl::Span(shape.input()), 10 + t));
    ys.emplace_back(loom_dnnl::Span(shape.output()));
  }
  std::vector<std::thread> threads;
  for (size_t t = 0; t < xs.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) conv.Run(xs[t].data(), w.data(), ys[t].data());
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < xs.size(); ++t) ExpectMatches(shape, xs[t], w, ys[t]);
}

}  // namespace
