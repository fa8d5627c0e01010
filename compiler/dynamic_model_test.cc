#include "compiler/dynamic_model.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/driver.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/file_io.h"
#include "ir/interpreter.h"
#include "runtime/model.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// y = Softmax(Relu(x W + b) + m): x [batch, seq, 8], m [batch, seq, 1],
// W's data external (weights.bin beside the model), as exporters write
// large weights.
std::string WriteModel(const std::string& dir) {
  ModelBuilder b;
  b.NamedDimsInput("x", {"batch", "seq", "8"}).NamedDimsInput("m", {"batch", "seq", "1"});
  std::vector<float> w(8 * 16), bias(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(i % 13) - 0.3f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i);
  onnx::TensorProto* weight = b.model_for_test().mutable_graph()->add_initializer();
  weight->set_name("w");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(8);
  weight->add_dims(16);
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", "weights.bin"},
                                   {"offset", "0"},
                                   {"length", std::to_string(w.size() * 4)}}) {
    onnx::StringStringEntryProto* entry = weight->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  EXPECT_TRUE(WriteFileBytes(dir + "/weights.bin",
                             std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4))
                  .ok());
  b.Initializer("b", {16}, bias).Output("y");
  b.Node("MatMul", {"x", "w"}, {"xw"});
  b.Node("Add", {"xw", "b"}, {"xwb"});
  b.Node("Relu", {"xwb"}, {"r"});
  b.Node("Add", {"r", "m"}, {"s"});
  SetAttr(b.Node("Softmax", {"s"}, {"y"}), "axis", -1);
  const std::string path = dir + "/model.onnx";
  EXPECT_TRUE(WriteFileBytes(path, b.model().SerializeAsString()).ok());
  return path;
}

std::string TempDir(const std::string& name) {
  const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  EXPECT_TRUE(CreateDirectories(dir).ok());
  return dir;
}

CompileOptions BoundedOptions(const std::string& model, const std::string& out_dir) {
  CompileOptions options;
  options.model = model;
  options.dim_bounds["batch"] = {1, 8};
  options.dim_bounds["seq"] = {1, 64};
  options.out_dir = out_dir;
  options.cache_dir = TempDir("cache");
  return options;
}

// Runs `model` at batch x seq and compares with the interpreter on the
// model imported at that shape.
void ExpectRunsLikeTheInterpreter(const DynamicModel& model, const std::string& model_file,
                                  int64_t batch, int64_t seq) {
  SCOPED_TRACE(absl::StrCat("batch ", batch, ", seq ", seq));
  const Tensor x = Iota({batch, seq, 8}), m = Iota({batch, seq, 1}, 0.3);
  Tensor y(DType::kF32, {batch, seq, 16});
  const absl::Status run =
      model.Run({{"x", DType::kF32, x.shape(), x.data()}, {"m", DType::kF32, m.shape(), m.data()}},
                {{"y", DType::kF32, y.shape(), y.data()}});
  ASSERT_TRUE(run.ok()) << run;
  CompileOptions at_shape;
  at_shape.model = model_file;
  at_shape.dims = {{"batch", batch}, {"seq", seq}};
  absl::StatusOr<Graph> graph = ImportModel(at_shape);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*graph, {x, m});
  ASSERT_TRUE(want.ok()) << want.status();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    ASSERT_NEAR(y.GetDouble(i), (*want)[0].GetDouble(i), 1e-5) << "element " << i;
  }
}

// One artifact runs shapes the sweep never met, with no C++ compiler: each
// new shape compiles the front end and binds its class's kernels.
TEST(DynamicModelTest, OneArtifactRunsEveryShapeWithoutACompiler) {
  const std::string dir = TempDir("every_shape");
  const std::string model_file = WriteModel(TempDir("model"));
  absl::StatusOr<proto::Report> report = DynamicModel::Compile(BoundedOptions(model_file, dir));
  ASSERT_TRUE(report.ok()) << report.status();
  // batch 1..8; seq 1..8, 12, 16, 24, 32, 48, 64; and the neighbours of
  // classes of one shape.
  EXPECT_EQ(SweepShapes({{"batch", {1, 8}}, {"seq", {1, 64}}}).size(), 8 * 14);
  EXPECT_GE(report->shapes(), 8 * 14);
  EXPECT_GE(report->shape_classes_size(), 1);
  EXPECT_LT(report->shape_classes_size(), 10);

  ASSERT_EQ(setenv("CXX", "/nonexistent/c++", 1), 0);
  absl::StatusOr<DynamicModel> model = DynamicModel::Load(dir + "/model.loom");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->bounds().at("seq").max, 64);
  // The interface: -1 where the size is the call's, the model's dim names.
  ASSERT_EQ(model->inputs().size(), 2u);
  EXPECT_EQ(model->inputs()[0].name, "x");
  EXPECT_EQ(model->inputs()[0].shape, (std::vector<int64_t>{-1, -1, 8}));
  EXPECT_EQ(model->inputs()[0].dim_names, (std::vector<std::string>{"batch", "seq", ""}));
  ASSERT_EQ(model->outputs().size(), 1u);
  EXPECT_EQ(model->outputs()[0].shape, (std::vector<int64_t>{-1, -1, 16}));
  EXPECT_EQ(model->outputs()[0].dim_names, (std::vector<std::string>{"", "", ""}));
  // Its own copy of the model and the weights' file, beside the artifact.
  for (const std::pair<int64_t, int64_t>& shape :
       {std::pair<int64_t, int64_t>{3, 37}, {1, 1}, {8, 64}, {5, 50}, {3, 37}}) {
    ExpectRunsLikeTheInterpreter(*model, dir + "/model.onnx", shape.first, shape.second);
  }
  EXPECT_EQ(model->shapes_compiled(), 4);  // 3 x 37 the second time is kept
  EXPECT_EQ(model->native_compiles(), 0);
  unsetenv("CXX");
}

// WriteModel's model as loom graph text, its named dims in its inputs and
// a reshape's target computed from them (softmax over [batch * seq, 16]).
std::string WriteGraphText(const std::string& dir) {
  WriteModel(dir);  // weights.bin
  const std::string path = dir + "/model.pbtxt";
  EXPECT_TRUE(WriteFileBytes(path, R"(
name: "named"
input { name: "x" type { dtype: F32 shape: [-1, -1, 8] } dim_names: ["batch", "seq", ""] }
input { name: "m" type { dtype: F32 shape: [-1, -1, 1] } dim_names: ["batch", "seq", ""] }
weight { name: "w" type { dtype: F32 shape: [8, 16] } external { file: "weights.bin" } }
constant { name: "b" type { dtype: F32 shape: [16] } values { floats: [0.01] } }
node { op: "matmul" input: ["x", "w"] output: "xw" }
node { op: "add" input: ["xw", "b"] output: "xwb" }
node { op: "relu" input: "xwb" output: "r" }
node { op: "add" input: ["r", "m"] output: "s" }
node { name: "rows" op: "reshape" input: "s" output: "rows"
       attr { name: "shape" ints_expr { v: ["batch * seq", "16"] } } }
node { op: "softmax" input: "rows" output: "p" attr { name: "axis" i: -1 } }
node { name: "back" op: "reshape" input: "p" output: "y"
       attr { name: "shape" ints_expr { v: ["batch", "seq", "16"] } } }
output: "y"
)")
                  .ok());
  return path;
}

// A loom graph with named dims compiles for every shape as an ONNX model
// does: the artifact holds a copy of it and its weights' file.
TEST(DynamicModelTest, AGraphTextWithNamedDimsRunsEveryShape) {
  const std::string dir = TempDir("every_shape_graph");
  CompileOptions options = BoundedOptions(WriteGraphText(TempDir("graph_model")), dir);
  options.dim_bounds["seq"] = {1, 16};
  absl::StatusOr<proto::Report> report = DynamicModel::Compile(options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(setenv("CXX", "/nonexistent/c++", 1), 0);
  absl::StatusOr<DynamicModel> model = DynamicModel::Load(dir + "/model.loom");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs().size(), 2u);
  EXPECT_EQ(model->inputs()[1].shape, (std::vector<int64_t>{-1, -1, 1}));
  EXPECT_EQ(model->inputs()[1].dim_names, (std::vector<std::string>{"batch", "seq", ""}));
  for (const std::pair<int64_t, int64_t>& shape :
       {std::pair<int64_t, int64_t>{3, 13}, {1, 1}, {8, 16}, {5, 10}}) {
    ExpectRunsLikeTheInterpreter(*model, dir + "/model.pbtxt", shape.first, shape.second);
  }
  EXPECT_EQ(model->native_compiles(), 0);
  unsetenv("CXX");
  // A call whose inputs disagree on a dim runs nothing.
  const Tensor x = Iota({2, 3, 8}), m = Iota({2, 4, 1});
  Tensor y(DType::kF32, {2, 3, 16});
  EXPECT_THAT(
      model
          ->Run({{"x", DType::kF32, x.shape(), x.data()}, {"m", DType::kF32, m.shape(), m.data()}},
                {{"y", DType::kF32, y.shape(), y.data()}})
          .message(),
      HasSubstr("the named dim 'seq', is 4 but 3 in graph input 'x'"));
}

// How many native libraries the kernel cache at `dir` holds.
int LibrariesIn(const std::string& dir) {
  int count = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    count += file.path().extension() == ".so";
  }
  return count;
}

// A caller compiling shape after shape (a DynamicModel in Python, the
// torch.compile backend) compiles one template for the class of the first,
// which serves the next shapes of that class with no compile.
TEST(DynamicModelTest, TheFirstShapeOfManyCompilesTheTemplateOfItsClass) {
  CompileOptions options;
  options.model = WriteGraphText(TempDir("many_model"));
  options.cache_dir = TempDir("many_cache");
  options.dim_bounds["seq"] = {1, 64};
  for (int64_t seq : {12, 20, 37}) {
    SCOPED_TRACE(absl::StrCat("seq ", seq));
    options.input_shapes = {{"x", {2, seq, 8}}, {"m", {2, seq, 1}}};
    absl::StatusOr<CompiledModel> compiled = CompileShapeOfMany(options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_TRUE(compiled->report.shape_template());
    EXPECT_EQ(compiled->report.cache_hit(), seq != 12);
    EXPECT_EQ(LibrariesIn(options.cache_dir), 1);
    const Tensor x = Iota({2, seq, 8}), m = Iota({2, seq, 1}, 0.3);
    absl::StatusOr<std::vector<Tensor>> got = compiled->executable->Run({x, m});
    ASSERT_TRUE(got.ok()) << got.status();
    CompileOptions at_shape = options;
    at_shape.dim_bounds.clear();
    absl::StatusOr<Graph> graph = ImportModel(at_shape);
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*graph, {x, m});
    ASSERT_TRUE(want.ok()) << want.status();
    for (int64_t i = 0; i < (*got)[0].num_elements(); ++i) {
      ASSERT_NEAR((*got)[0].GetDouble(i), (*want)[0].GetDouble(i), 1e-5) << "element " << i;
    }
  }
}

// A class of one shape meets its neighbours in each dim, within the
// bounds and where the sweep has not.
TEST(DynamicModelTest, ClassesOfOneShapeMeetTheirNeighbours) {
  const NamedDimBounds bounds = {{"batch", {1, 64}}, {"seq", {1, 8}}};
  const std::vector<DimSizes> swept = {{{"batch", 8}, {"seq", 1}},
                                       {{"batch", 12}, {"seq", 1}},
                                       {{"batch", 64}, {"seq", 8}},
                                       {{"batch", 9}, {"seq", 1}}};
  const std::vector<DimSizes> neighbours =
      NeighbourShapes({{swept[0]}, {swept[1], swept[3]}, {swept[2]}}, swept, bounds);
  // batch 8's neighbour 9 is swept, its seq 2 is not; batch 64 x seq 8 at
  // both bounds takes one less.
  EXPECT_EQ(neighbours, (std::vector<DimSizes>{{{"batch", 8}, {"seq", 2}},
                                               {{"batch", 63}, {"seq", 8}},
                                               {{"batch", 64}, {"seq", 7}}}));
}

TEST(DynamicModelTest, ShapesOutsideTheBoundsOrDisagreeingAreErrors) {
  const std::string dir = TempDir("errors");
  ASSERT_TRUE(DynamicModel::Compile(BoundedOptions(WriteModel(TempDir("model2")), dir)).ok());
  absl::StatusOr<DynamicModel> model = DynamicModel::Load(dir + "/model.loom");
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::shared_ptr<const Model>> bound =
      model->ModelForShapes({{"x", {9, 4, 8}}, {"m", {9, 4, 1}}});
  ASSERT_EQ(bound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bound.status().message(),
              HasSubstr("graph input 'x': dim 0, the named dim 'batch', is 9, outside its "
                        "bounds 1..8"));
  bound = model->ModelForShapes({{"x", {2, 4, 8}}, {"m", {3, 4, 1}}});
  ASSERT_EQ(bound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bound.status().message(), HasSubstr("the named dim 'batch', is 3 but 2"));
  bound = model->ModelForDims({{"seq", 65}, {"batch", 1}});
  EXPECT_THAT(bound.status().message(),
              HasSubstr("the size given for the named dim 'seq' is 65, outside its bounds 1..64"));

  // The runtime alone cannot run it, and says what can.
  absl::StatusOr<Model> fixed = Model::Load(dir + "/model.loom");
  ASSERT_EQ(fixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fixed.status().message(), HasSubstr("loom::DynamicModel"));

  // The model file goes with the artifact.
  ASSERT_EQ(std::remove((dir + "/model.onnx").c_str()), 0);
  absl::StatusOr<DynamicModel> without = DynamicModel::Load(dir + "/model.loom");
  ASSERT_EQ(without.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(without.status().message(), HasSubstr("model.onnx is missing"));
}

TEST(DynamicModelTest, CompileNeedsBoundsAndAFolder) {
  const std::string model_file = WriteModel(TempDir("model3"));
  CompileOptions options = BoundedOptions(model_file, "");
  EXPECT_THAT(DynamicModel::Compile(options).status().message(), HasSubstr("--out_dir"));
  options.out_dir = TempDir("misspelt");
  options.dim_bounds["length"] = {1, 4};
  EXPECT_THAT(DynamicModel::Compile(options).status().message(),
              HasSubstr("the named dim 'length', which no graph input has (the model's: batch, "
                        "seq)"));
  options.dim_bounds.erase("length");
  options.out_dir = TempDir("unbounded");
  options.dim_bounds["seq"] = {1, std::numeric_limits<int64_t>::max()};
  EXPECT_THAT(DynamicModel::Compile(options).status().message(),
              HasSubstr("the dim 'seq' needs bounds MIN..MAX"));
  // A dim given a size keeps it: only batch varies.
  options.dim_bounds.erase("seq");
  options.dims["seq"] = 5;
  absl::StatusOr<proto::Report> report = DynamicModel::Compile(options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GE(report->shapes(), 8);
  absl::StatusOr<DynamicModel> model = DynamicModel::Load(options.out_dir + "/model.loom");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(model->ModelForDims({{"batch", 6}}).ok());
}

// The pipeline's options given at compile go with the artifact: each new
// shape's source is then its class's (without OpenMP, here), with no
// compiler.
TEST(DynamicModelTest, PassOptionsGoWithTheArtifact) {
  const std::string dir = TempDir("options");
  CompileOptions options = BoundedOptions(WriteModel(TempDir("model5")), dir);
  options.pass_options.push_back({"codegen-cpp", "cpp { openmp: false }"});
  ASSERT_TRUE(DynamicModel::Compile(options).ok());
  ASSERT_EQ(setenv("CXX", "/nonexistent/c++", 1), 0);
  absl::StatusOr<DynamicModel> model = DynamicModel::Load(dir + "/model.loom");
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectRunsLikeTheInterpreter(*model, dir + "/model.onnx", 6, 40);
  EXPECT_EQ(model->native_compiles(), 0);
  unsetenv("CXX");
}

// A shape whose class the artifact lacks compiles its kernels where a C++
// compiler is installed, and is an error naming the shape where none is.
TEST(DynamicModelTest, AClassTheArtifactLacksNeedsACompiler) {
  const std::string dir = TempDir("lacking");
  CompileOptions options = BoundedOptions(WriteModel(TempDir("model4")), dir);
  ASSERT_TRUE(DynamicModel::Compile(options).ok());
  absl::StatusOr<runtime::proto::Artifact> artifact = ReadArtifact(dir + "/model.loom");
  ASSERT_TRUE(artifact.ok()) << artifact.status();
  artifact->mutable_dynamic_shapes()->clear_classes();
  ASSERT_TRUE(WriteFileBytes(dir + "/model.loom", Model::Serialize(*artifact)).ok());

  ASSERT_EQ(setenv("CXX", "/nonexistent/c++", 1), 0);
  const std::string cache = TempDir("empty_cache");
  ASSERT_EQ(setenv("LOOM_CACHE_DIR", cache.c_str(), 1), 0);
  absl::StatusOr<DynamicModel> model = DynamicModel::Load(dir + "/model.loom");
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::shared_ptr<const Model>> bound =
      model->ModelForDims({{"batch", 2}, {"seq", 3}});
  EXPECT_FALSE(bound.ok());
  EXPECT_THAT(bound.status().message(),
              HasSubstr("dims batch=2,seq=3 is a class of shapes whose kernels the artifact "
                        "lacks, and compiling them failed"));
  unsetenv("CXX");
  bound = model->ModelForDims({{"batch", 2}, {"seq", 3}});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(model->native_compiles(), 1);
  // That compile was the template of its class, which the next shape of the
  // class takes from the cache.
  bound = model->ModelForDims({{"batch", 2}, {"seq", 5}});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(LibrariesIn(cache), 1);
  unsetenv("LOOM_CACHE_DIR");
}

}  // namespace
}  // namespace loom
