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
std::vector<std::pair<int, int>> DependencyEdges(const LoopProgram& program) {
  const int n = static_cast<int>(program.nodes.size());
  std::vector<int> last_writer(program.buffers.size(), -1);
  std::vector<std::vector<int>> readers_since_write(program.buffers.size());
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < n; ++i) {
    const ComputeNode& node = program.nodes[i];
    int last_source = -1;  // skip repeated loads of one buffer in a row
    for (const ScalarOp& op : node.body) {
      if (op.kind != ScalarOp::Kind::kLoad || op.buffer == last_source)
        continue;
      last_source = op.buffer;
      if (last_writer[op.buffer] >= 0) {
        edges.emplace_back(last_writer[op.buffer], i);
      }
      readers_since_write[op.buffer].push_back(i);
    }
    if (last_writer[node.output] >= 0) {
      edges.emplace_back(last_writer[node.output], i);
    }
    for (int reader : readers_since_write[node.output]) {
      if (reader != i) edges.emplace_back(reader, i);
    }
    readers_since_write[node.output].clear();
    last_writer[node.output] = i;
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
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
