#include "scheduler/fuse.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "passes/pass.h"
#include "scheduler/schedule_pass.h"

namespace loom {
namespace {

constexpr int kDefaultMaxNodesPerKernel = 64;
// Buffers read by more nodes than this are not used to find siblings: a
// weight read by every step of an unrolled recurrence would only yield
// candidates that the ordering check refuses.
constexpr int kMaxSiblingReaders = 8;

// The fuser's view of the program: dense per-node and per-buffer tables.
class Fuser {
 public:
  Fuser(const LoopProgram& program, const Schedule& schedule, int max_nodes);
  absl::StatusOr<Schedule> Run();

 private:
  struct Load {
    BufferId buffer;
    Expr index;
  };

  int Find(int node);
  // Tries to merge the groups of a and b; records the decision.
  void TryFuse(int a, int b, const char* kind);
  // Empty when merging groups `ga` and `gb` is legal, else the reason.
  std::pair<std::string, std::string> Refusal(int ga, int gb);
  bool DataStaysInIteration(const std::vector<int>& members);
  bool ConsumerRunsBetween(int ga, int gb, int& consumer);
  std::vector<Kernel> BuildKernels();
  std::vector<BufferId> InternalBuffers(const std::vector<int>& members);

  const LoopProgram& program_;
  const int max_nodes_;
  const int n_;
  std::vector<int> position_;  // node -> place in the unfused order
  std::vector<int> order_;     // place -> node
  // Dependencies in CSR form: the predecessors of v are
  // pred_[pred_offsets_[v] .. pred_offsets_[v+1]), its successors likewise.
  std::vector<int> pred_offsets_, pred_, succ_offsets_, succ_;
  std::vector<std::vector<Load>> loads_;  // distinct loads of each node
  std::vector<std::vector<int>> writers_, readers_;  // per buffer
  // Union-find over nodes; the root holds its group's members in order.
  std::vector<int> parent_;
  std::vector<std::vector<int>> members_;
  std::vector<FusionDecision> decisions_;
  std::vector<int> last_position_;  // per group root: its last member's place
};

Fuser::Fuser(const LoopProgram& program, const Schedule& schedule, int max_nodes)
    : program_(program),
      max_nodes_(max_nodes),
      n_(static_cast<int>(program.nodes.size())),
      position_(n_),
      pred_offsets_(n_ + 1, 0),
      loads_(n_),
      writers_(program.buffers.size()),
      readers_(program.buffers.size()),
      parent_(n_),
      members_(n_),
      last_position_(n_) {
  for (const Kernel& kernel : schedule.kernels) {
    for (int node : kernel.nodes) {
      position_[node] = static_cast<int>(order_.size());
      order_.push_back(node);
    }
  }
  const std::vector<std::pair<int, int>> edges = DependencyEdges(program);
  succ_offsets_.assign(n_ + 1, 0);
  for (const auto& [from, to] : edges) {
    ++pred_offsets_[to + 1];
    ++succ_offsets_[from + 1];
  }
  for (int v = 0; v < n_; ++v) {
    pred_offsets_[v + 1] += pred_offsets_[v];
    succ_offsets_[v + 1] += succ_offsets_[v];
  }
  pred_.resize(edges.size());
  succ_.resize(edges.size());
  std::vector<int> pred_fill(pred_offsets_.begin(), pred_offsets_.end() - 1);
  std::vector<int> succ_fill(succ_offsets_.begin(), succ_offsets_.end() - 1);
  for (const auto& [from, to] : edges) {
    pred_[pred_fill[to]++] = from;
    succ_[succ_fill[from]++] = to;
  }

  for (int v = 0; v < n_; ++v) {
    const ComputeNode& node = program.nodes[v];
    for (const ScalarOp& op : node.body) {
      if (op.kind != ScalarOp::Kind::kLoad) continue;
      // Indirect loads read anywhere: record them with no index.
      const Expr index = op.args.empty() ? op.index : nullptr;
      bool seen = false;
      for (const Load& load : loads_[v]) {
        seen |= load.buffer == op.buffer && load.index == index;
      }
      if (!seen) loads_[v].push_back({op.buffer, index});
    }
    for (const Load& load : loads_[v]) {
      if (readers_[load.buffer].empty() || readers_[load.buffer].back() != v) {
        readers_[load.buffer].push_back(v);
      }
    }
    writers_[node.output].push_back(v);
    parent_[v] = v;
    members_[v] = {v};
    last_position_[v] = position_[v];
  }
}

int Fuser::Find(int node) {
  while (parent_[node] != node) {
    parent_[node] = parent_[parent_[node]];
    node = parent_[node];
  }
  return node;
}

// Every load of a buffer written inside the group must read the value the
// same loop iteration wrote: the buffer has one writer, an earlier member,
// and is read exactly at that writer's store index.
bool Fuser::DataStaysInIteration(const std::vector<int>& members) {
  for (int m : members) {
    for (const Load& load : loads_[m]) {
      for (int w : writers_[load.buffer]) {
        if (std::find(members.begin(), members.end(), w) == members.end()) {
          continue;  // written outside the group
        }
        if (writers_[load.buffer].size() != 1 || position_[w] >= position_[m] ||
            load.index != program_.nodes[w].store_index) {
          return false;
        }
      }
    }
  }
  return true;
}

// Kernels run in the order of their last members' places, and that order
// stays a valid topological order of the fused kernels: merging two groups
// is refused when a kernel that consumes a member would have to run before
// the merged kernel's new place. This also refuses every merge that would
// create a cycle (a cycle needs a consumer of one group that feeds the
// other, which runs before the later group), with no search at all: the
// check reads only the members' direct consumers.
bool Fuser::ConsumerRunsBetween(int ga, int gb, int& consumer) {
  const int last = std::max(last_position_[ga], last_position_[gb]);
  for (int g : {ga, gb}) {
    for (int m : members_[g]) {
      for (int k = succ_offsets_[m]; k < succ_offsets_[m + 1]; ++k) {
        const int s = Find(succ_[k]);
        if (s != ga && s != gb && last_position_[s] < last) {
          consumer = succ_[k];
          return true;
        }
      }
    }
  }
  return false;
}

std::pair<std::string, std::string> Fuser::Refusal(int ga, int gb) {
  const ComputeNode& a = program_.nodes[ga];
  const ComputeNode& b = program_.nodes[gb];
  if (a.ranges != b.ranges) {
    return {"iteration spaces differ",
            absl::StrCat(ShapeToString(a.ranges), " vs ", ShapeToString(b.ranges))};
  }
  const size_t size = members_[ga].size() + members_[gb].size();
  if (static_cast<int>(size) > max_nodes_) {
    return {"kernel too large", absl::StrCat(size, " nodes > ", max_nodes_)};
  }
  std::vector<int> merged = members_[ga];
  merged.insert(merged.end(), members_[gb].begin(), members_[gb].end());
  std::sort(merged.begin(), merged.end(),
            [&](int x, int y) { return position_[x] < position_[y]; });
  if (!DataStaysInIteration(merged)) {
    return {"data crosses loop iterations",
            "a member reads a buffer of another at a different index, or one "
            "with several writers"};
  }
  int consumer = -1;
  if (ConsumerRunsBetween(ga, gb, consumer)) {
    return {"a consumer runs between them",
            absl::StrCat("'", program_.nodes[consumer].name,
                         "' reads one and runs before the other (fusing could "
                         "create a cycle)")};
  }
  return {};
}

void Fuser::TryFuse(int a, int b, const char* kind) {
  int ga = Find(a), gb = Find(b);
  if (ga == gb) return;
  FusionDecision decision{a, b, false, "", ""};
  auto [reason, detail] = Refusal(ga, gb);
  if (!reason.empty()) {
    decision.reason = std::move(reason);
    decision.detail = std::move(detail);
    decisions_.push_back(std::move(decision));
    return;
  }
  if (members_[ga].size() < members_[gb].size()) std::swap(ga, gb);
  std::vector<int>& merged = members_[ga];
  merged.insert(merged.end(), members_[gb].begin(), members_[gb].end());
  std::sort(merged.begin(), merged.end(),
            [&](int x, int y) { return position_[x] < position_[y]; });
  members_[gb].clear();
  members_[gb].shrink_to_fit();
  parent_[gb] = ga;
  last_position_[ga] = std::max(last_position_[ga], last_position_[gb]);
  decision.fused = true;
  decision.reason = kind;
  decisions_.push_back(std::move(decision));
}

std::vector<BufferId> Fuser::InternalBuffers(const std::vector<int>& members) {
  std::vector<BufferId> internal;
  const int group = Find(members.front());
  for (int m : members) {
    const BufferId b = program_.nodes[m].output;
    if (program_.buffers[b].kind != BufferKind::kTemp || writers_[b].size() != 1) continue;
    bool inside = true;
    for (int r : readers_[b]) {
      if (Find(r) != group) inside = false;
    }
    for (int r : readers_[b]) {
      for (const Load& load : loads_[r]) {
        if (load.buffer == b && load.index != program_.nodes[m].store_index) inside = false;
      }
    }
    if (inside) internal.push_back(b);
  }
  return internal;
}

// Orders the groups by their dependencies (Kahn's algorithm on the quotient
// graph, ties by the first member's place).
std::vector<Kernel> Fuser::BuildKernels() {
  std::vector<int> in_degree(n_, 0);
  std::vector<std::vector<int>> successors(n_);
  for (int v = 0; v < n_; ++v) {
    const int gv = Find(v);
    for (int k = pred_offsets_[v]; k < pred_offsets_[v + 1]; ++k) {
      const int gp = Find(pred_[k]);
      if (gp == gv) continue;
      successors[gp].push_back(gv);
      ++in_degree[gv];
    }
  }
  using Entry = std::pair<int, int>;  // (first member's place, group)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (int v = 0; v < n_; ++v) {
    if (Find(v) == v && in_degree[v] == 0) ready.push({position_[members_[v].front()], v});
  }
  std::vector<Kernel> kernels;
  while (!ready.empty()) {
    const int g = ready.top().second;
    ready.pop();
    Kernel kernel;
    kernel.name = absl::StrCat("kernel_", kernels.size());
    kernel.nodes = members_[g];
    kernel.internal = InternalBuffers(members_[g]);
    kernels.push_back(std::move(kernel));
    for (int s : successors[g]) {
      if (--in_degree[s] == 0) ready.push({position_[members_[s].front()], s});
    }
  }
  return kernels;
}

absl::StatusOr<Schedule> Fuser::Run() {
  // Vertical: each node with the producers of what it reads, in order.
  std::vector<int> tried;  // producers already weighed for this node
  for (int v : order_) {
    tried.clear();
    for (const Load& load : loads_[v]) {
      if (writers_[load.buffer].size() != 1) continue;
      const int producer = writers_[load.buffer].front();
      if (std::find(tried.begin(), tried.end(), producer) != tried.end()) continue;
      tried.push_back(producer);
      TryFuse(producer, v, "vertical");
    }
  }
  // Horizontal: consecutive readers of one buffer over the same space.
  for (BufferId b = 0; b < static_cast<BufferId>(readers_.size()); ++b) {
    const std::vector<int>& readers = readers_[b];
    if (readers.size() < 2 || static_cast<int>(readers.size()) > kMaxSiblingReaders) continue;
    for (size_t i = 1; i < readers.size(); ++i) {
      if (program_.nodes[readers[i - 1]].ranges == program_.nodes[readers[i]].ranges) {
        TryFuse(readers[i - 1], readers[i], "horizontal");
      }
    }
  }
  Schedule fused;
  fused.kernels = BuildKernels();
  size_t scheduled = 0;
  for (const Kernel& kernel : fused.kernels) scheduled += kernel.nodes.size();
  if (scheduled != static_cast<size_t>(n_)) {
    return absl::InternalError(absl::StrCat(
        "fusion left ", n_ - scheduled, " compute nodes unscheduled (a cycle "
        "between fused kernels)"));
  }
  fused.decisions = std::move(decisions_);
  return fused;
}

class FusePass : public Pass {
 public:
  explicit FusePass(proto::FuseOptions options) : options_(std::move(options)) {}

  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value() || !module.schedule.has_value()) {
      return absl::FailedPreconditionError(
          "there is no schedule to fuse (run 'lower' and 'schedule' before 'fuse')");
    }
    absl::StatusOr<Schedule> fused = FuseSchedule(*module.loops, *module.schedule, options_);
    if (!fused.ok()) return fused.status();
    const bool changed = fused->kernels.size() != module.schedule->kernels.size();
    module.schedule = *std::move(fused);
    module.source.reset();
    return changed;
  }

 private:
  proto::FuseOptions options_;
};

LOOM_REGISTER_PASS("fuse", "fuse", [](const proto::PassSpec& spec) {
  if (spec.fuse().max_nodes_per_kernel() < 0) {
    return absl::StatusOr<std::unique_ptr<Pass>>(absl::InvalidArgumentError(
        "fuse: max_nodes_per_kernel must not be negative"));
  }
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<FusePass>(spec.fuse()));
});

}  // namespace

absl::StatusOr<Schedule> FuseSchedule(const LoopProgram& program,
                                      const Schedule& schedule,
                                      const proto::FuseOptions& options) {
  size_t scheduled = 0;
  for (const Kernel& kernel : schedule.kernels) {
    if (kernel.nodes.size() != 1) {
      return absl::FailedPreconditionError("fuse expects one compute node per kernel");
    }
    ++scheduled;
  }
  if (scheduled != program.nodes.size()) {
    return absl::InternalError("the schedule does not cover every compute node");
  }
  const int max_nodes = options.max_nodes_per_kernel() > 0 ? options.max_nodes_per_kernel()
                                                            : kDefaultMaxNodesPerKernel;
  return Fuser(program, schedule, max_nodes).Run();
}

}  // namespace loom
