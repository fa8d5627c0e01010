#include "backends/cuda/kernel_printer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/common/c_scalar.h"
#include "ir/status_macros.h"

namespace loom::cuda {
namespace {

using cscalar::CType;

// member) from which a warp, or a whole block, runs each iteration.
constexpr int64_t kWarpWork = 8;
constexpr int64_t kBlockWork = 512;
// Blocks that run one iteration each: threads for large and huge work (a
// block of 1024 threads has at most 64 registers per thread; ptxas spills
// some 512-thread kernels that it squeezes for occupancy).
constexpr int kBlockThreads = 256;
constexpr int kLargeBlockThreads = 1024;
constexpr int64_t kLargeBlockWork = 8192;
constexpr int64_t kSharedAlignment = 16;

bool Overlaps(const Region& a, const Region& b) {
  return a.space == b.space && a.begin < b.end && b.begin < a.end;
}

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// A node name as it may appear in a // comment.
std::string CommentSafe(const std::string& name) {
  std::string safe = name;
  for (char& c : safe) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return safe;
}

}  // namespace

bool AnyOverlap(const std::vector<Region>& a, const std::vector<Region>& b) {
  for (const Region& x : a) {
    for (const Region& y : b) {
      if (Overlaps(x, y)) return true;
    }
  }
  return false;
}

Region KernelPrinter::RegionOf(BufferId buffer) const {
  auto shared = shared_.find(buffer);
  if (shared != shared_.end()) {
    const SharedArray& a = shared->second;
    return {Region::kShared, a.offset, a.offset + SaturatingMul(a.elements, DTypeSize(a.dtype))};
  }
  const Buffer& b = program_.buffers[buffer];
  if (schedule_.memory.has_value() && b.kind == BufferKind::kTemp &&
      schedule_.memory->offsets[buffer] >= 0) {
    const int64_t offset = schedule_.memory->offsets[buffer];
    return {Region::kArena, offset, offset + NumBytes(b.dtype, b.sizes)};
  }
  return {buffer, 0, 1};
}

Expr KernelPrinter::Substituted(const Member& member, Expr e) const {
  return ctx_.Simplify(ctx_.Substitute(e, member.replace), member.node->AllRanges());
}

absl::Status KernelPrinter::Analyze(const Kernel& kernel) {
  if (kernel.nodes.empty()) {
    return absl::InternalError(absl::StrCat("kernel ", kernel.name, " has no compute nodes"));
  }
  kernel_ = &kernel;
  const ComputeNode& first = program_.nodes[kernel.nodes.front()];
  // A lone node's pointwise iterations are independent: all its pointwise
  // loops can be outer loops, whatever the fuser recorded.
  outer_ = kernel.nodes.size() == 1 ? static_cast<int>(first.ranges.size()) : kernel.outer_loops;
  if (outer_ < 0 || outer_ > static_cast<int>(first.ranges.size())) {
    return absl::InternalError(
        absl::StrCat("kernel ", kernel.name, " has ", outer_, " outer loops"));
  }
  kplan::KernelPlan plan = kplan::PlanKernel(program_, kernel, outer_, /*drop_dead_code=*/true);
  outer_extents_ = std::move(plan.outer);
  outer_total_ = plan.outer_total;
  for (BufferId b : kernel.internal) register_[b] = -1;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    if (node.ranges.size() < outer_extents_.size() ||
        !std::equal(outer_extents_.begin(), outer_extents_.end(), node.ranges.begin())) {
      return absl::InternalError(absl::StrCat("kernel ", kernel.name, ": member '", node.name,
                                              "' does not share the kernel's ", outer_,
                                              " outer loops"));
    }
    Member member;
    static_cast<kplan::MemberPlan&>(member) = std::move(plan.members[m]);
    auto internal = register_.find(node.output);
    if (shared_.contains(node.output)) {
      // A later writer of an internal buffer in shared memory.
    } else if (internal == register_.end()) {
      stored_[node.output] = true;
    } else if (member.scalar()) {
      internal->second = static_cast<int>(m);
    } else if (internal->second < 0) {
      register_.erase(internal);
      shared_[node.output].writer = static_cast<int>(m);
      shared_order_.push_back(node.output);
    } else {
      return absl::InternalError(absl::StrCat("kernel ", kernel.name, ": internal buffer '",
                                              program_.buffers[node.output].name,
                                              "' is written both with and without inner loops"));
    }
    members_.push_back(std::move(member));
  }
  for (BufferId b : kernel.internal) {
    if (!shared_.contains(b) && register_.at(b) < 0) {
      return absl::InternalError(absl::StrCat("kernel ", kernel.name, ": internal buffer '",
                                              program_.buffers[b].name, "' has no writer in it"));
    }
  }
  return absl::OkStatus();
}

void KernelPrinter::ChooseTeam() {
  int64_t work = 1;
  for (const Member& m : members_) {
    work = std::max(work, m.scalar() ? (m.reduces() ? m.reduce_count : 1) : m.inner_count);
  }
  if (!shared_.empty() || work >= kBlockWork) {
    team_ = Team::kBlock;
    int threads = 64;
    while (threads < work && threads < kBlockThreads) threads *= 2;
    threads_ = work >= kLargeBlockWork ? kLargeBlockThreads : threads;
    team_size_ = threads_;
  } else if (work >= kWarpWork) {
    team_ = Team::kWarp;
    threads_ = block_size_;
    team_size_ = kWarpSize;
  } else {
    team_ = Team::kThread;
    threads_ = block_size_;
    team_size_ = 1;
  }
}

// Each shared array spans the writer's elements of one outer iteration;
// arrays whose members do not overlap share space (first fit).
absl::Status KernelPrinter::PlanSharedArrays() {
  const int n = static_cast<int>(members_.size());
  for (int m = 0; m < n; ++m) {
    for (const ScalarOp& op : members_[m].node->body) {
      if (op.kind != ScalarOp::Kind::kLoad) continue;
      auto it = shared_.find(op.buffer);
      if (it != shared_.end()) it->second.last_reader = m;
    }
  }
  struct Placed {
    int64_t begin, end;
    int last_reader;
  };
  std::vector<Placed> active;
  for (size_t k = 0; k < shared_order_.size(); ++k) {
    SharedArray& array = shared_.at(shared_order_[k]);
    const Member& writer = members_[array.writer];
    const ComputeNode& node = *writer.node;
    array.name = absl::StrCat("l", k);
    array.dtype = program_.buffers[node.output].dtype;
    array.last_reader = std::max(array.last_reader, array.writer);
    const Expr store = Substituted(writer, node.store_index);
    std::vector<Expr> zero_inner;
    for (int v = 0; v < static_cast<int>(writer.replace.size()); ++v) {
      zero_inner.push_back(v < outer_ ? ctx_.Var(v) : ctx_.Const(0));
    }
    array.base = ctx_.Substitute(store, zero_inner);
    const Expr local = ctx_.Sub(store, array.base);
    std::vector<bool> used(outer_, false);
    MarkUsedVars(local, used);
    if (std::find(used.begin(), used.end(), true) != used.end()) {
      return absl::InternalError(absl::StrCat(
          "internal buffer '", program_.buffers[node.output].name, "': where '", node.name,
          "' writes it depends on the outer loops "
          "beyond an offset (",
          ToString(store), ")"));
    }
    // The smallest and largest element written in one outer iteration.
    std::vector<int64_t> vars(node.ranges.size(), 0);
    int64_t low = INT64_MAX, high = INT64_MIN;
    for (int64_t i = 0; i < writer.inner_count; ++i) {
      int64_t rest = i;
      for (size_t v = node.ranges.size(); v-- > static_cast<size_t>(outer_);) {
        vars[v] = rest % node.ranges[v];
        rest /= node.ranges[v];
      }
      const int64_t at = Evaluate(local, vars);
      low = std::min(low, at);
      high = std::max(high, at);
    }
    array.shift = -low;
    array.elements = high - low + 1;
    const int64_t bytes =
        RoundUp(SaturatingMul(array.elements, DTypeSize(array.dtype)), kSharedAlignment);
    active.erase(std::remove_if(active.begin(), active.end(),
                                [&](const Placed& p) { return p.last_reader < array.writer; }),
                 active.end());
    std::sort(active.begin(), active.end(),
              [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
    int64_t offset = 0;
    for (const Placed& p : active) {
      if (offset + bytes <= p.begin) break;
      offset = std::max(offset, p.end);
    }
    array.offset = offset;
    active.push_back({offset, offset + bytes, array.last_reader});
    shared_bytes_ = std::max(shared_bytes_, offset + bytes);
  }
  return absl::OkStatus();
}

absl::StatusOr<Expr> KernelPrinter::LocalIndex(const SharedArray& array, Expr index) {
  std::vector<Expr> zero_inner;
  for (int v = 0; v <= MaxVar(index); ++v) {
    zero_inner.push_back(v < outer_ ? ctx_.Var(v) : ctx_.Const(0));
  }
  const Expr base = ctx_.Substitute(index, zero_inner);
  const Expr shift = ctx_.Sub(base, array.base);
  const Expr local = ctx_.Sub(index, base);
  std::vector<bool> used(outer_, false);
  MarkUsedVars(local, used);
  if (!shift->is_const() || std::find(used.begin(), used.end(), true) != used.end()) {
    return absl::InternalError(absl::StrCat("internal buffer ", array.name, ": element ",
                                            ToString(index), " is not at a fixed offset from ",
                                            ToString(array.base)));
  }
  return ctx_.Add(local, ctx_.Const(shift->value() + array.shift));
}

// The parameter for `buffer` at `index`: the constant part of the index
// moves into the argument the launch passes, so kernels that differ only in
// where their data lives print identically.
std::string KernelPrinter::Param(BufferId buffer, Expr index, std::string* rest_text) {
  // Read-only data that nothing in the kernel writes may go through the
  // read-only cache; anything the kernel writes must not.
  const bool written = stored_.contains(buffer) || buffer == program_.index_errors;
  const kplan::ParamTable::Use param = params_.Add(buffer, index, written);
  *rest_text = Index(params_.Rest(ctx_, param.id, index));
  if (param.added) {
    const char* type = CType(program_.buffers[buffer].dtype);
    const bool read_only = !written && !AnyOverlap({RegionOf(buffer)}, kernel_writes_);
    param_decls_.push_back(absl::StrCat(written ? "" : "const ", type,
                                        read_only ? "* __restrict__ p" : "* p", param.id));
  }
  return absl::StrCat("p", param.id);
}

// The lvalue of element `index` (over the member's variables) of `buffer`.
std::string KernelPrinter::Access(BufferId buffer, Expr index) {
  auto shared = shared_.find(buffer);
  if (shared != shared_.end()) {
    absl::StatusOr<Expr> local = LocalIndex(shared->second, index);
    if (!local.ok()) {
      Fail(local.status());
      return "0";
    }
    return absl::StrCat(shared->second.name, "[", Index(*local), "]");
  }
  std::string rest;
  const std::string param = Param(buffer, index, &rest);
  return absl::StrCat(param, "[", rest, "]");
}

std::string KernelPrinter::PrintStep(const Member& member, int i) {
  const ComputeNode& node = *member.node;
  const ScalarOp& op = node.body[i];
  switch (op.kind) {
    case ScalarOp::Kind::kLoad: {
      if (IsRegister(op.buffer)) {
        auto value = register_values_.find(op.buffer);
        if (value == register_values_.end()) {
          Fail(absl::InternalError(absl::StrCat("'", node.name, "' reads internal buffer '",
                                                program_.buffers[op.buffer].name,
                                                "' before it is written")));
          return "0";
        }
        return value->second;
      }
      const Expr index = Substituted(member, op.index);
      if (op.args.empty()) {
        if (const std::string* stored = forwarded_.Find(op.buffer, index)) return *stored;
        return Access(op.buffer, index);
      }
      // Indirect: the affine part plus stride * an earlier step. The
      // element lies stride * t further than the affine part's.
      std::string access = Access(op.buffer, index);
      access.pop_back();
      return absl::StrCat(access, " + ", op.stride, " * (int64_t)", Temp(op.args[0]), "]");
    }
    case ScalarOp::Kind::kIndex:
      return Index(Substituted(member, op.index));
    case ScalarOp::Kind::kCheckIndex: {
      std::string rest;
      const std::string errors = Param(program_.index_errors, ctx_.Const(0), &rest);
      return cscalar::CheckIndexExpr(Temp(op.args[0]), op.extent, op.site, errors, needs_.helpers);
    }
    default:
      return cscalar::ValueStepExpr(node, i, step_base_, needs_.helpers);
  }
}

void KernelPrinter::PrintSteps(const Member& member, int depth) {
  for (int i = 0; i < static_cast<int>(member.node->body.size()); ++i) {
    if (!member.live_step(i)) continue;
    Line(depth, absl::StrCat("const ", CType(member.node->body[i].dtype), " ", Temp(i), " = ",
                             PrintStep(member, i), ";"));
  }
}

// Declares variables first .. first+extents.size()-1 (those `used`, of
// extent above 1) from their row-major position `linear`.
void KernelPrinter::DecomposeLinear(const std::string& linear, int first,
                                    const std::vector<int64_t>& extents,
                                    const std::vector<bool>& used, int depth) {
  int64_t inner = 1;  // product of the extents after variable v
  std::vector<std::string> lines;
  int last_real = -1;  // the last variable of extent above 1
  for (int v = static_cast<int>(extents.size()) - 1; v >= 0; --v) {
    if (extents[v] > 1 && last_real < 0) last_real = v;
  }
  for (int v = static_cast<int>(extents.size()) - 1; v >= 0; --v) {
    if (extents[v] == 1) continue;
    const int var = first + v;
    if (var < static_cast<int>(used.size()) && used[var]) {
      std::string value = inner == 1 ? linear : absl::StrCat(linear, " / ", inner);
      bool outermost = true;
      for (int u = 0; u < v; ++u) outermost &= extents[u] == 1;
      if (!outermost) {
        value = inner == 1 ? absl::StrCat(linear, " % ", extents[v])
                           : absl::StrCat("(", value, ") % ", extents[v]);
      }
      lines.push_back(absl::StrCat("const int64_t x", var, " = ", value, ";"));
    }
    inner = SaturatingMul(inner, extents[v]);
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) Line(depth, *it);
}

int KernelPrinter::OpenSerialLoops(int first, const std::vector<int64_t>& extents, int depth) {
  int opened = 0;
  for (size_t v = 0; v < extents.size(); ++v) {
    if (extents[v] == 1) continue;
    const int var = first + static_cast<int>(v);
    Line(depth + opened,
         absl::StrFormat("for (int64_t x%d = 0; x%d < %d; ++x%d) {", var, var, extents[v], var));
    ++opened;
  }
  return opened;
}

// The row-major position among loops first.. of `extents` (of extent above
// 1; the others are 0), e.g. "x2 * 5 + x3".
std::string KernelPrinter::RowMajorPosition(int first, const std::vector<int64_t>& extents) {
  std::string position;
  for (size_t v = 0; v < extents.size(); ++v) {
    if (extents[v] == 1) continue;
    const std::string var = absl::StrCat("x", first + static_cast<int>(v));
    position = position.empty() ? var : absl::StrCat("(", position, ") * ", extents[v], " + ", var);
  }
  return position.empty() ? "0" : position;
}

void KernelPrinter::Barrier(int depth) {
  Line(depth, team_ == Team::kBlock ? "__syncthreads();" : "__syncwarp();");
  pending_reads_.clear();
  pending_writes_.clear();
}

void KernelPrinter::PrintStore(const Member& member, const std::string& value, int depth) {
  const ComputeNode& node = *member.node;
  const Expr index = Substituted(member, node.store_index);
  forwarded_.Forget(node.output);
  if (IsRegister(node.output)) {
    register_values_[node.output] = value;
    return;
  }
  const std::string target = Access(node.output, index);
  // Every lane computed the value; lane 0 stores it. When the store
  // overwrites what the member read (in place: plan-memory may give a dying
  // input's storage to its output), the other lanes must have read first.
  const bool one_thread = member.scalar() && team_size_ > 1;
  if (one_thread && AnyOverlap(member.reads, member.writes)) Barrier(depth);
  Line(depth, absl::StrCat(one_thread ? "if (lane == 0) " : "", target, " = ", value, ";"));
  if (member.scalar()) forwarded_.Record(node.output, index, value);
}

void KernelPrinter::PrintMember(int m) {
  const Member& member = members_[m];
  const ComputeNode& node = *member.node;
  const int depth = 2;
  if (team_size_ > 1 &&
      (AnyOverlap(pending_writes_, member.reads) || AnyOverlap(pending_writes_, member.writes) ||
       AnyOverlap(pending_reads_, member.writes))) {
    Barrier(depth);
  }
  Line(depth, absl::StrCat("// ", CommentSafe(node.name)));
  pending_reads_.insert(pending_reads_.end(), member.reads.begin(), member.reads.end());
  const std::string reduced = absl::StrCat(IsArgReduce(node.reduce) ? "arg" : "acc", m);
  if (member.scalar()) {
    if (member.reduces()) {
      PrintReduction(member, m, depth, /*team=*/true);
    } else {
      PrintSteps(member, depth);
    }
    PrintStore(member, member.reduces() ? reduced : Temp(node.root), depth);
  } else {
    const std::vector<int64_t> inner(node.ranges.begin() + outer_, node.ranges.end());
    Loop("i", outer_, inner, team_size_ > 1, depth, [&](int d) {
      if (member.reduces()) {
        PrintReduction(member, m, d, /*team=*/false);
      } else {
        PrintSteps(member, d);
      }
      PrintStore(member, member.reduces() ? reduced : Temp(node.root), d);
    });
  }
  pending_writes_.insert(pending_writes_.end(), member.writes.begin(), member.writes.end());
  step_base_ += static_cast<int>(node.body.size());
}

namespace {

// What of `member` its printed code leaves out, in words, or "".
std::string Omitted(const Member& member) {
  std::vector<std::string> loops;
  for (size_t v = 0; v < member.replace.size(); ++v) {
    if (member.replace[v]->is_const()) loops.push_back(absl::StrCat("x", v));
  }
  const int64_t dead = absl::c_count(member.live, false);
  std::vector<std::string> parts;
  if (!loops.empty()) {
    parts.push_back(absl::StrCat("loops ", absl::StrJoin(loops, ", "), " (extent 1)"));
  }
  if (dead > 0) parts.push_back(absl::StrCat(dead, " dead steps of ", member.live.size()));
  return parts.empty() ? "" : absl::StrCat("\n    leaves out: ", absl::StrJoin(parts, "; "));
}

}  // namespace

std::string KernelPrinter::PlanText(int64_t blocks) const {
  std::string text = kplan::PlanHeadLine(*kernel_, outer_extents_);
  switch (team_) {
    case Team::kThread:
      absl::StrAppend(&text, "  team: one thread per outer iteration");
      break;
    case Team::kWarp:
      absl::StrAppend(&text, "  team: a warp of ", kWarpSize, " lanes per outer iteration");
      break;
    case Team::kBlock:
      absl::StrAppend(&text, "  team: a block of ", threads_, " threads per outer iteration");
      break;
  }
  absl::StrAppend(&text, " (", blocks, " blocks of ", threads_, " threads, ", shared_bytes_,
                  " bytes of shared memory)\n", kplan::PlanParamLines(program_, params_));
  for (BufferId b : shared_order_) {
    const SharedArray& a = shared_.at(b);
    absl::StrAppend(&text, "  shared ", a.name, ": ", program_.buffers[b].name, ", ", a.elements,
                    " ", DTypeName(a.dtype), " at byte ", a.offset, " (member ", a.writer,
                    " writes, member ", a.last_reader, " reads last)\n");
  }
  for (size_t m = 0; m < members_.size(); ++m) {
    const Member& member = members_[m];
    const BufferId out = member.node->output;
    const char* where = IsRegister(out)         ? " in a register"
                        : shared_.contains(out) ? " in shared memory"
                                                : "";
    absl::StrAppend(&text, kplan::PlanMemberStart(*member.node, m), ", stores ",
                    program_.buffers[out].name, where, Omitted(member), "\n");
  }
  return text;
}

absl::StatusOr<KernelPrinter::Printed> KernelPrinter::Print(const Kernel& kernel) {
  LOOM_RETURN_IF_ERROR(Analyze(kernel));
  ChooseTeam();
  LOOM_RETURN_IF_ERROR(PlanSharedArrays());
  size_t vars = 0;
  for (Member& member : members_) {
    const ComputeNode& node = *member.node;
    vars = std::max(vars, node.ranges.size() + node.reduction_ranges.size());
    for (const ScalarOp& op : node.body) {
      if (op.kind == ScalarOp::Kind::kLoad && !IsRegister(op.buffer)) {
        member.reads.push_back(RegionOf(op.buffer));
      }
    }
    if (!IsRegister(node.output)) {
      member.writes.push_back(RegionOf(node.output));
      if (!shared_.contains(node.output)) {
        kernel_writes_.push_back(member.writes.back());
      }
    }
  }
  for (size_t v = 0; v < vars; ++v) var_names_.push_back(absl::StrCat("x", v));
  used_.assign(vars, false);

  for (int m = 0; m < static_cast<int>(members_.size()); ++m) PrintMember(m);
  if (!status_.ok()) return status_;
  if (team_ == Team::kBlock && !shared_.empty()) {
    // The next outer iteration overwrites the shared arrays.
    Line(2, "__syncthreads();");
  }

  const std::string members_text = std::move(body_);
  body_.clear();
  for (const std::string& scratch : scratch_) Line(1, scratch);
  if (shared_bytes_ > 0) {
    Line(1, "extern __shared__ __align__(16) unsigned char loom_smem[];");
    for (BufferId b : shared_order_) {
      const SharedArray& a = shared_.at(b);
      const char* type = CType(a.dtype);
      Line(1,
           absl::StrFormat("%s* const %s = (%s*)(loom_smem + %d);", type, a.name, type, a.offset));
    }
  }
  const int teams_per_block = threads_ / team_size_;
  switch (team_) {
    case Team::kThread:
      Line(1, absl::StrFormat("for (int64_t o = (int64_t)blockIdx.x * %d + threadIdx.x; "
                              "o < %d; o += (int64_t)gridDim.x * %d) {",
                              threads_, outer_total_, threads_));
      break;
    case Team::kWarp:
      Line(1, "const int lane = threadIdx.x % 32;");
      Line(1, absl::StrFormat("for (int64_t o = (int64_t)blockIdx.x * %d + threadIdx.x / "
                              "32; o < %d; o += (int64_t)gridDim.x * %d) {",
                              teams_per_block, outer_total_, teams_per_block));
      break;
    case Team::kBlock:
      Line(1, "const int lane = threadIdx.x;");
      Line(1,
           absl::StrFormat("for (int64_t o = blockIdx.x; o < %d; o += gridDim.x) {", outer_total_));
      break;
  }
  DecomposeLinear("o", 0, outer_extents_, used_, 2);
  absl::StrAppend(&body_, members_text);
  Line(1, "}");

  Printed printed;
  printed.text = absl::StrCat("(", absl::StrJoin(param_decls_, ", "), ") {\n", body_, "}\n");
  printed.shape.blocks =
      std::max<int64_t>(1, (outer_total_ + teams_per_block - 1) / teams_per_block);
  printed.shape.threads = threads_;
  printed.shape.shared_bytes = shared_bytes_;
  return printed;
}

}  // namespace loom::cuda
