#include "ir/module.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom {

std::string PrintLaunches(const GeneratedSource& source, const LoopProgram& program,
                          const Schedule& schedule) {
  std::string text;
  const LaunchTable& launches = source.launches;
  for (size_t i = 0; i < launches.size(); ++i) {
    std::vector<std::string> args;
    for (int a = launches.arg_offsets[i]; a < launches.arg_offsets[i + 1]; ++a) {
      const BufferRef& arg = launches.args[a];
      args.push_back(arg.offset == 0 ? program.buffers[arg.buffer].name
                                     : absl::StrCat(program.buffers[arg.buffer].name,
                                                    "+", arg.offset));
    }
    std::vector<std::string> nodes;
    if (i < schedule.kernels.size()) {
      for (int node : schedule.kernels[i].nodes) nodes.push_back(program.nodes[node].name);
    }
    absl::StrAppend(&text, source.functions[launches.function[i]], "(",
                    absl::StrJoin(args, ", "), ")  # ", absl::StrJoin(nodes, ", "), "\n");
  }
  return text;
}

}  // namespace loom
