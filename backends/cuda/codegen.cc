#include "backends/cuda/codegen.h"

#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/common/c_scalar.h"
#include "backends/common/codegen_pass.h"
#include "backends/common/kernel_plan.h"
#include "backends/cuda/kernel_printer.h"
#include "backends/cuda/prelude.h"
#include "ir/shape_constants.h"
#include "ir/status_macros.h"
#include "passes/pass.h"

namespace loom::cuda {
namespace {

// `text` without its whole-line comments (the names of the nodes a kernel
// computes), so that kernels differing only in names share a function.
std::string WithoutCommentLines(absl::string_view text) {
  std::string code;
  code.reserve(text.size());
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "//")) continue;
    absl::StrAppend(&code, line, "\n");
  }
  return code;
}

LOOM_REGISTER_PASS_WITH_OPTIONS(
    "codegen-cuda", "cuda", proto::CudaOptions, [](const proto::CudaOptions& options) {
      const int block = options.block_size();
      if (block != 0 && (block < kWarpSize || block > 1024 || (block & (block - 1)))) {
        return absl::StatusOr<std::unique_ptr<Pass>>(absl::InvalidArgumentError(
            absl::StrCat("codegen-cuda: block_size must be a power of two from 32 "
                         "to 1024 (or 0 for 256), got ",
                         block)));
      }
      return absl::StatusOr<std::unique_ptr<Pass>>(MakeCodegenPass(
          proto::CUDA, [options](const LoopProgram& program, const Schedule& schedule) {
            return EmitCuda(program, schedule, options);
          }));
    });

}  // namespace

std::string LaunchShapeSymbol(const std::string& function) {
  return absl::StrCat(function, "_shape");
}

absl::StatusOr<GeneratedSource> EmitCuda(const LoopProgram& program, const Schedule& schedule,
                                         const proto::CudaOptions& options) {
  GeneratedSource source;
  source.language = "cuda";
  // Each distinct function is kept once, written out at the end with the
  // names of the first kernel that has it.
  // The key of a kernel is its launch shape and text without comments.
  kplan::FunctionTable functions(/*share_equal_bodies=*/false);
  kplan::KernelKey key;
  std::vector<LaunchShape> shapes;
  UnitNeeds needs;
  LaunchTable& launches = source.launches;
  launches.function.reserve(schedule.kernels.size());
  launches.arg_offsets.reserve(schedule.kernels.size() + 1);
  launches.kernel_offsets.reserve(schedule.kernels.size() + 1);
  for (const Kernel& kernel : schedule.kernels) {
    if (kernel.ordered_loop >= 0) {
      return absl::UnimplementedError(absl::StrCat(
          "kernel ", kernel.name,
          " is a loop whose iterations run in order (a recurrence kept as a loop), which the "
          "CUDA backend does not run: decompose with rnn: UNROLL"));
    }
    if (std::optional<Gemm> gemm = KernelGemm(program, kernel)) {
      kplan::AppendLaunch(launches, LaunchTable::GemmFunction(launches.gemms.size()), {});
      launches.gemms.push_back(*std::move(gemm));
      continue;
    }
    KernelPrinter printer(program, schedule, options, needs);
    LOOM_ASSIGN_OR_RETURN(KernelPrinter::Printed printed, printer.Print(kernel));
    key.Clear();
    key.Append(printed.shape.blocks);
    key.Append(printed.shape.threads);
    key.Append(printed.shape.shared_bytes);
    key.AppendBytes(WithoutCommentLines(printed.text));
    int function = functions.Find(key.bytes());
    if (function < 0) {
      function = functions.Add(key.bytes(), std::move(printed.text));
      shapes.push_back(printed.shape);
      source.function_plans.push_back(printer.PlanText(printed.shape.blocks));
    }
    kplan::AppendLaunch(launches, function, printer.args());
  }
  std::string& text = source.text;
  text = kPrelude;
  absl::StrAppend(&text, cscalar::CoreHelpers(kQualifier));
  if (cscalar::UsesNarrowFloats(program)) {
    absl::StrAppend(&text, cscalar::NarrowFloatHelpers(kQualifier));
  }
  if (needs.helpers[cscalar::kCheckIndex]) absl::StrAppend(&text, kIndexErrorRecorder);
  for (int h = 0; h < cscalar::kNumHelpers; ++h) {
    if (needs.helpers[h]) {
      absl::StrAppend(&text, cscalar::HelperText(static_cast<cscalar::Helper>(h), kQualifier));
    }
  }
  if (needs.team_reductions) absl::StrAppend(&text, kReductionHelpers);
  if (needs.welford) absl::StrAppend(&text, kWelfordHelpers);
  for (const auto& [name, definition] : needs.combines) {
    absl::StrAppend(&text, definition);
  }
  const std::deque<std::string>& texts = functions.bodies();
  for (size_t f = 0; f < texts.size(); ++f) {
    const std::string name = absl::StrCat("loom_f", f);
    source.functions.push_back(name);
    const LaunchShape& shape = shapes[f];
    absl::StrAppendFormat(&text,
                          "\n// blocks, threads per block, bytes of dynamic shared memory\n"
                          "extern \"C\" {\n__device__ long long %s[3] = {%d, %d, %d};\n}\n"
                          "extern \"C\" __global__ void __launch_bounds__(%d) %s%s",
                          LaunchShapeSymbol(name), shape.blocks, shape.threads, shape.shared_bytes,
                          shape.threads, name, texts[f]);
  }
  // The CUDA backend reads no shape constants at run time: they print as
  // plain integers.
  text = WithoutShapeConstantMarks(text);
  source.kernel_functions = static_cast<int>(texts.size());
  return source;
}

}  // namespace loom::cuda
