#include "backends/common/kernel_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/expr_analysis.h"

namespace loom::kplan {

ParamTable::Use ParamTable::Add(BufferId buffer, Expr index, bool written) {
  const int64_t offset = ConstantTerm(index);
  auto [it, added] = id_of_.emplace(std::make_pair(buffer, offset), static_cast<int>(args_.size()));
  if (added) {
    args_.push_back(BufferRef{buffer, offset});
    written_.push_back(written);
  } else if (written) {
    written_[it->second] = true;  // read first, written later (a loop's state)
  }
  return Use{it->second, added};
}

Expr ParamTable::Rest(ExprContext& ctx, int id, Expr index) const {
  const int64_t offset = args_[id].offset;
  return offset == 0 ? index : ctx.Sub(index, ctx.Const(offset));
}

std::vector<bool> LiveSteps(const ComputeNode& node) {
  std::vector<bool> live(node.body.size(), false);
  if (node.root >= 0) live[node.root] = true;
  for (int i = static_cast<int>(node.body.size()) - 1; i >= 0; --i) {
    if (!live[i]) continue;
    for (int arg : node.body[i].args) live[arg] = true;
  }
  return live;
}

std::vector<Expr> DropExtentOneLoops(ExprContext& ctx, const ComputeNode& node) {
  const std::vector<int64_t> all = node.AllRanges();
  std::vector<Expr> replace;
  replace.reserve(all.size());
  for (size_t v = 0; v < all.size(); ++v) {
    replace.push_back(all[v] == 1 ? ctx.Const(0) : ctx.Var(static_cast<int>(v)));
  }
  return replace;
}

KernelPlan PlanKernel(const LoopProgram& program, const Kernel& kernel, int outer_loops,
                      bool drop_dead_code) {
  KernelPlan plan;
  plan.outer_loops = outer_loops;
  const std::vector<int64_t>& first = program.nodes[kernel.nodes.front()].ranges;
  plan.outer.assign(first.begin(), first.begin() + outer_loops);
  plan.outer_total = NumElements(plan.outer);
  plan.members.reserve(kernel.nodes.size());
  for (int n : kernel.nodes) {
    const ComputeNode& node = program.nodes[n];
    MemberPlan& member = plan.members.emplace_back();
    member.node = &node;
    const size_t inner_from = std::min(node.ranges.size(), static_cast<size_t>(outer_loops));
    member.inner_count = NumElements(absl::MakeConstSpan(node.ranges).subspan(inner_from));
    member.reduce_count = NumElements(node.reduction_ranges);
    member.internal = std::find(kernel.internal.begin(), kernel.internal.end(), node.output) !=
                      kernel.internal.end();
    if (drop_dead_code) {
      member.live = LiveSteps(node);
      member.replace = DropExtentOneLoops(*program.exprs, node);
    }
  }
  return plan;
}

int FunctionTable::Find(absl::string_view key) const {
  auto it = function_of_key_.find(key);
  return it == function_of_key_.end() ? -1 : it->second;
}

int FunctionTable::Add(absl::string_view key, std::string body) {
  int function = -1;
  if (share_equal_bodies_) {
    function = AddBody(std::move(body));
  } else {
    bodies_.push_back(std::move(body));
    function = static_cast<int>(bodies_.size()) - 1;
  }
  function_of_key_.emplace(key, function);
  return function;
}

int FunctionTable::AddBody(std::string body) {
  auto same = function_of_body_.find(body);
  if (same == function_of_body_.end()) {
    bodies_.push_back(std::move(body));
    same = function_of_body_.emplace(bodies_.back(), static_cast<int>(bodies_.size()) - 1).first;
  }
  return same->second;
}

namespace {

std::string Extents(const std::vector<int64_t>& extents) {
  return absl::StrCat("[", absl::StrJoin(extents, ", "), "]");
}

}  // namespace

std::string PlanHeadLine(const Kernel& kernel, const std::vector<int64_t>& outer) {
  return absl::StrCat("kernel ", kernel.name, ": ", kernel.nodes.size(), " members, outer loops ",
                      Extents(outer), "\n");
}

std::string PlanParamLines(const LoopProgram& program, const ParamTable& params) {
  std::string text;
  for (size_t p = 0; p < params.size(); ++p) {
    const BufferRef& arg = params.args()[p];
    absl::StrAppend(&text, "  p", p, ": ", program.buffers[arg.buffer].name, " + ", arg.offset,
                    params.written(p) ? " (written)" : " (read)", "\n");
  }
  return text;
}

std::string PlanMemberStart(const ComputeNode& node, size_t m) {
  return absl::StrCat("  member ", m, " ", node.name, ": ",
                      node.reduce == ReduceKind::kNone ? "pointwise" : ReduceKindName(node.reduce),
                      " over ", Extents(node.AllRanges()));
}

void AppendLaunch(LaunchTable& launches, int function, const std::vector<BufferRef>& args,
                  int kernels) {
  launches.function.push_back(function);
  launches.args.insert(launches.args.end(), args.begin(), args.end());
  launches.arg_offsets.push_back(static_cast<int32_t>(launches.args.size()));
  launches.kernel_offsets.push_back(launches.kernel_offsets.back() + kernels);
}

}  // namespace loom::kplan
