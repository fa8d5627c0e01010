// The ONNX importer's control flow (onnx_ops_control_flow.cc): If with a
// condition known at import and at run time, Loop and Scan unrolled, the
// unroll limit, and graphs that do not fit their node; and sequences and
// optionals (onnx_ops_sequence.cc), inside a graph and at its boundary.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace loom {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// A graph for a node's attribute: untyped inputs and outputs by name.
class BodyBuilder {
 public:
  BodyBuilder(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
    graph_.set_name("body");
    for (const std::string& name : inputs) graph_.add_input()->set_name(name);
    for (const std::string& name : outputs) graph_.add_output()->set_name(name);
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* node = graph_.add_node();
    node->set_op_type(op);
    for (const std::string& input : inputs) node->add_input(input);
    for (const std::string& output : outputs) node->add_output(output);
    return *node;
  }
  const onnx::GraphProto& graph() const { return graph_; }

 private:
  onnx::GraphProto graph_;
};

void SetGraph(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& graph) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::GRAPH);
  *attr->mutable_g() = graph;
}

void BoolInitializer(ModelBuilder& b, const std::string& name, bool value) {
  onnx::TensorProto* t = b.model_for_test().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(value ? 1 : 0);
}

Tensor Bool(bool value) {
  Tensor t(DType::kBool, {});
  t.SetInt(0, value ? 1 : 0);
  return t;
}

// If (x + 1, else x - 1) reading x from the enclosing graph.
void AddIf(ModelBuilder& b, const std::string& cond, const onnx::GraphProto& else_branch) {
  BodyBuilder then_branch({}, {"t"});
  then_branch.Node("Add", {"x", "one"}, {"t"});
  onnx::NodeProto& node = b.Node("If", {cond}, {"y"}, "if");
  SetGraph(node, "then_branch", then_branch.graph());
  SetGraph(node, "else_branch", else_branch);
}

onnx::GraphProto MinusOne() {
  BodyBuilder else_branch({}, {"e"});
  else_branch.Node("Sub", {"x", "one"}, {"e"});
  return else_branch.graph();
}

TEST(OnnxControlFlowTest, IfWithAKnownConditionImportsOneBranch) {
  for (bool cond : {true, false}) {
    ModelBuilder b(17);
    b.Input("x", onnx::TensorProto::FLOAT, {3}).Initializer("one", {}, {1.0f}).Output("y");
    BoolInitializer(b, "cond", cond);
    AddIf(b, "cond", MinusOne());
    absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(Ops(*graph), std::vector<std::string>{cond ? "add" : "sub"});
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {Iota({3}, 1.0)});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_FLOAT_EQ((*y)[0].GetDouble(1), Iota({3}, 1.0).GetDouble(1) + (cond ? 1 : -1));
  }
}

TEST(OnnxControlFlowTest, IfWithARunTimeConditionSelectsEachOutput) {
  ModelBuilder b(17);
  b.Input("cond", onnx::TensorProto::BOOL, {}).Input("x", onnx::TensorProto::FLOAT, {3});
  b.Initializer("one", {}, {1.0f}).Output("y");
  AddIf(b, "cond", MinusOne());
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Ops(*graph), Contains("where"));
  const Tensor x = Iota({3}, 1.0);
  for (bool cond : {true, false}) {
    absl::StatusOr<std::vector<Tensor>> y = Interpret(*graph, {Bool(cond), x});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_FLOAT_EQ((*y)[0].GetDouble(2), x.GetDouble(2) + (cond ? 1 : -1));
  }

  // Branches whose outputs differ cannot be selected at run time.
  ModelBuilder unlike(17);
  unlike.Input("cond", onnx::TensorProto::BOOL, {}).Input("x", onnx::TensorProto::FLOAT, {3});
  unlike.Initializer("one", {}, {1.0f}).Output("y");
  BodyBuilder twice({}, {"e"});
  SetAttr(twice.Node("Concat", {"x", "x"}, {"e"}), "axis", 0);
  AddIf(unlike, "cond", twice.graph());
  EXPECT_THAT(ImportOnnxModel(unlike.model()).status().message(),
              HasSubstr("node 'if' (If): with a condition known only at run time"));
}

// Loop `trip_count` times: s += iteration (as float); scanned: s after
// each. With `with_cond`, a condition that stays true too.
ModelBuilder CountingLoop(int64_t trip_count, bool with_cond = true) {
  ModelBuilder b(17);
  b.Input("s0", onnx::TensorProto::FLOAT, {2}).Output("s").Output("scan");
  IntInitializer(b, "m", {}, {trip_count});
  BoolInitializer(b, "go", true);
  BodyBuilder body({"i", "c", "s_in"}, {"c_out", "s_out", "s_scan"});
  body.Node("Identity", {"c"}, {"c_out"});
  SetAttr(body.Node("Cast", {"i"}, {"fi"}), "to", onnx::TensorProto::FLOAT);
  body.Node("Add", {"s_in", "fi"}, {"s_out"});
  body.Node("Identity", {"s_out"}, {"s_scan"});
  SetGraph(b.Node("Loop", {"m", with_cond ? "go" : "", "s0"}, {"s", "scan"}, "loop"), "body",
           body.graph());
  return b;
}

TEST(OnnxControlFlowTest, LoopIsUnrolled) {
  absl::StatusOr<Graph> graph = ImportOnnxModel(CountingLoop(3).model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Ops(*graph), Not(Contains("loop")));
  const Tensor s0 = Iota({2}, 1.0);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {s0});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ((*out)[0].GetDouble(1), s0.GetDouble(1) + 0 + 1 + 2);
  EXPECT_EQ((*out)[1].shape(), (Shape{3, 2}));
  EXPECT_FLOAT_EQ((*out)[1].GetDouble(2 * 1 + 0), s0.GetDouble(0) + 0 + 1);
}

TEST(OnnxControlFlowTest, UnrollingPastTheLimitIsRefused) {
  EXPECT_THAT(ImportOnnxModel(CountingLoop(100000, /*with_cond=*/false).model()).status().message(),
              HasSubstr("node 'loop' (Loop): runs 100000 iterations; loom unrolls loops at "
                        "import, at most 1024 iterations a node"));
  // With a condition the loop might stop early: it is refused at the limit.
  EXPECT_THAT(ImportOnnxModel(CountingLoop(100000).model()).status().message(),
              HasSubstr("node 'loop' (Loop): still runs after 1024 iterations"));
}

// Nested loops within each node's limit are bounded as a whole: a loop of
// 1,000 iterations whose body holds a loop of 1,000 iterations.
TEST(OnnxControlFlowTest, NestedUnrollingIsBounded) {
  ModelBuilder b(17);
  b.Input("s0", onnx::TensorProto::FLOAT, {2}).Output("s");
  IntInitializer(b, "m", {}, {1000});
  BodyBuilder inner({"j", "c", "t_in"}, {"c_out", "t_out"});
  inner.Node("Identity", {"c"}, {"c_out"});
  std::string last = "t_in";
  for (int k = 0; k < 200; ++k) {
    const std::string next = absl::StrCat("t", k);
    inner.Node("Identity", {last}, {next});
    last = next;
  }
  inner.Node("Identity", {last}, {"t_out"});
  BodyBuilder outer({"i", "c", "s_in"}, {"c_out", "s_out"});
  outer.Node("Identity", {"c"}, {"c_out"});
  SetGraph(outer.Node("Loop", {"m", "", "s_in"}, {"s_out"}), "body", inner.graph());
  SetGraph(b.Node("Loop", {"m", "", "s0"}, {"s"}, "outer"), "body", outer.graph());
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("would add more than 100000 nodes"));
}

TEST(OnnxControlFlowTest, LoopConditionMustBeKnown) {
  ModelBuilder b = CountingLoop(3);
  onnx::GraphProto* g = b.model_for_test().mutable_graph();
  g->mutable_initializer()->RemoveLast();  // "go" becomes a run-time input
  onnx::ValueInfoProto* go = g->add_input();
  go->set_name("go");
  go->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  go->mutable_type()->mutable_tensor_type()->mutable_shape();
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("node 'loop' (Loop): the condition must be one value known at import"));
}

// A running sum over x's rows (axis 0), forward or reverse.
absl::StatusOr<std::vector<Tensor>> RunningSum(int64_t direction, const Tensor& x) {
  ModelBuilder b(16);
  b.Input("x", onnx::TensorProto::FLOAT, {3, 2}).Initializer("zero", {2}, {0, 0});
  b.Output("total").Output("sums");
  BodyBuilder body({"acc", "row"}, {"acc_out", "sum"});
  body.Node("Add", {"acc", "row"}, {"acc_out"});
  body.Node("Identity", {"acc_out"}, {"sum"});
  onnx::NodeProto& scan = b.Node("Scan", {"zero", "x"}, {"total", "sums"}, "scan");
  SetAttr(scan, "num_scan_inputs", 1);
  SetInts(scan, "scan_input_directions", {direction});
  SetGraph(scan, "body", body.graph());
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  if (!graph.ok()) return graph.status();
  return Interpret(*graph, {x});
}

TEST(OnnxControlFlowTest, ScanBothDirections) {
  const Tensor x = Iota({3, 2}, 1.0);
  absl::StatusOr<std::vector<Tensor>> forward = RunningSum(0, x);
  absl::StatusOr<std::vector<Tensor>> reverse = RunningSum(1, x);
  ASSERT_TRUE(forward.ok()) << forward.status();
  ASSERT_TRUE(reverse.ok()) << reverse.status();
  const double total = x.GetDouble(0) + x.GetDouble(2) + x.GetDouble(4);
  EXPECT_FLOAT_EQ((*forward)[0].GetDouble(0), total);
  EXPECT_FLOAT_EQ((*reverse)[0].GetDouble(0), total);
  EXPECT_FLOAT_EQ((*forward)[1].GetDouble(0), x.GetDouble(0));  // row 0 first
  EXPECT_FLOAT_EQ((*reverse)[1].GetDouble(0), x.GetDouble(4));  // row 2 first
  EXPECT_FLOAT_EQ((*reverse)[1].GetDouble(4), total);

  EXPECT_THAT(RunningSum(2, x).status().message(),
              HasSubstr("node 'scan' (Scan): attribute 'scan_input_directions' holds 2"));
}

TEST(OnnxControlFlowTest, MalformedGraphsAreRefused) {
  ModelBuilder miscounted(17);
  miscounted.Input("s0", onnx::TensorProto::FLOAT, {2}).Output("s");
  IntInitializer(miscounted, "m", {}, {2});
  BodyBuilder short_body({"i"}, {"c"});
  short_body.Node("Identity", {"i"}, {"c"});
  SetGraph(miscounted.Node("Loop", {"m", "", "s0"}, {"s"}, "loop"), "body", short_body.graph());
  EXPECT_THAT(ImportOnnxModel(miscounted.model()).status().message(),
              HasSubstr("node 'loop' (Loop): its body has 1 inputs and 1 outputs"));

  ModelBuilder undefined(17);
  undefined.Input("x", onnx::TensorProto::FLOAT, {3}).Initializer("one", {}, {1.0f}).Output("y");
  BoolInitializer(undefined, "cond", false);
  BodyBuilder dangling({}, {"nowhere"});
  AddIf(undefined, "cond", dangling.graph());
  EXPECT_THAT(ImportOnnxModel(undefined.model()).status().message(),
              HasSubstr("node 'if' (If): output 'nowhere' of its graph 'body' is not defined"));
}

// x [2, 3] split into columns, y inserted first, the last column erased,
// then taken apart again.
TEST(OnnxControlFlowTest, SequenceRoundTrip) {
  ModelBuilder b(17);
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Input("y", onnx::TensorProto::FLOAT, {2, 1});
  b.Output("second").Output("length").Output("joined");
  IntInitializer(b, "front", {}, {0});
  SetAttr(b.Node("SplitToSequence", {"x"}, {"columns"}), "axis", 1);
  b.Node("SequenceInsert", {"columns", "y", "front"}, {"with_y"});
  b.Node("SequenceErase", {"with_y"}, {"seq"});
  IntInitializer(b, "one", {}, {1});
  b.Node("SequenceAt", {"seq", "one"}, {"second"});
  b.Node("SequenceLength", {"seq"}, {"length"});
  SetAttr(b.Node("ConcatFromSequence", {"seq"}, {"joined"}), "axis", 1);
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Tensor x = Iota({2, 3}, 1.0), y = Iota({2, 1}, 3.0);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {x, y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 1}));
  EXPECT_FLOAT_EQ((*out)[0].GetDouble(1), x.GetDouble(3));  // x[1][0]
  EXPECT_EQ((*out)[1].GetInt(0), 3);
  EXPECT_EQ((*out)[2].shape(), (Shape{2, 3}));
  EXPECT_FLOAT_EQ((*out)[2].GetDouble(0), y.GetDouble(0));
  EXPECT_FLOAT_EQ((*out)[2].GetDouble(5), x.GetDouble(4));  // x[1][1]

  ModelBuilder far(17);
  far.Input("x", onnx::TensorProto::FLOAT, {2, 3}).Output("z");
  IntInitializer(far, "five", {}, {5});
  SetAttr(far.Node("SplitToSequence", {"x"}, {"columns"}), "axis", 1);
  far.Node("SequenceAt", {"columns", "five"}, {"z"}, "at");
  EXPECT_THAT(ImportOnnxModel(far.model()).status().message(),
              HasSubstr("node 'at' (SequenceAt): position 5 is out of range for a sequence of 3"));
}

// A sequence graph input and output are flattened into one loom input and
// output per element, by the structure the caller gives.
TEST(OnnxControlFlowTest, SequenceAtTheGraphBoundary) {
  ModelBuilder b(17);
  onnx::ValueInfoProto* input = b.model_for_test().mutable_graph()->add_input();
  input->set_name("s");
  input->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::FLOAT);
  b.Output("t");
  b.Node("Identity", {"s"}, {"t"});
  EXPECT_THAT(ImportOnnxModel(b.model()).status().message(),
              HasSubstr("graph input 's' is not a tensor (a sequence or optional whose structure"));

  OnnxImportOptions options;
  options.structured_inputs["s"] = {true, {Shape{2}, Shape{3}}};
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model(), options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->inputs().size(), 2u);
  EXPECT_EQ(graph->value(graph->inputs()[1]).type.shape, (Shape{3}));
  ASSERT_EQ(graph->outputs().size(), 2u);
  EXPECT_EQ(graph->output_name(0), "t[0]");
  EXPECT_EQ(graph->output_name(1), "t[1]");
}

TEST(OnnxControlFlowTest, OptionalsKnownAtImport) {
  ModelBuilder b(18);
  b.Input("x", onnx::TensorProto::FLOAT, {2}).Output("has").Output("none").Output("value");
  b.Node("Optional", {"x"}, {"opt"});
  b.Node("OptionalHasElement", {"opt"}, {"has"});
  b.Node("OptionalHasElement", {}, {"none"});
  b.Node("OptionalGetElement", {"opt"}, {"value"});
  absl::StatusOr<Graph> graph = ImportOnnxModel(b.model());
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*graph, {Iota({2}, 1.0)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].GetInt(0), 1);
  EXPECT_EQ((*out)[1].GetInt(0), 0);
  EXPECT_FLOAT_EQ((*out)[2].GetDouble(1), Iota({2}, 1.0).GetDouble(1));

  ModelBuilder empty(18);
  empty.Output("value");
  onnx::NodeProto& make = empty.Node("Optional", {}, {"opt"});
  onnx::AttributeProto* type = make.add_attribute();
  type->set_name("type");
  type->set_type(onnx::AttributeProto::TYPE_PROTO);
  type->mutable_tp()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  empty.Node("OptionalGetElement", {"opt"}, {"value"}, "get");
  EXPECT_THAT(ImportOnnxModel(empty.model()).status().message(),
              HasSubstr("node 'get' (OptionalGetElement): the optional is empty"));
}

}  // namespace
}  // namespace loom
