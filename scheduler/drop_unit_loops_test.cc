#include "scheduler/drop_unit_loops.h"

#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "scheduler/loop_test_util.h"

namespace loom {
namespace {

ScalarOp Index(Expr value) {
  ScalarOp index{ScalarOp::Kind::kIndex, DType::kI64};
  index.index = value;
  return index;
}

// b1[x0, x1, x2] = b0[8*x1 + x2] + x1 over [1, 2, 8] (x0 and x1 the
// kernel's outer loops), then b2[x0, x1] = sum over r of b1[...] over
// [1, 2] x [1, 8]: the second member's reduction of extent 8 after a unit
// one.
struct Program {
  LoopProgram program;
  Schedule schedule;
};

Program TwoMembers() {
  Program p;
  ExprContext& ctx = *p.program.exprs;
  for (const char* name : {"b0", "b1", "b2"}) {
    p.program.buffers.push_back(Buffer{name, DType::kF32, {16}});
  }
  p.program.inputs = {0};
  ComputeNode first;
  first.name = "first";
  first.output = 1;
  first.ranges = {1, 2, 8};
  first.store_index = ctx.Add(ctx.Mul(ctx.Var(0), 16), ctx.Add(ctx.Mul(ctx.Var(1), 8), ctx.Var(2)));
  first.body = {Load(0, ctx.Add(ctx.Mul(ctx.Var(1), 8), ctx.Var(2))), Index(ctx.Var(1))};
  first.root = 0;
  ComputeNode second;
  second.name = "second";
  second.output = 2;
  second.ranges = {1, 2};
  second.reduction_ranges = {1, 8};
  second.reduce = ReduceKind::kSum;
  second.store_index = ctx.Var(1);
  second.body = {Load(1, ctx.Add(ctx.Mul(ctx.Var(1), 8), ctx.Add(ctx.Var(2), ctx.Var(3))))};
  second.root = 0;
  p.program.nodes = {std::move(first), std::move(second)};
  p.schedule.kernels.push_back(Kernel{"kernel_0", {0, 1}, /*outer_loops=*/2, {}});
  return p;
}

TEST(DropUnitLoopsTest, DropsUnitLoopsAndRenumbersTheRest) {
  Program p = TwoMembers();
  ExprContext& ctx = *p.program.exprs;
  ASSERT_TRUE(DropUnitLoops(p.program, p.schedule));

  EXPECT_EQ(p.schedule.kernels[0].outer_loops, 1);
  const ComputeNode& first = p.program.nodes[0];
  EXPECT_EQ(first.ranges, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(first.store_index, ctx.Add(ctx.Mul(ctx.Var(0), 8), ctx.Var(1)));
  EXPECT_EQ(first.body[0].index, ctx.Add(ctx.Mul(ctx.Var(0), 8), ctx.Var(1)));
  EXPECT_EQ(first.body[1].index, ctx.Var(0));

  const ComputeNode& second = p.program.nodes[1];
  EXPECT_EQ(second.ranges, (std::vector<int64_t>{2}));
  EXPECT_EQ(second.reduction_ranges, (std::vector<int64_t>{8}));
  EXPECT_EQ(second.store_index, ctx.Var(0));
  EXPECT_EQ(second.body[0].index, ctx.Add(ctx.Mul(ctx.Var(0), 8), ctx.Var(1)));
  EXPECT_TRUE(VerifyLoopProgram(p.program).ok()) << VerifyLoopProgram(p.program);

  // Nothing left to drop.
  EXPECT_FALSE(DropUnitLoops(p.program, p.schedule));
}

// A reduction whose loops all have extent 1 keeps the last: the loop IR
// gives every reduction one.
TEST(DropUnitLoopsTest, AReductionKeepsOneLoop) {
  Program p = TwoMembers();
  ComputeNode& second = p.program.nodes[1];
  second.reduction_ranges = {1, 1};
  p.schedule.kernels = {Kernel{"kernel_0", {1}, /*outer_loops=*/0, {}}};
  ASSERT_TRUE(DropUnitLoops(p.program, p.schedule));
  EXPECT_EQ(second.ranges, (std::vector<int64_t>{2}));
  EXPECT_EQ(second.reduction_ranges, (std::vector<int64_t>{1}));
  ExprContext& ctx = *p.program.exprs;
  EXPECT_EQ(second.body[0].index, ctx.Add(ctx.Mul(ctx.Var(0), 8), ctx.Var(1)));
  EXPECT_TRUE(VerifyLoopProgram(p.program).ok()) << VerifyLoopProgram(p.program);
}

// A library call's loops describe the call (MatchGemm reads them).
TEST(DropUnitLoopsTest, LibraryCallsKeepTheirLoops) {
  Program p = TwoMembers();
  p.program.nodes[1].extern_op = ExternOp::kGemm;
  p.schedule.kernels = {Kernel{"kernel_0", {1}, /*outer_loops=*/1, {}}};
  EXPECT_FALSE(DropUnitLoops(p.program, p.schedule));
  EXPECT_EQ(p.program.nodes[1].ranges, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(p.schedule.kernels[0].outer_loops, 1);
}

TEST(DropUnitLoopsTest, ThePassRunsOnAFusedScheduleAndSaysWhetherItChanged) {
  absl::StatusOr<std::unique_ptr<Pass>> pass =
      PassRegistry::Global().Create(PassSpec{"drop-unit-loops"});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ((*pass)->stages().runs_on,
            StageRule::Bit(Stage::kFused) | StageRule::Bit(Stage::kPlanned));
  EXPECT_FALSE((*pass)->stages().leaves.has_value());

  Program p = TwoMembers();
  Module module;
  module.loops = std::move(p.program);
  module.schedule = std::move(p.schedule);
  module.source = GeneratedSource{};
  EXPECT_EQ((*pass)->Run(module).value(), true);
  EXPECT_FALSE(module.source.has_value());  // stale once the loops change
  EXPECT_EQ((*pass)->Run(module).value(), false);

  Module unscheduled;
  EXPECT_EQ((*pass)->Run(unscheduled).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace loom
