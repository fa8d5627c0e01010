// ONNX models through the whole CPU path (import, compile, native compile,
// run), compared with the reference interpreter; and names from the model,
// however hostile, never reach the emitted code.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver.h"
#include "frontends/onnx/onnx_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/random.h"

namespace loom {
namespace {

void AddTensorInfo(onnx::ValueInfoProto* info, const std::string& name,
                   const std::vector<int64_t>& dims) {
  info->set_name(name);
  onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

void SetIntAttr(onnx::NodeProto* node, const std::string& name, int64_t v) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(v);
}

onnx::ModelProto NewModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  return model;
}

std::vector<Tensor> RandomInputs(const Graph& graph) {
  std::vector<Tensor> inputs;
  for (ValueId id : graph.inputs()) {
    Tensor t(graph.value(id).type);
    FillUniform(t, 17 + id, -1, 1);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Compiles and runs `graph`; expects the interpreter's results.
void ExpectCompiledMatchesInterpreter(Graph graph, std::string* source = nullptr) {
  const std::vector<Tensor> inputs = RandomInputs(graph);
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  CompileOptions options;
  options.model = "onnx_end_to_end_test";
  options.verify_each = true;
  const char* tmp = std::getenv("TEST_TMPDIR");
  if (tmp != nullptr) options.cache_dir = absl::StrCat(tmp, "/cache");
  absl::StatusOr<CompiledModel> compiled = CompileGraph(std::move(graph), options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  if (source != nullptr) *source = compiled->module.source->text;
  absl::StatusOr<std::vector<Tensor>> actual = compiled->executable->Run(inputs);
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t i = 0; i < expected->size(); ++i) {
    ASSERT_EQ((*actual)[i].type(), (*expected)[i].type());
    for (int64_t k = 0; k < (*expected)[i].num_elements(); ++k) {
      EXPECT_NEAR((*actual)[i].GetDouble(k), (*expected)[i].GetDouble(k),
                  1e-5 + 1e-4 * std::abs((*expected)[i].GetDouble(k)))
          << "output " << i << " element " << k;
    }
  }
}

TEST(OnnxEndToEndTest, HostileNamesNeverReachTheEmittedCode) {
  const std::string x = "x\"); system(\"rm -rf /\"); //";
  const std::string w = "w*/ #include <evil>\n$(reboot)";
  const std::string y = "y`id`; DROP TABLE";
  const std::string node_name = "node\\\n'; exit 1; '";
  onnx::ModelProto model = NewModel();
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("graph\"name");
  AddTensorInfo(g->add_input(), x, {2, 3});
  AddTensorInfo(g->add_input(), w, {3, 4});
  AddTensorInfo(g->add_output(), y, {2, 4});
  AddNode(g, "MatMul", {x, w}, {"h\"'"}, node_name);
  AddNode(g, "Tanh", {"h\"'"}, {y}, "");
  absl::StatusOr<Graph> graph = ImportOnnxModel(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::string source;
  ExpectCompiledMatchesInterpreter(*std::move(graph), &source);
  for (const std::string& name :
       {x, w, y, node_name, std::string("h\"'"), std::string("graph\"name")}) {
    EXPECT_EQ(source.find(name), std::string::npos) << name;
  }
  for (const char* fragment : {"rm -rf", "evil", "reboot", "DROP", "exit 1"}) {
    EXPECT_EQ(source.find(fragment), std::string::npos) << fragment;
  }
}

// An LSTM that skips B and sequence_lens but gives initial_h and
// initial_c, and wants only Y_c: the importer fills the gaps, the compiled
// code agrees with the interpreter, and the result equals the same LSTM
// given explicit zero biases and full lengths.
TEST(OnnxEndToEndTest, LstmWithGapsInOptionalInputsAndOutputs) {
  auto make = [](bool explicit_gaps) {
    onnx::ModelProto model = NewModel();
    onnx::GraphProto* g = model.mutable_graph();
    AddTensorInfo(g->add_input(), "x", {5, 2, 3});
    AddTensorInfo(g->add_input(), "w", {2, 16, 3});
    AddTensorInfo(g->add_input(), "r", {2, 16, 4});
    AddTensorInfo(g->add_input(), "h0", {2, 2, 4});
    AddTensorInfo(g->add_input(), "c0", {2, 2, 4});
    AddTensorInfo(g->add_output(), "y_c", {2, 2, 4});
    std::vector<std::string> inputs = {"x", "w", "r", "", "", "h0", "c0"};
    if (explicit_gaps) {
      onnx::TensorProto* b = g->add_initializer();
      b->set_name("b");
      b->set_data_type(onnx::TensorProto::FLOAT);
      b->add_dims(2);
      b->add_dims(32);
      for (int i = 0; i < 64; ++i) b->add_float_data(0);
      onnx::TensorProto* lens = g->add_initializer();
      lens->set_name("lens");
      lens->set_data_type(onnx::TensorProto::INT32);
      lens->add_dims(2);
      lens->add_int32_data(5);
      lens->add_int32_data(5);
      inputs[3] = "b";
      inputs[4] = "lens";
    }
    onnx::NodeProto* lstm = AddNode(g, "LSTM", inputs, {"", "", "y_c"}, "lstm");
    SetIntAttr(lstm, "hidden_size", 4);
    onnx::AttributeProto* direction = lstm->add_attribute();
    direction->set_name("direction");
    direction->set_type(onnx::AttributeProto::STRING);
    direction->set_s("bidirectional");
    return model;
  };
  absl::StatusOr<Graph> gaps = ImportOnnxModel(make(false));
  ASSERT_TRUE(gaps.ok()) << gaps.status();
  absl::StatusOr<Graph> explicit_zeros = ImportOnnxModel(make(true));
  ASSERT_TRUE(explicit_zeros.ok()) << explicit_zeros.status();
  const std::vector<Tensor> inputs = RandomInputs(*gaps);
  absl::StatusOr<std::vector<Tensor>> a = Interpret(*gaps, inputs);
  absl::StatusOr<std::vector<Tensor>> b = Interpret(*explicit_zeros, inputs);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE((*a)[0] == (*b)[0]);
  ExpectCompiledMatchesInterpreter(*std::move(gaps));
}

// A file's bytes as a tensor of `type`.
Tensor ReadTensor(const std::string& path, const TensorType& type) {
  Tensor tensor(type);
  std::ifstream file(path, std::ios::binary);
  file.read(static_cast<char*>(tensor.data()), tensor.num_bytes());
  EXPECT_EQ(file.gcount(), tensor.num_bytes()) << path;
  return tensor;
}

// nn.Embedding -> 2-layer nn.GRU -> nn.Linear as torch.onnx.export writes
// it (tests/onnx/models/make_embedding_gru.py), its token ids a graph input:
// loom's logits are PyTorch's; an id outside the vocabulary fails the run
// naming the embedding's node, as the interpreter does.
TEST(OnnxEndToEndTest, EmbeddingGruLinearFromPyTorch) {
  const std::string base = "tests/onnx/models/embedding_gru";
  CompileOptions options;
  options.model = base + ".onnx";
  options.keep_input_graph = true;
  const char* tmp = std::getenv("TEST_TMPDIR");
  if (tmp != nullptr) options.cache_dir = absl::StrCat(tmp, "/cache");
  absl::StatusOr<CompiledModel> compiled = CompileModel(options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Graph& graph = *compiled->input_graph;
  ASSERT_EQ(graph.inputs().size(), 1);  // the ids, not bound at import
  Tensor ids = ReadTensor(base + ".ids.bin", TensorType{DType::kI64, {2, 7}});
  const Tensor torch_logits = ReadTensor(base + ".logits.bin", TensorType{DType::kF32, {2, 7, 20}});
  absl::StatusOr<std::vector<Tensor>> logits = compiled->executable->Run({ids});
  ASSERT_TRUE(logits.ok()) << logits.status();
  ASSERT_EQ((*logits)[0].type(), torch_logits.type());
  for (int64_t k = 0; k < torch_logits.num_elements(); ++k) {
    EXPECT_NEAR((*logits)[0].GetDouble(k), torch_logits.GetDouble(k),
                1e-5 + 1e-4 * std::abs(torch_logits.GetDouble(k)))
        << "element " << k;
  }

  ids.SetInt(9, 20);
  ids.SetInt(3, -21);
  auto message = [](int index) {
    return absl::StrCat("node '/embedding/Gather' (gather): index ", index,
                        " is out of range for axis 0 of size 20");
  };
  absl::StatusOr<std::vector<Tensor>> reference = Interpret(graph, {ids});
  EXPECT_EQ(reference.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reference.status().message(), message(-21));  // the first
  logits = compiled->executable->Run({ids});
  EXPECT_EQ(logits.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(logits.status().message()), testing::AnyOf(message(-21), message(20)));
}

}  // namespace
}  // namespace loom
