#include "scheduler/schedule_pass.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

// A program of `n` buffers where node i writes buffer writes[i] and loads
// the buffers in reads[i].
LoopProgram MakeProgram(int n, const std::vector<int>& writes,
                        const std::vector<std::vector<int>>& reads) {
  LoopProgram program;
  for (int i = 0; i < n; ++i) {
    program.buffers.push_back(Buffer{absl::StrCat("b", i), DType::kF32, {1}});
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    ComputeNode node;
    node.name = absl::StrCat("n", i);
    node.output = writes[i];
    node.ranges = {1};
    node.store_index = program.exprs->Const(0);
    for (int buffer : reads[i]) {
      ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
      load.buffer = buffer;
      load.index = program.exprs->Const(0);
      node.body.push_back(load);
    }
    node.root = 0;
    program.nodes.push_back(std::move(node));
  }
  return program;
}

std::vector<int> Order(const Schedule& schedule) {
  std::vector<int> order;
  for (const Kernel& kernel : schedule.kernels) {
    EXPECT_EQ(kernel.nodes.size(), 1);
    order.push_back(kernel.nodes[0]);
  }
  return order;
}

TEST(ScheduleTest, OneKernelPerNodeInDependencyOrder) {
  // b0 is the input; n0: b1 = f(b0); n1: b2 = f(b1); n2: b3 = f(b0, b2).
  LoopProgram program = MakeProgram(4, {1, 2, 3}, {{0}, {1}, {0, 2}});
  absl::StatusOr<Schedule> schedule = ScheduleProgram(program);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(Order(*schedule), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(schedule->kernels[2].name, "kernel_2");
}

TEST(ScheduleTest, IndependentNodesKeepProgramOrder) {
  LoopProgram program = MakeProgram(4, {1, 2, 3}, {{0}, {0}, {0}});
  absl::StatusOr<Schedule> schedule = ScheduleProgram(program);
  ASSERT_TRUE(schedule.ok());
  EXPECT_EQ(Order(*schedule), (std::vector<int>{0, 1, 2}));
}

TEST(ScheduleTest, CopiesIntoPartsOfASharedBufferRunRightAfterWhatTheyCopy) {
  // concat-like: n0 writes b1, n1 reads it into b2, then n2 and n3 copy b1
  // and b2 into parts of b3. n2 runs right after n0, before n1 (where it
  // may fuse with n0, and b1 need not wait for n1); n3 after n1 (and n2).
  LoopProgram program = MakeProgram(4, {1, 2, 3, 3}, {{0}, {1}, {1}, {2}});
  absl::StatusOr<Schedule> schedule = ScheduleProgram(program);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(Order(*schedule), (std::vector<int>{0, 2, 1, 3}));
  // A copy into a buffer of its own keeps its place (n1: b1 into b2), as
  // does one that depends on nothing (n2: the input b0 into part of b3).
  program = MakeProgram(4, {1, 2, 3, 3}, {{0}, {1}, {0}, {2}});
  schedule = ScheduleProgram(program);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(Order(*schedule), (std::vector<int>{0, 1, 2, 3}));
}

using Edges = std::vector<std::pair<int, int>>;

// The dependency edges as (from, to) positions in program.nodes.
Edges DependencyEdges(const LoopProgram& program) {
  const IntLists dependents = Dependencies(program, LoadedBuffers(program));
  Edges edges;
  for (int i = 0; i < dependents.size(); ++i) {
    for (int target : dependents[i]) edges.emplace_back(i, target);
  }
  return edges;
}

TEST(ScheduleTest, WritersOfOneBufferStayInOrderBeforeItsReaders) {
  // pad-like: n0 fills b1, n1 copies b0 into part of b1, n2 reads b1.
  LoopProgram program = MakeProgram(3, {1, 1, 2}, {{}, {0}, {1}});
  // n1 follows n0 (write after write); n2 follows the last writer n1 and,
  // through it, every writer of b1.
  EXPECT_EQ(DependencyEdges(program), (Edges{{0, 1}, {1, 2}}));
  absl::StatusOr<Schedule> schedule = ScheduleProgram(program);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(Order(*schedule), (std::vector<int>{0, 1, 2}));
}

TEST(ScheduleTest, ManyWritersAndReadersNeedLinearlyManyEdges) {
  // concat-like: 4 nodes write parts of b1, then 4 nodes read it.
  LoopProgram program =
      MakeProgram(6, {1, 1, 1, 1, 2, 3, 4, 5}, {{0}, {0}, {0}, {0}, {1}, {1}, {1}, {1}});
  EXPECT_EQ(DependencyEdges(program),
            (Edges{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {3, 5}, {3, 6}, {3, 7}}));
}

TEST(ScheduleTest, AWriteWaitsForEarlierReads) {
  // n0 writes b1, n1 reads it, n2 overwrites it, n3 reads the new value.
  LoopProgram program = MakeProgram(4, {1, 2, 1, 3}, {{0}, {1}, {0}, {1}});
  EXPECT_EQ(DependencyEdges(program), (Edges{{0, 1}, {0, 2}, {1, 2}, {2, 3}}));
}

TEST(ScheduleTest, DependenciesListEachNodesDependentsOnceInOrder) {
  // n0 writes b1, n1 and n2 read it (n2 twice), n3 overwrites it.
  LoopProgram program = MakeProgram(4, {1, 2, 3, 1}, {{0}, {1}, {1, 1}, {0}});
  const IntLists loaded = LoadedBuffers(program);
  EXPECT_EQ(loaded[2].size(), 1);  // b1 once
  const IntLists dependents = Dependencies(program, loaded);
  ASSERT_EQ(dependents.size(), 4);
  EXPECT_EQ(std::vector<int>(dependents[0].begin(), dependents[0].end()),
            (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(std::vector<int>(dependents[1].begin(), dependents[1].end()), (std::vector<int>{3}));
  EXPECT_EQ(std::vector<int>(dependents[2].begin(), dependents[2].end()), (std::vector<int>{3}));
  EXPECT_TRUE(dependents[3].empty());
}

}  // namespace
}  // namespace loom
