#include "scheduler/fuse.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "passes/lower.h"
#include "scheduler/schedule_pass.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

class FuseTest : public testing::Test {
 protected:
  FuseTest() { x_ = *graph_.AddInput("x", TensorType{DType::kF32, {4, 8}}); }

  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    const std::string name = absl::StrCat(op, graph_.nodes().size());
    const NodeId node =
        *graph_.AddNode(name, op, std::move(inputs), {name + ".y"}, std::move(attrs));
    return graph_.node(node).outputs[0];
  }
  ValueId Reduce(const std::string& op, ValueId input, int64_t axis = 1) {
    Attrs attrs;
    attrs.Set("axes", std::vector<int64_t>{axis});
    attrs.Set("keepdims", int64_t{1});
    return Op(op, {input}, attrs);
  }

  // Lowers, schedules and fuses the graph built so far (outer-loop and
  // reshape-aware fusion on, as in the built-in pipelines).
  Schedule Fuse(int max_nodes = 0, bool outer_loop = true) {
    EXPECT_TRUE(InferShapes(graph_).ok());
    absl::StatusOr<LoopProgram> program = LowerGraph(graph_);
    EXPECT_TRUE(program.ok()) << program.status();
    program_ = *std::move(program);
    absl::StatusOr<Schedule> schedule = ScheduleProgram(program_);
    EXPECT_TRUE(schedule.ok());
    proto::FuseOptions options;
    options.set_max_nodes_per_kernel(max_nodes);
    options.set_outer_loop(outer_loop);
    options.set_reshape_aware(outer_loop);
    absl::StatusOr<Schedule> fused = FuseSchedule(program_, *schedule, options);
    EXPECT_TRUE(fused.ok()) << fused.status();
    return *std::move(fused);
  }

  // "reduce_sum1+exp2 | ..." : each kernel's member names.
  std::string Kernels(const Schedule& schedule) {
    std::string text;
    for (const Kernel& kernel : schedule.kernels) {
      if (!text.empty()) absl::StrAppend(&text, " | ");
      for (size_t i = 0; i < kernel.nodes.size(); ++i) {
        absl::StrAppend(&text, i ? "+" : "", program_.nodes[kernel.nodes[i]].name);
      }
    }
    return text;
  }

  // The reasons of refused decisions, joined.
  std::string Refusals(const Schedule& schedule) {
    std::string text;
    for (const FusionDecision& d : schedule.decisions) {
      if (!d.fused()) absl::StrAppend(&text, FusionReasonText(d.reason), "; ");
    }
    return text;
  }

  Graph graph_;
  ValueId x_;
  LoopProgram program_;
};

TEST_F(FuseTest, ReductionAndItsEpilogueShareOneLoopAndTheSumStaysInRegisters) {
  graph_.AddOutput(Op("exp", {Reduce("reduce_sum", x_)}));
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_sum0+exp1");
  ASSERT_EQ(schedule.kernels[0].internal.size(), 1);
  EXPECT_EQ(program_.buffers[schedule.kernels[0].internal[0]].name, "reduce_sum0.y");
  EXPECT_TRUE(schedule.decisions[0].fused());
  EXPECT_EQ(schedule.decisions[0].reason, FusionReason::kVertical);
}

TEST_F(FuseTest, PointwiseProducerReadTwiceFusesVertically) {
  const ValueId e = Op("exp", {x_});
  graph_.AddOutput(Op("add", {e, e}));
  EXPECT_EQ(Kernels(Fuse()), "exp0+add1");
}

TEST_F(FuseTest, SiblingsOverOneSpaceFuseHorizontally) {
  graph_.AddOutput(Reduce("reduce_max", x_));
  graph_.AddOutput(Reduce("reduce_min", x_));
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_max0+reduce_min1");
  EXPECT_EQ(schedule.decisions.back().reason, FusionReason::kHorizontal);
  EXPECT_TRUE(schedule.kernels[0].internal.empty());  // both are outputs
}

// Outer-loop fusion: the row maxima [4,1] and their consumer [4,8] share
// the loop over rows; the maximum stays in a register.
TEST_F(FuseTest, AReductionAndItsConsumerShareTheOuterLoop) {
  const ValueId max = Reduce("reduce_max", x_);  // [4,1]
  graph_.AddOutput(Op("sub", {x_, max}));        // [4,8]
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_max0+sub1");
  ASSERT_EQ(schedule.kernels.size(), 1);
  EXPECT_EQ(schedule.kernels[0].outer_loops, 1);
  EXPECT_EQ(schedule.kernels[0].internal.size(), 1);
  for (int node : schedule.kernels[0].nodes) EXPECT_EQ(program_.nodes[node].ranges[0], 4);
}

// GroupNorm's shape: statistics per (n, g) and a consumer over (n, c, hw)
// whose channel loop splits into (g, c_in_group).
TEST_F(FuseTest, ChannelLoopsSplitIntoGroupsToShareTheOuterLoops) {
  graph_ = Graph();
  x_ = *graph_.AddInput("x", TensorType{DType::kF32, {2, 16, 64}});
  Attrs grouped;
  grouped.Set("shape", std::vector<int64_t>{2, 2, 512});
  const ValueId mean = Reduce("reduce_mean", Op("reshape", {x_}, grouped), 2);
  Attrs per_channel;
  per_channel.Set("shape", std::vector<int64_t>{2, 2, 1, 1});
  Attrs broadcast;
  broadcast.Set("shape", std::vector<int64_t>{2, 2, 8, 64});
  Attrs back;
  back.Set("shape", std::vector<int64_t>{2, 16, 64});
  const ValueId mean_per_channel =
      Op("reshape", {Op("expand", {Op("reshape", {mean}, per_channel)}, broadcast)}, back);
  graph_.AddOutput(Op("sub", {x_, mean_per_channel}));
  const Schedule schedule = Fuse();
  ASSERT_EQ(schedule.kernels.size(), 1) << Kernels(schedule);
  EXPECT_EQ(schedule.kernels[0].outer_loops, 2);
  EXPECT_EQ(program_.nodes[schedule.kernels[0].nodes.back()].ranges,
            (std::vector<int64_t>{2, 2, 8, 64}));
}

// A reduction to one row shares no loop with its consumer but has only
// one outer iteration: they fuse over no outer loops at all.
TEST_F(FuseTest, AGroupOfOneIterationFusesWithItsConsumerOverNoOuterLoops) {
  graph_ = Graph();
  x_ = *graph_.AddInput("x", TensorType{DType::kF32, {1, 64}});
  const ValueId max = Reduce("reduce_max", x_);  // [1,1]
  graph_.AddOutput(Op("sub", {x_, max}));        // [1,64]
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_max0+sub1");
  ASSERT_EQ(schedule.kernels.size(), 1);
  EXPECT_EQ(schedule.kernels[0].outer_loops, 0);
}

TEST_F(FuseTest, WithoutOuterLoopFusionOnlyEqualSpacesFuse) {
  const ValueId max = Reduce("reduce_max", x_);  // [4,1]
  graph_.AddOutput(Op("sub", {x_, max}));        // [4,8]
  const Schedule schedule = Fuse(/*max_nodes=*/0, /*outer_loop=*/false);
  EXPECT_EQ(Kernels(schedule), "reduce_max0 | sub1");
  EXPECT_THAT(Refusals(schedule), HasSubstr("iteration spaces differ"));
}

// Large enough for the outer loops to matter (Weigh's few iterations).
constexpr int64_t kManyRows = 1024;

TEST_F(FuseTest, IterationSpacesWithNoCommonOuterLoopAreRefused) {
  graph_ = Graph();
  x_ = *graph_.AddInput("x", TensorType{DType::kF32, {6, 8 * kManyRows}});
  const ValueId max = Reduce("reduce_max", x_, 0);  // [1,8192]
  graph_.AddOutput(Op("sub", {x_, max}));           // [6,8192]
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_max0 | sub1");
  EXPECT_THAT(Refusals(schedule), HasSubstr("iteration spaces differ"));
  EXPECT_EQ(DescribeFusion(schedule.decisions[0], schedule, program_), "[1,8192] vs [6,8192]");
}

// Column maxima cannot share the loop over rows with their consumer.
TEST_F(FuseTest, AConsumerReadingAcrossOuterIterationsIsRefused) {
  graph_ = Graph();
  x_ = *graph_.AddInput("x", TensorType{DType::kF32, {kManyRows, 8}});
  const ValueId max = Reduce("reduce_max", x_, 0);  // [1,8]
  graph_.AddOutput(Op("sub", {x_, max}));           // [1024,8]
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_max0 | sub1");
  EXPECT_THAT(Refusals(schedule), HasSubstr("data crosses loop iterations"));
}

// Small groups whose loops begin with a single iteration (a batch of one)
// share no loop instead: a recurrence's product on a batch of one and the
// gates that read it across the hidden units.
TEST_F(FuseTest, SmallGroupsOfABatchOfOneFuseSharingNoLoop) {
  const ValueId max = Reduce("reduce_max", x_, 0);  // [1,8]
  graph_.AddOutput(Op("sub", {x_, max}));           // [4,8]
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "reduce_max0+sub1");
  EXPECT_EQ(schedule.kernels[0].outer_loops, 0);
}

TEST_F(FuseTest, ReadingTheProducerAtAnotherIndexIsRefused) {
  graph_ = Graph();
  x_ = *graph_.AddInput("x", TensorType{DType::kF32, {4, 4}});
  const ValueId e = Op("exp", {x_});
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  graph_.AddOutput(Op("add", {e, Op("transpose", {e}, perm)}));
  const Schedule schedule = Fuse();
  EXPECT_EQ(schedule.kernels.size(), 2);
  EXPECT_THAT(Refusals(schedule), HasSubstr("data crosses loop iterations"));
}

TEST_F(FuseTest, AConsumerBetweenSiblingsBlocksTheirFusion) {
  // a and b both read x over [1024,8], but b needs s, which needs a: fusing
  // a with b would make s run before the kernel that feeds it.
  graph_ = Graph();
  x_ = *graph_.AddInput("x", TensorType{DType::kF32, {kManyRows, 8}});
  const ValueId a = Op("exp", {x_});
  const ValueId s = Reduce("reduce_sum", a, 0);
  const ValueId b = Op("sub", {x_, s});
  graph_.AddOutput(a);
  graph_.AddOutput(b);
  const Schedule schedule = Fuse();
  EXPECT_EQ(schedule.kernels.size(), 3);
  EXPECT_THAT(Refusals(schedule), HasSubstr("a consumer runs between them"));
}

TEST_F(FuseTest, KernelsStopGrowingAtTheLimit) {
  ValueId v = x_;
  for (int i = 0; i < 4; ++i) {
    v = Op("exp", {v});
    v = Op("add", {v, v});  // read twice: every add is stored
  }
  graph_.AddOutput(v);
  const Schedule schedule = Fuse(/*max_nodes=*/2);
  for (const Kernel& kernel : schedule.kernels) EXPECT_LE(kernel.nodes.size(), 2);
  EXPECT_THAT(Refusals(schedule), HasSubstr("kernel too large"));
}

TEST_F(FuseTest, EveryNodeIsScheduledOnceInDependencyOrder) {
  const ValueId e = Op("exp", {x_});
  const ValueId m = Reduce("reduce_max", e);
  const ValueId n = Reduce("reduce_min", e);
  graph_.AddOutput(Op("add", {Op("add", {e, m}), n}));
  graph_.AddOutput(Op("mul", {m, n}));
  const Schedule schedule = Fuse();
  std::vector<int> seen(program_.nodes.size(), 0);
  std::vector<int> place(program_.nodes.size(), -1);
  int next = 0;
  for (const Kernel& kernel : schedule.kernels) {
    for (int node : kernel.nodes) {
      ++seen[node];
      place[node] = next++;
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
  const IntLists dependents = Dependencies(program_, LoadedBuffers(program_));
  for (int from = 0; from < dependents.size(); ++from) {
    for (int to : dependents[from]) EXPECT_LT(place[from], place[to]);
  }
}

TEST_F(FuseTest, AGemmCallFusesWithNothing) {
  const ValueId w = *graph_.AddInput("w", TensorType{DType::kF32, {8, 8}});
  graph_.AddOutput(Op("relu", {Op("matmul", {Op("exp", {x_}), w})}));
  const Schedule schedule = Fuse();
  ASSERT_EQ(program_.nodes.size(), 3);
  EXPECT_EQ(program_.nodes[1].extern_op, ExternOp::kGemm);
  EXPECT_EQ(Kernels(schedule), "exp0 | matmul1 | relu2");
  EXPECT_EQ(Refusals(schedule), "library call; library call; ");
  for (const FusionDecision& d : schedule.decisions) {
    EXPECT_EQ(DescribeFusion(d, schedule, program_), "'matmul1' is a gemm call, which runs alone");
  }
}

// A pad's fill reads nothing: it runs before the product whose consumer
// writes the pad's interior, so that the consumer follows the product (a
// backend runs it as the product's epilogue), and not before a product
// that reads the padded buffer.
TEST_F(FuseTest, FillsRunBeforeTheProductBeforeThem) {
  const ValueId w = *graph_.AddInput("w", TensorType{DType::kF32, {8, 8}});
  Attrs pads;
  pads.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const ValueId padded = Op("pad", {Op("relu", {Op("matmul", {x_, w})})}, pads);  // [6, 10]
  const ValueId v = *graph_.AddInput("v", TensorType{DType::kF32, {10, 8}});
  graph_.AddOutput(Op("matmul", {padded, v}));
  const Schedule schedule = Fuse();
  EXPECT_EQ(Kernels(schedule), "pad2.fill | matmul0 | relu1+pad2.interior | matmul3");
}

}  // namespace
}  // namespace loom
