#include "scheduler/schedule_pass.h"

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "passes/pass.h"

namespace loom {

IntLists LoadedBuffers(const LoopProgram& program) {
  const int n = static_cast<int>(program.nodes.size());
  std::vector<int> last_reader(program.buffers.size(), -1);
  IntLists loaded;
  loaded.offsets.reserve(n + 1);
  for (int i = 0; i < n; ++i) {
    for (const ScalarOp& op : program.nodes[i].body) {
      if (op.kind != ScalarOp::Kind::kLoad || last_reader[op.buffer] == i) {
        continue;
      }
      last_reader[op.buffer] = i;
      loaded.items.push_back(op.buffer);
    }
    loaded.offsets.push_back(static_cast<int>(loaded.items.size()));
  }
  return loaded;
}

// Edges that keep every access to a buffer in program order where it
// matters. Write-after-write: each writer of a buffer follows the previous
// one (a buffer may have several writers, e.g. one per concat input, or
// pad's fill and interior copy), so partial writes land in order.
// Read-after-write: a reader follows the buffer's last writer so far, and
// through the chain every earlier one. Write-after-read: a writer follows
// every reader since the previous write, so no read sees a later write.
// Each access adds O(1) edges, amortised.
//
// Everything lives in flat arrays (a program has about a million buffers at
// the scale loom targets): the readers of a buffer since its last write are
// a linked list threaded through one pool, and the edges come out grouped by
// their target in program order, so a stable counting sort by source sorts
// them completely.
IntLists Dependencies(const LoopProgram& program, const IntLists& loaded) {
  const int n = static_cast<int>(program.nodes.size());
  const size_t num_buffers = program.buffers.size();
  std::vector<int> last_writer(num_buffers, -1);
  // Readers since the last write: pool entries reader_head[b], then
  // pool_next[...], until -1.
  std::vector<int> reader_head(num_buffers, -1);
  std::vector<int> pool_reader, pool_next;
  pool_reader.reserve(loaded.items.size());
  pool_next.reserve(loaded.items.size());
  // Each edge into node i once: added[source] == i once it is there.
  std::vector<int> added(n, -1);
  std::vector<int> from, to;
  auto add_edge = [&](int source, int target) {
    if (source == target || added[source] == target) return;
    added[source] = target;
    from.push_back(source);
    to.push_back(target);
  };
  for (int i = 0; i < n; ++i) {
    for (BufferId buffer : loaded[i]) {
      if (last_writer[buffer] >= 0) add_edge(last_writer[buffer], i);
      pool_reader.push_back(i);
      pool_next.push_back(reader_head[buffer]);
      reader_head[buffer] = static_cast<int>(pool_reader.size()) - 1;
    }
    const BufferId out = program.nodes[i].output;
    if (last_writer[out] >= 0) add_edge(last_writer[out], i);
    for (int k = reader_head[out]; k >= 0; k = pool_next[k]) {
      add_edge(pool_reader[k], i);
    }
    reader_head[out] = -1;
    last_writer[out] = i;
  }
  // Counting sort by source; targets stay in increasing order within each.
  IntLists dependents;
  dependents.offsets.assign(n + 1, 0);
  for (int source : from) ++dependents.offsets[source + 1];
  for (int i = 0; i < n; ++i) {
    dependents.offsets[i + 1] += dependents.offsets[i];
  }
  dependents.items.resize(from.size());
  std::vector<int>& next = added;  // reused: where each source's next edge goes
  next.assign(dependents.offsets.begin(), dependents.offsets.end() - 1);
  for (size_t k = 0; k < from.size(); ++k) {
    dependents.items[next[from[k]]++] = to[k];
  }
  return dependents;
}

std::string KernelName(int index) { return absl::StrCat("kernel_", index); }

namespace {

// Whether `node` stores what it loads, as it is.
bool IsCopy(const ComputeNode& node) {
  return node.extern_op == ExternOp::kNone && node.reduce == ReduceKind::kNone &&
         node.body.size() == 1 && node.root == 0 && node.body[0].kind == ScalarOp::Kind::kLoad;
}

// Per node: the LoopRegion it belongs to, or -1.
std::vector<int> RegionOf(const LoopProgram& program) {
  std::vector<int> region(program.nodes.size(), -1);
  for (size_t r = 0; r < program.loop_regions.size(); ++r) {
    for (int v = program.loop_regions[r].first; v < program.loop_regions[r].end; ++v) {
      region[v] = static_cast<int>(r);
    }
  }
  return region;
}

// Which nodes run as soon as they may: copies into a buffer that other
// nodes write too (a concat's inputs into their parts of its buffer, a
// pad's interior), which lowering emits where the concat or pad is, after
// every input. Not a loop's nodes, nor a copy of what a loop wrote, which
// would land amid the loop's nodes (the loop runs as one kernel).
std::vector<bool> RunEarly(const LoopProgram& program, const std::vector<int>& region_of) {
  std::vector<int> writers(program.buffers.size(), 0);
  std::vector<bool> written_in_loop(program.buffers.size(), false);
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    ++writers[program.nodes[i].output];
    if (region_of[i] >= 0) written_in_loop[program.nodes[i].output] = true;
  }
  std::vector<bool> early(program.nodes.size(), false);
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    const ComputeNode& node = program.nodes[i];
    early[i] = writers[node.output] > 1 && IsCopy(node) && region_of[i] < 0 &&
               !written_in_loop[node.body[0].buffer];
  }
  return early;
}

class SchedulePass : public Pass {
 public:
  StageRule stages() const override { return StageRule::From(Stage::kLoops, Stage::kScheduled); }
  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value()) {
      return absl::FailedPreconditionError(
          "there is no loop IR to schedule (run 'lower' before 'schedule')");
    }
    LOOM_ASSIGN_OR_RETURN(module.schedule, ScheduleProgram(*module.loops));
    module.source.reset();
    return true;
  }
};

LOOM_REGISTER_PASS("schedule", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<SchedulePass>());
});

}  // namespace

// Kahn's algorithm over the dependency edges, taking the earliest ready node
// first, would return the program order itself: every edge points forward,
// so whenever nodes 0..i-1 have run, node i is ready and the earliest. So
// the order is the program's, except for the nodes RunEarly picks: each runs
// right after the last node it depends on (a recurrence's step state is
// copied into the output's rows at its step, where the copy may fuse with
// the step, rather than after the last step, all states alive until then).
// A node that depends on none keeps its place. A LoopRegion's nodes are one
// kernel, whose second outer loop runs in order.
absl::StatusOr<Schedule> ScheduleProgram(const LoopProgram& program) {
  const int n = static_cast<int>(program.nodes.size());
  const std::vector<int> region_of = RegionOf(program);
  const std::vector<bool> early = RunEarly(program, region_of);
  std::vector<int> order;
  order.reserve(n);
  if (std::find(early.begin(), early.end(), true) == early.end()) {
    for (int i = 0; i < n; ++i) order.push_back(i);
  } else {
    const IntLists dependents = Dependencies(program, LoadedBuffers(program));
    std::vector<int> waiting(n, 0);  // dependencies not yet placed
    for (int item : dependents.items) ++waiting[item];
    std::vector<bool> placed(n, false);
    std::vector<int> ready;
    for (int i = 0; i < n; ++i) {
      if (placed[i]) continue;
      ready.push_back(i);
      while (!ready.empty()) {
        const int v = ready.back();
        ready.pop_back();
        placed[v] = true;
        order.push_back(v);
        for (int d : dependents[v]) {
          if (--waiting[d] == 0 && early[d]) ready.push_back(d);
        }
      }
    }
  }
  Schedule schedule;
  schedule.kernels.reserve(n);
  for (int k = 0; k < n; ++k) {
    const int v = order[k];
    const int region = region_of[v];
    if (region >= 0 && v != program.loop_regions[region].first) continue;
    Kernel& kernel = schedule.kernels.emplace_back();
    kernel.name = KernelName(static_cast<int>(schedule.kernels.size()) - 1);
    if (region < 0) {
      kernel.nodes = {v};
      kernel.outer_loops = static_cast<int>(program.nodes[v].ranges.size());
      continue;
    }
    // Its nodes are placed in program order, one after another (RunEarly
    // moves none among them).
    const LoopRegion& loop = program.loop_regions[region];
    for (int m = loop.first; m < loop.end; ++m) {
      const int place = k + m - loop.first;
      if (place >= n || order[place] != m) {
        return absl::InternalError(absl::StrCat("the nodes of the loop from '",
                                                program.nodes[loop.first].name,
                                                "' are not scheduled together"));
      }
      kernel.nodes.push_back(m);
    }
    kernel.outer_loops = 2;
    kernel.ordered_loop = 1;
  }
  return schedule;
}

}  // namespace loom
