// The interpreter's float64 mode and its error bounds
// (InterpretInFloat64, InterpretWithErrorBounds), with the ops' error
// models (ir/ops/error_bound.h).

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/ops/error_bound.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

const double kUnit = RoundingUnit(DType::kF32);

Tensor Values(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.SetDouble(i, values[i]);
  return tensor;
}

Tensor Filled(Shape shape, double value) {
  Tensor tensor(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.SetDouble(i, value);
  return tensor;
}

class GraphBuilder {
 public:
  ValueId Input(const std::string& name, TensorType type) {
    return *graph_.AddInput(name, std::move(type));
  }
  ValueId Constant(const std::string& name, Tensor data) {
    return *graph_.AddInitializer(name, ValueKind::kConstant, std::move(data));
  }
  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    const std::string name = absl::StrCat(op, graph_.nodes().size());
    return graph_.node(*graph_.AddNode(name, op, inputs, {name}, std::move(attrs))).outputs[0];
  }
  Graph& graph() { return graph_; }

 private:
  Graph graph_;
};

Attrs Axes(std::vector<int64_t> axes) {
  Attrs attrs;
  attrs.Set("axes", std::move(axes));
  return attrs;
}

TEST(Float64InterpreterTest, WidensValuesAndCastsToFloat32) {
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {1}});
  Attrs to_f32;
  to_f32.Set("to", std::string("f32"));
  // A third in float64, rounded to float32 by the cast, unless widened.
  const ValueId third =
      b.Op("cast", {b.Op("div", {x, b.Constant("three", Filled({1}, 3))})}, std::move(to_f32));
  b.graph().AddOutput(third);
  const Tensor one = Filled({1}, 1);
  absl::StatusOr<std::vector<Tensor>> f32 = Interpret(b.graph(), {one});
  absl::StatusOr<std::vector<Tensor>> f64 = InterpretInFloat64(b.graph(), {one});
  ASSERT_TRUE(f32.ok() && f64.ok());
  EXPECT_EQ((*f32)[0].dtype(), DType::kF32);
  EXPECT_EQ((*f64)[0].dtype(), DType::kF64);
  EXPECT_EQ((*f64)[0].GetDouble(0), 1.0 / 3.0);
  EXPECT_NE((*f32)[0].GetDouble(0), 1.0 / 3.0);
  EXPECT_EQ(WidenedToFloat64(b.graph()).value(third).type.dtype, DType::kF64);
}

TEST(ErrorBoundsTest, CancellationGrowsTheBoundPastTheResult) {
  // (x + 1) - 1 for small x: float32 loses x's low bits in x + 1, so the
  // result's error is about ulp(1), far more than ulp(x).
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {3}});
  const ValueId one = b.Constant("one", Filled({}, 1));
  b.graph().AddOutput(b.Op("sub", {b.Op("add", {x, one}), one}));
  const Tensor inputs = Values(DType::kF32, {3}, {1e-3, -2.5e-4, 3e-6});
  absl::StatusOr<BoundedOutputs> bounded = InterpretWithErrorBounds(b.graph(), {inputs});
  absl::StatusOr<std::vector<Tensor>> f32 = Interpret(b.graph(), {inputs});
  ASSERT_TRUE(bounded.ok() && f32.ok()) << bounded.status();
  for (int64_t i = 0; i < 3; ++i) {
    const double truth = bounded->values[0].GetDouble(i);
    const double bound = bounded->bounds[0].GetDouble(i);
    EXPECT_DOUBLE_EQ(truth, inputs.GetDouble(i));
    EXPECT_GE(bound, std::fabs((*f32)[0].GetDouble(i) - truth)) << i;
    EXPECT_GE(bound, 3.9 * kUnit);  // the add's rounding, at magnitude 1 ...
    EXPECT_LE(bound, 12 * kUnit);   // ... and the sub's: a few units of 1
  }
}

TEST(ErrorBoundsTest, AMatrixProductsBoundGrowsWithItsTermsMagnitudes) {
  // Products of k = 100 terms of magnitude 1: each term may carry
  // SumRoundingUnits(100) = 80 units into the sum, from each operand.
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {1, 100}});
  const ValueId y = b.Input("y", {DType::kF32, {100, 1}});
  b.graph().AddOutput(b.Op("matmul", {x, y}));
  std::vector<double> alternating;
  for (int i = 0; i < 100; ++i) alternating.push_back(i % 2 == 0 ? 1 : -1);
  absl::StatusOr<BoundedOutputs> bounded = InterpretWithErrorBounds(
      b.graph(), {Values(DType::kF32, {1, 100}, alternating), Filled({100, 1}, 1)});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_EQ(bounded->values[0].GetDouble(0), 0);  // it cancels exactly
  const double magnitude = 100;                   // the sum of |x| |y|
  EXPECT_NEAR(bounded->bounds[0].GetDouble(0), magnitude * (2 * 80 + 80 * 80 * kUnit) * kUnit,
              1e-12);
  EXPECT_EQ(SumRoundingUnits(16), 16);
  EXPECT_EQ(SumRoundingUnits(1024), 256);
}

TEST(ErrorBoundsTest, InputErrorsAreCarriedThroughEachOp) {
  // exp(x + c): the add's rounding moves exp by exp'(x + c) times it.
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {1}});
  const ValueId sum = b.Op("add", {x, b.Constant("c", Filled({}, 10))});
  b.graph().AddOutput(b.Op("exp", {sum}));
  absl::StatusOr<BoundedOutputs> bounded = InterpretWithErrorBounds(b.graph(), {Filled({1}, 0.5)});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  const double value = std::exp(10.5);
  // 4 units of 10.5 moved through exp, plus exp's own 4 units.
  EXPECT_NEAR(bounded->bounds[0].GetDouble(0), value * 4 * kUnit * 10.5 + 4 * kUnit * value,
              value * 1e-9);
}

TEST(ErrorBoundsTest, AComparisonTheErrorsLeaveOpenHasBoundOne) {
  // a * 3 >= 1 for a = 1/3 in float32: the product may round either way.
  GraphBuilder b;
  const ValueId a = b.Input("a", {DType::kF32, {2}});
  const ValueId product = b.Op("mul", {a, b.Constant("three", Filled({}, 3))});
  b.graph().AddOutput(b.Op("greater_equal", {product, b.Constant("one", Filled({}, 1))}));
  absl::StatusOr<BoundedOutputs> bounded =
      InterpretWithErrorBounds(b.graph(), {Values(DType::kF32, {2}, {1.0 / 3.0, 0.5})});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_EQ(bounded->bounds[0].GetDouble(0), 1);  // near the threshold
  EXPECT_EQ(bounded->bounds[0].GetDouble(1), 0);  // 1.5 >= 1 whatever rounds
}

TEST(ErrorBoundsTest, AnArgmaxBetweenNearTiesIsOpen) {
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {4}});
  const ValueId moved = b.Op("add", {x, b.Constant("c", Filled({}, 0.1))});
  Attrs axis;
  axis.Set("axis", int64_t{0});
  axis.Set("keepdims", int64_t{0});
  b.graph().AddOutput(b.Op("argmax", {moved}, std::move(axis)));
  // 0.5 and 0.5 + 2^-24 are within the add's rounding of each other.
  absl::StatusOr<BoundedOutputs> bounded = InterpretWithErrorBounds(
      b.graph(), {Values(DType::kF32, {4}, {0.5, 0.25, 0.0, 0.5 + 0x1p-24})});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_EQ(bounded->values[0].GetInt(0), 3);
  EXPECT_EQ(bounded->bounds[0].GetDouble(0), 3);  // index 0 could win
}

TEST(ErrorBoundsTest, AVarianceBoundCoversItsMeansOffset) {
  // Values near 1000 that differ by about 1: float32's running mean loses
  // the low bits that the deviations are made of.
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {256}});
  const ValueId shifted = b.Op("add", {x, b.Constant("c", Filled({}, 1000))});
  b.graph().AddOutput(b.Op("reduce_var", {shifted}, Axes({0})));
  std::vector<double> values;
  for (int i = 0; i < 256; ++i) values.push_back(std::sin(i));
  const Tensor inputs = Values(DType::kF32, {256}, values);
  absl::StatusOr<BoundedOutputs> bounded = InterpretWithErrorBounds(b.graph(), {inputs});
  absl::StatusOr<std::vector<Tensor>> f32 = Interpret(b.graph(), {inputs});
  ASSERT_TRUE(bounded.ok() && f32.ok()) << bounded.status();
  const double var = bounded->values[0].GetDouble(0), bound = bounded->bounds[0].GetDouble(0);
  EXPECT_NEAR(var, 0.5, 0.01);
  EXPECT_GE(bound, std::fabs((*f32)[0].GetDouble(0) - var));
  // The shift's rounding, 4 units of 1000 per element, moves each
  // deviation; the mean's rounding, relative to 1000, too.
  EXPECT_GE(bound, 2 * 4 * kUnit * 1000 * 0.6);
  EXPECT_LE(bound, 1e-3);
}

TEST(ErrorBoundsTest, CompositeOpsMustBeDecomposedFirst) {
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {2, 3}});
  b.graph().AddOutput(b.Op("softmax", {x}));
  absl::StatusOr<BoundedOutputs> bounded = InterpretWithErrorBounds(b.graph(), {Filled({2, 3}, 0)});
  EXPECT_EQ(bounded.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(bounded.status().message()),
              HasSubstr("node 'softmax0' (softmax): the error bounds of op 'softmax' are "
                        "modelled only once it is decomposed into primitives"));
}

TEST(ErrorBoundsTest, DataMovementIsExact) {
  GraphBuilder b;
  const ValueId x = b.Input("x", {DType::kF32, {2, 3}});
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  b.graph().AddOutput(b.Op("transpose", {x}, std::move(perm)));
  absl::StatusOr<BoundedOutputs> bounded =
      InterpretWithErrorBounds(b.graph(), {Filled({2, 3}, 0.7)});
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(bounded->bounds[0].GetDouble(i), 0);
}

}  // namespace
}  // namespace loom
