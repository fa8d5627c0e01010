#include "scheduler/refine.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::ElementsAre;

TEST(CommonLoopPrefixTest, SplitsTheLargerExtentAndSkipsOnes) {
  EXPECT_THAT(CommonLoopPrefix({2, 2, 1}, {2, 16, 32, 32}), ElementsAre(2, 2));
  EXPECT_THAT(CommonLoopPrefix({4, 8}, {4, 8}), ElementsAre(4, 8));
  EXPECT_THAT(CommonLoopPrefix({32}, {32, 256}), ElementsAre(32));
  EXPECT_THAT(CommonLoopPrefix({6, 4}, {4, 6}), ElementsAre());
  EXPECT_THAT(CommonLoopPrefix({2, 1024}, {2, 256}), ElementsAre(2, 256));
  EXPECT_THAT(CommonLoopPrefix({}, {3}), ElementsAre());
  EXPECT_THAT(CommonLoopPrefix({2, 0}, {2, 5}), ElementsAre(2));
  EXPECT_THAT(CommonLoopPrefix({0}, {4}), ElementsAre());
  EXPECT_THAT(CommonLoopPrefix({2, 2, 1}, {2, 16, 32}, /*split=*/false), ElementsAre(2));
}

// GroupNorm's normalisation over (n, c, h, w) = [2, 16, 32, 32] refined to
// the statistics' loops (n, g) = [2, 2]: c = 8*g + c_in_group.
TEST(RefineLeadingLoopsTest, SplitsChannelsIntoGroups) {
  ExprContext ctx;
  ComputeNode node;
  node.ranges = {2, 16, 32, 32};
  node.store_index = ctx.Add(ctx.Add(ctx.Mul(ctx.Var(0), 16384), ctx.Mul(ctx.Var(1), 1024)),
                             ctx.Add(ctx.Mul(ctx.Var(2), 32), ctx.Var(3)));
  ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
  load.buffer = 0;
  load.index = ctx.Add(ctx.Mul(ctx.Var(0), 2), ctx.FloorDiv(ctx.Var(1), 8));
  node.body = {load};
  node.root = 0;

  std::optional<LoopRefinement> refinement = RefineLeadingLoops(ctx, node, {2, 2});
  ASSERT_TRUE(refinement.has_value());
  EXPECT_FALSE(refinement->identity);
  EXPECT_THAT(refinement->ranges, ElementsAre(2, 2, 8, 32, 32));
  RefinementCache(ctx).Apply(*refinement, node);
  EXPECT_EQ(ToString(node.body[0].index), ToString(ctx.Add(ctx.Mul(ctx.Var(0), 2), ctx.Var(1))));
  EXPECT_EQ(node.store_index, ctx.Simplify(RowMajorOffset(ctx, node.ranges, 0), node.ranges));
}

TEST(RefineLeadingLoopsTest, DropsUnitLoopsAndKeepsReductions) {
  ExprContext ctx;
  ComputeNode node;
  node.ranges = {2, 1, 4};
  node.reduction_ranges = {8192};
  node.store_index = ctx.Add(ctx.Mul(ctx.Var(0), 4), ctx.Var(2));
  std::optional<LoopRefinement> refinement = RefineLeadingLoops(ctx, node, {2, 2});
  ASSERT_TRUE(refinement.has_value());
  EXPECT_THAT(refinement->ranges, ElementsAre(2, 2, 2));
  EXPECT_THAT(refinement->extents, ElementsAre(2, 2, 2, 8192));
  // x0 stays, x1 = 0, x2 = 2*x1 + x2 and the reduction variable follows.
  RefinementCache cache(ctx);
  EXPECT_EQ(cache.Refine(*refinement, node.store_index),
            ctx.Simplify(RowMajorOffset(ctx, {2, 2, 2}, 0), refinement->extents));
  EXPECT_EQ(cache.Refine(*refinement, ctx.Var(1)), ctx.Const(0));
  EXPECT_EQ(cache.Refine(*refinement, ctx.Var(3)), ctx.Var(3));
}

TEST(RefineLeadingLoopsTest, IdentityWhenTheLoopsAlreadyBeginWithThePrefix) {
  ExprContext ctx;
  ComputeNode node;
  node.ranges = {32, 256};
  std::optional<LoopRefinement> refinement = RefineLeadingLoops(ctx, node, {32});
  ASSERT_TRUE(refinement.has_value());
  EXPECT_TRUE(refinement->identity);
}

TEST(RefineLeadingLoopsTest, DropsTrailingUnitLoops) {
  ExprContext ctx;
  ComputeNode node;
  node.ranges = {2, 2, 1};
  std::optional<LoopRefinement> refinement = RefineLeadingLoops(ctx, node, {2, 2});
  ASSERT_TRUE(refinement.has_value());
  EXPECT_FALSE(refinement->identity);
  EXPECT_THAT(refinement->ranges, ElementsAre(2, 2));
}

TEST(RefineLeadingLoopsTest, RefusesAPrefixThatDoesNotDivide) {
  ExprContext ctx;
  ComputeNode node;
  node.ranges = {6, 4};
  EXPECT_FALSE(RefineLeadingLoops(ctx, node, {4}).has_value());
  EXPECT_FALSE(RefineLeadingLoops(ctx, node, {6, 4, 2}).has_value());
  node.ranges = {6, 0};
  EXPECT_FALSE(RefineLeadingLoops(ctx, node, {6}).has_value());
}

// A refinement remembered for one expression serves another node's same
// expression, and each node is rewritten as if refined afresh.
TEST(RefinementCacheTest, RemembersAndAppliesRefinements) {
  ExprContext ctx;
  ComputeNode node;
  node.ranges = {2, 1, 4};
  node.store_index = ctx.Add(ctx.Mul(ctx.Var(0), 4), ctx.Var(2));
  ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
  load.buffer = 0;
  load.index = node.store_index;
  node.body = {load};
  std::optional<LoopRefinement> refinement = RefineLeadingLoops(ctx, node, {2, 2});
  ASSERT_TRUE(refinement.has_value());
  RefinementCache cache(ctx);
  const Expr refined = cache.Refine(*refinement, node.store_index);
  EXPECT_EQ(refined, ctx.Simplify(RowMajorOffset(ctx, {2, 2, 2}, 0), refinement->extents));
  EXPECT_EQ(cache.Refine(*refinement, node.store_index), refined);
  ComputeNode other = node;
  cache.Apply(*refinement, node);
  RefinementCache(ctx).Apply(*refinement, other);
  EXPECT_THAT(node.ranges, ElementsAre(2, 2, 2));
  EXPECT_EQ(node.store_index, refined);
  EXPECT_EQ(node.body[0].index, refined);
  EXPECT_EQ(other.store_index, refined);
}

}  // namespace
}  // namespace loom
