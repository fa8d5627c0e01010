// The 8- and 4-bit floats and the sub-byte integers through the whole CPU
// path: casts to the floats round to nearest, ties to even, and overflow
// as ONNX's Cast with saturate=0 (checked bit by bit against ir/dtype.h's
// NarrowFloatBits on every code, every midpoint between neighbours and
// either side of it); casts from them are exact; casts to the integers
// truncate (0 out of range) or wrap; ops on them compute in f32 or i32 and
// round or wrap each result, as the interpreter does.

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

constexpr DType kNarrowFloats[] = {DType::kF8E4M3FN,   DType::kF8E4M3FNUZ, DType::kF8E5M2,
                                   DType::kF8E5M2FNUZ, DType::kF8E8M0,     DType::kF4E2M1};
constexpr DType kSubByteIntegers[] = {DType::kI4, DType::kU4, DType::kI2, DType::kU2};

Attrs To(DType dtype) {
  Attrs attrs;
  attrs.Set("to", std::string(DTypeName(dtype)));
  return attrs;
}

int NumCodes(DType dtype) { return dtype == DType::kF4E2M1 ? 16 : 256; }

// Every finite value of every narrow float, the midpoints between
// neighbours (ties) and values just either side of them, and the specials.
std::vector<double> Probes() {
  std::vector<double> values = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1e30, -1e-30};
  for (DType dtype : kNarrowFloats) {
    double previous = NAN;
    for (int code = 0; code < NumCodes(dtype) / 2; ++code) {  // the positive half
      const double v = NarrowFloatValue(code, dtype);
      if (!std::isfinite(v)) continue;
      values.push_back(v);
      values.push_back(-v);
      if (!std::isnan(previous)) {
        const double mid = (previous + v) / 2;
        for (double m : {mid, mid * (1 + 0x1p-20), mid * (1 - 0x1p-20)}) {
          values.push_back(m);
          values.push_back(-m);
        }
      }
      previous = v;
    }
  }
  return values;
}

// `values` as `dtype` (converted as cast converts), of `shape` or 1-D.
Tensor Filled(DType dtype, const std::vector<double>& values, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  Tensor tensor(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) tensor.SetDouble(i, values[i]);
  return tensor;
}

// Every element of `got` has the bits NarrowFloatBits gives `from`'s (a
// NaN for a NaN where the type has one).
void ExpectRoundedBits(const Tensor& from, const Tensor& got, const std::string& what) {
  for (int64_t i = 0; i < from.num_elements(); ++i) {
    const double x = from.GetDouble(i);
    const uint8_t bits = got.data_as<uint8_t>()[i];
    if (std::isnan(x) && got.dtype() != DType::kF4E2M1) {
      EXPECT_TRUE(std::isnan(got.GetDouble(i))) << what << " element " << i;
      continue;
    }
    ASSERT_EQ(bits, NarrowFloatBits(x, got.dtype()))
        << what << " element " << i << ": " << x << " became " << got.GetDouble(i);
  }
}

// `got` and `want` hold the same values (NaN matching NaN).
void ExpectSameValues(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    ASSERT_TRUE(g == w || (std::isnan(g) && std::isnan(w)))
        << what << " element " << i << ": got " << g << ", want " << w;
  }
}

// Compiles and interprets `graph` on `inputs`; both results.
void CompileAndInterpret(const Graph& graph, const std::vector<Tensor>& inputs,
                         std::vector<Tensor>& actual, std::vector<Tensor>& expected) {
  absl::StatusOr<std::vector<Tensor>> compiled = CompileAndRun(graph, inputs);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::StatusOr<std::vector<Tensor>> interpreted = Interpret(graph, inputs);
  ASSERT_TRUE(interpreted.ok()) << interpreted.status();
  actual = *std::move(compiled);
  expected = *std::move(interpreted);
}

TEST(NarrowTypesEndToEndTest, CastsToNarrowFloatsRoundBitForBit) {
  const std::vector<double> values = Probes();
  const int64_t n = static_cast<int64_t>(values.size());
  GraphBuilder b;
  const ValueId x32 = b.Input("x32", DType::kF32, {n});
  const ValueId x64 = b.Input("x64", DType::kF64, {n});
  const ValueId x16 = b.Input("x16", DType::kF16, {n});
  for (DType narrow : kNarrowFloats) {
    for (ValueId x : {x32, x64, x16}) b.Output(b.Op("cast", {x}, To(narrow)));
  }
  Graph graph = std::move(b.graph());
  ASSERT_TRUE(InferShapes(graph).ok());
  const std::vector<Tensor> inputs = {Filled(DType::kF32, values), Filled(DType::kF64, values),
                                      Filled(DType::kF16, values)};
  std::vector<Tensor> actual, expected;
  CompileAndInterpret(graph, inputs, actual, expected);
  for (size_t o = 0; o < actual.size(); ++o) {
    const Tensor& from = inputs[o % 3];
    const std::string what =
        absl::StrCat(DTypeName(from.dtype()), " to ", DTypeName(actual[o].dtype()));
    ExpectRoundedBits(from, actual[o], absl::StrCat("compiled ", what));
    ExpectRoundedBits(from, expected[o], absl::StrCat("interpreted ", what));
  }
}

TEST(NarrowTypesEndToEndTest, CastsFromNarrowFloatsAreExact) {
  for (DType narrow : kNarrowFloats) {
    std::vector<double> codes;
    for (int code = 0; code < NumCodes(narrow); ++code) {
      codes.push_back(NarrowFloatValue(code, narrow));
    }
    Tensor x(narrow, {static_cast<int64_t>(codes.size())});
    for (int code = 0; code < NumCodes(narrow); ++code) x.data_as<uint8_t>()[code] = code;
    GraphBuilder b;
    const ValueId in = b.Input("x", narrow, x.shape());
    for (DType to : {DType::kF32, DType::kF64, DType::kF16, DType::kI32, DType::kBool,
                     DType::kF8E5M2, DType::kI4}) {
      if (to != narrow) b.Output(b.Op("cast", {in}, To(to)));
    }
    Graph graph = std::move(b.graph());
    ASSERT_TRUE(InferShapes(graph).ok());
    std::vector<Tensor> actual, expected;
    CompileAndInterpret(graph, {x}, actual, expected);
    for (size_t o = 0; o < actual.size(); ++o) {
      ExpectSameValues(actual[o], expected[o],
                       absl::StrCat(DTypeName(narrow), " to ", DTypeName(actual[o].dtype())));
    }
    const Tensor& f32 = actual[0];
    for (int code = 0; code < NumCodes(narrow); ++code) {
      const double want = codes[code], got = f32.GetDouble(code);
      ASSERT_TRUE(got == want || (std::isnan(got) && std::isnan(want)))
          << DTypeName(narrow) << " code " << code;
    }
  }
}

TEST(NarrowTypesEndToEndTest, CastsToSubByteIntegersTruncateOrWrap) {
  std::vector<double> floats = {NAN, INFINITY, -INFINITY, 1e10, -1e10, -0.0};
  std::vector<double> ints = {2147483647.0, -2147483648.0};
  for (int i = -40; i <= 40; ++i) {
    floats.push_back(i / 2.0);
    floats.push_back(i / 2.0 + 0.3);
    ints.push_back(i);
  }
  GraphBuilder b;
  const ValueId f = b.Input("f", DType::kF32, {static_cast<int64_t>(floats.size())});
  const ValueId h = b.Input("h", DType::kF16, {static_cast<int64_t>(floats.size())});
  const ValueId k = b.Input("k", DType::kI32, {static_cast<int64_t>(ints.size())});
  for (DType to : kSubByteIntegers) {
    for (ValueId x : {f, h, k})
      b.Output(b.Op("cast", {b.Op("cast", {x}, To(to))}, To(DType::kI32)));
  }
  Graph graph = std::move(b.graph());
  ASSERT_TRUE(InferShapes(graph).ok());
  const std::vector<Tensor> inputs = {Filled(DType::kF32, floats), Filled(DType::kF16, floats),
                                      Filled(DType::kI32, ints)};
  std::vector<Tensor> actual, expected;
  CompileAndInterpret(graph, inputs, actual, expected);
  for (size_t o = 0; o < actual.size(); ++o) {
    const DType to = kSubByteIntegers[o / 3];
    const Tensor& from = inputs[o % 3];
    const std::string what = absl::StrCat(DTypeName(from.dtype()), " to ", DTypeName(to));
    ExpectSameValues(actual[o], expected[o], what);
    for (int64_t i = 0; i < from.num_elements(); ++i) {
      // The interpreter's conversion, by ir/dtype.h's rules.
      Tensor one(to, {1});
      if (IsFloat(from.dtype())) {
        one.SetInt(0, FloatToIntegerBits(from.GetDouble(i), to));
      } else {
        one.SetInt(0, from.GetInt(i));
      }
      ASSERT_EQ(actual[o].GetInt(i), one.GetInt(0)) << what << " element " << i;
    }
  }
  // Spot checks of the rules themselves: truncation, 0 out of range, wrap.
  EXPECT_EQ(FloatToIntegerBits(-8.7, DType::kI4), -8);
  EXPECT_EQ(FloatToIntegerBits(16, DType::kU4), 0);
}

TEST(NarrowTypesEndToEndTest, OpsComputeWideAndRoundOrWrapEachResult) {
  GraphBuilder b;
  const ValueId a = b.Input("a", DType::kF8E4M3FN, {4, 33});
  const ValueId c = b.Input("c", DType::kF8E5M2, {33});
  const ValueId i = b.Input("i", DType::kI4, {4, 33});
  const ValueId u = b.Input("u", DType::kU2, {33});
  const ValueId q = b.Input("q", DType::kF4E2M1, {4, 33});
  b.Output(b.Op("mul", {a, a}));
  b.Output(b.Op("add", {c, c}));
  b.Output(b.Op("add", {i, i}));
  b.Output(b.Op("sub", {u, b.Op("add", {u, u})}));
  b.Output(b.Op("transpose", {q}, IntsAttr("perm", {1, 0})));
  b.Output(b.Op("reduce_sum", {i}, IntsAttr("axes", {1})));
  Graph graph = std::move(b.graph());
  ASSERT_TRUE(InferShapes(graph).ok());
  std::vector<double> values, integers;
  for (int k = 0; k < 4 * 33; ++k) {
    values.push_back((k % 17) * 0.75 - 6);
    integers.push_back(k % 16 - 8);
  }
  const std::vector<double> row(values.begin(), values.begin() + 33);
  std::vector<double> twos;
  for (int k = 0; k < 33; ++k) twos.push_back(k % 4);
  const std::vector<Tensor> inputs = {
      Filled(DType::kF8E4M3FN, values, {4, 33}), Filled(DType::kF8E5M2, row),
      Filled(DType::kI4, integers, {4, 33}), Filled(DType::kU2, twos),
      Filled(DType::kF4E2M1, values, {4, 33})};
  std::vector<Tensor> actual, expected;
  CompileAndInterpret(graph, inputs, actual, expected);
  for (size_t o = 0; o < actual.size(); ++o) {
    ExpectSameValues(actual[o], expected[o], absl::StrCat("output ", o));
  }
  EXPECT_EQ(expected[0].GetDouble(0), 36);  // -6 * -6 in e4m3fn
  EXPECT_EQ(expected[2].GetInt(0), 0);      // -8 + -8 wraps in i4
  EXPECT_EQ(expected[2].GetInt(12), -8);    // and 4 + 4
  EXPECT_EQ(expected[3].GetInt(1), 3);      // 1 - 2 wraps in u2
}

}  // namespace
}  // namespace loom
