#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/common/c_scalar.h"
#include "backends/cuda/kernel_printer.h"
#include "ir/status_macros.h"

namespace loom::cuda {
namespace {

using cscalar::CType;

// The name of a reduction kind inside helper names.
const char* KindWord(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      return "sum";
    case ReduceKind::kProd:
      return "prod";
    case ReduceKind::kMax:
      return "max";
    case ReduceKind::kMin:
      return "min";
    case ReduceKind::kArgMax:
      return "argmax";
    case ReduceKind::kArgMin:
      return "argmin";
    case ReduceKind::kArgMaxLast:
      return "argmaxlast";
    case ReduceKind::kArgMinLast:
      return "argminlast";
    case ReduceKind::kVar:  // printed by PrintVariance, with no functor
    case ReduceKind::kNone:
      break;
  }
  return "none";
}

// The functor that combines two partial results of `kind` over `dtype`.
std::string CombineFunctor(ReduceKind kind, DType dtype, UnitNeeds& needs) {
  const char* t = CType(dtype);
  const std::string name = absl::StrCat("loom_", KindWord(kind), "_", t);
  if (needs.combines.count(name) != 0) return name;
  std::string body;
  if (IsArgReduce(kind)) {
    body = absl::StrFormat(
        "struct %s {\n  __device__ loom_arg<%s> operator()(loom_arg<%s> a, "
        "loom_arg<%s> b) const {\n    return %s ? b : a;\n  }\n};\n",
        name, t, t, t, cscalar::ReduceTakesOther(kind, dtype, "a.v", "a.i", "b.v", "b.i"));
  } else {
    const std::string combined =
        kind == ReduceKind::kSum ? "a + b"
        : kind == ReduceKind::kProd
            ? "a * b"
            : absl::StrCat(cscalar::ReduceTakesOther(kind, dtype, "a", "", "b", ""), " ? b : a");
    body = absl::StrFormat(
        "struct %s {\n  __device__ %s operator()(%s a, %s b) const {\n    "
        "return %s;\n  }\n};\n",
        name, t, t, t, combined);
  }
  needs.combines.emplace(name, std::move(body));
  return name;
}

}  // namespace

// A reduction over the member's reduction loops, by the whole team
// (`team`: a team-stride loop, then a team combine) or by each thread alone.
void KernelPrinter::PrintVariance(const Member& member, int m, int depth, bool team) {
  const ComputeNode& node = *member.node;
  const char* t = CType(program_.buffers[node.output].dtype);
  const std::string w = absl::StrCat("w", m);
  const std::string type = absl::StrCat("loom_welford<", t, ">");
  needs_.welford = true;
  Line(depth, absl::StrCat(type, " ", w, " = {0, 0, 0};"));
  const bool cooperative = team && team_size_ > 1 && member.reduce_count > 1;
  Loop("r", static_cast<int>(node.ranges.size()), node.reduction_ranges, cooperative, depth,
       [&](int d) {
         PrintSteps(member, d);
         Line(d, absl::StrCat("loom_welford_add(", w, ", ", Temp(node.root), ");"));
       });
  if (cooperative) {
    needs_.team_reductions = true;
    const std::string combine = absl::StrCat("loom_welford_combine<", t, ">()");
    if (team_ == Team::kWarp) {
      Line(depth, absl::StrCat(w, " = loom_warp_reduce(", w, ", ", combine, ");"));
    } else {
      const std::string scratch = absl::StrCat("loom_scratch_welford_", t);
      scratch_.insert(absl::StrCat("__shared__ ", type, " ", scratch, "[", kWarpSize, "];"));
      Line(depth, absl::StrCat(w, " = loom_block_reduce(", w, ", ", combine, ", ", type,
                               "{0, 0, 0}, ", scratch, ");"));
      // The block reduction's barriers order everything the member read.
      pending_reads_.clear();
      pending_writes_.clear();
    }
  }
  Line(depth, absl::StrCat(t, " acc", m, " = ", w, ".m2 / ", w, ".n;"));
}

void KernelPrinter::PrintReduction(const Member& member, int m, int depth, bool team) {
  const ComputeNode& node = *member.node;
  if (node.reduce == ReduceKind::kVar) return PrintVariance(member, m, depth, team);
  const bool arg_reduce = IsArgReduce(node.reduce);
  const DType out_type = program_.buffers[node.output].dtype;
  const DType acc_type = arg_reduce ? node.body[node.root].dtype : out_type;
  const std::string acc = absl::StrCat("acc", m);
  const std::string arg = absl::StrCat("arg", m);
  const std::string init = cscalar::ReduceInit(node.reduce, acc_type);
  Line(depth, absl::StrCat(CType(acc_type), " ", acc, " = ", init, ";"));
  if (arg_reduce) Line(depth, absl::StrCat("int64_t ", arg, " = 0;"));
  // A team shares a reduction of more than one element; the linear
  // position of an element is then its row-major position.
  const bool cooperative = team && team_size_ > 1 && member.reduce_count > 1;
  const int first = static_cast<int>(node.ranges.size());
  const std::string position = cooperative ? "r" : RowMajorPosition(first, node.reduction_ranges);
  Loop("r", first, node.reduction_ranges, cooperative, depth, [&](int d) {
    PrintSteps(member, d);
    Line(d, cscalar::ReduceUpdate(node.reduce, acc_type, Temp(node.root), position, acc, arg));
  });
  if (!cooperative) return;
  const std::string combine = CombineFunctor(node.reduce, acc_type, needs_);
  needs_.team_reductions = true;
  const std::string value_type =
      arg_reduce ? absl::StrCat("loom_arg<", CType(acc_type), ">") : CType(acc_type);
  const std::string value = arg_reduce ? absl::StrCat(value_type, "{", acc, ", ", arg, "}") : acc;
  const std::string target = arg_reduce ? arg : acc;
  const std::string field = arg_reduce ? ".i" : "";
  if (team_ == Team::kWarp) {
    Line(depth,
         absl::StrCat(target, " = loom_warp_reduce(", value, ", ", combine, "())", field, ";"));
    return;
  }
  const std::string scratch =
      absl::StrCat("loom_scratch_", arg_reduce ? "arg_" : "", CType(acc_type));
  scratch_.insert(absl::StrCat("__shared__ ", value_type, " ", scratch, "[", kWarpSize, "];"));
  const std::string identity = arg_reduce ? absl::StrCat(value_type, "{", init, ", 0}") : init;
  Line(depth, absl::StrCat(target, " = loom_block_reduce(", value, ", ", combine, "(), ", identity,
                           ", ", scratch, ")", field, ";"));
  // The block reduction's barriers order everything the member read.
  pending_reads_.clear();
  pending_writes_.clear();
}

}  // namespace loom::cuda
