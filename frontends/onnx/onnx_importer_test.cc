// The ONNX importer's contract: inputs, initializers and constants, the
// refusals (ops, domains, opsets, dtypes, attributes, limits), dynamic dims
// and bound inputs, shape computations folded at import, declared output
// types, and the tensor reader (onnx_tensor.h). The ops' mappings are
// tested in onnx_nn_ops_test.cc and onnx_ops_test.cc.
#include "frontends/onnx/onnx_importer.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "frontends/onnx/onnx_tensor.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(OnnxImporterTest, MapsInputsInitializersAndConstants) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Initializer("w", {3}, {1, 2, 3}).Output("y");
  SetAttr(b.Node("Constant", {}, {"c"}), "value", ModelBuilder::FloatTensor({}, {10}));
  b.Node("Add", {"x", "w"}, {"s"});
  b.Node("Mul", {"s", "c"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->inputs().size(), 1u);
  ASSERT_EQ(graph->weights().size(), 1u);
  ASSERT_EQ(graph->constants().size(), 1u);
  EXPECT_EQ(graph->value(graph->weights()[0]).name, "w");
  EXPECT_EQ(graph->value(graph->outputs()[0]).name, "y");
  EXPECT_EQ(Ops(*graph), (std::vector<std::string>{"add", "mul"}));
  Tensor x = Iota({2, 3});
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ((*y)[0].GetDouble(i), (x.GetDouble(i) + 1 + i % 3) * 10);
  }
}

TEST(OnnxImporterTest, RefusesUnsupportedOpNamingTheNode) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 1, 4, 4}).Output("y");
  b.Node("Bernoulli", {"x"}, {"y"}, "coin1");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'coin1' (Bernoulli): op Bernoulli (opset 17) is not supported"));
}

TEST(OnnxImporterTest, RefusesOtherDomains) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  b.Node("Relu", {"x"}, {"y"}).set_domain("com.example");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_THAT(graph.status().message(), HasSubstr("domain 'com.example'"));
}

TEST(OnnxImporterTest, RefusesOpsetsTheImporterDoesNotKnow) {
  ModelBuilder future(999);
  future.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  future.Node("Relu", {"x"}, {"y"});
  EXPECT_THAT(ImportOnnxModel(future.model()).status().message(),
              HasSubstr("imports opset 999 of the default ONNX domain, newer than the newest "
                        "loom's ONNX importer knows (1 to 28)"));

  ModelBuilder unknown;
  unknown.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  unknown.Node("Relu", {"x"}, {"y"});
  onnx::OperatorSetIdProto* import = unknown.model_for_test().add_opset_import();
  import->set_domain("com.example");
  import->set_version(1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(unknown.model());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("imports opset 1 of domain 'com.example', a domain loom's ONNX "
                        "importer does not know"));

  // A domain ONNX knows, imported but unused, is fine.
  import->set_domain("ai.onnx.ml");
  EXPECT_TRUE(ImportOnnxModel(unknown.model()).ok());
}

// Within the known opsets each node is judged on its op's version: one
// newer than its converter implements would be refused by name, with both
// versions (Importer::CheckVersion). Every converter now implements its
// op's newest version (QuantizeLinear's 21 was the last one behind), so
// this checks that such a node imports.
TEST(OnnxImporterTest, ImportsOpVersionsTheConverterImplements) {
  ModelBuilder b(21);
  b.Input("x", onnx::TensorProto::FLOAT, {4}).Initializer("scale", {}, {0.5}).Output("q");
  b.Node("Relu", {"x"}, {"r"});
  b.Node("QuantizeLinear", {"r", "scale"}, {"q"}).set_name("quant");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_TRUE(graph.ok()) << graph.status();
}

// An op that opset 17 does not have: Gelu (opset 20), and ReduceMean with
// its axes as an input (opset 18), in one model of opset 20.
TEST(OnnxImporterTest, ImportsOpsOfNewerOpsets) {
  ModelBuilder b(20);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Output("y");
  onnx::TensorProto* axes = b.model_for_test().mutable_graph()->add_initializer();
  *axes = ModelBuilder::IntTensor({1}, {1});
  axes->set_name("axes");
  b.Node("Gelu", {"x"}, {"g"});
  b.Node("ReduceMean", {"g", "axes"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor x = Iota({2, 3});
  absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {x});
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t row = 0; row < 2; ++row) {
    double sum = 0;
    for (int64_t col = 0; col < 3; ++col) {
      const double v = x.GetDouble(row * 3 + col);
      sum += 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }
    EXPECT_NEAR((*y)[0].GetDouble(row), sum / 3, 1e-6);
  }
}

TEST(OnnxImporterTest, RefusesInputShapesBeyondTheLimits) {
  ModelBuilder overflow;
  overflow.Input("x", onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40}).Output("y");
  overflow.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(overflow.model());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("graph input 'x': shape [1099511627776,1099511627776] is too large: "
                        "its element count overflows int64"));

  ModelBuilder negative;
  negative.Input("x", onnx::TensorProto::FLOAT, {-3, 4}).Output("y");
  negative.Node("Relu", {"x"}, {"y"});
  EXPECT_THAT(ImportOnnxModel(negative.model()).status().message(),
              HasSubstr("graph input 'x': dim 0 is -3, a negative dimension"));
}

TEST(OnnxImporterTest, RefusesNodeOutputsBeyondTheLimits) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Output("y");
  SetAttr(b.Node("Constant", {}, {"shape"}), "value",
          ModelBuilder::IntTensor({3}, {int64_t{1} << 40, 2, 3}));
  b.Node("Expand", {"x", "shape"}, {"y"}, "big");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'big' (Expand): loom expand: output 'y': shape "
                        "[1099511627776,2,3] is too large"));
}

TEST(OnnxImporterTest, AbsurdSizeAttributesAreRefusedWithoutOverflow) {
  ModelBuilder depth;
  depth.Input("x", onnx::TensorProto::FLOAT, {1, 0, 2, 2}).Output("y");
  SetAttr(depth.Node("DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", int64_t{1} << 32);
  EXPECT_THAT(ImportOnnxModel(depth.model()).status().message(),
              HasSubstr("node 'd2s' (DepthToSpace): attribute 'blocksize' 4294967296 is too "
                        "large"));

  ModelBuilder rnn;
  rnn.Input("x", onnx::TensorProto::FLOAT, {4, 2, 3})
      .Input("w", onnx::TensorProto::FLOAT, {1, 5, 3})
      .Input("r", onnx::TensorProto::FLOAT, {1, 5, 5})
      .Input("h0", onnx::TensorProto::FLOAT, {1, 2, 5})
      .Output("y_h");
  SetAttr(rnn.Node("RNN", {"x", "w", "r", "", "", "h0"}, {"", "y_h"}, "cell"), "hidden_size",
          int64_t{1} << 62);
  EXPECT_THAT(ImportOnnxModel(rnn.model()).status().message(),
              HasSubstr("node 'cell' (RNN): attribute 'hidden_size' is 4611686018427387904 but "
                        "R [1,5,5] has hidden size 5"));
}

TEST(OnnxImporterTest, ExtremeIntegersInFoldedConstantsDoNotOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ModelBuilder range;
  range.Output("y");
  const std::pair<const char*, int64_t> operands[] = {
      {"start", kMin}, {"limit", kMax}, {"delta", int64_t{1} << 62}};
  for (const auto& [name, value] : operands) {
    SetAttr(range.Node("Constant", {}, {name}), "value", ModelBuilder::IntTensor({}, {value}));
  }
  range.Node("Range", {"start", "limit", "delta"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(range.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor& values = graph->initializer(graph->outputs()[0]);
  ASSERT_EQ(values.shape(), Shape{4});
  EXPECT_EQ(values.GetInt(3), int64_t{1} << 62);

  ModelBuilder eye;
  eye.Input("x", onnx::TensorProto::FLOAT, {3, 3}).Output("y");
  SetAttr(eye.Node("EyeLike", {"x"}, {"y"}), "k", kMax);
  graph = ImportOnnxModel(eye.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor& ones = graph->initializer(graph->outputs()[0]);
  for (int64_t i = 0; i < ones.num_elements(); ++i) EXPECT_EQ(ones.GetDouble(i), 0);
}

TEST(OnnxImporterTest, RangesTooLongOrEndlessAreRefusedWithTheirCause) {
  for (const auto& [limit, delta, cause] :
       {std::tuple<float, float, const char*>{1e13f, 1, "has 9999999827968 elements, too many"},
        {1, 0, "delta must be non-zero"}}) {
    ModelBuilder range;
    range.Output("y");
    const std::pair<const char*, float> operands[] = {
        {"start", 0}, {"limit", limit}, {"delta", delta}};
    for (const auto& [name, value] : operands) {
      SetAttr(range.Node("Constant", {}, {name}), "value", ModelBuilder::FloatTensor({}, {value}));
    }
    range.Node("Range", {"start", "limit", "delta"}, {"y"}, "range");
    EXPECT_THAT(ImportOnnxModel(range.model()).status().message(),
                AllOf(HasSubstr("node 'range' (Range)"), HasSubstr(cause)));
  }
}

// FLOAT16 and BFLOAT16 inputs and initializers (int32_data and raw_data
// hold their bits) import; a node on them computes in f32 and rounds each
// output once: Celu(-0.5) = -0.39347 is -0.392578125 in bfloat16, where
// rounding after its exp and its subtraction would give -0.39453125.
TEST(OnnxImporterTest, HalfFloatNodesComputeInF32AndRoundOnce) {
  ModelBuilder b(22);
  b.Input("x", onnx::TensorProto::BFLOAT16, {1}).Input("h", onnx::TensorProto::FLOAT16, {2});
  b.Output("celu").Output("sum").Output("product");
  onnx::TensorProto* w = b.model_for_test().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT16);
  w->add_dims(2);
  w->add_int32_data(0x3c00);  // 1
  w->add_int32_data(0xc100);  // -2.5
  onnx::TensorProto* v = b.model_for_test().mutable_graph()->add_initializer();
  v->set_name("v");
  v->set_data_type(onnx::TensorProto::BFLOAT16);
  v->add_dims(1);
  v->set_raw_data(std::string("\x00\x40", 2));  // 2, little-endian
  b.Node("Celu", {"x"}, {"celu"});
  b.Node("Add", {"h", "w"}, {"sum"});
  b.Node("Mul", {"x", "v"}, {"product"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  Tensor x(DType::kBF16, {1});
  x.SetDouble(0, -0.5);
  Tensor h(DType::kF16, {2});
  h.SetDouble(0, 0x1p-11);  // 1 + 2^-11 ties to 1
  h.SetDouble(1, 0.5);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {x, h});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kBF16);
  EXPECT_EQ((*out)[0].GetDouble(0), -0.392578125);
  EXPECT_EQ((*out)[1].dtype(), DType::kF16);
  EXPECT_EQ((*out)[1].GetDouble(0), 1.0);
  EXPECT_EQ((*out)[1].GetDouble(1), -2.0);
  EXPECT_EQ((*out)[2].dtype(), DType::kBF16);
  EXPECT_EQ((*out)[2].GetDouble(0), -1.0);
}

TEST(OnnxImporterTest, RefusesUnsupportedDtypes) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::COMPLEX64, {2}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("graph input 'x'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("COMPLEX64"));

  ModelBuilder cast;
  cast.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  SetAttr(cast.Node("Cast", {"x"}, {"y"}, "to_complex"), "to",
          int64_t{onnx::TensorProto::COMPLEX64});
  graph = ImportOnnxModel(cast.model());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'to_complex' (Cast)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("COMPLEX64"));
}

TEST(OnnxImporterTest, RefusesUnknownAttributes) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  SetAttr(b.Node("Relu", {"x"}, {"y"}, "r"), "fancy", 1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'r' (Relu): attribute 'fancy' is not supported"));
}

TEST(OnnxImporterTest, DynamicDimsNeedAShape) {
  ModelBuilder b;
  b.SymbolicInput("x", "N").Output("y");
  b.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("dim 0 is the named dim 'N'"));
  OnnxImportOptions options;
  options.input_shapes["x"] = {5};
  graph = ImportOnnxModel(b.model(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs()[0]).type.shape, Shape{5});
  // A named dim's size, by its name.
  OnnxImportOptions named;
  named.dims["N"] = 7;
  graph = ImportOnnxModel(b.model(), named);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs()[0]).type.shape, Shape{7});
  named.dims["M"] = 1;
  graph = ImportOnnxModel(b.model(), named);
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("the named dim 'M', which no graph input has (the model's: N)"));
}

// Inputs sharing a named dim give it one size, read from the shapes given
// for them, within the dim's bounds; the errors name the input and the dim.
TEST(OnnxImporterTest, NamedDimsTakeOneSizeWithinTheirBounds) {
  ModelBuilder b;
  b.SymbolicInput("x", "N").SymbolicInput("y", "N").Output("z");
  b.Node("Add", {"x", "y"}, {"z"});
  OnnxImportOptions options;
  options.input_shapes["x"] = {5};
  // y's dim takes the size x's shape gives N.
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs()[1]).type.shape, Shape{5});

  options.input_shapes["y"] = {6};
  graph = ImportOnnxModel(b.model(), options);
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("graph input 'y': dim 0, the named dim 'N', is 6 but 5 in graph input "
                        "'x' (dim 0)"));

  options.input_shapes["y"] = {5};
  options.dim_bounds["N"] = {1, 4};
  graph = ImportOnnxModel(b.model(), options);
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      graph.status().message(),
      HasSubstr("graph input 'x': dim 0, the named dim 'N', is 5, outside its bounds 1..4"));
  options.dim_bounds["N"] = {1, 8};
  EXPECT_TRUE(ImportOnnxModel(b.model(), options).ok());

  // A size given by name must agree with the shapes and the bounds too.
  options.dims["N"] = 7;
  graph = ImportOnnxModel(b.model(), options);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("graph input 'x': dim 0, the named dim 'N', is 5 but 7 as given"));
  options.input_shapes.clear();
  options.dims["N"] = 9;
  graph = ImportOnnxModel(b.model(), options);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("the size given for the named dim 'N' is 9, outside its bounds 1..8"));

  OnnxImportOptions misspelt;
  misspelt.dim_bounds["M"] = {1, 2};
  graph = ImportOnnxModel(b.model(), misspelt);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("bounds are given for the named dim 'M', which no graph input has"));
  misspelt.dim_bounds = {{"N", {3, 2}}};
  graph = ImportOnnxModel(b.model(), misspelt);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("the bounds given for the named dim 'N' are empty or negative: 3..2"));
}

// One-element initializers are literals (constants, which lowering writes
// into the kernels); larger ones are weights.
TEST(OnnxImporterTest, OneElementInitializersAreConstants) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {3})
      .Initializer("exponent", {}, {3})
      .Initializer("w", {3}, {1, 2, 3})
      .Output("y");
  b.Node("Pow", {"x", "exponent"}, {"p"});
  b.Node("Add", {"p", "w"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->constants().size(), 1u);
  EXPECT_EQ(graph->value(graph->constants()[0]).name, "exponent");
  ASSERT_EQ(graph->weights().size(), 1u);
  EXPECT_EQ(graph->value(graph->weights()[0]).name, "w");
}

TEST(OnnxImporterTest, ShapeOperandsMustBeKnownOrBound) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 6})
      .Input("shape", onnx::TensorProto::INT64, {3})
      .Output("y");
  b.Node("Reshape", {"x", "shape"}, {"y"}, "r");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'r' (Reshape): input 'shape' (the target shape) "
                        "must be known at import"));

  OnnxImportOptions options;
  Tensor shape(DType::kI64, {3});
  shape.SetInt(0, 0);  // ONNX: copy dim 0 of the input
  shape.SetInt(1, 3);
  shape.SetInt(2, -1);
  options.bound_inputs.emplace("shape", shape);
  options.bound_inputs.emplace("x", Iota({2, 6}));  // data: stays an input
  graph = ImportOnnxModel(b.model(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->value(graph->inputs()[0]).name, "x");
  EXPECT_EQ(graph->value(graph->outputs()[0]).type.shape, (Shape{2, 3, 2}));
}

// Reshape(x, Concat(Shape(x)[0:1], [-1])) folds to a reshape with a fixed
// target; nothing of the shape computation is left in the graph.
TEST(OnnxImporterTest, FoldsShapeComputations) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3, 4}).Output("y");
  b.Node("Shape", {"x"}, {"s"});
  SetAttr(b.Node("Constant", {}, {"zero"}), "value", ModelBuilder::IntTensor({1}, {0}));
  SetAttr(b.Node("Constant", {}, {"one"}), "value", ModelBuilder::IntTensor({1}, {1}));
  SetAttr(b.Node("Constant", {}, {"minus_one"}), "value", ModelBuilder::IntTensor({1}, {-1}));
  b.Node("Slice", {"s", "zero", "one"}, {"batch"});
  SetAttr(b.Node("Concat", {"batch", "minus_one"}, {"target"}), "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(Ops(*graph), std::vector<std::string>{"reshape"});
  EXPECT_EQ(graph->nodes()[0].attrs.GetInts("shape"), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(graph->value(graph->outputs()[0]).type.shape, (Shape{2, 12}));
}

TEST(OnnxImporterTest, DeclaredOutputTypesAreChecked) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).TypedOutput("y", onnx::TensorProto::FLOAT, {3, 2});
  b.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("graph output 'y': the model declares f32[3,2] but "
                        "loom computes f32[2,3]"));
}

TEST(OnnxImporterTest, OldOpsetAttributesAndNewOpsetInputs) {
  // Opset 11: Squeeze takes axes as an attribute; opset 13 as an input.
  ModelBuilder old_model(11);
  old_model.Input("x", onnx::TensorProto::FLOAT, {1, 3, 1}).Output("y");
  onnx::NodeProto& squeeze = old_model.Node("Squeeze", {"x"}, {"y"});
  onnx::AttributeProto* axes = squeeze.add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(0);
  absl::StatusOr<Graph> graph = ImportOnnxModel(old_model.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->outputs()[0]).type.shape, (Shape{3, 1}));

  ModelBuilder new_model(13);
  new_model.Input("x", onnx::TensorProto::FLOAT, {1, 3, 1}).Output("y");
  onnx::TensorProto axes_tensor = ModelBuilder::IntTensor({1}, {-1});
  axes_tensor.set_name("axes");
  *new_model.model_for_test().mutable_graph()->add_initializer() = axes_tensor;
  new_model.Node("Squeeze", {"x", "axes"}, {"y"});
  graph = ImportOnnxModel(new_model.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->outputs()[0]).type.shape, (Shape{1, 3}));
}

TEST(OnnxImporterTest, RefusesHugeConstantsWithoutAllocating) {
  ModelBuilder b;
  b.Output("y");
  SetAttr(b.Node("Constant", {}, {"shape"}), "value",
          ModelBuilder::IntTensor({2}, {int64_t{1} << 30, int64_t{1} << 30}));
  b.Node("ConstantOfShape", {"shape"}, {"y"}, "fill");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'fill' (ConstantOfShape): a constant of shape "
                        "[1073741824,1073741824] is invalid or too large"));
  // A tensor whose dims claim more than its data holds.
  onnx::TensorProto lying = ModelBuilder::FloatTensor({}, {1});
  lying.add_dims(int64_t{1} << 39);
  EXPECT_THAT(TensorFromOnnx(lying, "t").status().message(), HasSubstr("1 values in float_data"));
}

TEST(OnnxTensorTest, ReadsRawAndTypedData) {
  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::INT32);
  raw.add_dims(2);
  const int32_t values[] = {7, -3};
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(values), 8));
  absl::StatusOr<Tensor> t = TensorFromOnnx(raw, "raw");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->GetInt(1), -3);

  onnx::TensorProto bools;
  bools.set_data_type(onnx::TensorProto::BOOL);
  bools.add_dims(3);
  for (int v : {1, 0, 1}) bools.add_int32_data(v);
  t = TensorFromOnnx(bools, "bools");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kBool);
  EXPECT_EQ(t->GetInt(2), 1);
}

TEST(OnnxTensorTest, RefusesBadData) {
  onnx::TensorProto short_data = ModelBuilder::FloatTensor({3}, {1, 2});
  EXPECT_THAT(TensorFromOnnx(short_data, "t").status().message(),
              HasSubstr("2 values in float_data for shape [3]"));
  onnx::TensorProto external = ModelBuilder::FloatTensor({1}, {1});
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_THAT(TensorFromOnnx(external, "t").status().message(),
              HasSubstr("external data without a location"));
  onnx::TensorProto negative = ModelBuilder::FloatTensor({}, {1});
  negative.add_dims(-2);
  EXPECT_EQ(TensorFromOnnx(negative, "t").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnnxTensorTest, ReadsNarrowAndUnsignedIntegers) {
  onnx::TensorProto bytes;
  bytes.set_data_type(onnx::TensorProto::INT8);
  bytes.add_dims(3);
  const int8_t values[] = {-128, 5, 127};
  bytes.set_raw_data(std::string(reinterpret_cast<const char*>(values), 3));
  absl::StatusOr<Tensor> t = TensorFromOnnx(bytes, "bytes");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kI8);
  EXPECT_EQ(t->GetInt(0), -128);

  onnx::TensorProto u16;  // typed: int32_data
  u16.set_data_type(onnx::TensorProto::UINT16);
  u16.add_dims(2);
  for (int v : {65535, 7}) u16.add_int32_data(v);
  t = TensorFromOnnx(u16, "u16");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kU16);
  EXPECT_EQ(t->GetInt(0), 65535);

  onnx::TensorProto u64;  // typed: uint64_data
  u64.set_data_type(onnx::TensorProto::UINT64);
  u64.add_dims(1);
  u64.add_uint64_data(18446744073709551615ULL);
  t = TensorFromOnnx(u64, "u64");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kU64);
  EXPECT_EQ(t->data_as<uint64_t>()[0], 18446744073709551615ULL);

  onnx::TensorProto u32;
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_dims(2);
  u32.add_uint64_data(1);
  EXPECT_THAT(TensorFromOnnx(u32, "u32").status().message(),
              HasSubstr("1 values in uint64_data for shape [2]"));
}

// An f32 tensor of `dims` whose data is external: `entries` as
// external_data's key/value pairs.
onnx::TensorProto ExternalFloats(const std::vector<int64_t>& dims,
                                 const std::vector<std::pair<std::string, std::string>>& entries) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : entries) {
    onnx::StringStringEntryProto* entry = t.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  return t;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// torch.onnx.export writes large weights to a file beside the model:
// external data, read from the model's folder at its offset.
TEST(OnnxTensorTest, ReadsExternalDataFromTheModelsFolder) {
  const std::string dir = testing::TempDir();
  const float values[] = {0, 0, 1.5f, -2.5f, 3.5f};  // two floats of padding first
  WriteBytes(dir + "/weights.data", std::string(reinterpret_cast<const char*>(values), 20));
  absl::StatusOr<Tensor> t = TensorFromOnnx(
      ExternalFloats({3}, {{"location", "weights.data"}, {"offset", "8"}, {"length", "12"}}), "w",
      dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->GetDouble(0), 1.5);
  EXPECT_EQ(t->GetDouble(2), 3.5);

  // Through a model file: LoadOnnxFile reads it from the model's folder.
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {3}).Output("y");
  *b.model_for_test().mutable_graph()->add_initializer() =
      ExternalFloats({3}, {{"location", "weights.data"}, {"offset", "8"}});
  b.model_for_test().mutable_graph()->mutable_initializer(0)->set_name("w");
  b.Node("Add", {"x", "w"}, {"y"});
  WriteBytes(dir + "/external.onnx", b.model().SerializeAsString());
  absl::StatusOr<Graph> graph = LoadOnnxFile(dir + "/external.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->weights().size(), 1);
  EXPECT_EQ(graph->initializer(graph->weights()[0]).GetDouble(1), -2.5);
}

TEST(OnnxTensorTest, RefusesExternalDataItCannotTrust) {
  const std::string dir = testing::TempDir();
  WriteBytes(dir + "/short.data", std::string(8, '\0'));
  const std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>>
      cases = {
          {{{"location", "short.data"}}, "short.data' has fewer than 12 bytes from offset 0"},
          {{{"location", "short.data"}, {"offset", "4"}, {"length", "4"}},
           "external data of 4 bytes, shape [3] of f32 needs 12"},
          {{{"location", "short.data"}, {"offset", "-1"}}, "offset '-1' is not a byte count"},
          {{{"location", "missing.data"}}, "cannot read its external data"},
          {{{"location", "/etc/passwd"}}, "'/etc/passwd' is not a path inside the model's folder"},
          {{{"location", "../short.data"}}, "is not a path inside the model's folder"},
      };
  for (const auto& [entries, message] : cases) {
    EXPECT_THAT(TensorFromOnnx(ExternalFloats({3}, entries), "w", dir).status().message(),
                HasSubstr(message));
  }
  // Imported from memory, there is no folder to read from.
  EXPECT_THAT(
      TensorFromOnnx(ExternalFloats({3}, {{"location", "short.data"}}), "w").status().message(),
      HasSubstr("needs the model's folder"));
  // Dims that claim more than any file holds are refused before allocating.
  EXPECT_THAT(
      TensorFromOnnx(ExternalFloats({int64_t{1} << 40}, {{"location", "short.data"}}), "w", dir)
          .status()
          .message(),
      HasSubstr("has fewer than"));
}

TEST(OnnxImporterTest, LoadOnnxFileNamesThePath) {
  absl::StatusOr<Graph> graph = LoadOnnxFile("/nonexistent/model.onnx");
  EXPECT_THAT(graph.status().message(), HasSubstr("/nonexistent/model.onnx: cannot open"));
  graph = LoadOnnxFile(testing::TempDir());
  EXPECT_THAT(graph.status().message(), HasSubstr(": is a directory"));
}

}  // namespace
}  // namespace loom
