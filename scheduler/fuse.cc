#include "scheduler/fuse.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/status_macros.h"
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
// Groups of at most this many outer iterations whose loops begin with one
// of a single iteration may fuse sharing no loop (Weigh).
constexpr int64_t kFewOuterIterations = 4096;

// `num_lists` lists of the (list, item) pairs that for_each_pair(emit)
// passes to emit, each list in the order of its pairs. for_each_pair runs
// twice: once to count, once to fill.
template <typename ForEachPair>
IntLists BuildLists(int num_lists, const ForEachPair& for_each_pair) {
  IntLists lists;
  lists.offsets.assign(num_lists + 1, 0);
  for_each_pair([&](int list, int) { ++lists.offsets[list + 1]; });
  for (int i = 0; i < num_lists; ++i) lists.offsets[i + 1] += lists.offsets[i];
  lists.items.resize(lists.offsets[num_lists]);
  std::vector<int> next(lists.offsets.begin(), lists.offsets.end() - 1);
  for_each_pair([&](int list, int item) { lists.items[next[list]++] = item; });
  return lists;
}

// A question ReadsWithinOuterIteration asks of a load's or a store's
// index over loops of `extents`, the first `loops` of them the outer ones,
// at row-major position `outer_position`: does the index divided by
// `slice` give that position, and, for a store, its remainder the position
// among its inner pointwise loops (the next `inner_loops`)?
struct SliceQuestion {
  Expr index;
  int64_t slice;
  Expr outer_position;
  int loops;
  int inner_loops;  // -1 for a load: its remainder is not asked about
  absl::InlinedVector<int64_t, 8> extents;

  template <typename H>
  friend H AbslHashValue(H h, const SliceQuestion& q) {
    return H::combine(std::move(h), q.index, q.slice, q.outer_position, q.loops, q.inner_loops,
                      q.extents);
  }
  friend bool operator==(const SliceQuestion& a, const SliceQuestion& b) {
    return a.index == b.index && a.slice == b.slice && a.outer_position == b.outer_position &&
           a.loops == b.loops && a.inner_loops == b.inner_loops && a.extents == b.extents;
  }
};

bool StartsWith(absl::Span<const int64_t> extents, absl::Span<const int64_t> prefix) {
  return extents.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), extents.begin());
}

// The index a load reads at, or nullptr for an indirect load (it may read
// anywhere).
Expr DirectIndex(const ScalarOp& load) { return load.args.empty() ? load.index : nullptr; }

// The fuser's view of the program: dense per-node and per-buffer tables
// (a program has about a million of each at the scale loom targets).
class Fuser {
 public:
  Fuser(LoopProgram& program, const Schedule& schedule, const proto::FuseOptions& options);
  absl::StatusOr<Schedule> Run();

 private:
  // A legal merge: the outer loops the two groups will share, and how the
  // members whose loops change are refined to begin with them.
  struct MergePlan {
    int groups[2];  // the two group roots
    // Whether each group shares exactly `outer` already: its members then
    // begin with those loops, and its own reads were checked when it formed.
    bool keeps_loops[2];
    std::vector<int64_t> outer;
    Expr outer_position = nullptr;  // row-major position among the outer loops
    // The members whose loops split or drop (refinement_of_ indexes this).
    std::vector<std::pair<int, LoopRefinement>> refined;
  };

  int Find(int node);
  absl::Span<const int64_t> Outer(int group) const;
  // Tries to merge the groups of a and b; records the decision. Vertical
  // merges may share fewer loops than either group had (outer-loop fusion).
  void TryFuse(int a, int b, FusionReason kind);
  // True when merging groups `ga` and `gb` is legal, with plan_ filled in;
  // else false, with the refusal in `decision`.
  bool Weigh(int ga, int gb, bool vertical, FusionDecision& decision);
  bool ConsumerRunsBetween(int ga, int gb, int& consumer);
  // Fills in plan_.refined for the members to share plan_.outer; false
  // when some member's data would cross outer iterations.
  bool RefineMembers();
  bool ReadsOfMemberAreLegal(int reader);
  bool ReadsFromOtherGroupAreLegal(int group, int other);
  bool ReadIsLegal(int writer, int reader, BufferId buffer, Expr index);
  bool ReadsWithinOuterIteration(int writer, int reader, Expr index);
  const LoopRefinement& RefinementOf(int node) const;
  absl::Span<const int64_t> RefinedExtents(int node, std::vector<int64_t>& scratch) const;
  bool IndexInSlice(Expr index, int64_t slice, int inner_loops, absl::Span<const int64_t> extents);
  void ClearRefinements();
  void Merge();
  int MergeMemberLists(int ga, int gb);
  std::vector<Kernel> BuildKernels();
  // Whether the group's members read no buffer (fills, iotas).
  bool ReadsNoBuffer(int group) const;
  // Whether `call` is a gemm call that touches none of the buffers the
  // group writes.
  bool IsGemmApartFrom(int call, int group) const;
  Kernel MakeKernel(int group, int index);

  LoopProgram& program_;
  ExprContext& ctx_;
  const int max_nodes_;
  const bool outer_loop_;     // consumers may share fewer loops
  const bool reshape_aware_;  // loops may split to be shared
  const int n_;
  std::vector<int> order_;  // place -> node
  IntLists loaded_;         // per node: the buffers it loads
  IntLists successors_;     // per node: the nodes that depend on it, in place order
  // Per node: the place of its first dependent, or n_ when it has none.
  // ConsumerRunsBetween mostly learns from this alone that none of a
  // member's dependents runs early, without reading its list.
  std::vector<int> first_successor_place_;
  IntLists writers_, readers_;  // per buffer, in node order
  // Per buffer: its one writer, or -1 when it has none or several. Most
  // questions are about the sole writer, and this answers them from one
  // place rather than from writers_'s offsets and then its items.
  std::vector<int> sole_writer_;
  // Union-find over nodes. A group's members form a list in place order,
  // threaded through next_member from its root's first_member. Per group
  // root: the loops its members share (Outer), outer_loops extents from
  // outer_extents_[outer_begin]. A group of one node shares all its loops;
  // the members of a larger group all begin with the loops it shares
  // (refinement makes them so). Kept apart from the nodes so that weighing
  // a candidate reads no node.
  struct NodeState {
    int parent;
    int position;       // place in the unfused order
    int last_position;  // per group root: its last member's place
    int size;           // per group root: its members
    int first_member;   // per group root
    int next_member;
    int outer_begin;  // per group root
    int outer_loops;  // per group root
  };
  // One struct per node rather than one table per field: weighing a
  // candidate reads a few nodes far apart in a big program (the two groups,
  // the consumers of one), and each then costs one cache miss, not one per
  // table.
  std::vector<NodeState> state_;
  std::vector<int64_t> outer_extents_;
  MergePlan plan_;                  // the merge weighed now
  std::vector<int> refinement_of_;  // per node: its place in plan_.refined, or -1
  const LoopRefinement identity_{/*identity=*/true};
  std::vector<int64_t> writer_extents_, reader_extents_;  // scratch
  RefinementCache refinements_;
  absl::flat_hash_map<SliceQuestion, bool> slice_answers_;
  std::vector<FusionDecision> decisions_;
  std::vector<int64_t> refused_spaces_;  // Schedule::refused_spaces
  // The schedule's kernels whose loop runs in order (Kernel::ordered_loop),
  // and per node whether it is in one: nothing fuses with them.
  std::vector<Kernel> ordered_;
  std::vector<bool> in_ordered_;
};

Fuser::Fuser(LoopProgram& program, const Schedule& schedule, const proto::FuseOptions& options)
    : program_(program),
      ctx_(*program.exprs),
      max_nodes_(options.max_nodes_per_kernel() > 0 ? options.max_nodes_per_kernel()
                                                    : kDefaultMaxNodesPerKernel),
      outer_loop_(options.outer_loop()),
      reshape_aware_(options.reshape_aware()),
      n_(static_cast<int>(program.nodes.size())),
      state_(n_),
      refinement_of_(n_, -1),
      refinements_(ctx_) {
  order_.reserve(n_);
  for (const Kernel& kernel : schedule.kernels) {
    for (int node : kernel.nodes) {
      state_[node].position = static_cast<int>(order_.size());
      order_.push_back(node);
    }
    if (kernel.ordered_loop >= 0) ordered_.push_back(kernel);
  }
  loaded_ = LoadedBuffers(program);
  successors_ = Dependencies(program, loaded_);
  // Dependents come in program order; ConsumerRunsBetween wants them in
  // place order, which differs only when the schedule reorders the program.
  if (!std::is_sorted(order_.begin(), order_.end())) {
    const auto by_place = [&](int x, int y) { return state_[x].position < state_[y].position; };
    for (int v = 0; v < n_; ++v) {
      std::sort(successors_.items.begin() + successors_.offsets[v],
                successors_.items.begin() + successors_.offsets[v + 1], by_place);
    }
  }
  first_successor_place_.resize(n_);
  for (int v = 0; v < n_; ++v) {
    const absl::Span<const int> successors = successors_[v];
    first_successor_place_[v] = successors.empty() ? n_ : state_[successors.front()].position;
  }
  const int num_buffers = static_cast<int>(program.buffers.size());
  writers_ = BuildLists(num_buffers, [&](auto emit) {
    for (int v = 0; v < n_; ++v) emit(program.nodes[v].output, v);
  });
  sole_writer_.resize(num_buffers);
  for (int b = 0; b < num_buffers; ++b) {
    sole_writer_[b] = writers_[b].size() == 1 ? writers_[b][0] : -1;
  }
  readers_ = BuildLists(num_buffers, [&](auto emit) {
    for (int v = 0; v < n_; ++v) {
      for (BufferId buffer : loaded_[v]) emit(buffer, v);
    }
  });
  size_t extents = 0;
  for (const ComputeNode& node : program.nodes) extents += node.ranges.size();
  outer_extents_.reserve(extents);
  for (int v = 0; v < n_; ++v) {
    NodeState& state = state_[v];
    state.parent = v;
    state.last_position = state.position;
    state.size = 1;
    state.first_member = v;
    state.next_member = -1;
    const std::vector<int64_t>& ranges = program.nodes[v].ranges;
    state.outer_begin = static_cast<int>(outer_extents_.size());
    state.outer_loops = static_cast<int>(ranges.size());
    outer_extents_.insert(outer_extents_.end(), ranges.begin(), ranges.end());
  }
  // A kernel whose loop runs in order is a group as it is, and stays so.
  in_ordered_.assign(n_, false);
  for (const Kernel& kernel : ordered_) {
    const int root = kernel.nodes[0];
    for (size_t i = 0; i < kernel.nodes.size(); ++i) {
      const int m = kernel.nodes[i];
      in_ordered_[m] = true;
      state_[m].parent = root;
      state_[m].next_member = i + 1 < kernel.nodes.size() ? kernel.nodes[i + 1] : -1;
    }
    state_[root].size = static_cast<int>(kernel.nodes.size());
    state_[root].last_position = state_[kernel.nodes.back()].position;
    state_[root].outer_loops = kernel.outer_loops;
  }
}

int Fuser::Find(int node) {
  while (state_[node].parent != node) {
    state_[node].parent = state_[state_[node].parent].parent;
    node = state_[node].parent;
  }
  return node;
}

absl::Span<const int64_t> Fuser::Outer(int group) const {
  return absl::MakeConstSpan(outer_extents_)
      .subspan(state_[group].outer_begin, state_[group].outer_loops);
}

// Every load of a buffer written inside the group must read a value the
// same outer iteration wrote: the buffer has one writer, an earlier member,
// and the load stays within the slice that writer stores in one outer
// iteration. Reads within a group that keeps its loops were checked when it
// formed, so only the members of a group whose loops change are refined
// and have all their reads checked; a group that keeps its loops has only
// its reads of the other group's buffers checked.
bool Fuser::RefineMembers() {
  ClearRefinements();
  for (int side : {0, 1}) {
    const int group = plan_.groups[side];
    plan_.keeps_loops[side] = Outer(group) == absl::MakeConstSpan(plan_.outer);
    // Already refined: the members begin with the shared loops. (A node on
    // its own still needs the check for loops without iterations.)
    if (plan_.keeps_loops[side] && state_[group].size > 1) continue;
    for (int m = state_[group].first_member; m >= 0; m = state_[m].next_member) {
      std::optional<LoopRefinement> refinement =
          RefineLeadingLoops(ctx_, program_.nodes[m], plan_.outer);
      if (!refinement.has_value()) return false;
      if (refinement->identity) continue;
      refinement_of_[m] = static_cast<int>(plan_.refined.size());
      plan_.refined.emplace_back(m, *std::move(refinement));
    }
  }
  for (int side : {0, 1}) {
    const int group = plan_.groups[side];
    if (plan_.keeps_loops[side]) {
      if (!ReadsFromOtherGroupAreLegal(group, plan_.groups[1 - side])) {
        return false;
      }
      continue;
    }
    for (int m = state_[group].first_member; m >= 0; m = state_[m].next_member) {
      if (!ReadsOfMemberAreLegal(m)) return false;
    }
  }
  return true;
}

// Every load of `reader` from a buffer that a member of either group writes.
bool Fuser::ReadsOfMemberAreLegal(int reader) {
  for (const ScalarOp& op : program_.nodes[reader].body) {
    if (op.kind != ScalarOp::Kind::kLoad) continue;
    for (int writer : writers_[op.buffer]) {
      const int group = Find(writer);
      if (group != plan_.groups[0] && group != plan_.groups[1]) continue;
      if (!ReadIsLegal(writer, reader, op.buffer, DirectIndex(op))) {
        return false;
      }
    }
  }
  return true;
}

// Every load by a member of `group` from a buffer that a member of `other`
// writes, found from the writers' side.
bool Fuser::ReadsFromOtherGroupAreLegal(int group, int other) {
  for (int writer = state_[other].first_member; writer >= 0; writer = state_[writer].next_member) {
    const BufferId buffer = program_.nodes[writer].output;
    for (int reader : readers_[buffer]) {
      if (Find(reader) != group) continue;
      for (const ScalarOp& op : program_.nodes[reader].body) {
        if (op.kind != ScalarOp::Kind::kLoad || op.buffer != buffer) continue;
        if (!ReadIsLegal(writer, reader, buffer, DirectIndex(op))) return false;
      }
    }
  }
  return true;
}

bool Fuser::ReadIsLegal(int writer, int reader, BufferId buffer, Expr index) {
  return sole_writer_[buffer] == writer && state_[writer].position < state_[reader].position &&
         index != nullptr && ReadsWithinOuterIteration(writer, reader, index);
}

const LoopRefinement& Fuser::RefinementOf(int node) const {
  const int place = refinement_of_[node];
  return place < 0 ? identity_ : plan_.refined[place].second;
}

// Extents of all the node's loops once refined: pointwise, then reduction.
absl::Span<const int64_t> Fuser::RefinedExtents(int node, std::vector<int64_t>& scratch) const {
  const LoopRefinement& refinement = RefinementOf(node);
  if (!refinement.identity) return refinement.extents;
  const ComputeNode& n = program_.nodes[node];
  scratch.assign(n.ranges.begin(), n.ranges.end());
  scratch.insert(scratch.end(), n.reduction_ranges.begin(), n.reduction_ranges.end());
  return scratch;
}

// The writer stores one contiguous slice per outer iteration (row-major
// over its inner loops) and the reader's index, divided by the slice size,
// is that outer iteration's row-major position: decided on the simplified
// expressions, which are equal exactly when their pointers are.
bool Fuser::ReadsWithinOuterIteration(int writer, int reader, Expr index) {
  const LoopRefinement& w = RefinementOf(writer);
  const ComputeNode& writer_node = program_.nodes[writer];
  const Expr store = refinements_.Refine(w, writer_node.store_index);
  const Expr load = refinements_.Refine(RefinementOf(reader), index);
  const int loops = static_cast<int>(plan_.outer.size());
  const int pointwise = static_cast<int>(w.identity ? writer_node.ranges.size() : w.ranges.size());
  const int inner_loops = pointwise - loops;
  const absl::Span<const int64_t> writer_extents = RefinedExtents(writer, writer_extents_);
  const int64_t slice = NumElements(writer_extents.subspan(loops, inner_loops));
  if (slice == 1) return load == store;
  return IndexInSlice(load, slice, -1, RefinedExtents(reader, reader_extents_)) &&
         IndexInSlice(store, slice, inner_loops, writer_extents);
}

// Remembered: the steps of an unrolled recurrence ask the same questions of
// the same (hash-consed) expressions.
bool Fuser::IndexInSlice(Expr index, int64_t slice, int inner_loops,
                         absl::Span<const int64_t> extents) {
  const int loops = static_cast<int>(plan_.outer.size());
  SliceQuestion question{index, slice,       plan_.outer_position,
                         loops, inner_loops, {extents.begin(), extents.end()}};
  auto [answer, inserted] = slice_answers_.try_emplace(std::move(question), false);
  if (!inserted) return answer->second;
  bool in_slice = ctx_.Simplify(ctx_.FloorDiv(index, slice), extents) == plan_.outer_position;
  if (in_slice && inner_loops >= 0) {
    in_slice = ctx_.Simplify(ctx_.Mod(index, slice), extents) ==
               RowMajorOffset(ctx_, extents.subspan(loops, inner_loops), loops);
  }
  answer->second = in_slice;
  return in_slice;
}

void Fuser::ClearRefinements() {
  for (const auto& [node, refinement] : plan_.refined) {
    refinement_of_[node] = -1;
  }
  plan_.refined.clear();
}

// Kernels run in the order of their last members' places, and that order
// stays a valid topological order of the fused kernels: merging two groups
// is refused when a kernel that consumes a member would have to run before
// the merged kernel's new place. This also refuses every merge that would
// create a cycle (a cycle needs a consumer of one group that feeds the
// other, which runs before the later group), with no search at all: the
// check reads only the members' direct consumers. Since the order is
// topological, every consumer of the later group runs after it already,
// and only consumers of the earlier group placed before the later group's
// last member can run between; successors_ lists them first.
bool Fuser::ConsumerRunsBetween(int ga, int gb, int& consumer) {
  const bool a_first = state_[ga].last_position < state_[gb].last_position;
  const int earlier = a_first ? ga : gb;
  const int later = a_first ? gb : ga;
  const int last = state_[later].last_position;
  for (int m = state_[earlier].first_member; m >= 0; m = state_[m].next_member) {
    if (first_successor_place_[m] >= last) continue;
    for (int s : successors_[m]) {
      if (state_[s].position >= last) break;
      const int group = Find(s);
      if (group != earlier && group != later && state_[group].last_position < last) {
        consumer = s;
        return true;
      }
    }
  }
  return false;
}

bool Fuser::Weigh(int ga, int gb, bool vertical, FusionDecision& decision) {
  const absl::Span<const int64_t> a = Outer(ga);
  const absl::Span<const int64_t> b = Outer(gb);
  // Siblings only fuse over the same loops; a consumer may share a prefix
  // of a refinement of both groups' loops.
  // Without outer-loop fusion, consumers fuse like siblings.
  const bool outer = vertical && outer_loop_;
  std::vector<int64_t> shared;
  if (a == b || outer) shared = CommonLoopPrefix(a, b, reshape_aware_);
  // A group of one outer iteration (a reduction to one row, say) shares
  // the empty prefix with its consumer: the kernel has no outer loops. So
  // may a group whose outer loops begin with one of a single iteration (a
  // batch of one), which the shared prefix skips: a recurrence's step on a
  // batch of one, whose gates read its product across the hidden units
  // (bilstm_classifier: 610 kernels, 190 so, 0.53 -> 0.38 ms). Only
  // small groups: large ones keep outer loops for the threads to share.
  const bool single = NumElements(a) == 1 || NumElements(b) == 1;
  const bool batch_of_one = ((!a.empty() && a[0] == 1) || (!b.empty() && b[0] == 1)) &&
                            std::max(NumElements(a), NumElements(b)) <= kFewOuterIterations;
  if (a != b && ((shared.empty() && !(outer && (single || batch_of_one))) || !outer)) {
    decision.reason = FusionReason::kIterationSpacesDiffer;
    decision.specifics[0] = static_cast<int32_t>(refused_spaces_.size());
    for (absl::Span<const int64_t> space : {a, b}) {
      refused_spaces_.push_back(static_cast<int64_t>(space.size()));
      refused_spaces_.insert(refused_spaces_.end(), space.begin(), space.end());
    }
    return false;
  }
  const int size = state_[ga].size + state_[gb].size;
  if (size > max_nodes_) {
    decision.reason = FusionReason::kKernelTooLarge;
    decision.specifics[0] = size;
    decision.specifics[1] = max_nodes_;
    return false;
  }
  int consumer = -1;
  if (ConsumerRunsBetween(ga, gb, consumer)) {
    decision.reason = FusionReason::kConsumerRunsBetween;
    decision.specifics[0] = consumer;
    return false;
  }
  plan_.groups[0] = ga;
  plan_.groups[1] = gb;
  // The most shared loops first; a consumer may fall back to fewer.
  const size_t fewest = !outer         ? shared.size()
                        : batch_of_one ? 0
                                       : std::min<size_t>(1, shared.size());
  for (size_t loops = shared.size();; --loops) {
    plan_.outer.assign(shared.begin(), shared.begin() + loops);
    plan_.outer_position = RowMajorOffset(ctx_, plan_.outer, 0);
    if (RefineMembers()) return true;
    if (loops == fewest) break;
  }
  ClearRefinements();
  decision.reason = FusionReason::kDataCrossesIterations;
  return false;
}

void Fuser::TryFuse(int a, int b, FusionReason kind) {
  const int ga = Find(a), gb = Find(b);
  if (ga == gb) return;
  FusionDecision decision{a, b, kind};
  for (int node : {a, b}) {
    if (in_ordered_[node]) {
      decision.reason = FusionReason::kInOrderedLoop;
      decision.specifics[0] = node;
      decisions_.push_back(decision);
      return;
    }
  }
  // A library call never joins a group, so its group is itself.
  for (int node : {a, b}) {
    if (program_.nodes[node].extern_op != ExternOp::kNone) {
      decision.reason = FusionReason::kExternCall;
      decision.specifics[0] = node;
      decisions_.push_back(decision);
      return;
    }
  }
  if (Weigh(ga, gb, kind == FusionReason::kVertical, decision)) Merge();
  decisions_.push_back(decision);
}

// Rewrites the members whose loops were refined and joins the groups.
void Fuser::Merge() {
  for (auto& [node, refinement] : plan_.refined) {
    refinements_.Apply(refinement, program_.nodes[node]);
  }
  ClearRefinements();
  int ga = plan_.groups[0], gb = plan_.groups[1];
  if (state_[ga].size < state_[gb].size) std::swap(ga, gb);
  state_[ga].first_member = MergeMemberLists(ga, gb);
  state_[gb].parent = ga;
  state_[ga].size += state_[gb].size;
  state_[ga].last_position = std::max(state_[ga].last_position, state_[gb].last_position);
  // The shared loops are mostly a prefix of one group's: stored once.
  const absl::Span<const int64_t> outer = plan_.outer;
  if (!StartsWith(Outer(ga), outer)) {
    if (StartsWith(Outer(gb), outer)) {
      state_[ga].outer_begin = state_[gb].outer_begin;
    } else {
      state_[ga].outer_begin = static_cast<int>(outer_extents_.size());
      outer_extents_.insert(outer_extents_.end(), outer.begin(), outer.end());
    }
  }
  state_[ga].outer_loops = static_cast<int>(outer.size());
}

// The member lists of groups ga and gb (each in place order) as one list in
// place order. Most merges join a group to one that lies wholly before it
// (a consumer to its producers): the later list is then appended to the
// earlier one's last member, found by its place, instead of walking both.
int Fuser::MergeMemberLists(int ga, int gb) {
  // Appends the later group's list to the earlier's, if it lies wholly after.
  auto append = [&](int earlier, int later) {
    const int first = state_[later].first_member;
    const int last_place = state_[earlier].last_position;
    if (last_place >= state_[first].position) return false;
    state_[order_[last_place]].next_member = first;
    return true;
  };
  if (append(ga, gb)) return state_[ga].first_member;
  if (append(gb, ga)) return state_[gb].first_member;
  int a = state_[ga].first_member, b = state_[gb].first_member;
  int head = -1;
  int* tail = &head;
  while (a >= 0 && b >= 0) {
    int& earlier = state_[a].position < state_[b].position ? a : b;
    *tail = earlier;
    tail = &state_[earlier].next_member;
    earlier = state_[earlier].next_member;
  }
  *tail = a >= 0 ? a : b;
  return head;
}

// The kernel of `group`. Its internal buffers are the temporaries read only
// inside it: by the legality rule, only within the outer iteration that
// wrote them.
Kernel Fuser::MakeKernel(int group, int index) {
  Kernel kernel;
  kernel.name = KernelName(index);
  kernel.outer_loops = state_[group].outer_loops;
  if (in_ordered_[group]) {
    for (const Kernel& ordered : ordered_) {
      if (ordered.nodes[0] == group) kernel.ordered_loop = ordered.ordered_loop;
    }
  }
  for (int m = state_[group].first_member; m >= 0; m = state_[m].next_member) {
    kernel.nodes.push_back(m);
    const ComputeNode& node = program_.nodes[m];
    const Buffer& buffer = program_.buffers[node.output];
    if (buffer.kind != BufferKind::kTemp || sole_writer_[node.output] != m) {
      continue;
    }
    const int64_t slice = NumElements(absl::MakeConstSpan(node.ranges).subspan(kernel.outer_loops));
    if (SaturatingMul(slice, DTypeSize(buffer.dtype)) > kMaxLocalBytes) continue;
    bool inside = true;
    for (int r : readers_[node.output]) inside &= Find(r) == group;
    if (inside) kernel.internal.push_back(node.output);
  }
  return kernel;
}

// Orders the groups by their dependencies (Kahn's algorithm on the quotient
// graph, ties by the first member's place).
std::vector<Kernel> Fuser::BuildKernels() {
  // From here on, every node's parent is its root.
  for (int v = 0; v < n_; ++v) state_[v].parent = Find(v);
  const IntLists successors = BuildLists(n_, [&](auto emit) {
    for (int v = 0; v < n_; ++v) {
      const int group = state_[v].parent;
      for (int s : successors_[v]) {
        if (group != state_[s].parent) emit(group, state_[s].parent);
      }
    }
  });
  std::vector<int> in_degree(n_, 0);
  for (int g : successors.items) ++in_degree[g];
  using Entry = std::pair<int, int>;  // (first member's place, group)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (int v = 0; v < n_; ++v) {
    if (state_[v].parent == v && in_degree[v] == 0) {
      ready.push({state_[state_[v].first_member].position, v});
    }
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int g = ready.top().second;
    ready.pop();
    order.push_back(g);
    for (int s : successors[g]) {
      if (--in_degree[s] == 0) {
        ready.push({state_[state_[s].first_member].position, s});
      }
    }
  }
  // A gemm call runs the kernel right after it as its epilogue (the C++
  // backend's PrintGemmWithEpilogue), while the product is in the caches;
  // a kernel that reads nothing between them (a pad's fill, which the
  // lowering places after the product whose consumer writes the pad's
  // interior) goes first.
  for (size_t i = 1; i < order.size(); ++i) {
    if (ReadsNoBuffer(order[i]) && IsGemmApartFrom(order[i - 1], order[i])) {
      std::swap(order[i - 1], order[i]);
    }
  }
  std::vector<Kernel> kernels;
  for (int g : order) kernels.push_back(MakeKernel(g, static_cast<int>(kernels.size())));
  return kernels;
}

bool Fuser::ReadsNoBuffer(int group) const {
  for (int m = state_[group].first_member; m >= 0; m = state_[m].next_member) {
    if (!loaded_[m].empty()) return false;
  }
  return true;
}

bool Fuser::IsGemmApartFrom(int call, int group) const {
  const ComputeNode& node = program_.nodes[call];  // a call is a group of one
  if (node.extern_op != ExternOp::kGemm) return false;
  const absl::Span<const int> read = loaded_[call];
  for (int m = state_[group].first_member; m >= 0; m = state_[m].next_member) {
    const BufferId written = program_.nodes[m].output;
    if (written == node.output || std::find(read.begin(), read.end(), written) != read.end()) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<Schedule> Fuser::Run() {
  // Vertical: each node with the producers of what it reads, in order.
  std::vector<int> producers;
  for (int v : order_) {
    producers.clear();
    for (BufferId buffer : loaded_[v]) {
      const int producer = sole_writer_[buffer];
      if (producer < 0) continue;
      if (std::find(producers.begin(), producers.end(), producer) == producers.end()) {
        producers.push_back(producer);
      }
    }
    for (int producer : producers) {
      TryFuse(producer, v, FusionReason::kVertical);
    }
  }
  // Horizontal: consecutive readers of one buffer over the same space.
  for (BufferId b = 0; b < static_cast<BufferId>(program_.buffers.size()); ++b) {
    const absl::Span<const int> readers = readers_[b];
    if (readers.size() < 2 || static_cast<int>(readers.size()) > kMaxSiblingReaders) continue;
    for (size_t i = 1; i < readers.size(); ++i) {
      if (Outer(Find(readers[i - 1])) == Outer(Find(readers[i]))) {
        TryFuse(readers[i - 1], readers[i], FusionReason::kHorizontal);
      }
    }
  }
  Schedule fused;
  fused.kernels = BuildKernels();
  size_t scheduled = 0;
  for (const Kernel& kernel : fused.kernels) scheduled += kernel.nodes.size();
  if (scheduled != static_cast<size_t>(n_)) {
    return absl::InternalError(absl::StrCat("fusion left ", n_ - scheduled,
                                            " compute nodes unscheduled (a cycle "
                                            "between fused kernels)"));
  }
  fused.decisions = std::move(decisions_);
  fused.refused_spaces = std::move(refused_spaces_);
  return fused;
}

class FusePass : public Pass {
 public:
  explicit FusePass(proto::FuseOptions options) : options_(std::move(options)) {}
  StageRule stages() const override { return StageRule::From(Stage::kScheduled, Stage::kFused); }

  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value() || !module.schedule.has_value()) {
      return absl::FailedPreconditionError(
          "there is no schedule to fuse (run 'lower' and 'schedule' before "
          "'fuse')");
    }
    const size_t unfused_kernels = module.schedule->kernels.size();
    LOOM_ASSIGN_OR_RETURN(Schedule fused,
                          FuseSchedule(*module.loops, *std::move(module.schedule), options_));
    // Fewer kernels, or a loop's kernel (which stays as it is) with its
    // internal buffers found.
    bool changed = fused.kernels.size() != unfused_kernels;
    for (const Kernel& kernel : fused.kernels) changed |= !kernel.internal.empty();
    module.schedule = std::move(fused);
    module.source.reset();
    return changed;
  }

 private:
  proto::FuseOptions options_;
};

LOOM_REGISTER_PASS_WITH_OPTIONS(
    "fuse", "fuse", proto::FuseOptions, [](const proto::FuseOptions& options) {
      if (options.max_nodes_per_kernel() < 0) {
        return absl::StatusOr<std::unique_ptr<Pass>>(
            absl::InvalidArgumentError("fuse: max_nodes_per_kernel must not be negative"));
      }
      return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<FusePass>(options));
    });

}  // namespace

absl::StatusOr<Schedule> FuseSchedule(LoopProgram& program, Schedule schedule,
                                      const proto::FuseOptions& options) {
  size_t scheduled = 0;
  for (const Kernel& kernel : schedule.kernels) {
    if (kernel.nodes.size() != 1 && kernel.ordered_loop < 0) {
      return absl::FailedPreconditionError(
          "fuse expects one compute node per kernel (or a loop's kernel)");
    }
    scheduled += kernel.nodes.size();
  }
  if (scheduled != program.nodes.size()) {
    return absl::InternalError("the schedule does not cover every compute node");
  }
  Fuser fuser(program, schedule, options);
  schedule = Schedule();
  return fuser.Run();
}

}  // namespace loom
