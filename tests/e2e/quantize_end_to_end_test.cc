// ONNX's quantization ops (frontends/onnx/onnx_ops_quantize.cc) imported
// and run through the whole CPU path against the interpreter: the integer
// convolutions in each of loom's conv forms (im2col, with a known weight,
// grouped), QLinearMatMul batched, and blocked QuantizeLinear to a 4-bit
// integer and to float8.
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kUint8 = onnx::TensorProto::UINT8;
constexpr int32_t kInt8 = onnx::TensorProto::INT8;
constexpr int32_t kInt32 = onnx::TensorProto::INT32;
// Newer than the onnx.proto loom builds against.
constexpr int64_t kFloat8E4M3FN = 17;
constexpr int64_t kInt4 = 22;

// Integers spread over their whole type, floats in [0.01, 0.1) (scales)
// but input 0's in [-1, 1) (QuantizeLinear's x), each input differently.
EndToEndOptions SpreadInputs() {
  EndToEndOptions options;
  options.fill = [](size_t input, Tensor& t) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const int64_t mixed = (i * 7919 + static_cast<int64_t>(input) * 104729) % 997;
      if (IsFloat(t.dtype())) {
        const double unit = static_cast<double>(mixed) / 997;
        t.SetDouble(i, input == 0 ? 2 * unit - 1 : 0.01 + 0.09 * unit);
      } else {
        t.SetInt(i, mixed % 256 - (IsUnsigned(t.dtype()) ? 0 : 128));
      }
    }
  };
  return options;
}

// An 8-bit initializer of `elem_type` with values spread as above.
void EightBitInitializer(ModelBuilder& b, const std::string& name, int32_t elem_type,
                         const std::vector<int64_t>& dims) {
  onnx::TensorProto* t = b.model_for_test().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem_type);
  int64_t count = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    count *= d;
  }
  for (int64_t i = 0; i < count; ++i) {
    t->add_int32_data((i * 31) % 256 - (elem_type == kInt8 ? 128 : 0));
  }
}

void ImportRunAndCompare(const ModelBuilder& b) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  CompileRunAndCompare(*std::move(graph), SpreadInputs());
}

// QLinearConv over x [N, C, H, W] (u8) and w (i8) with per-channel scales
// and zero points and a bias; `weight_known`: w an initializer.
ModelBuilder QLinearConvModel(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                              int64_t group, bool weight_known) {
  ModelBuilder b(10);
  b.Input("x", kUint8, x).Input("x_scale", kFloat, {}).Input("x_zero", kUint8, {});
  if (weight_known) {
    EightBitInitializer(b, "w", kInt8, w);
  } else {
    b.Input("w", kInt8, w);
  }
  b.Input("w_scale", kFloat, {w[0]})
      .Input("w_zero", kInt8, {w[0]})
      .Input("y_scale", kFloat, {})
      .Input("y_zero", kUint8, {})
      .Input("bias", kInt32, {w[0]})
      .Output("y");
  onnx::NodeProto& node = b.Node(
      "QLinearConv",
      {"x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"}, {"y"});
  SetInts(node, "pads", std::vector<int64_t>(2 * (x.size() - 2), 1));
  SetAttr(node, "group", group);
  return b;
}

TEST(QuantizeEndToEndTest, QLinearConvIm2col) {
  ImportRunAndCompare(QLinearConvModel({2, 3, 9, 9}, {8, 3, 3, 3}, 1, /*weight_known=*/false));
}

TEST(QuantizeEndToEndTest, QLinearConvKnownWeight) {
  ImportRunAndCompare(QLinearConvModel({1, 32, 10, 10}, {16, 32, 3, 3}, 1, /*weight_known=*/true));
}

TEST(QuantizeEndToEndTest, QLinearConvDepthwise) {
  ImportRunAndCompare(QLinearConvModel({1, 8, 12, 12}, {8, 1, 3, 3}, 8, /*weight_known=*/true));
}

TEST(QuantizeEndToEndTest, ConvIntegerGroupedSamePadding) {
  ModelBuilder b(10);
  b.Input("x", kInt8, {1, 8, 11, 11})
      .Input("w", kUint8, {4, 4, 3, 3})
      .Input("x_zero", kInt8, {})
      .Input("w_zero", kUint8, {4})
      .Output("y");
  onnx::NodeProto& node = b.Node("ConvInteger", {"x", "w", "x_zero", "w_zero"}, {"y"});
  SetAttr(node, "group", int64_t{2});
  SetInts(node, "dilations", {2, 2});
  SetString(node, "auto_pad", "SAME_UPPER");
  ImportRunAndCompare(b);
}

TEST(QuantizeEndToEndTest, QLinearMatMulBatched) {
  ModelBuilder b(21);
  b.Input("a", kInt8, {3, 17, 40})
      .Input("a_scale", kFloat, {})
      .Input("a_zero", kInt8, {})
      .Input("b", kInt8, {3, 40, 9})
      .Input("b_scale", kFloat, {9})
      .Input("b_zero", kInt8, {9})
      .Input("y_scale", kFloat, {})
      .Input("y_zero", kInt8, {})
      .Output("y");
  b.Node("QLinearMatMul", {"a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"},
         {"y"});
  ImportRunAndCompare(b);
}

TEST(QuantizeEndToEndTest, BlockedQuantizeToInt4AndFloat8) {
  ModelBuilder b(21);
  b.Input("x", kFloat, {4, 10}).Input("scale", kFloat, {4, 3}).Output("q4").Output("q8");
  onnx::NodeProto& int4 = b.Node("QuantizeLinear", {"x", "scale"}, {"q4"});
  SetAttr(int4, "block_size", int64_t{4});
  SetAttr(int4, "output_dtype", kInt4);
  onnx::NodeProto& float8 = b.Node("QuantizeLinear", {"x", "scale"}, {"q8"});
  SetAttr(float8, "block_size", int64_t{4});
  SetAttr(float8, "output_dtype", kFloat8E4M3FN);
  ImportRunAndCompare(b);
}

}  // namespace
}  // namespace loom
