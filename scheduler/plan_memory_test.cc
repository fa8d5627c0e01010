#include "scheduler/plan_memory.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/module.h"
#include "ir/random.h"
#include "passes/pass.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

struct Load {
  BufferId buffer;
  Expr index;
};

// Builds small loop programs by hand: every node stores the sum of its loads
// (or the constant 1 when it has none).
class Builder {
 public:
  ExprContext& ctx() { return *program_.exprs; }
  LoopProgram& program() { return program_; }

  BufferId AddBuffer(BufferKind kind, Shape sizes, DType dtype = DType::kF32) {
    Buffer buffer;
    buffer.name = absl::StrCat("b", program_.buffers.size());
    buffer.dtype = dtype;
    buffer.sizes = sizes;
    buffer.kind = kind;
    const BufferId id = static_cast<BufferId>(program_.buffers.size());
    program_.buffers.push_back(std::move(buffer));
    if (kind == BufferKind::kInput) program_.inputs.push_back(id);
    if (kind == BufferKind::kOutput) program_.outputs.push_back(id);
    return id;
  }

  // The row-major offset of loop point (x0, x1, ...) in a buffer of `shape`.
  Expr RowMajor(const Shape& shape) {
    Expr offset = ctx().Const(0);
    int64_t stride = 1;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
      offset = ctx().Add(offset, ctx().Mul(ctx().Var(i), stride));
      stride *= shape[i];
    }
    return offset;
  }

  // Reads a [n, n] buffer transposed: element (x1, x0).
  Expr Transposed(int64_t n) { return ctx().Add(ctx().Mul(ctx().Var(1), n), ctx().Var(0)); }

  int AddNode(BufferId out, std::vector<int64_t> ranges, Expr store, const std::vector<Load>& loads,
              std::vector<int64_t> reduction_ranges = {}) {
    ComputeNode node;
    node.name = absl::StrCat("n", program_.nodes.size());
    node.output = out;
    node.ranges = std::move(ranges);
    node.reduction_ranges = std::move(reduction_ranges);
    node.reduce = node.reduction_ranges.empty() ? ReduceKind::kNone : ReduceKind::kSum;
    node.store_index = store;
    const DType dtype = program_.buffers[out].dtype;
    for (const Load& load : loads) {
      ScalarOp op{};
      op.kind = ScalarOp::Kind::kLoad;
      op.dtype = program_.buffers[load.buffer].dtype;
      op.buffer = load.buffer;
      op.index = load.index;
      node.body.push_back(op);
      if (node.body.size() > 1) Append(node, Call(dtype, ScalarFn::kAdd), 2);
    }
    if (node.body.empty()) Append(node, Const(dtype, 1), -1);
    // Scale and offset by a per-node constant: values stay bounded and
    // differ between nodes, so a read of stale storage shows.
    Append(node, Const(dtype, 0.125), -1);
    Append(node, Call(dtype, ScalarFn::kMul), 2);
    Append(node, Const(dtype, 1.0 + program_.nodes.size() % 97), -1);
    Append(node, Call(dtype, ScalarFn::kAdd), 2);
    node.root = static_cast<int>(node.body.size()) - 1;
    program_.nodes.push_back(std::move(node));
    return static_cast<int>(program_.nodes.size()) - 1;
  }

  // A pointwise node over `shape` storing out[row-major].
  int AddPointwise(BufferId out, const Shape& shape, const std::vector<Load>& loads) {
    return AddNode(out, shape, RowMajor(shape), loads);
  }

 private:
  static ScalarOp Const(DType dtype, double value) {
    ScalarOp op{};
    op.kind = ScalarOp::Kind::kConst;
    op.dtype = dtype;
    op.constant = value;
    return op;
  }
  static ScalarOp Call(DType dtype, ScalarFn fn) {
    ScalarOp op{};
    op.kind = ScalarOp::Kind::kCall;
    op.dtype = dtype;
    op.fn = fn;
    return op;
  }
  // Appends `op`; a call takes the last `arity` steps as its arguments.
  static void Append(ComputeNode& node, ScalarOp op, int arity) {
    const int size = static_cast<int>(node.body.size());
    for (int i = arity; i > 0; --i) op.args.push_back(size - i);
    node.body.push_back(std::move(op));
  }

  LoopProgram program_;
};

Schedule OneKernelPerNode(const LoopProgram& program) {
  Schedule schedule;
  for (int i = 0; i < static_cast<int>(program.nodes.size()); ++i) {
    schedule.kernels.push_back(Kernel{absl::StrCat("kernel_", i), {i}, {}});
  }
  return schedule;
}

Schedule Kernels(const std::vector<std::vector<int>>& groups) {
  Schedule schedule;
  for (const std::vector<int>& nodes : groups) {
    schedule.kernels.push_back(
        Kernel{absl::StrCat("kernel_", schedule.kernels.size()), {nodes.begin(), nodes.end()}, {}});
  }
  return schedule;
}

struct Lifetime {
  int first = -1;
  int last = -1;
};

// First and last kernel touching each buffer, straight from the schedule.
std::vector<Lifetime> Lifetimes(const LoopProgram& program, const Schedule& schedule) {
  std::vector<Lifetime> lifetimes(program.buffers.size());
  auto touch = [&](BufferId b, int k) {
    if (lifetimes[b].first < 0) lifetimes[b].first = k;
    lifetimes[b].last = k;
  };
  for (int k = 0; k < static_cast<int>(schedule.kernels.size()); ++k) {
    for (int n : schedule.kernels[k].nodes) {
      for (const ScalarOp& op : program.nodes[n].body) {
        if (op.kind == ScalarOp::Kind::kLoad) touch(op.buffer, k);
      }
      touch(program.nodes[n].output, k);
    }
  }
  return lifetimes;
}

// The in-place rule, restated plainly: in kernel k, exactly one node writes
// `fresh` (and nothing else ever does), it is pointwise, and it is the only
// node of the kernel that reads `dying`, always directly at its store index.
bool InPlaceIsSafe(const LoopProgram& program, const Schedule& schedule, int k, BufferId dying,
                   BufferId fresh) {
  const Buffer& d = program.buffers[dying];
  const Buffer& f = program.buffers[fresh];
  if (d.dtype != f.dtype || NumElements(d.sizes) != NumElements(f.sizes)) {
    return false;
  }
  int writers_of_fresh = 0;
  for (const ComputeNode& node : program.nodes) {
    if (node.output == fresh) ++writers_of_fresh;
  }
  if (writers_of_fresh != 1) return false;
  const ComputeNode* writer = nullptr;
  for (int n : schedule.kernels[k].nodes) {
    if (program.nodes[n].output == fresh) writer = &program.nodes[n];
  }
  if (writer == nullptr || writer->reduce != ReduceKind::kNone) return false;
  for (int n : schedule.kernels[k].nodes) {
    const ComputeNode& node = program.nodes[n];
    if (node.output == dying) return false;
    for (const ScalarOp& op : node.body) {
      if (op.kind != ScalarOp::Kind::kLoad || op.buffer != dying) continue;
      if (&node != writer || !op.args.empty() || op.index != node.store_index) {
        return false;
      }
    }
  }
  return true;
}

// Checks the plan against the schedule by brute force over all pairs:
// storage in range and aligned, and no two buffers live in one kernel share
// a byte unless the in-place rule allows it.
void ExpectValidPlan(const LoopProgram& program, const Schedule& schedule, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), program.buffers.size());
  std::vector<bool> internal(program.buffers.size(), false);
  for (const Kernel& kernel : schedule.kernels) {
    for (BufferId b : kernel.internal) internal[b] = true;
  }
  const std::vector<Lifetime> lifetimes = Lifetimes(program, schedule);
  std::vector<BufferId> placed;
  for (BufferId b = 0; b < static_cast<BufferId>(program.buffers.size()); ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.kind != BufferKind::kTemp || internal[b] || lifetimes[b].first < 0) {
      EXPECT_EQ(plan.offsets[b], -1) << buffer.name;
      continue;
    }
    EXPECT_GE(plan.offsets[b], 0) << buffer.name;
    EXPECT_EQ(plan.offsets[b] % kArenaAlignment, 0) << buffer.name;
    EXPECT_LE(plan.offsets[b] + BufferBytes(buffer), plan.arena_bytes) << buffer.name;
    placed.push_back(b);
  }
  for (size_t i = 0; i < placed.size(); ++i) {
    for (size_t j = i + 1; j < placed.size(); ++j) {
      BufferId a = placed[i], b = placed[j];
      if (lifetimes[a].first > lifetimes[b].first) std::swap(a, b);
      const bool live_together = lifetimes[b].first <= lifetimes[a].last;
      const bool share_bytes =
          plan.offsets[a] < plan.offsets[b] + BufferBytes(program.buffers[b]) &&
          plan.offsets[b] < plan.offsets[a] + BufferBytes(program.buffers[a]);
      if (!live_together || !share_bytes) continue;
      const int k = lifetimes[b].first;
      EXPECT_TRUE(lifetimes[a].last == k && plan.offsets[a] == plan.offsets[b] &&
                  InPlaceIsSafe(program, schedule, k, a, b))
          << program.buffers[a].name << " and " << program.buffers[b].name << " overlap in kernel "
          << k;
    }
  }
}

// Runs the schedule on f32 buffers the way generated code does (the nodes of
// a kernel share their pointwise loops and run in order at each point), with
// temporaries at the plan's offsets in one arena, or each in its own storage
// when `plan` is null. Returns every value loaded, in order.
std::vector<float> Simulate(const LoopProgram& program, const Schedule& schedule,
                            const MemoryPlan* plan) {
  std::vector<std::vector<float>> own(program.buffers.size());
  std::vector<float> arena(plan ? plan->arena_bytes / sizeof(float) : 0, -7);
  std::vector<float*> data(program.buffers.size());
  for (BufferId b = 0; b < static_cast<BufferId>(program.buffers.size()); ++b) {
    const Buffer& buffer = program.buffers[b];
    if (plan != nullptr && buffer.kind == BufferKind::kTemp) {
      data[b] = plan->offsets[b] < 0 ? nullptr : arena.data() + plan->offsets[b] / sizeof(float);
      continue;
    }
    own[b].resize(NumElements(buffer.sizes));
    for (size_t i = 0; i < own[b].size(); ++i) {
      own[b][i] = buffer.kind == BufferKind::kInput ? 0.25f * i + b : 0;
    }
    data[b] = own[b].data();
  }
  std::vector<float> trace;
  auto eval = [&](const ComputeNode& node, const std::vector<int64_t>& vars) {
    std::vector<float> values;
    for (const ScalarOp& op : node.body) {
      switch (op.kind) {
        case ScalarOp::Kind::kLoad: {
          const int64_t i = Evaluate(op.index, vars);
          EXPECT_LT(i, NumElements(program.buffers[op.buffer].sizes));
          trace.push_back(data[op.buffer][i]);
          values.push_back(trace.back());
          break;
        }
        case ScalarOp::Kind::kConst:
          values.push_back(static_cast<float>(op.constant));
          break;
        default: {
          const float a = values[op.args[0]], b = values[op.args[1]];
          values.push_back(op.fn == ScalarFn::kMul ? a * b : a + b);
        }
      }
    }
    return values[node.root];
  };
  // Visits every point of `ranges` after the fixed prefix of `vars`.
  auto for_each = [](const std::vector<int64_t>& ranges, std::vector<int64_t>& vars, auto&& visit) {
    const size_t first = vars.size();
    vars.resize(first + ranges.size(), 0);
    if (NumElements(ranges) > 0) {
      while (true) {
        visit();
        size_t d = vars.size();
        while (d > first && ++vars[d - 1] == ranges[d - 1 - first]) {
          vars[--d] = 0;
        }
        if (d == first) break;
      }
    }
    vars.resize(first);
  };
  for (const Kernel& kernel : schedule.kernels) {
    std::vector<int64_t> vars;
    for_each(program.nodes[kernel.nodes[0]].ranges, vars, [&] {
      for (int n : kernel.nodes) {
        const ComputeNode& node = program.nodes[n];
        float value = 0;
        if (node.reduce == ReduceKind::kNone) {
          value = eval(node, vars);
        } else {
          for_each(node.reduction_ranges, vars, [&] { value += eval(node, vars); });
        }
        data[node.output][Evaluate(node.store_index, vars)] = value;
      }
    });
  }
  return trace;
}

// Every value loaded is the same with the plan as with separate storage.
void ExpectSameResults(const LoopProgram& program, const Schedule& schedule,
                       const MemoryPlan& plan) {
  const std::vector<float> planned = Simulate(program, schedule, &plan);
  const std::vector<float> separate = Simulate(program, schedule, nullptr);
  ASSERT_EQ(planned.size(), separate.size());
  size_t i = 0;
  while (i < planned.size() && planned[i] == separate[i]) ++i;
  EXPECT_EQ(i, planned.size()) << "load #" << i << " differs";
}

// A random program of `num_temps` temporaries of a few shapes: pointwise
// nodes and row reductions reading recent (sometimes old) buffers at the
// store index, transposed or rotated; some buffers have two writers (a fill,
// then a full rewrite). Consecutive nodes of equal ranges that do not touch
// each other's outputs are often fused into one kernel.
class RandomProgramMaker {
 public:
  explicit RandomProgramMaker(uint64_t seed) : state_(seed) {
    written_.push_back(builder_.AddBuffer(BufferKind::kInput, {8, 8}));
  }

  std::pair<LoopProgram, Schedule> Make(int num_temps) {
    const std::vector<Shape> shapes = {{4, 4}, {8, 8}, {2, 8}};
    for (int t = 0; t < num_temps; ++t) AddTemp(shapes[Next(shapes.size())]);
    for (int i = 0; i < 3; ++i) {
      const BufferId out = builder_.AddBuffer(BufferKind::kOutput, {8, 8});
      builder_.AddPointwise(out, {8, 8}, RandomLoads({8, 8}));
    }
    return {builder_.program(), RandomKernels()};
  }

 private:
  uint64_t Next(uint64_t n) { return (state_ = SplitMix64(state_)) % n; }

  // One of the last `window` buffers written.
  BufferId Recent(size_t window) {
    return written_[written_.size() - 1 - Next(std::min<size_t>(window, written_.size()))];
  }

  // An index into `from` for a node over `shape`: row-major, transposed or
  // the next row when the shapes agree, else wrapped around.
  Expr RandomIndex(const Shape& from, const Shape& shape) {
    ExprContext& ctx = builder_.ctx();
    if (from != shape) {
      return ctx.Add(ctx.Mul(ctx.Mod(ctx.Var(0), from[0]), from[1]), ctx.Mod(ctx.Var(1), from[1]));
    }
    const uint64_t kind = Next(3);
    if (kind == 0 || shape[0] != shape[1]) return builder_.RowMajor(shape);
    if (kind == 1) return builder_.Transposed(shape[0]);
    // the next row, wrapping around
    return ctx.Add(ctx.Mul(ctx.Mod(ctx.Add(ctx.Var(0), ctx.Const(1)), shape[0]), shape[1]),
                   ctx.Var(1));
  }

  std::vector<Load> RandomLoads(const Shape& shape) {
    std::vector<Load> loads;
    const int count = 1 + static_cast<int>(Next(3));
    for (int i = 0; i < count; ++i) {
      const BufferId source =
          Next(10) == 0 ? written_[written_.size() - 1 - Next(written_.size())] : Recent(6);
      loads.push_back({source, RandomIndex(builder_.program().buffers[source].sizes, shape)});
    }
    return loads;
  }

  // A temporary: a fill (rewritten later), a row reduction or a pointwise
  // node; then, sometimes, the oldest pending rewrite.
  void AddTemp(const Shape& shape) {
    const BufferId out = builder_.AddBuffer(BufferKind::kTemp, shape);
    if (Next(10) == 0) {
      builder_.AddPointwise(out, shape, {});  // a fill, rewritten later
      pending_rewrites_.push_back(out);
    } else if (Next(6) == 0) {
      ExprContext& ctx = builder_.ctx();
      const BufferId source = Recent(4);
      const Shape& from = builder_.program().buffers[source].sizes;
      const Expr row = ctx.Mul(ctx.Mod(ctx.Var(0), from[0]), from[1]);
      builder_.AddNode(out, shape, builder_.RowMajor(shape), {{source, ctx.Add(row, ctx.Var(2))}},
                       {from[1]});
    } else {
      builder_.AddPointwise(out, shape, RandomLoads(shape));
    }
    written_.push_back(out);
    if (!pending_rewrites_.empty() && Next(4) == 0) {
      const BufferId again = pending_rewrites_.front();
      pending_rewrites_.erase(pending_rewrites_.begin());
      const Shape& again_shape = builder_.program().buffers[again].sizes;
      builder_.AddPointwise(again, again_shape, RandomLoads(again_shape));
    }
  }

  // The nodes in order, each often joining the kernel before when their
  // ranges agree and neither touches the other's outputs.
  Schedule RandomKernels() {
    const LoopProgram& program = builder_.program();
    std::vector<std::vector<int>> groups;
    std::vector<BufferId> group_outputs, group_reads;
    auto contains = [](const std::vector<BufferId>& list, BufferId b) {
      return std::find(list.begin(), list.end(), b) != list.end();
    };
    for (int n = 0; n < static_cast<int>(program.nodes.size()); ++n) {
      const ComputeNode& node = program.nodes[n];
      std::vector<BufferId> reads;
      for (const ScalarOp& op : node.body) {
        if (op.kind == ScalarOp::Kind::kLoad) reads.push_back(op.buffer);
      }
      bool joins = !groups.empty() && Next(5) < 2 &&
                   program.nodes[groups.back()[0]].ranges == node.ranges &&
                   !contains(group_outputs, node.output) && !contains(group_reads, node.output);
      for (BufferId b : reads) joins = joins && !contains(group_outputs, b);
      if (!joins) {
        groups.emplace_back();
        group_outputs.clear();
        group_reads.clear();
      }
      groups.back().push_back(n);
      group_outputs.push_back(node.output);
      group_reads.insert(group_reads.end(), reads.begin(), reads.end());
    }
    return Kernels(groups);
  }

  uint64_t state_;
  Builder builder_;
  std::vector<BufferId> written_;
  std::vector<BufferId> pending_rewrites_;
};

std::pair<LoopProgram, Schedule> RandomProgram(uint64_t seed, int num_temps) {
  return RandomProgramMaker(seed).Make(num_temps);
}

TEST(PlanMemoryTest, ReusesTheStorageOfDeadBuffers) {
  // Each step reads the previous one transposed, so none is in place; a
  // buffer's storage is free again after its last reader.
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4, 4});
  BufferId previous = in;
  std::vector<BufferId> temps;
  for (int i = 0; i < 4; ++i) {
    temps.push_back(b.AddBuffer(BufferKind::kTemp, {4, 4}));
    b.AddPointwise(temps.back(), {4, 4}, {{previous, b.Transposed(4)}});
    previous = temps.back();
  }
  const BufferId out = b.AddBuffer(BufferKind::kOutput, {4, 4});
  b.AddPointwise(out, {4, 4}, {{previous, b.Transposed(4)}});
  const Schedule schedule = OneKernelPerNode(b.program());

  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->unplanned_bytes, 4 * 64);
  EXPECT_EQ(plan->arena_bytes, 2 * 64);
  EXPECT_EQ(plan->offsets[temps[0]], 0);
  EXPECT_EQ(plan->offsets[temps[1]], 64);
  EXPECT_EQ(plan->offsets[temps[2]], 0);
  EXPECT_EQ(plan->offsets[temps[3]], 64);
  EXPECT_EQ(plan->offsets[in], -1);
  EXPECT_EQ(plan->offsets[out], -1);
  ExpectValidPlan(b.program(), schedule, *plan);
  ExpectSameResults(b.program(), schedule, *plan);
}

TEST(PlanMemoryTest, WritesAPointwiseChainInPlace) {
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4, 4});
  const Expr same = b.RowMajor({4, 4});
  BufferId previous = in;
  std::vector<BufferId> temps;
  for (int i = 0; i < 4; ++i) {
    temps.push_back(b.AddBuffer(BufferKind::kTemp, {4, 4}));
    b.AddPointwise(temps.back(), {4, 4}, {{previous, same}, {in, same}});
    previous = temps.back();
  }
  const BufferId out = b.AddBuffer(BufferKind::kOutput, {4, 4});
  b.AddPointwise(out, {4, 4}, {{previous, same}});
  const Schedule schedule = OneKernelPerNode(b.program());

  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->arena_bytes, 64);
  for (BufferId t : temps) EXPECT_EQ(plan->offsets[t], 0);
  ExpectValidPlan(b.program(), schedule, *plan);
  ExpectSameResults(b.program(), schedule, *plan);
}

// Two temporaries d (dying in the last kernel) and n (written there), with
// the node that writes n built by `write_n`; returns whether n took d's
// storage.
template <typename WriteN>
bool TakesStorageInPlace(WriteN write_n) {
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4, 4});
  const BufferId d = b.AddBuffer(BufferKind::kTemp, {4, 4});
  b.AddPointwise(d, {4, 4}, {{in, b.RowMajor({4, 4})}});
  std::vector<std::vector<int>> groups = {{0}};
  const BufferId n = write_n(b, d, groups.emplace_back());
  const Schedule schedule = Kernels(groups);
  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), schedule);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return false;
  ExpectValidPlan(b.program(), schedule, *plan);
  ExpectSameResults(b.program(), schedule, *plan);
  return plan->offsets[n] == plan->offsets[d];
}

TEST(PlanMemoryTest, InPlaceNeedsALoadAtTheStoreIndex) {
  EXPECT_TRUE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    kernel.push_back(b.AddPointwise(n, {4, 4}, {{d, b.RowMajor({4, 4})}}));
    return n;
  }));
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    kernel.push_back(b.AddPointwise(n, {4, 4}, {{d, b.Transposed(4)}}));
    return n;
  }));
  // One load at the store index is not enough when another is elsewhere.
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    kernel.push_back(b.AddPointwise(n, {4, 4}, {{d, b.RowMajor({4, 4})}, {d, b.Transposed(4)}}));
    return n;
  }));
}

TEST(PlanMemoryTest, NoInPlaceWhenAnotherNodeOfTheKernelReadsTheBuffer) {
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    const BufferId m = b.AddBuffer(BufferKind::kOutput, {4, 4});
    kernel.push_back(b.AddPointwise(n, {4, 4}, {{d, b.RowMajor({4, 4})}}));
    kernel.push_back(b.AddPointwise(m, {4, 4}, {{d, b.Transposed(4)}}));
    return n;
  }));
}

TEST(PlanMemoryTest, NoInPlaceOverABufferTheKernelAlsoWrites) {
  // The kernel rewrites d transposed, then reads it: at a later point the
  // rewrite would land on elements of n already stored.
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    kernel.push_back(b.AddNode(d, {4, 4}, b.Transposed(4), {{0, b.RowMajor({4, 4})}}));
    kernel.push_back(b.AddPointwise(n, {4, 4}, {{d, b.RowMajor({4, 4})}}));
    return n;
  }));
}

TEST(PlanMemoryTest, NoInPlaceIntoAReduction) {
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    const Expr same = b.RowMajor({4, 4});
    kernel.push_back(b.AddNode(n, {4, 4}, same, {{d, same}}, {1}));
    return n;
  }));
}

TEST(PlanMemoryTest, NoInPlaceAcrossDtypesOrSizes) {
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4}, DType::kI32);
    kernel.push_back(b.AddPointwise(n, {4, 4}, {{d, b.RowMajor({4, 4})}}));
    return n;
  }));
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {2, 4});
    kernel.push_back(b.AddPointwise(n, {2, 4}, {{d, b.RowMajor({2, 4})}}));
    return n;
  }));
}

TEST(PlanMemoryTest, NoInPlaceWhenTheStoreMayRevisitAnElement) {
  // Over [4, 4], x0 + x1 hits element 1 at (0, 1) and (1, 0).
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    const Expr diagonal = b.ctx().Add(b.ctx().Var(0), b.ctx().Var(1));
    kernel.push_back(b.AddNode(n, {4, 4}, diagonal, {{d, diagonal}}));
    return n;
  }));
  // Over [8], x0 % 4 visits each element twice.
  EXPECT_FALSE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    const Expr wrap = b.ctx().Mod(b.ctx().Var(0), 16);
    kernel.push_back(b.AddNode(n, {32}, wrap, {{d, wrap}}));
    return n;
  }));
  // A strided but injective store (x1 * 4 + x0 over [4, 4]) is fine.
  EXPECT_TRUE(TakesStorageInPlace([](Builder& b, BufferId d, std::vector<int>& kernel) {
    const BufferId n = b.AddBuffer(BufferKind::kTemp, {4, 4});
    const Expr columns = b.Transposed(4);
    kernel.push_back(b.AddNode(n, {4, 4}, columns, {{d, columns}}));
    return n;
  }));
}

TEST(PlanMemoryTest, MultiWriterBufferLivesFromItsFirstWriteToItsLastRead) {
  // Like pad: p is filled in kernel 0 and its interior written in kernel 3;
  // x and y live in between and must not take p's storage.
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4, 4});
  const BufferId p = b.AddBuffer(BufferKind::kTemp, {4, 4});
  const BufferId x = b.AddBuffer(BufferKind::kTemp, {4, 4});
  const BufferId y = b.AddBuffer(BufferKind::kTemp, {2, 2});
  const BufferId out = b.AddBuffer(BufferKind::kOutput, {4, 4});
  const Expr same = b.RowMajor({4, 4});
  b.AddPointwise(p, {4, 4}, {});
  b.AddPointwise(x, {4, 4}, {{in, b.Transposed(4)}});
  b.AddPointwise(y, {2, 2}, {{x, b.RowMajor({2, 2})}});
  const Expr interior = b.ctx().Add(b.RowMajor({4, 4}), b.ctx().Const(5));
  b.AddNode(p, {2, 2}, interior, {{y, b.RowMajor({2, 2})}});
  b.AddPointwise(out, {4, 4}, {{p, same}});
  const Schedule schedule = OneKernelPerNode(b.program());

  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(plan->offsets[p], plan->offsets[x]);
  EXPECT_NE(plan->offsets[p], plan->offsets[y]);
  ExpectValidPlan(b.program(), schedule, *plan);
  ExpectSameResults(b.program(), schedule, *plan);
}

TEST(PlanMemoryTest, InternalBuffersGetNoStorage) {
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4, 4});
  const BufferId t = b.AddBuffer(BufferKind::kTemp, {4, 4});
  const BufferId u = b.AddBuffer(BufferKind::kTemp, {4, 4});
  const BufferId out = b.AddBuffer(BufferKind::kOutput, {4, 4});
  const Expr same = b.RowMajor({4, 4});
  b.AddPointwise(t, {4, 4}, {{in, same}});
  b.AddPointwise(u, {4, 4}, {{t, same}});
  b.AddPointwise(out, {4, 4}, {{u, b.Transposed(4)}});
  Schedule schedule = Kernels({{0, 1}, {2}});
  schedule.kernels[0].internal = {t};

  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->offsets[t], -1);
  EXPECT_EQ(plan->offsets[u], 0);
  EXPECT_EQ(plan->unplanned_bytes, 64);
  EXPECT_EQ(plan->arena_bytes, 64);
  ExpectValidPlan(b.program(), schedule, *plan);
}

TEST(PlanMemoryTest, RejectsBrokenSchedules) {
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4});
  const BufferId t = b.AddBuffer(BufferKind::kTemp, {4});
  const BufferId out = b.AddBuffer(BufferKind::kOutput, {4});
  b.AddPointwise(t, {4}, {{in, b.RowMajor({4})}});
  b.AddPointwise(out, {4}, {{t, b.RowMajor({4})}});

  Schedule internal_elsewhere = OneKernelPerNode(b.program());
  internal_elsewhere.kernels[0].internal = {t};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), internal_elsewhere);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(plan.status().message(), HasSubstr("internal to kernel 'kernel_0', but kernel "
                                                 "'kernel_1' touches it"));

  Schedule internal_output = Kernels({{0, 1}});
  internal_output.kernels[0].internal = {out};
  plan = PlanMemory(b.program(), internal_output);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(plan.status().message(), HasSubstr("not a temporary"));

  Schedule bad_node = Kernels({{0}, {7}});
  plan = PlanMemory(b.program(), bad_node);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(plan.status().message(), HasSubstr("names compute node 7"));
}

TEST(PlanMemoryTest, FreedNeighboursCoalesce) {
  // a, b and c (64 bytes each) die together; d (192 bytes) fits in the
  // merged block rather than growing the arena. e keeps the arena's end
  // busy meanwhile.
  Builder bld;
  const BufferId in = bld.AddBuffer(BufferKind::kInput, {16});
  std::vector<BufferId> small;
  for (int i = 0; i < 3; ++i) {
    small.push_back(bld.AddBuffer(BufferKind::kTemp, {16}));
    bld.AddPointwise(small.back(), {16}, {{in, bld.RowMajor({16})}});
  }
  const BufferId e = bld.AddBuffer(BufferKind::kTemp, {16});
  bld.AddPointwise(e, {16}, {{in, bld.RowMajor({16})}});
  const BufferId sum = bld.AddBuffer(BufferKind::kOutput, {16});
  const Expr rotated = bld.ctx().Mod(bld.ctx().Add(bld.ctx().Var(0), bld.ctx().Const(1)), 16);
  bld.AddPointwise(sum, {16}, {{small[0], rotated}, {small[1], rotated}, {small[2], rotated}});
  const BufferId d = bld.AddBuffer(BufferKind::kTemp, {48});
  bld.AddPointwise(d, {48}, {{e, bld.ctx().Mod(bld.ctx().Var(0), 16)}});
  const BufferId out = bld.AddBuffer(BufferKind::kOutput, {48});
  bld.AddPointwise(out, {48}, {{d, bld.RowMajor({48})}});
  const Schedule schedule = OneKernelPerNode(bld.program());

  absl::StatusOr<MemoryPlan> plan = PlanMemory(bld.program(), schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->offsets[e], 192);
  EXPECT_EQ(plan->offsets[d], 0);
  EXPECT_EQ(plan->arena_bytes, 256);
  ExpectValidPlan(bld.program(), schedule, *plan);
}

TEST(PlanMemoryTest, RandomSchedulesNeverShareLiveStorage) {
  int64_t in_place = 0, unplanned = 0, planned = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const auto [program, schedule] = RandomProgram(seed, 300);
    absl::StatusOr<MemoryPlan> plan = PlanMemory(program, schedule);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ExpectValidPlan(program, schedule, *plan);
    ExpectSameResults(program, schedule, *plan);
    const std::vector<Lifetime> lifetimes = Lifetimes(program, schedule);
    for (const Kernel& kernel : schedule.kernels) {
      for (int n : kernel.nodes) {
        const BufferId out = program.nodes[n].output;
        for (const ScalarOp& op : program.nodes[n].body) {
          if (op.kind == ScalarOp::Kind::kLoad &&
              program.buffers[op.buffer].kind == BufferKind::kTemp && op.buffer != out &&
              plan->offsets[op.buffer] == plan->offsets[out] &&
              lifetimes[op.buffer].last == lifetimes[out].first) {
            ++in_place;
          }
        }
      }
    }
    unplanned += plan->unplanned_bytes;
    planned += plan->arena_bytes;
  }
  // The random programs exercise both reuse and in-place writes.
  EXPECT_GT(in_place, 20);
  EXPECT_LT(planned * 4, unplanned);
}

TEST(PlanMemoryTest, IsDeterministic) {
  const auto [program, schedule] = RandomProgram(99, 300);
  absl::StatusOr<MemoryPlan> first = PlanMemory(program, schedule);
  absl::StatusOr<MemoryPlan> second = PlanMemory(program, schedule);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->offsets, second->offsets);
  EXPECT_EQ(first->arena_bytes, second->arena_bytes);
}

TEST(PlanMemoryTest, LongChainsPlanInLinearSpace) {
  // 100k temporaries, each read once by the next transposed: two blocks.
  constexpr int kTemps = 100000;
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4, 4});
  const Expr transposed = b.Transposed(4);
  BufferId previous = in;
  for (int i = 0; i < kTemps; ++i) {
    const BufferId t = b.AddBuffer(BufferKind::kTemp, {4, 4});
    b.AddPointwise(t, {4, 4}, {{previous, transposed}});
    previous = t;
  }
  const Schedule schedule = OneKernelPerNode(b.program());
  absl::StatusOr<MemoryPlan> plan = PlanMemory(b.program(), schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->arena_bytes, 2 * 64);
  EXPECT_EQ(plan->unplanned_bytes, int64_t{kTemps} * 64);
}

TEST(PlanMemoryPassTest, SetsThePlanAndReportsNoChangeOnASecondRun) {
  Builder b;
  const BufferId in = b.AddBuffer(BufferKind::kInput, {4});
  const BufferId t = b.AddBuffer(BufferKind::kTemp, {4});
  const BufferId out = b.AddBuffer(BufferKind::kOutput, {4});
  b.AddPointwise(t, {4}, {{in, b.RowMajor({4})}});
  b.AddPointwise(out, {4}, {{t, b.RowMajor({4})}});
  Module module;
  module.loops = b.program();
  module.schedule = OneKernelPerNode(*module.loops);
  module.source = GeneratedSource{};

  PassSpec spec{"plan-memory"};
  absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Global().Create(spec);
  ASSERT_TRUE(pass.ok()) << pass.status();
  absl::StatusOr<bool> changed = (*pass)->Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(module.schedule->memory.has_value());
  EXPECT_EQ(module.schedule->memory->offsets, (std::vector<int64_t>{-1, 0, -1}));
  EXPECT_EQ(module.schedule->memory->arena_bytes, 64);
  EXPECT_EQ(module.schedule->memory->unplanned_bytes, 16);
  EXPECT_FALSE(module.source.has_value());  // stale once the plan changes

  changed = (*pass)->Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
}

TEST(PlanMemoryPassTest, NeedsASchedule) {
  Module module;
  PassSpec spec{"plan-memory"};
  absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Global().Create(spec);
  ASSERT_TRUE(pass.ok()) << pass.status();
  absl::StatusOr<bool> changed = (*pass)->Run(module);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(changed.status().message(), HasSubstr("'schedule'"));
}

}  // namespace
}  // namespace loom
