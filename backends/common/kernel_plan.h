#ifndef LOOM_BACKENDS_COMMON_KERNEL_PLAN_H_
#define LOOM_BACKENDS_COMMON_KERNEL_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "ir/expr.h"
#include "ir/loop_ir.h"
#include "ir/module.h"
#include "ir/schedule.h"

namespace loom::kplan {

// The analyses of a fused kernel that do not depend on the backend printing
// it (backends/cpp, backends/cuda): its members and outer loops, its
// parameters with their hoisted constant offsets, the steps and loops a
// printer may leave out, the values a member forwards to later ones, and
// the table of distinct functions that kernels share.

// A kernel's parameters: each (buffer, constant offset) pair it touches is
// parameter p0, p1, ... in order of first use. The offset is the index's
// constant term (ConstantTerm, ir/expr_analysis.h), which moves into the
// argument a launch passes: kernels that differ only in where their data
// lives (the steps of an unrolled recurrence) then print identically and
// share one function.
class ParamTable {
 public:
  struct Use {
    int id = -1;
    bool added = false;  // the first use of this parameter
  };
  // The parameter for element `index` of `buffer`; `written`: whether the
  // kernel stores through it (written once any use writes).
  Use Add(BufferId buffer, Expr index, bool written);
  const std::vector<BufferRef>& args() const { return args_; }
  int64_t offset(int id) const { return args_[id].offset; }
  bool written(int id) const { return written_[id]; }
  size_t size() const { return args_.size(); }
  // `index` of parameter `id` less the constant its argument holds.
  Expr Rest(ExprContext& ctx, int id, Expr index) const;

 private:
  absl::flat_hash_map<std::pair<BufferId, int64_t>, int> id_of_;
  std::vector<BufferRef> args_;
  std::vector<bool> written_;
};

// Which steps of `node`'s body its root depends on (the others are dead).
std::vector<bool> LiveSteps(const ComputeNode& node);

// The substitution that drops `node`'s loops of extent 1: variable i
// becomes the constant 0 for such a loop, else stays x_i.
std::vector<Expr> DropExtentOneLoops(ExprContext& ctx, const ComputeNode& node);

// One member of a kernel, as every backend sees it.
struct MemberPlan {
  const ComputeNode* node = nullptr;
  int64_t inner_count = 1;   // iterations of its inner pointwise loops
  int64_t reduce_count = 1;  // iterations of its reduction loops
  bool internal = false;     // writes one of the kernel's internal buffers
  // Filled by PlanKernel with `drop_dead_code` only: the live steps
  // (LiveSteps) and the substitution dropping extent-1 loops.
  std::vector<bool> live;
  std::vector<Expr> replace;
  bool scalar() const { return inner_count == 1; }
  bool reduces() const { return node->reduce != ReduceKind::kNone; }
  bool live_step(int i) const { return live.empty() || live[i]; }
};

// The backend-independent plan of one kernel.
struct KernelPlan {
  int outer_loops = 0;
  std::vector<int64_t> outer;  // the outer loops' extents
  int64_t outer_total = 1;     // their iterations
  std::vector<MemberPlan> members;
};

// The plan of `kernel` with its first `outer_loops` loops outer (at most
// the first member's pointwise loops). With `drop_dead_code` each member's
// dead steps and extent-1 loops are marked for the printer to leave out
// (the CUDA printer does; the C++ one prints every step and loop).
KernelPlan PlanKernel(const LoopProgram& program, const Kernel& kernel, int outer_loops,
                      bool drop_dead_code);

// Values that members with no inner loops stored earlier in a kernel, by
// (buffer, index): a later member's load of the same element reads the
// value instead of memory.
template <typename Value>
class ForwardedStores {
 public:
  // A store to `buffer`: values forwarded from it before may be stale.
  void Forget(BufferId buffer) {
    for (auto it = values_.begin(); it != values_.end();) {
      if (it->first.first == buffer) {
        values_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  void Record(BufferId buffer, Expr index, Value value) {
    values_[std::make_pair(buffer, index)] = std::move(value);
  }
  // The value stored at `index` of `buffer`, or null.
  const Value* Find(BufferId buffer, Expr index) const {
    auto it = values_.find(std::make_pair(buffer, index));
    return it == values_.end() ? nullptr : &it->second;
  }

 private:
  absl::flat_hash_map<std::pair<BufferId, Expr>, Value> values_;
};

// A kernel's dedup key: the bytes of a few values per step of its body
// (the C++ backend), or of its launch shape and printed text (CUDA),
// appended millions of times for a large program. Kept from kernel to
// kernel, so that its room is allocated once, and appended to in place: an
// append is a store, not a call.
class KernelKey {
 public:
  void Clear() { size_ = 0; }
  template <typename T>
  void Append(T value) {
    static_assert(std::is_trivially_copyable<T>::value, "raw bytes");
    Reserve(sizeof value);
    std::memcpy(&room_[size_], &value, sizeof value);
    size_ += sizeof value;
  }
  void AppendBytes(absl::string_view bytes) {
    Reserve(bytes.size());
    std::memcpy(&room_[size_], bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  absl::string_view bytes() const { return {room_.data(), size_}; }

 private:
  void Reserve(size_t more) {
    if (size_ + more > room_.size()) {
      room_.resize(std::max({2 * room_.size(), size_t{1024}, size_ + more}));
    }
  }
  std::string room_;  // bytes [0, size_) are the key
  size_t size_ = 0;
};

// The distinct functions of a translation unit. Kernels whose dedup keys
// are equal share one function; a backend's key holds everything its
// printed function depends on (the C++ one a structural key of the kernel,
// the CUDA one the printed text without comments and the launch shape).
class FunctionTable {
 public:
  // `share_equal_bodies`: whether a new key whose body equals an earlier
  // function's shares that function (the C++ backend, whose keys may differ
  // where the text does not); else each new key is a new function.
  explicit FunctionTable(bool share_equal_bodies) : share_equal_bodies_(share_equal_bodies) {}
  // The function for `key`, or -1 when no kernel had that key yet.
  int Find(absl::string_view key) const;
  // Adds the function printed for `key`, a new key; returns its index.
  int Add(absl::string_view key, std::string body);
  // The function for `body`, a kernel with no key (a library call).
  int AddBody(std::string body);
  // The bodies of the functions, by index.
  const std::deque<std::string>& bodies() const { return bodies_; }

 private:
  const bool share_equal_bodies_;
  absl::flat_hash_map<std::string, int> function_of_key_;
  std::deque<std::string> bodies_;  // stable, for the views in function_of_body_
  absl::flat_hash_map<absl::string_view, int> function_of_body_;
};

// The lines of a kernel's plan (GeneratedSource::function_plans) that both
// backends write alike: the first ("kernel k: 2 members, outer loops
// [4, 8]"), one per parameter ("  p0: x + 16 (read)"), and the start of a
// member's ("  member 1 mean: sum over [4, 8, 32]").
std::string PlanHeadLine(const Kernel& kernel, const std::vector<int64_t>& outer);
std::string PlanParamLines(const LoopProgram& program, const ParamTable& params);
std::string PlanMemberStart(const ComputeNode& node, size_t m);

// Appends a launch of `function` with `args`, running the schedule's next
// `kernels` kernels, to `launches`.
void AppendLaunch(LaunchTable& launches, int function, const std::vector<BufferRef>& args,
                  int kernels = 1);

}  // namespace loom::kplan

#endif  // LOOM_BACKENDS_COMMON_KERNEL_PLAN_H_
