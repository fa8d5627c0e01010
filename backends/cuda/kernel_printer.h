#ifndef LOOM_BACKENDS_CUDA_KERNEL_PRINTER_H_
#define LOOM_BACKENDS_CUDA_KERNEL_PRINTER_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "backends/common/c_scalar.h"
#include "backends/common/kernel_plan.h"
#include "backends/cuda/codegen.h"
#include "backends/cuda/cuda_options.pb.h"
#include "ir/expr.h"
#include "ir/expr_analysis.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

// The CUDA printer of one kernel (codegen.h says how a kernel maps onto
// the GPU), shared by kernel_printer.cc and reductions.cc.
namespace loom::cuda {

constexpr int kWarpSize = 32;
constexpr int kDefaultBlockSize = 256;

enum class Team { kThread, kWarp, kBlock };

// Where a buffer lives, to find members that touch the same memory.
struct Region {
  static constexpr int64_t kArena = -1;   // planned temporaries
  static constexpr int64_t kShared = -2;  // the kernel's shared memory
  int64_t space = 0;                      // kArena, kShared, or a buffer with its own storage
  int64_t begin = 0;
  int64_t end = 0;
};

// Whether a region of `a` overlaps one of `b`.
bool AnyOverlap(const std::vector<Region>& a, const std::vector<Region>& b);

// What the whole translation unit needs besides its kernels.
struct UnitNeeds {
  cscalar::HelperSet helpers;
  bool team_reductions = false;
  bool welford = false;  // kWelfordHelpers
  // Combine functors, by name, with their definitions (sorted: a std::map).
  std::map<std::string, std::string> combines;
};

// One member of a kernel, as the printer sees it: its plan (dead steps
// and extent-1 loops dropped, so no code is printed for them) and the
// memory it touches.
struct Member : kplan::MemberPlan {
  std::vector<Region> reads, writes;
};

// An internal buffer of more than one element per outer iteration, kept in
// shared memory: element `index` of the buffer (within one outer
// iteration) is name[index - base + shift].
struct SharedArray {
  std::string name;
  DType dtype = DType::kF32;
  Expr base = nullptr;  // the writer's store index with inner variables 0
  int64_t shift = 0;
  int64_t elements = 0;
  int64_t offset = 0;  // bytes into the dynamic shared memory
  int writer = 0;
  int last_reader = 0;
};

class KernelPrinter {
 public:
  KernelPrinter(const LoopProgram& program, const Schedule& schedule,
                const proto::CudaOptions& options, UnitNeeds& needs)
      : program_(program),
        schedule_(schedule),
        ctx_(*program.exprs),
        block_size_(options.block_size() > 0 ? options.block_size() : kDefaultBlockSize),
        needs_(needs) {}

  // The function's parameter list and body, and how to launch it (the text
  // and the shape determine the function).
  struct Printed {
    std::string text;
    LaunchShape shape;
  };
  absl::StatusOr<Printed> Print(const Kernel& kernel);
  // After Print, the arguments its parameters stand for.
  const std::vector<BufferRef>& args() const { return params_.args(); }
  // After Print, what it chose, in words (GeneratedSource::function_plans):
  // the team and launch of `blocks`, the shared arrays, where each member
  // stores and what of it was left out. Only for a new function: most
  // kernels share one printed before.
  std::string PlanText(int64_t blocks) const;

 private:
  absl::Status Analyze(const Kernel& kernel);
  absl::Status PlanSharedArrays();
  void ChooseTeam();
  Region RegionOf(BufferId buffer) const;
  Expr Substituted(const Member& member, Expr e) const;
  absl::StatusOr<Expr> LocalIndex(const SharedArray& array, Expr index);
  std::string Param(BufferId buffer, Expr index, std::string* rest_text);
  std::string Access(BufferId buffer, Expr index);
  std::string PrintStep(const Member& member, int i);
  void PrintSteps(const Member& member, int depth);
  void PrintMember(int m);
  void PrintReduction(const Member& member, int m, int depth, bool team);
  // A variance (kVar), the same way with Welford's update and combine.
  void PrintVariance(const Member& member, int m, int depth, bool team);
  void PrintStore(const Member& member, const std::string& value, int depth);
  void Barrier(int depth);
  void DecomposeLinear(const std::string& linear, int first, const std::vector<int64_t>& extents,
                       const std::vector<bool>& used, int depth);
  int OpenSerialLoops(int first, const std::vector<int64_t>& extents, int depth);
  std::string RowMajorPosition(int first, const std::vector<int64_t>& extents);
  // `e` in C, noting the variables it uses.
  std::string Index(Expr e) {
    MarkUsedVars(e, used_);
    return ToCpp(e, var_names_);
  }
  // Prints what `print` prints inside a loop of `extents` (variables
  // first..): a team-stride loop over their row-major position `linear`, or
  // serial loops when the team is one thread.
  template <typename PrintBody>
  void Loop(const std::string& linear, int first, const std::vector<int64_t>& extents, bool team,
            int depth, PrintBody print);
  void Fail(absl::Status status) {
    if (status_.ok()) status_ = std::move(status);
  }
  std::string Temp(int i) const { return absl::StrCat("t", step_base_ + i); }
  void Line(int depth, absl::string_view text) {
    absl::StrAppend(&body_, std::string(2 * depth, ' '), text, "\n");
  }
  bool IsRegister(BufferId b) const { return register_.contains(b); }

  const LoopProgram& program_;
  const Schedule& schedule_;
  ExprContext& ctx_;
  const int block_size_;
  UnitNeeds& needs_;
  absl::Status status_;

  // The kernel.
  const Kernel* kernel_ = nullptr;
  int outer_ = 0;
  std::vector<int64_t> outer_extents_;
  int64_t outer_total_ = 1;
  std::vector<Member> members_;
  Team team_ = Team::kThread;
  int threads_ = 1;  // per block
  int team_size_ = 1;
  // Internal buffers: written by a member without inner loops (in
  // registers) or with them (in shared memory).
  absl::flat_hash_map<BufferId, int> register_;  // -> writing member
  absl::flat_hash_map<BufferId, SharedArray> shared_;
  std::vector<BufferId> shared_order_;
  int64_t shared_bytes_ = 0;
  std::vector<Region> kernel_writes_;
  absl::flat_hash_map<BufferId, bool> stored_;  // buffers members store

  // Printing state.
  std::vector<std::string> var_names_;
  std::vector<bool> used_;  // variables the printed code uses
  kplan::ParamTable params_;
  std::vector<std::string> param_decls_;
  std::string body_;
  std::set<std::string> scratch_;  // block-reduction scratch declarations
  // Values of internal register buffers, and values stored earlier in this
  // outer iteration by members without inner loops, by (buffer, index).
  absl::flat_hash_map<BufferId, std::string> register_values_;
  kplan::ForwardedStores<std::string> forwarded_;
  std::vector<Region> pending_reads_, pending_writes_;
  int step_base_ = 0;
};

template <typename PrintBody>
void KernelPrinter::Loop(const std::string& linear, int first, const std::vector<int64_t>& extents,
                         bool team, int depth, PrintBody print) {
  if (!team) {
    const int opened = OpenSerialLoops(first, extents, depth);
    print(depth + opened);
    for (int i = opened; i > 0; --i) Line(depth + i - 1, "}");
    return;
  }
  // Print the body first: it tells which variables to declare.
  std::string outside = std::move(body_);
  body_.clear();
  for (size_t v = first; v < first + extents.size(); ++v) used_[v] = false;
  print(depth + 1);
  std::string inside = std::move(body_);
  body_ = std::move(outside);
  Line(depth, absl::StrFormat("for (int64_t %s = lane; %s < %d; %s += %d) {", linear, linear,
                              NumElements(extents), linear, team_size_));
  DecomposeLinear(linear, first, extents, used_, depth + 1);
  absl::StrAppend(&body_, inside);
  Line(depth, "}");
}

}  // namespace loom::cuda

#endif  // LOOM_BACKENDS_CUDA_KERNEL_PRINTER_H_
