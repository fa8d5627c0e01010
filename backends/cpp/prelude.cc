#include "backends/cpp/prelude.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ir/dtype.h"

namespace loom::cpp {

const char kHelperQualifier[] = "static inline";

namespace {

// The generic exponential of vectors of `lanes` lanes (kGenericExp).
std::string GenericExp(int lanes) {
  const std::string type = absl::StrCat("loom_f32v", lanes);
  return absl::StrReplaceAll(kGenericExp, {{"$expf_reduction\n", cscalar::ExpfReduction(type)},
                                           {"$lanes", absl::StrCat(lanes)}});
}

// The qualifier of the vector tanh functions, which are called, not inlined
// (prelude.inc, kVectorHelpers).
constexpr char kCalledHelper[] = "static __attribute__((noinline))";

}  // namespace

std::string VectorHelpers(bool teams) {
  const std::string vectors = absl::StrReplaceAll(
      kVectorHelpers,
      {{"$expf_reduction\n", cscalar::ExpfReduction("loom_f32v16")},
       {"$generic_exp8\n", GenericExp(8)},
       {"$generic_exp4\n", GenericExp(4)},
       {"$tanh16\n",
        cscalar::TanhfFunction(kCalledHelper, "loom_tanh16", "loom_f32v16", "loom_exp16")},
       {"$erf16\n", cscalar::ErffFunction(kHelperQualifier, "loom_erf16", "loom_f32v16")},
       {"$tanh8\n", cscalar::TanhfFunction(kCalledHelper, "loom_tanh8", "loom_f32v8", "loom_exp8")},
       {"$erf8\n", cscalar::ErffFunction(kHelperQualifier, "loom_erf8", "loom_f32v8")},
       {"$tanh4\n", cscalar::TanhfFunction(kCalledHelper, "loom_tanh4", "loom_f32v4", "loom_exp4")},
       {"$erf4\n", cscalar::ErffFunction(kHelperQualifier, "loom_erf4", "loom_f32v4")}});
  return teams ? absl::StrCat(vectors, kTeamHelpers) : vectors;
}

namespace {

// On aarch64, SLEEF's vector variant of `fn` for `dtype` on 128-bit
// vectors (Sleef_sind2_u10advsimd: within 1 ulp), wrapped under the vector
// function ABI's name (_ZGVnN2v_sin), then `fn` declared to have it.
// GCC calls such variants with the vector procedure call standard, which
// keeps v8-v23 whole; Debian's SLEEF (3.5.1) is built for the base one,
// which keeps only the low halves of v8-v15, so its own GNU-ABI variants
// (libsleefgnuabi) clobber the caller's vectors (f64 sigmoid's 1s, when
// its exp called them: off by up to 2^51 ulp). The wrapper saves them.
std::string ArmVectorVariant(cscalar::LibmFn fn, DType dtype) {
  const bool f32 = dtype == DType::kF32;
  const int lanes = f32 ? 4 : 2;
  const char* vector = f32 ? "float32x4_t" : "float64x2_t";
  const bool binary = cscalar::LibmArity(fn) == 2;
  const std::string sleef =
      absl::StrCat("Sleef_", cscalar::LibmName(fn, DType::kF64), f32 ? "f4" : "d2", "_u10advsimd");
  const std::string params =
      binary ? absl::StrCat(vector, " x, ", vector, " y") : absl::StrCat(vector, " x");
  return absl::StrCat("extern \"C\" ", vector, " ", sleef, "(", params, ");\n",
                      "extern \"C\" __attribute__((aarch64_vector_pcs, visibility(\"hidden\"))) ",
                      vector, " _ZGVnN", lanes, binary ? "vv_" : "v_", cscalar::LibmName(fn, dtype),
                      "(", params, ") {\n  return ", sleef, binary ? "(x, y);\n}\n" : "(x);\n}\n",
                      "#pragma omp declare simd simdlen(", lanes, ") notinbranch\n");
}

}  // namespace

// Only where SLEEF executes about as many instructions per element as
// glibc's scalar function or fewer. For exp, log, pow and erf in f64 it
// executes 1.5-2.3x as many (exp 74 against 43, log 88/57, pow 210/111,
// erf 329/141): those stay libm calls. Counted under QEMU (-singlestep -d
// exec) over 4096 elements of [-5, 6], the wrapper included: f64 sin 72
// against 106, cos 76/109, tanh 125/132; f32 sin 29/39, cos 31/39, pow
// 80/79.
bool ArmCallsSleef(cscalar::LibmFn fn, DType dtype) {
  switch (fn) {
    case cscalar::kLibmSin:
    case cscalar::kLibmCos:
      return true;
    case cscalar::kLibmTanh:
      return dtype == DType::kF64;
    case cscalar::kLibmPow:
      return dtype == DType::kF32;
    default:
      return false;
  }
}

bool ArmCallsSleef(const cscalar::LibmCalls& calls) {
  for (int i = 0; i < cscalar::kNumLibmFns; ++i) {
    const auto fn = static_cast<cscalar::LibmFn>(i);
    if ((calls.f32[i] && ArmCallsSleef(fn, DType::kF32)) ||
        (calls.f64[i] && ArmCallsSleef(fn, DType::kF64))) {
      return true;
    }
  }
  return false;
}

// GCC vectorises a loop that calls a libm function declared with its simd
// attribute (or `omp declare simd`), as glibc's <math.h> declares them only
// under -ffast-math, into calls of the function's vector variants under
// the vector function ABI's names (sinf in AVX2: _ZGVdN8v_sinf; in Arm's
// Advanced SIMD: _ZGVnN4v_sinf), which keep libm's results for NaN,
// infinities and out-of-range arguments.
// - On x86-64, glibc's libmvec from 2.35 on has every LibmFn at every
//   width (documented within 4 ulp); g++ links it through libm.so, a
//   linker script that adds it as needed.
// - On aarch64, Debian 12's glibc has none: SLEEF has them, linked where
//   installed with LOOM_HAVE_SLEEF defined (runtime.h), at 128 bits only
//   (ArmVectorVariant), and called where they do no more work than libm
//   (ArmCallsSleef).
std::string VectorLibmDeclarations(const cscalar::LibmCalls& calls) {
  if (calls.f32.none() && calls.f64.none()) return "";
  std::string x86 =
      "#if defined(__x86_64__) && !defined(__clang__) && defined(__GLIBC__) && \\\n"
      "    (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)\n";
  std::string arm =
      "#elif defined(__aarch64__) && !defined(__clang__) && defined(LOOM_HAVE_SLEEF)\n"
      "#include <arm_neon.h>\n";
  for (auto [dtype, fns] : {std::pair{DType::kF32, calls.f32}, std::pair{DType::kF64, calls.f64}}) {
    for (int i = 0; i < cscalar::kNumLibmFns; ++i) {
      if (!fns[i]) continue;
      const auto fn = static_cast<cscalar::LibmFn>(i);
      const std::string prototype =
          absl::StrCat("extern \"C\" ", cscalar::LibmPrototype(fn, dtype), " noexcept");
      absl::StrAppend(&x86, prototype, " __attribute__((simd(\"notinbranch\")));\n");
      if (ArmCallsSleef(fn, dtype)) {
        absl::StrAppend(&arm, ArmVectorVariant(fn, dtype), prototype, ";\n");
      }
    }
  }
  return absl::StrCat(x86, arm, "#endif\n\n");
}

}  // namespace loom::cpp
