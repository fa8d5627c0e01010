// The f32 exponential, sigmoid, tanh and erf of emitted kernels, in the
// explicit vectors of each instruction set (AVX-512 where this machine has
// it, AVX2 and the generic GCC vectors) and in the scalar helpers GCC
// vectorises itself, against double precision: the largest error in units
// in the last place of the f32 result, over a dense grid of arguments.

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpp/e2e_test_util.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"

namespace loom {
namespace {

constexpr int64_t kRows = 256, kColumns = 256;  // the grid, in rows

// The distance from `value` to the f32 nearest `truth`, in units of the
// last place there (the spacing of f32 values at |truth|; at least the
// smallest normal one's, so that results near 0 count absolutely).
double UlpError(float value, double truth) {
  const float nearest = static_cast<float>(truth);
  const float magnitude = std::fmax(std::fabs(nearest), 1.17549435e-38f);
  const double ulp = std::nextafter(magnitude, INFINITY) - magnitude;
  return std::fabs(static_cast<double>(value) - truth) / ulp;
}

struct Function {
  std::string op;
  double low, high;  // the grid's arguments
  std::function<double(double)> truth;
  double max_ulp;  // the bound
};

// Runs `f` on the grid for `march`, each value computed twice: alone (a
// flat kernel: the scalar helper, vectorised by GCC) and beside a sum of
// its row (a kernel with an inner loop: the explicit vectors). Returns the
// largest error of each.
std::vector<double> MaxUlpErrors(const Function& f, const std::string& march) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {kRows, kColumns});
  b.Output(b.Op(f.op, {x}));
  const ValueId vectors = b.Op(f.op, {b.Op("neg", {b.Op("neg", {x})})});
  b.Output(vectors);
  b.Output(b.Op("reduce_sum", {vectors}, IntsAttr("axes", {-1})));
  EXPECT_TRUE(InferShapes(b.graph()).ok());
  Tensor input(DType::kF32, {kRows, kColumns});
  float* data = input.data_as<float>();
  for (int64_t i = 0; i < kRows * kColumns; ++i) {
    data[i] = static_cast<float>(f.low + (f.high - f.low) * i / (kRows * kColumns - 1));
  }
  absl::StatusOr<std::vector<Tensor>> outputs = CompileAndRun(b.graph(), {input}, march);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  if (!outputs.ok()) return {INFINITY, INFINITY};
  std::vector<double> errors;
  for (int o = 0; o < 2; ++o) {
    const float* y = (*outputs)[o].data_as<float>();
    double worst = 0;
    for (int64_t i = 0; i < kRows * kColumns; ++i) {
      worst = std::fmax(worst, UlpError(y[i], f.truth(data[i])));
    }
    errors.push_back(worst);
  }
  return errors;
}

TEST(VectorMathTest, ErrorsInUlpsAgainstDoublePrecision) {
  const std::vector<Function> functions = {
      {"exp", -87.0, 88.0, [](double x) { return std::exp(x); }, 1.1},
      {"sigmoid", -30.0, 30.0, [](double x) { return 1 / (1 + std::exp(-x)); }, 2.5},
      {"tanh", -10.0, 10.0, [](double x) { return std::tanh(x); }, 2.0},
      {"erf", -5.0, 5.0, [](double x) { return std::erf(x); }, 8.0},
  };
  for (const std::string march : {"", "haswell", "x86-64"}) {
    for (const Function& f : functions) {
      const std::vector<double> errors = MaxUlpErrors(f, march);
      const std::string where = absl::StrCat(f.op, " for ", march.empty() ? "native" : march);
      EXPECT_LE(errors[0], f.max_ulp) << where << ", scalar helper";
      EXPECT_LE(errors[1], f.max_ulp) << where << ", explicit vectors";
      std::printf("%-24s max error %.2f ulp (scalar helper), %.2f ulp (vectors)\n",
                  where.c_str(), errors[0], errors[1]);
    }
  }
}

}  // namespace
}  // namespace loom
