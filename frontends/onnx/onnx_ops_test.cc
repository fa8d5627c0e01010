// The ONNX importer's mappings of the elementwise, tensor and math ops
// (onnx_ops_elementwise.cc, onnx_ops_tensor.cc, onnx_ops_math.cc): Clip's
// bounds, gathers and scatters (indices known at import or only at run
// time), Split by a count, legacy broadcasting, BitShift, the bitwise ops,
// quantization, MatMulInteger, TopK, the window functions and refusals.
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OnnxOpsTest, ClipBoundsMustBeKnown) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {3}).Input("lo", onnx::TensorProto::FLOAT, {}).Output("y");
  b.Node("Clip", {"x", "lo"}, {"y"}, "clip");
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("input 'lo' (min) must be known at import"));

  ModelBuilder known;
  known.Input("x", onnx::TensorProto::FLOAT, {3}).Initializer("hi", {}, {0.25f}).Output("y");
  known.Node("Clip", {"x", "", "hi"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(known.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE(graph->nodes()[0].attrs.Has("min"));
  EXPECT_EQ(graph->nodes()[0].attrs.GetFloat("max", 0), 0.25);
}

// Opset 18's Split by a count of outputs, parts of ceil(dim / n), the last
// smaller: torch.onnx.export's dynamo exporter writes it for q, k and v,
// even into the opset 17 models it converts to.
TEST(OnnxOpsTest, SplitIntoACountOfOutputs) {
  ModelBuilder b(17);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 7}).Output("a").Output("b").Output("c");
  onnx::NodeProto& split = b.Node("Split", {"x"}, {"a", "b", "c"}, "sp");
  SetAttr(split, "axis", -1);
  SetAttr(split, "num_outputs", 3);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(graph->nodes()[0].attrs.GetInts("split"), ElementsAre(3, 3, 1));
  const Tensor x = Iota({2, 7}, 1.0);
  absl::StatusOr<std::vector<Tensor>> parts = Interpret(*graph, {x});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ((*parts)[2].GetDouble(1), x.GetDouble(13));  // x[1][6]

  ModelBuilder miscounted(17);
  miscounted.Input("x", onnx::TensorProto::FLOAT, {2, 7}).Output("a").Output("b").Output("c");
  SetAttr(miscounted.Node("Split", {"x"}, {"a", "b", "c"}, "sp"), "num_outputs", 2);
  EXPECT_THAT(ImportOnnxModel(miscounted.model()).status().message(),
              HasSubstr("node 'sp' (Split): attribute 'num_outputs' is 2 for 3 outputs"));
  ModelBuilder uneven(17);
  uneven.Input("x", onnx::TensorProto::FLOAT, {2, 4}).Output("a").Output("b").Output("c");
  onnx::NodeProto& three = uneven.Node("Split", {"x"}, {"a", "b", "c"}, "sp");
  SetAttr(three, "axis", 1);
  SetAttr(three, "num_outputs", 3);  // parts of 2: nothing left for the third
  EXPECT_THAT(ImportOnnxModel(uneven.model()).status().message(),
              HasSubstr("does not split into 3 parts of 2 and a smaller last one"));
}

TEST(OnnxOpsTest, GatherElementsWithKnownIndices) {
  ModelBuilder b;
  b.Input("data", onnx::TensorProto::FLOAT, {2, 3}).Output("y");
  onnx::TensorProto indices = ModelBuilder::IntTensor({2, 2}, {2, -3, 1, 0});
  indices.set_name("indices");
  *b.model_for_test().mutable_graph()->add_initializer() = indices;
  SetAttr(b.Node("GatherElements", {"data", "indices"}, {"y"}), "axis", 1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor data = Iota({2, 3}, 1.0);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {data});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].GetDouble(0), data.GetDouble(2));
  EXPECT_EQ((*y)[0].GetDouble(1), data.GetDouble(0));
  EXPECT_EQ((*y)[0].GetDouble(2), data.GetDouble(4));
  EXPECT_EQ((*y)[0].GetDouble(3), data.GetDouble(3));
}

TEST(OnnxOpsTest, IndicesKnownOnlyAtRunTimeStayInputs) {
  ModelBuilder b;
  b.Input("table", onnx::TensorProto::FLOAT, {4, 2})
      .Input("ids", onnx::TensorProto::INT64, {3})
      .Input("where", onnx::TensorProto::INT64, {2, 1})
      .Input("rows", onnx::TensorProto::FLOAT, {2, 2})
      .Output("looked_up")
      .Output("written");
  b.Node("Gather", {"table", "ids"}, {"looked_up"}, "embedding");
  b.Node("ScatterND", {"table", "where", "rows"}, {"written"}, "write");
  OnnxImportOptions options;  // values given, but no node needs them at import
  options.bound_inputs.emplace("ids", I64({3}, {0, 3, -1}));
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->inputs().size(), 4);
  EXPECT_THAT(Ops(*graph), ElementsAre("gather", "scatter_nd"));
  const Tensor table = Iota({4, 2}, 1.0), rows = Iota({2, 2}, 2.0);
  absl::StatusOr<std::vector<Tensor>> y =
      Interpret(*graph, {table, I64({3}, {0, 3, -1}), I64({2, 1}, {-1, 1}), rows});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].GetDouble(2), table.GetDouble(6));  // row 3
  EXPECT_EQ((*y)[0].GetDouble(5), table.GetDouble(7));  // row -1: 3
  EXPECT_EQ((*y)[1].GetDouble(6), rows.GetDouble(0));   // row 3 written
  EXPECT_EQ((*y)[1].GetDouble(2), rows.GetDouble(2));   // row 1 written
  EXPECT_EQ((*y)[1].GetDouble(0), table.GetDouble(0));  // row 0 kept

  y = Interpret(*graph, {table, I64({3}, {0, 4, 1}), I64({2, 1}, {0, 1}), rows});
  ASSERT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(),
              HasSubstr("node 'embedding' (gather): index 4 is out of range for axis 0 of "
                        "size 4"));
}

TEST(OnnxOpsTest, ScatterElementsAndItsOldName) {
  for (const char* op : {"ScatterElements", "Scatter"}) {
    ModelBuilder b(op == std::string("Scatter") ? 10 : 17);
    b.Input("data", onnx::TensorProto::FLOAT, {2, 3})
        .Input("indices", onnx::TensorProto::INT64, {1, 2})
        .Input("updates", onnx::TensorProto::FLOAT, {1, 2})
        .Output("y");
    SetAttr(b.Node(op, {"data", "indices", "updates"}, {"y"}, "s"), "axis", 1);
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    ASSERT_TRUE(graph.ok()) << op << ": " << graph.status();
    const Tensor data = Iota({2, 3}, 1.0), updates = Iota({1, 2}, 3.0);
    absl::StatusOr<std::vector<Tensor>> y =
        Interpret(*graph, {data, I64({1, 2}, {2, -3}), updates});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ((*y)[0].GetDouble(2), updates.GetDouble(0)) << op;
    EXPECT_EQ((*y)[0].GetDouble(0), updates.GetDouble(1)) << op;
    EXPECT_EQ((*y)[0].GetDouble(1), data.GetDouble(1)) << op;
  }
}

// Before opset 7, Add and the other binary ops broadcast only with
// broadcast=1; B's dims then align with A's from `axis` on.
TEST(OnnxOpsTest, LegacyBroadcastAlignsAtAxis) {
  auto run = [](const std::vector<int64_t>& b_dims, std::vector<float> b_values,
                const std::function<void(onnx::NodeProto&)>& set) {
    ModelBuilder b(6);
    b.Input("x", onnx::TensorProto::FLOAT, {2, 3, 2})
        .Initializer("b", b_dims, b_values)
        .Output("y");
    set(b.Node("Add", {"x", "b"}, {"y"}, "add"));
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    if (!graph.ok()) return absl::StatusOr<std::vector<Tensor>>(graph.status());
    Tensor x(DType::kF32, {2, 3, 2});  // zeros: y is b broadcast
    return Interpret(*graph, {x});
  };
  absl::StatusOr<std::vector<Tensor>> y = run({3}, {1, 2, 3}, [](onnx::NodeProto& n) {
    SetAttr(n, "broadcast", 1);
    SetAttr(n, "axis", 1);
  });
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<double> along_axis1 = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3};
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*y)[0].GetDouble(i), along_axis1[i]) << i;
  // Without axis, B's dims are A's trailing ones (numpy's rule).
  y = run({2}, {1, 2}, [](onnx::NodeProto& n) { SetAttr(n, "broadcast", 1); });
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*y)[0].GetDouble(i), 1 + i % 2) << i;
  // A size-1 dim stretches.
  y = run({2, 1}, {1, 2}, [](onnx::NodeProto& n) {
    SetAttr(n, "broadcast", 1);
    SetAttr(n, "axis", 0);
  });
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*y)[0].GetDouble(i), 1 + i / 6) << i;
  EXPECT_THAT(run({3}, {1, 2, 3}, [](onnx::NodeProto&) {}).status().message(),
              HasSubstr("node 'add' (Add): operands [2,3,2] and [3] differ in shape; before "
                        "opset 7 they broadcast only with attribute broadcast=1"));
  EXPECT_THAT(run({3}, {1, 2, 3},
                  [](onnx::NodeProto& n) {
                    SetAttr(n, "broadcast", 1);
                    SetAttr(n, "axis", 2);
                  })
                  .status()
                  .message(),
              HasSubstr("node 'add' (Add): with broadcast=1 and axis 2 the second operand [3] "
                        "must match"));
  EXPECT_THAT(run({3}, {1, 2, 3}, [](onnx::NodeProto& n) { SetAttr(n, "broadcast", 2); })
                  .status()
                  .message(),
              HasSubstr("node 'add' (Add): attribute 'broadcast' must be 0 or 1, got 2"));
}

// From opset 7 the attributes are gone: refused like any unknown one.
TEST(OnnxOpsTest, BroadcastAttributeRefusedFromOpset7) {
  ModelBuilder b(7);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Initializer("b", {3}, {1, 2, 3}).Output("y");
  SetAttr(b.Node("Mul", {"x", "b"}, {"y"}, "mul"), "broadcast", 1);
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("node 'mul' (Mul): attribute 'broadcast' is not supported"));
}

// Gemm before opset 7: C [N] broadcasts with broadcast=1 and must be [M, N]
// without it.
TEST(OnnxOpsTest, LegacyGemmBroadcast) {
  for (const int64_t broadcast : {0, 1}) {
    ModelBuilder b(6);
    b.Input("a", onnx::TensorProto::FLOAT, {2, 2})
        .Initializer("w", {2, 2}, {1, 0, 0, 1})
        .Initializer("c", {2}, {10, 20})
        .Output("y");
    SetAttr(b.Node("Gemm", {"a", "w", "c"}, {"y"}, "gemm"), "broadcast", broadcast);
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    if (broadcast == 0) {
      EXPECT_THAT(graph.status().message(),
                  HasSubstr("node 'gemm' (Gemm): C [2] must have shape [2,2]: before opset 7 it "
                            "broadcasts only with attribute broadcast=1"));
      continue;
    }
    ASSERT_TRUE(graph.ok()) << graph.status();
    Tensor a(DType::kF32, {2, 2});
    for (int64_t i = 0; i < 4; ++i) a.SetDouble(i, i + 1);
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {a});
    ASSERT_TRUE(y.ok()) << y.status();
    const double expected[] = {11, 22, 13, 24};
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*y)[0].GetDouble(i), expected[i]) << i;
  }
}

TEST(OnnxOpsTest, BitShiftOnUnsignedIntegers) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::UINT16, {3}).Input("n", onnx::TensorProto::UINT16, {3});
  b.Output("y");
  SetString(b.Node("BitShift", {"x", "n"}, {"y"}, "shift"), "direction", "LEFT");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kU16, {3}), n(DType::kU16, {3});
  for (int64_t i = 0; i < 3; ++i) {
    x.SetInt(i, 0x8001);
    n.SetInt(i, i * 8);  // 0, 8, 16 (the width: 0)
  }
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x, n});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].GetInt(0), 0x8001);
  EXPECT_EQ((*y)[0].GetInt(1), 0x0100);
  EXPECT_EQ((*y)[0].GetInt(2), 0);

  ModelBuilder up;
  up.Input("x", onnx::TensorProto::UINT8, {1}).Output("y");
  SetString(up.Node("BitShift", {"x", "x"}, {"y"}, "up"), "direction", "UP");
  EXPECT_THAT(
      ImportOnnxModel(up.model()).status().message(),
      HasSubstr("node 'up' (BitShift): attribute 'direction' must be \"LEFT\" or \"RIGHT\""));
}

// Signed types are BitShift's from opset 28: before it they make an
// invalid model.
TEST(OnnxOpsTest, BitShiftOnSignedIntegersFromOpset28) {
  for (int64_t opset : {27, 28}) {
    ModelBuilder b(opset);
    b.Input("x", onnx::TensorProto::INT8, {4}).Input("n", onnx::TensorProto::INT8, {4});
    b.Output("y");
    SetString(b.Node("BitShift", {"x", "n"}, {"y"}, "s"), "direction", "RIGHT");
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    if (opset == 27) {
      EXPECT_THAT(graph.status().message(),
                  HasSubstr("node 's' (BitShift): input X has dtype i8; before opset 28 (27 "
                            "here) BitShift takes unsigned integers only"));
      continue;
    }
    ASSERT_TRUE(graph.ok()) << graph.status();
    Tensor x(DType::kI8, {4}), n(DType::kI8, {4});
    const int64_t xs[] = {-128, -7, 100, -1}, ns[] = {3, -1, 8, 7};
    for (int64_t i = 0; i < 4; ++i) {
      x.SetInt(i, xs[i]);
      n.SetInt(i, ns[i]);
    }
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x, n});
    ASSERT_TRUE(y.ok()) << y.status();
    const int64_t expected[] = {-16, -1, 0, -1};  // arithmetic; out of range: -1 or 0
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*y)[0].GetInt(i), expected[i]) << i;
  }
}

TEST(OnnxOpsTest, BitwiseOps) {
  ModelBuilder b(18);
  b.Input("a", onnx::TensorProto::INT16, {2, 2}).Input("b", onnx::TensorProto::INT16, {2});
  b.Output("and").Output("or").Output("xor").Output("not");
  b.Node("BitwiseAnd", {"a", "b"}, {"and"});
  b.Node("BitwiseOr", {"a", "b"}, {"or"});
  b.Node("BitwiseXor", {"a", "b"}, {"xor"});
  b.Node("BitwiseNot", {"a"}, {"not"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor a(DType::kI16, {2, 2}), bv(DType::kI16, {2});
  const int64_t as[] = {0x0ff0, -1, 0, -32768}, bs[] = {0x00ff, 0x5555};
  for (int64_t i = 0; i < 4; ++i) a.SetInt(i, as[i]);
  for (int64_t i = 0; i < 2; ++i) bv.SetInt(i, bs[i]);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {a, bv});
  ASSERT_TRUE(y.ok()) << y.status();
  const int64_t expected[4][4] = {{0x00f0, 0x5555, 0, 0},
                                  {0x0fff, -1, 0x00ff, -32768 | 0x5555},
                                  {0x0f0f, ~0x5555, 0x00ff, -32768 | 0x5555},
                                  {~0x0ff0, 0, -1, 32767}};
  for (int o = 0; o < 4; ++o) {
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*y)[o].GetInt(i), expected[o][i]) << o << ", " << i;
  }
}

TEST(OnnxOpsTest, FloatOnlyOpsRefuseIntegers) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::UINT8, {2}).Output("y");
  b.Node("Exp", {"x"}, {"y"}, "e");
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("input 0 has dtype u8, expected a float dtype"));
}

TEST(OnnxOpsTest, QuantizeAndDequantizePerAxis) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 2, 3}).Initializer("scale", {2}, {0.5, 2});
  onnx::TensorProto* zero = b.model_for_test().mutable_graph()->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::UINT8);
  zero->add_dims(2);
  for (int v : {10, 128}) zero->add_int32_data(v);
  b.Output("q").Output("d");
  b.Node("QuantizeLinear", {"x", "scale", "zero"}, {"q"});
  b.Node("DequantizeLinear", {"q", "scale", "zero"}, {"d"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kF32, {1, 2, 3});
  const double values[] = {0.25, 0.75, -100, 3, 5, 1000};
  for (int64_t i = 0; i < 6; ++i) x.SetDouble(i, values[i]);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  // Channel 0: x / 0.5 + 10, halves to even, saturated at 0; channel 1:
  // x / 2 + 128 (1.5 -> 2, 2.5 -> 2), saturated at 255.
  const int64_t expected_q[] = {10, 12, 0, 130, 130, 255};
  const double expected_d[] = {0, 1, -5, 4, 4, 254};
  ASSERT_EQ((*y)[0].dtype(), DType::kU8);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ((*y)[0].GetInt(i), expected_q[i]) << i;
    EXPECT_EQ((*y)[1].GetDouble(i), expected_d[i]) << i;
  }

  ModelBuilder bad;
  bad.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Initializer("scale", {2}, {1, 1}).Output("q");
  SetAttr(bad.Node("QuantizeLinear", {"x", "scale"}, {"q"}, "quant"), "axis", int64_t{-1});
  EXPECT_THAT(ImportOnnxModel(bad.model()).status().message(),
              HasSubstr("node 'quant' (QuantizeLinear): y_scale must be a scalar or have shape [3] "
                        "(axis 1 of [2,3]), got [2]"));
}

TEST(OnnxOpsTest, MatMulIntegerZeroPointsPerRowAndColumn) {
  ModelBuilder b;
  b.Input("a", onnx::TensorProto::UINT8, {2, 2})
      .Input("b", onnx::TensorProto::INT8, {2, 3})
      .Input("a_zero", onnx::TensorProto::UINT8, {2})
      .Input("b_zero", onnx::TensorProto::INT8, {3})
      .Output("y");
  b.Node("MatMulInteger", {"a", "b", "a_zero", "b_zero"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor a(DType::kU8, {2, 2}), bm(DType::kI8, {2, 3}), a_zero(DType::kU8, {2}),
      b_zero(DType::kI8, {3});
  const int64_t a_values[] = {255, 1, 10, 12}, b_values[] = {-128, 0, 127, 1, 2, 3};
  for (int64_t i = 0; i < 4; ++i) a.SetInt(i, a_values[i]);
  for (int64_t i = 0; i < 6; ++i) bm.SetInt(i, b_values[i]);
  a_zero.SetInt(0, 1);  // row 0: [254, 0]; row 1: [0, 2]
  a_zero.SetInt(1, 10);
  b_zero.SetInt(0, -1);  // columns: [-127, 2], [-1, 1], [127, 3]
  b_zero.SetInt(1, 1);
  b_zero.SetInt(2, 0);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {a, bm, a_zero, b_zero});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dtype(), DType::kI32);
  const int64_t expected[] = {254 * -127, -254, 254 * 127, 4, 2, 6};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ((*y)[0].GetInt(i), expected[i]) << i;

  ModelBuilder floats;
  floats.Input("a", onnx::TensorProto::FLOAT, {2, 2}).Output("y");
  floats.Node("MatMulInteger", {"a", "a"}, {"y"}, "mmi");
  EXPECT_THAT(ImportOnnxModel(floats.model()).status().message(),
              HasSubstr("node 'mmi' (MatMulInteger): A has dtype f32, expected u8 or i8"));
}

// --- the issue-19 math ops (onnx_ops_math.cc) --------------------------------

TEST(OnnxMathOpsTest, TopKTakesKFromAnInitializer) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Output("values").Output("indices");
  IntInitializer(b, "k", {1}, {2});
  SetAttr(b.Node("TopK", {"x", "k"}, {"values", "indices"}, "top"), "largest", 0);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kF32, {2, 3});
  const float data[] = {3, 1, 2, 5, 5, -1};
  for (int i = 0; i < 6; ++i) x.SetDouble(i, data[i]);
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[1].dtype(), DType::kI64);
  EXPECT_EQ((*y)[0].GetDouble(0), 1);
  EXPECT_EQ((*y)[0].GetDouble(1), 2);
  EXPECT_EQ((*y)[1].GetInt(2), 2);  // -1 at index 2, then the first 5
  EXPECT_EQ((*y)[1].GetInt(3), 0);
}

TEST(OnnxMathOpsTest, TopKRefusesAKKnownOnlyAtRunTime) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3})
      .Input("k", onnx::TensorProto::INT64, {1})
      .Output("values")
      .Output("indices");
  b.Node("TopK", {"x", "k"}, {"values", "indices"}, "top");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'top' (TopK)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("must be known at import"));
}

TEST(OnnxMathOpsTest, WindowsAreComputedAtImport) {
  struct Case {
    const char* op;
    int64_t periodic, size;
    std::vector<double> want;
  };
  const double pi = 3.14159265358979323846;
  const Case cases[] = {
      {"HannWindow", 1, 4, {0, 0.5, 1, 0.5}},
      {"HannWindow", 0, 3, {0, 1, 0}},
      {"HammingWindow", 0, 3, {4.0 / 46, 1, 4.0 / 46}},
      {"BlackmanWindow", 1, 4, {0.42 - 0.5 + 0.08, 0.42 - 0.08, 0.42 + 0.5 + 0.08, 0.42 - 0.08}},
      {"BlackmanWindow", 0, 2, {0.42 - 0.5 + 0.08, 0.42 - 0.5 * std::cos(2 * pi) + 0.08}},
  };
  for (const Case& c : cases) {
    ModelBuilder b;
    b.Output("w");
    IntInitializer(b, "size", {}, {c.size});
    onnx::NodeProto& node = b.Node(c.op, {"size"}, {"w"}, "window");
    SetAttr(node, "periodic", c.periodic);
    SetAttr(node, "output_datatype", onnx::TensorProto::DOUBLE);
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {});
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ((*y)[0].type(), (TensorType{DType::kF64, {c.size}})) << c.op;
    for (int64_t i = 0; i < c.size; ++i) {
      EXPECT_NEAR((*y)[0].GetDouble(i), c.want[i], 1e-15) << c.op << " " << i;
    }
  }
}

TEST(OnnxMathOpsTest, WindowErrorsNameTheNode) {
  auto error = [](int64_t size, int64_t periodic, int64_t dtype) {
    ModelBuilder b;
    b.Output("w");
    IntInitializer(b, "size", {}, {size});
    onnx::NodeProto& node = b.Node("HannWindow", {"size"}, {"w"}, "window");
    SetAttr(node, "periodic", periodic);
    SetAttr(node, "output_datatype", dtype);
    return std::string(ImportOnnxModel(b.model()).status().message());
  };
  EXPECT_THAT(error(-2, 1, onnx::TensorProto::FLOAT),
              HasSubstr("node 'window' (HannWindow): the window size is negative: -2"));
  EXPECT_THAT(error(4, 2, onnx::TensorProto::FLOAT),
              HasSubstr("attribute 'periodic' must be 0 or 1, got 2"));
  EXPECT_THAT(error(4, 1, onnx::TensorProto::COMPLEX64), HasSubstr("COMPLEX64"));
}

TEST(OnnxMathOpsTest, RefusalsNameTheNode) {
  {
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 2}).Output("y");
    b.Node("LRN", {"x"}, {"y"}, "norm");
    EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
                HasSubstr("node 'norm' (LRN): attribute 'size' is required"));
  }
  {
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Output("y");
    SetString(b.Node("Einsum", {"x"}, {"y"}, "sum"), "equation", "ij,jk->ik");
    const std::string message(ImportOnnxModel(b.model()).status().message());
    EXPECT_THAT(message, HasSubstr("node 'sum' (Einsum)"));
    EXPECT_THAT(message, HasSubstr("equation \"ij,jk->ik\": has 2 input terms for 1 inputs"));
  }
  {
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::INT64, {2}).Output("y");
    b.Node("Atan", {"x"}, {"y"}, "angle");
    const std::string message(ImportOnnxModel(b.model()).status().message());
    EXPECT_THAT(message, HasSubstr("node 'angle' (Atan)"));
    EXPECT_THAT(message, HasSubstr("dtype i64"));
  }
}

}  // namespace
}  // namespace loom
