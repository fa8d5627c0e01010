#include "ir/module.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace loom {
namespace {

std::string BufferText(const LoopProgram& program, BufferId buffer, int64_t offset) {
  return offset == 0 ? program.buffers[buffer].name
                     : absl::StrCat(program.buffers[buffer].name, "+", offset);
}

std::string GemmText(const Gemm& gemm, const LoopProgram& program) {
  auto matrix = [&](const GemmMatrix& m) {
    return absl::StrCat(BufferText(program, m.buffer, m.offset), m.transposed ? "^T" : "");
  };
  std::string text =
      absl::StrCat("gemm ", DTypeName(gemm.dtype), " m=", gemm.m, " n=", gemm.n, " k=", gemm.k,
                   " (", matrix(gemm.a), ", ", matrix(gemm.b), ", ", matrix(gemm.c), ") ld ",
                   gemm.a.leading, " ", gemm.b.leading, " ", gemm.c.leading);
  if (!gemm.batch.empty()) {
    absl::StrAppend(&text, " batch [", absl::StrJoin(gemm.batch, ", "), "] strides ",
                    absl::StrJoin(gemm.a.batch_strides, ","), " ",
                    absl::StrJoin(gemm.b.batch_strides, ","), " ",
                    absl::StrJoin(gemm.c.batch_strides, ","));
  }
  if (!gemm.accumulate.empty()) {
    absl::StrAppend(&text, " accumulate [", absl::StrJoin(gemm.accumulate, ", "), "] strides ",
                    absl::StrJoin(gemm.a.accumulate_strides, ","), " ",
                    absl::StrJoin(gemm.b.accumulate_strides, ","));
  }
  return text;
}

}  // namespace

std::string StandaloneText(const GeneratedSource& source) {
  return absl::StrCat(absl::StrJoin(source.support_sources, "\n"), source.text);
}

int LaunchTable::LaunchOfKernel(int kernel) const {
  const auto after = std::upper_bound(kernel_offsets.begin(), kernel_offsets.end(), kernel);
  const int launch = static_cast<int>(after - kernel_offsets.begin()) - 1;
  return launch >= 0 && launch < static_cast<int>(size()) ? launch : -1;
}

std::vector<absl::string_view> LaunchNodes(const LaunchTable& launches, const LoopProgram& program,
                                           const Schedule& schedule, size_t launch) {
  std::vector<absl::string_view> nodes;
  for (int k = launches.kernel_offsets[launch];
       k < launches.kernel_offsets[launch + 1] && k < static_cast<int>(schedule.kernels.size());
       ++k) {
    for (int node : schedule.kernels[k].nodes) nodes.push_back(program.nodes[node].name);
  }
  return nodes;
}

std::string PrintLaunches(const GeneratedSource& source, const LoopProgram& program,
                          const Schedule& schedule) {
  std::string text;
  const LaunchTable& launches = source.launches;
  for (size_t i = 0; i < launches.size(); ++i) {
    if (launches.IsGemm(i)) {
      absl::StrAppend(&text, GemmText(launches.gemms[launches.GemmOf(i)], program));
    } else {
      std::vector<std::string> args;
      for (int a = launches.arg_offsets[i]; a < launches.arg_offsets[i + 1]; ++a) {
        args.push_back(BufferText(program, launches.args[a].buffer, launches.args[a].offset));
      }
      absl::StrAppend(&text, source.functions[launches.function[i]], "(", absl::StrJoin(args, ", "),
                      ")");
    }
    absl::StrAppend(&text, "  # ", absl::StrJoin(LaunchNodes(launches, program, schedule, i), ", "),
                    "\n");
  }
  return text;
}

std::string SourceWithPlans(const GeneratedSource& source) {
  std::string text;
  size_t copied = 0;  // source.text[0, copied) is in `text`
  for (size_t f = 0; f < source.function_plans.size() && f < source.functions.size(); ++f) {
    // The definition's line: the first that names the function called.
    const size_t name = source.text.find(absl::StrCat(" ", source.functions[f], "("), copied);
    if (name == std::string::npos) continue;
    const size_t line = source.text.rfind('\n', name) + 1;  // npos + 1 is 0
    absl::StrAppend(&text, absl::string_view(source.text).substr(copied, line - copied));
    for (absl::string_view plan_line :
         absl::StrSplit(source.function_plans[f], '\n', absl::SkipEmpty())) {
      absl::StrAppend(&text, "// plan: ", plan_line, "\n");
    }
    copied = line;
  }
  absl::StrAppend(&text, absl::string_view(source.text).substr(copied));
  return text;
}

}  // namespace loom
