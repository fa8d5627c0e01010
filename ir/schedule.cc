#include "ir/schedule.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom {

std::string PrintSchedule(const Schedule& schedule, const LoopProgram& program) {
  std::string text;
  for (const Kernel& kernel : schedule.kernels) {
    absl::StrAppend(&text, "kernel ", kernel.name, " (", kernel.outer_loops,
                    " outer loops)\n");
    if (!kernel.internal.empty()) {
      std::vector<std::string> names;
      for (BufferId b : kernel.internal) names.push_back(program.buffers[b].name);
      absl::StrAppend(&text, "  internal (never stored): ", absl::StrJoin(names, ", "), "\n");
    }
    for (int node : kernel.nodes) {
      absl::StrAppend(&text, "  ", PrintComputeNode(program, program.nodes[node]));
    }
  }
  return text;
}

}  // namespace loom
