#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

// By hand: the angles of the 30-60-90 and 45-45-90 triangles, and the
// logarithms the hyperbolic inverses reduce to.
TEST(InverseTrigTest, ReferenceValuesByHand) {
  struct Case {
    std::string op;
    std::vector<double> x, y;
  };
  const double s3 = std::sqrt(3.0);
  const Case cases[] = {
      {"atan",
       {0, 1, -1, s3, 1 / s3, INFINITY, -INFINITY},
       {0, kPi / 4, -kPi / 4, kPi / 3, kPi / 6, kPi / 2, -kPi / 2}},
      {"asin",
       {0, 0.5, -0.5, 1, -1, std::sqrt(0.5)},
       {0, kPi / 6, -kPi / 6, kPi / 2, -kPi / 2, kPi / 4}},
      {"acos", {1, 0.5, 0, -0.5, -1}, {0, kPi / 3, kPi / 2, 2 * kPi / 3, kPi}},
      {"asinh", {0, 0.75, -0.75, 4.0 / 3}, {0, std::log(2.0), -std::log(2.0), std::log(3.0)}},
      {"acosh", {1, 1.25, 5.0 / 3}, {0, std::log(2.0), std::log(3.0)}},
      {"atanh",
       {0, 0.5, -0.5, 0.8, 1, -1},
       {0, std::log(3.0) / 2, -std::log(3.0) / 2, std::log(9.0) / 2, INFINITY, -INFINITY}},
  };
  for (const Case& c : cases) {
    for (DType dtype : {DType::kF64, DType::kF32}) {
      const int64_t n = static_cast<int64_t>(c.x.size());
      absl::StatusOr<Tensor> y = RunOp(c.op, {MakeTensor(dtype, {n}, c.x)});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y->dtype(), dtype);
      const double tolerance = dtype == DType::kF64 ? 1e-15 : 1e-6;
      for (int64_t i = 0; i < n; ++i) {
        if (std::isinf(c.y[i])) {
          EXPECT_EQ(y->GetDouble(i), c.y[i]) << c.op << "(" << c.x[i] << ")";
        } else {
          EXPECT_NEAR(y->GetDouble(i), c.y[i], tolerance) << c.op << "(" << c.x[i] << ")";
        }
      }
    }
  }
}

TEST(InverseTrigTest, OutsideTheDomainIsNan) {
  const std::pair<std::string, double> cases[] = {
      {"asin", 1.5},  {"asin", -2}, {"acos", 1.01},  {"acos", -3},
      {"acosh", 0.5}, {"atanh", 2}, {"atanh", -1.5},
  };
  for (const auto& [op, x] : cases) {
    absl::StatusOr<Tensor> y = RunOp(op, {MakeTensor(DType::kF32, {1}, {x})});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(std::isnan(y->GetDouble(0))) << op << "(" << x << ")";
  }
}

TEST(InverseTrigTest, IntegersAreRefused) {
  for (const char* op : {"atan", "asin", "acos", "asinh", "acosh", "atanh"}) {
    EXPECT_THAT(RunOpError(op, {MakeIntTensor(DType::kI64, {2}, {0, 1})}),
                HasSubstr("node 'test_node'"))
        << op;
    EXPECT_THAT(RunOpError(op, {MakeIntTensor(DType::kI32, {2}, {0, 1})}), HasSubstr("i32")) << op;
  }
}

}  // namespace
}  // namespace loom
