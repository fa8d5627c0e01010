// The C text that code generation puts around kernels
// (backends/common/c_helpers.inc, backends/cpp/prelude.inc,
// backends/cuda/prelude.inc) compiles on its own, as the emitted code
// includes it, with -Wall -Werror: the C++ with loom's native flags for each
// instruction set the prelude has a path for, and the CUDA backend's helpers
// with nvcc.

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/common/c_scalar.h"
#include "backends/cpp/codegen.h"
#include "backends/cpp/prelude.h"
#include "backends/cpp/subprocess.h"
#include "backends/cuda/prelude.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

// A C++ compiler and the -march of one of the prelude's paths (AVX-512,
// AVX2, AVX, SSE2, Arm's Advanced SIMD).
struct CppTarget {
  const char* name;
  const char* compiler;
  const char* march;
};

const CppTarget kCppTargets[] = {
    {"avx512", "g++", "skylake-avx512"},
    {"avx2", "g++", "haswell"},
    {"avx", "g++", "sandybridge"},
    {"sse2", "g++", "x86-64"},
    {"arm", "aarch64-linux-gnu-g++", "armv8-a"},
};

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// Writes `text` to `file_name` in the test's directory and compiles it with
// `command` followed by the file's path; fails with the compiler's output.
void ExpectCompiles(const std::string& text, const std::string& file_name,
                    std::vector<std::string> command) {
  const std::string path = absl::StrCat(TempDir(), "/", file_name);
  std::ofstream(path) << text;
  command.push_back(path);
  absl::StatusOr<cpp::ProcessResult> result = cpp::RunProcess(command, TempDir());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->Succeeded())
      << cpp::FormatCommandLine(command) << ": " << result->Ending() << "\n"
      << result->output;
}

// Every optional helper in `qualifier`, but those `skip` names.
std::string AllHelpers(const char* qualifier, const cscalar::HelperSet& skip = {}) {
  std::string text;
  for (int h = 0; h < cscalar::kNumHelpers; ++h) {
    if (!skip[h]) absl::StrAppend(&text, cscalar::HelperText(cscalar::Helper(h), qualifier));
  }
  return text;
}

// The command that compiles a unit for `target` as loom's native compile
// does (EmitCpp's flags, OpenMP on), into an object file, with the switches
// for the optional libraries (BLIS, SLEEF) on and warnings as errors. But
// -Wpsabi: the prelude turns it off with a pragma (only its static helpers
// pass vectors), which GCC 12 does not apply to the note it gives at the end
// of the unit for an AVX vector returned from a template without AVX
// (loom_dots8 for SSE2).
std::vector<std::string> CppCommand(const CppTarget& target) {
  proto::CppOptions options;
  options.set_march(target.march);
  options.set_openmp(true);
  std::vector<std::string> command = {target.compiler};
  for (const std::string& flag : cpp::EmitCpp({}, {}, options).native_flags) {
    if (flag != "-shared") command.push_back(flag);
  }
  for (const char* flag : {"-DLOOM_HAVE_BLIS", "-DLOOM_HAVE_SLEEF", "-Wall", "-Werror",
                           "-Wno-psabi", "-c", "-o", "/dev/null", "-x", "c++"}) {
    command.push_back(flag);
  }
  return command;
}

// What a kernel calls of the vector helpers that are not inline (the vector
// tanh functions) or are templates (compiled only where called).
constexpr char kVectorHelperCalls[] = R"(
extern "C" void loom_f0(void* const* a) {
  float* x = (float*)a[0];
  loom_store16(x, loom_tanh16(loom_load16(x)) + loom_erf16(loom_load16(x)));
  loom_store16(x + 16, loom_exp16(loom_load16(x + 16)));
  loom_matvec<16>(x, x + 32, 16, 8, x + 64, 1);
  loom_matvecs<16>(x, 16, 3, x + 32, 16, 8, x + 64, 1, 8);
  loom_vecmats<16, 4, 5, false>(x, 16, loom_row_block(5, 16, 2), x + 32, 32, 32, x + 96, 32);
  loom_panel_gemm(11, 8, 3, x, 8, x + 128, x + 512);
}
)";

class CppSupportCodeTest : public testing::TestWithParam<CppTarget> {};

TEST_P(CppSupportCodeTest, HelpersCompile) {
  ExpectCompiles(absl::StrCat(cpp::kPreludeHead, cscalar::CMathDeclarations(),
                              cscalar::CoreHelpers(cpp::kHelperQualifier), cpp::kIndexErrorRecorder,
                              AllHelpers(cpp::kHelperQualifier)),
                 absl::StrCat("helpers_", GetParam().name, ".cc"), CppCommand(GetParam()));
}

// The narrow floats' conversions, emitted where a program holds one.
TEST_P(CppSupportCodeTest, NarrowFloatHelpersCompile) {
  ExpectCompiles(absl::StrCat(cpp::kPreludeHead, cscalar::CMathDeclarations(),
                              cscalar::CoreHelpers(cpp::kHelperQualifier),
                              cscalar::NarrowFloatHelpers(cpp::kHelperQualifier)),
                 absl::StrCat("narrow_floats_", GetParam().name, ".cc"), CppCommand(GetParam()));
}

TEST_P(CppSupportCodeTest, PreludeCompiles) {
  cscalar::LibmCalls every_libm_call;
  every_libm_call.f32.set();
  every_libm_call.f64.set();
  ExpectCompiles(
      absl::StrCat(cpp::kPreludeHead, cscalar::CMathDeclarations(),
                   cpp::VectorLibmDeclarations(every_libm_call), cpp::kStreamHelpers,
                   cpp::kDnnlConvDeclarations, cpp::kDnnlDeclaration, cpp::kBlisDeclaration,
                   cpp::kOpenBlasSgemmDeclaration, cpp::kBlasDeclaration, cpp::kOpenMpDeclarations,
                   cpp::kPanelGemm, cpp::VectorHelpers(/*teams=*/true), kVectorHelperCalls),
      absl::StrCat("prelude_", GetParam().name, ".cc"), CppCommand(GetParam()));
}

// The head declares what it calls of <math.h> and <omp.h> rather than
// including them; a unit that includes them first (a user's around the
// kernels' source) sees the same declarations and macros, which would
// otherwise be redefined.
TEST_P(CppSupportCodeTest, HeadAgreesWithTheCHeaders) {
  ExpectCompiles(
      absl::StrCat("#include <math.h>\n#include <omp.h>\n", cpp::kPreludeHead,
                   cscalar::CMathDeclarations(), cpp::kOpenMpDeclarations,
                   "float loom_check(float x) { return x < INFINITY ? sqrtf(x) : NAN; }\n"),
      absl::StrCat("c_headers_", GetParam().name, ".cc"), CppCommand(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(InstructionSets, CppSupportCodeTest, testing::ValuesIn(kCppTargets),
                         [](const testing::TestParamInfo<CppTarget>& info) {
                           return std::string(info.param.name);
                         });

// The CUDA backend's helpers and prelude through nvcc, the CUDA toolkit's compiler
// (backends/cuda:nvcc_test compiles whole models with it). The backend
// calls libm (cscalar::FloatExp::kLibm), so it never emits the polynomial
// helpers, which are written for GCC (loom_fmodf's #pragma GCC unroll).
TEST(CudaSupportCodeTest, HelpersCompileWithNvcc) {
  const char* cuda_home = std::getenv("CUDA_HOME");
  const std::string nvcc =
      absl::StrCat(cuda_home != nullptr ? cuda_home : "/usr/local/cuda", "/bin/nvcc");
  cscalar::HelperSet polynomial;
  for (cscalar::Helper h : {cscalar::kFloatFmod, cscalar::kFloatFloorMod, cscalar::kFloatExp,
                            cscalar::kFloatTanh, cscalar::kFloatErf, cscalar::kFloatLog}) {
    polynomial.set(h);
  }
  ExpectCompiles(absl::StrCat(cuda::kPrelude, cscalar::CoreHelpers(cuda::kQualifier),
                              cuda::kIndexErrorRecorder, AllHelpers(cuda::kQualifier, polynomial),
                              cuda::kReductionHelpers, cuda::kWelfordHelpers),
                 "helpers.cu",
                 {nvcc, "-arch=sm_80", "-cubin", "-Werror", "all-warnings", "-o",
                  absl::StrCat(TempDir(), "/helpers.cubin")});
}

TEST(CudaSupportCodeTest, NarrowFloatHelpersCompileWithNvcc) {
  const char* cuda_home = std::getenv("CUDA_HOME");
  const std::string nvcc =
      absl::StrCat(cuda_home != nullptr ? cuda_home : "/usr/local/cuda", "/bin/nvcc");
  ExpectCompiles(absl::StrCat(cuda::kPrelude, cscalar::CoreHelpers(cuda::kQualifier),
                              cscalar::NarrowFloatHelpers(cuda::kQualifier)),
                 "narrow_floats.cu",
                 {nvcc, "-arch=sm_80", "-cubin", "-Werror", "all-warnings", "-o",
                  absl::StrCat(TempDir(), "/narrow_floats.cubin")});
}

}  // namespace
}  // namespace loom
