#include "ir/graph_io.h"

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Graph> Load(const std::string& text) {
  LOOM_ASSIGN_OR_RETURN(proto::Graph graph_proto, ParseGraphText(text, "m.pbtxt"));
  return GraphFromProto(graph_proto, "m.pbtxt");
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<Graph> graph = Load(text);
  EXPECT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(graph.status().message());
}

constexpr char kMlp[] = R"(
name: "tiny"
input { name: "x" type { dtype: F32 shape: [2, 3] } }
weight { name: "w" type { dtype: F32 shape: [3, 4] } random { seed: 7 } }
constant { name: "b" type { dtype: F32 shape: [4] } values { floats: [0.5] } }
node { name: "mm" op: "matmul" input: ["x", "w"] output: "h" }
node { name: "bias" op: "add" input: ["h", "b"] output: "y" }
output: "y"
)";

TEST(GraphIoTest, LoadsInfersShapesAndMaterialisesInitializers) {
  absl::StatusOr<Graph> graph = Load(kMlp);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->name, "tiny");
  ASSERT_EQ(graph->nodes().size(), 2);
  const ValueId y = graph->outputs()[0];
  EXPECT_EQ(TypeToString(graph->value(y).type), "f32[2,4]");
  const Tensor& b = graph->initializer(graph->FindValue("b"));
  EXPECT_EQ(b.GetDouble(3), 0.5);  // one value broadcasts
  const Tensor& w = graph->initializer(graph->FindValue("w"));
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    EXPECT_GE(w.GetDouble(i), -1);
    EXPECT_LT(w.GetDouble(i), 1);
  }
}

TEST(GraphIoTest, ExternalDataIsReadBesideTheModelFile) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const float values[] = {1.5f, -2.0f, 3.25f, 0.0f, 4.0f};
  std::ofstream(dir + "/data.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof values);
  const std::string text = R"(
name: "g"
input { name: "x" type { dtype: F32 shape: [4] } }
weight { name: "w" type { dtype: F32 shape: [4] } external { file: "data.bin" offset: 4 } }
node { name: "add" op: "add" input: ["x", "w"] output: "y" }
output: "y"
)";
  std::ofstream(dir + "/model.pbtxt") << text;
  absl::StatusOr<Graph> graph = LoadGraphFile(dir + "/model.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor& w = graph->initializer(graph->FindValue("w"));
  EXPECT_EQ(w.GetDouble(0), -2.0);
  EXPECT_EQ(w.GetDouble(3), 4.0);
  std::string short_text = text;
  short_text.replace(short_text.find("offset: 4"), 9, "offset: 8");
  std::ofstream(dir + "/short.pbtxt") << short_text;
  EXPECT_THAT(std::string(LoadGraphFile(dir + "/short.pbtxt").status().message()),
              HasSubstr("initializer 'w': its external data '" + dir +
                        "/data.bin' has fewer than 16 bytes from offset 8"));
  std::string missing = text;
  missing.replace(missing.find("data.bin"), 8, "none.bin");
  std::ofstream(dir + "/missing.pbtxt") << missing;
  EXPECT_THAT(std::string(LoadGraphFile(dir + "/missing.pbtxt").status().message()),
              HasSubstr("cannot open its external data '" + dir + "/none.bin'"));
}

TEST(GraphIoTest, RandomInitIsReproducible) {
  absl::StatusOr<Graph> a = Load(kMlp), b = Load(kMlp);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->initializer(a->FindValue("w")), b->initializer(b->FindValue("w")));
}

TEST(GraphIoTest, TextRoundTrip) {
  absl::StatusOr<Graph> graph = Load(kMlp);
  ASSERT_TRUE(graph.ok());
  const std::string text = GraphToText(*graph);
  EXPECT_THAT(text, HasSubstr("shape: [2, 3]"));
  absl::StatusOr<Graph> again = Load(text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(GraphToText(*again), text);
}

TEST(GraphIoTest, NodesOutOfOrderAreSorted) {
  absl::StatusOr<Graph> graph = Load(R"(
input { name: "x" type { dtype: F32 shape: [4] } }
node { name: "second" op: "neg" input: "a" output: "b" }
node { name: "first" op: "relu" input: "x" output: "a" }
output: "b"
)");
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->node(0).name, "first");
  EXPECT_EQ(graph->node(1).name, "second");
}

TEST(GraphIoTest, MalformedTextNamesLineAndColumn) {
  EXPECT_THAT(ErrorOf("input { name: \"x\"\n  type { dtype: F33 } }"), HasSubstr("m.pbtxt:2:"));
}

TEST(GraphIoTest, EmptyAndBinaryFilesAreRejected) {
  EXPECT_THAT(ErrorOf("  \n"), HasSubstr("m.pbtxt: empty file"));
  EXPECT_THAT(ErrorOf(std::string("ab\0cd", 5)), HasSubstr("m.pbtxt: binary data at byte 2"));
}

TEST(GraphIoTest, UndefinedInputNamesTheNode) {
  EXPECT_THAT(ErrorOf(R"(
input { name: "x" type { dtype: F32 shape: [4] } }
node { name: "n" op: "add" input: ["x", "ghost"] output: "y" }
output: "y"
)"),
              HasSubstr("node 'n' (add): input 'ghost' is not defined"));
}

TEST(GraphIoTest, CycleNamesItsNodesInOrder) {
  EXPECT_THAT(ErrorOf(R"(
input { name: "x" type { dtype: F32 shape: [4] } }
node { name: "a" op: "add" input: ["x", "c_out"] output: "a_out" }
node { name: "b" op: "neg" input: "a_out" output: "b_out" }
node { name: "c" op: "neg" input: "b_out" output: "c_out" }
output: "c_out"
)"),
              HasSubstr("cycle: 'a' -> 'b' -> 'c' -> 'a'"));
}

TEST(GraphIoTest, DuplicateDefinitionsAreRejected) {
  EXPECT_THAT(ErrorOf(R"(
input { name: "x" type { dtype: F32 shape: [4] } }
node { name: "n" op: "neg" input: "x" output: "x" }
output: "x"
)"),
              HasSubstr("'x' is defined more than once"));
}

TEST(GraphIoTest, BadTypesAndValuesAreRejected) {
  EXPECT_THAT(ErrorOf(R"(input { name: "x" type { shape: [4] } } output: "x")"),
              HasSubstr("input 'x'"));
  EXPECT_THAT(ErrorOf(R"(input { name: "x" type { dtype: F32 shape: [-1] } })"),
              HasSubstr("negative dimension"));
  EXPECT_THAT(
      ErrorOf(R"(input { name: "x" type { dtype: F32 shape: [1048576, 1048576, 1048576] } })"),
      HasSubstr("too large"));
  EXPECT_THAT(ErrorOf(R"(
weight { name: "w" type { dtype: F32 shape: [3] } values { floats: [1, 2] } }
output: "w")"),
              HasSubstr("2 values for shape [3]"));
  EXPECT_THAT(ErrorOf(R"(
weight { name: "w" type { dtype: I32 shape: [1] } values { floats: [1.5] } }
output: "w")"),
              HasSubstr("float values for a i32 tensor"));
}

TEST(GraphIoTest, MissingOutputsAreRejected) {
  EXPECT_THAT(ErrorOf(R"(input { name: "x" type { dtype: F32 shape: [4] } })"),
              HasSubstr("no outputs"));
  EXPECT_THAT(ErrorOf(R"(
input { name: "x" type { dtype: F32 shape: [4] } }
output: "nope")"),
              HasSubstr("graph output 'nope' is not defined"));
}

TEST(GraphIoTest, MissingFileNamesThePath) {
  absl::StatusOr<Graph> graph = LoadGraphFile("/no/such/model.pbtxt");
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("/no/such/model.pbtxt: cannot open"));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// x [batch, seq, 3] and m [batch, 1]: named dims, and a reshape whose
// target is computed from them.
constexpr char kNamedDims[] = R"(
name: "named"
input { name: "x" type { dtype: F32 shape: [-1, -1, 3] } dim_names: ["batch", "seq", ""] }
input { name: "m" type { dtype: F32 shape: [-1, 1] } dim_names: ["batch", ""] }
node { name: "flat" op: "reshape" input: "x" output: "f"
       attr { name: "shape" ints_expr { v: ["batch", "seq * 3"] } } }
node { name: "plus" op: "add" input: ["f", "m"] output: "y" }
output: "y"
)";

absl::StatusOr<Graph> BindAndBuild(const NamedDimOptions& options) {
  LOOM_ASSIGN_OR_RETURN(proto::Graph unbound, ParseGraphText(kNamedDims, "n.pbtxt"));
  LOOM_ASSIGN_OR_RETURN(proto::Graph bound, BindNamedDims(unbound, options));
  return GraphFromProto(bound, "n.pbtxt");
}

TEST(GraphIoTest, NamedDimsTakeTheirSizesAtTheCompile) {
  absl::StatusOr<proto::Graph> unbound = ParseGraphText(kNamedDims, "n.pbtxt");
  ASSERT_TRUE(unbound.ok()) << unbound.status();
  EXPECT_TRUE(HasNamedDims(*unbound));
  EXPECT_EQ(GraphDimNames(*unbound).at("x"), (std::vector<std::string>{"batch", "seq", ""}));
  EXPECT_THAT(GraphFromProto(*unbound, "n.pbtxt").status().message(),
              HasSubstr("input 'x': dim 0 is the named dim 'batch'; loom compiles for static "
                        "shapes: give its size"));

  NamedDimOptions options;
  options.dims = {{"batch", 2}, {"seq", 5}};
  absl::StatusOr<Graph> graph = BindAndBuild(options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(TypeToString(graph->value(graph->outputs()[0]).type), "f32[2,15]");
  // Or read from an input's shape, which the other input must agree with.
  options.dims.clear();
  options.input_shapes = {{"x", {4, 7, 3}}};
  graph = BindAndBuild(options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(TypeToString(graph->value(graph->outputs()[0]).type), "f32[4,21]");
  options.input_shapes["m"] = {3, 1};
  EXPECT_THAT(BindAndBuild(options).status().message(),
              HasSubstr("the named dim 'batch', is 3 but 4 in graph input 'x'"));
  options.input_shapes = {{"x", {4, 7, 2}}};
  EXPECT_THAT(BindAndBuild(options).status().message(),
              HasSubstr("graph input 'x': the given shape [4,7,2] contradicts dim 2 = 3"));
  options.input_shapes = {{"x", {4, 7, 3}}};
  options.dim_bounds = {{"seq", {1, 6}}};
  EXPECT_THAT(BindAndBuild(options).status().message(),
              HasSubstr("the named dim 'seq', is 7, outside its bounds 1..6"));
}

TEST(GraphIoTest, ComputedAttributesNameTheirNode) {
  std::string text = kNamedDims;
  text.replace(text.find("seq * 3"), 7, "seq * 3 +");
  absl::StatusOr<proto::Graph> unbound = ParseGraphText(text, "n.pbtxt");
  ASSERT_TRUE(unbound.ok()) << unbound.status();
  NamedDimOptions options;
  options.dims = {{"batch", 2}, {"seq", 5}};
  EXPECT_THAT(BindNamedDims(*unbound, options).status().message(),
              HasSubstr("node 'flat' (reshape): attribute 'shape': the size 'seq * 3 +' "
                        "expected a number"));
  options.dims = {{"batch", 2}};
  EXPECT_THAT(BindNamedDims(*unbound, options).status().message(),
              HasSubstr("graph input 'x': dim 1 is the named dim 'seq'"));
}

}  // namespace
}  // namespace loom
