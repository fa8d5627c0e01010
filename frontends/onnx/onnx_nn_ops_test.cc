// The ONNX importer's mappings of the neural-network ops
// (onnx_ops_nn.cc): softmax before opset 13, LayerNormalization's
// statistics, recurrences, Conv and ConvTranspose pads, Pad, Resize and
// Upsample, pools and PRelu.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// Before opset 13, softmax flattens to 2-D at `axis` and normalises over
// everything after it.
TEST(OnnxNnOpsTest, OldSoftmaxFlattensAtAxis) {
  ModelBuilder b(11);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3, 4}).Output("y");
  b.Node("Softmax", {"x"}, {"y"});  // axis 1 by default
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor x = Iota({2, 3, 4});
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), (Shape{2, 3, 4}));
  for (int64_t row = 0; row < 2; ++row) {
    double sum = 0;
    for (int64_t i = 0; i < 12; ++i) sum += std::exp(x.GetDouble(row * 12 + i));
    for (int64_t i = 0; i < 12; ++i) {
      EXPECT_NEAR((*y)[0].GetDouble(row * 12 + i), std::exp(x.GetDouble(row * 12 + i)) / sum, 1e-6);
    }
  }
}

TEST(OnnxNnOpsTest, LayerNormalizationStatisticsOutputs) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 5})
      .Initializer("scale", {5}, {1, 1, 1, 1, 1})
      .TypedOutput("y", onnx::TensorProto::FLOAT, {2, 5})
      .TypedOutput("mean", onnx::TensorProto::FLOAT, {2, 1})
      .TypedOutput("inv_std", onnx::TensorProto::FLOAT, {2, 1});
  b.Node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv_std"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor x = Iota({2, 5});
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t row = 0; row < 2; ++row) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 5; ++i) mean += x.GetDouble(row * 5 + i) / 5;
    for (int64_t i = 0; i < 5; ++i) {
      var += std::pow(x.GetDouble(row * 5 + i) - mean, 2) / 5;
    }
    const double inv_std = 1 / std::sqrt(var + 1e-5);
    EXPECT_NEAR((*out)[1].GetDouble(row), mean, 1e-6);
    EXPECT_NEAR((*out)[2].GetDouble(row), inv_std, 1e-4);
    EXPECT_NEAR((*out)[0].GetDouble(row * 5), (x.GetDouble(row * 5) - mean) * inv_std, 1e-5);
  }
}

// ONNX lets a recurrence skip B and sequence_lens but give initial_h; loom's
// optional inputs are trailing, so the gaps become constants (zeros, full
// lengths). Y is unused (empty name) but comes before Y_h.
TEST(OnnxNnOpsTest, RecurrenceMaterialisesMiddleInputs) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {4, 2, 3})
      .Input("w", onnx::TensorProto::FLOAT, {1, 15, 3})
      .Input("r", onnx::TensorProto::FLOAT, {1, 15, 5})
      .Input("h0", onnx::TensorProto::FLOAT, {1, 2, 5})
      .TypedOutput("y_h", onnx::TensorProto::FLOAT, {1, 2, 5});
  onnx::NodeProto& gru = b.Node("GRU", {"x", "w", "r", "", "", "h0"}, {"", "y_h"});
  SetAttr(gru, "hidden_size", 5);
  SetAttr(gru, "linear_before_reset", 1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(Ops(*graph), std::vector<std::string>{"gru"});
  const Node& node = graph->nodes()[0];
  ASSERT_EQ(node.inputs.size(), 6u);
  const Tensor& bias = graph->initializer(node.inputs[3]);
  EXPECT_EQ(bias.shape(), (Shape{1, 30}));
  for (int64_t i = 0; i < bias.num_elements(); ++i) EXPECT_EQ(bias.GetDouble(i), 0);
  const Tensor& lengths = graph->initializer(node.inputs[4]);
  EXPECT_EQ(lengths.shape(), Shape{2});
  EXPECT_EQ(lengths.GetInt(0), 4);
  EXPECT_EQ(node.attrs.GetInt("linear_before_reset", 0), 1);
  EXPECT_EQ(node.outputs.size(), 2u);
  EXPECT_EQ(graph->outputs()[0], node.outputs[1]);
}

TEST(OnnxNnOpsTest, RecurrenceRefusesActivationParameters) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2})
      .Input("w", onnx::TensorProto::FLOAT, {1, 3, 2})
      .Input("r", onnx::TensorProto::FLOAT, {1, 3, 3})
      .Output("y");
  onnx::NodeProto& rnn = b.Node("RNN", {"x", "w", "r"}, {"y"}, "cell");
  SetAttr(rnn, "hidden_size", 3);
  onnx::AttributeProto* alpha = rnn.add_attribute();
  alpha->set_name("activation_alpha");
  alpha->set_type(onnx::AttributeProto::FLOATS);
  alpha->add_floats(0.5f);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'cell' (RNN): attribute 'activation_alpha'"));
}

// The pads loom's conv gets for auto_pad on X [1, 1, 4], W [1, 1, 2].
std::vector<int64_t> ConvPads(const std::string& auto_pad, int64_t stride) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 4}).Initializer("w", {1, 1, 2}, {1, 1}).Output("y");
  onnx::NodeProto& conv = b.Node("Conv", {"x", "w"}, {"y"});
  SetString(conv, "auto_pad", auto_pad);
  SetInts(conv, "strides", {stride});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  EXPECT_EQ(Ops(*graph), std::vector<std::string>{"conv"});
  return graph->nodes()[0].attrs.GetInts("pads");
}

// SAME pads so that the output has ceil(4 / stride) positions, the odd
// position at the end (UPPER) or the beginning (LOWER).
TEST(OnnxNnOpsTest, ConvAutoPadBecomesExplicitPads) {
  EXPECT_EQ(ConvPads("SAME_UPPER", 1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ConvPads("SAME_LOWER", 1), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ConvPads("SAME_UPPER", 3), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ConvPads("VALID", 1), (std::vector<int64_t>{0, 0}));
}

// The pads loom's conv_transpose gets on X [1, 1, 3], W [1, 1, 3], stride
// 2 (a full result of 7 positions), from `set`.
std::vector<int64_t> ConvTransposePads(const std::function<void(onnx::NodeProto&)>& set) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 3})
      .Initializer("w", {1, 1, 3}, {1, 1, 1})
      .Output("y");
  onnx::NodeProto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"});
  SetInts(node, "strides", {2});
  set(node);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  EXPECT_EQ(Ops(*graph), std::vector<std::string>{"conv_transpose"});
  return graph->nodes()[0].attrs.GetInts("pads");
}

// Of the total padding 7 - output, SAME_UPPER puts the smaller half first,
// the others the larger (floor halves: a negative total adds positions).
TEST(OnnxNnOpsTest, ConvTransposeOutputShapeBecomesPads) {
  using Ints = std::vector<int64_t>;
  auto auto_pad = [](const std::string& mode) {
    return [mode](onnx::NodeProto& n) { SetString(n, "auto_pad", mode); };
  };
  EXPECT_EQ(ConvTransposePads(auto_pad("SAME_UPPER")), (Ints{0, 1}));  // 6 positions
  EXPECT_EQ(ConvTransposePads(auto_pad("SAME_LOWER")), (Ints{1, 0}));
  EXPECT_EQ(ConvTransposePads(auto_pad("VALID")), (Ints{0, 0}));
  EXPECT_EQ(ConvTransposePads([](onnx::NodeProto& n) {
              SetInts(n, "pads", {2, 1});
            }),
            (Ints{2, 1}));
  auto output_shape = [](Ints shape) {
    return [shape](onnx::NodeProto& n) { SetInts(n, "output_shape", shape); };
  };
  EXPECT_EQ(ConvTransposePads(output_shape({5})), (Ints{1, 1}));
  EXPECT_EQ(ConvTransposePads(output_shape({1, 1, 4})), (Ints{2, 1}));
  EXPECT_EQ(ConvTransposePads(output_shape({8})), (Ints{0, -1}));
  EXPECT_EQ(ConvTransposePads(output_shape({9})), (Ints{-1, -1}));
}

TEST(OnnxNnOpsTest, ConvTransposeComputesAndRefuses) {
  auto import = [](const std::function<void(onnx::NodeProto&)>& set,
                   const std::vector<int64_t>& weight = {1, 2, 2}) {
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2})
        .Initializer("w", weight, std::vector<float>(NumElements(weight), 1))
        .Initializer("bias", {2}, {0.5, -1})
        .Output("y");
    set(b.Node("ConvTranspose", {"x", "w", "bias"}, {"y"}, "up"));
    return ImportOnnxModel(b.model());
  };
  absl::StatusOr<Graph> graph = import([](onnx::NodeProto& n) { SetInts(n, "strides", {2}); });
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kF32, {1, 1, 2});
  x.SetDouble(0, 1);
  x.SetDouble(1, 2);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].shape(), (Shape{1, 2, 4}));
  const double expected[] = {1.5, 1.5, 2.5, 2.5, 0, 0, 1, 1};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ((*y)[0].GetDouble(i), expected[i]) << i;
  auto refusal = [&](const std::function<void(onnx::NodeProto&)>& set,
                     const std::vector<int64_t>& weight = {1, 2, 2}) {
    return std::string(import(set, weight).status().message());
  };
  EXPECT_THAT(refusal([](onnx::NodeProto& n) {
                SetInts(n, "pads", {0, 0});
                SetInts(n, "output_shape", {3});
              }),
              HasSubstr("node 'up' (ConvTranspose): attributes 'pads' and 'output_shape' are "
                        "both given"));
  EXPECT_THAT(refusal([](onnx::NodeProto& n) {
                SetInts(n, "output_shape", {3, 3});
              }),
              HasSubstr("node 'up' (ConvTranspose): attribute 'output_shape' [3,3] needs 1 (or "
                        "3) entries"));
  EXPECT_THAT(refusal([](onnx::NodeProto& n) { SetString(n, "auto_pad", "SAME"); }),
              HasSubstr("node 'up' (ConvTranspose): attribute 'auto_pad' 'SAME' is not one of"));
  EXPECT_THAT(refusal([](onnx::NodeProto& n) {
                SetInts(n, "pads", {-1, 0});
              }),
              HasSubstr("node 'up' (ConvTranspose): attribute 'pads' [-1,0] has a negative "
                        "entry"));
  EXPECT_THAT(refusal([](onnx::NodeProto& n) { SetInts(n, "kernel_shape", {3}); }),
              HasSubstr("node 'up' (ConvTranspose): attribute 'kernel_shape' [3] disagrees with "
                        "W [1,2,2]"));
  EXPECT_THAT(refusal([](onnx::NodeProto&) {}, {1, 2}),
              HasSubstr("node 'up' (ConvTranspose): W [1,2] must have X's rank 3 ([C, "
                        "M/group, kernel...])"));
  EXPECT_THAT(refusal([](onnx::NodeProto& n) {
                SetInts(n, "pads", {2, 2});
              }),
              HasSubstr("node 'up' (ConvTranspose): loom conv_transpose: the output would have "
                        "-1 positions"));
}

// Pad's reflect and edge modes (opset 11: pads as an input).
TEST(OnnxNnOpsTest, PadModes) {
  for (const char* mode : {"reflect", "edge", "wrap"}) {
    ModelBuilder b(11);
    b.Input("x", onnx::TensorProto::FLOAT, {1, 3}).Output("y");
    onnx::TensorProto pads = ModelBuilder::IntTensor({4}, {0, 2, 0, 1});
    pads.set_name("pads");
    *b.model_for_test().mutable_graph()->add_initializer() = pads;
    SetString(b.Node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", mode);
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    if (std::string(mode) == "wrap") {
      EXPECT_THAT(graph.status().message(),
                  HasSubstr("node 'pad' (Pad): mode 'wrap' needs opset 19"));
      continue;
    }
    ASSERT_TRUE(graph.ok()) << graph.status();
    Tensor x(DType::kF32, {1, 3});
    for (int64_t i = 0; i < 3; ++i) x.SetDouble(i, i + 1);
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<double> expected = std::string(mode) == "reflect"
                                             ? std::vector<double>{3, 2, 1, 2, 3, 2}
                                             : std::vector<double>{1, 1, 1, 2, 3, 3};
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ((*y)[0].GetDouble(i), expected[i]) << mode << i;
  }
}

TEST(OnnxNnOpsTest, ConvWithBiasComputes) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 2, 3})
      .Initializer("w", {1, 2, 2}, {1, 2, 3, 4})
      .Initializer("bias", {1}, {0.5})
      .Output("y");
  b.Node("Conv", {"x", "w", "bias"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kF32, {1, 2, 3});
  for (int64_t i = 0; i < 6; ++i) x.SetDouble(i, i + 1);  // [1 2 3], [4 5 6]
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].shape(), (Shape{1, 1, 2}));
  EXPECT_EQ((*y)[0].GetDouble(0), 1 * 1 + 2 * 2 + 3 * 4 + 4 * 5 + 0.5);
  EXPECT_EQ((*y)[0].GetDouble(1), 1 * 2 + 2 * 3 + 3 * 5 + 4 * 6 + 0.5);
}

// Resize before opset 11 and Upsample: asymmetric coordinates, and for
// nearest ONNX Runtime's rule, a node that rounds up along the shrinking
// dims and one that rounds down along the growing ones.
TEST(OnnxNnOpsTest, ResizeBeforeOpset11AndUpsample) {
  for (const std::string op : {"Resize", "Upsample"}) {
    ModelBuilder b(op == "Resize" ? 10 : 9);
    b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 1, 10})
        .Initializer("scales", {4}, {1, 1, 1, op == "Resize" ? 0.6f : 1.7f})
        .Output("y");
    SetString(b.Node(op, {"x", "scales"}, {"y"}), "mode", "nearest");
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    Tensor x(DType::kF32, {1, 1, 1, 10});
    for (int64_t i = 0; i < 10; ++i) x.SetDouble(i, i + 1);
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
    ASSERT_TRUE(y.ok()) << y.status();
    std::vector<double> values;
    for (int64_t i = 0; i < (*y)[0].num_elements(); ++i) values.push_back((*y)[0].GetDouble(i));
    // ONNX Runtime's: ceil(x / 0.6) and floor(x / 1.7).
    if (op == "Resize") {
      EXPECT_THAT(values, testing::ElementsAre(1, 3, 5, 6, 8, 10));
    } else {
      EXPECT_THAT(values, testing::ElementsAre(1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 7, 8, 8, 9, 9, 10));
    }
  }
}

TEST(OnnxNnOpsTest, ResizeRefusals) {
  auto refusal = [](int64_t opset, const std::string& op, std::vector<std::string> inputs,
                    const std::function<void(onnx::NodeProto&)>& set) {
    ModelBuilder b(opset);
    b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 2})
        .Input("roi_in", onnx::TensorProto::FLOAT, {8})
        .Initializer("scales", {4}, {1, 1, 0.5, 2})
        .Initializer("empty", {0}, {})
        .Output("y");
    onnx::TensorProto* sizes = b.model_for_test().mutable_graph()->add_initializer();
    *sizes = ModelBuilder::IntTensor({4}, {1, 1, 3, 3});
    sizes->set_name("sizes");
    set(b.Node(op, inputs, {"y"}, "n"));
    return std::string(ImportOnnxModel(b.model()).status().message());
  };
  auto none = [](onnx::NodeProto&) {};
  EXPECT_THAT(refusal(13, "Resize", {"x", "", "scales", "sizes"}, none),
              HasSubstr("node 'n' (Resize): exactly one of the inputs scales and sizes"));
  EXPECT_THAT(refusal(13, "Resize", {"x", "", "empty"}, none),
              HasSubstr("node 'n' (Resize): exactly one of the inputs scales and sizes"));
  EXPECT_THAT(refusal(13, "Resize", {"x", "roi_in", "", "sizes"},
                      [](onnx::NodeProto& n) {
                        SetString(n, "coordinate_transformation_mode", "tf_crop_and_resize");
                      }),
              HasSubstr("node 'n' (Resize): input 'roi_in' (roi) must be known at import"));
  EXPECT_THAT(refusal(13, "Resize", {"x", "", "scales"},
                      [](onnx::NodeProto& n) { SetString(n, "mode", "area"); }),
              HasSubstr("attribute 'mode' \"area\" is not one of nearest, linear, cubic"));
  EXPECT_THAT(refusal(13, "Resize", {"x", "", "scales"},
                      [](onnx::NodeProto& n) { SetAttr(n, "antialias", int64_t{1}); }),
              HasSubstr("node 'n' (Resize)"));
  EXPECT_THAT(refusal(9, "Upsample", {"x", "scales"}, none),
              HasSubstr("node 'n' (Upsample): scales must be >= 1, got 0.5"));
  EXPECT_THAT(refusal(10, "Resize", {"x", "scales"},
                      [](onnx::NodeProto& n) { SetString(n, "mode", "cubic"); }),
              HasSubstr("node 'n' (Resize): attribute 'mode' \"cubic\" is not nearest or linear"));
}

TEST(OnnxNnOpsTest, ConvAndPoolRefusals) {
  auto refusal = [](const std::string& op, std::vector<std::string> outputs,
                    const std::function<void(onnx::NodeProto&)>& set) {
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 4, 4})
        .Initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1));
    for (const std::string& output : outputs) b.Output(output);
    onnx::NodeProto& node = b.Node(
        op, op == "Conv" ? std::vector<std::string>{"x", "w"} : std::vector<std::string>{"x"},
        outputs, "n");
    set(node);
    return std::string(ImportOnnxModel(b.model()).status().message());
  };
  EXPECT_THAT(refusal("Conv", {"y"},
                      [](onnx::NodeProto& n) {
                        SetInts(n, "kernel_shape", {2, 2});
                      }),
              HasSubstr("node 'n' (Conv): attribute 'kernel_shape' [2,2] disagrees with W "
                        "[1,1,3,3]"));
  EXPECT_THAT(refusal("Conv", {"y"}, [](onnx::NodeProto& n) { SetString(n, "auto_pad", "SAME"); }),
              HasSubstr("node 'n' (Conv): attribute 'auto_pad' 'SAME' is not one of"));
  EXPECT_THAT(refusal("Conv", {"y"},
                      [](onnx::NodeProto& n) {
                        SetInts(n, "pads", {1, 1});
                      }),
              HasSubstr("node 'n' (Conv): attribute 'pads' [1,1] has 2 entries; expected 4"));
  EXPECT_THAT(refusal("MaxPool", {"y", "indices"},
                      [](onnx::NodeProto& n) {
                        SetInts(n, "kernel_shape", {2, 2});
                        SetAttr(n, "storage_order", int64_t{2});
                      }),
              HasSubstr("node 'n' (MaxPool): loom max_pool: max_pool has one or two outputs (the "
                        "maxima, their indices) and 'storage_order' 0 or 1; got 2 outputs and "
                        "'storage_order' 2"));
  EXPECT_THAT(refusal("AveragePool", {"y"}, [](onnx::NodeProto&) {}),
              HasSubstr("node 'n' (AveragePool): attribute 'kernel_shape' is required"));
  EXPECT_THAT(refusal("MaxPool", {"y"},
                      [](onnx::NodeProto& n) {
                        SetInts(n, "kernel_shape", {5, 5});
                      }),
              HasSubstr("node 'n' (MaxPool): loom max_pool: the kernel spans 5 positions along "
                        "spatial dim 0"));
}

TEST(OnnxNnOpsTest, AveragePoolCountsPadsWhenAsked) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 3}).Output("y");
  onnx::NodeProto& pool = b.Node("AveragePool", {"x"}, {"y"});
  SetInts(pool, "kernel_shape", {2});
  SetInts(pool, "pads", {1, 1});
  SetAttr(pool, "count_include_pad", 1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kF32, {1, 1, 3});
  for (int64_t i = 0; i < 3; ++i) x.SetDouble(i, i + 1);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<double> expected = {0.5, 1.5, 2.5, 1.5};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*y)[0].GetDouble(i), expected[i]);
}

// Before opset 7 a slope [C] is per channel; from 7 on it broadcasts as
// numpy does, along the last dim.
TEST(OnnxNnOpsTest, PReluSlopePerChannelBeforeOpset7) {
  for (const int64_t opset : {6, 17}) {
    ModelBuilder b(opset);
    b.Input("x", onnx::TensorProto::FLOAT, {1, 2, 2})
        .Initializer("slope", {2}, {0.5, 0.25})
        .Output("y");
    b.Node("PRelu", {"x", "slope"}, {"y"});
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    Tensor x(DType::kF32, {1, 2, 2});
    const double values[] = {-1, 1, -2, 2};
    for (int64_t i = 0; i < 4; ++i) x.SetDouble(i, values[i]);
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<double> expected =
        opset < 7 ? std::vector<double>{-0.5, 1, -0.5, 2} : std::vector<double>{-0.5, 1, -1, 2};
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ((*y)[0].GetDouble(i), expected[i]) << "opset " << opset << " element " << i;
    }
  }
}

}  // namespace
}  // namespace loom
