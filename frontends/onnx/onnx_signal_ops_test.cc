// The ONNX importer's signal, linear-algebra and selection ops
// (onnx_ops_signal.cc): DFT, STFT, MelWeightMatrix, Det, TfIdfVectorizer,
// Unique, NonZero and NonMaxSuppression, and ReduceMax and ReduceMin over
// an empty axis (onnx_ops_nn.cc).
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

// Imports `b` and runs it on `inputs` with the reference interpreter.
std::vector<Tensor> RunModel(const ModelBuilder& b, const std::vector<Tensor>& inputs = {}) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> outputs = Interpret(*graph, inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *outputs : std::vector<Tensor>{};
}

std::string ImportError(const ModelBuilder& b) {
  return std::string(ImportOnnxModel(b.model()).status().message());
}

std::vector<int64_t> Ints(const Tensor& t) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(t.GetInt(i));
  return values;
}

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> values;
  for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(t.GetDouble(i));
  return values;
}

// The DFT of x along its only axis, by the definition.
std::vector<std::complex<double>> Dft(const std::vector<std::complex<double>>& x, bool inverse) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<std::complex<double>> y(n);
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      const double angle = (inverse ? 2 : -2) * kPi * static_cast<double>(k * j) / n;
      y[k] += x[j] * std::polar(1.0, angle);
    }
    if (inverse) y[k] /= static_cast<double>(n);
  }
  return y;
}

// --- DFT and STFT -------------------------------------------------------------

TEST(OnnxSignalOpsTest, DftForwardAndInverseAlongEitherAxis) {
  for (int64_t axis : {0, 1}) {
    for (int64_t inverse : {0, 1}) {
      ModelBuilder b(20);
      b.Input("x", onnx::TensorProto::FLOAT, {3, 5, 2}).Output("y");
      IntInitializer(b, "axis", {}, {axis});
      SetAttr(b.Node("DFT", {"x", "", "axis"}, {"y"}, "dft"), "inverse", inverse);
      const Tensor x = Iota({3, 5, 2});
      const std::vector<Tensor> y = RunModel(b, {x});
      ASSERT_EQ(y.size(), 1u);
      ASSERT_EQ(y[0].shape(), (Shape{3, 5, 2}));
      const int64_t other = axis == 0 ? 5 : 3, n = axis == 0 ? 3 : 5;
      for (int64_t o = 0; o < other; ++o) {
        auto at = [&](int64_t i) { return 2 * (axis == 0 ? i * 5 + o : o * 5 + i); };
        std::vector<std::complex<double>> signal;
        for (int64_t i = 0; i < n; ++i)
          signal.emplace_back(x.GetDouble(at(i)), x.GetDouble(at(i) + 1));
        const std::vector<std::complex<double>> want = Dft(signal, inverse == 1);
        for (int64_t k = 0; k < n; ++k) {
          EXPECT_NEAR(y[0].GetDouble(at(k)), want[k].real(), 1e-5) << axis << inverse << o << k;
          EXPECT_NEAR(y[0].GetDouble(at(k) + 1), want[k].imag(), 1e-5) << axis << inverse << o << k;
        }
      }
    }
  }
}

// A real signal's one-sided spectrum (RFFT, opset 17's axis attribute) and
// back (IRFFT) of an odd length given as dft_length.
TEST(OnnxSignalOpsTest, RfftThenIrfftRoundTrips) {
  ModelBuilder b(17);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 7, 1}).Output("x2").Output("spectrum");
  IntInitializer(b, "n", {}, {7});
  onnx::NodeProto& rfft = b.Node("DFT", {"x", "n"}, {"spectrum"}, "rfft");
  SetAttr(rfft, "axis", 1);
  SetAttr(rfft, "onesided", 1);
  onnx::NodeProto& irfft = b.Node("DFT", {"spectrum", "n"}, {"x2"}, "irfft");
  SetAttr(irfft, "axis", 1);
  SetAttr(irfft, "onesided", 1);
  SetAttr(irfft, "inverse", 1);
  const Tensor x = Iota({2, 7, 1});
  const std::vector<Tensor> y = RunModel(b, {x});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[1].shape(), (Shape{2, 4, 2}));
  ASSERT_EQ(y[0].shape(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i)
    EXPECT_NEAR(y[0].GetDouble(i), x.GetDouble(i), 1e-5);
}

// dft_length pads a short signal with zeros and truncates a long one.
TEST(OnnxSignalOpsTest, DftLengthPadsAndTruncates) {
  for (int64_t length : {2, 6}) {
    ModelBuilder b(20);
    b.Input("x", onnx::TensorProto::FLOAT, {4, 1}).Output("y");
    IntInitializer(b, "n", {}, {length});
    b.Node("DFT", {"x", "n"}, {"y"}, "dft");
    const Tensor x = Iota({4, 1});
    const std::vector<Tensor> y = RunModel(b, {x});
    ASSERT_EQ(y.size(), 1u);
    ASSERT_EQ(y[0].shape(), (Shape{length, 2}));
    std::vector<std::complex<double>> signal(length);
    for (int64_t i = 0; i < std::min<int64_t>(4, length); ++i) signal[i] = x.GetDouble(i);
    const std::vector<std::complex<double>> want = Dft(signal, false);
    for (int64_t k = 0; k < length; ++k) {
      EXPECT_NEAR(y[0].GetDouble(2 * k), want[k].real(), 1e-5);
      EXPECT_NEAR(y[0].GetDouble(2 * k + 1), want[k].imag(), 1e-5);
    }
  }
}

TEST(OnnxSignalOpsTest, DftRefusalsNameTheCause) {
  auto error = [](std::vector<int64_t> dims, int64_t axis, int64_t onesided, int64_t inverse) {
    ModelBuilder b(17);
    b.Input("x", onnx::TensorProto::FLOAT, dims).Output("y");
    onnx::NodeProto& node = b.Node("DFT", {"x"}, {"y"}, "dft");
    SetAttr(node, "axis", axis);
    SetAttr(node, "onesided", onesided);
    SetAttr(node, "inverse", inverse);
    return ImportError(b);
  };
  EXPECT_THAT(error({4, 1}, 1, 0, 0), HasSubstr("node 'dft' (DFT): the axis 1 is out of range"));
  EXPECT_THAT(error({4, 3}, 0, 0, 0), HasSubstr("last dim is 3; expected 1 (real) or 2"));
  EXPECT_THAT(error({4, 2}, 0, 1, 0), HasSubstr("(RFFT) takes a real signal"));
  EXPECT_THAT(error({4, 1}, 0, 1, 1), HasSubstr("(IRFFT) takes a complex signal"));
  EXPECT_THAT(error({4, 1}, 0, 2, 0), HasSubstr("attribute 'onesided' must be 0 or 1"));
  EXPECT_THAT(error({5000, 2}, 0, 0, 0),
              HasSubstr("a product with a [10000,10000] matrix, larger than the 16777216"));

  ModelBuilder runtime_axis(20);
  runtime_axis.Input("x", onnx::TensorProto::FLOAT, {4, 1})
      .Input("axis", onnx::TensorProto::INT64, {})
      .Output("y");
  runtime_axis.Node("DFT", {"x", "", "axis"}, {"y"}, "dft");
  EXPECT_THAT(ImportError(runtime_axis),
              HasSubstr("input 'axis' (the axis) must be known at import"));
}

// Frames every 2 samples of 4, windowed, one-sided by default.
TEST(OnnxSignalOpsTest, StftTransformsWindowedFrames) {
  ModelBuilder b(17);
  b.Input("signal", onnx::TensorProto::FLOAT, {1, 9, 1})
      .Input("window", onnx::TensorProto::FLOAT, {4})
      .Output("y");
  IntInitializer(b, "step", {}, {2});
  b.Node("STFT", {"signal", "step", "window"}, {"y"}, "stft");
  const Tensor signal = Iota({1, 9, 1}), window = Iota({4}, 0.3);
  const std::vector<Tensor> y = RunModel(b, {signal, window});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), (Shape{1, 3, 3, 2}));
  for (int64_t f = 0; f < 3; ++f) {
    std::vector<std::complex<double>> frame;
    for (int64_t n = 0; n < 4; ++n)
      frame.emplace_back(signal.GetDouble(2 * f + n) * window.GetDouble(n));
    const std::vector<std::complex<double>> want = Dft(frame, false);
    for (int64_t k = 0; k < 3; ++k) {
      EXPECT_NEAR(y[0].GetDouble((f * 3 + k) * 2), want[k].real(), 1e-5);
      EXPECT_NEAR(y[0].GetDouble((f * 3 + k) * 2 + 1), want[k].imag(), 1e-5);
    }
  }

  ModelBuilder mismatched(17);
  mismatched.Input("signal", onnx::TensorProto::FLOAT, {1, 9, 1})
      .Input("window", onnx::TensorProto::FLOAT, {4})
      .Output("y");
  IntInitializer(mismatched, "step", {}, {2});
  IntInitializer(mismatched, "length", {}, {5});
  mismatched.Node("STFT", {"signal", "step", "window", "length"}, {"y"}, "stft");
  EXPECT_THAT(ImportError(mismatched),
              HasSubstr("node 'stft' (STFT): frame_length 5 differs from the window's 4"));
}

TEST(OnnxSignalOpsTest, MelWeightMatrixIsComputedAtImport) {
  auto model = [](int64_t upper_hz) {
    ModelBuilder b(17);
    b.Output("w");
    IntInitializer(b, "bins", {}, {3});
    IntInitializer(b, "dft", {}, {16});
    IntInitializer(b, "rate", {}, {8000});
    b.Initializer("low", {}, {0}).Initializer("high", {}, {static_cast<float>(upper_hz)});
    b.Node("MelWeightMatrix", {"bins", "dft", "rate", "low", "high"}, {"w"}, "mel");
    return b;
  };
  const std::vector<Tensor> w = RunModel(model(4000));
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(w[0].shape(), (Shape{9, 3}));
  // Each triangle peaks at 1 and every weight lies in [0, 1].
  for (int64_t m = 0; m < 3; ++m) {
    double peak = 0;
    for (int64_t k = 0; k < 9; ++k) {
      const double v = w[0].GetDouble(k * 3 + m);
      EXPECT_GE(v, 0);
      EXPECT_LE(v, 1);
      peak = std::max(peak, v);
    }
    EXPECT_EQ(peak, 1) << m;
  }
  EXPECT_THAT(ImportError(model(9000)), HasSubstr("past the last of 9"));
}

// --- Det ----------------------------------------------------------------------

TEST(OnnxSignalOpsTest, DetPivotsAndBatches) {
  ModelBuilder b(11);
  b.Input("x", onnx::TensorProto::FLOAT, {3, 3, 3}).Output("y");
  b.Node("Det", {"x"}, {"y"}, "det");
  Tensor x(DType::kF32, {3, 3, 3});
  const std::vector<double> matrices = {
      0, 2, 1, 3, 0, 4, 5, 6, 0,  // a zero pivot first: needs a row swap; det 1*(...)
      1, 2, 3, 4, 5, 6, 7, 8, 9,  // singular: 0
      2, 0, 0, 0, 3, 0, 0, 0, 4,  // diagonal: 24
  };
  for (int64_t i = 0; i < 27; ++i) x.SetDouble(i, matrices[i]);
  const std::vector<Tensor> y = RunModel(b, {x});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), (Shape{3}));
  // 0*(0*0-4*6) - 2*(3*0-4*5) + 1*(3*6-0*5) = 40 + 18
  EXPECT_NEAR(y[0].GetDouble(0), 58, 1e-4);
  EXPECT_NEAR(y[0].GetDouble(1), 0, 1e-4);
  EXPECT_NEAR(y[0].GetDouble(2), 24, 1e-4);

  ModelBuilder not_square(11);
  not_square.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Output("y");
  not_square.Node("Det", {"x"}, {"y"}, "det");
  EXPECT_THAT(ImportError(not_square),
              HasSubstr("node 'det' (Det): the input [2,3] is not a batch"));
}

// --- Ops whose output shape depends on their data -------------------------------

TEST(OnnxSignalOpsTest, UniqueSortedOrByFirstOccurrence) {
  auto model = [](int64_t sorted) {
    ModelBuilder b(11);
    b.Output("y").Output("indices").Output("inverse").Output("counts");
    b.Initializer("x", {6}, {2, 1, 1, 3, 4, 3});
    SetAttr(b.Node("Unique", {"x"}, {"y", "indices", "inverse", "counts"}, "u"), "sorted", sorted);
    return b;
  };
  std::vector<Tensor> out = RunModel(model(0));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_THAT(Doubles(out[0]), ElementsAreArray({2, 1, 3, 4}));
  EXPECT_THAT(Ints(out[1]), ElementsAreArray({0, 1, 3, 4}));
  EXPECT_THAT(Ints(out[2]), ElementsAreArray({0, 1, 1, 2, 3, 2}));
  EXPECT_THAT(Ints(out[3]), ElementsAreArray({1, 2, 2, 1}));
  out = RunModel(model(1));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_THAT(Doubles(out[0]), ElementsAreArray({1, 2, 3, 4}));
  EXPECT_THAT(Ints(out[1]), ElementsAreArray({1, 0, 3, 4}));
  EXPECT_THAT(Ints(out[2]), ElementsAreArray({1, 0, 0, 2, 3, 2}));
  EXPECT_THAT(Ints(out[3]), ElementsAreArray({2, 1, 2, 1}));
}

TEST(OnnxSignalOpsTest, UniqueSlicesAlongAnAxis) {
  ModelBuilder b(11);
  b.Output("y").Output("indices").Output("inverse");
  IntInitializer(b, "x", {3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  SetAttr(b.Node("Unique", {"x"}, {"y", "indices", "inverse"}, "u"), "axis", 0);
  const std::vector<Tensor> out = RunModel(b);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].type(), (TensorType{DType::kI64, {2, 3}}));
  EXPECT_THAT(Ints(out[0]), ElementsAreArray({1, 0, 0, 2, 3, 4}));
  EXPECT_THAT(Ints(out[1]), ElementsAreArray({0, 2}));
  EXPECT_THAT(Ints(out[2]), ElementsAreArray({0, 0, 1}));
}

TEST(OnnxSignalOpsTest, DataDependentShapesNeedDataKnownAtImport) {
  for (const char* op : {"Unique", "NonZero"}) {
    ModelBuilder b(13);
    b.Input("x", onnx::TensorProto::FLOAT, {4}).Output("y");
    b.Node(op, {"x"}, {"y"}, "n");
    EXPECT_THAT(ImportError(b), HasSubstr("the output's shape depends on its values")) << op;
  }
}

TEST(OnnxSignalOpsTest, NonZeroListsCoordinates) {
  ModelBuilder b(13);
  b.Output("y");
  b.Initializer("x", {2, 2}, {1, 0, 1, std::nanf("")});
  b.Node("NonZero", {"x"}, {"y"}, "nz");
  const std::vector<Tensor> y = RunModel(b);
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
  EXPECT_THAT(Ints(y[0]), ElementsAreArray({0, 1, 1, 0, 0, 1}));
}

// Two overlapping boxes and a distant one, two classes: the lower-scored
// overlapping box is suppressed, scores at or below the threshold dropped.
TEST(OnnxSignalOpsTest, NonMaxSuppressionSelectsGreedily) {
  ModelBuilder b(11);
  b.Output("selected");
  b.Initializer("boxes", {1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
  b.Initializer("scores", {1, 2, 3}, {0.9f, 0.8f, 0.7f, 0.1f, 0.6f, 0.2f});
  IntInitializer(b, "max", {1}, {std::numeric_limits<int64_t>::max()});
  b.Initializer("iou", {1}, {0.5f}).Initializer("score", {1}, {0.15f});
  b.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score"}, {"selected"}, "nms");
  const std::vector<Tensor> y = RunModel(b);
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].shape(), (Shape{4, 3}));
  EXPECT_THAT(Ints(y[0]), ElementsAreArray({0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2}));
}

// --- TfIdfVectorizer ----------------------------------------------------------

TEST(OnnxSignalOpsTest, TfIdfVectorizerCountsSkippedNgrams) {
  auto model = [](const std::string& mode, int64_t skip, bool weighted) {
    ModelBuilder b(9);
    b.Input("x", onnx::TensorProto::INT32, {2, 5}).Output("y");
    onnx::NodeProto& node = b.Node("TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
    SetString(node, "mode", mode);
    SetAttr(node, "min_gram_length", 1);
    SetAttr(node, "max_gram_length", 2);
    SetAttr(node, "max_skip_count", skip);
    SetInts(node, "ngram_counts", {0, 2});
    SetInts(node, "ngram_indexes", {2, 0, 1});
    SetInts(node, "pool_int64s", {7, 8, 7, 9});  // unigrams 7, 8; bigram (7, 9)
    if (weighted) {
      onnx::AttributeProto* weights = node.add_attribute();
      weights->set_name("weights");
      weights->set_type(onnx::AttributeProto::FLOATS);
      for (float w : {0.5f, 2.0f, 4.0f}) weights->add_floats(w);
    }
    return b;
  };
  Tensor x(DType::kI32, {2, 5});
  const std::vector<int64_t> tokens = {7, 9, 7, 1, 9, 8, 8, 3, 3, 3};
  for (int64_t i = 0; i < 10; ++i) x.SetInt(i, tokens[i]);
  // Row 0: 7 twice, (7, 9) once adjacent and once with a skip of 1.
  std::vector<Tensor> y = RunModel(model("TF", 0, false), {x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_THAT(Doubles(y[0]), ElementsAreArray({0, 1, 2, 2, 0, 0}));
  y = RunModel(model("TF", 1, false), {x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_THAT(Doubles(y[0]), ElementsAreArray({0, 2, 2, 2, 0, 0}));
  y = RunModel(model("IDF", 1, true), {x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_THAT(Doubles(y[0]), ElementsAreArray(std::vector<double>{0, 2, 4, 0.5, 0, 0}));
  y = RunModel(model("TFIDF", 1, true), {x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_THAT(Doubles(y[0]), ElementsAreArray({0, 4, 8, 1, 0, 0}));

  ModelBuilder strings(9);
  strings.Input("x", onnx::TensorProto::INT64, {4}).Output("y");
  onnx::NodeProto& node = strings.Node("TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
  onnx::AttributeProto* pool = node.add_attribute();
  pool->set_name("pool_strings");
  pool->set_type(onnx::AttributeProto::STRINGS);
  pool->add_strings("a");
  EXPECT_THAT(ImportError(strings), HasSubstr("node 'tfidf' (TfIdfVectorizer): string n-grams"));
}

// --- ReduceMax and ReduceMin over an empty axis ----------------------------------

TEST(OnnxSignalOpsTest, ReduceMaxAndMinOverAnEmptyAxis) {
  struct Case {
    const char* op;
    int32_t elem_type;
    double want;
  };
  const Case cases[] = {
      {"ReduceMax", onnx::TensorProto::FLOAT, -std::numeric_limits<double>::infinity()},
      {"ReduceMin", onnx::TensorProto::FLOAT, std::numeric_limits<double>::infinity()},
      {"ReduceMax", onnx::TensorProto::INT32, std::numeric_limits<int32_t>::min()},
      {"ReduceMin", onnx::TensorProto::UINT8, 255},
      {"ReduceMin", onnx::TensorProto::BOOL, 1},
  };
  for (const Case& c : cases) {
    ModelBuilder b(20);
    b.Input("x", c.elem_type, {2, 0, 3}).Output("y");
    IntInitializer(b, "axes", {1}, {-2});
    SetAttr(b.Node(c.op, {"x", "axes"}, {"y"}, "r"), "keepdims", 0);
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::vector<Tensor>> y =
        Interpret(*graph, {Tensor(graph->value(graph->inputs()[0]).type)});
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ((*y)[0].shape(), (Shape{2, 3})) << c.op;
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ((*y)[0].GetDouble(i), c.want) << c.op;
  }
}

}  // namespace
}  // namespace loom
