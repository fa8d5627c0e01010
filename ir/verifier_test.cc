#include "ir/verifier.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const absl::Status& status) { return status.ToString(); }

// x[2,3] -> relu -> h; matmul(h, w[3,4]) -> y; outputs: y.
struct SmallGraph {
  Graph graph;
  ValueId x, w, h, y;
  NodeId relu, matmul;

  SmallGraph() {
    x = *graph.AddInput("x", {DType::kF32, {2, 3}});
    w = *graph.AddInitializer("w", ValueKind::kWeight, Tensor(DType::kF32, {3, 4}));
    relu = *graph.AddNode("act", "relu", {x}, {"h"});
    h = graph.node(relu).outputs[0];
    matmul = *graph.AddNode("fc1", "matmul", {h, w}, {"y"});
    y = graph.node(matmul).outputs[0];
    graph.AddOutput(y);
  }
};

TEST(VerifierTest, AcceptsAnInferredGraph) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  EXPECT_TRUE(VerifyGraph(g.graph).ok()) << VerifyGraph(g.graph);
}

TEST(VerifierTest, StaleTypeIsAnInternalErrorNamingTheNode) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_value(g.y).type = {DType::kF32, {2, 5}};
  EXPECT_EQ(Message(VerifyGraph(g.graph)),
            "INTERNAL: node 'fc1' (matmul): output 'y' is stored as f32[2,5] "
            "but the op infers f32[2,4]");
}

// VerifyGraphStructure leaves to InferShapes what it checks itself, and
// still checks the rest.
TEST(VerifierTest, StructureOnlySkipsTypesButNotOrder) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_value(g.y).type = {DType::kF32, {2, 5}};
  EXPECT_TRUE(VerifyGraphStructure(g.graph).ok());
  g.graph.ReplaceNodes({g.graph.node(g.matmul), g.graph.node(g.relu)});
  EXPECT_THAT(Message(VerifyGraphStructure(g.graph)),
              HasSubstr("reads value 'h' before it is defined"));
}

TEST(VerifierTest, StoredIntermediateTypeMustMatch) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_value(g.h).type = {DType::kF32, {2, 7}};
  EXPECT_THAT(Message(VerifyGraph(g.graph)),
              StartsWith("INTERNAL: node 'act' (relu): output 'h' is stored "
                         "as f32[2,7]"));
}

TEST(VerifierTest, ShapeFunctionErrorsNameTheNode) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_node(g.matmul).inputs = {g.h, g.h};
  EXPECT_EQ(Message(VerifyGraph(g.graph)),
            "INVALID_ARGUMENT: node 'fc1' (matmul): inner dimensions do not "
            "agree: [2,3] x [2,3]");
}

TEST(VerifierTest, SignatureErrors) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_node(g.matmul).attrs.Set("transpose_a", int64_t{1});
  EXPECT_EQ(Message(VerifyGraph(g.graph)),
            "INVALID_ARGUMENT: node 'fc1' (matmul): unknown attribute "
            "'transpose_a' (matmul takes none)");
  g.graph.mutable_node(g.matmul).op = "frobnicate";
  EXPECT_THAT(Message(VerifyGraph(g.graph)),
              HasSubstr("node 'fc1' (frobnicate): unknown op 'frobnicate'"));
}

TEST(VerifierTest, NodesOutOfOrderAreRejected) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.ReplaceNodes({g.graph.node(g.matmul), g.graph.node(g.relu)});
  EXPECT_EQ(Message(VerifyGraph(g.graph)),
            "INVALID_ARGUMENT: node 'fc1' (matmul): reads value 'h' before it "
            "is defined (nodes must be in topological order)");
}

TEST(VerifierTest, SelfLoopIsRejected) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_node(g.relu).inputs = {g.h};
  EXPECT_THAT(Message(VerifyGraph(g.graph)),
              HasSubstr("node 'act' (relu): reads value 'h' before it is "
                        "defined"));
}

TEST(VerifierTest, ValueWithTwoProducersIsRejected) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  Node second = g.graph.node(g.relu);
  second.name = "act2";
  g.graph.ReplaceNodes({g.graph.node(g.relu), second, g.graph.node(g.matmul)});
  EXPECT_THAT(Message(VerifyGraph(g.graph)),
              HasSubstr("INVALID_ARGUMENT: node 'act2' (relu): writes value "
                        "'h', which node 'act' (relu) also writes (a value has "
                        "one producer)"));
}

TEST(VerifierTest, WritingAGraphInputIsRejected) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_node(g.relu).outputs = {g.x};
  EXPECT_THAT(Message(VerifyGraph(g.graph)),
              HasSubstr("INVALID_ARGUMENT: node 'act' (relu): writes value "
                        "'x', which is a graph input"));
}

TEST(VerifierTest, StaleProducerIsAnInternalError) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_value(g.h).producer = g.matmul;
  EXPECT_THAT(Message(VerifyGraph(g.graph)),
              StartsWith("INTERNAL: value 'h' records producer 1 but is "
                         "written by node 0"));
}

TEST(VerifierTest, InvalidIdsAreInternalErrors) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_node(g.matmul).inputs[1] = 99;
  EXPECT_EQ(Message(VerifyGraph(g.graph)),
            "INTERNAL: node 'fc1' (matmul): reads invalid value id 99");
  SmallGraph h;
  ASSERT_TRUE(InferShapes(h.graph).ok());
  h.graph.AddOutput(-1);
  EXPECT_EQ(Message(VerifyGraph(h.graph)), "INTERNAL: graph output names invalid value id -1");
}

TEST(VerifierTest, UndefinedGraphOutput) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.AddOutput(g.graph.AddIntermediate("orphan"));
  EXPECT_THAT(Message(VerifyGraph(g.graph)), HasSubstr("graph output 'orphan.0' is never defined"));
}

TEST(VerifierTest, GraphArguments) {
  SmallGraph g;
  ASSERT_TRUE(InferShapes(g.graph).ok());
  g.graph.mutable_value(g.w).type = {DType::kF32, {4, 3}};
  EXPECT_EQ(Message(VerifyGraph(g.graph)),
            "INTERNAL: weight 'w' has type f32[4,3] but its data is f32[3,4]");

  Graph negative;
  ASSERT_TRUE(negative.AddInput("x", {DType::kF32, {-1}}).ok());
  EXPECT_THAT(Message(VerifyGraph(negative)),
              HasSubstr("graph input 'x' has a negative dimension: f32[-1]"));
}

}  // namespace
}  // namespace loom
