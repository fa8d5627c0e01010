#include "ir/random.h"

#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"

namespace loom {
namespace {

// Element i of FillUniform's draw, one at a time as the generic build
// computes it.
double Reference(uint64_t seed, int64_t i, double low, double high) {
  const uint64_t bits = SplitMix64(SplitMix64(seed) + i);
  return low + static_cast<double>(bits >> 11) * 0x1.0p-53 * (high - low);
}

// The fill, in parts on several threads where the tensor is large, gives
// the bits of one element at a time: weights are the same on every machine
// and for every thread count.
TEST(RandomTest, FloatsAreTheSameOnEveryMachine) {
  Tensor floats(DType::kF32, {(1 << 20) + 3});
  Tensor doubles(DType::kF64, {(1 << 20) + 3});
  FillUniform(floats, 42, -0.3, 0.7);
  FillUniform(doubles, 42, -0.3, 0.7);
  for (int64_t i = 0; i < floats.num_elements(); ++i) {
    const double expected = Reference(42, i, -0.3, 0.7);
    const float expected_float = static_cast<float>(expected);
    ASSERT_EQ(std::memcmp(&floats.data_as<float>()[i], &expected_float, sizeof(float)), 0) << i;
    ASSERT_EQ(std::memcmp(&doubles.data_as<double>()[i], &expected, sizeof(double)), 0) << i;
  }
}

}  // namespace
}  // namespace loom
