// The quantization converters (onnx_ops_quantize.cc): QuantizeLinear and
// DequantizeLinear past opset 13 (blocked, 16-bit, output_dtype,
// precision), QLinearMatMul, ConvInteger and QLinearConv, run by the
// reference interpreter, and their refusals.
#include <cstdint>
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

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kUint8 = onnx::TensorProto::UINT8;
constexpr int32_t kInt8 = onnx::TensorProto::INT8;
constexpr int32_t kInt16 = onnx::TensorProto::INT16;
constexpr int32_t kInt32 = onnx::TensorProto::INT32;

Tensor Values(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> values;
  for (int64_t i = 0; i < t.num_elements(); ++i) values.push_back(t.GetDouble(i));
  return values;
}

// Imports `b`'s model and runs it on `inputs`; the first output.
Tensor RunModel(const ModelBuilder& b, const std::vector<Tensor>& inputs) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return Tensor();
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, inputs);
  EXPECT_TRUE(y.ok()) << y.status();
  return y.ok() ? (*y)[0] : Tensor();
}

std::string ImportError(const ModelBuilder& b) {
  return std::string(ImportOnnxModel(b.model()).status().message());
}

TEST(OnnxQuantizeOpsTest, BlockedQuantizeAndDequantize) {
  // x [2, 5], blocks of 2 along axis 1: scales [2, 3], the last block short.
  ModelBuilder b(21);
  b.Input("x", kFloat, {2, 5})
      .Input("scale", kFloat, {2, 3})
      .Input("zero", kInt8, {2, 3})
      .Output("q")
      .Output("d");
  onnx::NodeProto& quantize = b.Node("QuantizeLinear", {"x", "scale", "zero"}, {"q"});
  SetAttr(quantize, "axis", int64_t{1});
  SetAttr(quantize, "block_size", int64_t{2});
  onnx::NodeProto& dequantize = b.Node("DequantizeLinear", {"q", "scale", "zero"}, {"d"});
  SetAttr(dequantize, "axis", int64_t{1});
  SetAttr(dequantize, "block_size", int64_t{2});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor x = Values(DType::kF32, {2, 5}, {1, 3, 5, 7, 1000, -1, -3, 2.5, 3.5, -1000});
  const Tensor scale = Values(DType::kF32, {2, 3}, {2, 2, 0.5, 1, 1, 4});
  const Tensor zero = Values(DType::kI8, {2, 3}, {0, 1, -1, 0, 0, 10});
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x, scale, zero});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dtype(), DType::kI8);
  // Row 0: 1/2 and 3/2 round to 0 and 2 (halves to even); 5/2 + 1 = 3,
  // 7/2 + 1 = 5; 1000/0.5 - 1 saturates at 127. Row 1: -1, -3; 2.5, 3.5
  // round to 2, 4; -1000/4 + 10 saturates at -128.
  EXPECT_THAT(Doubles((*y)[0]),
              ElementsAreArray(std::vector<double>{0, 2, 3, 5, 127, -1, -3, 2, 4, -128}));
  EXPECT_THAT(Doubles((*y)[1]),
              ElementsAreArray(std::vector<double>{0, 4, 4, 8, 64, -1, -3, 2, 4, -552}));
}

TEST(OnnxQuantizeOpsTest, SixteenBitOutputsFromOutputDtype) {
  ModelBuilder b(21);
  b.Input("x", kFloat, {4}).Input("scale", kFloat, {}).Output("q");
  SetAttr(b.Node("QuantizeLinear", {"x", "scale"}, {"q"}), "output_dtype", int64_t{kInt16});
  const Tensor q = RunModel(
      b, {Values(DType::kF32, {4}, {-1e6, -2.5, 300.5, 1e6}), Values(DType::kF32, {}, {0.5})});
  EXPECT_EQ(q.dtype(), DType::kI16);
  EXPECT_THAT(Doubles(q), ElementsAreArray(std::vector<double>{-32768, -5, 601, 32767}));
}

TEST(OnnxQuantizeOpsTest, DequantizeToOutputDtype) {
  ModelBuilder b(23);
  b.Input("x", kInt16, {3}).Input("scale", kFloat, {}).Input("zero", kInt16, {}).Output("y");
  SetAttr(b.Node("DequantizeLinear", {"x", "scale", "zero"}, {"y"}), "output_dtype",
          int64_t{onnx::TensorProto::FLOAT16});
  const Tensor y = RunModel(b, {Values(DType::kI16, {3}, {-32768, 0, 32767}),
                                Values(DType::kF32, {}, {0.25}), Values(DType::kI16, {}, {-1})});
  EXPECT_EQ(y.dtype(), DType::kF16);
  // -32767 / 4 rounds to float16's nearest, -8192 (a step of 4 there).
  EXPECT_THAT(Doubles(y), ElementsAreArray(std::vector<double>{-8192, 0.25, 8192}));
}

TEST(OnnxQuantizeOpsTest, PrecisionSetsTheDivisionsType) {
  // x = 2049 is 2048 in float16 (ties to even): q = 2048 + 1, where float32
  // would give 2050.
  ModelBuilder b(23);
  b.Input("x", kFloat, {1}).Input("scale", kFloat, {}).Input("zero", kInt16, {}).Output("q");
  SetAttr(b.Node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}), "precision",
          int64_t{onnx::TensorProto::FLOAT16});
  const Tensor q = RunModel(b, {Values(DType::kF32, {1}, {2049}), Values(DType::kF32, {}, {1}),
                                Values(DType::kI16, {}, {1})});
  EXPECT_THAT(Doubles(q), ElementsAreArray(std::vector<double>{2049}));
}

TEST(OnnxQuantizeOpsTest, RefusesBadQuantizers) {
  ModelBuilder negative(21);
  negative.Input("x", kFloat, {2, 4}).Input("scale", kFloat, {2, 2}).Output("q");
  SetAttr(negative.Node("QuantizeLinear", {"x", "scale"}, {"q"}, "quant"), "block_size",
          int64_t{-2});
  EXPECT_THAT(ImportError(negative),
              HasSubstr("node 'quant' (QuantizeLinear): attribute 'block_size' -2 must be "
                        "positive"));

  ModelBuilder shape(21);
  shape.Input("x", kFloat, {2, 4}).Input("scale", kFloat, {2, 3}).Output("q");
  SetAttr(shape.Node("QuantizeLinear", {"x", "scale"}, {"q"}, "quant"), "block_size", int64_t{2});
  EXPECT_THAT(ImportError(shape),
              HasSubstr("y_scale must have shape [2,2] (blocks of 2 along axis 1 of [2,4]), "
                        "got [2,3]"));

  ModelBuilder disagree(21);
  disagree.Input("x", kFloat, {2}).Input("scale", kFloat, {}).Input("zero", kUint8, {});
  disagree.Output("q");
  SetAttr(disagree.Node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}, "quant"), "output_dtype",
          int64_t{kInt8});
  EXPECT_THAT(ImportError(disagree),
              HasSubstr("attribute 'output_dtype' i8 disagrees with y_zero_point's type u8"));

  // block_size arrived with opset 21.
  ModelBuilder old(19);
  old.Input("x", kFloat, {2, 4}).Input("scale", kFloat, {2, 2}).Output("q");
  SetAttr(old.Node("QuantizeLinear", {"x", "scale"}, {"q"}, "quant"), "block_size", int64_t{2});
  EXPECT_THAT(ImportError(old), HasSubstr("attribute 'block_size' is not supported"));

  ModelBuilder wide(21);
  wide.Input("x", kFloat, {2}).Input("scale", kFloat, {}).Output("q");
  SetAttr(wide.Node("QuantizeLinear", {"x", "scale"}, {"q"}, "quant"), "output_dtype",
          int64_t{kInt32});
  EXPECT_THAT(ImportError(wide), HasSubstr("quantizing to i32 is not supported"));
}

TEST(OnnxQuantizeOpsTest, QLinearMatMulPerRowAndColumn) {
  ModelBuilder b(21);
  b.Input("a", kUint8, {2, 2})
      .Input("a_scale", kFloat, {2})
      .Input("a_zero", kUint8, {2})
      .Input("b", kInt8, {2, 2})
      .Input("b_scale", kFloat, {2})
      .Input("b_zero", kInt8, {2})
      .Input("y_scale", kFloat, {})
      .Input("y_zero", kInt8, {})
      .Output("y");
  b.Node("QLinearMatMul", {"a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"},
         {"y"});
  const Tensor y = RunModel(
      b, {Values(DType::kU8, {2, 2}, {12, 10, 200, 100}), Values(DType::kF32, {2}, {1, 0.5}),
          Values(DType::kU8, {2}, {10, 100}), Values(DType::kI8, {2, 2}, {1, 2, 3, -4}),
          Values(DType::kF32, {2}, {0.25, 1}), Values(DType::kI8, {2}, {0, 1}),
          Values(DType::kF32, {}, {1}), Values(DType::kI8, {}, {-3})});
  // a - zero: [[2, 0], [100, 0]]; b - zero: [[1, 1], [3, -5]]. Products
  // [[2, 2], [100, 100]] times scales [[0.25, 1], [0.125, 0.5]]: 0.5 rounds
  // to 0 and 12.5 to 12 (halves to even) before the zero point -3 is added.
  EXPECT_EQ(y.dtype(), DType::kI8);
  EXPECT_THAT(Doubles(y), ElementsAreArray(std::vector<double>{-3, -1, 9, 47}));

  ModelBuilder rows(21);
  rows.Input("a", kUint8, {2, 4}).Input("s", kFloat, {3}).Input("z", kUint8, {});
  rows.Input("b", kUint8, {4, 3}).Input("t", kFloat, {}).Output("y");
  rows.Node("QLinearMatMul", {"a", "s", "z", "b", "t", "z", "t", "z"}, {"y"}, "qmm");
  EXPECT_THAT(ImportError(rows),
              HasSubstr("node 'qmm' (QLinearMatMul): a_scale must have one element or be per "
                        "row of A ([M] or [..., M, 1]) for an operand [2,4], got [3]"));

  ModelBuilder floats(21);
  floats.Input("a", kFloat, {2, 2}).Input("s", kFloat, {}).Input("z", kUint8, {}).Output("y");
  floats.Node("QLinearMatMul", {"a", "s", "z", "a", "s", "z", "s", "z"}, {"y"}, "qmm");
  EXPECT_THAT(ImportError(floats),
              HasSubstr("node 'qmm' (QLinearMatMul): A has dtype f32, expected u8 or i8"));
}

TEST(OnnxQuantizeOpsTest, ConvIntegerWithPerChannelZeroPoints) {
  ModelBuilder b(10);
  b.Input("x", kUint8, {1, 1, 2, 2})
      .Input("w", kInt8, {2, 1, 1, 1})
      .Input("x_zero", kUint8, {})
      .Input("w_zero", kInt8, {2})
      .Output("y");
  SetInts(b.Node("ConvInteger", {"x", "w", "x_zero", "w_zero"}, {"y"}), "pads", {0, 0, 0, 1});
  const Tensor y = RunModel(b, {Values(DType::kU8, {1, 1, 2, 2}, {1, 2, 3, 255}),
                                Values(DType::kI8, {2, 1, 1, 1}, {3, -128}),
                                Values(DType::kU8, {}, {1}), Values(DType::kI8, {2}, {1, 127})});
  // x - 1 = [[0, 1], [2, 254]], padded with a zero column; w - zero = 2, -255.
  EXPECT_EQ(y.dtype(), DType::kI32);
  EXPECT_THAT(Doubles(y), ElementsAreArray(std::vector<double>{0, 2, 0, 4, 508, 0, 0, -255, 0, -510,
                                                               -64770, 0}));
}

TEST(OnnxQuantizeOpsTest, ConvIntegerWrapsAt32Bits) {
  // 70000 channels of 255 * 127 sum to 2,266,950,000, past INT32_MAX.
  constexpr int64_t kChannels = 70000;
  ModelBuilder b(10);
  b.Input("x", kUint8, {1, kChannels, 1, 1}).Input("w", kInt8, {1, kChannels, 1, 1}).Output("y");
  b.Node("ConvInteger", {"x", "w"}, {"y"});
  const Tensor y =
      RunModel(b, {Values(DType::kU8, {1, kChannels, 1, 1}, std::vector<double>(kChannels, 255)),
                   Values(DType::kI8, {1, kChannels, 1, 1}, std::vector<double>(kChannels, 127))});
  EXPECT_EQ(y.GetInt(0), int64_t{2266950000} - (int64_t{1} << 32));
}

TEST(OnnxQuantizeOpsTest, QLinearConvWithBiasAndPerChannelScales) {
  ModelBuilder b(10);
  b.Input("x", kUint8, {1, 1, 1, 3})
      .Input("x_scale", kFloat, {})
      .Input("x_zero", kUint8, {})
      .Input("w", kUint8, {2, 1, 1, 1})
      .Input("w_scale", kFloat, {2})
      .Input("w_zero", kUint8, {2})
      .Input("y_scale", kFloat, {})
      .Input("y_zero", kUint8, {})
      .Input("bias", kInt32, {2})
      .Output("y");
  b.Node("QLinearConv",
         {"x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"}, {"y"});
  const Tensor y =
      RunModel(b, {Values(DType::kU8, {1, 1, 1, 3}, {0, 5, 9}), Values(DType::kF32, {}, {0.5}),
                   Values(DType::kU8, {}, {4}), Values(DType::kU8, {2, 1, 1, 1}, {3, 250}),
                   Values(DType::kF32, {2}, {1, 0.25}), Values(DType::kU8, {2}, {0, 255}),
                   Values(DType::kF32, {}, {1}), Values(DType::kU8, {}, {100}),
                   Values(DType::kI32, {2}, {1, -1})});
  // Channel 0: (x - 4) * 3 + 1 = [-11, 4, 16], times 0.5: -5.5 -> -6 (to
  // even), 2, 8. Channel 1: (x - 4) * -5 - 1 = [19, -6, -26], times 0.125:
  // 2.375 -> 2, -0.75 -> -1, -3.25 -> -3. Plus 100.
  EXPECT_EQ(y.dtype(), DType::kU8);
  EXPECT_THAT(Doubles(y), ElementsAreArray(std::vector<double>{94, 102, 108, 102, 99, 97}));

  ModelBuilder bad(10);
  bad.Input("x", kUint8, {1, 1, 1, 3})
      .Input("s", kFloat, {})
      .Input("z", kUint8, {})
      .Input("w", kUint8, {2, 1, 1, 1})
      .Input("ws", kFloat, {3})
      .Output("y");
  bad.Node("QLinearConv", {"x", "s", "z", "w", "ws", "z", "s", "z"}, {"y"}, "qconv");
  EXPECT_THAT(ImportError(bad),
              HasSubstr("node 'qconv' (QLinearConv): w_scale must be a scalar or have shape [2] "
                        "(one per output channel), got [3]"));
}

}  // namespace
}  // namespace loom
