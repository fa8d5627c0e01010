#include "ir/random.h"

#include <cmath>

namespace loom {
namespace {

// The value of element i: low + unit * (high - low), unit uniform in [0, 1).
inline double Draw(uint64_t stream, int64_t i, double low, double span) {
  const double unit = static_cast<double>(SplitMix64(stream + i) >> 11) * 0x1.0p-53;
  return low + unit * span;
}

// On x86, clones for AVX2 and AVX-512, chosen at run time: the default
// build's SSE2 has no 64-bit vector products or u64-to-double conversions,
// so it drew one element at a time (lstm_l6_h256's 3M draws: 11% of its
// compile's samples, 5% so).
#if defined(__x86_64__)
#define LOOM_VECTOR_CLONES \
  __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define LOOM_VECTOR_CLONES
#endif

template <typename T>
LOOM_VECTOR_CLONES void FillFloats(T* data, int64_t count, uint64_t stream, double low,
                                   double span) {
  for (int64_t i = 0; i < count; ++i) {
    data[i] = static_cast<T>(Draw(stream, i, low, span));
  }
}

}  // namespace

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void FillUniform(Tensor& tensor, uint64_t seed, double low, double high) {
  const uint64_t stream = SplitMix64(seed);
  const double span = high - low;
  // Typed loops for the float types: weights of large models are millions
  // of elements, and they are drawn at every import.
  if (tensor.dtype() == DType::kF32) {
    return FillFloats<float>(tensor.data_as<float>(), tensor.num_elements(), stream, low, span);
  }
  if (tensor.dtype() == DType::kF64) {
    return FillFloats<double>(tensor.data_as<double>(), tensor.num_elements(), stream, low, span);
  }
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetInt(i, static_cast<int64_t>(std::floor(Draw(stream, i, low, span))));
  }
}

}  // namespace loom
