// The inverse trigonometric and hyperbolic functions through the whole CPU
// path (decomposed into arithmetic, sqrt, log and selects, lowered,
// compiled, run) against the C library in double: the largest error in
// units in the last place of the result, f32 and f64, over dense grids of
// their domains, from tiny magnitudes to huge ones and up to the ends of
// the domains, for each instruction set; special arguments (NaN,
// infinities, zeros, the ends) give what the C library gives. Then top_k,
// reverse_sequence, lrn and einsum against the interpreter.

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/tensor.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// The distance from `value` to the nearest value of `dtype` to `truth`, in
// units of the last place there (at least the smallest normal's).
double UlpError(double value, double truth, DType dtype) {
  if (std::isnan(truth) || std::isnan(value)) {
    return std::isnan(truth) == std::isnan(value) ? 0 : kInf;
  }
  if (std::isinf(truth)) return value == truth ? 0 : kInf;
  double ulp;
  if (dtype == DType::kF32) {
    const float m =
        std::fmax(std::fabs(static_cast<float>(truth)), std::numeric_limits<float>::min());
    ulp = std::nextafter(m, INFINITY) - m;
  } else {
    const double m = std::fmax(std::fabs(truth), std::numeric_limits<double>::min());
    ulp = std::nextafter(m, INFINITY) - m;
  }
  return std::fabs(value - truth) / ulp;
}

struct Function {
  std::string op;
  std::function<double(double)> truth;
  double low, high;           // a linear grid
  std::vector<double> edges;  // approached from inside: x = edge -+ 2^-k
  bool magnitudes;            // +-10^e, e from -30 to 30
};

std::vector<double> Arguments(const Function& f, DType dtype) {
  std::vector<double> x;
  constexpr int kLinear = 20000;
  for (int i = 0; i <= kLinear; ++i) x.push_back(f.low + (f.high - f.low) * i / kLinear);
  const int bits = dtype == DType::kF32 ? 24 : 53;
  for (double edge : f.edges) {
    for (int k = 1; k <= bits; ++k) {
      for (double side : {-1.0, 1.0}) x.push_back(edge + side * std::ldexp(1.0, -k));
    }
  }
  if (f.magnitudes) {
    for (int e = -300; e <= 300; ++e) {
      const double m = std::pow(10.0, e / 10.0);
      x.push_back(m);
      x.push_back(-m);
    }
  }
  for (double special : {kNan, kInf, -kInf, 0.0, -0.0, 1.0, -1.0}) x.push_back(special);
  for (double& v : x) {
    if (dtype == DType::kF32) v = static_cast<float>(v);
  }
  return x;
}

const std::vector<Function>& Functions() {
  static const auto* functions = new std::vector<Function>{
      {"atan", [](double x) { return std::atan(x); }, -20, 20, {}, true},
      {"asin", [](double x) { return std::asin(x); }, -1, 1, {1, -1}, true},
      {"acos", [](double x) { return std::acos(x); }, -1, 1, {1, -1}, true},
      {"asinh", [](double x) { return std::asinh(x); }, -20, 20, {}, true},
      {"acosh", [](double x) { return std::acosh(x); }, 1, 20, {1}, true},
      {"atanh", [](double x) { return std::atanh(x); }, -1, 1, {1, -1}, true},
  };
  return *functions;
}

// The bound, in ulps, for f32 and f64 alike (measured for each march: at
// most 3.01 for f32 and 4.0 for f64, both atanh's).
constexpr double kBoundUlps = 5;

// Native code for this machine, AVX2 + FMA, plain x86-64 (no FMA) and Arm
// (cross-compiled, run under QEMU: aarch64_run.h).
constexpr const char* kMarches[] = {"", "haswell", "x86-64", "armv8-a"};

TEST(MathEndToEndTest, InverseTrigErrorsInUlps) {
  for (const std::string march : kMarches) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      GraphBuilder b;
      std::vector<std::vector<double>> grids;
      std::vector<Tensor> inputs;
      for (const Function& f : Functions()) {
        grids.push_back(Arguments(f, dtype));
        const int64_t n = static_cast<int64_t>(grids.back().size());
        Tensor t(dtype, {n});
        for (int64_t i = 0; i < n; ++i) t.SetDouble(i, grids.back()[i]);
        inputs.push_back(std::move(t));
        b.Output(b.Op(f.op, {b.Input(f.op, dtype, {n})}));
      }
      ASSERT_TRUE(InferShapes(b.graph()).ok());
      absl::StatusOr<std::vector<Tensor>> outputs = CompileAndRun(b.graph(), inputs, march);
      ASSERT_TRUE(outputs.ok()) << outputs.status();
      const std::string where = march.empty() ? "native" : march;
      for (size_t k = 0; k < Functions().size(); ++k) {
        const Function& f = Functions()[k];
        double worst = 0, worst_at = 0, got = 0;
        for (size_t i = 0; i < grids[k].size(); ++i) {
          const double x = grids[k][i];
          const double y = (*outputs)[k].GetDouble(i);
          const double error = UlpError(y, f.truth(x), dtype);
          if (!(error <= worst)) worst = error, worst_at = x, got = y;
        }
        EXPECT_LE(worst, kBoundUlps)
            << f.op << " " << DTypeName(dtype) << " for " << where << " at x = " << worst_at
            << ": got " << got << ", want " << f.truth(worst_at);
        std::printf("%-6s %s %-7s max error %.2f ulp (at %.9g)\n", f.op.c_str(),
                    std::string(DTypeName(dtype)).c_str(), where.c_str(), worst, worst_at);
      }
    }
  }
}

// The same ops inside larger expressions, fused with their neighbours,
// against the interpreter.
TEST(MathEndToEndTest, InverseTrigFusedMatchesTheInterpreter) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {7, 33});
  const ValueId half =
      b.Op("mul", {x, b.Op("reciprocal", {b.Op("add", {b.Op("abs", {x}), b.Op("abs", {x})})})});
  b.Output(b.Op("add", {b.Op("atan", {x}), b.Op("asinh", {x})}));
  b.Output(b.Op("reduce_sum", {b.Op("asin", {half})}, IntsAttr("axes", {1})));
  b.Output(b.Op("mul", {b.Op("acos", {half}), b.Op("atanh", {half})}));
  b.Output(b.Op("acosh", {b.Op("add", {b.Op("abs", {x}), b.Op("abs", {x})})}));
  CompileRunAndCompare(std::move(b.graph()));
}

// top_k in f32 with ties, NaN and infinities among the values, in i64
// (integers in [-5, 5]: many ties) and along a first axis, smallest too;
// selected one by one (k <= 16) and by ranks.
TEST(MathEndToEndTest, TopKMatchesTheInterpreter) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {6, 10});
  const ValueId ints = b.Input("ints", DType::kI64, {4, 12});
  const ValueId cube = b.Input("cube", DType::kF32, {5, 3, 4});
  auto top = [&](ValueId v, int64_t k, int64_t axis, int64_t largest) {
    for (ValueId out :
         b.Ops("top_k", {v}, 2, MakeAttrs({{"k", k}, {"axis", axis}, {"largest", largest}}))) {
      b.Output(out);
    }
  };
  top(x, 10, -1, 1);
  top(x, 4, 1, 0);
  top(ints, 7, 1, 1);
  top(ints, 3, 0, 0);
  top(x, 10, 1, 0);
  top(cube, 2, 0, 1);
  top(cube, 3, 1, 0);
  // k > 16: by ranks.
  const ValueId wide = b.Input("wide", DType::kF32, {3, 40});
  top(wide, 20, 1, 1);
  top(wide, 40, 1, 0);
  EndToEndOptions options;
  options.fill = [](size_t i, Tensor& input) {
    if (i != 0) return;
    const double specials[] = {kNan, kInf, -kInf, 0.5, 0.5, kNan, 0.0, -0.0};
    for (int64_t e = 0; e < 8; ++e) input.SetDouble(e * 7 % 60, specials[e]);
    input.SetDouble(13, input.GetDouble(17));  // a tie in row 1
    input.SetDouble(1, kNan);                  // three NaN in row 0
    input.SetDouble(3, kNan);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST(MathEndToEndTest, ReverseSequenceMatchesTheInterpreter) {
  GraphBuilder b;
  const ValueId time_major = b.Input("time_major", DType::kF32, {7, 4, 3});
  const ValueId time_lengths = b.Input("time_lengths", DType::kI64, {4});
  const ValueId batch_major = b.Input("batch_major", DType::kI64, {3, 5});
  const ValueId batch_lengths = b.Input("batch_lengths", DType::kI64, {3});
  b.Output(b.Op("reverse_sequence", {time_major, time_lengths}));
  b.Output(b.Op("reverse_sequence", {batch_major, batch_lengths},
                MakeAttrs({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}})));
  EndToEndOptions options;
  options.fill = [](size_t i, Tensor& input) {
    if (i == 1) {
      for (int64_t b = 0; b < 4; ++b) input.SetInt(b, std::vector<int64_t>{7, 0, 3, 1}[b]);
    } else if (i == 3) {
      for (int64_t b = 0; b < 3; ++b) input.SetInt(b, std::vector<int64_t>{2, 5, 4}[b]);
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// A length past the time axis, or a negative one, is an error at run time
// (the kernel's gather checks its index), as in the interpreter.
TEST(MathEndToEndTest, ReverseSequenceRefusesLengthsOutOfRange) {
  for (int64_t bad : {4, -1}) {
    GraphBuilder b;
    const ValueId x = b.Input("x", DType::kF32, {3, 2});
    const ValueId lengths = b.Input("lengths", DType::kI64, {2});
    b.Output(b.Op("reverse_sequence", {x, lengths}));
    ASSERT_TRUE(InferShapes(b.graph()).ok());
    Tensor data(DType::kF32, {3, 2});
    Tensor lens(DType::kI64, {2});
    lens.SetInt(0, 1);
    lens.SetInt(1, bad);
    absl::StatusOr<std::vector<Tensor>> outputs = CompileAndRun(b.graph(), {data, lens});
    EXPECT_FALSE(outputs.ok()) << "length " << bad;
    EXPECT_THAT(std::string(outputs.status().message()), testing::HasSubstr("reverse_sequence"))
        << outputs.status();
  }
}

TEST(MathEndToEndTest, LrnMatchesTheInterpreter) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 7, 5, 4});
  b.Output(b.Op("lrn", {x}, MakeAttrs({{"size", int64_t{5}}})));
  b.Output(b.Op("lrn", {x},
                MakeAttrs({{"size", int64_t{4}}, {"alpha", 0.5}, {"beta", 1.25}, {"bias", 0.3}})));
  b.Output(b.Op("lrn", {x}, MakeAttrs({{"size", int64_t{1}}, {"bias", 1e-3}, {"beta", 0.5}})));
  const ValueId small = b.Input("small", DType::kF32, {1, 3, 8});
  b.Output(b.Op("lrn", {b.Op("mul", {small, small})},
                MakeAttrs({{"size", int64_t{3}}, {"alpha", 1.0}, {"bias", 1e-30}})));
  CompileRunAndCompare(std::move(b.graph()));
}

// einsum as views, sums and products (GEMM calls where large), against the
// interpreter: matrix and batched products, a chain of three, diagonals,
// traces, transposes, broadcast "..." dims, an outer product and integers.
TEST(MathEndToEndTest, EinsumMatchesTheInterpreter) {
  GraphBuilder b;
  auto einsum = [&](const std::string& equation, std::vector<ValueId> inputs) {
    b.Output(b.Op("einsum", std::move(inputs), MakeAttrs({{"equation", equation}})));
  };
  const ValueId a = b.Input("a", DType::kF32, {8, 16});
  const ValueId c = b.Input("c", DType::kF32, {16, 12});
  const ValueId batch = b.Input("batch", DType::kF32, {3, 16, 16});
  const ValueId d = b.Input("d", DType::kF32, {12, 5});
  const ValueId ints = b.Input("ints", DType::kI64, {4, 4});
  einsum("ij,jk->ik", {a, c});
  einsum("ij,jk,kl->li", {a, c, d});
  einsum("bij,bjk->bik", {batch, batch});
  einsum("...ii->...i", {batch});
  einsum("bii->b", {batch});
  einsum("ij->ji", {a});
  einsum("ij->", {a});
  einsum("i...,...j->i...j", {a, c});
  einsum("ij,kl->ijkl", {d, d});
  einsum("ij,jk->ik", {ints, ints});
  einsum("ii", {ints});
  CompileRunAndCompare(std::move(b.graph()));
}

}  // namespace
}  // namespace loom
