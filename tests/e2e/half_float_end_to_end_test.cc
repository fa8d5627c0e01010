// f16 and bf16 through the whole CPU path: casts to and from them round to
// nearest, ties to even, keep NaN, infinities and subnormals (checked bit
// by bit against ir/dtype.h's conversions), and ops on them compute in f32
// and round each result, as the interpreter does.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/random.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

constexpr DType kHalfTypes[] = {DType::kF16, DType::kBF16};

Attrs To(DType dtype) {
  Attrs attrs;
  attrs.Set("to", std::string(DTypeName(dtype)));
  return attrs;
}

// Values that probe each rounding case of f16 and bf16, then random ones to
// fill 64 elements (the vector loops' width and a tail).
std::vector<double> Probes() {
  // clang-format off
  std::vector<double> values = {
      1.0 + 0x1p-11,  1.0 + 3 * 0x1p-11,  -(1.0 + 0x1p-11),  // f16 ties, to even
      1.0 + 0x1p-8,   1.0 + 3 * 0x1p-8,   1.0 + 0x1p-9,      // bf16 ties; below one
      65504.0,        65519.0,            65520.0,           // f16's largest, its tie to infinity
      0x1p-24,        0x1p-25,            3 * 0x1p-25,       // f16 subnormals and ties
      0x1p-14 - 0x1p-25, 0x1p-133,        0x1p-134,          // up to a normal; bf16 subnormals
      3.4e38,         -3.4e38,            1e-45,             // bf16 overflow; f32's smallest
      0.0,            -0.0,               INFINITY,
      -INFINITY,      NAN,                -NAN,
      0.1,            -2.5,               1.0 / 3,
  };
  // clang-format on
  Tensor random(DType::kF64, {64 - static_cast<int64_t>(values.size())});
  FillUniform(random, 7, -70000, 70000);
  for (int64_t i = 0; i < random.num_elements(); ++i) values.push_back(random.GetDouble(i));
  return values;
}

Tensor Filled(DType dtype, const std::vector<double>& values) {
  Tensor tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) tensor.SetDouble(i, values[i]);
  return tensor;
}

// Every element of `got` has the bits NarrowFloatBits gives `from`'s (any NaN
// for a NaN).
void ExpectRoundedBits(const Tensor& from, const Tensor& got, const std::string& what) {
  ASSERT_TRUE(IsHalfFloat(got.dtype()));
  for (int64_t i = 0; i < from.num_elements(); ++i) {
    const double x = from.GetDouble(i);
    const uint16_t bits = got.data_as<uint16_t>()[i];
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got.GetDouble(i))) << what << " element " << i;
      continue;
    }
    EXPECT_EQ(bits, NarrowFloatBits(x, got.dtype()))
        << what << " element " << i << ": " << x << " became " << got.GetDouble(i);
  }
}

TEST(HalfFloatEndToEndTest, CastsRoundToNearestEvenBitForBit) {
  GraphBuilder b;
  const ValueId x32 = b.Input("x32", DType::kF32, {64});
  const ValueId x64 = b.Input("x64", DType::kF64, {64});
  for (DType half : kHalfTypes) {
    b.Output(b.Op("cast", {x32}, To(half)));
    b.Output(b.Op("cast", {x64}, To(half)));  // one rounding, not two through f32
  }
  Graph graph = std::move(b.graph());
  ASSERT_TRUE(InferShapes(graph).ok());
  std::vector<double> values = Probes();
  values[62] = 1.0 + 0x1p-11 + 0x1p-40;  // above an f16 tie only in f64
  values[63] = 1.0 + 0x1p-8 + 0x1p-40;   // and a bf16 one
  const std::vector<Tensor> inputs = {Filled(DType::kF32, values), Filled(DType::kF64, values)};
  absl::StatusOr<std::vector<Tensor>> actual = CompileAndRun(graph, inputs);
  ASSERT_TRUE(actual.ok()) << actual.status();
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (size_t o = 0; o < actual->size(); ++o) {
    const Tensor& from = inputs[o % 2];
    ExpectRoundedBits(from, (*actual)[o], absl::StrCat("compiled output ", o));
    ExpectRoundedBits(from, (*expected)[o], absl::StrCat("interpreted output ", o));
  }
}

TEST(HalfFloatEndToEndTest, CastsFromHalfTypesAreExact) {
  for (DType half : kHalfTypes) {
    GraphBuilder b;
    const ValueId x = b.Input("x", half, {64});
    for (DType to :
         {DType::kF32, DType::kF64, DType::kI32, DType::kBool, DType::kF16, DType::kBF16}) {
      if (to != half) b.Output(b.Op("cast", {x}, To(to)));
    }
    Graph graph = std::move(b.graph());
    ASSERT_TRUE(InferShapes(graph).ok());
    const std::vector<Tensor> inputs = {Filled(half, Probes())};
    absl::StatusOr<std::vector<Tensor>> actual = CompileAndRun(graph, inputs);
    ASSERT_TRUE(actual.ok()) << actual.status();
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status();
    for (size_t o = 0; o < actual->size(); ++o) {
      const Tensor &got = (*actual)[o], &want = (*expected)[o];
      ASSERT_EQ(got.type(), want.type());
      for (int64_t i = 0; i < want.num_elements(); ++i) {
        const double g = got.GetDouble(i), w = want.GetDouble(i);
        EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w)))
            << DTypeName(half) << " to " << DTypeName(want.dtype()) << " element " << i << ": got "
            << g << ", want " << w;
      }
      if (want.dtype() == DType::kF32) {
        // Infinities, NaN and subnormals survive the widening.
        EXPECT_EQ(got.GetDouble(20), INFINITY);
        EXPECT_TRUE(std::isnan(got.GetDouble(22)));
        EXPECT_EQ(got.GetDouble(9), 0x1p-24);
      }
    }
  }
}

// The ulp of `x` in `dtype`: how far two roundings of nearly the same f32
// value may differ.
double Ulp(double x, DType dtype) {
  const bool f16 = dtype == DType::kF16;
  const double smallest_normal = f16 ? 0x1p-14 : 0x1p-126;
  return std::ldexp(1.0, std::ilogb(std::max(std::fabs(x), smallest_normal)) - (f16 ? 10 : 7));
}

TEST(HalfFloatEndToEndTest, OpsComputeInF32AndRoundEachResult) {
  for (DType half : kHalfTypes) {
    GraphBuilder b;
    const ValueId x = b.Input("x", half, {8, 33});
    const ValueId y = b.Input("y", half, {33});
    const ValueId w = b.Weight("w", {33, 16}, 3, -1, 1, half);
    const ValueId sum = b.Op("add", {x, y});
    b.Output(sum);
    b.Output(b.Op("mul", {b.Op("exp", {x}), y}));
    b.Output(b.Op("matmul", {x, w}));
    b.Output(b.Op("reduce_sum", {sum}, IntsAttr("axes", {1})));
    b.Output(b.Op("softmax", {x}));
    b.Output(b.Op("less", {x, y}));
    Graph graph = std::move(b.graph());
    ASSERT_TRUE(InferShapes(graph).ok());
    const std::vector<Tensor> inputs = MakeInputs(graph);
    absl::StatusOr<std::vector<Tensor>> actual = CompileAndRun(graph, inputs);
    ASSERT_TRUE(actual.ok()) << actual.status();
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status();
    for (size_t o = 0; o < actual->size(); ++o) {
      const Tensor &got = (*actual)[o], &want = (*expected)[o];
      ASSERT_EQ(got.type(), want.type()) << "output " << o;
      for (int64_t i = 0; i < want.num_elements(); ++i) {
        const double w = want.GetDouble(i);
        // A sum of 33 or a product of 33 terms in f32 may land on the
        // other side of a tie of the 16-bit type: one ulp, no more.
        const double slack = IsHalfFloat(want.dtype()) ? Ulp(w, half) : 0;
        EXPECT_NEAR(got.GetDouble(i), w, slack)
            << DTypeName(half) << " output " << o << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace loom
