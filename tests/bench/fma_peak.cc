// The machine's f32 FMA peak, the ceiling the zoo's products are measured
// against (issue 47: "BERT-base at 75% of the FMA peak, measured in the same
// run"). Every thread runs independent chains of fused multiply-adds in the
// widest vectors its instruction set has, as many as its registers hold
// beside the two operands (12 of AVX2's 16, 16 of AVX-512's or NEON's 32;
// 16 on AVX2 spilled three chains to the stack and measured half the peak
// of a Zen 3 core, 58 GFLOP/s where loom's own product runs at 91), so that
// neither the FMA latency nor a dependency limits it; the chains are
// compiled as loom's kernels are
// (backends/cpp/native_compiler.h: -O2 -march=native, OpenMP), so the peak
// is that of the instructions loom's own code may use on this machine.
//
//   bazel run -c opt //tests/bench:fma_peak -- [--threads=N] [--rounds=5]
//       [--vecmats=1,4,16]
//
// Prints one line per round and then `fma_peak_gflops=<median>` (what
// tests/zoo/run_zoo.py reads). With --vecmats, then times on one thread
// loom_vecmats, a recurrence's step product ([N,64]x[64,256] from the
// prelude, with the tiles a kernel compiles for N rows), for each N, as
// GFLOP/s and a share of the peak per thread just measured.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/common/c_scalar.h"
#include "backends/cpp/native_compiler.h"
#include "backends/cpp/prelude.h"

ABSL_FLAG(int, threads, 0, "threads (0: OpenMP's default, every hardware thread)");
ABSL_FLAG(int, rounds, 5, "timed rounds; the median is printed");
ABSL_FLAG(long, iters, 20'000'000, "FMA steps per chain and round");
ABSL_FLAG(std::vector<std::string>, vecmats, {},
          "counts of rows N of loom_vecmats' [N,64]x[64,256] to time on one thread");

namespace loom {
namespace {

// One vector FMA per chain and step, in the widest vectors the compile flags
// allow: AVX-512 (16 lanes), AVX2 + FMA (8), NEON (4). Returns the sum of
// the chains, so that the compiler cannot drop them, the lanes and chains
// through *lanes and *chains and the threads that ran through *used.
constexpr char kChainsSource[] = R"(
#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec;
static const int kLanes = 16, kChains = 16;
static inline vec splat(float x) { return _mm512_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline float sum(vec a) { return _mm512_reduce_add_ps(a); }
#elif defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec;
static const int kLanes = 8, kChains = 12;
static inline vec splat(float x) { return _mm256_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline float sum(vec a) {
  float l[8];
  _mm256_storeu_ps(l, a);
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}
#elif defined(__ARM_NEON)
#include <arm_neon.h>
typedef float32x4_t vec;
static const int kLanes = 4, kChains = 16;
static inline vec splat(float x) { return vdupq_n_f32(x); }
static inline vec vfma(vec a, vec b, vec c) { return vfmaq_f32(c, a, b); }
static inline float sum(vec a) { return vaddvq_f32(a); }
#else
#error "no vector FMA in this instruction set"
#endif

extern "C" float loom_fma_chains(long iters, int threads, int* lanes, int* chains, int* used) {
  *lanes = kLanes;
  *chains = kChains;
  if (threads > 0) omp_set_num_threads(threads);
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
#pragma omp single
    *used = omp_get_num_threads();
    const vec scale = splat(0.999999f), step = splat(1e-7f);
    // Distinct starts: equal chains would be computed once.
    const float t = omp_get_thread_num();
    vec c[kChains];
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) c[j] = splat(t + j);
    for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
      for (int j = 0; j < kChains; ++j) c[j] = vfma(c[j], scale, step);
    }
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) total += sum(c[j]);
  }
  return total;
}
)";
using Chains = float (*)(long iters, int threads, int* lanes, int* chains, int* used);

// `iters` products of n rows by loom_vecmats with the N a kernel compiles
// for n (VecMatTileVectors in backends/cpp/vector_loops.cc: n below four,
// else 6).
constexpr char kVecMatsDriver[] = R"(
extern "C" void loom_vecmats_bench(long n, long iters, const float* v, const float* m,
                                   float* out) {
  for (long i = 0; i < iters; ++i) {
    if (n == 1) loom_vecmats<64, 64, 1, true>(v, 64, n, m, 256, 256, out, 256);
    else if (n == 2) loom_vecmats<64, 64, 2, true>(v, 64, n, m, 256, 256, out, 256);
    else if (n == 3) loom_vecmats<64, 64, 3, true>(v, 64, n, m, 256, 256, out, 256);
    else loom_vecmats<64, 64, 6, true>(v, 64, n, m, 256, 256, out, 256);
    __asm__ __volatile__("" ::: "memory");
  }
}
)";

using VecMats = void (*)(long n, long iters, const float* v, const float* m, float* out);

using Floats = std::unique_ptr<float[], decltype(&std::free)>;

// `count` floats of `value` starting on a 64-byte line.
Floats LineAligned(long count, float value) {
  const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
  Floats floats(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free);
  std::fill(floats.get(), floats.get() + count, value);
  return floats;
}

// Times loom_vecmats for each count of rows in --vecmats on this thread,
// against `peak_per_thread` GFLOP/s.
int RunVecMats(double peak_per_thread) {
  cpp::NativeCompileOptions options;
  options.openmp = true;
  absl::StatusOr<cpp::CompiledLibrary> library = cpp::CompileAndLoad(
      absl::StrCat(cpp::kPreludeHead, cscalar::CMathDeclarations(), cpp::kOpenMpDeclarations,
                   cpp::VectorHelpers(/*teams=*/true), kVecMatsDriver),
      options);
  absl::StatusOr<void*> symbol =
      library.ok() ? library->library.Symbol("loom_vecmats_bench") : library.status();
  if (!symbol.ok()) {
    std::fprintf(stderr, "fma_peak: %s\n", std::string(symbol.status().message()).c_str());
    return 1;
  }
  const auto vecmats = reinterpret_cast<VecMats>(*symbol);
  for (const std::string& text : absl::GetFlag(FLAGS_vecmats)) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n < 1 || n > 64) {
      std::fprintf(stderr, "fma_peak: --vecmats wants counts of rows from 1 to 64, not '%s'\n",
                   text.c_str());
      return 1;
    }
    // On cache lines, as loom's arena and weights are (a row of the weight
    // across two lines slows every load).
    const Floats v = LineAligned(n * 64, 0.5f), m = LineAligned(64 * 256, 0.25f),
                 out = LineAligned(n * 256, 0.0f);
    const long iters = 20'000;
    vecmats(n, iters / 10, v.get(), m.get(), out.get());
    std::vector<double> gflops;
    for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
      const auto start = std::chrono::steady_clock::now();
      vecmats(n, iters, v.get(), m.get(), out.get());
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      gflops.push_back(2.0 * n * 64 * 256 * iters / seconds / 1e9);
    }
    std::sort(gflops.begin(), gflops.end());
    const double median = gflops[gflops.size() / 2];
    std::printf(
        "vecmats rows=%lld: %.1f GFLOP/s on one thread (median of %zu), %.0f%% of the peak "
        "per thread\n",
        static_cast<long long>(n), median, gflops.size(), 100 * median / peak_per_thread);
  }
  return 0;
}

int Run() {
  cpp::NativeCompileOptions options;
  options.openmp = true;
  absl::StatusOr<cpp::CompiledLibrary> library = cpp::CompileAndLoad(kChainsSource, options);
  if (!library.ok()) {
    std::fprintf(stderr, "fma_peak: %s\n", std::string(library.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<void*> symbol = library->library.Symbol("loom_fma_chains");
  if (!symbol.ok()) {
    std::fprintf(stderr, "fma_peak: %s\n", std::string(symbol.status().message()).c_str());
    return 1;
  }
  const auto chains = reinterpret_cast<Chains>(*symbol);
  const long iters = absl::GetFlag(FLAGS_iters);
  const int threads = absl::GetFlag(FLAGS_threads);
  int lanes = 0, chain_count = 0, used = 0;
  chains(iters / 10, threads, &lanes, &chain_count, &used);  // wakes the threads and the clocks
  std::vector<double> gflops;
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    const auto start = std::chrono::steady_clock::now();
    const float sink = chains(iters, threads, &lanes, &chain_count, &used);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // 2 flops per lane of each FMA.
    gflops.push_back(2.0 * lanes * chain_count * static_cast<double>(iters) * used / seconds / 1e9);
    std::printf("round %d: %.1f GFLOP/s (%d threads, %d lanes, %d chains; sink %g)\n", round,
                gflops.back(), used, lanes, chain_count, sink);
  }
  std::sort(gflops.begin(), gflops.end());
  std::printf("fma_peak_gflops=%.1f\n", gflops[gflops.size() / 2]);
  return absl::GetFlag(FLAGS_vecmats).empty() ? 0 : RunVecMats(gflops[gflops.size() / 2] / used);
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return loom::Run();
}
