#include "ir/schedule.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"

namespace loom {
namespace {

// The space that begins at `offset` in Schedule::refused_spaces, and the
// offset just past it.
absl::Span<const int64_t> RefusedSpace(const Schedule& schedule, size_t& offset) {
  const size_t loops = schedule.refused_spaces[offset];
  const absl::Span<const int64_t> space =
      absl::MakeConstSpan(schedule.refused_spaces).subspan(offset + 1, loops);
  offset += 1 + loops;
  return space;
}

}  // namespace

absl::string_view FusionReasonText(FusionReason reason) {
  switch (reason) {
    case FusionReason::kVertical:
      return "vertical";
    case FusionReason::kHorizontal:
      return "horizontal";
    case FusionReason::kIterationSpacesDiffer:
      return "iteration spaces differ";
    case FusionReason::kKernelTooLarge:
      return "kernel too large";
    case FusionReason::kConsumerRunsBetween:
      return "a consumer runs between them";
    case FusionReason::kDataCrossesIterations:
      return "data crosses loop iterations";
    case FusionReason::kExternCall:
      return "library call";
    case FusionReason::kInOrderedLoop:
      return "in a loop that runs in order";
  }
  return "unknown";
}

std::string DescribeFusion(const FusionDecision& decision, const Schedule& schedule,
                           const LoopProgram& program) {
  switch (decision.reason) {
    case FusionReason::kVertical:
    case FusionReason::kHorizontal:
      return "";
    case FusionReason::kIterationSpacesDiffer: {
      size_t offset = decision.specifics[0];
      const absl::Span<const int64_t> a = RefusedSpace(schedule, offset);
      const absl::Span<const int64_t> b = RefusedSpace(schedule, offset);
      return absl::StrCat("[", absl::StrJoin(a, ","), "] vs [", absl::StrJoin(b, ","), "]");
    }
    case FusionReason::kKernelTooLarge:
      return absl::StrCat(decision.specifics[0], " nodes > ", decision.specifics[1]);
    case FusionReason::kConsumerRunsBetween:
      return absl::StrCat("'", program.nodes[decision.specifics[0]].name,
                          "' reads one and runs before the other (fusing "
                          "could create a cycle)");
    case FusionReason::kDataCrossesIterations:
      return "a member reads a buffer of another outside the outer iteration "
             "that wrote it, or one with several writers";
    case FusionReason::kExternCall:
      return absl::StrCat("'", program.nodes[decision.specifics[0]].name,
                          "' is a gemm call, which runs alone");
    case FusionReason::kInOrderedLoop:
      return absl::StrCat("'", program.nodes[decision.specifics[0]].name,
                          "' is in a loop whose iterations run in order, a kernel of its own");
  }
  return "";
}

std::string PrintSchedule(const Schedule& schedule, const LoopProgram& program) {
  std::string text;
  for (const Kernel& kernel : schedule.kernels) {
    absl::StrAppend(
        &text, "kernel ", kernel.name, " (", kernel.outer_loops, " outer loops",
        kernel.chain_length > 1 ? absl::StrCat(", a chain with the next ", kernel.chain_length - 1)
                                : "",
        kernel.ordered_loop >= 0 ? absl::StrCat(", loop ", kernel.ordered_loop, " in order") : "",
        ")\n");
    if (!kernel.internal.empty()) {
      std::vector<std::string> names;
      for (BufferId b : kernel.internal) {
        names.push_back(program.buffers[b].name);
      }
      absl::StrAppend(&text, "  internal (never stored): ", absl::StrJoin(names, ", "), "\n");
    }
    for (int node : kernel.nodes) {
      absl::StrAppend(&text, "  ", PrintComputeNode(program, program.nodes[node]));
    }
  }
  return text;
}

}  // namespace loom
