// einsum: the reference against products by hand, and the equation's
// errors.
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Equation(const std::string& equation) { return MakeAttrs({{"equation", equation}}); }

TEST(EinsumTest, ProductsByHand) {
  // a = [[1, 2, 3], [4, 5, 6]], b = [[1, 0], [0, 1], [2, 2]].
  const Tensor a = MakeTensor(DType::kF64, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = MakeTensor(DType::kF64, {3, 2}, {1, 0, 0, 1, 2, 2});
  absl::StatusOr<Tensor> y = RunOp("einsum", {a, b}, Equation("ij,jk->ik"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(7, 8, 16, 17));
  y = RunOp("einsum", {a}, Equation("ij->ji"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 4, 2, 5, 3, 6));
  y = RunOp("einsum", {a}, Equation("ij"));  // implicit: as it is
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 2, 3, 4, 5, 6));
  y = RunOp("einsum", {a}, Equation("ji"));  // implicit: letters sorted
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 4, 2, 5, 3, 6));
  y = RunOp("einsum", {a}, Equation("ij->"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(21));
  // Traces and diagonals: m = [[1, 2], [3, 4]].
  const Tensor m = MakeTensor(DType::kF64, {2, 2}, {1, 2, 3, 4});
  y = RunOp("einsum", {m}, Equation("ii"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(5));
  y = RunOp("einsum", {m}, Equation("ii->i"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 4));
  // An outer product of integers, and a broadcast "..." dim of size 1.
  const Tensor u = MakeIntTensor(DType::kI64, {2}, {2, 3});
  const Tensor v = MakeIntTensor(DType::kI64, {3}, {1, -1, 5});
  y = RunOp("einsum", {u, v}, Equation("i,j->ij"));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(2, -2, 10, 3, -3, 15));
  const Tensor rows = MakeTensor(DType::kF32, {1, 2}, {1, 2});
  const Tensor cols = MakeTensor(DType::kF32, {3, 1}, {1, 10, 100});
  y = RunOp("einsum", {rows, cols}, Equation("...,...->..."));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 2, 10, 20, 100, 200));
}

TEST(EinsumTest, Errors) {
  const Tensor a = Iota(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("ijk->i")),
              HasSubstr("node 'test_node' (einsum): equation \"ijk->i\": term \"ijk\" names 3 "
                        "dims of input 0, which has shape [2,3]"));
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("ij,jk->ik")),
              HasSubstr("has 2 input terms for 1 inputs"));
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("i2")), HasSubstr("has '2'"));
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("ij->k")),
              HasSubstr("output letter 'k' is in no input term"));
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("ij->ii")),
              HasSubstr("output letter 'i' is repeated"));
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("ii")),
              HasSubstr("repeats a letter over dims of sizes 2 and 3"));
  EXPECT_THAT(RunOpError("einsum", {a, a}, Equation("ij,ij->")), HasSubstr("OK"));
  EXPECT_THAT(RunOpError("einsum", {a, Iota(DType::kF32, {3, 3})}, Equation("ij,ij->")),
              HasSubstr("sizes 2 and 3, which do not broadcast"));
  EXPECT_THAT(RunOpError("einsum", {a}, Equation("...->")),
              HasSubstr("the output term has no ..."));
  EXPECT_THAT(RunOpError("einsum", {a, Iota(DType::kF64, {3})}, Equation("ij,j->i")),
              HasSubstr("different dtypes"));
  EXPECT_THAT(RunOpError("einsum", {MakeTensor(DType::kBool, {2}, {1, 0})}, Equation("i")),
              HasSubstr("dtype bool"));
  EXPECT_THAT(RunOpError("einsum", {a}), HasSubstr("equation"));
}

}  // namespace
}  // namespace loom
