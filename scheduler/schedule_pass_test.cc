#include "scheduler/schedule_pass.h"

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
    program.buffers.push_back(Buffer{absl::StrCat("b", i), DType::kF32, {1}, {1}});
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

}  // namespace
}  // namespace loom
