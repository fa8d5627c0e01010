// The GEMM libraries loom may call, side by side on the shapes its models
// make: oneDNN's dnnl_sgemm and BLIS's bli_sgemm (what emitted kernels call,
// backends/cpp/prelude.cc) and OpenBLAS's cblas_sgemm, alternating, median
// of each, in GFLOP/s. All run on every core (BLIS, loaded here by dlopen so
// that its CBLAS does not meet OpenBLAS's, is told so). Operands are
// aligned to 64 bytes and allocated by TCMalloc, as loom's buffers are:
// oneDNN 2.6's AVX2 sgemm depends on it (512^3 on a Zen 3: 129 GFLOP/s with
// the second operand 32-byte aligned, 172 with it 16 bytes past a page, as
// glibc's malloc places a large block). The libraries' own
// switches narrow the instruction set they use, which measures on an
// AVX-512 machine what one without it would get:
//
//   bazel run -c opt //tests/bench:gemm_libraries -- [--iters=50] [--rounds=5]
//   ONEDNN_MAX_CPU_ISA=AVX2 BLIS_ARCH_TYPE=zen3 OPENBLAS_CORETYPE=Zen bazel run ...
//
// With --blocks, bli_sgemm and dnnl_sgemm on the products that BLIS may
// take (backends/cpp/library_calls.h, MayCallBlis: 256 rows or more, a
// leading dimension that is not a multiple of 512), a transformer's linear
// layers and 1x1 convs': each as one call on every thread, and as each
// thread's block of rows in a serial call of its own inside one parallel
// region (what a product with an epilogue runs where each thread has rows
// enough, library_calls.cc, kSharesRowsPerThread).
//
// With --last_column, dnnl_sgemm alone on the products of 1x1 convs on 7x7
// positions (49 columns): one call, against the first 48 columns and then
// the last in a call of its own (backends/cpp/library_calls.cc,
// kLastColumnApartMinRows).

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/cpp/native_compiler.h"

ABSL_FLAG(int, iters, 50, "calls per timed round");
ABSL_FLAG(int, rounds, 5, "rounds per library, alternating");
ABSL_FLAG(bool, blocks, false,
          "BLIS and oneDNN, on every thread and in a serial call on each thread's rows");
ABSL_FLAG(bool, last_column, false,
          "dnnl_sgemm on 1x1 convs' products of 49 columns, whole against the last column apart");

namespace loom {
namespace {

// C[m, n] = A[m, k] * B[k, n], row-major, or A * B^T when `b_transposed`
// (a linear layer's weight, stored [n, k]). B's rows have `b_pad` spare
// elements after their n (a weight that pad-gemm-weights padded).
struct Shape {
  const char* name;
  int m, n, k;
  bool b_transposed;
  int b_pad = 0;
};

// B's leading dimension.
int Ldb(const Shape& s) { return s.b_transposed ? s.k : s.n + s.b_pad; }

constexpr Shape kShapes[] = {
    {"matmul_512", 512, 512, 512, false},
    {"matmul_1024", 1024, 1024, 1024, false},
    {"bmm_16x128x64x128 (one of 16)", 128, 128, 64, false},
    {"bert_ffn up [128,128]x[512,128]^T", 128, 512, 128, true},
    {"bert_ffn down [128,512]x[128,512]^T", 128, 128, 512, true},
    {"lstm_l6_h256 input [50,256]x[1024,256]^T", 50, 1024, 256, true},
    {"256^3", 256, 256, 256, false},
    {"[1024,256]x[256,256]^T", 1024, 256, 256, true},
    {"embedding_gru_lm head [32,256]x[256,8000]", 32, 8000, 256, false},
    {"[32,1024]x[1024,1024]", 32, 1024, 1024, false},
    {"[64,1024]x[1024,1024]", 64, 1024, 1024, false},
    {"[128,1024]x[1024,1024]", 128, 1024, 1024, false},
    {"[256,1024]x[1024,1024]", 256, 1024, 1024, false},
    {"[128,256]x[256,8000]", 128, 8000, 256, false},
    {"BERT-base FFN up [128,768]x[768,3072]", 128, 3072, 768, false},
    {"BERT-base FFN down [128,3072]x[3072,768]", 128, 768, 3072, false},
};

// Products of 1x1 convs on 7x7 positions: [out, in] x [in, 49].
constexpr Shape kLastColumnShapes[] = {
    {"ResNet-50 [2048,512]x[512,49]", 2048, 49, 512, false},
    {"ResNet-50 [512,2048]x[2048,49]", 512, 49, 2048, false},
    {"EfficientNet-B0 [1152,192]x[192,49]", 1152, 49, 192, false},
    {"EfficientNet-B0 [192,1152]x[1152,49]", 192, 49, 1152, false},
    {"[576,96]x[96,49]", 576, 49, 96, false},
    {"[256,256]x[256,49]", 256, 49, 256, false},
    {"[128,512]x[512,49]", 128, 49, 512, false},
    {"[96,576]x[576,49]", 96, 49, 576, false},
};

// Products that BLIS may take, of a transformer's linear layers at 256 to
// 1500 rows (BERT-base's, its up-projection's weight padded, and
// Whisper-tiny's) and of 1x1 convs (ResNet-50's, ConvNeXt-tiny's).
constexpr Shape kBlockShapes[] = {
    {"[256,768]x[768,768]", 256, 768, 768, false},
    {"[512,768]x[768,768]", 512, 768, 768, false},
    {"[768,768]x[768,768]", 768, 768, 768, false},
    {"[1024,768]x[768,768]", 1024, 768, 768, false},
    {"[256,768]x[768,3072+16]", 256, 3072, 768, false, 16},
    {"[512,768]x[768,3072+16]", 512, 3072, 768, false, 16},
    {"[768,768]x[768,3072+16]", 768, 3072, 768, false, 16},
    {"[256,3072]x[3072,768]", 256, 768, 3072, false},
    {"[512,3072]x[3072,768]", 512, 768, 3072, false},
    {"[768,3072]x[3072,768]", 768, 768, 3072, false},
    {"Whisper [1500,384]x[384,1536]", 1500, 1536, 384, false},
    {"Whisper [1500,1536]x[1536,384]", 1500, 384, 1536, false},
    {"ResNet-50 [3136,64]x[64,256]", 3136, 256, 64, false},
    {"ResNet-50 [3136,64]x[64,64]", 3136, 64, 64, false},
    {"ResNet-50 [784,512]x[512,128]", 784, 128, 512, false},
    {"ConvNeXt-tiny [784,192]x[192,768]", 784, 768, 192, false},
};

// bli_sgemm (BLIS's typed API: transpose 8, none 0; strides per row and
// column), from Debian's libblis4-openmp.
using BliSgemm = void (*)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t,
                          int64_t, const float*, int64_t, int64_t, const float*, float*, int64_t,
                          int64_t);
BliSgemm bli_sgemm = nullptr;
void (*bli_thread_set_num_threads)(int64_t) = nullptr;

// Loads BLIS as the kernels' runtime finds it ($LOOM_BLIS, else Debian's
// libblis4-openmp); else says why not.
absl::Status LoadBlis() {
  absl::StatusOr<std::vector<std::string>> link_args = cpp::BlisLinkArgs();
  if (!link_args.ok()) return link_args.status();
  if (link_args->empty()) return absl::NotFoundError("libblis4-openmp is not installed");
  void* blis = dlopen(link_args->front().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (blis == nullptr) return absl::NotFoundError(dlerror());
  bli_sgemm = reinterpret_cast<BliSgemm>(dlsym(blis, "bli_sgemm"));
  bli_thread_set_num_threads =
      reinterpret_cast<void (*)(int64_t)>(dlsym(blis, "bli_thread_set_num_threads"));
  if (bli_sgemm == nullptr || bli_thread_set_num_threads == nullptr) {
    bli_sgemm = nullptr;
    return absl::NotFoundError(absl::StrCat(link_args->front(), " lacks bli_sgemm"));
  }
  bli_thread_set_num_threads(sysconf(_SC_NPROCESSORS_ONLN));
  return absl::OkStatus();
}

using Call = std::function<void(const Shape&, const float*, const float*, float*)>;

void Dnnl(const Shape& s, const float* a, const float* b, float* c) {
  dnnl_sgemm('N', s.b_transposed ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, s.k, b, Ldb(s), 0.0f, c, s.n);
}

// Dnnl on all columns but the last, then on the last.
void DnnlLastColumnApart(const Shape& s, const float* a, const float* b, float* c) {
  dnnl_sgemm('N', 'N', s.m, s.n - 1, s.k, 1.0f, a, s.k, b, s.n, 0.0f, c, s.n);
  dnnl_sgemm('N', 'N', s.m, 1, s.k, 1.0f, a, s.k, b + s.n - 1, s.n, 0.0f, c + s.n - 1, s.n);
}

void Blis(const Shape& s, const float* a, const float* b, float* c) {
  static const float one = 1.0f, zero = 0.0f;
  bli_sgemm(0, s.b_transposed ? 8 : 0, s.m, s.n, s.k, &one, a, s.k, 1, b, Ldb(s), 1, &zero, c, s.n,
            1);
}

// `call` on each thread's block of rows, a serial call each (oneDNN's
// runs serially inside a parallel region; BLIS is told to).
void ThreadBlocks(const Call& call, const Shape& s, const float* a, const float* b, float* c) {
  if (bli_thread_set_num_threads != nullptr) bli_thread_set_num_threads(1);
#pragma omp parallel
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int first = s.m * t / threads, last = s.m * (t + 1) / threads;
    Shape block = s;
    block.m = last - first;
    call(block, a + first * s.k, b, c + first * s.n);
  }
  if (bli_thread_set_num_threads != nullptr) bli_thread_set_num_threads(omp_get_max_threads());
}

void OpenBlas(const Shape& s, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, s.b_transposed ? CblasTrans : CblasNoTrans, s.m, s.n,
              s.k, 1.0f, a, s.k, b, Ldb(s), 0.0f, c, s.n);
}

// Seconds per call, over `iters` calls after one warm-up call.
double TimeCalls(const Call& call, const Shape& s, const float* a, const float* b, float* c,
                 int iters) {
  call(s, a, b, c);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) call(s, a, b, c);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

// `count` floats at a 64-byte boundary, as loom's runtime allocates buffers.
std::unique_ptr<float[], void (*)(void*)> AlignedFloats(size_t count) {
  const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
  return {static_cast<float*>(std::aligned_alloc(64, bytes)), std::free};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Compare(const Shape& s, const std::vector<Call>& calls, int iters, int rounds) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t a_size = size_t{1} * s.m * s.k,
               b_size = size_t{1} * (s.b_transposed ? s.n : s.k) * Ldb(s);
  auto a = AlignedFloats(a_size), b = AlignedFloats(b_size),
       c = AlignedFloats(size_t{1} * s.m * s.n);
  std::generate_n(a.get(), a_size, [&] { return uniform(rng); });
  std::generate_n(b.get(), b_size, [&] { return uniform(rng); });
  std::vector<std::vector<double>> seconds(calls.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < calls.size(); ++i) {
      seconds[i].push_back(TimeCalls(calls[i], s, a.get(), b.get(), c.get(), iters));
    }
  }
  std::printf("%-44s", s.name);
  for (const std::vector<double>& library : seconds) {
    std::printf(" %9.1f", 2.0 * s.m * s.n * s.k / Median(library) * 1e-9);
  }
  std::printf("\n");
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int iters = absl::GetFlag(FLAGS_iters), rounds = absl::GetFlag(FLAGS_rounds);
  if (absl::GetFlag(FLAGS_last_column)) {
    std::printf("GFLOP/s of dnnl_sgemm\n%-44s %9s %9s\n", "shape", "whole", "last apart");
    for (const loom::Shape& shape : loom::kLastColumnShapes) {
      loom::Compare(shape, {loom::Dnnl, loom::DnnlLastColumnApart}, iters, rounds);
    }
    return 0;
  }
  const absl::Status blis_loaded = loom::LoadBlis();
  const bool blis = blis_loaded.ok();
  if (!blis) std::printf("BLIS skipped: %s\n", std::string(blis_loaded.message()).c_str());
  if (absl::GetFlag(FLAGS_blocks)) {
    if (!blis) return 1;
    std::printf("GFLOP/s on %d threads\n%-44s %9s %9s %9s %9s\n", omp_get_max_threads(), "shape",
                "blis", "blocks", "dnnl", "blocks");
    const auto blocks = [](const loom::Call& call) {
      return [call](const loom::Shape& s, const float* a, const float* b, float* c) {
        loom::ThreadBlocks(call, s, a, b, c);
      };
    };
    for (const loom::Shape& shape : loom::kBlockShapes) {
      loom::Compare(shape, {loom::Blis, blocks(loom::Blis), loom::Dnnl, blocks(loom::Dnnl)}, iters,
                    rounds);
    }
    return 0;
  }
  std::printf("GFLOP/s of each library\n%-44s %9s %9s %9s\n", "shape", "dnnl", "openblas",
              blis ? "blis" : "");
  std::vector<loom::Call> calls = {loom::Dnnl, loom::OpenBlas};
  if (blis) calls.push_back(loom::Blis);
  for (const loom::Shape& shape : loom::kShapes) loom::Compare(shape, calls, iters, rounds);
  return 0;
}
