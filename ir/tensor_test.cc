#include "ir/tensor.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace loom {
namespace {

bool LineAligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

// Large enough to start some cache lines into its storage.
constexpr int64_t kLarge = 1 << 16;

TEST(TensorTest, StartsZeroedAndLineAligned) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, kLarge}) {
    Tensor t(DType::kF32, {n});
    EXPECT_TRUE(LineAligned(t.data()));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(t.data_as<float>()[i], 0.0f) << i;
  }
}

// Uninitialized gives the same tensor but for the zeroing: the caller
// writes every element.
TEST(TensorTest, UninitializedHasItsTypeAndAlignment) {
  Tensor t = Tensor::Uninitialized(TensorType{DType::kF64, {kLarge, 3}});
  EXPECT_EQ(t.num_elements(), 3 * kLarge);
  EXPECT_EQ(t.num_bytes(), 3 * kLarge * 8);
  EXPECT_TRUE(LineAligned(t.data()));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data_as<double>()[i] = static_cast<double>(i);
  const Tensor copy = t;
  EXPECT_TRUE(copy == t);
  EXPECT_EQ(copy.data_as<double>()[3 * kLarge - 1], 3 * kLarge - 1);
}

}  // namespace
}  // namespace loom
