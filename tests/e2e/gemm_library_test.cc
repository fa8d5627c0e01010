// Which library a matrix product calls: large f32 products of many rows call
// BLIS where the target has AVX2 but not AVX-512 (and BLIS is installed),
// and those of wide row-major weights OpenBLAS; oneDNN elsewhere and below
// the sizes (library_calls.h, MayCallBlis and MayCallOpenBlas).

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpp/artifact.h"
#include "backends/cpp/native_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/random.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

using ::testing::Contains;
using ::testing::Not;

// A product of 2^24 multiply-adds (the least that calls BLIS), one with a
// transposed second operand (a linear layer's weight), and a small one.
Graph ThreeProducts() {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {512, 256});
  b.Output(b.Op("matmul", {x, b.Weight("w", {256, 128}, 1)}));
  b.Output(b.Op("linear", {x, b.Weight("w_t", {128, 256}, 2)}));
  b.Output(b.Op("matmul", {b.Input("small", DType::kF32, {8, 16}), b.Weight("v", {16, 8}, 3)}));
  return std::move(b.graph());
}

// A product of 2^24.6 multiply-adds over only 32 rows, which oneDNN
// computes faster than BLIS (768 columns: not one for OpenBLAS either). Its
// second operand an input: a weight would be read as panels where the CPU
// has AVX-512 (passes/pack_panel_weights.h).
Graph FewRowsProduct() {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {32, 1024});
  b.Output(b.Op("matmul", {x, b.Input("w", DType::kF32, {1024, 768})}));
  return std::move(b.graph());
}

// Products that oneDNN's AVX2 kernels run at half speed (MayCallOpenBlas):
// b row-major with 1024 columns, computed at run time (here an input):
// alone, with rows enough for BLIS, and with a bias and ReLU as its
// epilogue (128 rows: each thread computes its own 64). With `weights`,
// the same products of constant weights, whose rows pad-gemm-weights pads
// (a linear layer's weight is transposed at compile time, then padded):
// oneDNN runs those well.
Graph ProductsOfWideRowMajor(bool weights) {
  GraphBuilder b;
  auto wide = [&](const char* name, int seed) {
    return weights ? b.Weight(name, {256, 1024}, seed) : b.Input(name, DType::kF32, {256, 1024});
  };
  const ValueId x = b.Input("x", DType::kF32, {64, 256});
  b.Output(b.Op("matmul", {x, wide("w", 1)}));
  const ValueId rows = b.Input("rows", DType::kF32, {256, 256});
  b.Output(b.Op("matmul", {rows, wide("u", 4)}));
  const ValueId y = b.Input("y", DType::kF32, {128, 256});
  const ValueId product = weights ? b.Op("linear", {y, b.Weight("v_t", {1024, 256}, 2)})
                                  : b.Op("matmul", {y, wide("v", 2)});
  b.Output(b.Op("relu", {b.Op("add", {product, b.Weight("bias", {1024}, 3)})}));
  return std::move(b.graph());
}

// Products of the same size that oneDNN runs well: b row-major with 768
// columns, and with 256.
Graph ProductsOneDnnRunsWell() {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {64, 512});
  b.Output(b.Op("matmul", {x, b.Weight("w", {512, 768}, 1)}));
  b.Output(b.Op("matmul", {b.Input("y", DType::kF32, {128, 1024}), b.Weight("v", {1024, 256}, 2)}));
  return std::move(b.graph());
}

// The dynamic symbols the kernels of `graph` import, compiled for `march`.
std::vector<std::string> SymbolsImportedFor(Graph graph, const std::string& march) {
  EXPECT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<Module> module = EmitModule(std::move(graph), march);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  absl::StatusOr<cpp::CompiledLibrary> library = cpp::CompileModule(*module, TestCacheDir());
  EXPECT_TRUE(library.ok()) << library.status();
  if (!library.ok()) return {};
  return ImportedSymbols(library->library.path());
}

bool BlisInstalled() {
  absl::StatusOr<std::vector<std::string>> args = cpp::BlisLinkArgs();
  return args.ok() && !args->empty();
}

TEST(GemmLibraryTest, LargeProductsCallBlisOnlyOnAvx2WithoutAvx512) {
  const std::vector<std::string> avx2 = SymbolsImportedFor(ThreeProducts(), "haswell");
  EXPECT_THAT(avx2, Contains("dnnl_sgemm"));  // the small product
  if (BlisInstalled()) {
    EXPECT_THAT(avx2, Contains("bli_sgemm"));
  } else {
    EXPECT_THAT(avx2, Not(Contains("bli_sgemm")));
    std::printf("BLIS is not installed (libblis4-openmp): every product calls oneDNN\n");
  }
  for (const char* march : {"skylake-avx512", "x86-64"}) {
    const std::vector<std::string> symbols = SymbolsImportedFor(ThreeProducts(), march);
    EXPECT_THAT(symbols, Contains("dnnl_sgemm")) << march;
    EXPECT_THAT(symbols, Not(Contains("bli_sgemm"))) << march;
  }
}

TEST(GemmLibraryTest, ProductsOfFewRowsCallOneDnnEvenOnAvx2) {
  const std::vector<std::string> avx2 = SymbolsImportedFor(FewRowsProduct(), "haswell");
  EXPECT_THAT(avx2, Contains("dnnl_sgemm"));
  EXPECT_THAT(avx2, Not(Contains("bli_sgemm")));
}

TEST(GemmLibraryTest, WideRowMajorOperandsCallOpenBlasOnlyOnAvx2WithoutAvx512) {
  const std::vector<std::string> avx2 =
      SymbolsImportedFor(ProductsOfWideRowMajor(false), "haswell");
  EXPECT_THAT(avx2, Contains("cblas_sgemm"));
  EXPECT_THAT(avx2, Not(Contains("dnnl_sgemm")));
  EXPECT_THAT(avx2, Not(Contains("bli_sgemm")));
  for (const char* march : {"skylake-avx512", "x86-64"}) {
    const std::vector<std::string> symbols =
        SymbolsImportedFor(ProductsOfWideRowMajor(false), march);
    EXPECT_THAT(symbols, Contains("dnnl_sgemm")) << march;
    EXPECT_THAT(symbols, Not(Contains("cblas_sgemm"))) << march;
  }
  EXPECT_THAT(SymbolsImportedFor(ProductsOneDnnRunsWell(), "haswell"),
              Not(Contains("cblas_sgemm")));
  EXPECT_THAT(SymbolsImportedFor(ProductsOfWideRowMajor(true), "haswell"),
              Not(Contains("cblas_sgemm")))
      << "padded weights";
}

// The options that compile for AVX2 (haswell), and whether this CPU runs
// such code.
EndToEndOptions Avx2Options() {
  EndToEndOptions options;
  options.march = "haswell";
  return options;
}
bool CpuRunsAvx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// OpenBLAS's results, alone and before an epilogue, match the
// interpreter's (where this CPU runs AVX2 code).
TEST(GemmLibraryTest, OpenBlasProductsMatchTheInterpreter) {
  if (!CpuRunsAvx2()) GTEST_SKIP() << "this CPU has no AVX2";
  EndToEndOptions options = Avx2Options();
  // The second operands (inputs 1, 3 and 5) in [-1, 1), as the weights
  // they stand for are.
  options.fill = [](size_t i, Tensor& input) {
    if (i % 2 == 1) FillUniform(input, i, -1, 1);
  };
  CompileRunAndCompare(ProductsOfWideRowMajor(false), options);
}

// Products of weights with padded rows, alone and before an epilogue,
// match the interpreter's, natively and where this CPU runs AVX2 code.
TEST(GemmLibraryTest, ProductsOfPaddedWeightsMatchTheInterpreter) {
  CompileRunAndCompare(ProductsOfWideRowMajor(true));
  if (CpuRunsAvx2()) CompileRunAndCompare(ProductsOfWideRowMajor(true), Avx2Options());
}

// BLIS's results, plain and with the transposed weight, match the
// interpreter's (where this CPU runs AVX2 code), on AMD's CPUs too, whose
// kernels call oneDNN instead unless $LOOM_BLIS_AHEAD says otherwise.
TEST(GemmLibraryTest, BlisProductsMatchTheInterpreter) {
  if (!CpuRunsAvx2()) GTEST_SKIP() << "this CPU has no AVX2";
  setenv("LOOM_BLIS_AHEAD", "1", /*overwrite=*/1);
  CompileRunAndCompare(ThreeProducts(), Avx2Options());
  unsetenv("LOOM_BLIS_AHEAD");
}

}  // namespace
}  // namespace loom
