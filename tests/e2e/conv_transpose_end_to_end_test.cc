// conv_transpose and the reflect and edge pads through the whole CPU path
// (decompose, lower, schedule, emit C++, native compile, run), compared
// with the reference interpreter. conv_transpose takes both of its ways:
// the columns (a GEMM, then per output phase a sum of slices of the
// columns) and the conv of the zero-interleaved input; 1-D, 2-D and 3-D,
// strides, dilations, pads (negative ones too), output_padding, groups.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

using Ints = std::vector<int64_t>;

// conv_transpose(x, a weight of `weight` shape [C, M/group, K...][, a bias
// of `out_channels`]) with `attrs`, an output; the weights are named after
// `seed`.
void AddConvTranspose(GraphBuilder& b, ValueId x, Shape weight, int64_t out_channels, bool bias,
                      Attrs attrs, uint64_t seed) {
  std::vector<ValueId> inputs = {x, b.Weight(absl::StrCat("w", seed), weight, seed)};
  if (bias) inputs.push_back(b.Weight(absl::StrCat("b", seed), {out_channels}, seed + 1));
  b.Output(b.Op("conv_transpose", std::move(inputs), std::move(attrs)));
}

// Groups of more than one input channel.
TEST(ConvTransposeEndToEndTest, Columns) {
  GraphBuilder b;
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 8, 5, 6});
  AddConvTranspose(
      b, x2, {8, 6, 3, 3}, 6, true,
      MakeAttrs(
          {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}),
      1);
  AddConvTranspose(b, x2, {8, 4, 2, 2}, 4, false, IntsAttr("strides", {2, 2}), 3);
  AddConvTranspose(b, x2, {8, 3, 3, 2}, 6, true,
                   MakeAttrs({{"strides", Ints{3, 2}},
                              {"dilations", Ints{2, 1}},
                              {"group", int64_t{2}},
                              {"pads", Ints{0, 2, 3, 1}}}),
                   5);
  // Negative pads (ONNX's output_shape past the full result).
  AddConvTranspose(b, x2, {8, 5, 3, 3}, 5, true,
                   MakeAttrs({{"strides", Ints{2, 2}}, {"pads", Ints{-1, 0, 1, -2}}}), 7);
  // Unstrided; pads beyond the kernel's reach.
  AddConvTranspose(b, x2, {8, 3, 3, 3}, 3, true, IntsAttr("pads", {1, 1, 1, 1}), 13);
  AddConvTranspose(b, x2, {8, 2, 2, 2}, 2, false,
                   MakeAttrs({{"strides", Ints{2, 1}}, {"pads", Ints{3, 2, 4, 0}}}), 15);
  const ValueId x1 = b.Input("x1", DType::kF32, {3, 6, 7});
  AddConvTranspose(b, x1, {6, 4, 5}, 4, true,
                   MakeAttrs({{"strides", Ints{3}}, {"pads", Ints{2, 1}}, {"dilations", Ints{2}}}),
                   9);
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 4, 3, 4, 2});
  AddConvTranspose(b, x3, {4, 3, 2, 3, 2}, 3, false,
                   MakeAttrs({{"strides", Ints{2, 1, 2}}, {"pads", Ints{0, 1, 0, 1, 0, 1}}}), 11);
  CompileRunAndCompare(std::move(b.graph()));
}

// Groups of one input channel: depthwise, with a multiplier, one input
// channel; unstrided and strided.
TEST(ConvTransposeEndToEndTest, ConvOfTheInterleavedInput) {
  GraphBuilder b;
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 6, 7, 5});
  const Attrs depthwise = MakeAttrs({{"group", int64_t{6}}});
  auto with = [&depthwise](std::initializer_list<std::pair<std::string, AttrValue>> more) {
    Attrs attrs = depthwise;
    for (const auto& [name, value] : more) attrs.Set(name, value);
    return attrs;
  };
  AddConvTranspose(b, x2, {6, 1, 3, 3}, 6, true, with({{"pads", Ints{1, 1, 1, 1}}}), 1);
  AddConvTranspose(b, x2, {6, 2, 2, 3}, 12, false,
                   with({{"dilations", Ints{2, 2}}, {"output_padding", Ints{1, 0}}}), 3);
  // Pads beyond the kernel's reach crop the input; negative ones add
  // positions.
  AddConvTranspose(b, x2, {6, 1, 2, 2}, 6, true, with({{"pads", Ints{2, 0, 3, 1}}}), 5);
  AddConvTranspose(b, x2, {6, 1, 3, 3}, 6, true, with({{"pads", Ints{-1, 0, 0, -2}}}), 7);
  AddConvTranspose(
      b, x2, {6, 1, 3, 3}, 6, true,
      with({{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}}),
      9);
  AddConvTranspose(b, x2, {6, 2, 4, 4}, 12, false,
                   with({{"strides", Ints{2, 3}}, {"pads", Ints{1, 0, 1, 2}}}), 11);
  const ValueId gray = b.Input("gray", DType::kF32, {1, 1, 6, 7});
  AddConvTranspose(b, gray, {1, 4, 3, 3}, 4, true,
                   MakeAttrs({{"strides", Ints{2, 2}}, {"pads", Ints{0, 1, 1, 0}}}), 13);
  const ValueId x1 = b.Input("x1", DType::kF32, {2, 3, 9});
  AddConvTranspose(b, x1, {3, 2, 4}, 6, true,
                   MakeAttrs({{"group", int64_t{3}}, {"pads", Ints{1, 2}}, {"strides", Ints{2}}}),
                   15);
  CompileRunAndCompare(std::move(b.graph()));
}

// A UNet-style decoder step: conv_transpose (2x2, stride 2), concat with the
// skip connection, relu.
TEST(ConvTransposeEndToEndTest, UpsamplingBlock) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {1, 16, 6, 6});
  const ValueId skip = b.Input("skip", DType::kF32, {1, 8, 12, 12});
  const ValueId up =
      b.Op("conv_transpose", {x, b.Weight("w", {16, 8, 2, 2}, 1, -0.3, 0.3), b.Weight("b", {8}, 2)},
           IntsAttr("strides", {2, 2}));
  b.Output(b.Op("relu", {b.Op("concat", {up, skip}, MakeAttrs({{"axis", int64_t{1}}}))}));
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(PadEndToEndTest, ReflectAndEdge) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 3, 5, 6});
  const ValueId xi = b.Input("xi", DType::kI32, {7});
  for (const char* mode : {"reflect", "edge"}) {
    Attrs spatial = IntsAttr("pads", {0, 0, 2, 3, 0, 0, 4, 1});
    spatial.Set("mode", std::string(mode));
    b.Output(b.Op("pad", {x}, spatial));
    // Every dim, one side only on some; the pad feeds a pointwise op.
    Attrs all = IntsAttr("pads", {1, 2, 0, 5, 0, 1, 3, 0});
    all.Set("mode", std::string(mode));
    b.Output(b.Op("exp", {b.Op("pad", {x}, all)}));
    Attrs ints = IntsAttr("pads", {6, 3});
    ints.Set("mode", std::string(mode));
    b.Output(b.Op("pad", {xi}, ints));
  }
  CompileRunAndCompare(std::move(b.graph()));
}

}  // namespace
}  // namespace loom
