#ifndef LOOM_IR_RANDOM_H_
#define LOOM_IR_RANDOM_H_

#include <cstdint>

#include "ir/tensor.h"

namespace loom {

// Fills `tensor` with values uniform in [low, high) from `seed`, the same on
// every machine (no std:: distributions, whose output is
// implementation-defined). Integer and bool tensors get floor(value).
void FillUniform(Tensor& tensor, uint64_t seed, double low, double high);

// The code that draws float tensors: one element at a time, or vectors
// (x86-64 with AVX2, or AVX-512), all giving the same bits.
enum class DrawCode { kScalar, kAvx2, kAvx512 };
// The fastest this CPU runs; FillUniform without a code uses it.
DrawCode BestDrawCode();
// FillUniform with `code` (which this CPU must run), for tests.
void FillUniform(Tensor& tensor, uint64_t seed, double low, double high, DrawCode code);

// A tensor of `type` filled by FillUniform.
Tensor UniformTensor(TensorType type, uint64_t seed, double low, double high);

// splitmix64: a small, well-mixed, portable hash of `x`. Inline: FillUniform
// hashes every element (called, it cost lstm_l6_h256's 3M draws a call
// each).
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace loom

#endif  // LOOM_IR_RANDOM_H_
