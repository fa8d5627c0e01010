#include "ir/interpreter.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return status.ToString(); }

Tensor Values(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetDouble(i, values[i]);
  }
  return tensor;
}

std::vector<double> Doubles(const Tensor& tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    values.push_back(tensor.GetDouble(i));
  }
  return values;
}

// relu(x @ w + b) and its row sums, with x, b and the activation (twice) as
// outputs too.
struct Mlp {
  Graph graph;
  ValueId x, w, b, act, sums;

  Mlp() {
    graph.name = "mlp";
    x = *graph.AddInput("x", {DType::kF32, {2, 3}});
    w = *graph.AddInitializer("w", ValueKind::kWeight,
                              Values(DType::kF32, {3, 2}, {1, -1, 2, 0, -1, 1}));
    b = *graph.AddInitializer("b", ValueKind::kConstant, Values(DType::kF32, {2}, {0.5, -4}));
    const ValueId h = graph.node(*graph.AddNode("fc", "matmul", {x, w}, {"h"})).outputs[0];
    const ValueId biased = graph.node(*graph.AddNode("bias", "add", {h, b}, {"biased"})).outputs[0];
    act = graph.node(*graph.AddNode("act", "relu", {biased}, {"act"})).outputs[0];
    Attrs axes;
    axes.Set("axes", std::vector<int64_t>{-1});
    sums = graph.node(*graph.AddNode("sum", "reduce_sum", {act}, {"sums"}, axes)).outputs[0];
    graph.SetOutputs({act, sums, x, b, act});
  }
};

TEST(InterpreterTest, RunsAGraphAndReturnsOutputsInOrder) {
  Mlp mlp;
  ASSERT_TRUE(InferShapes(mlp.graph).ok());
  const Tensor x = Values(DType::kF32, {2, 3}, {1, 2, 3, -1, 0, 4});
  absl::StatusOr<std::vector<Tensor>> out = Interpret(mlp.graph, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 5);
  // x @ w = [[2, 2], [-5, 5]]; + b = [[2.5, -2], [-4.5, 1]]
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(2.5, 0, 0, 1));
  EXPECT_THAT(Doubles((*out)[1]), ElementsAre(2.5, 1));
  EXPECT_EQ((*out)[2], x);
  EXPECT_EQ((*out)[3], mlp.graph.initializer(mlp.b));
  EXPECT_EQ((*out)[4], (*out)[0]);
}

TEST(InterpreterTest, NeedsNoPriorShapeInference) {
  Mlp mlp;  // intermediate types are still unset
  absl::StatusOr<std::vector<Tensor>> out = Interpret(mlp.graph, {Tensor(DType::kF32, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].type(), (TensorType{DType::kF32, {2}}));
}

TEST(InterpreterTest, ChecksInputCountAndTypes) {
  Mlp mlp;
  EXPECT_EQ(Message(Interpret(mlp.graph, {}).status()),
            "INVALID_ARGUMENT: graph 'mlp' takes 1 inputs, got 0");
  EXPECT_EQ(Message(Interpret(mlp.graph, {Tensor(DType::kF32, {3, 2})}).status()),
            "INVALID_ARGUMENT: input 'x' expects f32[2,3], got f32[3,2]");
  EXPECT_EQ(Message(Interpret(mlp.graph, {Tensor(DType::kF64, {2, 3})}).status()),
            "INVALID_ARGUMENT: input 'x' expects f32[2,3], got f64[2,3]");
}

TEST(InterpreterTest, OpErrorsNameTheNode) {
  Graph graph;
  ValueId a = *graph.AddInput("a", {DType::kI32, {2}});
  ValueId b = *graph.AddInput("b", {DType::kI32, {2}});
  graph.AddOutput(graph.node(*graph.AddNode("q", "div", {a, b}, {"y"})).outputs[0]);
  Tensor ones = Values(DType::kI32, {2}, {1, 1});
  Tensor zeros(DType::kI32, {2});
  EXPECT_TRUE(Interpret(graph, {ones, ones}).ok());
  EXPECT_EQ(Message(Interpret(graph, {ones, zeros}).status()),
            "INVALID_ARGUMENT: node 'q' (div): integer division by zero "
            "(divisor element 0)");
}

TEST(InterpreterTest, RefusesOutputsBeyondTheLimitsBeforeAllocating) {
  Graph graph;
  ValueId x = *graph.AddInput("x", {DType::kF32, {2, 3}});
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{int64_t{1} << 40, 2, 3});
  graph.AddOutput(graph.node(*graph.AddNode("big", "expand", {x}, {"y"}, shape)).outputs[0]);
  EXPECT_EQ(Message(Interpret(graph, {Tensor(DType::kF32, {2, 3})}).status()),
            "INVALID_ARGUMENT: node 'big' (expand): output 'y': shape [1099511627776,2,3] is "
            "too large: 6597069766656 elements (loom allows at most 2^40 elements per tensor, "
            "counting dimensions of size 0 as 1)");
}

TEST(InterpreterTest, SharedAndDeadValues) {
  // a = neg(x); c = mul(a, a) + exp(a); dead = abs(x) is never read.
  Graph graph;
  ValueId x = *graph.AddInput("x", {DType::kF64, {3}});
  ValueId a = graph.node(*graph.AddNode("n", "neg", {x}, {"a"})).outputs[0];
  ASSERT_TRUE(graph.AddNode("dead", "abs", {x}, {"unused"}).ok());
  ValueId sq = graph.node(*graph.AddNode("sq", "mul", {a, a}, {"sq"})).outputs[0];
  ValueId e = graph.node(*graph.AddNode("e", "exp", {a}, {"e"})).outputs[0];
  graph.AddOutput(graph.node(*graph.AddNode("c", "add", {sq, e}, {"c"})).outputs[0]);
  absl::StatusOr<std::vector<Tensor>> out =
      Interpret(graph, {Values(DType::kF64, {3}, {0, 1, -2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, 1 + std::exp(-1.0), 4 + std::exp(2.0)));
}

TEST(InterpreterTest, LongChainsRun) {
  Graph graph;
  ValueId v = *graph.AddInput("x", {DType::kI64, {4}});
  ValueId one = *graph.AddInitializer("one", ValueKind::kConstant, Values(DType::kI64, {}, {1}));
  for (int i = 0; i < 2000; ++i) {
    v = graph
            .node(*graph.AddNode("add" + std::to_string(i), "add", {v, one},
                                 {"v" + std::to_string(i)}))
            .outputs[0];
  }
  graph.AddOutput(v);
  absl::StatusOr<std::vector<Tensor>> out =
      Interpret(graph, {Values(DType::kI64, {4}, {0, 1, 2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Doubles((*out)[0]), ElementsAre(2000, 2001, 2002, 2003));
}

TEST(InterpreterTest, MalformedGraphsAreErrorsNotCrashes) {
  Mlp mlp;
  const Tensor x(DType::kF32, {2, 3});
  {
    Graph graph = mlp.graph;
    graph.ReplaceNodes({graph.node(1), graph.node(0), graph.node(2), graph.node(3)});
    EXPECT_EQ(Message(Interpret(graph, {x}).status()),
              "INVALID_ARGUMENT: node 'bias' (add): reads value 'h' before it "
              "is defined");
  }
  {
    Graph graph = mlp.graph;
    graph.mutable_node(2).op = "frobnicate";
    EXPECT_EQ(Message(Interpret(graph, {x}).status()),
              "INVALID_ARGUMENT: node 'act' (frobnicate): unknown op "
              "'frobnicate'");
  }
  {
    Graph graph = mlp.graph;
    graph.mutable_node(0).inputs.push_back(12345);
    EXPECT_THAT(Message(Interpret(graph, {x}).status()),
                HasSubstr("INTERNAL: node 'fc' (matmul): names an invalid "
                          "value id"));
  }
  {
    Graph graph = mlp.graph;
    graph.AddOutput(graph.AddIntermediate("orphan"));
    EXPECT_EQ(Message(Interpret(graph, {x}).status()),
              "INVALID_ARGUMENT: graph output 'orphan.0' is never computed");
  }
  {
    Graph graph = mlp.graph;
    graph.mutable_node(1).outputs = {mlp.x};
    EXPECT_EQ(Message(Interpret(graph, {x}).status()),
              "INVALID_ARGUMENT: node 'bias' (add): writes value 'x', which is "
              "already defined");
  }
}

TEST(InterpreterTest, UsesTheGivenRegistry) {
  OpRegistry registry;
  OpDef fail;
  fail.name = "fail";
  fail.infer = [](const Node&, absl::Span<const TensorType> in) -> absl::StatusOr<OutputTypes> {
    return OutputTypes{in[0]};
  };
  fail.eval = [](const Node&, absl::Span<const Tensor* const>, absl::Span<Tensor>) {
    return absl::FailedPreconditionError("on purpose");
  };
  ASSERT_TRUE(registry.Register(fail).ok());
  Graph graph;
  ValueId x = *graph.AddInput("x", {DType::kF32, {}});
  graph.AddOutput(graph.node(*graph.AddNode("f", "fail", {x}, {"y"})).outputs[0]);
  EXPECT_EQ(Message(Interpret(graph, {Tensor()}, registry).status()),
            "FAILED_PRECONDITION: node 'f' (fail): on purpose");
}

// f16 and bf16 ops compute in f32 and round each result: (x + y) + y with
// y half an ulp of 1 rounds to 1 twice (ties to even), where f32 throughout
// would give 1 + one ulp. reduce_sum rounds once, after summing in f32.
TEST(InterpreterTest, HalfFloatsRoundEachOpsResult) {
  for (const auto& [dtype, half_ulp] :
       {std::pair{DType::kF16, 0x1p-11}, std::pair{DType::kBF16, 0x1p-8}}) {
    Graph graph;
    const ValueId x = *graph.AddInput("x", {dtype, {2}});
    const ValueId y =
        *graph.AddInitializer("y", ValueKind::kWeight, Values(dtype, {2}, {half_ulp, half_ulp}));
    const ValueId once = graph.node(*graph.AddNode("a", "add", {x, y}, {"once"})).outputs[0];
    graph.AddOutput(graph.node(*graph.AddNode("b", "add", {once, y}, {"twice"})).outputs[0]);
    Attrs axes;
    axes.Set("axes", std::vector<int64_t>{0});
    const ValueId sum =
        graph.node(*graph.AddNode("s", "reduce_sum", {y}, {"sum"}, axes)).outputs[0];
    graph.AddOutput(sum);
    absl::StatusOr<std::vector<Tensor>> out = Interpret(graph, {Values(dtype, {2}, {1, -1})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dtype(), dtype);
    EXPECT_THAT(Doubles((*out)[0]), ElementsAre(1, -1 + 2 * half_ulp));
    EXPECT_THAT(Doubles((*out)[1]), ElementsAre(2 * half_ulp));
    absl::StatusOr<std::vector<Tensor>> wide =
        InterpretInFloat64(graph, {Values(dtype, {2}, {1, -1})});
    ASSERT_TRUE(wide.ok()) << wide.status();
    EXPECT_EQ((*wide)[0].dtype(), DType::kF64);
    EXPECT_THAT(Doubles((*wide)[0]), ElementsAre(1 + 2 * half_ulp, -1 + 2 * half_ulp));
  }
}

}  // namespace
}  // namespace loom
