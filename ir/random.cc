#include "ir/random.h"

#include <cmath>
#include <cstring>

#include "ir/parallel.h"

namespace loom {
namespace {

// The value of element i: low + unit * (high - low), unit uniform in [0, 1).
inline double Draw(uint64_t stream, int64_t i, double low, double span) {
  const double unit = static_cast<double>(SplitMix64(stream + i) >> 11) * 0x1.0p-53;
  return low + unit * span;
}

template <typename T>
void DrawScalars(T* data, int64_t first, int64_t last, uint64_t stream, double low, double span) {
  for (int64_t i = first; i < last; ++i) data[i] = static_cast<T>(Draw(stream, i, low, span));
}

// DrawScalars with GCC's vector extensions, kLanes elements at a time,
// giving the same bits: every step is exact but the last two, as in Draw,
// and the library is built without contracted FMAs. The 53 random bits
// convert to double as two exact halves (x86 below AVX-512 has no 64-bit
// integer conversion). 3M floats on one core of a Xeon (AVX-512), scalar
// against vectors, ms: AVX-512 8.7 vs 3.5, held to AVX2 8.4 vs 5.2, but
// generic x86-64 10.1 vs 11.4 (SSE2 has no 64-bit multiply either), so
// only the AVX2 and AVX-512 builds below run it.
constexpr int kLanes = 8;
using U64s = uint64_t __attribute__((vector_size(8 * kLanes)));
using F64s = double __attribute__((vector_size(8 * kLanes)));
using F32s = float __attribute__((vector_size(4 * kLanes)));

template <typename T>
inline __attribute__((always_inline)) void DrawVectors(T* data, int64_t first, int64_t last,
                                                       uint64_t stream, double low, double span) {
  U64s lane;
  for (int l = 0; l < kLanes; ++l) lane[l] = l;
  constexpr uint64_t kExponent52 = 0x4330000000000000ULL;  // 2^52 as a double's bits
  int64_t i = first;
  for (; i + kLanes <= last; i += kLanes) {
    U64s x = stream + static_cast<uint64_t>(i) + lane;
    x += 0x9e3779b97f4a7c15ULL;  // SplitMix64, lane by lane
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x = (x ^ (x >> 31)) >> 11;
    const F64s high = reinterpret_cast<F64s>((x >> 32) | kExponent52) - 0x1p52;
    const F64s low_half = reinterpret_cast<F64s>((x & 0xffffffffULL) | kExponent52) - 0x1p52;
    const F64s unit = (high * 0x1p32 + low_half) * 0x1.0p-53;
    const F64s value = low + unit * span;
    if constexpr (sizeof(T) == sizeof(float)) {
      const F32s narrowed = __builtin_convertvector(value, F32s);
      std::memcpy(data + i, &narrowed, sizeof narrowed);
    } else {
      std::memcpy(data + i, &value, sizeof value);
    }
  }
  DrawScalars(data, i, last, stream, low, span);
}

#if defined(__x86_64__) && defined(__GNUC__)
template <typename T>
__attribute__((target("arch=x86-64-v3"))) void DrawAvx2(T* data, int64_t first, int64_t last,
                                                        uint64_t stream, double low, double span) {
  DrawVectors(data, first, last, stream, low, span);
}
template <typename T>
__attribute__((target("arch=x86-64-v4"))) void DrawAvx512(T* data, int64_t first, int64_t last,
                                                          uint64_t stream, double low,
                                                          double span) {
  DrawVectors(data, first, last, stream, low, span);
}
#endif

template <typename T>
void FillFloats(T* data, int64_t count, uint64_t stream, double low, double span, DrawCode code) {
  const auto draw = [=](int64_t first, int64_t last) {
    MapPages(data + first, data + last);
    switch (code) {
#if defined(__x86_64__) && defined(__GNUC__)
      case DrawCode::kAvx512:
        return DrawAvx512(data, first, last, stream, low, span);
      case DrawCode::kAvx2:
        return DrawAvx2(data, first, last, stream, low, span);
#endif
      default:
        return DrawScalars(data, first, last, stream, low, span);
    }
  };
  // In parts on the cores: an element is a function of its position.
  RunInParts(count, PartsForElements(count), draw);
}

}  // namespace

DrawCode BestDrawCode() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return DrawCode::kAvx512;
  if (__builtin_cpu_supports("x86-64-v3")) return DrawCode::kAvx2;
#endif
  return DrawCode::kScalar;
}

void FillUniform(Tensor& tensor, uint64_t seed, double low, double high, DrawCode code) {
  const uint64_t stream = SplitMix64(seed);
  const double span = high - low;
  // Typed loops for the float types: weights of large models are millions
  // of elements, and they are drawn at every import.
  if (tensor.dtype() == DType::kF32) {
    return FillFloats<float>(tensor.data_as<float>(), tensor.num_elements(), stream, low, span,
                             code);
  }
  if (tensor.dtype() == DType::kF64) {
    return FillFloats<double>(tensor.data_as<double>(), tensor.num_elements(), stream, low, span,
                              code);
  }
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetInt(i, static_cast<int64_t>(std::floor(Draw(stream, i, low, span))));
  }
}

void FillUniform(Tensor& tensor, uint64_t seed, double low, double high) {
  static const DrawCode best = BestDrawCode();
  FillUniform(tensor, seed, low, high, best);
}

Tensor UniformTensor(TensorType type, uint64_t seed, double low, double high) {
  Tensor tensor(std::move(type));
  FillUniform(tensor, seed, low, high);
  return tensor;
}

}  // namespace loom
