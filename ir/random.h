#ifndef LOOM_IR_RANDOM_H_
#define LOOM_IR_RANDOM_H_

#include <cstdint>

#include "ir/tensor.h"

namespace loom {

// Fills `tensor` with values uniform in [low, high) from `seed`, the same on
// every machine (no std:: distributions, whose output is
// implementation-defined). Integer and bool tensors get floor(value).
void FillUniform(Tensor& tensor, uint64_t seed, double low, double high);

// splitmix64: a small, well-mixed, portable hash of `x`.
uint64_t SplitMix64(uint64_t x);

}  // namespace loom

#endif  // LOOM_IR_RANDOM_H_
