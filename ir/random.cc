#include "ir/random.h"

#include <cmath>

namespace loom {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void FillUniform(Tensor& tensor, uint64_t seed, double low, double high) {
  const uint64_t stream = SplitMix64(seed);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    const double unit =
        static_cast<double>(SplitMix64(stream + i) >> 11) * 0x1.0p-53;
    const double v = low + unit * (high - low);
    if (IsFloat(tensor.dtype())) {
      tensor.SetDouble(i, v);
    } else {
      tensor.SetInt(i, static_cast<int64_t>(std::floor(v)));
    }
  }
}

}  // namespace loom
