#include "frontends/onnx/onnx_importer.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Builds small ONNX models in memory.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  ModelBuilder& Input(const std::string& name, int32_t elem_type,
                      const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  // A dim given as a name (symbolic) instead of a value.
  ModelBuilder& SymbolicInput(const std::string& name, const std::string& dim) {
    onnx::ValueInfoProto* info = model_.mutable_graph()->add_input();
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_param(dim);
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  ModelBuilder& TypedOutput(const std::string& name, int32_t elem_type,
                            const std::vector<int64_t>& dims) {
    SetType(model_.mutable_graph()->add_output(), name, elem_type, dims);
    return *this;
  }
  ModelBuilder& Initializer(const std::string& name, std::vector<int64_t> dims,
                            const std::vector<float>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    *t = FloatTensor(dims, values);
    t->set_name(name);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const std::string& input : inputs) node->add_input(input);
    for (const std::string& output : outputs) node->add_output(output);
    return *node;
  }

  const onnx::ModelProto& model() const { return model_; }
  onnx::ModelProto& model_for_test() { return model_; }

  static onnx::TensorProto FloatTensor(const std::vector<int64_t>& dims,
                                       const std::vector<float>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t.add_dims(d);
    for (float v : values) t.add_float_data(v);
    return t;
  }
  static onnx::TensorProto IntTensor(const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& values) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t.add_dims(d);
    for (int64_t v : values) t.add_int64_data(v);
    return t;
  }

 private:
  static void SetType(onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type,
                      const std::vector<int64_t>& dims) {
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }

  onnx::ModelProto model_;
};

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

void SetAttr(onnx::NodeProto& node, const std::string& name, const onnx::TensorProto& value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = value;
}

void SetInts(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void SetString(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

Tensor Iota(Shape shape, double scale = 0.1) {
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.SetDouble(i, scale * static_cast<double>((i * 7) % 11) - 0.4);
  }
  return t;
}

std::vector<std::string> Ops(const Graph& graph) {
  std::vector<std::string> ops;
  for (const Node& node : graph.nodes()) ops.emplace_back(node.op);
  return ops;
}

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
  b.Node("Det", {"x"}, {"y"}, "det1");
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'det1' (Det): op Det (opset 17) is not "
                                                  "supported"));
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
                        "loom's ONNX importer knows (1 to 17)"));

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

TEST(OnnxImporterTest, RefusesUnsupportedDtypes) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT16, {2}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("graph input 'x'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("FLOAT16"));

  ModelBuilder cast;
  cast.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  SetAttr(cast.Node("Cast", {"x"}, {"y"}, "to_half"), "to", int64_t{onnx::TensorProto::FLOAT16});
  graph = ImportOnnxModel(cast.model());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'to_half' (Cast)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("FLOAT16"));
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
  EXPECT_THAT(graph.status().message(), HasSubstr("dim 0 is dynamic ('N')"));
  OnnxImportOptions options;
  options.input_shapes["x"] = {5};
  graph = ImportOnnxModel(b.model(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->inputs()[0]).type.shape, Shape{5});
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

// Before opset 13, softmax flattens to 2-D at `axis` and normalises over
// everything after it.
TEST(OnnxImporterTest, OldSoftmaxFlattensAtAxis) {
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

TEST(OnnxImporterTest, LayerNormalizationStatisticsOutputs) {
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
TEST(OnnxImporterTest, RecurrenceMaterialisesMiddleInputs) {
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

TEST(OnnxImporterTest, RecurrenceRefusesActivationParameters) {
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

TEST(OnnxImporterTest, ClipBoundsMustBeKnown) {
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

TEST(OnnxImporterTest, GatherElementsWithKnownIndices) {
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

Tensor I64(Shape shape, const std::vector<int64_t>& values) {
  Tensor t(DType::kI64, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetInt(i, values[i]);
  return t;
}

TEST(OnnxImporterTest, IndicesKnownOnlyAtRunTimeStayInputs) {
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

TEST(OnnxImporterTest, ScatterElementsAndItsOldName) {
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
TEST(OnnxImporterTest, ConvAutoPadBecomesExplicitPads) {
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
TEST(OnnxImporterTest, ConvTransposeOutputShapeBecomesPads) {
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

TEST(OnnxImporterTest, ConvTransposeComputesAndRefuses) {
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
TEST(OnnxImporterTest, PadModes) {
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
                  HasSubstr("node 'pad' (Pad): mode 'wrap' is not supported (only 'constant', "
                            "'reflect', 'edge')"));
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

TEST(OnnxImporterTest, ConvWithBiasComputes) {
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
TEST(OnnxImporterTest, ResizeBeforeOpset11AndUpsample) {
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

TEST(OnnxImporterTest, ResizeRefusals) {
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

TEST(OnnxImporterTest, ConvAndPoolRefusals) {
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

TEST(OnnxImporterTest, AveragePoolCountsPadsWhenAsked) {
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
TEST(OnnxImporterTest, PReluSlopePerChannelBeforeOpset7) {
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

// Before opset 7, Add and the other binary ops broadcast only with
// broadcast=1; B's dims then align with A's from `axis` on.
TEST(OnnxImporterTest, LegacyBroadcastAlignsAtAxis) {
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
TEST(OnnxImporterTest, BroadcastAttributeRefusedFromOpset7) {
  ModelBuilder b(7);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Initializer("b", {3}, {1, 2, 3}).Output("y");
  SetAttr(b.Node("Mul", {"x", "b"}, {"y"}, "mul"), "broadcast", 1);
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("node 'mul' (Mul): attribute 'broadcast' is not supported"));
}

// Gemm before opset 7: C [N] broadcasts with broadcast=1 and must be [M, N]
// without it.
TEST(OnnxImporterTest, LegacyGemmBroadcast) {
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
  EXPECT_THAT(TensorFromOnnx(external, "t").status().message(), HasSubstr("external"));
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

TEST(OnnxImporterTest, BitShiftOnUnsignedIntegers) {
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
  ModelBuilder signed_shift;
  signed_shift.Input("x", onnx::TensorProto::INT32, {1}).Output("y");
  SetString(signed_shift.Node("BitShift", {"x", "x"}, {"y"}, "s"), "direction", "RIGHT");
  EXPECT_THAT(ImportOnnxModel(signed_shift.model()).status().message(),
              HasSubstr("input 0 has dtype i32, expected an unsigned integer dtype"));
}

TEST(OnnxImporterTest, FloatOnlyOpsRefuseIntegers) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::UINT8, {2}).Output("y");
  b.Node("Exp", {"x"}, {"y"}, "e");
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("input 0 has dtype u8, expected a float dtype"));
}

TEST(OnnxImporterTest, QuantizeAndDequantizePerAxis) {
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

TEST(OnnxImporterTest, MatMulIntegerZeroPointsPerRowAndColumn) {
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

TEST(OnnxImporterTest, LoadOnnxFileNamesThePath) {
  absl::StatusOr<Graph> graph = LoadOnnxFile("/nonexistent/model.onnx");
  EXPECT_THAT(graph.status().message(), HasSubstr("/nonexistent/model.onnx: cannot open"));
  graph = LoadOnnxFile(testing::TempDir());
  EXPECT_THAT(graph.status().message(), HasSubstr(": is a directory"));
}

// --- the issue-19 math ops (onnx_ops_math.cc) --------------------------------

void IntInitializer(ModelBuilder& b, const std::string& name, std::vector<int64_t> dims,
                    const std::vector<int64_t>& values) {
  onnx::TensorProto* t = b.model_for_test().mutable_graph()->add_initializer();
  *t = ModelBuilder::IntTensor(dims, values);
  t->set_name(name);
}

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
  EXPECT_THAT(error(4, 1, onnx::TensorProto::FLOAT16), HasSubstr("FLOAT16"));
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
