#include "ir/shared_weights.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/file_io.h"

namespace loom {
namespace {

class SharedWeightsTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(testing::TempDir(), "/weights_",
                         testing::UnitTest::GetInstance()->current_test_info()->name(), ".bin");
    ASSERT_TRUE(WriteFileBytes(path_, std::string(64, '\1')).ok());
  }

  // The tensor of 4 floats at `offset`, counting the reads.
  std::shared_ptr<const LazyTensor> Load(int64_t offset) {
    absl::StatusOr<std::shared_ptr<const LazyTensor>> tensor =
        SharedFileTensor(path_, offset, {DType::kF32, {4}}, [&]() -> absl::StatusOr<Tensor> {
          ++reads_;
          return Tensor(DType::kF32, {4});
        });
    EXPECT_TRUE(tensor.ok()) << tensor.status();
    return tensor.ok() ? *tensor : nullptr;
  }

  std::string path_;
  int reads_ = 0;
};

TEST_F(SharedWeightsTest, ARegionIsReadOnceWhileAGraphHoldsIt) {
  std::shared_ptr<const LazyTensor> first = Load(0);
  EXPECT_EQ(Load(0), first);
  EXPECT_EQ(reads_, 1);
  EXPECT_NE(Load(16), first);  // another region
  EXPECT_EQ(reads_, 2);
  first.reset();
  Load(0);  // none held it: read again
  EXPECT_EQ(reads_, 3);
}

TEST_F(SharedWeightsTest, AChangedFileIsReadAgain) {
  std::shared_ptr<const LazyTensor> first = Load(0);
  ASSERT_TRUE(WriteFileBytes(path_, std::string(128, '\2')).ok());
  EXPECT_NE(Load(0), first);
  EXPECT_EQ(reads_, 2);
}

// A pass's padded copy of a weight outlives the weight it came from, which
// a later compile reads again: the copy is found by the region's content.
TEST_F(SharedWeightsTest, WhatIsDerivedFromARegionOutlivesTheRead) {
  std::shared_ptr<const LazyTensor> source = Load(0);
  int derived = 0;
  auto derive = [&](const Tensor&) {
    ++derived;
    return Tensor(DType::kF32, {8});
  };
  std::shared_ptr<const LazyTensor> padded =
      SharedDerivedTensor(source, "pad", {DType::kF32, {8}}, derive);
  padded->data();
  source.reset();
  source = Load(0);
  EXPECT_EQ(reads_, 2);
  EXPECT_EQ(SharedDerivedTensor(source, "pad", {DType::kF32, {8}}, derive), padded);
  EXPECT_EQ(derived, 1);
}

TEST_F(SharedWeightsTest, AFailedReadIsItsError) {
  absl::StatusOr<std::shared_ptr<const LazyTensor>> missing = SharedFileTensor(
      path_ + ".missing", 0, {DType::kF32, {4}},
      []() -> absl::StatusOr<Tensor> { return absl::InvalidArgumentError("no such file"); });
  EXPECT_EQ(missing.status().message(), "no such file");
}

TEST(SharedDerivedTensorTest, DerivedOnceFromTheSameSourceAndTransform) {
  auto source = std::make_shared<const LazyTensor>(Tensor(DType::kF32, Shape{2, 2}));
  int derived = 0;
  auto derive = [&](const Tensor&) {
    ++derived;
    return Tensor(DType::kF32, {2, 3});
  };
  const TensorType type{DType::kF32, {2, 3}};
  std::shared_ptr<const LazyTensor> padded = SharedDerivedTensor(source, "pad 1", type, derive);
  EXPECT_EQ(SharedDerivedTensor(source, "pad 1", type, derive), padded);
  std::shared_ptr<const LazyTensor> other_pad = SharedDerivedTensor(source, "pad 2", type, derive);
  EXPECT_NE(other_pad, padded);
  EXPECT_EQ(derived, 0);  // made where read
  padded->data();
  other_pad->data();
  EXPECT_EQ(derived, 2);
  // Another source, even at the address of one that died, derives anew.
  const LazyTensor* address = source.get();
  source.reset();
  auto other = std::make_shared<const LazyTensor>(Tensor(DType::kF32, Shape{2, 2}));
  SharedDerivedTensor(other, "pad 1", type, derive)->data();
  EXPECT_EQ(derived, 3) << (other.get() == address ? "at the same address" : "");
}

}  // namespace
}  // namespace loom
