#include "backends/cpp/plan.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/expr_analysis.h"
#include "ir/shape_constants.h"

namespace loom::cpp {
namespace {

// Whether `index` is affine with unit stride in variable `inner` and every
// other coefficient and the constant multiples of kStreamLanes: each run of
// kStreamLanes iterations of `inner` starting at a multiple of it then
// writes one whole 64-byte line of a 64-byte aligned f32 buffer.
bool WritesWholeLines(Expr index, int inner) {
  std::vector<int64_t> coefficients(std::max(MaxVar(index), inner) + 1);
  int64_t constant = 0;
  if (!AffineCoefficients(index, absl::MakeSpan(coefficients), constant) ||
      constant % kStreamLanes != 0 || coefficients[inner] != 1) {
    return false;
  }
  for (int v = 0; v < static_cast<int>(coefficients.size()); ++v) {
    if (v != inner && coefficients[v] % kStreamLanes != 0) return false;
  }
  return true;
}

// The stride of `index` along variable `inner`, the largest variable it may
// use: the coefficient of its term c * x_inner, 0 without such a term, -1
// when x_inner appears otherwise (in a division, say).
int64_t InnerStride(Expr index, int inner) { return LinearCoefficient(index, inner).value_or(-1); }

// Below this many outer iterations a kernel may split its members' loops
// over the threads (more threads than that are rare).
constexpr int64_t kSplitBelowOuter = 64;

// Welford's update in explicit vectors: kWelfordVectorChains vectors of
// running means and M2s, each waiting on its own last update only. GCC
// kept lane arrays in memory, every update a store its next one waits on
// (layer_norm_large for AVX2: 0.70 of the copy bandwidth). Two chains, so
// that AVX2's sixteen registers hold them and the update's temporaries.
constexpr int kWelfordVectorChains = 2;

// At most this many outer iterations run as a team (RunsAsTeam): their
// products load each matrix row once for all of them.
constexpr int64_t kTeamRows = 4;

// A body's steps, each function of libm's (exp, tanh, ...) counted as
// kTranscendentalSteps: the cell of an LSTM of batch 64 and hidden 64 (4K
// elements, five such functions each) took 16 us on one thread; shared,
// the LSTM at sequence 256 ran in 17.5 ms rather than 20.4.
constexpr int64_t kTranscendentalSteps = 16;

// The outer loops run in parallel (OpenMP) from this much work on
// (CppPlanner::Plan).
constexpr int64_t kParallelIterations = int64_t{1} << 16;
constexpr int64_t kParallelSteps = int64_t{1} << 18;

int64_t BodyCost(const ComputeNode& node) {
  int64_t cost = 0;
  for (const ScalarOp& op : node.body) {
    const bool transcendental =
        op.kind == ScalarOp::Kind::kCall &&
        (op.fn == ScalarFn::kExp || op.fn == ScalarFn::kLog || op.fn == ScalarFn::kTanh ||
         op.fn == ScalarFn::kSigmoid || op.fn == ScalarFn::kErf || op.fn == ScalarFn::kSin ||
         op.fn == ScalarFn::kCos || op.fn == ScalarFn::kPow);
    cost += transcendental ? kTranscendentalSteps : 1;
  }
  return cost;
}

}  // namespace

int64_t Product(const std::vector<int64_t>& extents, size_t first, size_t last) {
  return NumElements(absl::MakeConstSpan(extents).subspan(first, last - first));
}

std::string RefName(const Ref& ref) {
  static constexpr const char* kPrefix[] = {"", "p", "l", "t", "acc", "arg"};
  if (ref.kind == Ref::Kind::kNone) return "";
  return absl::StrCat(kPrefix[static_cast<int>(ref.kind)], ref.id);
}

std::string ParallelFor(size_t loops, absl::string_view condition) {
  return absl::StrCat("#pragma omp parallel for",
                      loops > 1 ? absl::StrCat(" collapse(", loops, ")") : "", condition);
}

void CppPlanner::Plan(const Kernel& kernel) {
  key_.Clear();
  kplan::KernelPlan common =
      kplan::PlanKernel(program_, kernel, kernel.outer_loops, /*drop_dead_code=*/false);
  plan_.outer_loops = kernel.outer_loops;
  plan_.outer = std::move(common.outer);
  plan_.ordered_loop = kernel.ordered_loop;
  plan_.few_outer =
      options_.openmp() && common.outer_total < kSplitBelowOuter && plan_.ordered_loop < 0;
  Key(plan_.outer_loops);
  Key(plan_.ordered_loop);
  Key(kernel.nodes.size());
  plan_.members.resize(kernel.nodes.size());
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = *common.members[m].node;
    CppMemberPlan& member = plan_.members[m];
    member.internal = common.members[m].internal;
    member.split_work = plan_.ordered_loop < 0 && SplitWork(node);
    plan_.may_split |= member.split_work;
    member.local_length = common.members[m].inner_count;
    if (member.internal && static_cast<int>(node.ranges.size()) > plan_.outer_loops) {
      local_of_[node.output] = static_cast<int>(m);
      plan_.locals.push_back(static_cast<int>(m));
    }
  }
  for (size_t m = 0; m < kernel.nodes.size(); ++m) PlanMemberRefs(kernel, m);
}

// Member m's loads and store, and what it leaves in a variable for later
// members.
void CppPlanner::PlanMemberRefs(const Kernel& kernel, size_t m) {
  const ComputeNode& node = program_.nodes[kernel.nodes[m]];
  CppMemberPlan& member = plan_.members[m];
  const int step_base = static_cast<int>(plan_.load_refs.size());
  member.first_step = step_base;
  member.streams = plan_.ordered_loop < 0 && Streams(node, m);
  plan_.streams |= member.streams;
  Key(member.internal);
  Key(member.streams);
  KeyNode(node);
  for (const ScalarOp& op : node.body) {
    plan_.load_refs.push_back(StepRef(op));
    KeyRef(plan_.load_refs.back());
  }
  if (auto local = local_of_.find(node.output); local != local_of_.end()) {
    member.store = {Ref::Kind::kLocal, local->second, node.store_index};
  } else if (!member.internal) {
    member.store = Param(node.output, node.store_index, true);
  }
  KeyRef(member.store);
  if (node.ranges.size() == static_cast<size_t>(plan_.outer_loops)) {
    const Ref::Kind kind = node.reduce == ReduceKind::kNone ? Ref::Kind::kTemp
                           : IsArgReduce(node.reduce)       ? Ref::Kind::kArg
                                                            : Ref::Kind::kAcc;
    const int id = kind == Ref::Kind::kTemp ? step_base + node.root : static_cast<int>(m);
    forwarded_.Record(node.output, node.store_index, Ref{kind, id});
  }
  member.sum_from_variance = SumsWhatTheVarianceRead(kernel, m);
  Key(member.sum_from_variance);
}

void CppPlanner::PlanVectors(const Kernel& kernel) {
  const bool alone = kernel.nodes.size() == 1;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    CppMemberPlan& member = plan_.members[m];
    member.vectorizes = VectorizesExp(node, static_cast<int>(m));
    member.vector_extreme = VectorizesExtreme(node, static_cast<int>(m));
    member.matvec = MatchMatVec(node, static_cast<int>(m), alone);
    if (node.reduce == ReduceKind::kVar) member.welford_chains = WelfordChains(node, m);
    plan_.vectorizes |=
        member.vectorizes || member.vector_extreme || member.matvec || member.welford_chains > 0;
  }
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    plan_.members[m].sum_in_vector_loop = SumsWhatTheVectorLoopStored(kernel, m);
    plan_.members[m].store_alongside = LaterStoreAlongside(kernel, m);
  }
  const ComputeNode& first = program_.nodes[kernel.nodes[0]];
  plan_.alone_matvec = alone && plan_.members[0].matvec.has_value() &&
                       first.ranges.size() == plan_.outer.size() && plan_.ordered_loop < 0;
  // Shared by the threads from 2^18 multiply-adds (some 6 us on one
  // thread): the BiLSTM's 512 x 128 products ran in 0.44-0.76 ms shared
  // (a parallel region each), 0.59-0.60 ms one by one.
  plan_.alone_matvec_shared =
      plan_.alone_matvec && options_.openmp() && NumElements(first.AllRanges()) >= (1 << 18);
  plan_.column_block = plan_.ordered_loop < 0 ? ColumnBlock(kernel) : 0;
  if (!plan_.alone_matvec && plan_.may_split) RunsAsTeam(kernel);
  if (plan_.ordered_loop >= 0) PlanOrderedRows(kernel);
  // The outer loops run in parallel (OpenMP) when there is enough work:
  // 2^16 iterations, or fewer of a body long enough for 2^18 steps in all
  // (BodyCost; a depthwise 3x3 conv of 960 channels on 7x7, 47K
  // iterations of 46 steps, ran in 0.153 ms on one thread and 0.084-0.097
  // ms on two).
  int64_t iterations = 0, steps = 0;
  std::vector<std::string> iteration_terms, step_terms;
  for (int n : kernel.nodes) {
    const ComputeNode& node = program_.nodes[n];
    const std::vector<int64_t> ranges = node.AllRanges();
    const int64_t count = NumElements(ranges);
    iterations += count;
    steps += count * BodyCost(node);
    iteration_terms.push_back(MarkedProduct(ranges));
    step_terms.push_back(absl::StrCat(iteration_terms.back(), " * ", BodyCost(node)));
  }
  const absl::Span<const int64_t> shared =
      plan_.ordered_loop < 0 ? absl::MakeConstSpan(plan_.outer)
                             : absl::MakeConstSpan(plan_.outer).subspan(0, plan_.ordered_loop);
  plan_.parallel_outer = options_.openmp() && NumElements(shared) > 1 &&
                         (iterations >= kParallelIterations || steps >= kParallelSteps);
  if (options_.openmp() && !shared.empty()) {
    plan_.parallel_condition =
        absl::StrCat(MarkedProduct(shared), " > 1 && (", absl::StrJoin(iteration_terms, " + "),
                     " >= ", kParallelIterations, " || ", absl::StrJoin(step_terms, " + "),
                     " >= ", kParallelSteps, ")");
  }
}

std::optional<Ref> CppPlanner::LaterStoreAlongside(const Kernel& kernel, size_t m) {
  if (!plan_.members[m].vectorizes) return std::nullopt;
  const std::vector<int64_t>& ranges = program_.nodes[kernel.nodes[m]].ranges;
  for (size_t later = m + 1; later < kernel.nodes.size(); ++later) {
    const ComputeNode& node = program_.nodes[kernel.nodes[later]];
    const Ref& store = plan_.members[later].store;
    // A streamed store bypasses the caches: prefetching its lines would
    // read them for nothing and leave the stores to evict them.
    if (store.kind == Ref::Kind::kParam && !plan_.members[later].streams && node.ranges == ranges &&
        node.reduction_ranges.empty() && RefStride(node, store) == 1) {
      // The nearest only: every later store from every loop made an
      // unrolled recurrence's source quadratic in its steps (lstm_l2_h64's
      // step kernel: 18 prefetches in each of its 32 loops, 0.99 s of g++
      // against 0.73 without).
      return store;
    }
  }
  return std::nullopt;
}

bool CppPlanner::SumsWhatTheVarianceRead(const Kernel& kernel, size_t m) const {
  if (m == 0) return false;
  const ComputeNode& var = program_.nodes[kernel.nodes[m - 1]];
  const ComputeNode& sum = program_.nodes[kernel.nodes[m]];
  if (var.reduce != ReduceKind::kVar || sum.reduce != ReduceKind::kSum ||
      var.ranges.size() != static_cast<size_t>(plan_.outer_loops) || var.ranges != sum.ranges ||
      var.reduction_ranges != sum.reduction_ranges || var.root != sum.root ||
      var.body.size() != sum.body.size()) {
    return false;
  }
  for (size_t i = 0; i < var.body.size(); ++i) {
    const ScalarOp& a = var.body[i];
    const ScalarOp& b = sum.body[i];
    const Ref& ra = plan_.load_refs[plan_.members[m - 1].first_step + i];
    const Ref& rb = plan_.load_refs[plan_.members[m].first_step + i];
    const bool same_payload =
        a.kind == ScalarOp::Kind::kConst ? a.constant == b.constant : a.stride == b.stride;
    if (a.kind != b.kind || a.dtype != b.dtype || a.fn != b.fn || !same_payload ||
        a.args != b.args || (a.kind == ScalarOp::Kind::kIndex && a.index != b.index) ||
        ra.kind != rb.kind || ra.id != rb.id || ra.index != rb.index) {
      return false;
    }
  }
  return true;
}

bool CppPlanner::SumsWhatTheVectorLoopStored(const Kernel& kernel, size_t m) {
  if (m == 0 || !plan_.members[m - 1].vectorizes) return false;
  const ComputeNode& vector = program_.nodes[kernel.nodes[m - 1]];
  const ComputeNode& sum = program_.nodes[kernel.nodes[m]];
  const size_t outer = static_cast<size_t>(plan_.outer_loops);
  if (sum.reduce != ReduceKind::kSum || program_.buffers[sum.output].dtype != DType::kF32 ||
      vector.ranges.size() != outer + 1 || sum.ranges.size() != outer ||
      sum.reduction_ranges.size() != 1 || sum.reduction_ranges[0] != vector.ranges.back() ||
      sum.body.size() != 1 || sum.body[0].kind != ScalarOp::Kind::kLoad ||
      !sum.body[0].args.empty()) {
    return false;
  }
  const Ref& stored = plan_.members[m - 1].store;
  const Ref& load = plan_.load_refs[plan_.members[m].first_step];
  return stored.kind == Ref::Kind::kLocal && load.kind == Ref::Kind::kLocal &&
         load.id == stored.id &&
         LocalOffset(sum, load.index, load.id) == LocalOffset(vector, stored.index, stored.id);
}

void CppPlanner::KeyNode(const ComputeNode& node) {
  Key(program_.buffers[node.output].dtype);
  Key(node.ranges.size());
  for (int64_t extent : node.ranges) Key(extent);
  Key(node.reduction_ranges.size());
  for (int64_t extent : node.reduction_ranges) Key(extent);
  Key(node.reduce);
  Key(node.root);
  Key(node.body.size());
  for (const ScalarOp& op : node.body) {
    Key(op.kind);
    Key(op.dtype);
    Key(op.fn);
    if (op.kind == ScalarOp::Kind::kConst) {
      Key(op.constant);
    } else {
      Key(op.stride);
    }
    Key(op.kind == ScalarOp::Kind::kIndex ? op.index : nullptr);
    Key(op.kind == ScalarOp::Kind::kCheckIndex ? op.site : -1);
    Key(op.args.size());
    for (int arg : op.args) Key(arg);
  }
}

void CppPlanner::KeyRef(const Ref& ref) {
  Key(ref.kind);
  Key(ref.id);
  if (ref.kind != Ref::Kind::kParam || ref.index->kind() != ExprKind::kAdd) {
    Key(ref.index);
    return;
  }
  // A parameter's index without its constant, by its terms (hash-consed):
  // no need to make that expression unless the kernel is printed.
  absl::Span<const Expr> terms = ref.index->operands();
  if (terms.back()->is_const()) terms.remove_suffix(1);
  Key(terms.size());
  for (Expr term : terms) Key(term);
}

Ref CppPlanner::Param(BufferId buffer, Expr index, bool is_output) {
  const kplan::ParamTable::Use param = plan_.params.Add(buffer, index, is_output);
  if (param.added) {
    Key(program_.buffers[buffer].dtype);
    Key(is_output);
  }
  return Ref{Ref::Kind::kParam, param.id, index};
}

Ref CppPlanner::StepRef(const ScalarOp& op) {
  switch (op.kind) {
    case ScalarOp::Kind::kLoad:
      return ResolveLoad(op);
    case ScalarOp::Kind::kCheckIndex:
      return Param(program_.index_errors, ctx_.Const(0), true);
    default:
      return Ref();
  }
}

Ref CppPlanner::ResolveLoad(const ScalarOp& op) {
  if (op.args.empty()) {
    if (const Ref* stored = forwarded_.Find(op.buffer, op.index)) return *stored;
  }
  if (auto local = local_of_.find(op.buffer); local != local_of_.end()) {
    return Ref{Ref::Kind::kLocal, local->second, op.index};
  }
  return Param(op.buffer, op.index, false);
}

Expr CppPlanner::ParamIndex(const Ref& ref) const {
  return plan_.params.Rest(ctx_, ref.id, ref.index);
}

Expr CppPlanner::LocalOffset(const ComputeNode& node, Expr index, int member) {
  const int64_t length = plan_.members[member].local_length *
                         (plan_.team && plan_.ordered_loop < 0 ? NumElements(plan_.outer) : 1);
  std::vector<int64_t> ranges = node.AllRanges();
  auto [it, added] = local_offsets_.try_emplace(std::make_tuple(index, length, ranges));
  if (added) it->second = ctx_.Simplify(ctx_.Mod(index, length), ranges);
  // An ordered kernel's rows in blocks or as a team: one slice per row
  // (variable 0 is the row within the block, KernelPrinter::RefText).
  if (plan_.row_blocks || (plan_.team && plan_.ordered_loop >= 0)) {
    return ctx_.Add(ctx_.Mul(ctx_.Var(0), length), it->second);
  }
  return it->second;
}

// Large outputs written in whole cache lines bypass the caches: the store
// then needs no read of the line it overwrites (a third of a streaming
// kernel's memory traffic) and evicts nothing the kernel reads. Not when
// the member splits over the threads: each thread would need its own
// fence before the loop's closing barrier. By default a model's output
// streams from 16 MiB, a buffer that later kernels read from 64 MiB: the
// stores send it past the cache that its reader would find it in (only
// outputs were measured; see CppOptions.streaming_store_min_bytes).
bool CppPlanner::Streams(const ComputeNode& node, size_t m) const {
  const Buffer& output = program_.buffers[node.output];
  const int64_t default_min_bytes =
      output.kind == BufferKind::kOutput ? int64_t{16} << 20 : int64_t{64} << 20;
  const int64_t min_bytes = options_.streaming_store_min_bytes() == 0
                                ? default_min_bytes
                                : options_.streaming_store_min_bytes();
  return !plan_.members[m].internal && min_bytes > 0 &&
         options_.simd() != proto::CppOptions::SCALAR && node.reduce == ReduceKind::kNone &&
         node.ranges.size() > static_cast<size_t>(plan_.outer_loops) && !plan_.Splits(m) &&
         output.dtype == DType::kF32 && NumBytes(output.dtype, output.sizes) >= min_bytes &&
         node.ranges.back() % kStreamLanes == 0 &&
         WritesWholeLines(node.store_index, static_cast<int>(node.ranges.size()) - 1);
}

int64_t CppPlanner::RefStride(const ComputeNode& node, const Ref& ref) {
  const int inner = static_cast<int>(node.ranges.size() + node.reduction_ranges.size()) - 1;
  switch (ref.kind) {
    case Ref::Kind::kParam:
      return InnerStride(ref.index, inner);
    case Ref::Kind::kLocal:
      return InnerStride(LocalOffset(node, ref.index, ref.id), inner);
    case Ref::Kind::kTemp:
    case Ref::Kind::kAcc:
    case Ref::Kind::kArg:
      return 0;
    case Ref::Kind::kNone:
      break;
  }
  return -1;
}

bool CppPlanner::VectorSteps(const ComputeNode& node, bool& exp) {
  for (const ScalarOp& op : node.body) {
    if (op.dtype != DType::kF32) return false;
    switch (op.kind) {
      case ScalarOp::Kind::kConst:
        break;
      case ScalarOp::Kind::kLoad:
        if (!op.args.empty()) return false;
        break;
      case ScalarOp::Kind::kCall:
        switch (op.fn) {
          case ScalarFn::kExp:
          case ScalarFn::kSigmoid:
          case ScalarFn::kTanh:
          case ScalarFn::kErf:
            exp = true;
            break;
          case ScalarFn::kAdd:
          case ScalarFn::kSub:
          case ScalarFn::kMul:
          case ScalarFn::kDiv:
          case ScalarFn::kNeg:
            break;
          default:
            return false;
        }
        break;
      default:
        return false;
    }
  }
  return true;
}

bool CppPlanner::VectorLoads(const ComputeNode& node, int member) {
  for (size_t i = 0; i < node.body.size(); ++i) {
    if (node.body[i].kind != ScalarOp::Kind::kLoad) continue;
    const int64_t stride = RefStride(node, plan_.load_refs[plan_.members[member].first_step + i]);
    if (stride != 0 && stride != 1) return false;
  }
  return true;
}

bool CppPlanner::VectorizesExp(const ComputeNode& node, int member) {
  if (options_.simd() == proto::CppOptions::SCALAR || node.reduce != ReduceKind::kNone ||
      plan_.members[member].streams || plan_.Splits(member) ||
      node.ranges.size() <= static_cast<size_t>(plan_.outer_loops)) {
    return false;
  }
  bool exp = false;
  // Strides last: a local array's offset takes a simplification to know,
  // and most members have no exp.
  return VectorSteps(node, exp) && exp && RefStride(node, plan_.members[member].store) == 1 &&
         VectorLoads(node, member);
}

bool CppPlanner::VectorizesExtreme(const ComputeNode& node, int member) {
  bool exp = false;
  return options_.simd() != proto::CppOptions::SCALAR &&
         (node.reduce == ReduceKind::kMax || node.reduce == ReduceKind::kMin) &&
         program_.buffers[node.output].dtype == DType::kF32 &&
         node.ranges.size() == static_cast<size_t>(plan_.outer_loops) &&
         node.reduction_ranges.size() == 1 && !plan_.Splits(member) && VectorSteps(node, exp) &&
         VectorLoads(node, member);
}

std::optional<std::vector<int64_t>> CppPlanner::AffineRef(const ComputeNode& node, const Ref& ref) {
  if (ref.kind != Ref::Kind::kParam && ref.kind != Ref::Kind::kLocal) return std::nullopt;
  const Expr index =
      ref.kind == Ref::Kind::kLocal ? LocalOffset(node, ref.index, ref.id) : ParamIndex(ref);
  std::vector<int64_t> coefficients(node.ranges.size() + node.reduction_ranges.size());
  int64_t constant = 0;
  if (!AffineCoefficients(index, absl::MakeSpan(coefficients), constant)) return std::nullopt;
  return coefficients;
}

std::optional<MatVec> CppPlanner::MatchMatVec(const ComputeNode& node, int member, bool alone) {
  const size_t inner_loops = node.ranges.size() - plan_.outer_loops;
  if (options_.simd() == proto::CppOptions::SCALAR || node.reduce != ReduceKind::kSum ||
      node.reduction_ranges.size() != 1 || node.ranges.empty() || (inner_loops == 0 && !alone) ||
      program_.buffers[node.output].dtype != DType::kF32 || node.body.size() != 3 ||
      node.root != 2 || node.body[2].kind != ScalarOp::Kind::kCall ||
      node.body[2].fn != ScalarFn::kMul || node.body[2].dtype != DType::kF32) {
    return std::nullopt;
  }
  const size_t row = node.ranges.size() - 1;  // the reduction variable is row + 1
  std::optional<std::vector<int64_t>> loads[2];
  for (int step = 0; step < 2; ++step) {
    if (node.body[step].kind != ScalarOp::Kind::kLoad || !node.body[step].args.empty()) {
      return std::nullopt;
    }
    loads[step] = AffineRef(node, plan_.load_refs[plan_.members[member].first_step + step]);
    if (!loads[step].has_value()) return std::nullopt;
  }
  const std::optional<std::vector<int64_t>> out = AffineRef(node, plan_.members[member].store);
  if (!out.has_value()) return std::nullopt;
  MatVec matvec;
  matvec.out_stride = (*out)[row];
  for (int step = 0; step < 2; ++step) {
    const std::vector<int64_t>& vector = *loads[step];
    const std::vector<int64_t>& matrix = *loads[1 - step];
    if (vector[row] != 0 || vector[row + 1] != 1) continue;
    matvec.vector_step = step;
    matvec.matrix_step = 1 - step;
    if (matrix[row + 1] == 1 && matrix[row] != 0 && node.reduction_ranges[0] % kVectorLanes == 0 &&
        node.ranges.back() % kDotRows == 0) {
      matvec.leading = matrix[row];
      return matvec;
    }
    // Printed only in an ordered kernel (in blocks of rows, a team or
    // alone), where the loop form of a recurrence puts it.
    if (matrix[row] == 1 && matrix[row + 1] != 0 && matvec.out_stride == 1 &&
        node.ranges.back() % kVectorLanes == 0 && plan_.ordered_loop >= 0) {
      matvec.leading = matrix[row + 1];
      matvec.rows_summed = true;
      return matvec;
    }
  }
  return std::nullopt;
}

int CppPlanner::WelfordChains(const ComputeNode& node, int member) {
  bool exp = false;
  const int lanes = kWelfordVectorChains * kVectorLanes;
  if (options_.simd() == proto::CppOptions::SCALAR ||
      program_.buffers[node.output].dtype != DType::kF32 || node.reduction_ranges.empty() ||
      node.reduction_ranges.back() % lanes != 0 || !VectorSteps(node, exp) ||
      !VectorLoads(node, member)) {
    return 0;
  }
  return kWelfordVectorChains;
}

bool CppPlanner::RunsAsTeam(const Kernel& kernel) {
  if (!options_.openmp() || plan_.outer.size() > 1 || NumElements(plan_.outer) > kTeamRows)
    return false;
  bool shares_a_product = false;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    const size_t inner_loops = node.ranges.size() - plan_.outer_loops;
    if (inner_loops == 0 || plan_.members[m].streams) return false;
    if (plan_.members[m].matvec.has_value() && inner_loops == 1 && plan_.Splits(m)) {
      shares_a_product = true;
    } else if (node.reduce != ReduceKind::kNone) {
      return false;
    }
  }
  if (!shares_a_product) return false;
  // The strides along the outer loop are those of a team's local arrays.
  plan_.team = true;
  for (size_t m = 0; m < kernel.nodes.size() && plan_.team; ++m) {
    CppMemberPlan& member = plan_.members[m];
    if (!member.matvec.has_value()) continue;
    member.team_strides =
        TeamMatVecStrides(program_.nodes[kernel.nodes[m]], static_cast<int>(m), *member.matvec);
    plan_.team = member.team_strides.has_value();
  }
  return plan_.team;
}

void CppPlanner::PlanOrderedRows(const Kernel& kernel) {
  if (plan_.ordered_loop != 1 || plan_.outer.size() != 2) return;
  bool has_product = false, large_matrix = false;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    const ComputeNode& node = program_.nodes[kernel.nodes[m]];
    if (node.ranges.size() == plan_.outer.size()) return;
    if (!plan_.members[m].matvec.has_value()) continue;
    has_product = true;
    large_matrix |= node.ranges.back() * node.reduction_ranges[0] * 4 > kStepMatrixBytes;
  }
  if (!has_product) return;
  int64_t row_bytes = 0;  // a row's slices of the local arrays
  for (int m : plan_.locals) {
    const DType dtype = program_.buffers[program_.nodes[kernel.nodes[m]].output].dtype;
    row_bytes += NumBytes(dtype, {plan_.members[m].local_length});
  }
  plan_.block_rows =
      std::clamp<int64_t>(kMaxBlockLocalBytes / std::max<int64_t>(row_bytes, 1), 1, kMaxBlockRows);
  // The strides along the rows are those of the local arrays, a row's
  // slice after another's.
  const bool team = large_matrix && options_.openmp() && plan_.outer[0] <= plan_.block_rows;
  bool& runs = team ? plan_.team : plan_.row_blocks;
  runs = true;
  for (size_t m = 0; m < kernel.nodes.size() && runs; ++m) {
    CppMemberPlan& member = plan_.members[m];
    if (!member.matvec.has_value()) continue;
    member.team_strides =
        TeamMatVecStrides(program_.nodes[kernel.nodes[m]], static_cast<int>(m), *member.matvec);
    runs = member.team_strides.has_value();
  }
}

std::optional<TeamStrides> CppPlanner::TeamMatVecStrides(const ComputeNode& node, int member,
                                                         const MatVec& matvec) {
  const int base = plan_.members[member].first_step;
  const std::optional<std::vector<int64_t>> vector =
      AffineRef(node, plan_.load_refs[base + matvec.vector_step]);
  const std::optional<std::vector<int64_t>> matrix =
      AffineRef(node, plan_.load_refs[base + matvec.matrix_step]);
  const std::optional<std::vector<int64_t>> out = AffineRef(node, plan_.members[member].store);
  if (!vector || !matrix || !out) return std::nullopt;
  if (plan_.outer.empty()) return TeamStrides{};
  for (int i = 0; i < plan_.outer_loops; ++i) {
    if ((*matrix)[i] != 0) return std::nullopt;
  }
  return TeamStrides{(*vector)[0], (*out)[0]};
}

int64_t CppPlanner::ColumnBlock(const Kernel& kernel) {
  if (options_.simd() == proto::CppOptions::SCALAR || plan_.outer_loops == 0 ||
      plan_.outer.back() < kVectorLanes / 2) {
    return 0;
  }
  bool columnar = false;
  for (size_t m = 0; m < kernel.nodes.size(); ++m) {
    if (!MayRunAsColumns(kernel, m, columnar)) return 0;
  }
  if (!columnar) return 0;
  const int64_t columns = plan_.outer.back();
  const int64_t around = Product(plan_.outer, 0, plan_.outer.size() - 1);
  const int64_t wide_blocks = (columns + kColumnBlock - 1) / kColumnBlock;
  return std::min(columns, around * wide_blocks >= kMinColumnBlocks ? kColumnBlock : kVectorLanes);
}

bool CppPlanner::MayRunAsColumns(const Kernel& kernel, size_t m, bool& columnar) {
  const ComputeNode& node = program_.nodes[kernel.nodes[m]];
  const CppMemberPlan& member = plan_.members[m];
  const int column = plan_.outer_loops - 1;
  if (node.ranges.size() != static_cast<size_t>(plan_.outer_loops) || member.streams ||
      member.matvec || member.vector_extreme || member.welford_chains > 0) {
    return false;
  }
  const bool reduces = node.reduce != ReduceKind::kNone;
  if (reduces && node.reduce != ReduceKind::kSum && node.reduce != ReduceKind::kProd &&
      node.reduce != ReduceKind::kMax && node.reduce != ReduceKind::kMin) {
    return false;
  }
  const int innermost = static_cast<int>(node.AllRanges().size()) - 1;
  for (size_t i = 0; i < node.body.size(); ++i) {
    const ScalarOp& op = node.body[i];
    if (op.kind == ScalarOp::Kind::kCheckIndex && reduces) return false;
    if (op.kind != ScalarOp::Kind::kLoad) continue;
    const Ref& ref = plan_.load_refs[member.first_step + i];
    if (ref.kind != Ref::Kind::kParam) {
      if (reduces) return false;  // a value of another member: the reductions run first
      continue;
    }
    const std::optional<std::vector<int64_t>> strides = AffineRef(node, ref);
    if (!strides.has_value() || !op.args.empty()) return false;
    const int64_t along_columns = (*strides)[column];
    if (along_columns != 0 && along_columns != 1) return false;
    if (!reduces) continue;
    for (int n : kernel.nodes) {
      if (program_.nodes[n].output == op.buffer) return false;
    }
    columnar |= along_columns == 1 && (*strides)[innermost] != 1;
  }
  return true;
}

bool CppPlanner::SplitWork(const ComputeNode& node) const {
  constexpr int64_t kMinSplitWork = 1 << 15;
  const int64_t work =
      SaturatingMul(Product(node.ranges, plan_.outer_loops, node.ranges.size()),
                    Product(node.reduction_ranges, 0, node.reduction_ranges.size()));
  return plan_.few_outer && work >= kMinSplitWork;
}

namespace {

// Where a store goes, in words.
std::string StoreText(const Ref& ref) {
  if (ref.kind == Ref::Kind::kNone) return "a variable";
  return absl::StrCat(ref.kind == Ref::Kind::kLocal ? "local array " : "", RefName(ref));
}

// How member m runs, as the printer will print it.
std::string MemberRuns(const CppKernelPlan& plan, size_t m) {
  const CppMemberPlan& member = plan.members[m];
  std::vector<std::string> runs;
  if (member.streams) runs.push_back("streaming stores of whole lines");
  if (member.matvec) {
    runs.push_back(
        absl::StrCat("matrix-vector call (rows ", member.matvec->leading, " apart, ",
                     member.matvec->rows_summed
                         ? "summed, scaled by the vector's elements)"
                         : absl::StrCat("results ", member.matvec->out_stride, " apart)")));
  }
  if (member.vectorizes) runs.push_back("explicit vectors of 16 lanes (exponential)");
  if (member.vector_extreme) runs.push_back("explicit vectors, 4 chains of running extremes");
  if (member.welford_chains > 0) {
    runs.push_back(absl::StrCat("Welford in ", member.welford_chains, " vector chains"));
  }
  if (member.sum_in_vector_loop) {
    runs.push_back(absl::StrCat("summed in member ", m - 1, "'s vector loop"));
  }
  if (member.sum_from_variance) {
    runs.push_back(absl::StrCat("member ", m - 1, "'s mean times the count"));
  }
  if (plan.Splits(m)) runs.push_back("its loops split over the threads when loom_split");
  if (member.store_alongside.has_value()) {
    runs.push_back(absl::StrCat("prefetches the stores of ", RefName(*member.store_alongside)));
  }
  return runs.empty() ? "plain loops" : absl::StrJoin(runs, "; ");
}

std::string KernelThreads(const CppKernelPlan& plan) {
  if (plan.alone_matvec) {
    return plan.alone_matvec_shared ? "blocks of the product's rows" : "nothing (one product)";
  }
  if (plan.team && plan.ordered_loop >= 0) {
    return absl::StrCat("a team over ", plan.outer[0], " rows, each step's products by blocks");
  }
  if (plan.team) return absl::StrCat("a team over ", NumElements(plan.outer), " outer iterations");
  if (plan.row_blocks) {
    return absl::StrCat(plan.parallel_outer ? "blocks" : "nothing; one block at a time",
                        " of at most ", plan.block_rows, " rows, each block's steps in order");
  }
  if (plan.column_block > 0) {
    return absl::StrCat(plan.parallel_outer ? "outer loops and " : "nothing; ", "blocks of ",
                        plan.column_block, " columns (the last outer loop, run innermost)");
  }
  const char* outer = plan.parallel_outer ? "outer loops" : "nothing";
  if (plan.may_split)
    return absl::StrCat("members' loops if more threads than outer, else ", outer);
  return outer;
}

}  // namespace

std::string CppKernelPlan::ToString(const LoopProgram& program, const Kernel& kernel) const {
  std::string text = kplan::PlanHeadLine(kernel, outer);
  absl::StrAppend(&text, "  threads share: ", KernelThreads(*this), "\n",
                  kplan::PlanParamLines(program, params));
  for (size_t m = 0; m < members.size(); ++m) {
    absl::StrAppend(&text, kplan::PlanMemberStart(program.nodes[kernel.nodes[m]], m), ", stores ",
                    StoreText(members[m].store), "\n    runs: ", MemberRuns(*this, m), "\n");
  }
  return text;
}

}  // namespace loom::cpp
