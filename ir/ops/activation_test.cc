#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsNan;
using ::testing::Pointwise;

// x from -6 to 6 (with 0 among them) on an odd shape with a size-1 dim.
Tensor Inputs(DType dtype) { return Iota(dtype, {3, 1, 7}, -6, 12.0 / 20); }

// Runs `op` on Inputs(dtype) and compares every element with `expected`,
// rounded to dtype.
void ExpectMatches(const std::string& op, const Attrs& attrs,
                   const std::function<double(double)>& expected) {
  for (DType dtype : {DType::kF64, DType::kF32}) {
    const Tensor x = Inputs(dtype);
    absl::StatusOr<Tensor> y = RunOp(op, {x}, attrs);
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->type(), x.type()) << op;
    const double tolerance = dtype == DType::kF64 ? 1e-14 : 1e-6;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const double v = x.GetDouble(i);
      EXPECT_NEAR(y->GetDouble(i), expected(v), tolerance * (1 + std::fabs(v)))
          << op << "(" << v << ")";
    }
  }
}

TEST(ActivationTest, GeluBothForms) {
  ExpectMatches("gelu", {}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  ExpectMatches("gelu", MakeAttrs({{"approximate", std::string("none")}}),
                [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); });
  ExpectMatches("gelu", MakeAttrs({{"approximate", std::string("tanh")}}), [](double x) {
    const double inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1 + std::tanh(inner));
  });
}

TEST(ActivationTest, SiluSoftplusAndTheHardFunctions) {
  ExpectMatches("silu", {}, [](double x) { return x / (1 + std::exp(-x)); });
  ExpectMatches("softplus", {}, [](double x) { return std::log(1 + std::exp(x)); });
  ExpectMatches("hard_sigmoid", {},
                [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); });
  ExpectMatches("hard_sigmoid", MakeAttrs({{"alpha", 0.5}, {"beta", int64_t{1}}}),
                [](double x) { return std::max(0.0, std::min(1.0, x / 2 + 1)); });
  ExpectMatches("hard_swish", {},
                [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); });
  // By hand: below -3 it is 0, above 3 it is x, in between x (x + 3) / 6.
  absl::StatusOr<Tensor> y = RunOp("hard_swish", {MakeTensor(DType::kF64, {5}, {-4, -3, 0, 1, 4})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-15), {0.0, 0.0, 0.0, 4.0 / 6, 4.0}));
}

TEST(ActivationTest, SoftplusIsStableAtTheExtremes) {
  absl::StatusOr<Tensor> y = RunOp("softplus", {MakeTensor(DType::kF32, {3}, {1000, -1000, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-6), {1000.0, 0.0, std::log(2.0)}));
}

TEST(ActivationTest, ReluFamilyWithDefaultAndGivenAlphas) {
  ExpectMatches("leaky_relu", {}, [](double x) { return x < 0 ? 0.01 * x : x; });
  ExpectMatches("leaky_relu", MakeAttrs({{"alpha", 0.3}}),
                [](double x) { return x < 0 ? 0.3 * x : x; });
  ExpectMatches("elu", {}, [](double x) { return x < 0 ? std::exp(x) - 1 : x; });
  ExpectMatches("elu", MakeAttrs({{"alpha", 2.5}}),
                [](double x) { return x < 0 ? 2.5 * (std::exp(x) - 1) : x; });
  // The spec's defaults: the f32 roundings of SELU's constants.
  const double alpha = 1.67326319217681884765625;
  const double gamma = 1.05070102214813232421875;
  ExpectMatches("selu", {}, [&](double x) {
    return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
  });
  ExpectMatches("selu", MakeAttrs({{"alpha", 2.0}, {"gamma", 3.0}}),
                [](double x) { return x > 0 ? 3 * x : 6 * (std::exp(x) - 1); });
}

TEST(ActivationTest, NanPropagates) {
  for (const char* op :
       {"gelu", "silu", "leaky_relu", "elu", "selu", "softplus", "hard_sigmoid", "hard_swish"}) {
    absl::StatusOr<Tensor> y = RunOp(op, {MakeTensor(DType::kF32, {1}, {NAN})});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_THAT(ToDoubles(*y), ElementsAre(IsNan())) << op;
  }
}

TEST(ClipTest, FloatsWithEitherOrBothBounds) {
  Tensor x = MakeTensor(DType::kF32, {2, 3}, {-5, -0.5, 0, 0.5, 5, NAN});
  absl::StatusOr<Tensor> y = RunOp("clip", {x}, MakeAttrs({{"min", -1.0}, {"max", 1.0}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-1, -0.5, 0, 0.5, 1, IsNan()));
  y = RunOp("clip", {x}, MakeAttrs({{"min", 0.25}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0.25, 0.25, 0.25, 0.5, 5, IsNan()));
  y = RunOp("clip", {x}, MakeAttrs({{"max", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-5, -0.5, 0, 0, 0, IsNan()));
  y = RunOp("clip", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-5, -0.5, 0, 0.5, 5, IsNan()));
  // min > max: max everywhere (ONNX's min(max(x, lo), hi)).
  y = RunOp("clip", {x}, MakeAttrs({{"min", 2.0}, {"max", 1.0}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 1, 1, 1, 1, IsNan()));
}

TEST(ClipTest, IntegersKeepTheIntegersInsideTheBounds) {
  Tensor x = Iota(DType::kI32, {11}, -5);
  absl::StatusOr<Tensor> y = RunOp("clip", {x}, MakeAttrs({{"min", -2.5}, {"max", 3.7}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kI32);
  EXPECT_THAT(ToInts(*y), ElementsAre(-2, -2, -2, -2, -1, 0, 1, 2, 3, 3, 3));
  // Bounds beyond the dtype's range saturate.
  y = RunOp("clip", {x}, MakeAttrs({{"min", 1e10}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->GetInt(0), std::numeric_limits<int32_t>::max());
  const int64_t big = (1LL << 62) + 1;
  y = RunOp("clip", {MakeIntTensor(DType::kI64, {3}, {-big, 7, big})},
            MakeAttrs({{"min", -1e30}, {"max", 1e30}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(-big, 7, big));
}

TEST(ClipTest, NarrowAndUnsignedIntegers) {
  absl::StatusOr<Tensor> y = RunOp("clip", {MakeIntTensor(DType::kI8, {4}, {-128, -5, 5, 127})},
                                   MakeAttrs({{"min", -4.5}, {"max", 1e9}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(-4, -4, 5, 127));
  // u64 compares unsigned: 2^63 is above the lower bound 3.
  const int64_t top = std::numeric_limits<int64_t>::min();
  y = RunOp("clip", {MakeIntTensor(DType::kU64, {3}, {top, 1, 9})},
            MakeAttrs({{"min", 3.0}, {"max", 1e30}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(top, 3, 9));
  y = RunOp("clip", {MakeIntTensor(DType::kU8, {3}, {0, 200, 255})},
            MakeAttrs({{"min", -10.0}, {"max", 199.5}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 199, 199));
}

TEST(PreluTest, SlopeBroadcastsEitherWay) {
  Tensor x = MakeTensor(DType::kF64, {2, 3}, {-1, 2, -3, 4, -5, 6});
  absl::StatusOr<Tensor> y = RunOp("prelu", {x, MakeTensor(DType::kF64, {3}, {0.1, 0.2, 0.3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), Pointwise(DoubleNear(1e-15), {-0.1, 2.0, -0.9, 4.0, -1.0, 6.0}));
  y = RunOp("prelu", {x, MakeTensor(DType::kF64, {2, 1}, {0.5, 2})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-0.5, 2, -1.5, 4, -10, 6));
  // The output takes the broadcast shape.
  y = RunOp("prelu",
            {MakeTensor(DType::kF32, {3}, {-1, 0, 1}), MakeTensor(DType::kF32, {2, 1}, {2, 3})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(-2, 0, 1, -3, 0, 1));
}

TEST(ActivationTest, ErrorsNameTheNode) {
  for (const char* op :
       {"gelu", "silu", "leaky_relu", "elu", "selu", "softplus", "hard_sigmoid", "hard_swish"}) {
    EXPECT_THAT(RunOpError(op, {Tensor(DType::kI32, {2})}),
                HasSubstr(absl::StrCat("node 'test_node' (", op,
                                       "): input 0 has dtype i32, expected a "
                                       "float dtype")));
  }
  Tensor x(DType::kF32, {2});
  EXPECT_THAT(RunOpError("gelu", {x}, MakeAttrs({{"approximate", std::string("erf")}})),
              HasSubstr("node 'test_node' (gelu): attribute 'approximate' must be "
                        "\"none\" or \"tanh\", got \"erf\""));
  EXPECT_THAT(RunOpError("leaky_relu", {x}, MakeAttrs({{"alpha", Ints{1}}})),
              HasSubstr("(leaky_relu): attribute 'alpha' must be float"));
  EXPECT_THAT(RunOpError("clip", {Tensor(DType::kBool, {2})}),
              HasSubstr("node 'test_node' (clip): input 0 has dtype bool"));
  EXPECT_THAT(RunOpError("prelu", {x, Tensor(DType::kF64, {2})}),
              HasSubstr("node 'test_node' (prelu): inputs 0 and 1 have "
                        "different dtypes"));
  EXPECT_THAT(RunOpError("prelu", {x, Tensor(DType::kF32, {3})}),
              HasSubstr("(prelu): cannot broadcast shapes [2] and [3]"));
  EXPECT_THAT(RunOpError("prelu", {Tensor(DType::kI32, {2}), Tensor(DType::kI32, {2})}),
              HasSubstr("(prelu): input 0 has dtype i32"));
}

}  // namespace
}  // namespace loom
