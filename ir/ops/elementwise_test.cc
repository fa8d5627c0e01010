#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsNan;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

TEST(BinaryTest, AddBroadcastsTrailingDims) {
  Tensor a = Iota(DType::kF32, {2, 3});
  Tensor b = MakeTensor(DType::kF32, {3}, {10, 20, 30});
  absl::StatusOr<Tensor> y = RunOp("add", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kF32, {2, 3}}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(10, 21, 32, 13, 24, 35));
}

TEST(BinaryTest, BroadcastsBothWaysAndAgainstScalars) {
  Tensor col = MakeTensor(DType::kF64, {2, 1}, {1, 2});
  Tensor row = MakeTensor(DType::kF64, {1, 3}, {10, 20, 30});
  absl::StatusOr<Tensor> y = RunOp("mul", {col, row});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(10, 20, 30, 20, 40, 60));

  Tensor scalar = MakeTensor(DType::kF64, {}, {5});
  y = RunOp("sub", {scalar, col});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 1}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(4, 3));
}

TEST(BinaryTest, BroadcastMatchesExplicitLoopsOnOddRank3Shapes) {
  Tensor a = Iota(DType::kF32, {3, 1, 5}, 0.5, 1);
  Tensor b = Iota(DType::kF32, {4, 1}, -2, 3);
  absl::StatusOr<Tensor> y = RunOp("sub", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{3, 4, 5}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 5; ++k) {
        EXPECT_EQ(y->GetDouble((i * 4 + j) * 5 + k), a.GetDouble(i * 5 + k) - b.GetDouble(j));
      }
    }
  }
}

TEST(BinaryTest, EmptyDimensionsBroadcast) {
  absl::StatusOr<Tensor> y =
      RunOp("add", {Tensor(DType::kF32, {0, 3}), Tensor(DType::kF32, {1, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 3}));
}

TEST(BinaryTest, IntegerDivisionTruncatesTowardZero) {
  Tensor a = MakeIntTensor(DType::kI32, {4}, {7, -7, 7, -7});
  Tensor b = MakeIntTensor(DType::kI32, {4}, {2, 2, -2, -2});
  absl::StatusOr<Tensor> y = RunOp("div", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(3, -3, -3, 3));
}

TEST(BinaryTest, IntegerDivisionByZeroIsAnErrorNamingTheNode) {
  Tensor a = MakeIntTensor(DType::kI64, {2}, {1, 2});
  Tensor b = MakeIntTensor(DType::kI64, {2}, {1, 0});
  EXPECT_THAT(RunOpError("div", {a, b}),
              HasSubstr("INVALID_ARGUMENT: node 'test_node' (div): integer "
                        "division by zero"));
  // Float division by zero follows IEEE.
  absl::StatusOr<Tensor> y =
      RunOp("div", {MakeTensor(DType::kF32, {2}, {1, -1}), MakeTensor(DType::kF32, {2}, {0, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(INFINITY, -INFINITY));
}

TEST(BinaryTest, IntegerArithmeticIsExactAndWraps) {
  Tensor big = MakeIntTensor(DType::kI64, {3}, {kI64Max, kI64Min, (1LL << 53) + 1});
  Tensor one = MakeIntTensor(DType::kI64, {3}, {1, -1, 2});
  absl::StatusOr<Tensor> sum = RunOp("add", {big, one});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT(ToInts(*sum), ElementsAre(kI64Min, kI64Max, (1LL << 53) + 3));
  absl::StatusOr<Tensor> quotient = RunOp("div", {big, one});
  ASSERT_TRUE(quotient.ok()) << quotient.status();
  EXPECT_THAT(ToInts(*quotient), ElementsAre(kI64Max, kI64Min, (1LL << 52)));

  absl::StatusOr<Tensor> wrapped = RunOp("mul", {MakeIntTensor(DType::kI32, {2}, {kI32Max, 65536}),
                                                 MakeIntTensor(DType::kI32, {2}, {2, 65536})});
  ASSERT_TRUE(wrapped.ok()) << wrapped.status();
  EXPECT_THAT(ToInts(*wrapped), ElementsAre(-2, 0));
}

TEST(BinaryTest, IntegerPower) {
  Tensor base = MakeIntTensor(DType::kI64, {7}, {2, 3, 2, 1, -1, -1, 0});
  Tensor exponent = MakeIntTensor(DType::kI64, {7}, {10, 0, -1, -5, -3, -4, 0});
  absl::StatusOr<Tensor> y = RunOp("pow", {base, exponent});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1024, 1, 0, 1, -1, 1, 1));
}

TEST(BinaryTest, FloatPowerMaximumMinimum) {
  Tensor a = MakeTensor(DType::kF64, {4}, {2, 9, -1, NAN});
  Tensor b = MakeTensor(DType::kF64, {4}, {0.5, 0.5, 3, 1});
  absl::StatusOr<Tensor> y = RunOp("pow", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(std::sqrt(2.0), 3, -1, IsNan()));
  y = RunOp("maximum", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(2, 9, 3, IsNan()));
  y = RunOp("minimum", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0.5, 0.5, -1, IsNan()));
  y = RunOp("maximum",
            {MakeIntTensor(DType::kI32, {2}, {-3, 4}), MakeIntTensor(DType::kI32, {1}, {0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 4));
}

TEST(BinaryTest, MixedDTypesAreRejectedNamingBothTypes) {
  EXPECT_THAT(RunOpError("add", {Tensor(DType::kF32, {2}), Tensor(DType::kF64, {2})}),
              HasSubstr("node 'test_node' (add): inputs 0 and 1 have different "
                        "dtypes: f32[2] and f64[2]"));
}

TEST(BinaryTest, BoolArithmeticIsRejected) {
  EXPECT_THAT(RunOpError("mul", {Tensor(DType::kBool, {2}), Tensor(DType::kBool, {2})}),
              HasSubstr("node 'test_node' (mul): input 0 has dtype bool"));
}

TEST(BinaryTest, IncompatibleShapesAreRejected) {
  EXPECT_THAT(RunOpError("add", {Tensor(DType::kF32, {2, 3}), Tensor(DType::kF32, {2})}),
              HasSubstr("node 'test_node' (add): cannot broadcast shapes "
                        "[2,3] and [2]"));
}

TEST(BinaryTest, ArityErrorSaysExpectedAndGiven) {
  EXPECT_THAT(RunOpError("add", {Tensor(DType::kF32, {2})}),
              HasSubstr("node 'test_node' (add): expected 2 inputs, got 1"));
}

TEST(UnaryTest, NumericOpsOnIntsAndFloats) {
  Tensor ints = MakeIntTensor(DType::kI32, {4}, {-3, 0, 5, kI32Min});
  absl::StatusOr<Tensor> y = RunOp("neg", {ints});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(3, 0, -5, kI32Min));
  y = RunOp("abs", {ints});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(3, 0, 5, kI32Min));
  y = RunOp("relu", {ints});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 0, 5, 0));

  Tensor floats = MakeTensor(DType::kF32, {2, 2}, {-1.5, 0, 2.25, NAN});
  y = RunOp("relu", {floats});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0, 2.25, IsNan()));
  y = RunOp("abs", {floats});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1.5, 0, 2.25, IsNan()));
}

TEST(UnaryTest, FloatOpsMatchTheMathLibrary) {
  const std::vector<double> x = {0.25, 1, 2.5, 9};
  struct Case {
    const char* op;
    double (*expected)(double);
  };
  const Case cases[] = {
      {"exp", [](double v) { return std::exp(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"rsqrt", [](double v) { return 1 / std::sqrt(v); }},
      {"reciprocal", [](double v) { return 1 / v; }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
  };
  for (const Case& c : cases) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      absl::StatusOr<Tensor> y = RunOp(c.op, {MakeTensor(dtype, {4}, x)});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y->dtype(), dtype);
      // Computed in double, then rounded once to the output dtype.
      Tensor expected(dtype, {4});
      for (int i = 0; i < 4; ++i) expected.SetDouble(i, c.expected(x[i]));
      EXPECT_EQ(ToDoubles(*y), ToDoubles(expected)) << c.op << " " << DTypeName(dtype);
    }
  }
}

TEST(UnaryTest, SigmoidSaturatesWithoutNan) {
  absl::StatusOr<Tensor> y = RunOp("sigmoid", {MakeTensor(DType::kF32, {3}, {-1000, 0, 1000})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0.5, 1));
}

TEST(UnaryTest, FloatOnlyOpsRejectIntsNamingTheNode) {
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid"}) {
    EXPECT_THAT(RunOpError(op, {Tensor(DType::kI32, {2})}),
                HasSubstr(absl::StrCat("node 'test_node' (", op,
                                       "): input 0 has dtype i32, expected a "
                                       "float dtype")));
  }
  EXPECT_THAT(RunOpError("neg", {Tensor(DType::kBool, {2})}),
              HasSubstr("(neg): input 0 has dtype bool"));
}

TEST(ComparisonTest, BroadcastAndProduceBool) {
  Tensor a = Iota(DType::kI32, {2, 3});
  Tensor b = MakeIntTensor(DType::kI32, {3}, {1, 4, 2});
  const std::pair<const char*, std::vector<int64_t>> cases[] = {
      {"equal", {0, 0, 1, 0, 1, 0}},   {"not_equal", {1, 1, 0, 1, 0, 1}},
      {"less", {1, 1, 0, 0, 0, 0}},    {"less_equal", {1, 1, 1, 0, 1, 0}},
      {"greater", {0, 0, 0, 1, 0, 1}}, {"greater_equal", {0, 0, 1, 1, 1, 1}},
  };
  for (const auto& [op, expected] : cases) {
    absl::StatusOr<Tensor> y = RunOp(op, {a, b});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->type(), (TensorType{DType::kBool, {2, 3}}));
    EXPECT_THAT(ToInts(*y), ElementsAreArray(expected)) << op;
  }
}

TEST(ComparisonTest, LargeInt64sCompareExactly) {
  Tensor a = MakeIntTensor(DType::kI64, {1}, {(1LL << 53) + 1});
  Tensor b = MakeIntTensor(DType::kI64, {1}, {1LL << 53});
  absl::StatusOr<Tensor> y = RunOp("greater", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1));
}

TEST(ComparisonTest, NanComparesUnequal) {
  Tensor a = MakeTensor(DType::kF32, {2}, {NAN, 1});
  absl::StatusOr<Tensor> y = RunOp("equal", {a, a});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1));
}

TEST(ComparisonTest, BoolsOnlyForEquality) {
  Tensor a = MakeIntTensor(DType::kBool, {2}, {0, 1});
  Tensor b = MakeIntTensor(DType::kBool, {1}, {1});
  absl::StatusOr<Tensor> y = RunOp("not_equal", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 0));
  EXPECT_THAT(RunOpError("less", {a, b}),
              HasSubstr("node 'test_node' (less): input 0 has dtype bool"));
  EXPECT_THAT(RunOpError("equal", {a, Tensor(DType::kI32, {2})}),
              HasSubstr("(equal): inputs 0 and 1 have different dtypes"));
}

TEST(LogicalNotTest, NegatesBoolsOnly) {
  absl::StatusOr<Tensor> y = RunOp("logical_not", {MakeIntTensor(DType::kBool, {3}, {0, 1, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 0, 1));
  EXPECT_THAT(RunOpError("logical_not", {Tensor(DType::kF32, {3})}),
              HasSubstr("(logical_not): input 0 has dtype f32, expected bool"));
}

TEST(WhereTest, ThreeWayBroadcast) {
  Tensor cond = MakeIntTensor(DType::kBool, {2, 1}, {1, 0});
  Tensor a = MakeIntTensor(DType::kI64, {3}, {1, 2, 3});
  Tensor b = MakeIntTensor(DType::kI64, {}, {-1});
  absl::StatusOr<Tensor> y = RunOp("where", {cond, a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kI64, {2, 3}}));
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 2, 3, -1, -1, -1));
}

TEST(WhereTest, RejectsBadDTypes) {
  EXPECT_THAT(RunOpError("where", {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {2}),
                                   Tensor(DType::kF32, {2})}),
              HasSubstr("(where): input 0 has dtype f32, expected bool"));
  EXPECT_THAT(RunOpError("where", {Tensor(DType::kBool, {2}), Tensor(DType::kF32, {2}),
                                   Tensor(DType::kI32, {2})}),
              HasSubstr("(where): inputs 1 and 2 have different dtypes: f32[2] "
                        "and i32[2]"));
}

TEST(CastTest, FloatToIntTruncatesSaturatesAndZeroesNan) {
  Tensor x = MakeTensor(DType::kF64, {6}, {-1.7, 2.9, NAN, 1e10, -1e10, -0.5});
  absl::StatusOr<Tensor> y = RunOp("cast", {x}, MakeAttrs({{"to", std::string("i32")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kI32);
  EXPECT_THAT(ToInts(*y), ElementsAre(-1, 2, 0, kI32Max, kI32Min, 0));
  y = RunOp("cast", {MakeTensor(DType::kF32, {2}, {1e30, -1e30})},
            MakeAttrs({{"to", std::string("i64")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(kI64Max, kI64Min));
}

TEST(CastTest, ToAndFromBool) {
  Tensor x = MakeTensor(DType::kF32, {4}, {0, -0.0, 0.1, NAN});
  absl::StatusOr<Tensor> y = RunOp("cast", {x}, MakeAttrs({{"to", std::string("bool")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 0, 1, 1));
  y = RunOp("cast", {*y}, MakeAttrs({{"to", std::string("f64")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0, 1, 1));
}

TEST(CastTest, IntConversionsWrapAndRoundOnce) {
  Tensor x = MakeIntTensor(DType::kI64, {2}, {(1LL << 32) + 5, (1LL << 60) + 1});
  absl::StatusOr<Tensor> y = RunOp("cast", {x}, MakeAttrs({{"to", std::string("i32")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(5, 1));
  // Through double this would round twice (to 2^54 + 2^30, then a tie to
  // 2^54); rounded once it is 2^54 + 2^31.
  const int64_t value = (1LL << 54) + (1LL << 30) + 1;
  y = RunOp("cast", {MakeIntTensor(DType::kI64, {1}, {value})},
            MakeAttrs({{"to", std::string("f32")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->data_as<float>()[0], static_cast<float>(value));
  EXPECT_EQ(y->GetDouble(0), std::ldexp(1.0, 54) + std::ldexp(1.0, 31));
}

TEST(CastTest, AttributeErrors) {
  Tensor x(DType::kF32, {2});
  EXPECT_THAT(RunOpError("cast", {x}),
              HasSubstr("node 'test_node' (cast): missing required attribute "
                        "'to'"));
  EXPECT_THAT(RunOpError("cast", {x}, MakeAttrs({{"to", std::string("f8")}})),
              HasSubstr("node 'test_node' (cast): attribute 'to': unknown "
                        "dtype 'f8'"));
  EXPECT_THAT(RunOpError("cast", {x}, MakeAttrs({{"to", int64_t{1}}})),
              HasSubstr("(cast): attribute 'to' must be string, got int"));
}

TEST(PrimitiveTest, FloatUnaryOpsMatchTheMathLibrary) {
  struct Case {
    const char* op;
    double (*fn)(double);
  };
  const Case cases[] = {{"erf", std::erf},
                        {"sin", std::sin},
                        {"cos", std::cos},
                        {"floor", std::floor},
                        {"ceil", std::ceil}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    Tensor x = Iota(dtype, {3, 1, 7}, -5.25, 0.5);
    for (const Case& c : cases) {
      absl::StatusOr<Tensor> y = RunOp(c.op, {x});
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ(y->type(), x.type());
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        Tensor expected(dtype, {});
        expected.SetDouble(0, c.fn(x.GetDouble(i)));
        EXPECT_EQ(y->GetDouble(i), expected.GetDouble(0)) << c.op << " " << i;
      }
    }
  }
}

TEST(PrimitiveTest, RoundIsHalfToEvenAndKeepsTheSign) {
  Tensor x = MakeTensor(DType::kF64, {12},
                        {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6, 0.49999999999999994,
                         4503599627370497.0, INFINITY, NAN});
  absl::StatusOr<Tensor> y = RunOp("round", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y),
              ElementsAre(-2, -2, 0, 0, 2, 2, 2, -3, 0, 4503599627370497.0, INFINITY, IsNan()));
  EXPECT_TRUE(std::signbit(y->GetDouble(2)));   // -0.5 rounds to -0
  EXPECT_FALSE(std::signbit(y->GetDouble(3)));  // 0.5 rounds to +0
  y = RunOp("round", {MakeTensor(DType::kF32, {3}, {-0.7f, 3.5f, 1e7f + 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-1, 4, 1e7 + 1));
}

TEST(PrimitiveTest, SignOnFloatsAndInts) {
  absl::StatusOr<Tensor> y =
      RunOp("sign", {MakeTensor(DType::kF32, {5}, {-3.5, 0, 2, -INFINITY, NAN})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-1, 0, 1, -1, IsNan()));
  y = RunOp("sign", {MakeIntTensor(DType::kI64, {4}, {kI64Min, -1, 0, 9})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kI64);
  EXPECT_THAT(ToInts(*y), ElementsAre(-1, -1, 0, 1));
}

TEST(PrimitiveTest, FloatOnlyPrimitivesRejectIntsNamingTheNode) {
  for (const char* op : {"erf", "sin", "cos", "floor", "ceil", "round"}) {
    EXPECT_THAT(RunOpError(op, {Tensor(DType::kI32, {2})}),
                HasSubstr(absl::StrCat("node 'test_node' (", op,
                                       "): input 0 has dtype i32, expected a "
                                       "float dtype")));
  }
  EXPECT_THAT(RunOpError("sign", {Tensor(DType::kBool, {2})}),
              HasSubstr("(sign): input 0 has dtype bool"));
}

TEST(ModTest, FloorModTakesTheDivisorsSignFmodTheDividends) {
  Tensor a = MakeIntTensor(DType::kI32, {4}, {7, -7, 7, -7});
  Tensor b = MakeIntTensor(DType::kI32, {4}, {3, 3, -3, -3});
  absl::StatusOr<Tensor> y = RunOp("mod", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 2, -2, -1));
  y = RunOp("mod", {a, b}, MakeAttrs({{"fmod", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1, -1, 1, -1));

  Tensor fa = MakeTensor(DType::kF64, {5}, {5.5, -5.5, 5.5, -5.5, 4});
  Tensor fb = MakeTensor(DType::kF64, {5}, {2, 2, -2, -2, 2});
  y = RunOp("mod", {fa, fb});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1.5, 0.5, -0.5, -1.5, 0));
  y = RunOp("mod", {fa, fb}, MakeAttrs({{"fmod", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1.5, -1.5, 1.5, -1.5, 0));
  // A float divisor of 0 gives NaN, not an error.
  y = RunOp("mod", {MakeTensor(DType::kF32, {1}, {1}), MakeTensor(DType::kF32, {1}, {0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan()));
}

TEST(ModTest, BroadcastsAndHandlesExtremeIntegers) {
  Tensor a = Iota(DType::kI64, {3, 1}, -4, 4);  // -4, 0, 4
  Tensor b = MakeIntTensor(DType::kI64, {5}, {-3, -1, 1, 3, 5});
  absl::StatusOr<Tensor> y = RunOp("mod", {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{3, 5}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      const int64_t x = a.GetInt(i), d = b.GetInt(j);
      const int64_t floor_mod = ((x % d) + d) % d;  // Python's x % d
      EXPECT_EQ(y->GetInt(i * 5 + j), floor_mod) << x << " % " << d;
    }
  }
  y = RunOp("mod", {MakeIntTensor(DType::kI64, {2}, {kI64Min, kI64Max}),
                    MakeIntTensor(DType::kI64, {2}, {-1, kI64Min})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, -1));
}

TEST(ModTest, Errors) {
  Tensor a = MakeIntTensor(DType::kI32, {2}, {1, 2});
  Tensor zero = MakeIntTensor(DType::kI32, {2}, {1, 0});
  EXPECT_THAT(RunOpError("mod", {a, zero}),
              HasSubstr("node 'test_node' (mod): integer division by zero "
                        "(divisor element 1)"));
  EXPECT_THAT(RunOpError("mod", {a, a}, MakeAttrs({{"fmod", int64_t{2}}})),
              HasSubstr("node 'test_node' (mod): attribute 'fmod' must be 0 "
                        "or 1, got 2"));
  EXPECT_THAT(RunOpError("mod", {a, Tensor(DType::kI64, {2})}),
              HasSubstr("(mod): inputs 0 and 1 have different dtypes"));
  EXPECT_THAT(RunOpError("mod", {Tensor(DType::kBool, {2}), Tensor(DType::kBool, {2})}),
              HasSubstr("(mod): input 0 has dtype bool"));
}

TEST(LogicalTest, TruthTablesWithBroadcasting) {
  Tensor a = MakeIntTensor(DType::kBool, {2, 1}, {0, 1});
  Tensor b = MakeIntTensor(DType::kBool, {3}, {0, 1, 1});
  const std::pair<const char*, std::vector<int64_t>> cases[] = {
      {"logical_and", {0, 0, 0, 0, 1, 1}},
      {"logical_or", {0, 1, 1, 1, 1, 1}},
      {"logical_xor", {0, 1, 1, 1, 0, 0}},
  };
  for (const auto& [op, expected] : cases) {
    absl::StatusOr<Tensor> y = RunOp(op, {a, b});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->type(), (TensorType{DType::kBool, {2, 3}})) << op;
    EXPECT_THAT(ToInts(*y), ElementsAreArray(expected)) << op;
  }
  EXPECT_THAT(RunOpError("logical_and", {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {2})}),
              HasSubstr("node 'test_node' (logical_and): input 0 has dtype "
                        "f32, expected bool"));
  EXPECT_THAT(RunOpError("logical_or", {b, Tensor(DType::kBool, {4})}),
              HasSubstr("(logical_or): cannot broadcast shapes [3] and [4]"));
}

// --- the narrow and unsigned integer types -----------------------------------

constexpr int64_t kU64Max = -1;  // the bits of 2^64 - 1

TEST(SmallIntegerTest, ArithmeticWrapsAtTheWidth) {
  Tensor a = MakeIntTensor(DType::kU8, {3}, {250, 3, 16});
  Tensor b = MakeIntTensor(DType::kU8, {3}, {10, 5, 16});
  EXPECT_THAT(ToInts(*RunOp("add", {a, b})), ElementsAre(4, 8, 32));
  EXPECT_THAT(ToInts(*RunOp("sub", {a, b})), ElementsAre(240, 254, 0));
  EXPECT_THAT(ToInts(*RunOp("mul", {a, b})), ElementsAre(196, 15, 0));
  Tensor c = MakeIntTensor(DType::kI8, {3}, {127, -128, -7});
  Tensor d = MakeIntTensor(DType::kI8, {3}, {1, -1, 2});
  EXPECT_THAT(ToInts(*RunOp("add", {c, d})), ElementsAre(-128, 127, -5));
  EXPECT_THAT(ToInts(*RunOp("div", {c, d})), ElementsAre(127, -128, -3));
  Tensor e = MakeIntTensor(DType::kU16, {2}, {65535, 300});
  EXPECT_THAT(ToInts(*RunOp("mul", {e, e})), ElementsAre(1, 24464));
  Tensor f = MakeIntTensor(DType::kI16, {2}, {-32768, 1000});
  EXPECT_THAT(ToInts(*RunOp("neg", {f})), ElementsAre(-32768, -1000));
}

TEST(SmallIntegerTest, U64AboveInt64MaxIsUnsigned) {
  const int64_t big = kI64Min + 6;  // 2^63 + 6
  Tensor a = MakeIntTensor(DType::kU64, {4}, {big, kU64Max, 7, 9});
  Tensor b = MakeIntTensor(DType::kU64, {4}, {2, 1, kU64Max, 4});
  EXPECT_THAT(ToInts(*RunOp("div", {a, b})), ElementsAre(int64_t{1} << 62 | 3, kU64Max, 0, 2));
  EXPECT_THAT(ToInts(*RunOp("mod", {a, b})), ElementsAre(0, 0, 7, 1));
  EXPECT_THAT(ToInts(*RunOp("mod", {a, b}, MakeAttrs({{"fmod", int64_t{1}}}))),
              ElementsAre(0, 0, 7, 1));
  EXPECT_THAT(ToInts(*RunOp("maximum", {a, b})), ElementsAre(big, kU64Max, kU64Max, 9));
  EXPECT_THAT(ToInts(*RunOp("minimum", {a, b})), ElementsAre(2, 1, 7, 4));
  EXPECT_THAT(ToInts(*RunOp("greater", {a, b})), ElementsAre(1, 1, 0, 1));
  EXPECT_THAT(ToInts(*RunOp("less_equal", {a, b})), ElementsAre(0, 0, 1, 0));
  EXPECT_THAT(ToInts(*RunOp("abs", {a})), ElementsAre(big, kU64Max, 7, 9));
  EXPECT_THAT(ToInts(*RunOp("sign", {a})), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(ToInts(*RunOp("relu", {a})), ElementsAre(big, kU64Max, 7, 9));
  EXPECT_THAT(ToDoubles(*RunOp("cast", {a}, MakeAttrs({{"to", std::string("f64")}}))),
              ElementsAre(0x1p63, 0x1p64, 7, 9));  // rounded once
  // 3^(2^63 + 6) mod 2^64, by repeated squaring: 3^(2^63) = 1 mod 2^64.
  Tensor three = MakeIntTensor(DType::kU64, {1}, {3});
  Tensor exponent = MakeIntTensor(DType::kU64, {1}, {big});
  EXPECT_THAT(ToInts(*RunOp("pow", {three, exponent})), ElementsAre(729));
}

TEST(SmallIntegerTest, UnsignedModAndDivisionByZero) {
  Tensor a = MakeIntTensor(DType::kU32, {2}, {4294967295, 10});
  Tensor b = MakeIntTensor(DType::kU32, {2}, {10, 3});
  EXPECT_THAT(ToInts(*RunOp("mod", {a, b})), ElementsAre(5, 1));
  EXPECT_THAT(ToInts(*RunOp("div", {a, b})), ElementsAre(429496729, 3));
  Tensor zero = MakeIntTensor(DType::kU32, {2}, {1, 0});
  EXPECT_THAT(RunOpError("div", {a, zero}), HasSubstr("integer division by zero"));
}

TEST(SmallIntegerTest, CastsWrapBetweenIntegersAndSaturateFromFloats) {
  Tensor x = MakeIntTensor(DType::kI32, {4}, {-1, 256, 300, -129});
  EXPECT_THAT(ToInts(*RunOp("cast", {x}, MakeAttrs({{"to", std::string("u8")}}))),
              ElementsAre(255, 0, 44, 127));
  EXPECT_THAT(ToInts(*RunOp("cast", {x}, MakeAttrs({{"to", std::string("i8")}}))),
              ElementsAre(-1, 0, 44, 127));
  EXPECT_THAT(ToInts(*RunOp("cast", {x}, MakeAttrs({{"to", std::string("u64")}}))),
              ElementsAre(kU64Max, 256, 300, -129));
  Tensor f = MakeTensor(DType::kF32, {6}, {-0.9, -1, 255.9, 256, NAN, 1e30});
  EXPECT_THAT(ToInts(*RunOp("cast", {f}, MakeAttrs({{"to", std::string("u8")}}))),
              ElementsAre(0, 0, 255, 255, 0, 255));
  EXPECT_THAT(ToInts(*RunOp("cast", {f}, MakeAttrs({{"to", std::string("i16")}}))),
              ElementsAre(0, -1, 255, 256, 0, 32767));
  EXPECT_THAT(ToInts(*RunOp("cast", {f}, MakeAttrs({{"to", std::string("u64")}}))),
              ElementsAre(0, 0, 255, 256, 0, kU64Max));
  Tensor g = MakeTensor(DType::kF64, {2}, {-129.5, -128.5});
  EXPECT_THAT(ToInts(*RunOp("cast", {g}, MakeAttrs({{"to", std::string("i8")}}))),
              ElementsAre(-128, -128));
}

TEST(BitShiftTest, ShiftsUnsignedIntegersAndGivesZeroPastTheWidth) {
  Tensor x = MakeIntTensor(DType::kU8, {4}, {16, 255, 1, 3});
  Tensor by = MakeIntTensor(DType::kU8, {4}, {1, 4, 7, 8});
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {x, by}, MakeAttrs({{"direction", std::string("left")}}))),
              ElementsAre(32, 240, 128, 0));
  EXPECT_THAT(
      ToInts(*RunOp("bit_shift", {x, by}, MakeAttrs({{"direction", std::string("right")}}))),
      ElementsAre(8, 15, 0, 0));
  Tensor y = MakeIntTensor(DType::kU64, {2}, {kU64Max, 1});
  Tensor by64 = MakeIntTensor(DType::kU64, {2}, {63, 64});
  EXPECT_THAT(
      ToInts(*RunOp("bit_shift", {y, by64}, MakeAttrs({{"direction", std::string("right")}}))),
      ElementsAre(1, 0));
}

// ONNX's BitShift 28: arithmetic right shifts, wrapping left shifts, and
// for a shift amount that is negative or the width or more, -1 (a right
// shift of a negative number) or 0.
TEST(BitShiftTest, ShiftsSignedIntegersAsOnnx28) {
  const Attrs left = MakeAttrs({{"direction", std::string("left")}});
  const Attrs right = MakeAttrs({{"direction", std::string("right")}});
  Tensor x = MakeIntTensor(DType::kI8, {8}, {-128, -7, 100, -1, 64, -3, 5, -5});
  Tensor by = MakeIntTensor(DType::kI8, {8}, {3, 1, 2, 7, 1, -1, 8, 127});
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {x, by}, left)),
              ElementsAre(0, -14, -112, -128, -128, 0, 0, 0));
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {x, by}, right)),
              ElementsAre(-16, -4, 25, -1, 32, -1, 0, -1));
  Tensor y = MakeIntTensor(DType::kI64, {4}, {kI64Min, -1, kI64Max, 3});
  Tensor by64 = MakeIntTensor(DType::kI64, {4}, {63, 64, 63, kI64Min});
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {y, by64}, left)), ElementsAre(0, 0, kI64Min, 0));
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {y, by64}, right)), ElementsAre(-1, -1, 0, 0));
  // Broadcast: one shift amount for a column.
  Tensor z = MakeIntTensor(DType::kI32, {2, 2}, {kI32Min, kI32Max, -2, 2});
  Tensor by32 = MakeIntTensor(DType::kI32, {2, 1}, {31, 32});
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {z, by32}, right)), ElementsAre(-1, 0, -1, 0));
  EXPECT_THAT(ToInts(*RunOp("bit_shift", {z, by32}, left)), ElementsAre(0, kI32Min, 0, 0));
}

TEST(BitShiftTest, RefusesNonIntegerTypesAndBadDirections) {
  Tensor x = MakeTensor(DType::kF32, {1}, {1});
  EXPECT_THAT(RunOpError("bit_shift", {x, x}, MakeAttrs({{"direction", std::string("left")}})),
              HasSubstr("input 0 has dtype f32, expected an integer dtype"));
  Tensor u = MakeIntTensor(DType::kU16, {1}, {1});
  EXPECT_THAT(RunOpError("bit_shift", {u, u}, MakeAttrs({{"direction", std::string("up")}})),
              HasSubstr("attribute 'direction' must be \"left\" or \"right\""));
  Tensor v = MakeIntTensor(DType::kU32, {1}, {1});
  EXPECT_THAT(RunOpError("bit_shift", {u, v}, MakeAttrs({{"direction", std::string("left")}})),
              HasSubstr("u32"));
}

TEST(BitwiseTest, SignedAndUnsignedWithBroadcasting) {
  Tensor a = MakeIntTensor(DType::kI16, {2, 1}, {0x0ff0, -32768});
  Tensor b = MakeIntTensor(DType::kI16, {3}, {0x00ff, -1, 0x5555});
  const std::pair<const char*, std::vector<int64_t>> cases[] = {
      {"bitwise_and", {0x00f0, 0x0ff0, 0x0550, 0, -32768, 0}},
      {"bitwise_or", {0x0fff, -1, 0x5ff5, -32768 | 0x00ff, -1, -32768 | 0x5555}},
      {"bitwise_xor", {0x0f0f, ~0x0ff0, 0x5aa5, -32768 | 0x00ff, 32767, -32768 | 0x5555}},
  };
  for (const auto& [op, expected] : cases) {
    absl::StatusOr<Tensor> y = RunOp(op, {a, b});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->type(), (TensorType{DType::kI16, {2, 3}})) << op;
    EXPECT_THAT(ToInts(*y), ElementsAreArray(expected)) << op;
  }
  Tensor u = MakeIntTensor(DType::kU8, {3}, {0xf0, 0x0f, 0xff});
  Tensor v = MakeIntTensor(DType::kU8, {}, {0x3c});
  EXPECT_THAT(ToInts(*RunOp("bitwise_and", {u, v})), ElementsAre(0x30, 0x0c, 0x3c));
  EXPECT_THAT(ToInts(*RunOp("bitwise_xor", {u, v})), ElementsAre(0xcc, 0x33, 0xc3));
  EXPECT_THAT(ToInts(*RunOp("bitwise_not", {u})), ElementsAre(0x0f, 0xf0, 0));
  Tensor w = MakeIntTensor(DType::kU64, {2}, {0, kU64Max});
  EXPECT_THAT(ToInts(*RunOp("bitwise_not", {w})), ElementsAre(kU64Max, 0));
  EXPECT_THAT(ToInts(*RunOp("bitwise_not", {MakeIntTensor(DType::kI32, {2}, {kI32Min, 5})})),
              ElementsAre(kI32Max, -6));
}

TEST(BitwiseTest, RefusesNonIntegersAndMixedTypes) {
  Tensor f = MakeTensor(DType::kF32, {1}, {1});
  EXPECT_THAT(RunOpError("bitwise_or", {f, f}),
              HasSubstr("(bitwise_or): input 0 has dtype f32, expected an integer dtype"));
  EXPECT_THAT(RunOpError("bitwise_not", {MakeIntTensor(DType::kBool, {1}, {1})}),
              HasSubstr("(bitwise_not): input 0 has dtype bool, expected an integer dtype"));
  EXPECT_THAT(RunOpError("bitwise_and", {MakeIntTensor(DType::kI32, {1}, {1}),
                                         MakeIntTensor(DType::kU32, {1}, {1})}),
              HasSubstr("inputs 0 and 1 have different dtypes"));
}

TEST(SmallIntegerTest, FloatOnlyOpsRefuseIntegers) {
  Tensor x = MakeIntTensor(DType::kU8, {1}, {1});
  EXPECT_THAT(RunOpError("exp", {x}), HasSubstr("input 0 has dtype u8, expected a float"));
  EXPECT_THAT(RunOpError("sqrt", {MakeIntTensor(DType::kI16, {1}, {1})}),
              HasSubstr("input 0 has dtype i16"));
}

}  // namespace
}  // namespace loom
