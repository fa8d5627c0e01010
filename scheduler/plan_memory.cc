#include "scheduler/plan_memory.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/status_macros.h"
#include "passes/pass.h"

namespace loom {

int64_t BufferBytes(const Buffer& buffer) { return NumBytes(buffer.dtype, buffer.sizes); }

namespace {

constexpr int32_t kNoKernel = -1;

int64_t RoundUpToAlignment(int64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

// The free blocks of a growing arena. Allocation is best-fit (smallest
// block that fits, then lowest offset) and takes the front of the block;
// release merges the block with free neighbours, and a block that ends at
// the arena's end shrinks the arena instead. Each call is O(log blocks).
class Arena {
 public:
  int64_t Allocate(int64_t size) {
    auto fit = by_size_.lower_bound({size, std::numeric_limits<int64_t>::min()});
    if (fit == by_size_.end()) {
      const int64_t offset = end_;
      end_ += size;
      peak_ = std::max(peak_, end_);
      return offset;
    }
    const auto [block_size, offset] = *fit;
    by_size_.erase(fit);
    by_offset_.erase(offset);
    if (block_size > size) AddFree(offset + size, block_size - size);
    return offset;
  }

  void Release(int64_t offset, int64_t size) {
    auto next = by_offset_.lower_bound(offset);
    if (next != by_offset_.end() && next->first == offset + size) {
      size += next->second;
      RemoveFree(next->first, next->second);
      next = by_offset_.lower_bound(offset);
    }
    if (next != by_offset_.begin()) {
      const auto [prev_offset, prev_size] = *std::prev(next);
      if (prev_offset + prev_size == offset) {
        RemoveFree(prev_offset, prev_size);
        offset = prev_offset;
        size += prev_size;
      }
    }
    if (offset + size == end_) {
      end_ = offset;
    } else {
      AddFree(offset, size);
    }
  }

  // The arena's largest extent so far: the bytes it needs.
  int64_t peak() const { return peak_; }

 private:
  void AddFree(int64_t offset, int64_t size) {
    by_size_.insert({size, offset});
    by_offset_.insert({offset, size});
  }
  void RemoveFree(int64_t offset, int64_t size) {
    by_size_.erase({size, offset});
    by_offset_.erase(offset);
  }

  absl::btree_set<std::pair<int64_t, int64_t>> by_size_;  // (size, offset)
  absl::btree_map<int64_t, int64_t> by_offset_;           // offset -> size
  int64_t end_ = 0;
  int64_t peak_ = 0;
};

// True when `index` takes distinct values at distinct points of the loops
// `ranges`: a constant plus terms c * x_i with positive coefficients whose
// mixed-radix digits cannot overlap (c exceeds the largest value the terms
// with smaller coefficients reach), and every loop longer than 1 in it.
// Anything else (floor division, modulo, products of variables) is treated
// as possibly not injective.
bool IsInjectiveIndex(Expr index, absl::Span<const int64_t> ranges) {
  if (std::any_of(ranges.begin(), ranges.end(), [](int64_t extent) { return extent <= 0; })) {
    return false;
  }
  absl::InlinedVector<int64_t, 8> coefficients(ranges.size());
  int64_t constant = 0;
  if (!AffineCoefficients(index, absl::MakeSpan(coefficients), constant)) return false;
  absl::InlinedVector<std::pair<int64_t, int64_t>, 8> digits;  // (c, extent)
  for (size_t v = 0; v < ranges.size(); ++v) {
    if (coefficients[v] < 0 || (coefficients[v] == 0 && ranges[v] > 1)) return false;
    if (coefficients[v] > 0) digits.emplace_back(coefficients[v], ranges[v]);
  }
  std::sort(digits.begin(), digits.end());
  int64_t reach = 0;  // the largest value of the terms so far
  for (const auto& [coefficient, extent] : digits) {
    if (extent == 1) continue;
    const std::optional<int64_t> span = CheckedMul(coefficient, extent - 1);
    if (coefficient <= reach || !span.has_value() ||
        *span > std::numeric_limits<int64_t>::max() - reach) {
      return false;
    }
    reach += *span;
  }
  return true;
}

// What the planner knows about one buffer: O(1) words each.
struct BufferUse {
  int64_t bytes = 0;                // dense storage, of the temporaries that need some
  int32_t first = kNoKernel;        // the first kernel touching it
  int32_t last = kNoKernel;         // the last kernel touching it
  int32_t internal_to = kNoKernel;  // the kernel that keeps it internal
  int32_t writers = 0;              // compute nodes that write it
  // For the in-place rule: loads of it in kernel `last`, and scratch used
  // only while walking that kernel (so never reset): those loads in the node
  // being examined that qualify.
  int32_t loads_in_last = 0;
  int32_t qualifying_loads = 0;
  bool temp = false;             // BufferKind::kTemp
  bool written_in_last = false;  // a node of kernel `last` writes it
  bool handed_over = false;      // its storage went to a buffer written in place
};

class Planner {
 public:
  Planner(const LoopProgram& program, const Schedule& schedule)
      : program_(program), schedule_(schedule), uses_(program.buffers.size()) {}

  absl::StatusOr<MemoryPlan> Run();

 private:
  absl::Status MarkInternal();
  void AssignSteps();
  absl::Status RecordUses();
  absl::Status Touch(BufferId buffer, int kernel, bool write);
  // Whether `kernel` is one of a chain (Kernel::chain_length).
  bool Chained(int kernel) const {
    return steps_[kernel] != kernel || schedule_.kernels[kernel].chain_length > 1;
  }
  // Temporaries that need arena storage.
  bool Planned(BufferId buffer) const {
    const BufferUse& use = uses_[buffer];
    return use.temp && use.internal_to == kNoKernel && use.first != kNoKernel;
  }
  // CSR lists of the planned buffers by their first and last kernel.
  void BucketLifetimes();
  void TryInPlace(const ComputeNode& node, int kernel, absl::Span<const BufferId> loads_at_store);
  bool QualifiesForInPlace(BufferId load, int kernel) const;

  const LoopProgram& program_;
  const Schedule& schedule_;
  std::vector<BufferUse> uses_;
  // The step of each kernel in the walk, by which lifetimes count: its
  // index, or in a chain the first kernel's, so that whatever a chain
  // touches lives through all of it.
  std::vector<int32_t> steps_;
  std::vector<int32_t> start_offsets_, starts_, end_offsets_, ends_;
  // The direct loads of each node at its own store index (the in-place
  // candidates), the nodes in the order of the kernels: the loads of the
  // i-th node visited are loads_at_store_[offsets[i] .. offsets[i+1]).
  std::vector<int32_t> loads_at_store_offsets_ = {0};
  std::vector<BufferId> loads_at_store_;
  MemoryPlan plan_;
  Arena arena_;
};

absl::StatusOr<MemoryPlan> Planner::Run() {
  LOOM_RETURN_IF_ERROR(MarkInternal());
  AssignSteps();
  LOOM_RETURN_IF_ERROR(RecordUses());
  const int num_buffers = static_cast<int>(program_.buffers.size());
  for (BufferId b = 0; b < num_buffers; ++b) {
    const Buffer& buffer = program_.buffers[b];
    BufferUse& use = uses_[b];
    use.temp = buffer.kind == BufferKind::kTemp;
    if (!use.temp || use.internal_to != kNoKernel) continue;
    use.bytes = BufferBytes(buffer);
    plan_.unplanned_bytes += use.bytes;
  }
  BucketLifetimes();
  plan_.offsets.assign(num_buffers, -1);
  const int num_kernels = static_cast<int>(schedule_.kernels.size());
  int visited = 0;
  for (int k = 0; k < num_kernels; ++k) {
    for (int node : schedule_.kernels[k].nodes) {
      const int begin = loads_at_store_offsets_[visited];
      const int end = loads_at_store_offsets_[++visited];
      if (Chained(k)) continue;  // a chain's kernels may run interleaved
      TryInPlace(program_.nodes[node], k,
                 absl::MakeConstSpan(loads_at_store_).subspan(begin, end - begin));
    }
    for (int i = start_offsets_[k]; i < start_offsets_[k + 1]; ++i) {
      const BufferId b = starts_[i];
      if (plan_.offsets[b] >= 0) continue;  // in place
      const int64_t bytes = RoundUpToAlignment(uses_[b].bytes);
      plan_.offsets[b] = bytes == 0 ? 0 : arena_.Allocate(bytes);
    }
    for (int i = end_offsets_[k]; i < end_offsets_[k + 1]; ++i) {
      const BufferId b = ends_[i];
      const int64_t bytes = RoundUpToAlignment(uses_[b].bytes);
      if (!uses_[b].handed_over && bytes > 0) {
        arena_.Release(plan_.offsets[b], bytes);
      }
    }
  }
  plan_.arena_bytes = arena_.peak();
  return std::move(plan_);
}

absl::Status Planner::MarkInternal() {
  const int num_buffers = static_cast<int>(program_.buffers.size());
  const int num_nodes = static_cast<int>(program_.nodes.size());
  for (int k = 0; k < static_cast<int>(schedule_.kernels.size()); ++k) {
    const Kernel& kernel = schedule_.kernels[k];
    for (int node : kernel.nodes) {
      if (node < 0 || node >= num_nodes) {
        return absl::InternalError(absl::StrCat("kernel '", kernel.name, "' names compute node ",
                                                node, ", but the program has ", num_nodes));
      }
    }
    for (BufferId b : kernel.internal) {
      if (b < 0 || b >= num_buffers) {
        return absl::InternalError(absl::StrCat("kernel '", kernel.name, "' lists internal buffer ",
                                                b, ", but the program has ", num_buffers));
      }
      if (program_.buffers[b].kind != BufferKind::kTemp) {
        return absl::InternalError(absl::StrCat("kernel '", kernel.name, "' lists buffer '",
                                                program_.buffers[b].name,
                                                "' as internal, but it is not a temporary"));
      }
      if (uses_[b].internal_to != kNoKernel && uses_[b].internal_to != k) {
        return absl::InternalError(absl::StrCat(
            "buffer '", program_.buffers[b].name, "' is internal to kernels '",
            schedule_.kernels[uses_[b].internal_to].name, "' and '", kernel.name, "'"));
      }
      uses_[b].internal_to = k;
    }
  }
  return absl::OkStatus();
}

void Planner::AssignSteps() {
  const int num_kernels = static_cast<int>(schedule_.kernels.size());
  steps_.resize(num_kernels);
  for (int k = 0; k < num_kernels;) {
    const int end = std::min(num_kernels, k + std::max(1, schedule_.kernels[k].chain_length));
    for (int j = k; j < end; ++j) steps_[j] = k;
    k = end;
  }
}

absl::Status Planner::RecordUses() {
  for (int k = 0; k < static_cast<int>(schedule_.kernels.size()); ++k) {
    for (int n : schedule_.kernels[k].nodes) {
      const ComputeNode& node = program_.nodes[n];
      for (const ScalarOp& op : node.body) {
        if (op.kind != ScalarOp::Kind::kLoad) continue;
        LOOM_RETURN_IF_ERROR(Touch(op.buffer, k, /*write=*/false));
        if (op.args.empty() && op.index == node.store_index) {
          loads_at_store_.push_back(op.buffer);
        }
      }
      loads_at_store_offsets_.push_back(static_cast<int32_t>(loads_at_store_.size()));
      LOOM_RETURN_IF_ERROR(Touch(node.output, k, /*write=*/true));
      ++uses_[node.output].writers;
    }
  }
  return absl::OkStatus();
}

// Kernels are visited in order, so the counts for the kernel that touches
// a buffer last are those left when every kernel has been visited.
absl::Status Planner::Touch(BufferId buffer, int kernel, bool write) {
  if (buffer < 0 || buffer >= static_cast<BufferId>(uses_.size())) {
    return absl::InternalError(absl::StrCat("kernel '", schedule_.kernels[kernel].name,
                                            "' touches buffer ", buffer, ", but the program has ",
                                            uses_.size()));
  }
  BufferUse& use = uses_[buffer];
  if (use.internal_to != kNoKernel && use.internal_to != kernel) {
    return absl::InternalError(
        absl::StrCat("buffer '", program_.buffers[buffer].name, "' is internal to kernel '",
                     schedule_.kernels[use.internal_to].name, "', but kernel '",
                     schedule_.kernels[kernel].name, "' touches it"));
  }
  const int step = steps_[kernel];
  if (use.first == kNoKernel) use.first = step;
  if (use.last != step) {
    use.last = step;
    use.loads_in_last = 0;
    use.written_in_last = false;
  }
  if (write) {
    use.written_in_last = true;
  } else {
    ++use.loads_in_last;
  }
  return absl::OkStatus();
}

void Planner::BucketLifetimes() {
  const int num_kernels = static_cast<int>(schedule_.kernels.size());
  const int num_buffers = static_cast<int>(program_.buffers.size());
  start_offsets_.assign(num_kernels + 1, 0);
  end_offsets_.assign(num_kernels + 1, 0);
  for (BufferId b = 0; b < num_buffers; ++b) {
    if (!Planned(b)) continue;
    ++start_offsets_[uses_[b].first + 1];
    ++end_offsets_[uses_[b].last + 1];
  }
  for (int k = 0; k < num_kernels; ++k) {
    start_offsets_[k + 1] += start_offsets_[k];
    end_offsets_[k + 1] += end_offsets_[k];
  }
  starts_.resize(start_offsets_[num_kernels]);
  ends_.resize(end_offsets_[num_kernels]);
  std::vector<int32_t> next_start(start_offsets_.begin(), start_offsets_.end() - 1);
  std::vector<int32_t> next_end(end_offsets_.begin(), end_offsets_.end() - 1);
  for (BufferId b = 0; b < num_buffers; ++b) {  // ascending ids per bucket
    if (!Planned(b)) continue;
    starts_[next_start[uses_[b].first]++] = b;
    ends_[next_end[uses_[b].last]++] = b;
  }
}

// A direct load, at the node's store index, of a temporary that dies in
// this kernel without being written there and whose storage is still its
// own.
bool Planner::QualifiesForInPlace(BufferId load, int kernel) const {
  if (!Planned(load)) return false;
  const BufferUse& use = uses_[load];
  return use.last == kernel && use.first < kernel && !use.written_in_last && !use.handed_over;
}

void Planner::TryInPlace(const ComputeNode& node, int kernel,
                         absl::Span<const BufferId> loads_at_store) {
  const BufferId out = node.output;
  if (loads_at_store.empty() || !Planned(out) || uses_[out].first != kernel ||
      uses_[out].writers != 1 || node.reduce != ReduceKind::kNone ||
      !node.reduction_ranges.empty() || uses_[out].bytes == 0 ||
      !IsInjectiveIndex(node.store_index, node.ranges)) {
    return;
  }
  absl::InlinedVector<BufferId, 4> qualifying;  // one entry per load
  for (BufferId b : loads_at_store) {
    if (QualifiesForInPlace(b, kernel)) {
      ++uses_[b].qualifying_loads;
      qualifying.push_back(b);
    }
  }
  const DType dtype = program_.buffers[out].dtype;
  for (BufferId b : qualifying) {
    BufferUse& dying = uses_[b];
    // Every load of it in the kernel is one of this node's qualifying ones.
    const bool only_here = dying.qualifying_loads == dying.loads_in_last;
    dying.qualifying_loads = 0;  // later loads of it see 0 and are skipped
    // Of one dtype, equal bytes are equal element counts.
    if (only_here && plan_.offsets[out] < 0 && program_.buffers[b].dtype == dtype &&
        dying.bytes == uses_[out].bytes) {
      plan_.offsets[out] = plan_.offsets[b];
      dying.handed_over = true;
    }
  }
}

class PlanMemoryPass : public Pass {
 public:
  StageRule stages() const override { return StageRule::From(Stage::kFused, Stage::kPlanned); }
  absl::StatusOr<bool> Run(Module& module) override {
    if (!module.loops.has_value() || !module.schedule.has_value()) {
      return absl::FailedPreconditionError(
          "there is no schedule to plan memory for (run 'lower' and "
          "'schedule' before 'plan-memory')");
    }
    LOOM_ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(*module.loops, *module.schedule));
    const std::optional<MemoryPlan>& old = module.schedule->memory;
    if (old.has_value() && old->offsets == plan.offsets && old->arena_bytes == plan.arena_bytes &&
        old->unplanned_bytes == plan.unplanned_bytes) {
      return false;
    }
    module.schedule->memory = std::move(plan);
    module.source.reset();
    return true;
  }
};

LOOM_REGISTER_PASS("plan-memory", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(std::make_unique<PlanMemoryPass>());
});

}  // namespace

absl::StatusOr<MemoryPlan> PlanMemory(const LoopProgram& program, const Schedule& schedule) {
  return Planner(program, schedule).Run();
}

}  // namespace loom
