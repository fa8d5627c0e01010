// Where a linear layer's epilogue (bias and ReLU) should run, side by side
// on the linear layers of loom's models: alternating, median of each, in
// microseconds. All on every core.
//   separate:   dnnl_sgemm sharing the product among the threads, then a
//               second parallel loop adding the bias and applying the ReLU
//               to the whole output (what loom emits where the rows are too
//               few for per thread);
//   per thread: one parallel region, each thread computing its rows alone
//               (dnnl_sgemm runs serially inside a parallel region) and its
//               epilogue over them while they are still in its cache (what
//               loom emits where each thread has rows enough,
//               backends/cpp/library_calls.cc, kRowsPerThread);
//   primitive:  oneDNN's matmul primitive instead of dnnl_sgemm, then the
//               separate loop (what the next way gains by its library
//               alone);
//   post-op:    oneDNN's matmul primitive with the bias and an eltwise ReLU
//               post-op, the epilogue inside the library's kernel.
//
//   bazel run -c opt //tests/bench:gemm_epilogue -- [--iters=50] [--rounds=5]

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <dnnl.hpp>
#include <functional>
#include <random>
#include <unordered_map>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"

ABSL_FLAG(int, iters, 50, "calls per timed round");
ABSL_FLAG(int, rounds, 5, "rounds per way, alternating");

namespace loom {
namespace {

// y[m, n] = relu(x[m, k] * w[n, k]^T + bias[n]): a linear layer. With
// `w_rows`, w is stored [k, n] instead, as loom stores a constant weight
// it transposed when compiling.
struct Linear {
  const char* name;
  int64_t m, n, k;
  bool w_rows = false;

  char WTrans() const { return w_rows ? 'N' : 'T'; }
  int64_t WLeading() const { return w_rows ? n : k; }
};

constexpr Linear kLayers[] = {
    {"linear_large [1024,256]x[256,256]^T", 1024, 256, 256},
    {"bert_ffn up [128,128]x[512,128]^T", 128, 512, 128},
    {"bert_ffn down [128,512]x[128,512]^T", 128, 128, 512},
    {"matmul_512 as a layer", 512, 512, 512},
    // The fewest rows that loom gives two threads a block each (32 rows).
    {"64 rows [64,256]x[256,256]^T", 64, 256, 256},
    // A leading dimension of w that is a multiple of 512 (library_calls.cc,
    // kRowsPerThreadOnSlowLeading): BERT-base's and ViT-B's FFN up-projection.
    {"bert_base ffn up [128,768]x[768,3072]", 128, 3072, 768, true},
    {"vit_b ffn up [197,768]x[768,3072]", 197, 3072, 768, true},
    {"256 rows [256,768]x[768,3072]", 256, 3072, 768, true},
};

struct Operands {
  std::vector<float> x, w, bias, product, y;
  explicit Operands(const Linear& layer)
      : x(layer.m * layer.k),
        w(layer.n * layer.k),
        bias(layer.n),
        product(layer.m * layer.n),
        y(layer.m * layer.n) {
    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(-1, 1);
    for (std::vector<float>* v : {&x, &w, &bias}) {
      for (float& e : *v) e = uniform(random);
    }
  }
};

// Rows [first, last) of the epilogue, from `product` into `y`.
void BiasRelu(const Linear& layer, Operands& o, int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    const float* p = &o.product[r * layer.n];
    float* y = &o.y[r * layer.n];
#pragma omp simd
    for (int64_t c = 0; c < layer.n; ++c) y[c] = std::max(p[c] + o.bias[c], 0.0f);
  }
}

void Epilogue(const Linear& layer, Operands& o) {
#pragma omp parallel for
  for (int64_t r = 0; r < layer.m; ++r) BiasRelu(layer, o, r, r + 1);
}

void Separate(const Linear& layer, Operands& o) {
  dnnl_sgemm('N', layer.WTrans(), layer.m, layer.n, layer.k, 1.0f, o.x.data(), layer.k, o.w.data(),
             layer.WLeading(), 0.0f, o.product.data(), layer.n);
  Epilogue(layer, o);
}

void PerThread(const Linear& layer, Operands& o) {
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = layer.m * t / threads, last = layer.m * (t + 1) / threads;
    dnnl_sgemm('N', layer.WTrans(), last - first, layer.n, layer.k, 1.0f, &o.x[first * layer.k],
               layer.k, o.w.data(), layer.WLeading(), 0.0f, &o.product[first * layer.n], layer.n);
    BiasRelu(layer, o, first, last);
  }
}

// oneDNN's matmul primitive, with the bias and ReLU fused in or (`fused`
// false) writing the product for a separate epilogue.
class Primitive {
 public:
  Primitive(const Linear& layer, Operands& o, bool fused)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::memory::desc x({layer.m, layer.k}, f32, tag::ab);
    // w^T, stored [n, k] (tag ba) or, with w_rows, [k, n] (tag ab).
    const dnnl::memory::desc w({layer.k, layer.n}, f32, layer.w_rows ? tag::ab : tag::ba);
    const dnnl::memory::desc bias({1, layer.n}, f32, tag::ab);
    const dnnl::memory::desc y({layer.m, layer.n}, f32, tag::ab);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(x, engine_, o.x.data())},
             {DNNL_ARG_WEIGHTS, dnnl::memory(w, engine_, o.w.data())}};
    if (!fused) {
      matmul_ = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(x, w, y), engine_));
      args_[DNNL_ARG_DST] = dnnl::memory(y, engine_, o.product.data());
      return;
    }
    dnnl::post_ops relu;
    relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(relu);
    matmul_ = dnnl::matmul(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(x, w, bias, y), attr, engine_));
    args_[DNNL_ARG_BIAS] = dnnl::memory(bias, engine_, o.bias.data());
    args_[DNNL_ARG_DST] = dnnl::memory(y, engine_, o.y.data());
  }
  void Run() {
    matmul_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul matmul_;
  std::unordered_map<int, dnnl::memory> args_;
};

double MedianMicroseconds(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The largest difference between two ways' outputs, which must agree.
float MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  float most = 0;
  for (size_t i = 0; i < a.size(); ++i) most = std::max(most, std::abs(a[i] - b[i]));
  return most;
}

void Measure(const Linear& layer) {
  Operands o(layer);
  Primitive primitive(layer, o, /*fused=*/false), post_op(layer, o, /*fused=*/true);
  const std::function<void()> ways[] = {[&] { Separate(layer, o); }, [&] { PerThread(layer, o); },
                                        [&] {
                                          primitive.Run();
                                          Epilogue(layer, o);
                                        },
                                        [&] { post_op.Run(); }};
  constexpr int kWays = sizeof ways / sizeof ways[0];
  std::vector<float> reference;
  for (const std::function<void()>& way : ways) {
    way();
    if (reference.empty()) reference = o.y;
    if (MaxDifference(reference, o.y) > 1e-3f) {
      std::printf("%-40s the ways disagree: %g\n", layer.name, MaxDifference(reference, o.y));
      return;
    }
  }
  const int iters = absl::GetFlag(FLAGS_iters);
  std::vector<double> samples[kWays];
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (int w = 0; w < kWays; ++w) {
      ways[w]();  // warm
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) ways[w]();
      samples[w].push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          iters);
    }
  }
  std::printf("%-40s", layer.name);
  for (int w = 0; w < kWays; ++w) std::printf(" %10.1f", MedianMicroseconds(samples[w]));
  std::printf("\n");
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::printf("microseconds per call, %d threads\n%-40s %10s %10s %10s %10s\n",
              omp_get_max_threads(), "linear layer + bias + ReLU", "separate", "per thread",
              "primitive", "post-op");
  for (const loom::Linear& layer : loom::kLayers) loom::Measure(layer);
  return 0;
}
