#include "backends/cpp/codegen.h"

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "backends/common/c_scalar.h"
#include "backends/common/codegen_pass.h"
#include "backends/common/kernel_plan.h"
#include "backends/cpp/dnnl_conv_text.h"
#include "backends/cpp/kernel_printer.h"
#include "backends/cpp/library_calls.h"
#include "backends/cpp/outline.h"
#include "backends/cpp/plan.h"
#include "backends/cpp/prelude.h"
#include "ir/shape_constants.h"
#include "passes/pass.h"

namespace loom::cpp {

namespace {

// What the translation unit needs besides its kernels' functions.
struct UnitNeeds {
  cscalar::HelperSet helpers;
  cscalar::LibmCalls libm_calls;
  bool calls_openmp = false;  // kOpenMpDeclarations
  bool streams = false;       // kStreamHelpers
  bool vectorizes = false;    // VectorHelpers
  bool teams = false;         // VectorHelpers(teams)
  bool calls_blas = false;
  bool calls_dnnl = false;
  bool calls_blis = false;            // may: where the target has AVX2 but not AVX-512
  bool calls_openblas_sgemm = false;  // may: likewise; links as calls_blas does
  bool calls_conv = false;
  bool calls_panel_gemm = false;  // kPanelGemm
  bool narrow_floats = false;     // cscalar::NarrowFloatHelpers

  void Add(const CppKernelPlan& plan) {
    // A team splits too; blocks of rows and a recurrence's team ask for the
    // threads.
    calls_openmp |= plan.may_split || (plan.row_blocks && !plan.parallel_condition.empty()) ||
                    (plan.team && plan.ordered_loop >= 0);
    streams |= plan.streams;
    vectorizes |= plan.vectorizes;
    teams |= plan.team || plan.ordered_loop >= 0;  // a recurrence's products
  }
};

// The functions of a unit and what each does, by index.
struct UnitFunctions {
  kplan::FunctionTable table{/*share_equal_bodies=*/true};
  OutlinedFunctions outlined;  // their repeated members
  std::vector<std::string> plans;

  // Notes the plan of `function` when it is a new one.
  void NotePlan(int function, std::string plan) {
    if (function == static_cast<int>(plans.size())) plans.push_back(std::move(plan));
  }
};

// The library a gemm's plan names.
const char* GemmLibraries(const Gemm& gemm) {
  if (gemm.dtype != DType::kF32) return "cblas_dgemm";
  if (IsPanelProduct(gemm)) return "loom_panel_gemm";
  if (MayCallOpenBlas(gemm)) return "dnnl_sgemm or, on AVX2, cblas_sgemm";
  return MayCallBlis(gemm) ? "dnnl_sgemm or, on AVX2, bli_sgemm" : "dnnl_sgemm";
}

// Notes the libraries an f32 `gemm` may call besides oneDNN.
void NoteAvx2Libraries(const Gemm& gemm, UnitNeeds& needs) {
  if (MayCallBlisAtSomeSize(gemm)) needs.calls_blis = needs.calls_openmp = true;
  if (MayCallOpenBlas(gemm)) needs.calls_openblas_sgemm = needs.calls_blas = true;
}

// Appends the launch of `kernel` when it is a library call (a conv, or
// `gemm`: its product, if it is one); returns whether it is.
bool LaunchLibraryCall(const LoopProgram& program, const Kernel& kernel,
                       const std::optional<Gemm>& gemm, const proto::CppOptions& options,
                       UnitNeeds& needs, UnitFunctions& functions, LaunchTable& launches) {
  std::vector<BufferRef> args;
  int function = -1;
  std::string plan;
  if (std::optional<ConvCall> conv = KernelConv(program, kernel)) {
    needs.calls_conv = true;
    function = functions.table.AddBody(PrintConv(*conv, args));
    plan = absl::StrCat("kernel ", kernel.name, ": a oneDNN convolution call\n");
  } else if (gemm.has_value()) {
    const bool f32 = gemm->dtype == DType::kF32;
    if (IsPanelProduct(*gemm)) {
      needs.calls_panel_gemm = needs.calls_openmp = true;
    } else {
      (f32 ? needs.calls_dnnl : needs.calls_blas) = true;
    }
    NoteAvx2Libraries(*gemm, needs);
    bool splits = false;
    function = functions.table.AddBody(PrintGemm(*gemm, options.openmp(), args, splits));
    const bool alone = RunsAlone(*gemm, options.openmp());
    needs.calls_openmp |= splits || MayRunAlone(*gemm, options.openmp());
    plan = absl::StrCat("kernel ", kernel.name, ": a GEMM call (", GemmLibraries(*gemm),
                        splits ? ", its batch shared by the threads" : "",
                        alone ? ", on one thread" : "", ")\n");
  } else {
    return false;
  }
  functions.NotePlan(function, std::move(plan));
  kplan::AppendLaunch(launches, function, args);
  return true;
}

// How many of `plan`'s outer loops run through the rows of `gemm` (their
// iterations, row-major, are its rows), when the kernel it plans may run as
// the product's epilogue (PrintGemmWithEpilogue): it reads the product,
// runs its outer loops plainly, and the rest of them, if any, run through
// a row's columns.
std::optional<int> EpilogueRowLoops(const LoopProgram& program, const Gemm& gemm,
                                    const Kernel& kernel, const CppKernelPlan& plan) {
  if (!plan.RunsOuterLoopsPlainly()) return std::nullopt;
  bool reads_product = false;
  for (int n : kernel.nodes) {
    for (const ScalarOp& op : program.nodes[n].body) {
      reads_product |= op.kind == ScalarOp::Kind::kLoad && op.buffer == gemm.c.buffer;
    }
  }
  if (!reads_product) return std::nullopt;
  const std::vector<int64_t>& outer = plan.outer;
  for (size_t rows = 1; rows <= outer.size(); ++rows) {
    const int64_t columns = Product(outer, rows, outer.size());
    if (Product(outer, 0, rows) == gemm.m && (columns == 1 || columns == gemm.n)) {
      return static_cast<int>(rows);
    }
  }
  return std::nullopt;
}

// Appends one launch of `gemm_kernel`, whose product is `gemm`, with
// `next`, the kernel after it, as its epilogue (PrintGemmWithEpilogue),
// where `next` may be one (see EpilogueRowLoops); returns whether it is.
bool LaunchGemmWithEpilogue(const LoopProgram& program, const Kernel& gemm_kernel, const Gemm& gemm,
                            const Kernel& next, const proto::CppOptions& options,
                            LocalOffsets& local_offsets, kplan::KernelKey& key, UnitNeeds& needs,
                            UnitFunctions& functions, LaunchTable& launches) {
  if (!options.openmp() || options.gemm_epilogue_apart() || !MayRunWithEpilogue(gemm) ||
      KernelGemm(program, next) || KernelConv(program, next)) {
    return false;
  }
  CppPlanner planner(program, options, local_offsets, key);
  planner.Plan(next);
  planner.PlanVectors(next);
  const std::optional<int> row_loops = EpilogueRowLoops(program, gemm, next, planner.plan());
  if (!row_loops) return false;
  KernelPrinter printer(program, needs.helpers, needs.libm_calls, planner);
  const std::string params = printer.ParamDeclarations(/*restrict=*/false);
  std::vector<BufferRef> args = planner.plan().params.args();
  const int function = functions.table.AddBody(PrintGemmWithEpilogue(
      gemm, params, printer.PrintRows(next, *row_loops), planner.plan().parallel_condition, args));
  needs.Add(planner.plan());
  needs.calls_dnnl = needs.calls_openmp = true;
  NoteAvx2Libraries(gemm, needs);
  functions.NotePlan(
      function, absl::StrCat("kernel ", gemm_kernel.name, ": a GEMM call (", GemmLibraries(gemm),
                             "), each thread's block of rows, then kernel ", next.name,
                             " on them:\n", planner.plan().ToString(program, next)));
  kplan::AppendLaunch(launches, function, args, /*kernels=*/2);
  return true;
}

// Appends one launch of the chain that `kernels` (three, the first marked
// as a chain's) make, where the middle kernel runs its outer loops plainly
// (PrintGemmChain); returns whether it does. Else they run apart.
bool LaunchGemmChain(const LoopProgram& program, absl::Span<const Kernel> kernels,
                     const proto::CppOptions& options, LocalOffsets& local_offsets,
                     kplan::KernelKey& key, UnitNeeds& needs, UnitFunctions& functions,
                     LaunchTable& launches) {
  const std::optional<GemmChain> chain = MatchGemmChain(program, kernels);
  if (!options.openmp() || !chain) return false;
  const Kernel& middle = kernels[1];
  CppPlanner planner(program, options, local_offsets, key);
  planner.Plan(middle);
  planner.PlanVectors(middle);
  const CppKernelPlan& plan = planner.plan();
  if (!plan.RunsOuterLoopsPlainly()) return false;
  KernelPrinter printer(program, needs.helpers, needs.libm_calls, planner);
  const std::string params = printer.ParamDeclarations(/*restrict=*/false);
  std::vector<BufferRef> args = plan.params.args();
  const int function = functions.table.AddBody(
      PrintGemmChain(*chain, params, printer.PrintRows(middle, chain->row_loops), args));
  needs.Add(plan);
  needs.calls_dnnl = needs.calls_openmp = true;
  NoteAvx2Libraries(chain->first, needs);
  NoteAvx2Libraries(chain->second, needs);
  functions.NotePlan(
      function,
      absl::StrCat("kernels ", kernels[0].name, ", ", middle.name, " and ", kernels[2].name,
                   ": a GEMM chain, each task ", ChainBlockRows(chain->first),
                   " rows of a batch position: a GEMM call (", GemmLibraries(chain->first),
                   "), kernel ", middle.name, " on its rows, a GEMM call (",
                   GemmLibraries(chain->second), "):\n", plan.ToString(program, middle)));
  kplan::AppendLaunch(launches, function, args, /*kernels=*/3);
  return true;
}

// The unit's text: the prelude with what its kernels need, then each
// function, `bodies` by index.
std::string UnitText(const UnitNeeds& needs, const UnitFunctions& functions,
                     const std::vector<std::string>& bodies) {
  std::string text = absl::StrCat(
      kPreludeHead, cscalar::CMathDeclarations(), VectorLibmDeclarations(needs.libm_calls),
      needs.calls_openmp ? kOpenMpDeclarations : "", cscalar::CoreHelpers(kHelperQualifier),
      needs.streams ? kStreamHelpers : "", needs.calls_conv ? kDnnlConvDeclarations : "",
      needs.calls_dnnl ? kDnnlDeclaration : "", needs.calls_blis ? kBlisDeclaration : "",
      needs.calls_openblas_sgemm ? kOpenBlasSgemmDeclaration : "",
      needs.calls_blas ? kBlasDeclaration : "", needs.calls_panel_gemm ? kPanelGemm : "");
  size_t size = text.size();
  for (const std::string& body : bodies) size += body.size() + 64;
  text.reserve(size);
  if (needs.narrow_floats) {
    absl::StrAppend(&text, cscalar::NarrowFloatHelpers(kHelperQualifier));
  }
  if (needs.helpers[cscalar::kCheckIndex]) absl::StrAppend(&text, kIndexErrorRecorder);
  for (int h = 0; h < cscalar::kNumHelpers; ++h) {
    if (needs.helpers[h]) {
      absl::StrAppend(&text,
                      cscalar::HelperText(static_cast<cscalar::Helper>(h), kHelperQualifier));
    }
  }
  if (needs.vectorizes) absl::StrAppend(&text, VectorHelpers(needs.teams));
  absl::StrAppend(&text, functions.outlined.Declarations());
  for (size_t f = 0; f < bodies.size(); ++f) {
    absl::StrAppend(&text, "\nextern \"C\" void loom_f", f, "(void* const* a) {\n", bodies[f],
                    "}\n");
  }
  // Outlined functions take their shape constants as arguments
  // (KernelPrinter::OutlineRepeatedMembers): they hold none of their own.
  absl::StrAppend(&text, functions.outlined.Definitions());
  return text;
}

std::vector<std::string> NativeFlags(const proto::CppOptions& options) {
  std::vector<std::string> flags = {
      absl::StrCat("-O", options.opt_level() > 0 ? options.opt_level() : 3), "-fPIC", "-shared",
      "-std=c++17", "-fno-math-errno", "-fwrapv",
      // Planned memory reuses one arena for buffers of different types.
      "-fno-strict-aliasing",
      // Kernels never read the floating-point exception flags. Where GCC
      // must keep them, a comparison may not run in lanes it would skip
      // (it can raise "invalid" on NaN), so a loop with a select (erf's
      // clamp, a where) vectorises only with AVX-512's masks: not on AVX2,
      // SSE or Arm. Results are the same bits.
      "-fno-trapping-math"};
  if (options.simd() == proto::CppOptions::SCALAR) {
    flags.push_back("-fno-tree-vectorize");
  } else {
    flags.push_back(absl::StrCat("-march=", options.march().empty() ? "native" : options.march()));
  }
  // `omp simd` marks reductions whose lanes may be reassociated; with
  // -fopenmp-simd alone it needs no OpenMP runtime.
  if (options.openmp()) {
    flags.push_back("-fopenmp");
  } else if (options.simd() != proto::CppOptions::SCALAR) {
    flags.push_back("-fopenmp-simd");
  }
  return flags;
}

LOOM_REGISTER_PASS_WITH_OPTIONS(
    "codegen-cpp", "cpp", proto::CppOptions, [](const proto::CppOptions& options) {
      return absl::StatusOr<std::unique_ptr<Pass>>(MakeCodegenPass(
          proto::CPU,
          [options](const LoopProgram& program, const Schedule& schedule)
              -> absl::StatusOr<GeneratedSource> { return EmitCpp(program, schedule, options); }));
    });

}  // namespace

GeneratedSource EmitCpp(const LoopProgram& program, const Schedule& schedule,
                        const proto::CppOptions& options) {
  GeneratedSource source;
  source.language = "c++";
  // Kernels with equal keys share one function (CppPlanner): each new
  // key's body is printed once, and kept once if it repeats an earlier body.
  UnitFunctions functions;
  UnitNeeds needs;
  needs.narrow_floats = cscalar::UsesNarrowFloats(program);
  LocalOffsets local_offsets;
  kplan::KernelKey key;
  LaunchTable& launches = source.launches;
  launches.function.reserve(schedule.kernels.size());
  launches.arg_offsets.reserve(schedule.kernels.size() + 1);
  launches.kernel_offsets.reserve(schedule.kernels.size() + 1);
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    const Kernel& kernel = schedule.kernels[k];
    const std::optional<Gemm> gemm = KernelGemm(program, kernel);
    if (kernel.chain_length == 3 && k + 3 <= schedule.kernels.size() &&
        LaunchGemmChain(program, absl::MakeConstSpan(schedule.kernels).subspan(k, 3), options,
                        local_offsets, key, needs, functions, launches)) {
      k += 2;  // the chain ran the next two
      continue;
    }
    if (gemm && k + 1 < schedule.kernels.size() &&
        LaunchGemmWithEpilogue(program, kernel, *gemm, schedule.kernels[k + 1], options,
                               local_offsets, key, needs, functions, launches)) {
      ++k;  // the epilogue ran with the product
      continue;
    }
    if (LaunchLibraryCall(program, kernel, gemm, options, needs, functions, launches)) continue;
    CppPlanner planner(program, options, local_offsets, key);
    planner.Plan(kernel);
    int function = functions.table.Find(planner.key());
    if (function < 0) {
      planner.PlanVectors(kernel);
      KernelPrinter printer(program, needs.helpers, needs.libm_calls, planner, &functions.outlined);
      function = functions.table.Add(planner.key(), printer.Print(kernel));
      needs.Add(planner.plan());
      functions.NotePlan(function, planner.plan().ToString(program, kernel));
    }
    kplan::AppendLaunch(launches, function, planner.plan().params.args());
  }
  const std::deque<std::string>& printed = functions.table.bodies();
  const std::vector<std::string> bodies =
      options.specialize_shapes() ? std::vector<std::string>(printed.begin(), printed.end())
                                  : ShareBodiesAcrossShapes(printed, functions.outlined);
  StrippedSource stripped = StripShapeConstants(UnitText(needs, functions, bodies));
  source.text = std::move(stripped.text);
  source.shape_constants = std::move(stripped.constants);
  for (size_t f = 0; f < functions.table.bodies().size(); ++f) {
    source.functions.push_back(absl::StrCat("loom_f", f));
  }
  source.function_plans = std::move(functions.plans);
  source.kernel_functions = static_cast<int>(source.functions.size());
  source.native_flags = NativeFlags(options);
  source.calls_blas = needs.calls_blas;
  source.calls_dnnl = needs.calls_dnnl || needs.calls_conv;
  source.calls_sleef = ArmCallsSleef(needs.libm_calls);
  // The oneDNN convolution (dnnl_conv.inc): a support translation unit,
  // compiled apart from the kernels, with oneDNN's headers (libdnnl-dev).
  if (needs.calls_conv) source.support_sources.push_back(kDnnlConvSupport);
  return source;
}

}  // namespace loom::cpp
