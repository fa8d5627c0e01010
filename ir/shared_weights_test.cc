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
  std::shared_ptr<const Tensor> Load(int64_t offset) {
    absl::StatusOr<std::shared_ptr<const Tensor>> tensor =
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
  std::shared_ptr<const Tensor> first = Load(0);
  EXPECT_EQ(Load(0), first);
  EXPECT_EQ(reads_, 1);
  EXPECT_NE(Load(16), first);  // another region
  EXPECT_EQ(reads_, 2);
  first.reset();
  Load(0);  // none held it: read again
  EXPECT_EQ(reads_, 3);
}

TEST_F(SharedWeightsTest, AChangedFileIsReadAgain) {
  std::shared_ptr<const Tensor> first = Load(0);
  ASSERT_TRUE(WriteFileBytes(path_, std::string(128, '\2')).ok());
  EXPECT_NE(Load(0), first);
  EXPECT_EQ(reads_, 2);
}

// A pass's padded copy of a weight outlives the weight it came from, which
// a later compile reads again: the copy is found by the region's content.
TEST_F(SharedWeightsTest, WhatIsDerivedFromARegionOutlivesTheRead) {
  std::shared_ptr<const Tensor> source = Load(0);
  int derived = 0;
  auto derive = [&] {
    ++derived;
    return Tensor(DType::kF32, {8});
  };
  std::shared_ptr<const Tensor> padded = SharedDerivedTensor(source, "pad", derive);
  source.reset();
  source = Load(0);
  EXPECT_EQ(reads_, 2);
  EXPECT_EQ(SharedDerivedTensor(source, "pad", derive), padded);
  EXPECT_EQ(derived, 1);
}

TEST_F(SharedWeightsTest, AFailedReadIsItsError) {
  absl::StatusOr<std::shared_ptr<const Tensor>> missing = SharedFileTensor(
      path_ + ".missing", 0, {DType::kF32, {4}},
      []() -> absl::StatusOr<Tensor> { return absl::InvalidArgumentError("no such file"); });
  EXPECT_EQ(missing.status().message(), "no such file");
}

TEST(SharedDerivedTensorTest, DerivedOnceFromTheSameSourceAndTransform) {
  auto source = std::make_shared<const Tensor>(DType::kF32, Shape{2, 2});
  int derived = 0;
  auto derive = [&] {
    ++derived;
    return Tensor(DType::kF32, {2, 3});
  };
  std::shared_ptr<const Tensor> padded = SharedDerivedTensor(source, "pad 1", derive);
  EXPECT_EQ(SharedDerivedTensor(source, "pad 1", derive), padded);
  EXPECT_NE(SharedDerivedTensor(source, "pad 2", derive), padded);
  EXPECT_EQ(derived, 2);
  // Another source, even at the address of one that died, derives anew.
  const Tensor* address = source.get();
  source.reset();
  auto other = std::make_shared<const Tensor>(DType::kF32, Shape{2, 2});
  SharedDerivedTensor(other, "pad 1", derive);
  EXPECT_EQ(derived, 3) << (other.get() == address ? "at the same address" : "");
}

}  // namespace
}  // namespace loom
