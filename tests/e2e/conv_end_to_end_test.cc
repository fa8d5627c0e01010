// conv, max_pool and average_pool through the whole CPU path (decompose
// into im2col GEMMs, direct sums or conv calls, lower, schedule, emit C++,
// native compile, run), compared with the reference interpreter: 1-D, 2-D and 3-D,
// strides, dilations, asymmetric pads, groups, depthwise, ceil_mode, pads
// counted or not, and NaN and infinities in the pools' inputs. Each test
// builds one graph of many nodes, so the native compiler runs once per test.

#include <cstdint>
#include <deque>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpp/artifact.h"
#include "backends/cpp/dnnl_conv_text.h"
#include "backends/cpp/executable.h"
#include "backends/cpp/prebuilt_objects.h"
#include "gtest/gtest.h"
#include "ir/file_io.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/tensor.h"
#include "runtime/native_library.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

using Ints = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// conv(x, a weight of `weight` shape[, a bias]) with `attrs`, an output;
// the weights are named after `seed`.
void AddConv(GraphBuilder& b, ValueId x, Shape weight, bool bias, Attrs attrs, uint64_t seed) {
  std::vector<ValueId> inputs = {x, b.Weight(absl::StrCat("w", seed), weight, seed)};
  if (bias) inputs.push_back(b.Weight(absl::StrCat("b", seed), {weight[0]}, seed + 1));
  b.Output(b.Op("conv", std::move(inputs), std::move(attrs)));
}

TEST(ConvEndToEndTest, Im2colConvolutions) {
  GraphBuilder b;
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 8, 9, 10});
  AddConv(b, x2, {12, 8, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1}), 1);
  Attrs strided = MakeAttrs({{"strides", Ints{2, 3}}, {"pads", Ints{0, 2, 1, 0}}});
  AddConv(b, x2, {6, 8, 3, 2}, false, strided, 3);
  AddConv(b, x2, {10, 4, 3, 3}, true, MakeAttrs({{"group", int64_t{2}}, {"dilations", Ints{2, 1}}}),
          5);
  AddConv(b, x2, {16, 8, 1, 1}, true, {}, 7);
  AddConv(b, x2, {16, 8, 1, 1}, false, IntsAttr("strides", {2, 2}), 9);
  const ValueId gray = b.Input("gray", DType::kF32, {1, 1, 12, 13});
  AddConv(b, gray, {8, 1, 3, 3}, true, IntsAttr("pads", {2, 0, 0, 1}), 17);
  const ValueId x1 = b.Input("x1", DType::kF32, {3, 6, 17});
  AddConv(b, x1, {7, 6, 5}, true,
          MakeAttrs({{"dilations", Ints{3}}, {"pads", Ints{2, 4}}, {"strides", Ints{2}}}), 11);
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 4, 5, 6, 7});
  AddConv(b, x3, {6, 4, 3, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1, 1, 1}), 13);
  AddConv(b, x3, {5, 4, 2, 2, 2}, false, IntsAttr("strides", {2, 2, 2}), 15);
  CompileRunAndCompare(std::move(b.graph()));
}

// Stride 1, one group, 16 channels or more: gemm calls per kernel position
// over the padded image, on its padded width (decompose_conv.cc).
TEST(ConvEndToEndTest, ShiftedConvolutions) {
  GraphBuilder b;
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 16, 9, 10});
  AddConv(b, x2, {12, 16, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1}), 1);
  AddConv(b, x2, {8, 16, 3, 3}, false,
          MakeAttrs({{"dilations", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}}), 3);
  const ValueId x1 = b.Input("x1", DType::kF32, {2, 16, 20});
  AddConv(b, x1, {8, 16, 5}, true, MakeAttrs({{"dilations", Ints{2}}, {"pads", Ints{4, 4}}}), 5);
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 16, 3, 20, 40});
  AddConv(b, x3, {6, 16, 3, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1, 1, 1}), 7);
  // The same 2-D conv with the weight an input: im2col.
  const ValueId w = b.Input("w", DType::kF32, {12, 16, 3, 3});
  b.Output(b.Op("conv", {x2, w}, IntsAttr("pads", {1, 1, 1, 1})));
  CompileRunAndCompare(std::move(b.graph()));
}

// 2-D f32 convs with a known weight as oneDNN's convolution
// (ir/conv_call.h, dnnl_conv.inc): its Winograd (64 channels, 3x3, stride
// 1) and direct paths; strides, dilations, asymmetric pads, a batch, a
// bias; another conv of the same shapes (one call site, two weights);
// grouped convs (two groups, and RegNet's groups of 8 channels at stride 1
// and 2); and one of a run-time weight, which is no call.
TEST(ConvEndToEndTest, ConvCalls) {
  GraphBuilder b;
  const ValueId image = b.Input("image", DType::kF32, {1, 64, 14, 14});
  AddConv(b, image, {64, 64, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1}), 1);
  AddConv(b, image, {64, 64, 3, 3}, false, IntsAttr("pads", {1, 1, 1, 1}), 3);
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 8, 19, 17});
  AddConv(b, x2, {16, 8, 7, 7}, true,
          MakeAttrs({{"strides", Ints{2, 2}}, {"pads", Ints{3, 3, 3, 3}}}), 5);
  AddConv(
      b, x2, {6, 8, 3, 2}, false,
      MakeAttrs({{"strides", Ints{2, 3}}, {"pads", Ints{0, 2, 1, 0}}, {"dilations", Ints{2, 1}}}),
      7);
  AddConv(b, x2, {4, 8, 5, 5}, true, {}, 9);
  const ValueId w = b.Input("w", DType::kF32, {12, 8, 3, 3});
  b.Output(b.Op("conv", {x2, w}, IntsAttr("pads", {1, 1, 1, 1})));
  AddConv(b, x2, {10, 4, 3, 3}, true, MakeAttrs({{"group", int64_t{2}}}), 11);
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 48, 16, 16});
  AddConv(b, x3, {48, 8, 3, 3}, true,
          MakeAttrs({{"group", int64_t{6}}, {"pads", Ints{1, 1, 1, 1}}}), 13);
  AddConv(b, x3, {48, 8, 3, 3}, false,
          MakeAttrs({{"group", int64_t{6}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}),
          15);
  EndToEndOptions options;
  options.conv_calls = true;
  CompileRunAndCompare(std::move(b.graph()), options);
}

// Conv calls read their operands' shapes as shape constants: the kernels
// of a model at other batches are one template (backends/cpp/
// shape_templates.h), whose call site keeps a convolution per batch. The
// executables of three batches, alive at once on one library, each give
// the interpreter's results, run in turns.
TEST(ConvEndToEndTest, ConvCallsOfOtherBatchesShareOneNativeCompile) {
  const std::string cache = TestCacheDir() + "/conv_batches";
  std::deque<Module> modules;  // whose weights the executables read in place
  std::vector<cpp::CppExecutable> executables;
  std::vector<Graph> graphs;  // as built, to judge the results against
  std::vector<std::vector<Tensor>> inputs;
  for (const int64_t batch : {2, 3, 5}) {
    SCOPED_TRACE(absl::StrCat("batch ", batch));
    GraphBuilder b;
    const ValueId image = b.Input("image", DType::kF32, {batch, 32, 12, 12});
    AddConv(b, image, {32, 32, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1}), 1);
    Graph graph = std::move(b.graph());
    ASSERT_TRUE(InferShapes(graph).ok());
    inputs.push_back(MakeInputs(graph));
    graphs.push_back(graph);
    absl::StatusOr<Module> module = EmitModule(std::move(graph), "", 4096, /*conv_calls=*/true);
    ASSERT_TRUE(module.ok()) << module.status();
    ASSERT_NE(module->source->text.find("loom_dnnl_conv_at"), std::string::npos);
    modules.push_back(*std::move(module));
    absl::StatusOr<cpp::CppExecutable> executable =
        cpp::CppExecutable::Create(modules.back(), cache);
    ASSERT_TRUE(executable.ok()) << executable.status();
    EXPECT_EQ(executable->shape_template(), batch != 2);
    EXPECT_EQ(executable->cache_hit(), batch == 5);
    executables.push_back(*std::move(executable));
  }
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < executables.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("executable ", i, ", round ", round));
      absl::StatusOr<std::vector<Tensor>> actual = executables[i].Run(inputs[i]);
      ASSERT_TRUE(actual.ok()) << actual.status();
      // As CompileRunAndCompare judges conv calls: oneDNN's Winograd
      // (AVX-512) is off the float32 interpreter by more than the fixed
      // tolerance where the 288-term sums cancel.
      ExpectPassesCheck(graphs[i], inputs[i], *actual);
    }
  }
}

// The object of this machine's level that was compiled when loom was built
// (backends/cpp/prebuilt_objects.h), if one was.
std::optional<std::string_view> PrebuiltConvolutionForThisMachine() {
  std::optional<std::string_view> chosen;
  for (const cpp::PrebuiltObject& object : cpp::PrebuiltObjects()) {
    if (std::optional<std::string_view> bytes =
            cpp::PrebuiltObjectFor(object.source, object.Command(), HostCpuFeatures())) {
      chosen = bytes;
    }
  }
  return chosen;
}

// The default pipeline's conv calls link the oneDNN convolution compiled
// when loom was built, not compiled again: the pipeline's command for it is
// the one that compiled those (backends/cpp/BUILD).
TEST(ConvEndToEndTest, ConvCallsLinkThePrebuiltConvolution) {
  const std::optional<std::string_view> prebuilt = PrebuiltConvolutionForThisMachine();
  if (!prebuilt.has_value()) GTEST_SKIP() << "none prebuilt for this machine";
  GraphBuilder b;
  const ValueId image = b.Input("image", DType::kF32, {1, 64, 14, 14});
  AddConv(b, image, {64, 64, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1}), 1);
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  absl::StatusOr<Module> module = EmitModule(std::move(b.graph()), "", 4096, /*conv_calls=*/true);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_EQ(module->source->support_sources, std::vector<std::string>{cpp::kDnnlConvSupport});
  const std::string cache = TestCacheDir() + "/prebuilt";
  std::filesystem::remove_all(cache);
  ASSERT_TRUE(cpp::CompileModule(*module, cache).ok());
  int objects = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache)) {
    if (entry.path().extension() != ".o") continue;
    ++objects;
    absl::StatusOr<std::string> bytes = ReadFileBytes(entry.path());
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_TRUE(*bytes == *prebuilt) << entry.path() << " is not the prebuilt object";
  }
  EXPECT_EQ(objects, 1);
}

TEST(ConvEndToEndTest, DirectConvolutions) {
  GraphBuilder b;
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 6, 11, 9});
  // Depthwise, padded; with a multiplier, strided.
  AddConv(b, x2, {6, 1, 3, 3}, true, MakeAttrs({{"group", int64_t{6}}, {"pads", Ints{1, 1, 1, 1}}}),
          1);
  AddConv(b, x2, {12, 1, 3, 3}, false, MakeAttrs({{"group", int64_t{6}}, {"strides", Ints{2, 2}}}),
          3);
  // Two channels per group, dilated.
  AddConv(b, x2, {9, 2, 2, 2}, true, MakeAttrs({{"group", int64_t{3}}, {"dilations", Ints{2, 3}}}),
          5);
  const ValueId x1 = b.Input("x1", DType::kF32, {2, 4, 15});
  AddConv(b, x1, {4, 1, 5}, true, MakeAttrs({{"group", int64_t{4}}, {"pads", Ints{2, 2}}}), 9);
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 3, 5, 6, 4});
  AddConv(b, x3, {3, 1, 3, 3, 3}, true,
          MakeAttrs({{"group", int64_t{3}}, {"pads", Ints{1, 1, 1, 1, 1, 1}}}), 11);
  CompileRunAndCompare(std::move(b.graph()));
}

// Stride 1 and as many output columns as input columns: the direct sums
// read the input flat, rows back to back, and mask the terms that would
// read a neighbouring row's end. Infinities and NaN at the ends of rows
// must reach only the outputs whose windows hold them (a mask that
// multiplied would turn 0 * inf into NaN next door).
TEST(ConvEndToEndTest, DirectConvolutionsOnFlatRows) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 4, 7, 9});
  AddConv(b, x, {4, 1, 3, 3}, true, MakeAttrs({{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}}),
          1);
  // A multiplier of 2, pads all on the left and at the bottom.
  AddConv(b, x, {8, 1, 3, 3}, false, MakeAttrs({{"group", int64_t{4}}, {"pads", Ints{0, 2, 1, 0}}}),
          3);
  // Dilated along the rows; two channels per group; a 5x5 kernel.
  AddConv(b, x, {4, 1, 2, 3}, true,
          MakeAttrs({{"group", int64_t{4}}, {"dilations", Ints{2, 2}}, {"pads", Ints{1, 2, 1, 2}}}),
          5);
  AddConv(b, x, {4, 2, 3, 3}, true, MakeAttrs({{"group", int64_t{2}}, {"pads", Ints{1, 1, 1, 1}}}),
          7);
  AddConv(b, x, {4, 1, 5, 5}, true, MakeAttrs({{"group", int64_t{4}}, {"pads", Ints{2, 2, 2, 2}}}),
          9);
  EndToEndOptions options;
  options.fill = [](size_t, Tensor& t) {
    // The first and last columns of a few rows (rows of 9).
    const double specials[] = {kInf, -kInf, kNan, kInf};
    const int64_t at[] = {8, 9, 9 * 12 + 8, 9 * 30};
    for (int k = 0; k < 4; ++k) t.SetDouble(at[k], specials[k]);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST(ConvEndToEndTest, Pools) {
  GraphBuilder b;
  const ValueId x2 = b.Input("x2", DType::kF32, {2, 3, 9, 8});
  for (const char* op : {"max_pool", "average_pool"}) {
    b.Output(b.Op(
        op, {x2},
        MakeAttrs(
            {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})));
    b.Output(b.Op(
        op, {x2},
        MakeAttrs(
            {{"kernel_shape", Ints{2, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}})));
    b.Output(b.Op(op, {x2}, IntsAttr("kernel_shape", {2, 2})));
  }
  b.Output(
      b.Op("max_pool", {x2}, MakeAttrs({{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 3}}})));
  b.Output(b.Op("average_pool", {x2},
                MakeAttrs({{"kernel_shape", Ints{3, 3}},
                           {"pads", Ints{1, 0, 2, 1}},
                           {"count_include_pad", int64_t{1}}})));
  // With indices (row- and column-major).
  for (int64_t order : {0, 1}) {
    for (ValueId out : b.Ops("max_pool", {x2}, 2,
                             MakeAttrs({{"kernel_shape", Ints{3, 2}},
                                        {"strides", Ints{2, 1}},
                                        {"pads", Ints{1, 0, 1, 1}},
                                        {"storage_order", order}}))) {
      b.Output(out);
    }
  }
  const ValueId x1 = b.Input("x1", DType::kF32, {2, 4, 11});
  b.Output(b.Op("max_pool", {x1}, MakeAttrs({{"kernel_shape", Ints{3}}, {"strides", Ints{2}}})));
  b.Output(b.Op("average_pool", {x1},
                MakeAttrs({{"kernel_shape", Ints{4}},
                           {"strides", Ints{3}},
                           {"pads", Ints{1, 1}},
                           {"ceil_mode", int64_t{1}}})));
  const ValueId x3 = b.Input("x3", DType::kF32, {1, 2, 4, 5, 6});
  b.Output(b.Op("max_pool", {x3}, IntsAttr("kernel_shape", {2, 2, 2})));
  b.Output(b.Op("average_pool", {x3},
                MakeAttrs({{"kernel_shape", Ints{3, 3, 3}}, {"pads", Ints{1, 1, 1, 1, 1, 1}}})));
  EndToEndOptions options;
  options.fill = [](size_t i, Tensor& t) {
    if (i != 0) return;
    const double specials[] = {kNan, kInf, -kInf, 1e30, -1e30};
    for (int k = 0; k < 5; ++k) t.SetDouble(37 * k + 5, specials[k]);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// conv -> batch_norm -> relu -> max_pool, and a residual add: the ops fuse
// around the conv's GEMM.
TEST(ConvEndToEndTest, ResidualBlock) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {1, 16, 12, 12});
  const Attrs same = IntsAttr("pads", {1, 1, 1, 1});
  ValueId y = b.Op("conv", {x, b.Weight("w1", {16, 16, 3, 3}, 1, -0.2, 0.2)}, same);
  y = b.Op("batch_norm", {y, b.Weight("scale", {16}, 2), b.Weight("shift", {16}, 3),
                          b.Weight("mean", {16}, 4), b.Weight("var", {16}, 5, 0.5, 2)});
  y = b.Op("relu", {y});
  y = b.Op("conv", {y, b.Weight("w2", {16, 16, 3, 3}, 6, -0.2, 0.2), b.Weight("b2", {16}, 7)},
           same);
  y = b.Op("relu", {b.Op("add", {y, x})});
  b.Output(b.Op(
      "max_pool", {y},
      MakeAttrs(
          {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}})));
  CompileRunAndCompare(std::move(b.graph()));
}

// The cpu pipeline's channels-last convs: every 2-D conv with a known weight a call
// (or, 1x1, a gemm call) on channels-last data; 1x1 at strides 1 and 2,
// depthwise 3x3 and 5x5 at strides 1 and 2 (at stride 2 the padded width
// is even and the windows read a prefix of each row), grouped, a dense 3x3 of 64 channels
// (Winograd), dilations, asymmetric pads, a batch; and a chain of them
// with the ops between (bias, clip, a squeeze-excite's pool and scale, a
// residual add) moved onto that layout by sink-transposes. For every x86
// level this CPU runs: held to AVX2, the 64-channel 3x3 runs loom's
// Winograd on the channels-last data.
Graph ChannelsLastConvs() {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 16, 13, 12});
  AddConv(b, x, {24, 16, 1, 1}, true, {}, 1);
  AddConv(b, x, {24, 16, 1, 1}, false, IntsAttr("strides", {2, 2}), 3);
  for (int64_t kernel : {3, 5}) {
    const int64_t pad = kernel / 2;
    for (int64_t stride : {1, 2}) {
      AddConv(b, x, {16, 1, kernel, kernel}, true,
              MakeAttrs({{"group", int64_t{16}},
                         {"strides", Ints{stride, stride}},
                         {"pads", Ints{pad, pad, pad, pad}}}),
              10 + kernel * 2 + stride);
    }
  }
  AddConv(b, x, {32, 4, 3, 3}, true,
          MakeAttrs({{"group", int64_t{4}}, {"pads", Ints{1, 0, 2, 1}}, {"dilations", Ints{2, 1}}}),
          31);
  const ValueId image = b.Input("image", DType::kF32, {1, 64, 14, 14});
  AddConv(b, image, {64, 64, 3, 3}, true, IntsAttr("pads", {1, 1, 1, 1}), 33);

  // expand -> relu6 -> depthwise -> relu6 -> squeeze-excite -> project + x.
  const Attrs relu6 = MakeAttrs({{"min", 0.0}, {"max", 6.0}});
  ValueId y = b.Op("conv", {x, b.Weight("ew", {48, 16, 1, 1}, 41, -0.3, 0.3),
                            b.Weight("eb", {48}, 42, -0.1, 0.1)});
  y = b.Op("clip", {y}, relu6);
  y = b.Op("conv",
           {y, b.Weight("dw", {48, 1, 3, 3}, 43, -0.3, 0.3), b.Weight("db", {48}, 44, -0.1, 0.1)},
           MakeAttrs({{"group", int64_t{48}}, {"pads", Ints{1, 1, 1, 1}}}));
  y = b.Op("clip", {y}, relu6);
  const ValueId pooled =
      b.Op("reduce_mean", {y}, MakeAttrs({{"axes", Ints{2, 3}}, {"keepdims", int64_t{1}}}));
  y = b.Op("mul", {y, b.Op("sigmoid", {pooled})});
  y = b.Op("conv", {y, b.Weight("pw", {16, 48, 1, 1}, 45, -0.2, 0.2)});
  b.Output(b.Op("add", {y, x}));
  return std::move(b.graph());
}

TEST(ConvEndToEndTest, ChannelsLastConvCalls) {
  for (const char* march : {"", "haswell", "x86-64"}) {
    if (std::string(march) == "haswell" &&
        !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
      continue;
    }
    SCOPED_TRACE(march);
    EndToEndOptions options;
    options.channels_last = true;
    options.march = march;
    CompileRunAndCompare(ChannelsLastConvs(), options);
  }
}

}  // namespace
}  // namespace loom
