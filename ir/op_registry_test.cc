#include "ir/op_registry.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/ops.h"

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Message(const absl::Status& status) { return status.ToString(); }

absl::StatusOr<OutputTypes> PassThrough(const Node&, absl::Span<const TensorType> in) {
  return OutputTypes{in.empty() ? TensorType{} : in[0]};
}

absl::Status Nothing(const Node&, absl::Span<const Tensor* const>, absl::Span<Tensor>) {
  return absl::OkStatus();
}

OpDef TestOp(std::string name, int min_inputs, int max_inputs, std::vector<AttrSpec> attrs = {}) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = min_inputs;
  def.max_inputs = max_inputs;
  def.attrs = std::move(attrs);
  def.infer = PassThrough;
  def.eval = Nothing;
  return def;
}

Node MakeNode(std::string op, int num_inputs, int num_outputs = 1, Attrs attrs = {}) {
  Node node;
  node.name = "n1";
  node.op = std::move(op);
  node.inputs.assign(num_inputs, 0);
  node.outputs.assign(num_outputs, 1);
  node.attrs = std::move(attrs);
  return node;
}

TEST(OpRegistryTest, GlobalHoldsTheStarterAndContractOps) {
  // The starter ops and the non-recurrent ops of notes/ops_spec.md; the
  // order of Names() is checked by FamiliesRegisterIntoAFreshRegistryOnce.
  for (const char* op :
       {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "relu", "exp", "log",
        "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "equal", "not_equal", "less",
        "less_equal", "greater", "greater_equal", "logical_not", "where", "cast", "reduce_sum",
        "reduce_mean", "reduce_max", "reduce_min", "reshape", "transpose", "squeeze", "unsqueeze",
        "expand", "concat", "slice", "matmul", "softmax",
        // issue 3
        "erf", "sin", "cos", "floor", "ceil", "round", "sign", "mod", "logical_and", "logical_or",
        "logical_xor", "gelu", "silu", "clip", "leaky_relu", "elu", "selu", "softplus",
        "hard_sigmoid", "hard_swish", "prelu", "linear", "gemm", "reduce_prod", "reduce_l1",
        "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square", "argmax",
        "argmin", "split", "tile", "pad", "gather", "cumsum", "flatten", "dropout", "log_softmax",
        "layer_norm", "group_norm", "batch_norm", "instance_norm",
        // issue 19
        "conv", "max_pool", "average_pool", "conv_transpose", "resize", "gather_nd", "atan", "asin",
        "acos", "asinh", "acosh", "atanh", "lrn", "top_k", "reverse_sequence", "einsum"}) {
    EXPECT_NE(OpRegistry::Global().Find(op), nullptr) << op;
  }
  EXPECT_EQ(OpRegistry::Global().Find("split")->num_outputs, -1);
  EXPECT_EQ(OpRegistry::Global().Find("nope"), nullptr);
  ASSERT_NE(OpRegistry::Global().Find("concat"), nullptr);
  EXPECT_EQ(OpRegistry::Global().Find("concat")->max_inputs, -1);
}

TEST(OpRegistryTest, FamiliesRegisterIntoAFreshRegistryOnce) {
  OpRegistry registry;
  EXPECT_TRUE(RegisterElementwiseOps(registry).ok());
  EXPECT_TRUE(RegisterReductionOps(registry).ok());
  EXPECT_TRUE(RegisterShapeOps(registry).ok());
  EXPECT_TRUE(RegisterMatmulOps(registry).ok());
  EXPECT_TRUE(RegisterSoftmaxOps(registry).ok());
  EXPECT_TRUE(RegisterActivationOps(registry).ok());
  EXPECT_TRUE(RegisterTensorOps(registry).ok());
  EXPECT_TRUE(RegisterNormOps(registry).ok());
  EXPECT_TRUE(RegisterRecurrentOps(registry).ok());
  EXPECT_TRUE(RegisterConvOps(registry).ok());
  EXPECT_TRUE(RegisterResizeOps(registry).ok());
  EXPECT_TRUE(RegisterInverseTrigOps(registry).ok());
  EXPECT_TRUE(RegisterLrnOps(registry).ok());
  EXPECT_TRUE(RegisterSequenceOps(registry).ok());
  EXPECT_TRUE(RegisterEinsumOps(registry).ok());
  EXPECT_EQ(registry.Names(), OpRegistry::Global().Names());
  EXPECT_THAT(Message(RegisterMatmulOps(registry)), HasSubstr("op 'matmul' is registered twice"));
}

// Passes ask the registry what an op does (OpDef::pattern) instead of
// testing its name: every op must say, not fall back to a default.
TEST(OpRegistryTest, EveryOpHasAPattern) {
  const OpRegistry& registry = OpRegistry::Global();
  for (const std::string& name : registry.Names()) {
    const OpDef& def = *registry.Find(name);
    EXPECT_NE(def.pattern, OpPattern::kUnset) << name;
    if (def.is_view) {
      EXPECT_EQ(def.pattern, OpPattern::kInjective) << name;
    }
    for (int input : def.indexed_inputs) {
      EXPECT_TRUE(input >= 0 && (def.max_inputs == -1 || input < def.max_inputs)) << name;
    }
  }
}

TEST(OpRegistryTest, PatternsOfSomeOps) {
  const OpRegistry& registry = OpRegistry::Global();
  auto pattern = [&](const char* op) { return registry.Find(op)->pattern; };
  EXPECT_EQ(pattern("exp"), OpPattern::kElementwise);
  EXPECT_EQ(pattern("add"), OpPattern::kBroadcast);
  EXPECT_EQ(pattern("concat"), OpPattern::kInjective);
  EXPECT_EQ(pattern("reduce_sum"), OpPattern::kReduction);
  EXPECT_EQ(pattern("matmul"), OpPattern::kContraction);
  EXPECT_EQ(pattern("top_k"), OpPattern::kOpaque);
  EXPECT_EQ(OpPatternName(pattern("matmul")), "contraction");
  for (const char* op : {"reshape", "transpose", "squeeze", "unsqueeze", "expand", "slice", "split",
                         "tile", "as_strided", "flatten"}) {
    EXPECT_TRUE(registry.Find(op)->is_view) << op;
  }
  EXPECT_FALSE(registry.Find("concat")->is_view);
  EXPECT_TRUE(registry.Find("gather")->ReadsByIndex(0));
  EXPECT_FALSE(registry.Find("gather")->ReadsByIndex(1));
  EXPECT_TRUE(registry.Find("scatter_nd")->ReadsByIndex(2));
  EXPECT_FALSE(registry.Find("scatter_nd")->ReadsByIndex(0));
}

TEST(OpRegistryTest, RegisterRejectsBrokenDefinitions) {
  OpRegistry registry;
  EXPECT_FALSE(registry.Register(TestOp("", 1, 1)).ok());
  EXPECT_FALSE(registry.Register(TestOp("bad_arity", 2, 1)).ok());
  OpDef no_eval = TestOp("no_eval", 1, 1);
  no_eval.eval = nullptr;
  EXPECT_FALSE(registry.Register(no_eval).ok());
  OpDef bad_outputs = TestOp("bad_outputs", 1, 1);
  bad_outputs.num_outputs = -2;
  EXPECT_FALSE(registry.Register(bad_outputs).ok());
  EXPECT_THAT(Message(registry.Register(
                  TestOp("twice", 1, 1, {{"a", AttrType::kInt}, {"a", AttrType::kFloat}}))),
              HasSubstr("declares attribute 'a' twice"));
  EXPECT_THAT(registry.Names(), IsEmpty());
}

TEST(CheckNodeSignatureTest, UnknownOp) {
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("frobnicate", 1), OpRegistry::Global())),
            "INVALID_ARGUMENT: node 'n1' (frobnicate): unknown op "
            "'frobnicate'");
}

TEST(CheckNodeSignatureTest, ArityMessagesSayExpectedAndGiven) {
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(TestOp("one", 1, 1)).ok());
  ASSERT_TRUE(registry.Register(TestOp("range", 2, 3)).ok());
  ASSERT_TRUE(registry.Register(TestOp("many", 1, -1)).ok());
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("one", 2), registry)),
            "INVALID_ARGUMENT: node 'n1' (one): expected 1 input, got 2");
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("range", 1), registry)),
            "INVALID_ARGUMENT: node 'n1' (range): expected 2 to 3 inputs, "
            "got 1");
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("many", 0), registry)),
            "INVALID_ARGUMENT: node 'n1' (many): expected at least 1 input, "
            "got 0");
  EXPECT_TRUE(CheckNodeSignature(MakeNode("many", 7), registry).ok());
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("one", 1, 2), registry)),
            "INVALID_ARGUMENT: node 'n1' (one): expected 1 output, got 2");
}

TEST(CheckNodeSignatureTest, VariadicOutputsTakeOneOrMore) {
  OpRegistry registry;
  OpDef def = TestOp("parts", 1, 1);
  def.num_outputs = -1;
  ASSERT_TRUE(registry.Register(def).ok());
  EXPECT_TRUE(CheckNodeSignature(MakeNode("parts", 1, 1), registry).ok());
  EXPECT_TRUE(CheckNodeSignature(MakeNode("parts", 1, 5), registry).ok());
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("parts", 1, 0), registry)),
            "INVALID_ARGUMENT: node 'n1' (parts): expected at least 1 output, "
            "got 0");
}

TEST(CheckNodeSignatureTest, Attributes) {
  OpRegistry registry;
  ASSERT_TRUE(registry
                  .Register(TestOp("op", 1, 1,
                                   {{"eps", AttrType::kFloat},
                                    {"mode", AttrType::kString, true},
                                    {"dims", AttrType::kInts}}))
                  .ok());
  ASSERT_TRUE(registry.Register(TestOp("plain", 1, 1)).ok());
  Attrs attrs;
  attrs.Set("mode", std::string("fast"));
  EXPECT_TRUE(CheckNodeSignature(MakeNode("op", 1, 1, attrs), registry).ok());
  // An int is accepted where a float is declared.
  attrs.Set("eps", int64_t{1});
  EXPECT_TRUE(CheckNodeSignature(MakeNode("op", 1, 1, attrs), registry).ok());

  Attrs wrong = attrs;
  wrong.Set("dims", std::vector<double>{1.5});
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("op", 1, 1, wrong), registry)),
            "INVALID_ARGUMENT: node 'n1' (op): attribute 'dims' must be ints, "
            "got floats");
  Attrs unknown = attrs;
  unknown.Set("colour", std::string("red"));
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("op", 1, 1, unknown), registry)),
            "INVALID_ARGUMENT: node 'n1' (op): unknown attribute 'colour' (known: "
            "eps, mode, dims)");
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("plain", 1, 1, unknown), registry)),
            "INVALID_ARGUMENT: node 'n1' (plain): unknown attribute 'mode' "
            "(plain takes none)");
  EXPECT_EQ(Message(CheckNodeSignature(MakeNode("op", 1), registry)),
            "INVALID_ARGUMENT: node 'n1' (op): missing required attribute "
            "'mode' (string)");
}

TEST(InferShapesTest, SetsIntermediateTypesInNodeOrder) {
  Graph graph;
  ValueId x = *graph.AddInput("x", {DType::kF32, {2, 3}});
  Tensor bias(DType::kF32, {3});
  ValueId b = *graph.AddInitializer("b", ValueKind::kWeight, bias);
  NodeId add = *graph.AddNode("add1", "add", {x, b}, {"sum"});
  const ValueId sum = graph.node(add).outputs[0];
  Attrs axes;
  axes.Set("axes", std::vector<int64_t>{0});
  NodeId reduce = *graph.AddNode("r1", "reduce_sum", {sum}, {"total"}, axes);
  ASSERT_TRUE(InferShapes(graph).ok());
  EXPECT_EQ(graph.value(sum).type, (TensorType{DType::kF32, {2, 3}}));
  EXPECT_EQ(graph.value(graph.node(reduce).outputs[0]).type, (TensorType{DType::kF32, {3}}));
}

TEST(InferShapesTest, ErrorsNameTheNode) {
  Graph graph;
  ValueId x = *graph.AddInput("x", {DType::kF32, {2, 3}});
  ValueId y = *graph.AddInput("y", {DType::kF32, {4, 5}});
  ASSERT_TRUE(graph.AddNode("fc1", "matmul", {x, y}, {"z"}).ok());
  EXPECT_EQ(Message(InferShapes(graph)),
            "INVALID_ARGUMENT: node 'fc1' (matmul): inner dimensions do not "
            "agree: [2,3] x [4,5]");
}

TEST(InferShapesTest, RejectsReadsBeforeDefinitionAndNegativeDims) {
  Graph graph;
  ValueId x = *graph.AddInput("x", {DType::kF32, {2}});
  NodeId first = *graph.AddNode("first", "neg", {x}, {"a"});
  NodeId second = *graph.AddNode("second", "neg", {graph.node(first).outputs[0]}, {"b"});
  // Swap the nodes so that "second" reads "a" before "first" defines it.
  graph.ReplaceNodes({graph.node(second), graph.node(first)});
  EXPECT_EQ(Message(InferShapes(graph)),
            "INVALID_ARGUMENT: node 'second' (neg): reads value 'a' before it "
            "is defined");

  Graph negative;
  ASSERT_TRUE(negative.AddInput("x", {DType::kF32, {-1, 2}}).ok());
  EXPECT_THAT(Message(InferShapes(negative)),
              HasSubstr("value 'x' has a negative dimension: f32[-1,2]"));
}

}  // namespace
}  // namespace loom
