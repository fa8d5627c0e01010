#include "tools/gen.h"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/graph_io.h"
#include "ir/interpreter.h"
#include "ir/random.h"
#include "ir/tensor.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ToText(const proto::Graph& graph) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(graph, &text);
  return text;
}

// Generates `options` and loads the result with the real loader (op
// registry, shape inference, verifier).
Graph GenerateAndLoad(const GenOptions& options) {
  absl::StatusOr<proto::Graph> proto = GenerateModel(options);
  EXPECT_TRUE(proto.ok()) << proto.status();
  if (!proto.ok()) return Graph();
  absl::StatusOr<Graph> graph = GraphFromProto(*proto, "gen");
  EXPECT_TRUE(graph.ok()) << graph.status() << "\n" << ToText(*proto);
  if (!graph.ok()) return Graph();
  return *std::move(graph);
}

GenOptions Kind(std::string kind) {
  GenOptions options;
  options.kind = std::move(kind);
  return options;
}

GenOptions RandomOptions(uint64_t seed, int nodes) {
  GenOptions options = Kind("random");
  options.seed = seed;
  options.nodes = nodes;
  return options;
}

TEST(GenTest, KindsAreListed) {
  EXPECT_THAT(GeneratorKinds(), ElementsAre("lstm", "gru", "rnn", "group_norm", "layer_norm",
                                            "softmax", "mlp", "random"));
}

// Interprets `graph` on uniform random inputs in [-1, 1) and checks that
// every output is finite.
void ExpectInterpretsToFiniteValues(const Graph& graph, uint64_t seed = 7) {
  std::vector<Tensor> inputs;
  for (ValueId id : graph.inputs()) {
    inputs.emplace_back(graph.value(id).type);
    FillUniform(inputs.back(), seed + inputs.size(), -1.0, 1.0);
  }
  absl::StatusOr<std::vector<Tensor>> outputs = Interpret(graph, inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), graph.outputs().size());
  for (size_t k = 0; k < outputs->size(); ++k) {
    const Tensor& output = (*outputs)[k];
    EXPECT_EQ(output.type(), graph.value(graph.outputs()[k]).type);
    for (int64_t i = 0; i < output.num_elements(); ++i) {
      ASSERT_TRUE(std::isfinite(output.GetDouble(i))) << "output " << k << ", element " << i;
    }
  }
}

std::vector<std::string> OutputNames(const Graph& graph) {
  std::vector<std::string> names;
  for (ValueId id : graph.outputs()) names.push_back(graph.value(id).name);
  return names;
}

const Shape& ShapeOf(const Graph& graph, const std::string& name) {
  const ValueId id = graph.FindValue(name);
  EXPECT_NE(id, -1) << name;
  static const Shape kNone;
  return id == -1 ? kNone : graph.value(id).type.shape;
}

// The seed case (examples/lstm_l2_h64.pbtxt; docs/architecture.md, Examples and the seed
// reports): nn.LSTM(32, 64, batch_first=True) on x [2, 16, 32].
TEST(GenTest, LstmWithDefaults) {
  const Graph graph = GenerateAndLoad(Kind("lstm"));
  EXPECT_EQ(ShapeOf(graph, "x"), (Shape{2, 16, 32}));
  EXPECT_THAT(OutputNames(graph), ElementsAre("y", "h_n", "c_n"));
  EXPECT_EQ(ShapeOf(graph, "y"), (Shape{2, 16, 64}));
  EXPECT_EQ(ShapeOf(graph, "h_n"), (Shape{1, 2, 64}));
  EXPECT_EQ(ShapeOf(graph, "c_n"), (Shape{1, 2, 64}));
  EXPECT_EQ(ShapeOf(graph, "lstm0_w"), (Shape{1, 256, 32}));
  EXPECT_EQ(ShapeOf(graph, "lstm0_r"), (Shape{1, 256, 64}));
  EXPECT_EQ(ShapeOf(graph, "lstm0_b"), (Shape{1, 512}));
  ASSERT_EQ(graph.nodes().size(), 4);  // lstm, reshape, two transposes
  const Node& lstm = graph.nodes()[0];
  EXPECT_EQ(lstm.op, "lstm");
  EXPECT_EQ(lstm.attrs.GetInt("hidden_size", 0), 64);
  EXPECT_EQ(lstm.attrs.GetInt("layout", 0), 1);
  EXPECT_EQ(lstm.outputs.size(), 3);
}

TEST(GenTest, RecurrentLayersChainAndInterpret) {
  for (const char* kind : {"lstm", "gru", "rnn"}) {
    SCOPED_TRACE(kind);
    GenOptions options = Kind(kind);
    options.layers = 3;
    options.hidden = 5;
    options.input = 3;
    options.seq = 4;
    options.batch = 2;
    const Graph graph = GenerateAndLoad(options);
    const int64_t gates = kind == std::string("lstm") ? 4 : kind == std::string("gru") ? 3 : 1;
    EXPECT_EQ(graph.weights().size(), 9);
    EXPECT_EQ(ShapeOf(graph, absl::StrCat(kind, "0_w")), (Shape{1, gates * 5, 3}));
    EXPECT_EQ(ShapeOf(graph, absl::StrCat(kind, "1_w")), (Shape{1, gates * 5, 5}));
    // Layer 1 reads layer 0's output as [batch, seq, hidden].
    EXPECT_EQ(ShapeOf(graph, absl::StrCat(kind, "0_out")), (Shape{2, 4, 5}));
    EXPECT_EQ(ShapeOf(graph, "y"), (Shape{2, 4, 5}));
    EXPECT_EQ(ShapeOf(graph, "h_n"), (Shape{3, 2, 5}));
    if (kind == std::string("lstm")) {
      EXPECT_THAT(OutputNames(graph), ElementsAre("y", "h_n", "c_n"));
    } else {
      EXPECT_THAT(OutputNames(graph), ElementsAre("y", "h_n"));
    }
    ExpectInterpretsToFiniteValues(graph);
  }
}

TEST(GenTest, RecurrentWeightsArePyTorchInit) {
  GenOptions options = Kind("gru");
  options.layers = 2;
  options.hidden = 16;
  absl::StatusOr<proto::Graph> proto = GenerateModel(options);
  ASSERT_TRUE(proto.ok()) << proto.status();
  std::set<uint64_t> seeds;
  for (const proto::Initializer& weight : proto->weight()) {
    ASSERT_TRUE(weight.has_random()) << weight.name();
    EXPECT_DOUBLE_EQ(weight.random().high(), 0.25) << weight.name();
    EXPECT_DOUBLE_EQ(weight.random().low(), -0.25) << weight.name();
    seeds.insert(weight.random().seed());
  }
  EXPECT_EQ(seeds.size(), 6);
}

TEST(GenTest, GroupNorm) {
  const Graph graph = GenerateAndLoad(Kind("group_norm"));
  EXPECT_EQ(ShapeOf(graph, "x"), (Shape{2, 16, 32, 32}));
  EXPECT_EQ(ShapeOf(graph, "scale"), (Shape{16}));
  EXPECT_EQ(ShapeOf(graph, "bias"), (Shape{16}));
  EXPECT_THAT(OutputNames(graph), ElementsAre("y"));
  EXPECT_EQ(ShapeOf(graph, "y"), (Shape{2, 16, 32, 32}));
  ASSERT_EQ(graph.nodes().size(), 1);
  EXPECT_EQ(graph.nodes()[0].op, "group_norm");
  EXPECT_EQ(graph.nodes()[0].attrs.GetInt("num_groups", 0), 2);

  // The large case (examples/group_norm_large.pbtxt), GroupNorm(32, 256) on [16, 256, 64, 64].
  GenOptions large = Kind("group_norm");
  large.groups = 32;
  large.channels = 256;
  large.batch = 16;
  large.input = 64;
  EXPECT_EQ(ShapeOf(GenerateAndLoad(large), "x"), (Shape{16, 256, 64, 64}));

  GenOptions small = Kind("group_norm");
  small.batch = 1;
  small.channels = 4;
  small.groups = 2;
  small.input = 3;
  ExpectInterpretsToFiniteValues(GenerateAndLoad(small));
}

TEST(GenTest, GroupsMustDivideChannels) {
  GenOptions options = Kind("group_norm");
  options.groups = 3;
  absl::StatusOr<proto::Graph> graph = GenerateModel(options);
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(graph.status().message(), "gen: --groups (3) must divide --channels (16)");
}

TEST(GenTest, LayerNorm) {
  const Graph graph = GenerateAndLoad(Kind("layer_norm"));
  EXPECT_EQ(ShapeOf(graph, "x"), (Shape{2, 64}));
  EXPECT_EQ(ShapeOf(graph, "scale"), (Shape{64}));
  EXPECT_EQ(ShapeOf(graph, "y"), (Shape{2, 64}));
  ASSERT_EQ(graph.nodes().size(), 1);
  EXPECT_EQ(graph.nodes()[0].op, "layer_norm");
  EXPECT_EQ(graph.nodes()[0].attrs.GetInt("axis", 0), -1);
  ExpectInterpretsToFiniteValues(graph);

  // The large case (examples/layer_norm_large.pbtxt): [8192, 1024] over the last axis.
  GenOptions large = Kind("layer_norm");
  large.batch = 8192;
  large.hidden = 1024;
  EXPECT_EQ(ShapeOf(GenerateAndLoad(large), "y"), (Shape{8192, 1024}));
}

TEST(GenTest, MlpWithDefaults) {
  const Graph graph = GenerateAndLoad(Kind("mlp"));
  ASSERT_EQ(graph.inputs().size(), 1);
  EXPECT_EQ(graph.value(graph.inputs()[0]).name, "x");
  EXPECT_EQ(graph.value(graph.inputs()[0]).type.shape, (Shape{2, 32}));
  ASSERT_EQ(graph.outputs().size(), 1);
  const Value& y = graph.value(graph.outputs()[0]);
  EXPECT_EQ(y.name, "y");
  EXPECT_EQ(y.type, (TensorType{DType::kF32, {2, 32}}));
  // One hidden layer: two linears (matmul + add) and a relu.
  EXPECT_EQ(graph.weights().size(), 4);
  EXPECT_EQ(graph.nodes().size(), 5);
}

TEST(GenTest, MlpLayersAndSizes) {
  GenOptions options = Kind("mlp");
  options.layers = 3;
  options.hidden = 8;
  options.input = 5;
  options.batch = 7;
  const Graph graph = GenerateAndLoad(options);
  EXPECT_EQ(graph.weights().size(), 8);
  EXPECT_EQ(graph.nodes().size(), 11);
  ASSERT_EQ(graph.outputs().size(), 1);
  EXPECT_EQ(graph.value(graph.outputs()[0]).type.shape, (Shape{7, 5}));
  const ValueId first_weight = graph.FindValue("fc0_weight");
  ASSERT_NE(first_weight, -1);
  EXPECT_EQ(graph.value(first_weight).type.shape, (Shape{5, 8}));
}

TEST(GenTest, MlpWeightsAreSeededAndBounded) {
  absl::StatusOr<proto::Graph> one = GenerateModel(Kind("mlp"));
  GenOptions other_seed = Kind("mlp");
  other_seed.seed = 2;
  absl::StatusOr<proto::Graph> two = GenerateModel(other_seed);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->weight_size(), two->weight_size());
  std::set<uint64_t> seeds;
  for (int i = 0; i < one->weight_size(); ++i) {
    const proto::Initializer& weight = one->weight(i);
    ASSERT_TRUE(weight.has_random()) << weight.name();
    const double limit =
        1.0 / std::sqrt(static_cast<double>(weight.name().rfind("fc0", 0) == 0 ? 32 : 64));
    EXPECT_DOUBLE_EQ(weight.random().high(), limit) << weight.name();
    EXPECT_DOUBLE_EQ(weight.random().low(), -limit) << weight.name();
    seeds.insert(weight.random().seed());
    EXPECT_NE(weight.random().seed(), two->weight(i).random().seed());
  }
  EXPECT_EQ(seeds.size(), one->weight_size());  // every weight its own seed
}

TEST(GenTest, Softmax) {
  const Graph graph = GenerateAndLoad(Kind("softmax"));
  ASSERT_EQ(graph.nodes().size(), 1);
  EXPECT_EQ(graph.nodes()[0].op, "softmax");
  EXPECT_EQ(graph.nodes()[0].attrs.GetInt("axis", 0), -1);
  ASSERT_EQ(graph.outputs().size(), 1);
  EXPECT_EQ(graph.value(graph.outputs()[0]).name, "y");
  EXPECT_EQ(graph.value(graph.outputs()[0]).type.shape, (Shape{2, 16, 64}));
}

TEST(GenTest, UnknownKindListsTheKinds) {
  absl::StatusOr<proto::Graph> graph = GenerateModel(Kind("transformer"));
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("'transformer'"));
  for (const std::string& kind : GeneratorKinds()) {
    EXPECT_THAT(graph.status().message(), HasSubstr(kind));
  }
}

TEST(GenTest, NonPositiveSizesNameTheOption) {
  struct Case {
    const char* option;
    int GenOptions::*field;
  };
  const Case cases[] = {
      {"layers", &GenOptions::layers},     {"hidden", &GenOptions::hidden},
      {"input", &GenOptions::input},       {"seq", &GenOptions::seq},
      {"batch", &GenOptions::batch},       {"groups", &GenOptions::groups},
      {"channels", &GenOptions::channels}, {"nodes", &GenOptions::nodes},
  };
  for (const Case& c : cases) {
    for (int bad : {0, -3}) {
      GenOptions options = Kind("mlp");
      options.*c.field = bad;
      absl::StatusOr<proto::Graph> graph = GenerateModel(options);
      ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument) << c.option;
      EXPECT_THAT(graph.status().message(), HasSubstr(absl::StrCat("--", c.option)));
    }
  }
}

TEST(GenTest, TooManyRandomNodes) {
  absl::StatusOr<proto::Graph> graph = GenerateModel(RandomOptions(1, 2'000'000'000));
  ASSERT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("--nodes"));
}

// Every node output feeds another node or is a graph output, every input is
// read, and no graph input is itself an output.
void ExpectNoDeadCode(const proto::Graph& graph) {
  std::set<std::string> read(graph.output().begin(), graph.output().end());
  for (const proto::Node& node : graph.node()) {
    read.insert(node.input().begin(), node.input().end());
  }
  for (const proto::Node& node : graph.node()) {
    EXPECT_TRUE(read.count(node.output(0))) << node.name() << " is dead";
  }
  for (const proto::Input& input : graph.input()) {
    EXPECT_TRUE(read.count(input.name())) << input.name() << " is unread";
    for (const std::string& output : graph.output()) {
      EXPECT_NE(output, input.name());
    }
  }
}

TEST(GenTest, RandomGraphsLoadAndAreReproducible) {
  for (int nodes : {10, 50, 200}) {
    std::string previous;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      SCOPED_TRACE(absl::StrCat("seed ", seed, ", nodes ", nodes));
      absl::StatusOr<proto::Graph> proto = GenerateModel(RandomOptions(seed, nodes));
      ASSERT_TRUE(proto.ok()) << proto.status();
      const std::string text = ToText(*proto);
      absl::StatusOr<Graph> graph = GraphFromProto(*proto, "gen");
      ASSERT_TRUE(graph.ok()) << graph.status() << "\n" << text;

      absl::StatusOr<proto::Graph> again = GenerateModel(RandomOptions(seed, nodes));
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(ToText(*again), text);
      EXPECT_NE(text, previous);
      previous = text;

      EXPECT_GE(proto->node_size(), nodes);
      EXPECT_LE(proto->node_size(), 2 * nodes);
      EXPECT_GE(proto->output_size(), 1);
      EXPECT_LE(proto->output_size(), 4);
      ExpectNoDeadCode(*proto);
      for (const Value& value : graph->values()) {
        EXPECT_LE(NumElements(value.type.shape), 4096) << value.name;
      }
    }
  }
}

TEST(GenTest, RandomGraphsUseEveryOp) {
  std::set<std::string> ops;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    absl::StatusOr<proto::Graph> graph = GenerateModel(RandomOptions(seed, 200));
    ASSERT_TRUE(graph.ok());
    for (const proto::Node& node : graph->node()) ops.insert(node.op());
  }
  for (const char* op :
       {"neg",        "abs",         "relu",       "tanh",       "sigmoid", "exp",       "log",
        "sqrt",       "rsqrt",       "reciprocal", "pow",        "add",     "sub",       "mul",
        "div",        "maximum",     "minimum",    "less",       "greater", "equal",     "where",
        "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reshape", "transpose", "squeeze",
        "unsqueeze",  "expand",      "slice",      "concat",     "matmul",  "softmax",   "cast"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
}

TEST(GenTest, RandomGraphsInterpretToFiniteValues) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const Graph graph = GenerateAndLoad(RandomOptions(seed, 100));
    std::vector<Tensor> inputs;
    for (ValueId id : graph.inputs()) {
      inputs.emplace_back(graph.value(id).type);
      FillUniform(inputs.back(), seed * 10 + inputs.size(), -1.0, 1.0);
    }
    absl::StatusOr<std::vector<Tensor>> outputs = Interpret(graph, inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    ASSERT_EQ(outputs->size(), graph.outputs().size());
    for (const Tensor& output : *outputs) {
      for (int64_t i = 0; i < output.num_elements(); ++i) {
        ASSERT_TRUE(std::isfinite(output.GetDouble(i)))
            << "element " << i << " of a " << TypeToString(output.type());
      }
    }
  }
}

}  // namespace
}  // namespace loom
