#include "passes/lower.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/module.h"
#include "ir/op_registry.h"
#include "passes/decompose.h"
#include "passes/lower_test_util.h"
#include "passes/pass.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

TEST(LowerTest, PointwiseOpBecomesOneComputeNode) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  graph.AddOutput(AddNode(graph, "relu", {x}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);
  const ComputeNode& node = program->nodes[0];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(ToString(node.store_index), ToString(node.body[0].index));
  EXPECT_EQ(program->buffers[node.output].kind, BufferKind::kOutput);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

TEST(LowerTest, ViewsAreIndexRemapsNotCopies) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3, 4}, x);
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{2, 0, 1});
  const ValueId t = AddNode(graph, "transpose", {x}, perm);  // [4, 2, 3]
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{8, 3});
  const ValueId r = AddNode(graph, "reshape", {t}, shape);
  graph.AddOutput(AddNode(graph, "neg", {r}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  // Only the input and neg's output exist: no buffer for the views.
  EXPECT_EQ(program->buffers.size(), 2);
  ASSERT_EQ(program->nodes.size(), 1);
  // neg[y0, y1] reads x at [(3*y0 + y1) // 6 % 2, y1, y0 // 2]... checked by
  // evaluating the load index against the definition.
  const ComputeNode& node = program->nodes[0];
  for (int64_t y0 = 0; y0 < 8; ++y0) {
    for (int64_t y1 = 0; y1 < 3; ++y1) {
      const int64_t flat = 3 * y0 + y1;  // position in t
      const int64_t t0 = flat / 6, t1 = flat / 3 % 2, t2 = flat % 3;
      // t[t0, t1, t2] = x[t1, t2, t0]
      const int64_t expected = t1 * 12 + t2 * 4 + t0;
      EXPECT_EQ(Evaluate(node.body[0].index, {y0, y1}), expected);
    }
  }
}

TEST(LowerTest, ReshapeRoundTripSimplifiesToIdentity) {
  ValueId x;
  Graph graph = GraphWithInput({2, 16, 32}, x);
  Attrs split, merge;
  split.Set("shape", std::vector<int64_t>{2, 2, 8, 32});
  merge.Set("shape", std::vector<int64_t>{2, 16, 32});
  const ValueId a = AddNode(graph, "reshape", {x}, split);
  const ValueId b = AddNode(graph, "reshape", {a}, merge);
  graph.AddOutput(AddNode(graph, "exp", {b}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(ToString(program->nodes[0].body[0].index), "512*x0 + 32*x1 + x2");
}

TEST(LowerTest, ReductionHasReductionLoops) {
  ValueId x;
  Graph graph = GraphWithInput({4, 5, 6}, x);
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{-1, 0});
  attrs.Set("keepdims", int64_t{1});
  graph.AddOutput(AddNode(graph, "reduce_max", {x}, attrs));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  const ComputeNode& node = program->nodes[0];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{1, 5, 1}));
  EXPECT_EQ(node.reduction_ranges, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(node.reduce, ReduceKind::kMax);
  // x[x3, x1, x4]
  EXPECT_EQ(Evaluate(node.body[0].index, {0, 2, 0, 3, 5}), 3 * 30 + 2 * 6 + 5);
}

TEST(LowerTest, GraphOutputThatIsAViewIsCopied) {
  ValueId x;
  Graph graph = GraphWithInput({6}, x);
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{2, 3});
  graph.AddOutput(AddNode(graph, "reshape", {x}, shape));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);
  EXPECT_EQ(program->buffers[program->outputs[0]].kind, BufferKind::kOutput);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

// The view reads the weight's buffer, which nothing else reads.
TEST(LowerTest, GraphOutputThatIsAViewOfAWeightIsCopiedFromIt) {
  Graph graph;
  Tensor values(DType::kF32, {2});
  values.SetDouble(0, 1.0);
  values.SetDouble(1, 2.0);
  const ValueId w = *graph.AddInitializer("w", ValueKind::kWeight, values);
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{3, 2});
  graph.AddOutput(AddNode(graph, "expand", {w}, shape));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->weights.size(), 1);
  ASSERT_EQ(program->nodes.size(), 1);
  EXPECT_EQ(program->nodes[0].body[0].buffer, program->weights[0]);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

TEST(LowerTest, OneElementConstantsAreInlined) {
  ValueId x;
  Graph graph = GraphWithInput({3}, x);
  Tensor two(DType::kF32, {});
  two.SetDouble(0, 2.0);
  const ValueId c = *graph.AddInitializer("two", ValueKind::kConstant, two);
  graph.AddOutput(AddNode(graph, "mul", {x, c}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->buffers.size(), 2);  // x and the output
  EXPECT_EQ(program->nodes[0].body[1].kind, ScalarOp::Kind::kConst);
  EXPECT_EQ(program->nodes[0].body[1].constant, 2.0);
}

// pow of a literal 2 or 3 is products of the base (no pow call); of
// another literal, or of an exponent that is a tensor, a pow call.
TEST(LowerTest, LiteralSquaresAndCubesAreProducts) {
  for (const double exponent : {2.0, 3.0, 2.5}) {
    ValueId x;
    Graph graph = GraphWithInput({3}, x);
    Tensor literal(DType::kF32, {});
    literal.SetDouble(0, exponent);
    const ValueId c = *graph.AddInitializer("exponent", ValueKind::kConstant, literal);
    graph.AddOutput(AddNode(graph, "pow", {x, c}));
    ASSERT_TRUE(InferShapes(graph).ok());
    absl::StatusOr<LoopProgram> program = LowerGraph(graph);
    ASSERT_TRUE(program.ok()) << program.status();
    std::vector<ScalarFn> calls;
    for (const ScalarOp& op : program->nodes[0].body) {
      if (op.kind == ScalarOp::Kind::kCall) calls.push_back(op.fn);
    }
    const std::vector<ScalarFn> expected =
        exponent == 2.0   ? std::vector<ScalarFn>{ScalarFn::kMul}
        : exponent == 3.0 ? std::vector<ScalarFn>{ScalarFn::kMul, ScalarFn::kMul}
                          : std::vector<ScalarFn>{ScalarFn::kPow};
    EXPECT_EQ(calls, expected) << "exponent " << exponent;
  }
}

TEST(LowerTest, OpWithoutLoweringIsAnErrorNamingTheNode) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3}, x);
  graph.AddOutput(AddNode(graph, "softmax", {x}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(program.status().message().find("node 'softmax0' (softmax)"), absl::string_view::npos)
      << program.status();
}

TEST(LowerTest, RefusesValuesBeyondTheLimits) {
  ValueId x;
  // As a caller that skipped the verifier might hand it over: sizes and
  // strides of [2^40, 2^40] would overflow.
  Graph graph = GraphWithInput({int64_t{1} << 40, int64_t{1} << 40}, x);
  graph.AddOutput(AddNode(graph, "relu", {x}));
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(program.status().message()),
              HasSubstr("value 'x': shape [1099511627776,1099511627776] is too large: its "
                        "element count overflows int64"));
}

TEST(LowerTest, ModChoosesTheRemainderSignByAttribute) {
  ValueId x;
  Graph graph = GraphWithInput({4}, x);
  Attrs fmod;
  fmod.Set("fmod", int64_t{1});
  graph.AddOutput(AddNode(graph, "mod", {x, x}));
  graph.AddOutput(AddNode(graph, "mod", {x, x}, fmod));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->nodes[0].body.back().fn, ScalarFn::kMod);
  EXPECT_EQ(program->nodes[1].body.back().fn, ScalarFn::kFmod);
}

TEST(LowerTest, TileIsAViewModuloTheInputDims) {
  ValueId x;
  Graph graph = GraphWithInput({3, 1}, x);
  Attrs repeats;
  repeats.Set("repeats", std::vector<int64_t>{2, 4});
  graph.AddOutput(AddNode(graph, "neg", {AddNode(graph, "tile", {x}, repeats)}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->buffers.size(), 2);  // no buffer for the tile
  ASSERT_EQ(program->nodes.size(), 1);
  EXPECT_EQ(program->nodes[0].ranges, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(ToString(program->nodes[0].body[0].index), "x0 % 3");
}

TEST(LowerTest, PadFillsThenCopiesTheInterior) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3}, x);
  Attrs attrs;
  attrs.Set("pads", std::vector<int64_t>{1, 0, 2, 4});
  attrs.Set("value", 1.5);
  graph.AddOutput(AddNode(graph, "pad", {x}, attrs));  // [5, 7]
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 2);
  const ComputeNode& fill = program->nodes[0];
  const ComputeNode& copy = program->nodes[1];
  EXPECT_EQ(fill.output, copy.output);
  EXPECT_EQ(fill.ranges, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(fill.body[fill.root].kind, ScalarOp::Kind::kConst);
  EXPECT_EQ(fill.body[fill.root].constant, 1.5);
  EXPECT_EQ(copy.ranges, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ToString(copy.store_index), "7*x0 + x1 + 7");          // [x0 + 1, x1]
  EXPECT_TRUE(program->buffers[fill.output].zero_border.empty());  // 1.5, not zeros
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

// A pad of zeros marks its buffer's border (ConvCall::zero_pads reads it).
TEST(LowerTest, PadOfZerosMarksTheBorder) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3}, x);
  Attrs attrs;
  attrs.Set("pads", std::vector<int64_t>{1, 0, 2, 4});
  graph.AddOutput(AddNode(graph, "pad", {x}, attrs));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->buffers[program->nodes[0].output].zero_border,
            (std::vector<int64_t>{1, 0, 2, 4}));
}

TEST(LowerTest, UnknownPadModesAreErrorsNamingTheNode) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3}, x);
  Attrs attrs;
  attrs.Set("pads", std::vector<int64_t>{0, 1, 0, 1});
  attrs.Set("mode", std::string("wrap"));
  graph.AddOutput(AddNode(graph, "pad", {x}, attrs));

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(program.status().message()),
              HasSubstr("node 'pad0' (pad): pad mode 'wrap' is not supported"));
}

// reflect and edge: one copy of the input per region (begin pad, interior,
// end pad along each padded dim), no fill.
TEST(LowerTest, MirroredPadIsOneCopyPerRegion) {
  for (const char* mode : {"reflect", "edge"}) {
    ValueId x;
    Graph graph = GraphWithInput({2, 3}, x);
    Attrs attrs;
    attrs.Set("pads", std::vector<int64_t>{1, 2, 0, 1});
    attrs.Set("mode", std::string(mode));
    graph.AddOutput(AddNode(graph, "pad", {x}, attrs));
    ASSERT_TRUE(InferShapes(graph).ok());
    absl::StatusOr<LoopProgram> program = LowerGraph(graph);
    ASSERT_TRUE(program.ok()) << program.status();
    // Dim 0: begin pad and interior (no end pad); dim 1: all three.
    EXPECT_EQ(program->nodes.size(), 6u) << mode;
    EXPECT_TRUE(VerifyLoopProgram(*program).ok()) << mode;
  }
}

// x [4, 5] gathered along `axis` by a constant `indices`.
Graph GatherGraph(const Tensor& indices, int64_t axis, ValueKind kind, ValueId& out) {
  ValueId x;
  Graph graph = GraphWithInput({4, 5}, x);
  const ValueId idx = *graph.AddInitializer("idx", kind, indices);
  Attrs attrs;
  attrs.Set("axis", axis);
  out = AddNode(graph, "gather", {x, idx}, attrs);
  graph.AddOutput(out);
  EXPECT_TRUE(InferShapes(graph).ok());
  return graph;
}

Tensor Indices(DType dtype, Shape shape, std::vector<int64_t> values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetInt(i, values[i]);
  return t;
}

TEST(LowerTest, GatherIsAnIndirectLoad) {
  ValueId out;
  const Graph graph =
      GatherGraph(Indices(DType::kI64, {2, 3}, {0, 3, 1, 2, 2, 0}), 1, ValueKind::kWeight,
                  out);  // out [4, 2, 3]
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);
  const ComputeNode& node = program->nodes[0];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{4, 2, 3}));
  const ScalarOp& index = node.body[0];
  EXPECT_EQ(program->buffers[index.buffer].name, "idx");
  EXPECT_EQ(ToString(index.index), "3*x1 + x2");
  const ScalarOp& load = node.body[node.root];
  EXPECT_EQ(program->buffers[load.buffer].name, "x");
  EXPECT_EQ(ToString(load.index), "5*x0");
  EXPECT_EQ(load.stride, 1);
  EXPECT_THAT(load.args, ElementsAre(0));
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
  EXPECT_THAT(PrintComputeNode(*program, node), HasSubstr("load x[5*x0 + 1*t0]"));
}

TEST(LowerTest, GatherWrapsNegativeIndicesInTheBody) {
  ValueId out;
  const Graph graph =
      GatherGraph(Indices(DType::kI32, {3}, {-1, 0, -4}), 0, ValueKind::kConstant, out);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  const ComputeNode& node = program->nodes[0];
  const ScalarOp& load = node.body[node.root];
  EXPECT_EQ(load.stride, 5);
  const ScalarOp& wrapped = node.body[load.args[0]];
  EXPECT_EQ(wrapped.fn, ScalarFn::kSelect);  // index < 0 ? index + 4 : index
  EXPECT_EQ(wrapped.dtype, DType::kI32);
}

TEST(LowerTest, GatherOfOneConstantIndexIsAView) {
  ValueId out;
  const Graph graph = GatherGraph(Indices(DType::kI64, {}, {-2}), 0, ValueKind::kConstant, out);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);                              // the output copy
  EXPECT_EQ(ToString(program->nodes[0].body[0].index), "x0 + 10");  // row 2
}

TEST(LowerTest, GatherFromAViewThatIsNotAffineCopiesItFirst) {
  ValueId x;
  Graph graph = GraphWithInput({4, 6}, x);
  Attrs perm, shape;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  shape.Set("shape", std::vector<int64_t>{3, 8});
  const ValueId view = AddNode(graph, "reshape", {AddNode(graph, "transpose", {x}, perm)}, shape);
  const ValueId idx =
      *graph.AddInitializer("idx", ValueKind::kWeight, Indices(DType::kI64, {2}, {7, 0}));
  Attrs axis;
  axis.Set("axis", int64_t{1});
  graph.AddOutput(AddNode(graph, "gather", {view, idx}, axis));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 2);
  EXPECT_EQ(program->nodes[0].name, "gather2.data");
  EXPECT_EQ(program->nodes[1].body.back().stride, 1);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

TEST(LowerTest, GatherIndicesAreCheckedAtCompileTime) {
  ValueId out;
  const Graph graph = GatherGraph(Indices(DType::kI64, {3}, {0, 4, 1}), 0, ValueKind::kWeight, out);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(program.status().message()),
              HasSubstr("node 'gather0' (gather): index 4 is out of range for axis 0 of size 4 "
                        "(element 1 of 'idx')"));
}

// x [4, 5] gathered along axis 1 by indices `i` [2], a graph input.
Graph RuntimeGatherGraph(DType index_type) {
  ValueId x;
  Graph graph = GraphWithInput({4, 5}, x);
  const ValueId idx = *graph.AddInput("i", TensorType{index_type, {2}});
  Attrs axis;
  axis.Set("axis", int64_t{1});
  graph.AddOutput(AddNode(graph, "relu", {AddNode(graph, "gather", {x, idx}, axis)}));
  EXPECT_TRUE(InferShapes(graph).ok());
  return graph;
}

TEST(LowerTest, IndicesKnownAtRunTimeAreCheckedOnceEach) {
  for (DType index_type : {DType::kI64, DType::kI32}) {
    absl::StatusOr<LoopProgram> program = LowerGraph(RuntimeGatherGraph(index_type));
    ASSERT_TRUE(program.ok()) << program.status();
    ASSERT_TRUE(VerifyLoopProgram(*program).ok()) << VerifyLoopProgram(*program);
    // The checker over the indices, then the gather inlined into relu,
    // loading the checked index.
    ASSERT_EQ(program->nodes.size(), 2);
    const ComputeNode& checker = program->nodes[0];
    EXPECT_EQ(checker.name, "gather0.indices");
    EXPECT_EQ(checker.ranges, (std::vector<int64_t>{2}));
    EXPECT_EQ(program->buffers[checker.output].dtype, DType::kI64);
    const ComputeNode& node = program->nodes[1];
    const ScalarOp& load = node.body[node.root - 1];
    ASSERT_EQ(load.args.size(), 1);
    EXPECT_EQ(load.stride, 1);
    EXPECT_EQ(node.body[load.args[0]].buffer, checker.output);
    const ScalarOp& check = checker.body[checker.root];
    EXPECT_EQ(check.kind, ScalarOp::Kind::kCheckIndex);
    EXPECT_EQ(check.dtype, DType::kI64);
    EXPECT_EQ(check.extent, 5);
    EXPECT_EQ(checker.body[check.args[0]].dtype, index_type);
    ASSERT_EQ(program->index_checks.size(), 1);
    const IndexCheck& site = program->index_checks[check.site];
    EXPECT_EQ(site.node, "gather0");
    EXPECT_EQ(site.op, "gather");
    EXPECT_EQ(site.axis, 1);
    EXPECT_EQ(site.extent, 5);
    ASSERT_GE(program->index_errors, 0);
    const Buffer& errors = program->buffers[program->index_errors];
    EXPECT_EQ(errors.kind, BufferKind::kIndexErrors);
    EXPECT_EQ(errors.sizes, Shape{2});
    EXPECT_THAT(PrintLoopProgram(*program),
                HasSubstr("index check 0: node gather0 (gather) axis 1 of size 5"));
  }
}

TEST(LowerTest, ProgramsWithoutRuntimeIndicesHaveNoErrorSlot) {
  ValueId out;
  const Graph graph = GatherGraph(Indices(DType::kI64, {2}, {0, 3}), 0, ValueKind::kWeight, out);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->index_errors, -1);
  EXPECT_TRUE(program->index_checks.empty());
}

TEST(LowerTest, GatherElementsIsAnIndirectLoadAlongTheAxis) {
  ValueId x;
  Graph graph = GraphWithInput({4, 5}, x);
  const ValueId idx = *graph.AddInput("i", TensorType{DType::kI64, {4, 2}});
  Attrs axis;
  axis.Set("axis", int64_t{1});
  graph.AddOutput(AddNode(graph, "gather_elements", {x, idx}, axis));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_TRUE(VerifyLoopProgram(*program).ok());
  ASSERT_EQ(program->nodes.size(), 2);
  EXPECT_THAT(PrintComputeNode(*program, program->nodes[0]), HasSubstr("check_index t0 in 5 at 0"));
  const ComputeNode& node = program->nodes[1];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{4, 2}));
  EXPECT_THAT(PrintComputeNode(*program, node),
              HasSubstr("t0: i64 = load gather_elements0.indices[2*x0 + x1]\n"
                        "  t1: f32 = load x[5*x0 + 1*t0]"));
}

// A scatter of `updates` [2] into x [6] at indices `i` [2], a graph input.
Graph ScatterGraph(const std::string& reduction) {
  ValueId x;
  Graph graph = GraphWithInput({6}, x);
  const ValueId idx = *graph.AddInput("i", TensorType{DType::kI64, {2}});
  const ValueId updates = *graph.AddInput("u", TensorType{DType::kF32, {2}});
  Attrs attrs;
  attrs.Set("reduction", reduction);
  graph.AddOutput(AddNode(graph, "scatter_elements", {x, idx, updates}, attrs));
  EXPECT_TRUE(InferShapes(graph).ok());
  return graph;
}

TEST(LowerTest, ScatterPullsTheLastMatchingUpdate) {
  absl::StatusOr<LoopProgram> program = LowerGraph(ScatterGraph("none"));
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_TRUE(VerifyLoopProgram(*program).ok()) << VerifyLoopProgram(*program);
  ASSERT_EQ(program->nodes.size(), 3);  // checker, pull, take
  EXPECT_THAT(PrintComputeNode(*program, program->nodes[0]), HasSubstr("check_index t0 in 6 at 0"));
  const ComputeNode& pull = program->nodes[1];
  EXPECT_EQ(pull.reduce, ReduceKind::kMax);  // the last matching position
  EXPECT_EQ(pull.reduction_ranges, (std::vector<int64_t>{2}));
  EXPECT_EQ(program->buffers[pull.output].dtype, DType::kI64);
  EXPECT_THAT(PrintComputeNode(*program, pull), HasSubstr("load scatter_elements0.indices[x1]"));
  const ComputeNode& take = program->nodes[2];
  EXPECT_THAT(PrintComputeNode(*program, take), HasSubstr("load u[0 + 1*t"));
}

TEST(LowerTest, ScatterWithAReductionFoldsTheMatchingUpdates) {
  for (const auto& [reduction, kind] :
       {std::pair{"add", ReduceKind::kSum}, std::pair{"mul", ReduceKind::kProd},
        std::pair{"max", ReduceKind::kMax}, std::pair{"min", ReduceKind::kMin}}) {
    absl::StatusOr<LoopProgram> program = LowerGraph(ScatterGraph(reduction));
    ASSERT_TRUE(program.ok()) << program.status();
    ASSERT_TRUE(VerifyLoopProgram(*program).ok());
    ASSERT_EQ(program->nodes.size(), 3);
    EXPECT_EQ(program->nodes[1].reduce, kind) << reduction;
    EXPECT_EQ(program->buffers[program->nodes[1].output].dtype, DType::kF32);
  }
}

TEST(LowerTest, ScatterNdMatchesEveryComponentOfTheTuple) {
  ValueId x;
  Graph graph = GraphWithInput({3, 4, 2}, x);
  const ValueId idx = *graph.AddInput("i", TensorType{DType::kI32, {5, 2}});
  const ValueId updates = *graph.AddInput("u", TensorType{DType::kF32, {5, 2}});
  graph.AddOutput(AddNode(graph, "scatter_nd", {x, idx, updates}));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_TRUE(VerifyLoopProgram(*program).ok()) << VerifyLoopProgram(*program);
  ASSERT_EQ(program->index_checks.size(), 2);
  EXPECT_EQ(program->index_checks[0].extent, 3);
  EXPECT_EQ(program->index_checks[1].axis, 1);
  EXPECT_EQ(program->index_checks[1].extent, 4);
  ASSERT_EQ(program->nodes.size(), 4);  // a checker per component, pull, take
  EXPECT_EQ(program->nodes[1].ranges, (std::vector<int64_t>{5}));
  EXPECT_EQ(program->nodes[2].reduction_ranges, (std::vector<int64_t>{5}));
}

TEST(LowerTest, ScatterNdChecksKnownIndicesPerComponent) {
  ValueId x;
  Graph graph = GraphWithInput({3, 4}, x);
  const ValueId idx =
      *graph.AddInitializer("i", ValueKind::kConstant, Indices(DType::kI64, {1, 2}, {0, 3}));
  const ValueId updates = *graph.AddInput("u", TensorType{DType::kF32, {1}});
  graph.AddOutput(AddNode(graph, "scatter_nd", {x, idx, updates}));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();  // 3 is in range of dim 1, not of dim 0
  EXPECT_TRUE(program->index_checks.empty());
}

TEST(LowerTest, CumsumIsAReductionMaskedByLoopPositions) {
  struct Expected {
    int64_t exclusive, reverse;
    ScalarFn compare;
  };
  for (const Expected& e : {Expected{0, 0, ScalarFn::kLe}, Expected{1, 0, ScalarFn::kLt},
                            Expected{0, 1, ScalarFn::kGe}, Expected{1, 1, ScalarFn::kGt}}) {
    ValueId x;
    Graph graph = GraphWithInput({3, 5}, x);
    Attrs attrs;
    attrs.Set("axis", int64_t{-1});
    attrs.Set("exclusive", e.exclusive);
    attrs.Set("reverse", e.reverse);
    graph.AddOutput(AddNode(graph, "cumsum", {x}, attrs));
    ASSERT_TRUE(InferShapes(graph).ok());

    absl::StatusOr<LoopProgram> program = LowerGraph(graph);
    ASSERT_TRUE(program.ok()) << program.status();
    const ComputeNode& node = program->nodes[0];
    EXPECT_EQ(node.reduce, ReduceKind::kSum);
    EXPECT_EQ(node.reduction_ranges, (std::vector<int64_t>{5}));
    EXPECT_EQ(ToString(node.body[0].index), "5*x0 + x2");  // x[x0, j]
    EXPECT_EQ(node.body[1].kind, ScalarOp::Kind::kIndex);  // j
    EXPECT_EQ(ToString(node.body[1].index), "x2");
    EXPECT_EQ(ToString(node.body[2].index), "x1");  // i
    EXPECT_EQ(node.body[3].fn, e.compare);
    EXPECT_EQ(node.body[node.root].fn, ScalarFn::kSelect);
    EXPECT_TRUE(VerifyLoopProgram(*program).ok());
    EXPECT_THAT(PrintComputeNode(*program, node), HasSubstr("t1: i64 = index x2"));
  }
}

TEST(LowerTest, ArgmaxReducesOneAxisToPositions) {
  ValueId x;
  Graph graph = GraphWithInput({3, 4, 5}, x);
  Attrs attrs;
  attrs.Set("axis", int64_t{1});
  attrs.Set("select_last_index", int64_t{1});
  graph.AddOutput(AddNode(graph, "argmax", {x}, attrs));
  attrs.Set("keepdims", int64_t{0});
  graph.AddOutput(AddNode(graph, "argmin", {x}, attrs));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  const ComputeNode& max = program->nodes[0];
  EXPECT_EQ(max.reduce, ReduceKind::kArgMaxLast);
  EXPECT_EQ(max.ranges, (std::vector<int64_t>{3, 1, 5}));
  EXPECT_EQ(ToString(max.body[0].index), "20*x0 + x2 + 5*x3");
  const ComputeNode& min = program->nodes[1];
  EXPECT_EQ(min.reduce, ReduceKind::kArgMinLast);
  EXPECT_EQ(min.ranges, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(program->buffers[min.output].dtype, DType::kI64);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

TEST(LowerTest, SplitPartsAreViewsFromWhereTheLastEnds) {
  ValueId x;
  Graph graph = GraphWithInput({2, 7}, x);
  Attrs attrs;
  attrs.Set("axis", int64_t{-1});
  attrs.Set("split", std::vector<int64_t>{3, 0, 4});
  const NodeId split = *graph.AddNode("sp", "split", {x}, {"a", "empty", "c"}, attrs);
  const ValueId c = graph.node(split).outputs[2];
  graph.AddOutput(AddNode(graph, "neg", {c}));
  ASSERT_TRUE(InferShapes(graph).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 1);  // the neg; no copy for the parts
  EXPECT_EQ(ToString(program->nodes[0].body[0].index), "7*x0 + x1 + 3");
}

// The `lower` pass consumes the graph's nodes: the program is the one
// LowerGraph makes, the graph keeps its values and interface, and a second
// lowering (which would find no nodes) is refused.
TEST(LowerPassTest, ConsumesTheGraphsNodesAndLowersOnce) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  const ValueId e = AddNode(graph, "exp", {x});
  graph.AddOutput(AddNode(graph, "add", {e, e}));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> expected = LowerGraph(graph);
  ASSERT_TRUE(expected.ok()) << expected.status();

  Module module;
  module.graph = graph;
  PassSpec spec{"lower"};
  absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Global().Create(spec);
  ASSERT_TRUE(pass.ok()) << pass.status();
  ASSERT_TRUE((*pass)->Run(module).ok());
  ASSERT_TRUE(module.loops.has_value());
  EXPECT_EQ(PrintLoopProgram(*module.loops), PrintLoopProgram(*expected));
  EXPECT_TRUE(module.graph.nodes().empty());
  EXPECT_EQ(module.graph.values().size(), graph.values().size());
  EXPECT_EQ(module.graph.outputs(), graph.outputs());

  const absl::Status again = (*pass)->Run(module).status();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(again.message()), HasSubstr("already lowered"));
}

// Lowering more nodes than a block of the node list holds frees the blocks
// behind it as it goes, and still lowers them all.
TEST(LowerPassTest, ReleasingNodesBlockByBlockLowersTheSameProgram) {
  ValueId x;
  Graph graph = GraphWithInput({2, 3}, x);
  ValueId v = x;
  for (size_t i = 0; i < NodeList::kBlockNodes + 100; ++i) {
    v = AddNode(graph, i % 2 == 0 ? "exp" : "neg", {v});
    if (i % 50 == 0) graph.AddOutput(v);  // stored, so not one long chain
  }
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> expected = LowerGraph(graph);
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<LoopProgram> released = LowerGraphReleasingNodes(graph);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(PrintLoopProgram(*released), PrintLoopProgram(*expected));
  EXPECT_TRUE(graph.nodes().empty());
}

// x [rows, 8] times w^T, w [16, 8] (a linear layer), and x times v [8, 16].
// x [rows, k] times w [n, k] transposed (a weight, or an input where
// `w_is_input`), and times the input v [k, 16].
Graph Products(int64_t rows, int64_t n, int64_t k, bool w_is_input, ValueId& x) {
  Graph graph = GraphWithInput({rows, k}, x);
  const TensorType w_type{DType::kF32, {n, k}};
  const ValueId w = w_is_input ? *graph.AddInput("w", w_type)
                               : *graph.AddInitializer("w", ValueKind::kWeight, Tensor(w_type));
  const ValueId v = *graph.AddInput("v", TensorType{DType::kF32, {k, 16}});
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  graph.AddOutput(AddNode(graph, "matmul", {x, AddNode(graph, "transpose", {w}, perm)}));
  graph.AddOutput(AddNode(graph, "matmul", {x, v}));
  return graph;
}

TEST(LowerTest, MatrixProductsBecomeGemmCallsExceptFewRowsOfDotProducts) {
  // Rows times a transposed operand stay loops below kDefaultGemmMinRows
  // rows, or below kSmallOperandGemmMinRows rows of a weight of fewer than
  // kSmallOperandElements elements; the other products are calls.
  struct Case {
    int64_t rows, n, k;
    bool w_is_input, loops;
  };
  for (const Case& c :
       {Case{2, 16, 8, true, true}, Case{8, 16, 8, true, false}, Case{8, 16, 8, false, true},
        Case{31, 16, 8, false, true}, Case{32, 16, 8, false, false}, Case{2, 256, 256, false, true},
        Case{8, 256, 256, false, false}}) {
    SCOPED_TRACE(absl::StrCat(c.rows, " rows times ", c.w_is_input ? "an input" : "a weight", " [",
                              c.n, ", ", c.k, "]"));
    ValueId x;
    Graph graph = Products(c.rows, c.n, c.k, c.w_is_input, x);
    ASSERT_TRUE(InferShapes(graph).ok());
    absl::StatusOr<LoopProgram> program = LowerGraph(graph);
    ASSERT_TRUE(program.ok()) << program.status();
    ASSERT_EQ(program->nodes.size(), 2);
    EXPECT_EQ(program->nodes[0].extern_op, c.loops ? ExternOp::kNone : ExternOp::kGemm);
    EXPECT_EQ(program->nodes[1].extern_op, ExternOp::kGemm);
    EXPECT_TRUE(VerifyLoopProgram(*program).ok());

    LowerOptions never;
    never.gemm_min_rows = -1;
    program = LowerGraph(graph, never);
    ASSERT_TRUE(program.ok()) << program.status();
    for (const ComputeNode& node : program->nodes) EXPECT_EQ(node.extern_op, ExternOp::kNone);
  }
}

TEST(LowerTest, AGemmOperandThatIsNoStridedMatrixIsCopiedFirst) {
  // exp(x) would be inlined into a reader; a reshape of a transpose reads
  // with divisions. Both are copied into buffers the call reads.
  ValueId x;
  Graph graph = GraphWithInput({8, 8}, x);
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{8, 8});
  const ValueId wide = *graph.AddInput("y", TensorType{DType::kF32, {4, 16}});
  const ValueId folded =
      AddNode(graph, "reshape", {AddNode(graph, "transpose", {wide}, perm)}, shape);
  graph.AddOutput(AddNode(graph, "matmul", {AddNode(graph, "exp", {x}), folded}));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_EQ(program->nodes.size(), 3);  // two copies, then the call
  EXPECT_EQ(program->nodes[2].extern_op, ExternOp::kGemm);
  EXPECT_TRUE(VerifyLoopProgram(*program).ok());
}

// Dumps, --explain_fusion and launch comments name buffers and compute
// nodes: each name is one thing's, even where lowering makes several of
// one graph node (a mean's sum and divide, a pad's fill and copy, a
// matmul's operand copies, one index check per component) or copies an
// output that already has a buffer.
TEST(LowerTest, BuffersAndComputeNodesHaveDistinctNames) {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {2, 4, 8}});
  const ValueId c = *graph.AddInput("c", TensorType{DType::kF32, {4}});
  const ValueId y = *graph.AddInput("y", TensorType{DType::kF32, {4, 16}});
  const ValueId ids = *graph.AddInput("ids", TensorType{DType::kI64, {3, 2}});
  Attrs mean;
  mean.Set("axes", std::vector<int64_t>{-1});
  graph.AddOutput(AddNode(graph, "reduce_mean", {x}, mean));
  Attrs groups;
  groups.Set("num_groups", int64_t{2});
  graph.AddOutput(AddNode(graph, "group_norm", {x, c, c}, groups));
  Attrs last;
  last.Set("axis", int64_t{-1});
  graph.AddOutput(AddNode(graph, "layer_norm", {x}, last));
  // A reshape of a transpose divides: copied for each operand it is.
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  Attrs square;
  square.Set("shape", std::vector<int64_t>{8, 8});
  const ValueId folded =
      AddNode(graph, "reshape", {AddNode(graph, "transpose", {y}, perm)}, square);
  graph.AddOutput(AddNode(graph, "matmul", {folded, folded}));
  Attrs pads;
  pads.Set("pads", std::vector<int64_t>{0, 1, 2, 0, 3, 4});
  graph.AddOutput(AddNode(graph, "pad", {x}, pads));
  pads.Set("mode", std::string("reflect"));
  graph.AddOutput(AddNode(graph, "pad", {x}, pads));
  Attrs first;
  first.Set("axis", int64_t{0});
  graph.AddOutput(AddNode(graph, "concat", {x, x}, first));
  graph.AddOutput(AddNode(graph, "gather_nd", {y, ids}));
  const ValueId twice = AddNode(graph, "neg", {x});
  graph.AddOutput(twice);
  graph.AddOutput(twice);
  graph.AddOutput(x);
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<std::unique_ptr<DecomposePass>> decompose =
      DecomposePass::Create(proto::DecomposeOptions());
  ASSERT_TRUE(decompose.ok()) << decompose.status();
  ASSERT_TRUE((*decompose)->Run(module).ok());

  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_TRUE(VerifyLoopProgram(*program).ok());
  const std::string dump = PrintLoopProgram(*program);
  absl::flat_hash_set<std::string> buffers, nodes;
  for (const Buffer& buffer : program->buffers) {
    EXPECT_TRUE(buffers.insert(buffer.name).second) << "buffer " << buffer.name << "\n" << dump;
  }
  for (const ComputeNode& node : program->nodes) {
    EXPECT_TRUE(nodes.insert(node.name).second) << "node " << node.name << "\n" << dump;
  }
  // The value's buffer and node keep the graph's names.
  EXPECT_THAT(nodes, IsSupersetOf({"reduce_mean0.sum",
                                   "reduce_mean0",
                                   "group_norm1/mean.sum",
                                   "group_norm1/mean",
                                   "layer_norm2/mean.sum",
                                   "layer_norm2/mean",
                                   "matmul5.a",
                                   "matmul5.b",
                                   "matmul5",
                                   "pad6.fill",
                                   "pad6.interior",
                                   "pad7.begin1.begin2",
                                   "pad7.end2",
                                   "pad7.interior",
                                   "concat8.input0",
                                   "concat8.input1",
                                   "gather_nd9.indices0",
                                   "gather_nd9.indices1",
                                   "copy_neg10.out.output9",
                                   "copy_x.output10"}))
      << dump;
  EXPECT_THAT(buffers, IsSupersetOf({"reduce_mean0.sum", "reduce_mean0.out", "matmul5.a",
                                     "matmul5.b", "neg10.out", "neg10.out.output9", "x.output10"}))
      << dump;
}

// A concat whose inputs begin another's is a view of the longer one's
// buffer: each input is copied into it once.
TEST(LowerTest, AConcatThatAnotherExtendsIsAViewOfItsBuffer) {
  ValueId x;
  Graph graph = GraphWithInput({1, 2, 3}, x);
  Attrs channels;
  channels.Set("axis", int64_t{1});
  const ValueId y1 = AddNode(graph, "neg", {x});                       // neg0
  const ValueId c1 = AddNode(graph, "concat", {x, y1}, channels);      // concat1
  const ValueId y2 = AddNode(graph, "exp", {x});                       // exp2
  const ValueId c2 = AddNode(graph, "concat", {x, y1, y2}, channels);  // concat3
  graph.AddOutput(AddNode(graph, "relu", {c1}));
  graph.AddOutput(AddNode(graph, "relu", {c2}));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_TRUE(VerifyLoopProgram(*program).ok());
  std::vector<std::string> copies;
  for (const ComputeNode& node : program->nodes) {
    if (absl::StrContains(node.name, ".input")) copies.push_back(node.name);
  }
  EXPECT_THAT(copies, ElementsAre("concat1.input0", "concat1.input1", "concat3.input2"))
      << PrintLoopProgram(*program);
  int concat_buffers = 0;
  for (const Buffer& buffer : program->buffers) {
    concat_buffers += absl::StartsWith(buffer.name, "concat");
  }
  EXPECT_EQ(concat_buffers, 1) << PrintLoopProgram(*program);
}

TEST(LowerTest, VerifierRefusesAGemmMarkOnANodeNoCallComputes) {
  ValueId x;
  Graph graph = GraphWithInput({4, 8}, x);
  graph.AddOutput(AddNode(graph, "relu", {x}));
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  program->nodes[0].extern_op = ExternOp::kGemm;
  EXPECT_THAT(VerifyLoopProgram(*program).message(), HasSubstr("marked as a gemm"));
}

// A scan: h' = h + x_t over the rows of h, 5 iterations (a running sum),
// with `end` nodes of scan_end (0: none, 2: two); with `transposed`, h'
// = h^T + x_t, whose rows read each other.
Graph RunningSum(int ends = 1, int64_t reverse = 0, bool transposed = false) {
  Graph graph;
  const int64_t columns = transposed ? 3 : 4;
  const ValueId h0 = *graph.AddInput("h0", TensorType{DType::kF32, {3, columns}});
  const ValueId xs = *graph.AddInput("xs", TensorType{DType::kF32, {5, 3, columns}});
  Attrs begin;
  begin.Set("states", int64_t{1});
  begin.Set("reverse", reverse);
  const NodeId scan = *graph.AddNode("begin", "scan_begin", {h0, xs}, {"h", "x"}, begin);
  ValueId h = graph.node(scan).outputs[0];
  if (transposed) {
    Attrs perm;
    perm.Set("perm", std::vector<int64_t>{1, 0});
    h = AddNode(graph, "transpose", {h}, perm);
  }
  const ValueId next = AddNode(graph, "add", {h, graph.node(scan).outputs[1]});
  Attrs end;
  end.Set("length", int64_t{5});
  end.Set("reverse", reverse);
  for (int e = 0; e < ends; ++e) {
    const NodeId done = *graph.AddNode(absl::StrCat("end", e), "scan_end", {next},
                                       {absl::StrCat("last", e), absl::StrCat("all", e)}, end);
    graph.AddOutput(graph.node(done).outputs[0]);
    graph.AddOutput(graph.node(done).outputs[1]);
  }
  if (ends == 0) graph.AddOutput(next);
  return graph;
}

// The nodes between scan_begin and scan_end get the iterations as their
// second loop, their state's slots and the sequence's elements moving by
// the iteration; they are one LoopRegion.
TEST(LowerTest, AScanIsALoopOverItsIterationsInsideItsRows) {
  for (int64_t reverse : {0, 1}) {
    Graph graph = RunningSum(1, reverse);
    ASSERT_TRUE(InferShapes(graph).ok());
    absl::StatusOr<LoopProgram> program = LowerGraph(graph);
    ASSERT_TRUE(program.ok()) << program.status();
    EXPECT_TRUE(VerifyLoopProgram(*program).ok()) << VerifyLoopProgram(*program);
    ASSERT_EQ(program->loop_regions.size(), 1);
    const LoopRegion& region = program->loop_regions[0];
    ASSERT_EQ(region.end - region.first, 1) << "the add, storing into the next slot";
    const ComputeNode& add = program->nodes[region.first];
    EXPECT_EQ(add.ranges, (std::vector<int64_t>{3, 5, 4}));
    EXPECT_EQ(ToString(add.store_index), "4*x0 + 12*x1 + x2 + 12");
    std::vector<std::string> loads;
    for (const ScalarOp& op : add.body) {
      if (op.kind == ScalarOp::Kind::kLoad) loads.push_back(ToString(op.index));
    }
    EXPECT_THAT(loads, ElementsAre("4*x0 + 12*x1 + x2",
                                   reverse ? "4*x0 - 12*x1 + x2 + 48" : "4*x0 + 12*x1 + x2"));
  }
}

// The kernel shares a loop's rows over the threads: rows that read each
// other would race.
TEST(LowerTest, AScanWhoseRowsReadEachOtherIsRefused) {
  Graph graph = RunningSum(1, 0, /*transposed=*/true);
  ASSERT_TRUE(InferShapes(graph).ok());
  EXPECT_THAT(std::string(LowerGraph(graph).status().message()),
              HasSubstr("compute node 'end0.state0' of the loop from 'begin' reaches another "
                        "row of 'h.steps' (at x0 + 9*x1 + 3*x2) than its own"));
}

TEST(LowerTest, AScanWithoutItsOtherEndNamesTheNode) {
  Graph open = RunningSum(0);
  ASSERT_TRUE(InferShapes(open).ok());
  EXPECT_THAT(std::string(LowerGraph(open).status().message()),
              HasSubstr("node 'begin' (scan_begin): no scan_end closes its loop"));
  Graph twice = RunningSum(2);
  ASSERT_TRUE(InferShapes(twice).ok());
  EXPECT_THAT(std::string(LowerGraph(twice).status().message()),
              HasSubstr("node 'end1' (scan_end): no scan_begin opens its loop before it"));
}

}  // namespace
}  // namespace loom
