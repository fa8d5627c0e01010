// The math functions of emitted kernels against long double, in units in
// the last place of the result, over a dense grid of arguments, for each
// instruction set (this machine's, AVX2, plain x86-64 and Arm, the last
// cross-compiled and run under QEMU: aarch64_run.h): loom's own f32
// exponential, sigmoid, tanh, erf and log, in explicit vectors and in the
// scalar helpers GCC vectorises itself, and the functions that GCC
// vectorises into calls of glibc's libmvec (f32 sin, cos and pow; every
// f64 one); and loom's exact f32 remainders.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cpp/aarch64_run.h"
#include "backends/cpp/artifact.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "re2/re2.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

constexpr int64_t kRows = 256, kColumns = 256;  // the grid, in rows
constexpr int64_t kGridSize = kRows * kColumns;

struct Function {
  std::string op;
  DType dtype;
  double low, high;  // the grid of the (first) argument
  // Of (x, y); y, pow's exponent, is in [-high_exponent, high_exponent]
  // (the unary functions have none).
  std::function<long double(long double, long double)> truth;
  double max_ulp;  // the bound
  double high_exponent = 0;
  bool binary() const { return high_exponent != 0; }
};

long double Sigmoid(long double x) { return 1 / (1 + std::exp(-x)); }

// The bounds are the largest errors measured on these grids for any
// instruction set, rounded up. libmvec documents 4 ulp for its functions;
// f64 sigmoid, 1 / (1 + exp(-x)), adds the rounding of its sum and
// quotient to exp's error.
const std::vector<Function>& Functions() {
  using LD = long double;
  static const auto* functions = new std::vector<Function>{
      {"exp", DType::kF32, -87.0, 88.0, [](LD x, LD) { return std::exp(x); }, 1.1},
      {"sigmoid", DType::kF32, -30.0, 30.0, [](LD x, LD) { return Sigmoid(x); }, 2.5},
      {"tanh", DType::kF32, -10.0, 10.0, [](LD x, LD) { return std::tanh(x); }, 2.0},
      {"erf", DType::kF32, -5.0, 5.0, [](LD x, LD) { return std::erf(x); }, 8.0},
      {"log", DType::kF32, 1e-3, 1000.0, [](LD x, LD) { return std::log(x); }, 1.5},
      {"sin", DType::kF32, -1000.0, 1000.0, [](LD x, LD) { return std::sin(x); }, 1.8},
      {"cos", DType::kF32, -1000.0, 1000.0, [](LD x, LD) { return std::cos(x); }, 2.0},
      {"pow", DType::kF32, 0.0, 20.0, [](LD x, LD y) { return std::pow(x, y); }, 0.7, 8.0},
      {"exp", DType::kF64, -708.0, 709.0, [](LD x, LD) { return std::exp(x); }, 2.7},
      {"sigmoid", DType::kF64, -40.0, 40.0, [](LD x, LD) { return Sigmoid(x); }, 4.2},
      {"tanh", DType::kF64, -20.0, 20.0, [](LD x, LD) { return std::tanh(x); }, 2.1},
      {"erf", DType::kF64, -6.0, 6.0, [](LD x, LD) { return std::erf(x); }, 1.8},
      {"log", DType::kF64, 1e-3, 1000.0, [](LD x, LD) { return std::log(x); }, 1.5},
      {"sin", DType::kF64, -1000.0, 1000.0, [](LD x, LD) { return std::sin(x); }, 3.0},
      {"cos", DType::kF64, -1000.0, 1000.0, [](LD x, LD) { return std::cos(x); }, 3.3},
      {"pow", DType::kF64, 0.0, 20.0, [](LD x, LD y) { return std::pow(x, y); }, 1.1, 60.0},
  };
  return *functions;
}

double SmallestNormal(DType dtype) { return dtype == DType::kF32 ? FLT_MIN : DBL_MIN; }

// `v` rounded to `dtype`.
double Rounded(long double v, DType dtype) {
  return dtype == DType::kF32 ? static_cast<float>(v) : static_cast<double>(v);
}

// The distance from `value` to the `dtype` value nearest `truth`, in units
// of the last place there (the spacing of `dtype` values at |truth|; at
// least the smallest normal one's, so that results near 0 count
// absolutely).
double UlpError(double value, long double truth, DType dtype) {
  const double magnitude = std::fmax(std::fabs(Rounded(truth, dtype)), SmallestNormal(dtype));
  const double ulp = dtype == DType::kF32
                         ? std::nextafter(static_cast<float>(magnitude), INFINITY) - magnitude
                         : std::nextafter(magnitude, INFINITY) - magnitude;
  return static_cast<double>(std::fabs(value - truth) / ulp);
}

// The error of `value`: a NaN where the truth is not NaN, or the other way
// round, is infinite, an infinity must be exact, and a truth below the
// smallest normal value may come out as anything closer to it than that
// (sigmoid(-100) as 0).
double Error(double value, long double truth, DType dtype) {
  if (std::isnan(value) != std::isnan(truth)) return INFINITY;
  if (std::isnan(truth)) return 0;
  if (std::isinf(Rounded(truth, dtype))) return value == Rounded(truth, dtype) ? 0 : INFINITY;
  if (std::fabs(truth) < SmallestNormal(dtype)) {
    return std::fabs(value - truth) <= SmallestNormal(dtype) ? 0 : INFINITY;
  }
  return UlpError(value, truth, dtype);
}

// The arguments of one function: x (and y) for each element of the grid.
struct Arguments {
  Tensor x, y;
};

// Runs each function f on its `arguments` for `march`, each value computed
// twice: alone (a flat kernel: the scalar helper or the libm call,
// vectorised by GCC) and beside a sum of its row (a kernel with an inner
// loop: loom's explicit vectors where it has them). Returns the largest
// error of each, per function.
std::vector<std::vector<double>> MaxUlpErrors(const std::vector<const Function*>& functions,
                                              const std::vector<Arguments>& arguments,
                                              const std::string& march) {
  GraphBuilder b;
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < functions.size(); ++k) {
    const Function& f = *functions[k];
    std::vector<ValueId> operands = {b.Input(absl::StrCat("x", k), f.dtype, {kRows, kColumns})};
    inputs.push_back(arguments[k].x);
    if (f.binary()) {
      operands.push_back(b.Input(absl::StrCat("y", k), f.dtype, {kRows, kColumns}));
      inputs.push_back(arguments[k].y);
    }
    b.Output(b.Op(f.op, operands));
    operands[0] = b.Op("neg", {b.Op("neg", {operands[0]})});
    const ValueId beside_sum = b.Op(f.op, operands);
    b.Output(beside_sum);
    b.Output(b.Op("reduce_sum", {beside_sum}, IntsAttr("axes", {-1})));
  }
  EXPECT_TRUE(InferShapes(b.graph()).ok());
  // Streamed stores would take the scalar helper's lanes (PrintStreamingLoop).
  absl::StatusOr<std::vector<Tensor>> outputs =
      CompileAndRun(b.graph(), inputs, march, /*streaming_store_min_bytes=*/-1);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  std::vector<std::vector<double>> errors;
  for (size_t k = 0; k < functions.size(); ++k) {
    errors.push_back({INFINITY, INFINITY});
    if (!outputs.ok()) continue;
    const Function& f = *functions[k];
    for (int o = 0; o < 2; ++o) {
      const Tensor& y = (*outputs)[3 * k + o];
      double worst = 0;
      for (int64_t i = 0; i < kGridSize; ++i) {
        const long double truth =
            f.truth(arguments[k].x.GetDouble(i), f.binary() ? arguments[k].y.GetDouble(i) : 0);
        worst = std::fmax(worst, Error(y.GetDouble(i), truth, f.dtype));
      }
      errors[k][o] = worst;
    }
  }
  return errors;
}

// The functions of `dtype`.
std::vector<const Function*> FunctionsOf(DType dtype) {
  std::vector<const Function*> chosen;
  for (const Function& f : Functions()) {
    if (f.dtype == dtype) chosen.push_back(&f);
  }
  return chosen;
}

// x runs evenly over [low, high], y over [-high_exponent, high_exponent]
// in another order, so that every part of one range meets every part of
// the other.
Arguments Grid(const Function& f) {
  Arguments grid{Tensor(f.dtype, {kRows, kColumns}), Tensor(f.dtype, {kRows, kColumns})};
  for (int64_t i = 0; i < kGridSize; ++i) {
    grid.x.SetDouble(i, f.low + (f.high - f.low) * i / (kGridSize - 1));
    const int64_t shuffled = i * 40503 % kGridSize;
    grid.y.SetDouble(i, f.high_exponent * (2.0 * shuffled / (kGridSize - 1) - 1));
  }
  return grid;
}

constexpr const char* kMarches[] = {"", "haswell", "x86-64", "armv8-a"};

std::string Where(const Function& f, const std::string& march) {
  return absl::StrCat(f.op, " ", DTypeName(f.dtype), " for ", march.empty() ? "native" : march);
}

TEST(VectorMathTest, ErrorsInUlpsAgainstLongDouble) {
  for (const std::string march : kMarches) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const std::vector<const Function*> functions = FunctionsOf(dtype);
      std::vector<Arguments> grids;
      for (const Function* f : functions) grids.push_back(Grid(*f));
      const std::vector<std::vector<double>> errors = MaxUlpErrors(functions, grids, march);
      for (size_t k = 0; k < functions.size(); ++k) {
        const Function& f = *functions[k];
        EXPECT_LE(errors[k][0], f.max_ulp) << Where(f, march) << ", alone";
        EXPECT_LE(errors[k][1], f.max_ulp) << Where(f, march) << ", beside a row sum";
        std::printf("%-24s max error %.2f ulp (alone), %.2f ulp (beside a row sum)\n",
                    Where(f, march).c_str(), errors[k][0], errors[k][1]);
      }
    }
  }
}

// NaN stays NaN, infinities and arguments past the overflow and underflow
// bounds give the limits (exp: infinity, denormals, 0), huge arguments of
// sin and cos are reduced exactly, and pow's special cases (C's Annex F, as
// the interpreter's std::pow) hold: at every lane, for every pair of these
// arguments. Beside the others, ±87 and just past it, where the f32
// exponential without AVX-512 changes path (loom_exp8), and 88.7, its
// largest finite result.
TEST(VectorMathTest, SpecialArgumentsGiveTheLimits) {
  const double specials[] = {NAN,   INFINITY, -INFINITY, 100.0, -100.0, -200.0, 0.0,    -0.0,
                             89.5,  -103.5,   1e-30,     1e-40, 710.0,  -746.0, 1e-310, 1e30,
                             1e300, -2.0,     3.0,       0.5,   1.0,    -1.0,   -0.5,   87.0,
                             -87.0, 87.01,    -87.01,    -87.5, 88.7,   -87.335};
  constexpr int64_t kCount = sizeof specials / sizeof specials[0];
  for (const std::string march : kMarches) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const std::vector<const Function*> functions = FunctionsOf(dtype);
      Arguments pairs{Tensor(dtype, {kRows, kColumns}), Tensor(dtype, {kRows, kColumns})};
      for (int64_t i = 0; i < kGridSize; ++i) {
        pairs.x.SetDouble(i, specials[i % kCount]);
        pairs.y.SetDouble(i, specials[i / kCount % kCount]);
      }
      const std::vector<Arguments> arguments(functions.size(), pairs);
      const std::vector<std::vector<double>> errors = MaxUlpErrors(functions, arguments, march);
      for (size_t k = 0; k < functions.size(); ++k) {
        const Function& f = *functions[k];
        EXPECT_LE(errors[k][0], f.max_ulp) << Where(f, march) << ", alone";
        EXPECT_LE(errors[k][1], f.max_ulp) << Where(f, march) << ", beside a row sum";
      }
    }
  }
}

// The functions that `graph`'s kernels, built for `march`, import.
std::vector<std::string> ImportsOf(Graph& graph, const std::string& march) {
  EXPECT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<Module> module = EmitModule(graph, march);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  if (cpp::IsAarch64March(march)) {
    absl::StatusOr<std::string> library = cpp::CompileForAarch64(*module, TestCacheDir());
    EXPECT_TRUE(library.ok()) << library.status();
    return library.ok() ? ImportedSymbols(*library) : std::vector<std::string>{};
  }
  absl::StatusOr<cpp::CompiledLibrary> library = cpp::CompileModule(*module, TestCacheDir());
  EXPECT_TRUE(library.ok()) << library.status();
  return library.ok() ? ImportedSymbols(library->library.path()) : std::vector<std::string>{};
}

// Loops calling libm's functions run in vectors: compiled for `march`, a
// loop of each function imports the vector variant that `variant` names
// (given the function's double-precision name and whether it is f32's),
// and no element calls the scalar function (the loop's length is a
// multiple of the lanes: there is no remainder loop). Where `variant`
// names none, the loop calls the scalar function.
void ExpectLibmCallsInVectors(
    const std::string& march,
    const std::function<std::string(const std::string& fn, bool f32)>& variant) {
  auto expect = [&](const std::string& fn, bool f32) {
    GraphBuilder b;
    const ValueId x = b.Input("x", f32 ? DType::kF32 : DType::kF64, {64, 64});
    b.Output(fn == "pow" ? b.Op("pow", {x, b.Op("abs", {x})}) : b.Op(fn, {x}));
    const std::vector<std::string> symbols = ImportsOf(b.graph(), march);
    const std::string vector = variant(fn, f32), scalar = f32 ? fn + "f" : fn;
    if (vector.empty()) {
      EXPECT_THAT(symbols, testing::Contains(scalar)) << march;
      return;
    }
    EXPECT_THAT(symbols, testing::Contains(vector)) << march;
    EXPECT_THAT(symbols, testing::Not(testing::Contains(scalar))) << march;
  };
  for (const char* fn : {"sin", "cos", "pow"}) expect(fn, true);
  for (const char* fn : {"exp", "log", "tanh", "erf", "sin", "cos", "pow"}) expect(fn, false);
}

// libmvec's name of `fn` on `lanes` lanes with `isa`'s letter.
std::string LibmvecName(const std::string& fn, bool f32, char isa, int lanes) {
  return absl::StrCat("_ZGV", std::string(1, isa), "N", lanes, fn == "pow" ? "vv_" : "v_", fn,
                      f32 ? "f" : "");
}

TEST(VectorMathTest, LoopsCallingLibmRunInVectors) {
  ExpectLibmCallsInVectors("haswell", [](const std::string& fn, bool f32) {
    return LibmvecName(fn, f32, 'd', f32 ? 8 : 4);  // AVX2
  });
  ExpectLibmCallsInVectors("x86-64", [](const std::string& fn, bool f32) {
    return LibmvecName(fn, f32, 'b', f32 ? 4 : 2);  // SSE2
  });
  // Advanced SIMD, where SLEEF does no more work than libm (prelude.cc).
  ExpectLibmCallsInVectors("armv8-a", [](const std::string& fn, bool f32) -> std::string {
    const bool libm = !f32 && (fn == "exp" || fn == "log" || fn == "pow" || fn == "erf");
    return libm ? "" : absl::StrCat("Sleef_", fn, f32 ? "f4" : "d2", "_u10advsimd");
  });
}

// The instructions of `graph`'s kernels compiled for `march` (empty, and a
// failure reported, where they do not compile).
std::string KernelCode(const Graph& graph, const std::string& march,
                       int64_t streaming_store_min_bytes = 4096) {
  absl::StatusOr<Module> module = EmitModule(graph, march, streaming_store_min_bytes);
  if (!module.ok()) {
    ADD_FAILURE() << module.status();
    return "";
  }
  absl::StatusOr<cpp::CompiledLibrary> library = cpp::CompileModule(*module, TestCacheDir());
  if (!library.ok()) {
    ADD_FAILURE() << library.status();
    return "";
  }
  return Disassembly(library->library.path());
}

// A loop with selects runs in vectors without AVX-512's masks: erf clamps
// its argument to [-4, 4] (two selects), then divides, and compiled for
// AVX2 or SSE2 the division is packed (divps), never one lane's (divss), as
// it was while GCC kept the FP exception flags and so left such loops
// scalar wherever it has no masks.
TEST(VectorMathTest, LoopsWithSelectsRunInVectorsWithoutMasks) {
  GraphBuilder b;
  b.Output(b.Op("erf", {b.Input("x", DType::kF32, {64, 64})}));
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  for (const char* march : {"haswell", "x86-64"}) {
    const std::string code = KernelCode(b.graph(), march);
    EXPECT_THAT(code, testing::HasSubstr("divps")) << march;
    EXPECT_THAT(code, testing::Not(testing::HasSubstr("divss"))) << march;
  }
}

// A 3x3 max pool of stride 2, a chain of nine NaN-propagating maxima over
// strided loads, runs in vectors: GCC 12 left `a > b || a != a ? a : b`
// chained so in scalar code (a compare and a branch per element).
TEST(VectorMathTest, MaxPoolWindowsRunInVectors) {
  GraphBuilder b;
  b.Output(b.Op("max_pool", {b.Input("x", DType::kF32, {1, 16, 23, 23})},
                MakeAttrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"strides", std::vector<int64_t>{2, 2}}})));
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  for (const char* march : {"haswell", "x86-64"}) {
    EXPECT_TRUE(absl::StrContains(KernelCode(b.graph(), march), "cmpunordps")) << march;
  }
}

// Without AVX, explicit vectors compare in halves of four lanes, not lane
// by lane: GCC splits a comparison of vectors wider than the target's
// registers into one scalar comparison per lane. Compiled for x86-64 (SSE2)
// and for Arm (both have 16-byte registers), a softmax (its maximum, NaN
// check and exponential's clamp) and tanh and erf (their selects) beside
// row sums leave only the three scalar comparisons that end each row's
// maximum and the one that joins its remainder's (`omp simd` keeps that
// join for a remainder of no iterations, as at 64 columns); with
// comparisons of eight lanes they were 391.
int Count(const std::string& code, const RE2& instruction) {
  re2::StringPiece rest(code);
  int count = 0;
  while (RE2::FindAndConsume(&rest, instruction)) ++count;
  return count;
}

TEST(VectorMathTest, ExplicitVectorsCompareInRegistersWithoutAvx) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {64, 64});
  const ValueId shifted = b.Op("sub", {x, b.Op("reduce_max", {x}, IntsAttr("axes", {-1}))});
  const ValueId exp = b.Op("exp", {shifted});
  b.Output(b.Op("div", {exp, b.Op("reduce_sum", {exp}, IntsAttr("axes", {-1}))}));
  for (const char* op : {"tanh", "erf"}) {
    const ValueId y = b.Op(op, {b.Op("neg", {x})});
    b.Output(y);
    b.Output(b.Op("reduce_sum", {y}, IntsAttr("axes", {-1})));
  }
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  const std::string code = KernelCode(b.graph(), "x86-64", /*streaming_store_min_bytes=*/-1);
  EXPECT_LE(Count(code, RE2(R"(\s(maxss|minss|u?comiss|cmp[a-z]*ss)\s)")), 4);
  EXPECT_GT(Count(code, RE2(R"(\s(maxps|minps|cmp[a-z]*ps)\s)")), 0);

  // And on Arm itself, where a scalar comparison (or maximum) is one of
  // single-precision registers (s0), a vector one of v0.4s: the steps that
  // end a row's maximum (each a compare and a select, fcsel) and the join
  // of its remainder's, four in all.
  absl::StatusOr<Module> arm = EmitModule(b.graph(), "armv8-a", /*streaming_store_min_bytes=*/-1);
  ASSERT_TRUE(arm.ok()) << arm.status();
  absl::StatusOr<std::string> arm_library = cpp::CompileForAarch64(*arm, TestCacheDir());
  ASSERT_TRUE(arm_library.ok()) << arm_library.status();
  const std::string arm_code = Disassembly(*arm_library, "aarch64-linux-gnu-objdump");
  EXPECT_LE(Count(arm_code, RE2(R"(\s(fcmpe?|fmaxnm|fminnm|fmax|fmin)\s+s\d)")), 4);
  EXPECT_GT(
      Count(arm_code, RE2(R"(\s(fcm[a-z]+|fmaxnm|fminnm|fmax|fmin|bsl|bit|bif)\s+v\d+\.(4s|16b))")),
      0);
}

// f32 remainders are exact, as C's fmodf is, at every lane for every
// instruction set, without a call of libm's fmodf: on random bit patterns
// (the infinities and NaNs among them), on pairs whose quotients have up to
// 60 bits, and on every pair of special values. mod's floor remainder adds
// the divisor to fmodf's where their signs differ (the interpreter's rule).
std::vector<float> FmodArguments(bool dividends) {
  const float specials[] = {0.0f,   -0.0f, INFINITY, -INFINITY, NAN,    1.0f,
                            -1.0f,  3.0f,  -2.5f,    7.0f,      1e-45f, 1e-40f,
                            1e-38f, 1e38f, 3.4e38f,  -0.75f,    1e7f,   16777217.0f};
  constexpr int64_t kCount = sizeof specials / sizeof specials[0];
  std::vector<float> values(kGridSize);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state] {  // xorshift64
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<uint32_t>(state >> 16);
  };
  for (int64_t i = 0; i < kGridSize; ++i) {
    uint32_t bits = next();
    if (i % 3 == 1) {  // a divisor's exponent up to 60 below the dividend's
      const uint32_t high = (static_cast<uint32_t>(i) * 2654435761u >> 8) % 254 + 1;
      const uint32_t low = high - std::min(high - 1, next() % 60);
      bits = (bits & 0x807fffffu) | (dividends ? high : low) << 23;
    }
    std::memcpy(&values[i], &bits, sizeof bits);
    if (i < kCount * kCount) values[i] = specials[dividends ? i / kCount : i % kCount];
  }
  return values;
}

bool SameFloat(float a, float b) {
  return std::isnan(a) ? std::isnan(b) : std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(VectorMathTest, FloatRemaindersAreExactWithoutLibm) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {kRows, kColumns});
  const ValueId y = b.Input("y", DType::kF32, {kRows, kColumns});
  b.Output(b.Op("mod", {x, y}, MakeAttrs({{"fmod", int64_t{1}}})));
  b.Output(b.Op("mod", {x, y}));
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  const std::vector<float> dividends = FmodArguments(true), divisors = FmodArguments(false);
  Tensor xs(DType::kF32, {kRows, kColumns}), ys(DType::kF32, {kRows, kColumns});
  std::memcpy(xs.data(), dividends.data(), kGridSize * sizeof(float));
  std::memcpy(ys.data(), divisors.data(), kGridSize * sizeof(float));
  for (const std::string march : kMarches) {
    absl::StatusOr<std::vector<Tensor>> outputs = CompileAndRun(b.graph(), {xs, ys}, march);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    int64_t wrong = 0;
    for (int64_t i = 0; i < kGridSize; ++i) {
      const float a = dividends[i], d = divisors[i];
      const float fmod = std::fmod(a, d);
      const float floor_mod = fmod != 0 && (fmod < 0) != (d < 0) ? fmod + d : fmod;
      const float got_fmod = static_cast<float>((*outputs)[0].GetDouble(i));
      const float got_floor_mod = static_cast<float>((*outputs)[1].GetDouble(i));
      if (SameFloat(got_fmod, fmod) && SameFloat(got_floor_mod, floor_mod)) continue;
      if (++wrong <= 5) {
        ADD_FAILURE() << absl::StrFormat("%a mod %a for %s: fmod %a (want %a), floor %a (want %a)",
                                         a, d, march.empty() ? "native" : march, got_fmod, fmod,
                                         got_floor_mod, floor_mod);
      }
    }
    EXPECT_EQ(wrong, 0) << march;
  }
  for (const std::string march : {"haswell", "x86-64"}) {
    absl::StatusOr<Module> module = EmitModule(b.graph(), march);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<cpp::CompiledLibrary> library = cpp::CompileModule(*module, TestCacheDir());
    ASSERT_TRUE(library.ok()) << library.status();
    EXPECT_THAT(ImportedSymbols(library->library.path()), testing::Not(testing::Contains("fmodf")))
        << march;
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
