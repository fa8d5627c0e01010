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
// the bits of one element at a time with every code this CPU runs: weights
// are the same on every machine and for every thread count.
TEST(RandomTest, FloatsAreTheSameOnEveryMachine) {
  const DrawCode best = BestDrawCode();
  for (DrawCode code : {DrawCode::kScalar, DrawCode::kAvx2, DrawCode::kAvx512}) {
    if (code > best) continue;
    SCOPED_TRACE(static_cast<int>(code));
    Tensor floats(DType::kF32, {(1 << 20) + 3});
    Tensor doubles(DType::kF64, {(1 << 20) + 3});
    FillUniform(floats, 42, -0.3, 0.7, code);
    FillUniform(doubles, 42, -0.3, 0.7, code);
    for (int64_t i = 0; i < floats.num_elements(); ++i) {
      const double expected = Reference(42, i, -0.3, 0.7);
      const float expected_float = static_cast<float>(expected);
      ASSERT_EQ(std::memcmp(&floats.data_as<float>()[i], &expected_float, sizeof(float)), 0) << i;
      ASSERT_EQ(std::memcmp(&doubles.data_as<double>()[i], &expected, sizeof(double)), 0) << i;
    }
  }
}

// Without a code, FillUniform draws with the best.
TEST(RandomTest, DefaultIsTheBestCode) {
  Tensor drawn(DType::kF32, {1000}), best(DType::kF32, {1000});
  FillUniform(drawn, 7, 0, 1);
  FillUniform(best, 7, 0, 1, BestDrawCode());
  EXPECT_TRUE(drawn == best);
}

}  // namespace
}  // namespace loom
