#include "ir/random.h"

#include <algorithm>
#include <cmath>

#include "ir/parallel.h"

namespace loom {
namespace {

// The value of element i: low + unit * (high - low), unit uniform in [0, 1).
inline double Draw(uint64_t stream, int64_t i, double low, double span) {
  const double unit = static_cast<double>(SplitMix64(stream + i) >> 11) * 0x1.0p-53;
  return low + unit * span;
}

// A thread for each this many elements, up to the cores (an element is a
// function of its position): lstm_l6_h256's 3M weights, twelve tensors of
// 262K, took 4.3 ms on one core of a 2-core Xeon; a thread costs some 50
// us to start. Target clones for AVX2 and AVX-512 drew no faster: GCC -O2
// keeps the loop scalar.
constexpr int64_t kDrawPerThread = int64_t{1} << 17;

template <typename T>
void FillFloats(T* data, int64_t count, uint64_t stream, double low, double span) {
  const auto draw = [=](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) data[i] = static_cast<T>(Draw(stream, i, low, span));
  };
  RunInParts(count, std::min(count / kDrawPerThread, HardwareThreads()), draw);
}

}  // namespace

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

Tensor UniformTensor(TensorType type, uint64_t seed, double low, double high) {
  Tensor tensor(std::move(type));
  FillUniform(tensor, seed, low, high);
  return tensor;
}

}  // namespace loom
