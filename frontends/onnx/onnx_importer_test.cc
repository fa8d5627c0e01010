#include "frontends/onnx/onnx_importer.h"

#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <string>
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
    onnx::TypeProto::Tensor* tensor =
        info->mutable_type()->mutable_tensor_type();
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
  onnx::NodeProto& Node(const std::string& op,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::string& name = "") {
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
  static void SetType(onnx::ValueInfoProto* info, const std::string& name,
                      int32_t elem_type, const std::vector<int64_t>& dims) {
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor =
        info->mutable_type()->mutable_tensor_type();
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

void SetAttr(onnx::NodeProto& node, const std::string& name,
             const onnx::TensorProto& value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = value;
}

void SetInts(onnx::NodeProto& node, const std::string& name,
             const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void SetString(onnx::NodeProto& node, const std::string& name,
               const std::string& value) {
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
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3})
      .Initializer("w", {3}, {1, 2, 3})
      .Output("y");
  SetAttr(b.Node("Constant", {}, {"c"}), "value",
          ModelBuilder::FloatTensor({}, {10}));
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
  EXPECT_THAT(graph.status().message(),
              HasSubstr("node 'det1' (Det): op Det (opset 17) is not "
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
  overflow.Input("x", onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40})
      .Output("y");
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
  b.Input("x", onnx::TensorProto::UINT8, {2}).Output("y");
  b.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("graph input 'x'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("UINT8"));

  ModelBuilder cast;
  cast.Input("x", onnx::TensorProto::FLOAT, {2}).Output("y");
  SetAttr(cast.Node("Cast", {"x"}, {"y"}, "to_half"), "to",
          int64_t{onnx::TensorProto::FLOAT16});
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
  SetAttr(b.Node("Constant", {}, {"zero"}), "value",
          ModelBuilder::IntTensor({1}, {0}));
  SetAttr(b.Node("Constant", {}, {"one"}), "value",
          ModelBuilder::IntTensor({1}, {1}));
  SetAttr(b.Node("Constant", {}, {"minus_one"}), "value",
          ModelBuilder::IntTensor({1}, {-1}));
  b.Node("Slice", {"s", "zero", "one"}, {"batch"});
  SetAttr(b.Node("Concat", {"batch", "minus_one"}, {"target"}), "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(Ops(*graph), std::vector<std::string>{"reshape"});
  EXPECT_EQ(graph->nodes()[0].attrs.GetInts("shape"),
            (std::vector<int64_t>{2, -1}));
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
      EXPECT_NEAR((*y)[0].GetDouble(row * 12 + i),
                  std::exp(x.GetDouble(row * 12 + i)) / sum, 1e-6);
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
    EXPECT_NEAR((*out)[0].GetDouble(row * 5),
                (x.GetDouble(row * 5) - mean) * inv_std, 1e-5);
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
  onnx::NodeProto& gru =
      b.Node("GRU", {"x", "w", "r", "", "", "h0"}, {"", "y_h"});
  SetAttr(gru, "hidden_size", 5);
  SetAttr(gru, "linear_before_reset", 1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(Ops(*graph), std::vector<std::string>{"gru"});
  const Node& node = graph->nodes()[0];
  ASSERT_EQ(node.inputs.size(), 6u);
  const Tensor& bias = graph->initializer(node.inputs[3]);
  EXPECT_EQ(bias.shape(), (Shape{1, 30}));
  for (int64_t i = 0; i < bias.num_elements(); ++i)
    EXPECT_EQ(bias.GetDouble(i), 0);
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
  b.Input("x", onnx::TensorProto::FLOAT, {3})
      .Input("lo", onnx::TensorProto::FLOAT, {})
      .Output("y");
  b.Node("Clip", {"x", "lo"}, {"y"}, "clip");
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("input 'lo' (min) must be known at import"));

  ModelBuilder known;
  known.Input("x", onnx::TensorProto::FLOAT, {3})
      .Initializer("hi", {}, {0.25f})
      .Output("y");
  known.Node("Clip", {"x", "", "hi"}, {"y"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(known.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE(graph->nodes()[0].attrs.Has("min"));
  EXPECT_EQ(graph->nodes()[0].attrs.GetFloat("max", 0), 0.25);
}

TEST(OnnxImporterTest, DeclaredOutputTypesAreChecked) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3})
      .TypedOutput("y", onnx::TensorProto::FLOAT, {3, 2});
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
                      }),
              HasSubstr("node 'n' (MaxPool): the Indices output is not supported (only Y)"));
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
  EXPECT_THAT(TensorFromOnnx(lying, "t").status().message(),
              HasSubstr("1 values in float_data"));
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
              HasSubstr("external"));
  onnx::TensorProto negative = ModelBuilder::FloatTensor({}, {1});
  negative.add_dims(-2);
  EXPECT_EQ(TensorFromOnnx(negative, "t").status().code(),
            absl::StatusCode::kInvalidArgument);
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
