#include "scheduler/fuse.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "passes/pass.h"
#include "scheduler/refine.h"
#include "scheduler/schedule_pass.h"

namespace loom {
namespace {

constexpr int kDefaultMaxNodesPerKernel = 64;
// Buffers read by more nodes than this are not used to find siblings: a
// weight read by every step of an unrolled recurrence would only yield
// candidates that the ordering check refuses.
constexpr int kMaxSiblingReaders = 8;
// A buffer written and read only inside one outer iteration of a kernel is
// kept in a local array of one iteration's slice when the slice is at most
// this large (it then stays in the L1 or L2 cache), else in memory.
constexpr int64_t kMaxLocalBytes = 256 << 10;

int64_t Product(absl::Span<const int64_t> extents) {
  int64_t product = 1;
  for (int64_t extent : extents) product *= extent;
  return product;
}

// The fuser's view of the program: dense per-node and per-buffer tables.
class Fuser {
 public:
  Fuser(LoopProgram& program, const Schedule& schedule, const proto::FuseOptions& options);
  absl::StatusOr<Schedule> Run();

 private:
  struct Load {
    BufferId buffer;
    Expr index;
  };
  // A legal merge: the members in place order, the outer loops they will
  // share and how each member's loops are refined to begin with them.
  struct MergePlan {
    int groups[2];  // the two group roots
    std::vector<int> members;
    std::vector<int64_t> outer;
    Expr outer_position = nullptr;  // row-major position among the outer loops
    std::vector<LoopRefinement> refinements;  // one per member
  };

  int Find(int node);
  void CollectLoads(int node);
  // Tries to merge the groups of a and b; records the decision. Vertical
  // merges may share fewer loops than either group had (outer-loop fusion).
  void TryFuse(int a, int b, const char* kind);
  // Empty and `plan` filled when merging groups `ga` and `gb` is legal,
  // else the reason.
  std::pair<std::string, std::string> Refusal(int ga, int gb, bool vertical,
                                              MergePlan& plan);
  // Fills in the refinements of plan.members to share plan.outer; false
  // when some member's data would cross outer iterations.
  bool RefineMembers(MergePlan& plan);
  bool ReadsWithinOuterIteration(const MergePlan& plan, size_t writer,
                                 size_t reader, Expr index);
  bool ConsumerRunsBetween(int ga, int gb, int& consumer);
  void Merge(int ga, int gb, MergePlan& plan);
  std::vector<Kernel> BuildKernels();
  std::vector<BufferId> InternalBuffers(const std::vector<int>& members,
                                        int outer_loops);

  LoopProgram& program_;
  ExprContext& ctx_;
  const int max_nodes_;
  const bool outer_loop_;     // consumers may share fewer loops
  const bool reshape_aware_;  // loops may split to be shared
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
  std::vector<std::vector<int64_t>> outer_;  // per group root: shared loops
  std::vector<int> slot_;  // per node: its index in the plan weighed now, or -1
};

Fuser::Fuser(LoopProgram& program, const Schedule& schedule,
             const proto::FuseOptions& options)
    : program_(program),
      ctx_(*program.exprs),
      max_nodes_(options.max_nodes_per_kernel() > 0 ? options.max_nodes_per_kernel()
                                                     : kDefaultMaxNodesPerKernel),
      outer_loop_(options.outer_loop()),
      reshape_aware_(options.reshape_aware()),
      n_(static_cast<int>(program.nodes.size())),
      position_(n_),
      pred_offsets_(n_ + 1, 0),
      loads_(n_),
      writers_(program.buffers.size()),
      readers_(program.buffers.size()),
      parent_(n_),
      members_(n_),
      last_position_(n_),
      outer_(n_),
      slot_(n_, -1) {
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
    CollectLoads(v);
    for (const Load& load : loads_[v]) {
      if (readers_[load.buffer].empty() || readers_[load.buffer].back() != v) {
        readers_[load.buffer].push_back(v);
      }
    }
    writers_[program.nodes[v].output].push_back(v);
    parent_[v] = v;
    members_[v] = {v};
    last_position_[v] = position_[v];
    outer_[v] = program.nodes[v].ranges;
  }
}

void Fuser::CollectLoads(int v) {
  loads_[v].clear();
  for (const ScalarOp& op : program_.nodes[v].body) {
    if (op.kind != ScalarOp::Kind::kLoad) continue;
    // Indirect loads read anywhere: record them with no index.
    const Expr index = op.args.empty() ? op.index : nullptr;
    bool seen = false;
    for (const Load& load : loads_[v]) {
      seen |= load.buffer == op.buffer && load.index == index;
    }
    if (!seen) loads_[v].push_back({op.buffer, index});
  }
}

int Fuser::Find(int node) {
  while (parent_[node] != node) {
    parent_[node] = parent_[parent_[node]];
    node = parent_[node];
  }
  return node;
}

// Every load of a buffer written inside the group must read a value the
// same outer iteration wrote: the buffer has one writer, an earlier member,
// and the load stays within the slice that writer stores in one outer
// iteration.
bool Fuser::RefineMembers(MergePlan& plan) {
  plan.refinements.clear();
  for (int m : plan.members) {
    std::optional<LoopRefinement> refinement =
        RefineLeadingLoops(ctx_, program_.nodes[m], plan.outer);
    if (!refinement.has_value()) return false;
    plan.refinements.push_back(*std::move(refinement));
  }
  // Reads within one group that keeps its loops were checked when it formed.
  bool unchanged[2];
  for (int side : {0, 1}) unchanged[side] = outer_[plan.groups[side]] == plan.outer;
  auto checked_before = [&](int w, int r) {
    const int group = Find(w);
    return group == Find(r) && unchanged[group == plan.groups[0] ? 0 : 1];
  };
  const std::vector<int>& members = plan.members;
  for (size_t r = 0; r < members.size(); ++r) {
    for (const Load& load : loads_[members[r]]) {
      for (int w : writers_[load.buffer]) {
        const int writer = slot_[w];
        if (writer < 0 || checked_before(w, members[r])) continue;
        if (writers_[load.buffer].size() != 1 || writer >= static_cast<int>(r) ||
            load.index == nullptr ||
            !ReadsWithinOuterIteration(plan, writer, r, load.index)) {
          return false;
        }
      }
    }
  }
  return true;
}

// The writer stores one contiguous slice per outer iteration (row-major
// over its inner loops) and the reader's index, divided by the slice size,
// is that outer iteration's row-major position: decided on the simplified
// expressions, which are equal exactly when their pointers are.
bool Fuser::ReadsWithinOuterIteration(const MergePlan& plan, size_t writer,
                                      size_t reader, Expr index) {
  const LoopRefinement& w = plan.refinements[writer];
  const LoopRefinement& r = plan.refinements[reader];
  const ComputeNode& writer_node = program_.nodes[plan.members[writer]];
  const ComputeNode& reader_node = program_.nodes[plan.members[reader]];
  const Expr store = RefineExpr(ctx_, w, writer_node.store_index);
  const Expr load = RefineExpr(ctx_, r, index);
  const int loops = static_cast<int>(plan.outer.size());
  const absl::Span<const int64_t> inner =
      absl::MakeConstSpan(w.identity ? writer_node.ranges : w.ranges).subspan(loops);
  const int64_t slice = Product(inner);
  if (slice == 1) return load == store;
  const std::vector<int64_t> writer_extents =
      w.identity ? writer_node.AllRanges() : w.extents;
  const std::vector<int64_t> reader_extents =
      r.identity ? reader_node.AllRanges() : r.extents;
  return ctx_.Simplify(ctx_.FloorDiv(load, slice), reader_extents) == plan.outer_position &&
         ctx_.Simplify(ctx_.FloorDiv(store, slice), writer_extents) == plan.outer_position &&
         ctx_.Simplify(ctx_.Mod(store, slice), writer_extents) ==
             RowMajorOffset(ctx_, inner, loops);
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

std::pair<std::string, std::string> Fuser::Refusal(int ga, int gb, bool vertical,
                                                   MergePlan& plan) {
  const std::vector<int64_t>& a = outer_[ga];
  const std::vector<int64_t>& b = outer_[gb];
  // Siblings only fuse over the same loops; a consumer may share a prefix
  // of a refinement of both groups' loops.
  // Without outer-loop fusion, consumers fuse like siblings.
  const bool outer = vertical && outer_loop_;
  std::vector<int64_t> shared;
  if (a == b || outer) shared = CommonLoopPrefix(a, b, reshape_aware_);
  // A group of one outer iteration (a reduction to one row, say) shares
  // the empty prefix with its consumer: the kernel has no outer loops.
  const bool single = Product(a) == 1 || Product(b) == 1;
  if (a != b && ((shared.empty() && !(outer && single)) || !outer)) {
    return {"iteration spaces differ",
            absl::StrCat(ShapeToString(a), " vs ", ShapeToString(b))};
  }
  const size_t size = members_[ga].size() + members_[gb].size();
  if (static_cast<int>(size) > max_nodes_) {
    return {"kernel too large", absl::StrCat(size, " nodes > ", max_nodes_)};
  }
  int consumer = -1;
  if (ConsumerRunsBetween(ga, gb, consumer)) {
    return {"a consumer runs between them",
            absl::StrCat("'", program_.nodes[consumer].name,
                         "' reads one and runs before the other (fusing could "
                         "create a cycle)")};
  }
  plan.groups[0] = ga;
  plan.groups[1] = gb;
  plan.members = members_[ga];
  plan.members.insert(plan.members.end(), members_[gb].begin(), members_[gb].end());
  std::sort(plan.members.begin(), plan.members.end(),
            [&](int x, int y) { return position_[x] < position_[y]; });
  // The most shared loops first; a consumer may fall back to fewer.
  for (size_t i = 0; i < plan.members.size(); ++i) slot_[plan.members[i]] = static_cast<int>(i);
  const size_t fewest = outer ? std::min<size_t>(1, shared.size()) : shared.size();
  bool legal = false;
  for (size_t loops = shared.size(); !legal; --loops) {
    plan.outer.assign(shared.begin(), shared.begin() + loops);
    plan.outer_position = RowMajorOffset(ctx_, plan.outer, 0);
    legal = RefineMembers(plan);
    if (loops == fewest) break;
  }
  for (int m : plan.members) slot_[m] = -1;
  if (legal) return {};
  return {"data crosses loop iterations",
          "a member reads a buffer of another outside the outer iteration "
          "that wrote it, or one with several writers"};
}

void Fuser::TryFuse(int a, int b, const char* kind) {
  int ga = Find(a), gb = Find(b);
  if (ga == gb) return;
  FusionDecision decision{a, b, false, "", ""};
  MergePlan plan;
  auto [reason, detail] = Refusal(ga, gb, std::string(kind) == "vertical", plan);
  if (!reason.empty()) {
    decision.reason = std::move(reason);
    decision.detail = std::move(detail);
    decisions_.push_back(std::move(decision));
    return;
  }
  Merge(ga, gb, plan);
  decision.fused = true;
  decision.reason = kind;
  decisions_.push_back(std::move(decision));
}

// Rewrites the members whose loops were refined and joins the groups.
void Fuser::Merge(int ga, int gb, MergePlan& plan) {
  for (size_t i = 0; i < plan.members.size(); ++i) {
    if (plan.refinements[i].identity) continue;
    ApplyRefinement(ctx_, plan.refinements[i], program_.nodes[plan.members[i]]);
    CollectLoads(plan.members[i]);
  }
  if (members_[ga].size() < members_[gb].size()) std::swap(ga, gb);
  members_[ga] = std::move(plan.members);
  members_[gb].clear();
  members_[gb].shrink_to_fit();
  parent_[gb] = ga;
  last_position_[ga] = std::max(last_position_[ga], last_position_[gb]);
  outer_[ga] = std::move(plan.outer);
  outer_[gb].clear();
}

// Temporaries read only inside their kernel: by the legality rule, only
// within the outer iteration that wrote them.
std::vector<BufferId> Fuser::InternalBuffers(const std::vector<int>& members,
                                             int outer_loops) {
  std::vector<BufferId> internal;
  const int group = Find(members.front());
  for (int m : members) {
    const ComputeNode& node = program_.nodes[m];
    const Buffer& buffer = program_.buffers[node.output];
    if (buffer.kind != BufferKind::kTemp || writers_[node.output].size() != 1) continue;
    const int64_t slice = Product(absl::MakeConstSpan(node.ranges).subspan(outer_loops));
    if (slice * DTypeSize(buffer.dtype) > kMaxLocalBytes) continue;
    bool inside = true;
    for (int r : readers_[node.output]) inside &= Find(r) == group;
    if (inside) internal.push_back(node.output);
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
    kernel.outer_loops = static_cast<int>(outer_[g].size());
    kernel.internal = InternalBuffers(members_[g], kernel.outer_loops);
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
      if (outer_[Find(readers[i - 1])] == outer_[Find(readers[i])]) {
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

absl::StatusOr<Schedule> FuseSchedule(LoopProgram& program,
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
  return Fuser(program, schedule, options).Run();
}

}  // namespace loom
