// Two libraries of one model with conv calls link into one program (their
// oneDNN support code is named after each class) and give the same outputs.
#include <cmath>
#include <vector>

#include "examples/aot/resnet_block_a.h"
#include "examples/aot/resnet_block_b.h"
#include "gtest/gtest.h"

namespace {

TEST(AotConvModelsTest, TwoLibrariesOfConvCallsLinkAndAgree) {
  absl::StatusOr<ResNetBlockA> a = ResNetBlockA::Create();
  absl::StatusOr<ResNetBlockB> b = ResNetBlockB::Create();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const size_t elements = 64 * 56 * 56;
  std::vector<float> x(elements), y_a(elements), y_b(elements);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101 / 50.0 - 1.0);
  ASSERT_TRUE(a->Run(x.data(), y_a.data()).ok());
  ASSERT_TRUE(b->Run(x.data(), y_b.data()).ok());
  size_t positive = 0;
  for (size_t i = 0; i < elements; ++i) {
    ASSERT_TRUE(std::isfinite(y_a[i])) << "element " << i;
    ASSERT_EQ(y_a[i], y_b[i]) << "element " << i;
    positive += y_a[i] > 0;
  }
  // The block ends in a relu: some of it is positive, not all.
  EXPECT_GT(positive, elements / 10);
  EXPECT_LT(positive, elements);
}

}  // namespace
