// The f32 exponential, sigmoid, tanh, erf and log of emitted kernels, in the
// explicit vectors of each instruction set (AVX-512 where this machine has
// it, AVX2 and the generic GCC vectors) and in the scalar helpers GCC
// vectorises itself, against double precision: the largest error in units
// in the last place of the f32 result, over a dense grid of arguments.

#include <algorithm>
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
constexpr double kSmallestNormal = 1.17549435e-38;

// The distance from `value` to the f32 nearest `truth`, in units of the
// last place there (the spacing of f32 values at |truth|; at least the
// smallest normal one's, so that results near 0 count absolutely).
double UlpError(float value, double truth) {
  const float nearest = static_cast<float>(truth);
  const float magnitude = std::fmax(std::fabs(nearest), static_cast<float>(kSmallestNormal));
  const double ulp = std::nextafter(magnitude, INFINITY) - magnitude;
  return std::fabs(static_cast<double>(value) - truth) / ulp;
}

struct Function {
  std::string op;
  double low, high;  // the grid's arguments
  std::function<double(double)> truth;
  double max_ulp;  // the bound
};

// Runs `f` on `arguments` (kRows x kColumns of them) for `march`, each value
// computed twice: alone (a flat kernel: the scalar helper, vectorised by
// GCC) and beside a sum of its row (a kernel with an inner loop: the
// explicit vectors). Returns the largest error of each; a NaN where the
// truth is not NaN, or the other way round, is an infinite error, and a
// truth below the smallest normal f32 may come out as anything closer to
// it than that (sigmoid(-100) as 0).
std::vector<double> MaxUlpErrors(const Function& f, const std::vector<float>& arguments,
                                 const std::string& march) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {kRows, kColumns});
  b.Output(b.Op(f.op, {x}));
  const ValueId vectors = b.Op(f.op, {b.Op("neg", {b.Op("neg", {x})})});
  b.Output(vectors);
  b.Output(b.Op("reduce_sum", {vectors}, IntsAttr("axes", {-1})));
  EXPECT_TRUE(InferShapes(b.graph()).ok());
  Tensor input(DType::kF32, {kRows, kColumns});
  std::copy(arguments.begin(), arguments.end(), input.data_as<float>());
  // Streamed stores would take the scalar helper's lanes (PrintStreamingLoop).
  absl::StatusOr<std::vector<Tensor>> outputs =
      CompileAndRun(b.graph(), {input}, march, /*streaming_store_min_bytes=*/-1);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  if (!outputs.ok()) return {INFINITY, INFINITY};
  std::vector<double> errors;
  for (int o = 0; o < 2; ++o) {
    const float* y = (*outputs)[o].data_as<float>();
    double worst = 0;
    for (int64_t i = 0; i < kRows * kColumns; ++i) {
      const double truth = f.truth(arguments[i]);
      const bool nan_matches = std::isnan(y[i]) == std::isnan(truth);
      const double error = !nan_matches        ? INFINITY
                           : std::isnan(truth) ? 0
                           : std::isinf(static_cast<float>(truth))
                               ? (y[i] == static_cast<float>(truth) ? 0 : INFINITY)
                           : std::fabs(truth) < kSmallestNormal
                               ? (std::fabs(y[i] - truth) <= kSmallestNormal ? 0 : INFINITY)
                               : UlpError(y[i], truth);
      worst = std::fmax(worst, error);
    }
    errors.push_back(worst);
  }
  return errors;
}

const std::vector<Function>& Functions() {
  static const auto* functions = new std::vector<Function>{
      {"exp", -87.0, 88.0, [](double x) { return std::exp(x); }, 1.1},
      {"sigmoid", -30.0, 30.0, [](double x) { return 1 / (1 + std::exp(-x)); }, 2.5},
      {"tanh", -10.0, 10.0, [](double x) { return std::tanh(x); }, 2.0},
      {"erf", -5.0, 5.0, [](double x) { return std::erf(x); }, 8.0},
      {"log", 1e-3, 1000.0, [](double x) { return std::log(x); }, 1.5},
  };
  return *functions;
}

constexpr const char* kMarches[] = {"", "haswell", "x86-64"};

std::string Where(const Function& f, const std::string& march) {
  return absl::StrCat(f.op, " for ", march.empty() ? "native" : march);
}

TEST(VectorMathTest, ErrorsInUlpsAgainstDoublePrecision) {
  for (const std::string march : kMarches) {
    for (const Function& f : Functions()) {
      std::vector<float> grid(kRows * kColumns);
      for (int64_t i = 0; i < kRows * kColumns; ++i) {
        grid[i] = static_cast<float>(f.low + (f.high - f.low) * i / (kRows * kColumns - 1));
      }
      const std::vector<double> errors = MaxUlpErrors(f, grid, march);
      EXPECT_LE(errors[0], f.max_ulp) << Where(f, march) << ", scalar helper";
      EXPECT_LE(errors[1], f.max_ulp) << Where(f, march) << ", explicit vectors";
      std::printf("%-24s max error %.2f ulp (scalar helper), %.2f ulp (vectors)\n",
                  Where(f, march).c_str(), errors[0], errors[1]);
    }
  }
}

// NaN stays NaN, infinities and arguments past the overflow and underflow
// bounds give the limits (exp: infinity, denormals, 0), at every lane.
TEST(VectorMathTest, SpecialArgumentsGiveTheLimits) {
  const float specials[] = {NAN,    INFINITY, -INFINITY, 100.0f, -100.0f,
                            -200.0f, 0.0f,    -0.0f,     89.5f, -103.5f, 1e-30f, 1e-40f};
  std::vector<float> arguments(kRows * kColumns);
  for (size_t i = 0; i < arguments.size(); ++i) {
    arguments[i] = specials[i % (sizeof specials / sizeof specials[0])];
  }
  for (const std::string march : kMarches) {
    for (const Function& f : Functions()) {
      const std::vector<double> errors = MaxUlpErrors(f, arguments, march);
      EXPECT_LE(errors[0], f.max_ulp) << Where(f, march) << ", scalar helper";
      EXPECT_LE(errors[1], f.max_ulp) << Where(f, march) << ", explicit vectors";
    }
  }
}

// A row's maximum in explicit vectors (four chains of 64 lanes, then a tail
// one by one) is NaN when one of its values is, wherever that value is.
TEST(VectorMathTest, AMaximumIsNanWhereverTheNanIs) {
  constexpr int64_t kRowLength = 100;
  const int64_t nan_at[] = {-1, 0, 17, 63, 64, 99};  // -1: none
  constexpr int64_t kRowCount = sizeof nan_at / sizeof nan_at[0];
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {kRowCount, kRowLength});
  b.Output(b.Op("reduce_max", {x}, IntsAttr("axes", {-1})));
  b.Output(b.Op("reduce_min", {x}, IntsAttr("axes", {-1})));
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  Tensor input(DType::kF32, {kRowCount, kRowLength});
  for (int64_t r = 0; r < kRowCount; ++r) {
    for (int64_t i = 0; i < kRowLength; ++i) {
      input.SetDouble(r * kRowLength + i, i == nan_at[r] ? NAN : (i * 37 % 101) - 50.0);
    }
  }
  for (const std::string march : kMarches) {
    absl::StatusOr<std::vector<Tensor>> outputs = CompileAndRun(b.graph(), {input}, march);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    for (int64_t r = 0; r < kRowCount; ++r) {
      const double max = (*outputs)[0].GetDouble(r), min = (*outputs)[1].GetDouble(r);
      const std::string where = absl::StrCat("row ", r, " for ", march.empty() ? "native" : march);
      if (nan_at[r] < 0) {
        EXPECT_EQ(max, 50.0) << where;
        EXPECT_EQ(min, -50.0) << where;
      } else {
        EXPECT_TRUE(std::isnan(max)) << where;
        EXPECT_TRUE(std::isnan(min)) << where;
      }
    }
  }
}

}  // namespace
}  // namespace loom
