#include "backends/common/kernel_plan.h"

#include "gtest/gtest.h"

namespace loom::kplan {
namespace {

TEST(ParamTableTest, OneParameterPerBufferAndOffset) {
  ExprContext ctx;
  ParamTable params;
  const Expr x = ctx.Var(0);
  const ParamTable::Use a = params.Add(3, ctx.Add(x, ctx.Const(16)), /*written=*/false);
  const ParamTable::Use b = params.Add(3, ctx.Add(ctx.Mul(ctx.Const(2), x), ctx.Const(16)), true);
  const ParamTable::Use c = params.Add(3, x, true);
  EXPECT_EQ(a.id, 0);
  EXPECT_TRUE(a.added);
  EXPECT_EQ(b.id, 0);  // the same offset: the same parameter
  EXPECT_FALSE(b.added);
  EXPECT_EQ(c.id, 1);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params.args()[0].offset, 16);
  EXPECT_TRUE(params.written(0));  // read first, then written
  EXPECT_TRUE(params.written(1));
  params.Add(4, x, /*written=*/false);
  EXPECT_FALSE(params.written(2));
  EXPECT_EQ(params.Rest(ctx, 0, ctx.Add(x, ctx.Const(16))), x);
}

ComputeNode TwoStepNode() {
  ComputeNode node;
  node.ranges = {4, 1};
  node.reduction_ranges = {1};
  ScalarOp step;
  step.kind = ScalarOp::Kind::kConst;
  step.dtype = DType::kF32;
  node.body = {step, step};  // the first is dead
  node.root = 1;
  return node;
}

TEST(LiveStepsTest, MarksWhatTheRootDependsOn) {
  EXPECT_EQ(LiveSteps(TwoStepNode()), (std::vector<bool>{false, true}));
}

TEST(DropExtentOneLoopsTest, ReplacesTheirVariablesWithZero) {
  ExprContext ctx;
  const std::vector<Expr> replace = DropExtentOneLoops(ctx, TwoStepNode());
  ASSERT_EQ(replace.size(), 3u);
  EXPECT_EQ(replace[0], ctx.Var(0));
  EXPECT_TRUE(replace[1]->is_const(0));
  EXPECT_TRUE(replace[2]->is_const(0));
}

TEST(PlanKernelTest, CountsEachMembersInnerAndReductionIterations) {
  LoopProgram program;
  ComputeNode node = TwoStepNode();
  node.output = 0;
  program.nodes.push_back(node);
  Kernel kernel;
  kernel.nodes = {0};
  kernel.internal = {0};
  const KernelPlan plan = PlanKernel(program, kernel, 1, /*drop_dead_code=*/true);
  EXPECT_EQ(plan.outer, (std::vector<int64_t>{4}));
  EXPECT_EQ(plan.outer_total, 4);
  ASSERT_EQ(plan.members.size(), 1u);
  EXPECT_EQ(plan.members[0].inner_count, 1);
  EXPECT_TRUE(plan.members[0].scalar());
  EXPECT_TRUE(plan.members[0].internal);
  EXPECT_FALSE(plan.members[0].live_step(0));
  EXPECT_TRUE(PlanKernel(program, kernel, 1, false).members[0].live_step(0));
}

TEST(ForwardedStoresTest, AStoreToTheBufferForgetsItsValues) {
  ExprContext ctx;
  ForwardedStores<std::string> stores;
  stores.Record(1, ctx.Var(0), "t3");
  stores.Record(2, ctx.Var(0), "t4");
  ASSERT_NE(stores.Find(1, ctx.Var(0)), nullptr);
  EXPECT_EQ(*stores.Find(1, ctx.Var(0)), "t3");
  EXPECT_EQ(stores.Find(1, ctx.Var(1)), nullptr);
  stores.Forget(1);
  EXPECT_EQ(stores.Find(1, ctx.Var(0)), nullptr);
  EXPECT_NE(stores.Find(2, ctx.Var(0)), nullptr);
}

TEST(KernelKeyTest, HoldsTheAppendedBytes) {
  KernelKey key;
  key.Append(int32_t{7});
  key.AppendBytes("ab");
  EXPECT_EQ(key.bytes(), absl::string_view("\x07\0\0\0ab", 6));
  key.Clear();
  EXPECT_TRUE(key.bytes().empty());
}

TEST(FunctionTableTest, EqualKeysShareAFunctionAndEqualBodiesMayToo) {
  FunctionTable shared(/*share_equal_bodies=*/true);
  EXPECT_EQ(shared.Find("a"), -1);
  EXPECT_EQ(shared.Add("a", "body"), 0);
  EXPECT_EQ(shared.Find("a"), 0);
  EXPECT_EQ(shared.Add("b", "body"), 0);
  EXPECT_EQ(shared.AddBody("other"), 1);
  EXPECT_EQ(shared.bodies().size(), 2u);
  FunctionTable separate(/*share_equal_bodies=*/false);
  EXPECT_EQ(separate.Add("a", "body"), 0);
  EXPECT_EQ(separate.Add("b", "body"), 1);
}

TEST(AppendLaunchTest, AppendsTheFunctionAndItsArguments) {
  LaunchTable launches;
  AppendLaunch(launches, 2, {BufferRef{1, 0}, BufferRef{4, 8}});
  EXPECT_EQ(launches.function, (std::vector<int32_t>{2}));
  EXPECT_EQ(launches.arg_offsets, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(launches.args[1].offset, 8);
  AppendLaunch(launches, 0, {}, /*kernels=*/2);
  EXPECT_EQ(launches.arg_offsets, (std::vector<int32_t>{0, 2, 2}));
  EXPECT_EQ(launches.kernel_offsets, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(launches.LaunchOfKernel(0), 0);
  EXPECT_EQ(launches.LaunchOfKernel(2), 1);
  EXPECT_EQ(launches.LaunchOfKernel(3), -1);
}

}  // namespace
}  // namespace loom::kplan
