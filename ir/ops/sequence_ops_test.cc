// top_k, reverse_sequence and lrn: references against values by hand, and
// their errors.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Pointwise;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// top_k on `x`: both outputs.
absl::StatusOr<std::vector<Tensor>> RunTopK(const Tensor& x, const Attrs& attrs) {
  return RunOpOutputs("top_k", {x}, attrs, 2);
}

TEST(TopKTest, LargestAndSmallestWithTiesInIndexOrder) {
  // Rows [3, 1, 3, 2] and [0, 5, 5, 5].
  const Tensor x = MakeTensor(DType::kF32, {2, 4}, {3, 1, 3, 2, 0, 5, 5, 5});
  absl::StatusOr<std::vector<Tensor>> top = RunTopK(x, MakeAttrs({{"k", int64_t{3}}}));
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ((*top)[0].type(), (TensorType{DType::kF32, {2, 3}}));
  EXPECT_EQ((*top)[1].type(), (TensorType{DType::kI64, {2, 3}}));
  EXPECT_THAT(ToDoubles((*top)[0]), ElementsAre(3, 3, 2, 5, 5, 5));
  EXPECT_THAT(ToInts((*top)[1]), ElementsAre(0, 2, 3, 1, 2, 3));
  top = RunTopK(x, MakeAttrs({{"k", int64_t{2}}, {"largest", int64_t{0}}}));
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_THAT(ToDoubles((*top)[0]), ElementsAre(1, 2, 0, 5));
  EXPECT_THAT(ToInts((*top)[1]), ElementsAre(1, 3, 0, 1));
}

TEST(TopKTest, AlongTheFirstAxisOfIntegers) {
  // Columns [4, -1, 7] and [2, 2, -9].
  const Tensor x = MakeIntTensor(DType::kI32, {3, 2}, {4, 2, -1, 2, 7, -9});
  absl::StatusOr<std::vector<Tensor>> top =
      RunTopK(x, MakeAttrs({{"k", int64_t{2}}, {"axis", int64_t{0}}}));
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ((*top)[0].type(), (TensorType{DType::kI32, {2, 2}}));
  EXPECT_THAT(ToInts((*top)[0]), ElementsAre(7, 2, 4, 2));
  EXPECT_THAT(ToInts((*top)[1]), ElementsAre(2, 0, 0, 1));
}

TEST(TopKTest, NanIsLargerThanEveryNumber) {
  const Tensor x = MakeTensor(DType::kF64, {5}, {1, kNan, kInf, -kInf, kNan});
  absl::StatusOr<std::vector<Tensor>> top = RunTopK(x, MakeAttrs({{"k", int64_t{5}}}));
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_THAT(ToInts((*top)[1]), ElementsAre(1, 4, 2, 0, 3));
  top = RunTopK(x, MakeAttrs({{"k", int64_t{5}}, {"largest", int64_t{0}}}));
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_THAT(ToInts((*top)[1]), ElementsAre(3, 0, 2, 1, 4));
}

TEST(TopKTest, Errors) {
  const Tensor x = Iota(DType::kF32, {2, 4});
  EXPECT_THAT(RunTopK(x, MakeAttrs({{"k", int64_t{5}}})).status().ToString(),
              HasSubstr("node 'test_node' (top_k): k = 5 is outside [0, 4]"));
  EXPECT_THAT(RunTopK(x, MakeAttrs({{"k", int64_t{-1}}})).status().ToString(),
              HasSubstr("k = -1 is outside"));
  EXPECT_THAT(RunTopK(x, MakeAttrs({{"k", int64_t{1}}, {"axis", int64_t{2}}})).status().ToString(),
              HasSubstr("axis"));
  EXPECT_THAT(
      RunTopK(x, MakeAttrs({{"k", int64_t{1}}, {"largest", int64_t{2}}})).status().ToString(),
      HasSubstr("attribute 'largest' must be 0 or 1, got 2"));
  EXPECT_THAT(RunTopK(MakeTensor(DType::kBool, {2}, {0, 1}), MakeAttrs({{"k", int64_t{1}}}))
                  .status()
                  .ToString(),
              HasSubstr("dtype bool"));
  EXPECT_THAT(RunTopK(x, {}).status().ToString(), HasSubstr("'k'"));
}

TEST(ReverseSequenceTest, TimeMajorAndBatchMajor) {
  // x [T=3, B=2]: column b is sequence b; lengths 3 and 1.
  const Tensor time_major = MakeTensor(DType::kF32, {3, 2}, {0, 10, 1, 11, 2, 12});
  const Tensor lengths = MakeIntTensor(DType::kI64, {2}, {3, 1});
  absl::StatusOr<Tensor> y = RunOp("reverse_sequence", {time_major, lengths});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(2, 10, 1, 11, 0, 12));
  // x [B=2, T=3, 2]: lengths 2 and 0.
  const Tensor batch_major = Iota(DType::kI64, {2, 3, 2});
  y = RunOp("reverse_sequence", {batch_major, MakeIntTensor(DType::kI64, {2}, {2, 0})},
            MakeAttrs({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(2, 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11));
}

TEST(ReverseSequenceTest, Errors) {
  const Tensor x = Iota(DType::kF32, {3, 2});
  EXPECT_THAT(RunOpError("reverse_sequence", {x, MakeIntTensor(DType::kI64, {2}, {4, 1})}),
              HasSubstr("node 'test_node' (reverse_sequence): sequence_lens[0] = 4 is outside "
                        "[0, 3]"));
  EXPECT_THAT(RunOpError("reverse_sequence", {x, MakeIntTensor(DType::kI64, {2}, {1, -1})}),
              HasSubstr("sequence_lens[1] = -1"));
  EXPECT_THAT(RunOpError("reverse_sequence", {x, MakeIntTensor(DType::kI64, {3}, {1, 1, 1})}),
              HasSubstr("sequence_lens is i64[3]; expected i64[2]"));
  EXPECT_THAT(RunOpError("reverse_sequence", {x, MakeIntTensor(DType::kI32, {2}, {1, 1})}),
              HasSubstr("sequence_lens is i32[2]"));
  EXPECT_THAT(RunOpError("reverse_sequence", {x, MakeIntTensor(DType::kI64, {2}, {1, 1})},
                         MakeAttrs({{"batch_axis", int64_t{2}}})),
              HasSubstr("attributes 'batch_axis' = 2 and 'time_axis' = 0"));
  EXPECT_THAT(RunOpError("reverse_sequence",
                         {Iota(DType::kF32, {3}), MakeIntTensor(DType::kI64, {1}, {1})}),
              HasSubstr("expected at least 2"));
}

TEST(LrnTest, SumsOverTheChannelWindow) {
  // x [1, 3, 1, 2]; size 2: channel c sums channels c - 0 .. c + 1.
  const Tensor x = MakeTensor(DType::kF64, {1, 3, 1, 2}, {1, 2, 3, 4, 5, 6});
  absl::StatusOr<Tensor> y = RunOp(
      "lrn", {x}, MakeAttrs({{"size", int64_t{2}}, {"alpha", 0.5}, {"beta", 0.5}, {"bias", 2.0}}));
  ASSERT_TRUE(y.ok()) << y.status();
  // Sums of squares: (1+9, 4+16), (9+25, 16+36), (25, 36); base 2 + sum/4.
  const std::vector<double> want = {1 / std::sqrt(4.5),  2 / std::sqrt(7.0),  3 / std::sqrt(10.5),
                                    4 / std::sqrt(15.0), 5 / std::sqrt(8.25), 6 / std::sqrt(11.0)};
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-15), want));
  // Defaults, size 3 (one channel each side).
  y = RunOp("lrn", {x}, MakeAttrs({{"size", int64_t{3}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_NEAR(y->GetDouble(2), 3 / std::pow(1 + 1e-4 / 3 * (1 + 9 + 25), 0.75), 1e-15);
}

TEST(LrnTest, Errors) {
  EXPECT_THAT(RunOpError("lrn", {Iota(DType::kF32, {1, 3, 2})}, MakeAttrs({{"size", int64_t{0}}})),
              HasSubstr("node 'test_node' (lrn): attribute 'size' must be at least 1, got 0"));
  EXPECT_THAT(RunOpError("lrn", {Iota(DType::kF32, {3})}, MakeAttrs({{"size", int64_t{1}}})),
              HasSubstr("rank 1"));
  EXPECT_THAT(RunOpError("lrn", {Iota(DType::kI64, {1, 3})}, MakeAttrs({{"size", int64_t{1}}})),
              HasSubstr("dtype i64"));
  EXPECT_THAT(RunOpError("lrn", {Iota(DType::kF32, {1, 3})}), HasSubstr("'size'"));
}

}  // namespace
}  // namespace loom
