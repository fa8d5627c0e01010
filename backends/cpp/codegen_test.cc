#include "backends/cpp/codegen.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "passes/lower.h"
#include "scheduler/schedule_pass.h"

namespace loom::cpp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// x -> relu -> relu -> ... (`depth` times), one output.
Graph ReluChain(int depth, const std::string& name_prefix = "relu") {
  Graph graph;
  ValueId value = *graph.AddInput("x", TensorType{DType::kF32, {4, 8}});
  for (int i = 0; i < depth; ++i) {
    const std::string name = absl::StrCat(name_prefix, i);
    const NodeId node = *graph.AddNode(name, "relu", {value}, {name + ".y"});
    value = graph.node(node).outputs[0];
  }
  graph.AddOutput(value);
  EXPECT_TRUE(InferShapes(graph).ok());
  return graph;
}

GeneratedSource Emit(const Graph& graph) {
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_TRUE(program.ok()) << program.status();
  absl::StatusOr<Schedule> schedule = ScheduleProgram(*program);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return EmitCpp(*program, *schedule, proto::CppOptions());
}

TEST(CodegenTest, IdenticalKernelsShareOneFunction) {
  const GeneratedSource source = Emit(ReluChain(5));
  EXPECT_EQ(source.kernel_functions, 1);
  EXPECT_THAT(source.text, HasSubstr("static void f0("));
  EXPECT_THAT(source.text, Not(HasSubstr("static void f1(")));
  EXPECT_EQ(source.entry, kEntryName);
  EXPECT_THAT(source.text,
              HasSubstr("extern \"C\" void loom_run(void* const* b)"));
}

TEST(CodegenTest, OutputIsDeterministic) {
  EXPECT_EQ(Emit(ReluChain(3)).text, Emit(ReluChain(3)).text);
}

TEST(CodegenTest, ModelNamesCannotEscapeComments) {
  const GeneratedSource source =
      Emit(ReluChain(1, "evil\n#include </etc/passwd> */"));
  EXPECT_THAT(source.text, Not(HasSubstr("#include </etc")));
  EXPECT_THAT(source.text, HasSubstr("evil__include"));
}

TEST(CodegenTest, SimdAndOpenMpOptionsChooseNativeFlags) {
  Graph graph = ReluChain(1);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  absl::StatusOr<Schedule> schedule = ScheduleProgram(*program);
  proto::CppOptions scalar;
  scalar.set_simd(proto::CppOptions::SCALAR);
  scalar.set_openmp(true);
  scalar.set_opt_level(3);
  const GeneratedSource source = EmitCpp(*program, *schedule, scalar);
  EXPECT_THAT(source.native_flags, testing::Contains("-O3"));
  EXPECT_THAT(source.native_flags, testing::Contains("-fopenmp"));
  EXPECT_THAT(source.native_flags, testing::Contains("-fno-tree-vectorize"));
  EXPECT_THAT(source.native_flags, Not(testing::Contains("-march=native")));
}

// One node `op` over inputs of `types`, one output.
Graph OneOp(const std::string& op, const std::vector<TensorType>& types,
            Attrs attrs = {}) {
  Graph graph;
  std::vector<ValueId> inputs;
  for (size_t i = 0; i < types.size(); ++i) {
    inputs.push_back(*graph.AddInput(absl::StrCat("in", i), types[i]));
  }
  const NodeId node =
      *graph.AddNode("node", op, std::move(inputs), {"y"}, std::move(attrs));
  graph.AddOutput(graph.node(node).outputs[0]);
  EXPECT_TRUE(InferShapes(graph).ok()) << InferShapes(graph);
  return graph;
}

TEST(CodegenTest, HelpersAreEmittedOnlyWhenAKernelCallsThem) {
  EXPECT_THAT(Emit(ReluChain(1)).text, Not(HasSubstr("loom_imod")));
  const TensorType ints{DType::kI32, {4}};
  const std::string mod = Emit(OneOp("mod", {ints, ints})).text;
  EXPECT_THAT(mod, HasSubstr("static inline int64_t loom_imod("));
  EXPECT_THAT(mod, HasSubstr("= (int32_t)loom_imod(t0, t1);"));
  EXPECT_THAT(mod, Not(HasSubstr("loom_ifmod")));
  Attrs fmod;
  fmod.Set("fmod", int64_t{1});
  const TensorType floats{DType::kF32, {4}};
  EXPECT_THAT(Emit(OneOp("mod", {floats, floats}, fmod)).text,
              HasSubstr("= fmodf(t0, t1);"));
}

TEST(CodegenTest, RoundIsHalfToEvenAndReluKeepsNan) {
  const TensorType floats{DType::kF32, {4}};
  EXPECT_THAT(Emit(OneOp("round", {floats})).text, HasSubstr("= rintf(t0);"));
  EXPECT_THAT(Emit(ReluChain(1)).text,
              HasSubstr("= (t0 < 0 ? (float)0 : t0);"));
}

TEST(CodegenTest, IntegerConstantsSaturateLikeACast) {
  Attrs pad;
  pad.Set("pads", std::vector<int64_t>{1, 0});
  pad.Set("value", 1e10);
  const std::string text = Emit(OneOp("pad", {{DType::kI32, {3}}}, pad)).text;
  EXPECT_THAT(text, HasSubstr("const int32_t t0 = INT32_MAX;"));
}

TEST(CodegenTest, ArgReductionsTrackThePosition) {
  Attrs attrs;
  attrs.Set("axis", int64_t{-1});
  attrs.Set("select_last_index", int64_t{1});
  const std::string text =
      Emit(OneOp("argmax", {{DType::kF32, {3, 5}}}, attrs)).text;
  EXPECT_THAT(text, HasSubstr("float acc = (float)(-INFINITY);"));
  EXPECT_THAT(text, HasSubstr("int64_t arg = 0;"));
  EXPECT_THAT(text,
              HasSubstr("if (t0 >= acc || t0 != t0) { acc = t0; arg = x2; }"));
  EXPECT_THAT(text, HasSubstr("] = arg;"));
}

TEST(CodegenTest, GatherIsAnIndirectLoadAndCumsumReadsLoopPositions) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4, 5}});
  Tensor indices(DType::kI64, {2});
  indices.SetInt(0, 3);
  indices.SetInt(1, 1);
  const ValueId idx =
      *graph.AddInitializer("idx", ValueKind::kWeight, std::move(indices));
  graph.AddNode("g", "gather", {x, idx}, {"y"}).value();
  Attrs axis;
  axis.Set("axis", int64_t{1});
  graph.AddNode("c", "cumsum", {x}, {"z"}, axis).value();
  graph.AddOutput(graph.FindValue("y"));
  graph.AddOutput(graph.FindValue("z"));
  ASSERT_TRUE(InferShapes(graph).ok());
  const std::string text = Emit(graph).text;
  EXPECT_THAT(text, HasSubstr("const float t1 = p2[x1 + 5 * (int64_t)t0];"));
  EXPECT_THAT(text, HasSubstr("const int64_t t1 = x2;"));
  EXPECT_THAT(text, HasSubstr("const int64_t t2 = x1;"));
}

}  // namespace
}  // namespace loom::cpp
