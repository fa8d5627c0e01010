#include "scheduler/schedule_pass.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "passes/pass.h"

namespace loom {

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
std::vector<std::pair<int, int>> DependencyEdges(const LoopProgram& program) {
  const int n = static_cast<int>(program.nodes.size());
  const size_t num_buffers = program.buffers.size();
  std::vector<int> last_writer(num_buffers, -1);
  // Readers since the last write: pool entries reader_head[b], then
  // next[...], until -1.
  std::vector<int> reader_head(num_buffers, -1);
  std::vector<int> last_reader(num_buffers, -1);  // to add each reader once
  std::vector<int> pool_reader, pool_next;
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
    const ComputeNode& node = program.nodes[i];
    for (const ScalarOp& op : node.body) {
      if (op.kind != ScalarOp::Kind::kLoad || last_reader[op.buffer] == i) {
        continue;
      }
      last_reader[op.buffer] = i;
      if (last_writer[op.buffer] >= 0) add_edge(last_writer[op.buffer], i);
      pool_reader.push_back(i);
      pool_next.push_back(reader_head[op.buffer]);
      reader_head[op.buffer] = static_cast<int>(pool_reader.size()) - 1;
    }
    const BufferId out = node.output;
    if (last_writer[out] >= 0) add_edge(last_writer[out], i);
    for (int k = reader_head[out]; k >= 0; k = pool_next[k]) {
      add_edge(pool_reader[k], i);
    }
    reader_head[out] = -1;
    last_reader[out] = -1;
    last_writer[out] = i;
  }
  // Counting sort by source; targets stay in increasing order within each.
  std::vector<int> start(n + 1, 0);
  for (int source : from) ++start[source + 1];
  for (int i = 0; i < n; ++i) start[i + 1] += start[i];
  std::vector<std::pair<int, int>> edges(from.size());
  for (size_t k = 0; k < from.size(); ++k) {
    edges[start[from[k]]++] = {from[k], to[k]};
  }
  return edges;
}

namespace {

// Dependency edges in CSR form: the consumers of node i are
// targets[offsets[i] .. offsets[i+1]).
struct Dependencies {
  std::vector<int> offsets;
  std::vector<int> targets;
  std::vector<int> in_degree;
};

Dependencies BuildDependencies(const LoopProgram& program) {
  const int n = static_cast<int>(program.nodes.size());
  const std::vector<std::pair<int, int>> edges = DependencyEdges(program);
  Dependencies deps;
  deps.offsets.assign(n + 1, 0);
  deps.in_degree.assign(n, 0);
  for (const auto& [from, to] : edges) {
    ++deps.offsets[from + 1];
    ++deps.in_degree[to];
  }
  for (int i = 0; i < n; ++i) deps.offsets[i + 1] += deps.offsets[i];
  deps.targets.resize(edges.size());
  std::vector<int> fill(deps.offsets.begin(), deps.offsets.end() - 1);
  for (const auto& [from, to] : edges) deps.targets[fill[from]++] = to;
  return deps;
}

class SchedulePass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value()) {
      return absl::FailedPreconditionError(
          "there is no loop IR to schedule (run 'lower' before 'schedule')");
    }
    absl::StatusOr<Schedule> schedule = ScheduleProgram(*module.loops);
    if (!schedule.ok()) return schedule.status();
    module.schedule = *std::move(schedule);
    module.source.reset();
    return true;
  }
};

LOOM_REGISTER_PASS("schedule", "", [](const proto::PassSpec&) {
  return absl::StatusOr<std::unique_ptr<Pass>>(
      std::make_unique<SchedulePass>());
});

}  // namespace

absl::StatusOr<Schedule> ScheduleProgram(const LoopProgram& program) {
  Dependencies deps = BuildDependencies(program);
  const int n = static_cast<int>(program.nodes.size());
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (deps.in_degree[i] == 0) ready.push(i);
  }
  Schedule schedule;
  schedule.kernels.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    const int loops = static_cast<int>(program.nodes[i].ranges.size());
    schedule.kernels.push_back(
        Kernel{absl::StrCat("kernel_", schedule.kernels.size()), {i}, loops});
    for (int k = deps.offsets[i]; k < deps.offsets[i + 1]; ++k) {
      if (--deps.in_degree[deps.targets[k]] == 0) ready.push(deps.targets[k]);
    }
  }
  if (static_cast<int>(schedule.kernels.size()) != n) {
    return absl::InternalError("the loop program's dependencies have a cycle");
  }
  return schedule;
}

}  // namespace loom
