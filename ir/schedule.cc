#include "ir/schedule.h"

#include "absl/strings/str_cat.h"

namespace loom {

std::string PrintSchedule(const Schedule& schedule, const LoopProgram& program) {
  std::string text;
  for (const Kernel& kernel : schedule.kernels) {
    absl::StrAppend(&text, "kernel ", kernel.name, "\n");
    for (int node : kernel.nodes) {
      absl::StrAppend(&text, "  ", PrintComputeNode(program, program.nodes[node]));
    }
  }
  return text;
}

}  // namespace loom
