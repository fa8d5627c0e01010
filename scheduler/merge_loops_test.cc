#include "scheduler/merge_loops.h"

#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "scheduler/loop_test_util.h"

namespace loom {
namespace {

struct Program {
  LoopProgram program;
  Schedule schedule;
};

// 8*x0 + x1 style indexes: sum of coefficients[i] * x_i.
Expr Affine(ExprContext& ctx, std::vector<int64_t> coefficients) {
  Expr e = ctx.Const(0);
  for (size_t i = 0; i < coefficients.size(); ++i) {
    e = ctx.Add(e, ctx.Mul(ctx.Var(static_cast<int>(i)), coefficients[i]));
  }
  return e;
}

// One kernel, one node: b1[store] = b0[load] (+ b2[bias]) over `ranges`.
Program OneNode(std::vector<int64_t> ranges, std::vector<int64_t> store,
                std::vector<int64_t> load) {
  Program p;
  ExprContext& ctx = *p.program.exprs;
  for (const char* name : {"b0", "b1", "b2"}) {
    p.program.buffers.push_back(Buffer{name, DType::kF32, {4096}});
  }
  p.program.inputs = {0, 2};
  ComputeNode node;
  node.name = "node";
  node.output = 1;
  node.ranges = std::move(ranges);
  node.store_index = Affine(ctx, std::move(store));
  node.body = {Load(0, Affine(ctx, std::move(load)))};
  node.root = 0;
  p.program.nodes = {std::move(node)};
  p.schedule.kernels.push_back(Kernel{"kernel_0", {0}, /*outer_loops=*/1, {}});
  return p;
}

// [C, 7, 7] rows back to back in both buffers: one inner loop of 49.
TEST(MergeLoopsTest, MergesRowsThatLieBackToBack) {
  Program p = OneNode({16, 7, 7}, {49, 7, 1}, {49, 7, 1});
  ASSERT_TRUE(MergeLoops(p.program, p.schedule));
  ExprContext& ctx = *p.program.exprs;
  const ComputeNode& node = p.program.nodes[0];
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{16, 49}));
  EXPECT_EQ(node.store_index, Affine(ctx, {49, 1}));
  EXPECT_EQ(node.body[0].index, Affine(ctx, {49, 1}));
  EXPECT_EQ(p.schedule.kernels[0].outer_loops, 1);
  EXPECT_TRUE(VerifyLoopProgram(p.program).ok()) << VerifyLoopProgram(p.program);
  EXPECT_FALSE(MergeLoops(p.program, p.schedule));  // nothing left to merge
}

// A padded input (rows of 9 for 7 outputs) keeps its rows; a broadcast
// along the rows (coefficients 0, 0) does not stop a merge.
TEST(MergeLoopsTest, KeepsRowsThatDoNotLieBackToBack) {
  Program padded = OneNode({16, 7, 7}, {49, 7, 1}, {81, 9, 1});
  EXPECT_FALSE(MergeLoops(padded.program, padded.schedule));
  EXPECT_EQ(padded.program.nodes[0].ranges, (std::vector<int64_t>{16, 7, 7}));

  Program broadcast = OneNode({16, 7, 7}, {49, 7, 1}, {1, 0, 0});
  ASSERT_TRUE(MergeLoops(broadcast.program, broadcast.schedule));
  EXPECT_EQ(broadcast.program.nodes[0].ranges, (std::vector<int64_t>{16, 49}));
  EXPECT_EQ(broadcast.program.nodes[0].body[0].index, broadcast.program.exprs->Var(0));
}

// Outer loops merge only where every member allows it, and never with a
// member's inner loops; a member's inner loops merge on their own.
TEST(MergeLoopsTest, OuterLoopsMergeOnlyWhereEveryMemberAllows) {
  Program p = OneNode({4, 8, 3, 5}, {120, 15, 5, 1}, {120, 15, 5, 1});
  ExprContext& ctx = *p.program.exprs;
  ComputeNode second = p.program.nodes[0];
  second.name = "second";
  second.output = 2;
  second.ranges = {4, 8, 15};
  second.store_index = Affine(ctx, {120, 15, 1});
  second.body = {Load(1, Affine(ctx, {120, 15, 1}))};
  p.program.nodes.push_back(second);
  p.schedule.kernels[0] = Kernel{"kernel_0", {0, 1}, /*outer_loops=*/2, {}};
  ASSERT_TRUE(MergeLoops(p.program, p.schedule));
  EXPECT_EQ(p.schedule.kernels[0].outer_loops, 1);
  EXPECT_EQ(p.program.nodes[0].ranges, (std::vector<int64_t>{32, 15}));
  EXPECT_EQ(p.program.nodes[1].ranges, (std::vector<int64_t>{32, 15}));

  // A member that reads its outer loops apart keeps them for all.
  Program apart = OneNode({4, 8, 3, 5}, {120, 15, 5, 1}, {120, 15, 5, 1});
  second.body = {Load(1, Affine(*apart.program.exprs, {256, 15, 1}))};
  second.store_index = Affine(*apart.program.exprs, {120, 15, 1});
  apart.program.nodes.push_back(second);
  apart.schedule.kernels[0] = Kernel{"kernel_0", {0, 1}, /*outer_loops=*/2, {}};
  ASSERT_TRUE(MergeLoops(apart.program, apart.schedule));
  EXPECT_EQ(apart.schedule.kernels[0].outer_loops, 2);
  EXPECT_EQ(apart.program.nodes[0].ranges, (std::vector<int64_t>{4, 8, 15}));
  EXPECT_EQ(apart.program.nodes[1].ranges, (std::vector<int64_t>{4, 8, 15}));
}

// A reduction over [7, 7] back to back sums over one loop of 49; its
// pointwise loop and its reduction loops stay apart.
TEST(MergeLoopsTest, MergesReductionLoopsApartFromPointwiseOnes) {
  Program p = OneNode({16}, {1}, {49, 7, 1});
  ComputeNode& node = p.program.nodes[0];
  node.reduction_ranges = {7, 7};
  node.reduce = ReduceKind::kSum;
  ASSERT_TRUE(MergeLoops(p.program, p.schedule));
  EXPECT_EQ(node.ranges, (std::vector<int64_t>{16}));
  EXPECT_EQ(node.reduction_ranges, (std::vector<int64_t>{49}));
  EXPECT_EQ(node.body[0].index, Affine(*p.program.exprs, {49, 1}));
  EXPECT_TRUE(VerifyLoopProgram(p.program).ok()) << VerifyLoopProgram(p.program);
}

// An index that is not affine (x1 // 2) stops every merge of its node; a
// library call's loops describe the call and stay.
TEST(MergeLoopsTest, LeavesNonAffineIndexesAndLibraryCalls) {
  Program divided = OneNode({16, 7, 7}, {49, 7, 1}, {49, 7, 1});
  ExprContext& ctx = *divided.program.exprs;
  divided.program.nodes[0].body[0].index = ctx.FloorDiv(ctx.Var(2), 2);
  EXPECT_FALSE(MergeLoops(divided.program, divided.schedule));

  Program call = OneNode({16, 7, 7}, {49, 7, 1}, {49, 7, 1});
  call.program.nodes[0].extern_op = ExternOp::kGemm;
  EXPECT_FALSE(MergeLoops(call.program, call.schedule));
  EXPECT_EQ(call.program.nodes[0].ranges, (std::vector<int64_t>{16, 7, 7}));
}

// The pass is a FusedLoopsPass (drop_unit_loops_test checks what they
// share: the stages, the stale source, a missing schedule).
TEST(MergeLoopsTest, ThePassIsRegistered) {
  absl::StatusOr<std::unique_ptr<Pass>> pass =
      PassRegistry::Global().Create(PassSpec{"merge-loops"});
  ASSERT_TRUE(pass.ok()) << pass.status();
  Program p = OneNode({16, 7, 7}, {49, 7, 1}, {49, 7, 1});
  Module module;
  module.loops = std::move(p.program);
  module.schedule = std::move(p.schedule);
  EXPECT_EQ((*pass)->Run(module).value(), true);
  EXPECT_EQ(module.loops->nodes[0].ranges, (std::vector<int64_t>{16, 49}));
}

}  // namespace
}  // namespace loom
