#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsNan;

// x[i][j][k] = 100 i + 10 j + k on [2, 3, 4].
Tensor Digits(DType dtype) {
  Tensor x(dtype, {2, 3, 4});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) x.SetInt((i * 3 + j) * 4 + k, 100 * i + 10 * j + k);
    }
  }
  return x;
}

TEST(ReductionTest, SumOverMiddleAxis) {
  absl::StatusOr<Tensor> y =
      RunOp("reduce_sum", {Digits(DType::kF32)}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kF32, {2, 4}}));
  // sum_j (100 i + 10 j + k) = 300 i + 30 + 3 k
  EXPECT_THAT(ToDoubles(*y), ElementsAre(30, 33, 36, 39, 330, 333, 336, 339));
}

TEST(ReductionTest, KeepdimsAndNegativeAxes) {
  absl::StatusOr<Tensor> y = RunOp("reduce_sum", {Digits(DType::kI32)},
                                   MakeAttrs({{"axes", Ints{-1, 0}}, {"keepdims", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kI32, {1, 3, 1}}));
  // sum_{i,k} = 4 * 100 + 2 * 4 * 10 j + 2 * 6
  EXPECT_THAT(ToInts(*y), ElementsAre(412, 492, 572));
}

TEST(ReductionTest, AbsentOrEmptyAxesReduceEverything) {
  for (const Attrs& attrs : {Attrs(), MakeAttrs({{"axes", Ints{}}})}) {
    absl::StatusOr<Tensor> y = RunOp("reduce_max", {Digits(DType::kI64)}, attrs);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->type(), (TensorType{DType::kI64, {}}));
    EXPECT_THAT(ToInts(*y), ElementsAre(123));
  }
  absl::StatusOr<Tensor> y =
      RunOp("reduce_min", {Digits(DType::kF64)}, MakeAttrs({{"keepdims", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 1, 1}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0));
}

TEST(ReductionTest, MeanMaxMinAgainstExplicitLoops) {
  Tensor x = Iota(DType::kF64, {3, 5}, -4.5, 0.75);
  for (int64_t axis : {0, 1}) {
    for (const char* op : {"reduce_mean", "reduce_max", "reduce_min"}) {
      absl::StatusOr<Tensor> y = RunOp(op, {x}, MakeAttrs({{"axes", Ints{axis}}}));
      ASSERT_TRUE(y.ok()) << y.status();
      const int outer = axis == 0 ? 5 : 3;
      const int inner = axis == 0 ? 3 : 5;
      ASSERT_EQ(y->num_elements(), outer);
      for (int o = 0; o < outer; ++o) {
        double sum = 0, max = -INFINITY, min = INFINITY;
        for (int r = 0; r < inner; ++r) {
          const double v = axis == 0 ? x.GetDouble(r * 5 + o) : x.GetDouble(o * 5 + r);
          sum += v;
          max = std::max(max, v);
          min = std::min(min, v);
        }
        const std::string name = op;
        const double expected = name == "reduce_mean"  ? sum / inner
                                : name == "reduce_max" ? max
                                                       : min;
        EXPECT_DOUBLE_EQ(y->GetDouble(o), expected) << op << " axis " << axis;
      }
    }
  }
}

TEST(ReductionTest, SingletonAxesAndOddShapes) {
  Tensor x = Iota(DType::kF32, {1, 7, 1});
  absl::StatusOr<Tensor> y = RunOp("reduce_sum", {x}, MakeAttrs({{"axes", Ints{0, 2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{7}));
  EXPECT_EQ(ToDoubles(*y), ToDoubles(x));
}

TEST(ReductionTest, MaxAndMinPropagateNan) {
  Tensor x = MakeTensor(DType::kF32, {2, 2}, {1, NAN, 3, 4});
  absl::StatusOr<Tensor> y = RunOp("reduce_max", {x}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), 4));
  y = RunOp("reduce_min", {x}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), 3));
}

TEST(ReductionTest, IntegerSumIsExactInInt64) {
  const int64_t big = (1LL << 53) + 1;
  Tensor x = MakeIntTensor(DType::kI64, {3}, {big, big, -2});
  absl::StatusOr<Tensor> y = RunOp("reduce_sum", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(2 * big - 2));
}

TEST(ReductionTest, EmptyAxes) {
  Tensor empty(DType::kF32, {2, 0});
  absl::StatusOr<Tensor> y = RunOp("reduce_sum", {empty}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0));
  y = RunOp("reduce_mean", {empty}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), IsNan()));
  // Reducing the non-empty axis gives an empty result.
  y = RunOp("reduce_max", {empty}, MakeAttrs({{"axes", Ints{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0}));
  EXPECT_THAT(RunOpError("reduce_max", {empty}, MakeAttrs({{"axes", Ints{1}}})),
              HasSubstr("node 'test_node' (reduce_max): cannot reduce over the "
                        "empty axis 1 of [2,0]"));
  EXPECT_THAT(RunOpError("reduce_min", {empty}),
              HasSubstr("(reduce_min): cannot reduce over the empty axis 1"));
}

TEST(ReductionTest, AttributeAndDTypeErrors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", Ints{1, -1}}})),
              HasSubstr("node 'test_node' (reduce_sum): attribute 'axes': axis "
                        "1 is listed more than once"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", Ints{2}}})),
              HasSubstr("(reduce_sum): attribute 'axes': axis 2 is out of "
                        "range for rank 2"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", Ints{-3}}})),
              HasSubstr("axis -3 is out of range for rank 2"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"keepdims", int64_t{2}}})),
              HasSubstr("(reduce_sum): attribute 'keepdims' must be 0 or 1, "
                        "got 2"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axes", int64_t{1}}})),
              HasSubstr("(reduce_sum): attribute 'axes' must be ints, got int"));
  EXPECT_THAT(RunOpError("reduce_sum", {x}, MakeAttrs({{"axis", Ints{1}}})),
              HasSubstr("(reduce_sum): unknown attribute 'axis' (known: axes, "
                        "keepdims)"));
  EXPECT_THAT(RunOpError("reduce_mean", {Tensor(DType::kI32, {2})}),
              HasSubstr("(reduce_mean): input 0 has dtype i32, expected a float"));
  EXPECT_THAT(RunOpError("reduce_sum", {Tensor(DType::kBool, {2})}),
              HasSubstr("(reduce_sum): input 0 has dtype bool"));
}

// Expected reduce_* results by the definition, over the elements `values`
// of one output.
double ExpectedReduction(const std::string& op, const std::vector<double>& values) {
  double sum = 0, prod = 1, l1 = 0, squares = 0, exps = 0;
  for (double v : values) {
    sum += v;
    prod *= v;
    l1 += std::fabs(v);
    squares += v * v;
    exps += std::exp(v);
  }
  if (op == "reduce_prod") return prod;
  if (op == "reduce_l1") return l1;
  if (op == "reduce_l2") return std::sqrt(squares);
  if (op == "reduce_log_sum") return std::log(sum);
  if (op == "reduce_log_sum_exp") return std::log(exps);
  return squares;  // reduce_sum_square
}

TEST(ReductionTest, NewReductionsAgainstTheirDefinitions) {
  // Positive values, so that reduce_log_sum is defined.
  Tensor x = Iota(DType::kF64, {3, 1, 5}, 0.25, 0.2);
  const std::vector<std::pair<Ints, bool>> cases = {
      {{-1}, false}, {{0, 2}, true}, {{1}, false}, {{}, false}};
  for (const char* op : {"reduce_prod", "reduce_l1", "reduce_l2", "reduce_log_sum",
                         "reduce_log_sum_exp", "reduce_sum_square"}) {
    for (const auto& [axes, keepdims] : cases) {
      absl::StatusOr<Tensor> y =
          RunOp(op, {x}, MakeAttrs({{"axes", axes}, {"keepdims", int64_t{keepdims}}}));
      ASSERT_TRUE(y.ok()) << y.status();
      // Group the input elements by the output element they reduce into.
      std::vector<bool> reduced(3, axes.empty());
      for (int64_t a : axes) reduced[(a + 3) % 3] = true;
      std::vector<std::vector<double>> groups(y->num_elements());
      for (int i = 0; i < 3; ++i) {
        for (int k = 0; k < 5; ++k) {
          const int out_i = reduced[0] ? 0 : i;
          const int out_k = reduced[2] ? 0 : k;
          const int out_k_size = reduced[2] ? 1 : 5;
          groups[out_i * out_k_size + out_k].push_back(x.GetDouble(i * 5 + k));
        }
      }
      for (size_t o = 0; o < groups.size(); ++o) {
        const double expected = ExpectedReduction(op, groups[o]);
        EXPECT_NEAR(y->GetDouble(o), expected, 1e-13 * std::max(1.0, std::fabs(expected)))
            << op << " output " << o;
      }
      if (keepdims) {
        EXPECT_EQ(y->shape(), (Shape{1, 1, 1})) << op;
      }
    }
  }
}

TEST(ReductionTest, NewReductionsOnIntegersAndNegatives) {
  Tensor x = MakeIntTensor(DType::kI32, {2, 3}, {-2, 3, -4, 5, -1, 1});
  const std::pair<const char*, std::vector<int64_t>> cases[] = {
      {"reduce_prod", {24, -5}},
      {"reduce_l1", {9, 7}},
      {"reduce_sum_square", {29, 27}},
  };
  for (const auto& [op, expected] : cases) {
    absl::StatusOr<Tensor> y = RunOp(op, {x}, MakeAttrs({{"axes", Ints{1}}}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->type(), (TensorType{DType::kI32, {2}})) << op;
    EXPECT_EQ(ToInts(*y), expected) << op;
  }
  absl::StatusOr<Tensor> y = RunOp("reduce_l1", {MakeTensor(DType::kF32, {3}, {-1.5, 2, -0.5})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(4));
}

TEST(ReductionTest, LogSumExpIsStable) {
  Tensor x = MakeTensor(DType::kF32, {3, 2}, {1000, 1000, -INFINITY, -INFINITY, INFINITY, 1});
  absl::StatusOr<Tensor> y = RunOp("reduce_log_sum_exp", {x}, MakeAttrs({{"axes", Ints{-1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_NEAR(y->GetDouble(0), 1000 + std::log(2.0), 1e-4);
  EXPECT_EQ(y->GetDouble(1), -INFINITY);
  EXPECT_EQ(y->GetDouble(2), INFINITY);
  y = RunOp("reduce_log_sum_exp", {MakeTensor(DType::kF64, {2}, {NAN, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan()));
}

TEST(ReductionTest, NewReductionsOverNothing) {
  Tensor empty(DType::kF32, {2, 0});
  const std::pair<const char*, double> cases[] = {
      {"reduce_prod", 1},
      {"reduce_l1", 0},
      {"reduce_l2", 0},
      {"reduce_sum_square", 0},
      {"reduce_log_sum", -INFINITY},
      {"reduce_log_sum_exp", -INFINITY},
  };
  for (const auto& [op, expected] : cases) {
    absl::StatusOr<Tensor> y = RunOp(op, {empty}, MakeAttrs({{"axes", Ints{1}}}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(ToDoubles(*y), ElementsAre(expected, expected)) << op;
  }
}

TEST(ReductionTest, VarianceIsTheMeanSquaredDeviation) {
  // Rows {1, 2, 3, 4} and {1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4}: the same
  // variance, 1.25, however far the values are from zero.
  Tensor x = MakeTensor(DType::kF64, {2, 4}, {1, 2, 3, 4, 1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4});
  absl::StatusOr<Tensor> y = RunOp("reduce_var", {x}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1.25, 1.25));
  // Over everything, keeping the dims; NaN over no values or with a NaN.
  y = RunOp("reduce_var", {x}, MakeAttrs({{"keepdims", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 1}));
  EXPECT_NEAR(y->GetDouble(0), 1.25 + 0.25e16, 1);
  y = RunOp("reduce_var", {Tensor(DType::kF32, {2, 0})}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan(), IsNan()));
  y = RunOp("reduce_var", {MakeTensor(DType::kF32, {3}, {1, NAN, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan()));
}

TEST(ReductionTest, FloatOnlyReductionsRejectIntegers) {
  for (const char* op : {"reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_var"}) {
    EXPECT_THAT(RunOpError(op, {Tensor(DType::kI64, {2})}),
                HasSubstr(absl::StrCat("node 'test_node' (", op,
                                       "): input 0 has dtype i64, expected a "
                                       "float")));
  }
  EXPECT_THAT(RunOpError("reduce_prod", {Tensor(DType::kF32, {2})}, MakeAttrs({{"axes", Ints{1}}})),
              HasSubstr("node 'test_node' (reduce_prod): attribute 'axes': "
                        "axis 1 is out of range for rank 1"));
}

// argmax / argmin by explicit loops along `axis` of a [2, 3, 4] tensor.
std::vector<int64_t> NaiveArg(const Tensor& x, int axis, bool is_max) {
  const Shape& s = x.shape();
  std::vector<int64_t> out;
  const int len = s[axis];
  for (int i = 0; i < (axis == 0 ? 1 : s[0]); ++i) {
    for (int j = 0; j < (axis == 1 ? 1 : s[1]); ++j) {
      for (int k = 0; k < (axis == 2 ? 1 : s[2]); ++k) {
        int64_t best = 0;
        double best_value = 0;
        for (int r = 0; r < len; ++r) {
          const int ii = axis == 0 ? r : i, jj = axis == 1 ? r : j, kk = axis == 2 ? r : k;
          const double v = x.GetDouble((ii * s[1] + jj) * s[2] + kk);
          if (r == 0 || (is_max ? v > best_value : v < best_value)) {
            best = r;
            best_value = v;
          }
        }
        out.push_back(best);
      }
    }
  }
  return out;
}

TEST(ArgReductionTest, EveryAxisAgainstExplicitLoops) {
  // Distinct values in a scrambled order.
  Tensor x(DType::kF32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) x.SetDouble(i, (i * 7) % 24 - 11.5);
  for (int axis = -3; axis < 3; ++axis) {
    for (const char* op : {"argmax", "argmin"}) {
      absl::StatusOr<Tensor> y = RunOp(op, {x}, MakeAttrs({{"axis", int64_t{axis}}}));
      ASSERT_TRUE(y.ok()) << y.status();
      const int a = (axis + 3) % 3;
      Shape kept = x.shape();
      kept[a] = 1;
      EXPECT_EQ(y->type(), (TensorType{DType::kI64, kept}));
      EXPECT_EQ(ToInts(*y), NaiveArg(x, a, std::string(op) == "argmax")) << op << " axis " << axis;
    }
  }
  absl::StatusOr<Tensor> y =
      RunOp("argmax", {x}, MakeAttrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 4}));
}

TEST(ArgReductionTest, TiesIntegersAndSizeOneAxes) {
  Tensor x = MakeIntTensor(DType::kI64, {2, 5},
                           {3, 9, 1, 9, 1,  //
                            -4, -4, -4, -4, -4});
  const auto run = [&](const char* op, int64_t last) {
    absl::StatusOr<Tensor> y = RunOp(
        op, {x},
        MakeAttrs({{"axis", int64_t{-1}}, {"select_last_index", last}, {"keepdims", int64_t{0}}}));
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? ToInts(*y) : std::vector<int64_t>();
  };
  EXPECT_THAT(run("argmax", 0), ElementsAre(1, 0));
  EXPECT_THAT(run("argmax", 1), ElementsAre(3, 4));
  EXPECT_THAT(run("argmin", 0), ElementsAre(2, 0));
  EXPECT_THAT(run("argmin", 1), ElementsAre(4, 4));
  absl::StatusOr<Tensor> y = RunOp("argmin", {Iota(DType::kI32, {1, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 3}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 0, 0));
}

TEST(ArgReductionTest, NanIsTheExtremeAndTheFirstNanWins) {
  Tensor x = MakeTensor(DType::kF64, {6}, {1, NAN, 5, NAN, -INFINITY, 2});
  for (const char* op : {"argmax", "argmin"}) {
    absl::StatusOr<Tensor> y = RunOp(op, {x});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(ToInts(*y), ElementsAre(1)) << op;
    y = RunOp(op, {x}, MakeAttrs({{"select_last_index", int64_t{1}}}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(ToInts(*y), ElementsAre(3)) << op;
  }
}

TEST(ArgReductionTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("argmax", {x}, MakeAttrs({{"axis", int64_t{2}}})),
              HasSubstr("node 'test_node' (argmax): attribute 'axis': axis 2 "
                        "is out of range for rank 2"));
  EXPECT_THAT(
      RunOpError("argmin", {Tensor(DType::kF32, {2, 0})}, MakeAttrs({{"axis", int64_t{1}}})),
      HasSubstr("node 'test_node' (argmin): cannot take argmin over "
                "the empty axis 1 of [2,0]"));
  EXPECT_THAT(RunOpError("argmax", {x}, MakeAttrs({{"keepdims", int64_t{3}}})),
              HasSubstr("(argmax): attribute 'keepdims' must be 0 or 1, got "
                        "3"));
  EXPECT_THAT(RunOpError("argmax", {x}, MakeAttrs({{"select_last_index", int64_t{-1}}})),
              HasSubstr("(argmax): attribute 'select_last_index' must be 0 or "
                        "1, got -1"));
  EXPECT_THAT(RunOpError("argmax", {Tensor(DType::kBool, {2})}),
              HasSubstr("(argmax): input 0 has dtype bool"));
  EXPECT_THAT(RunOpError("argmax", {Tensor(DType::kF32, {})}),
              HasSubstr("(argmax): attribute 'axis': axis 0 is out of range "
                        "for rank 0"));
}

// u64 values above INT64_MAX order as unsigned; u8 sums wrap at the width.
TEST(ReductionTest, UnsignedIntegers) {
  const int64_t top = std::numeric_limits<int64_t>::min();  // 2^63
  Tensor x = MakeIntTensor(DType::kU64, {3}, {5, top, 7});
  absl::StatusOr<Tensor> y = RunOp("reduce_max", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(top));
  y = RunOp("reduce_min", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(5));
  y = RunOp("argmax", {x}, MakeAttrs({{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1));
  y = RunOp("reduce_sum", {MakeIntTensor(DType::kU8, {3}, {200, 100, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(45));
}

}  // namespace
}  // namespace loom
