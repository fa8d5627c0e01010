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
  EXPECT_THAT(source.text, HasSubstr("extern \"C\" void loom_run(void* const* b)"));
}

TEST(CodegenTest, OutputIsDeterministic) {
  EXPECT_EQ(Emit(ReluChain(3)).text, Emit(ReluChain(3)).text);
}

TEST(CodegenTest, ModelNamesCannotEscapeComments) {
  const GeneratedSource source = Emit(ReluChain(1, "evil\n#include </etc/passwd> */"));
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

}  // namespace
}  // namespace loom::cpp
