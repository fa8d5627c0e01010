#include "backends/cpp/codegen.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cpp/shape_templates.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "passes/lower.h"
#include "scheduler/fuse.h"
#include "scheduler/schedule_pass.h"

namespace loom::cpp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// x -> add(v, v) -> add(v, v) -> ... (`depth` times): each value is read
// twice, so every add is a kernel of its own.
Graph DoublingChain(int depth, const std::string& name_prefix = "double") {
  Graph graph;
  ValueId value = *graph.AddInput("x", TensorType{DType::kF32, {4, 8}});
  for (int i = 0; i < depth; ++i) {
    const std::string name = absl::StrCat(name_prefix, i);
    const NodeId node = *graph.AddNode(name, "add", {value, value}, {name + ".y"});
    value = graph.node(node).outputs[0];
  }
  graph.AddOutput(value);
  EXPECT_TRUE(InferShapes(graph).ok());
  return graph;
}

GeneratedSource Emit(const Graph& graph, const proto::CppOptions& options = {}) {
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_TRUE(program.ok()) << program.status();
  absl::StatusOr<Schedule> schedule = ScheduleProgram(*program);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return EmitCpp(*program, *schedule, options);
}

TEST(CodegenTest, AGemmKernelCallsALibraryPerBatchPosition) {
  Graph graph;
  const ValueId a = *graph.AddInput("a", TensorType{DType::kF32, {4, 16, 8}});
  const ValueId b = *graph.AddInput("b", TensorType{DType::kF32, {4, 8, 32}});
  const NodeId mm = *graph.AddNode("mm", "matmul", {a, b}, {"c"});
  graph.AddOutput(graph.node(mm).outputs[0]);
  const ValueId d = *graph.AddInput("d", TensorType{DType::kF64, {16, 8}});
  const ValueId e = *graph.AddInput("e", TensorType{DType::kF64, {8, 32}});
  const NodeId mm64 = *graph.AddNode("mm64", "matmul", {d, e}, {"f"});
  graph.AddOutput(graph.node(mm64).outputs[0]);
  ASSERT_TRUE(InferShapes(graph).ok());
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  const GeneratedSource source = Emit(graph, openmp);
  EXPECT_TRUE(source.calls_dnnl);
  EXPECT_TRUE(source.calls_blas);
  // The threads share the batch: whole calls when each gets as many, else a
  // block of every call's rows; each call is serial, in one parallel region.
  EXPECT_THAT(
      source.text,
      HasSubstr("  const int loom_split = 4 % loom_threads == 0 || 4 >= 4 * loom_threads;\n"
                "#if LOOM_BLIS\n"
                "  bli_thread_set_num_threads(1);\n"
                "#endif\n"
                "  #pragma omp parallel\n"
                "  {\n"
                "    const int64_t loom_blocks = loom_split ? 1 : loom_threads < 16 ? "
                "loom_threads : 16;\n"
                "    #pragma omp for collapse(2)\n"
                "    for (int64_t x0 = 0; x0 < 4; ++x0) {\n"
                "      for (int64_t r = 0; r < loom_blocks; ++r) {\n"
                "        const int64_t loom_first = 16 * r / loom_blocks;\n"
                "        const int64_t loom_last = 16 * (r + 1) / loom_blocks;\n"
                "#if LOOM_BLIS\n"
                "        if (loom_blis_ahead && 16 >= 256 && (int64_t)16 * 32 * 8 >= 16777216) {\n"
                "          bli_sgemm(0, 0, loom_last - loom_first, 32, 8, &loom_blis_one, "
                "p0 + loom_first * 8 + x0 * 128, 8, 1, p1 + x0 * 256, 32, 1, "
                "&loom_blis_zero, p2 + loom_first * 32 + x0 * 512, 32, 1);\n"
                "        } else\n"
                "#endif\n"
                "        {\n"
                "          dnnl_sgemm('N', 'N', loom_last - loom_first, 32, 8, 1.0f, "
                "p0 + loom_first * 8 + x0 * 128, 8, p1 + x0 * 256, 32, 0.0f, "
                "p2 + loom_first * 32 + x0 * 512, 32);\n"
                "        }\n"
                "      }\n"
                "    }\n"
                "  }\n"));
  // A product of 2^12 multiply-adds runs on one thread (RunsAlone),
  // decided as it runs.
  EXPECT_THAT(source.text, HasSubstr("  const bool loom_alone = (int64_t)16 * 32 * 8 < 1048576;\n"
                                     "  if (loom_alone) omp_set_num_threads(1);\n"
                                     "  cblas_dgemm(101, 111, 111, 16, 32, 8, 1.0, p0, 8, p1, 32, "
                                     "0.0, p2, 32);\n"
                                     "  if (loom_alone) omp_set_num_threads(loom_threads);\n"));
  EXPECT_THAT(source.function_plans[1], HasSubstr("on one thread"));
  const GeneratedSource plain = Emit(DoublingChain(2));
  EXPECT_FALSE(plain.calls_blas || plain.calls_dnnl);
}

// A batch of products of few rows by a weight's panels
// (passes/pack_panel_weights.h) is one loom_panel_gemm call, no library.
TEST(CodegenTest, ProductsByPanelsCallLoomPanelGemm) {
  Graph graph;
  const ValueId a = *graph.AddInput("a", TensorType{DType::kF32, {8, 256}});
  const ValueId panels = *graph.AddInput("panels", TensorType{DType::kF32, {5, 256, 16}});
  const NodeId mm = *graph.AddNode("mm", "matmul", {a, panels}, {"c"});
  graph.AddOutput(graph.node(mm).outputs[0]);
  ASSERT_TRUE(InferShapes(graph).ok());
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  const GeneratedSource source = Emit(graph, openmp);
  EXPECT_FALSE(source.calls_dnnl);
  EXPECT_THAT(source.text, HasSubstr("static __attribute__((noinline)) void loom_panel_gemm("));
  EXPECT_THAT(source.text, HasSubstr("  loom_panel_gemm(8, 256, 5, p0, 256, p1, p2);\n"));
  EXPECT_THAT(Emit(DoublingChain(2)).text, Not(HasSubstr("loom_panel_gemm")));
}

// c = a * b, [rows, 8] x [8, columns].
GeneratedSource EmitProduct(int64_t rows, int64_t columns, const proto::CppOptions& options) {
  Graph graph;
  const ValueId a = *graph.AddInput("a", TensorType{DType::kF32, {rows, 8}});
  const ValueId b = *graph.AddInput("b", TensorType{DType::kF32, {8, columns}});
  const NodeId mm = *graph.AddNode("mm", "matmul", {a, b}, {"c"});
  graph.AddOutput(graph.node(mm).outputs[0]);
  EXPECT_TRUE(InferShapes(graph).ok());
  return Emit(graph, options);
}

TEST(CodegenTest, AProductOfManyRowsComputesALastColumnPastSixteenApart) {
  // 49 columns, as a 1x1 conv on 7x7 makes: 48, then 1, from 192 rows on,
  // decided as the call runs.
  for (const int64_t rows : {192, 128}) {
    EXPECT_THAT(EmitProduct(rows, 49, {}).text,
                HasSubstr(absl::StrCat("    if (", rows,
                                       " >= 192) {\n"
                                       "      dnnl_sgemm('N', 'N', ",
                                       rows,
                                       ", 48, 8, 1.0f, p0, 8, p1, 49, 0.0f, p2, 49);\n"
                                       "      dnnl_sgemm('N', 'N', ",
                                       rows,
                                       ", 1, 8, 1.0f, p0, 8, p1 + 48, 49, 0.0f, "
                                       "p2 + 48, 49);\n"
                                       "    } else {\n"
                                       "      dnnl_sgemm('N', 'N', ",
                                       rows,
                                       ", 49, 8, 1.0f, p0, 8, p1, 49, 0.0f, p2, 49);\n"
                                       "    }\n")))
        << rows;
  }
  // Columns that end on a multiple of 16 or before 16: one call.
  for (const int64_t columns : {48, 50, 1}) {
    const std::string text = EmitProduct(192, columns, {}).text;
    EXPECT_THAT(text, HasSubstr(absl::StrCat("    dnnl_sgemm('N', 'N', 192, ", columns, ", 8,")))
        << columns;
    EXPECT_EQ(text.find("dnnl_sgemm(", text.find("dnnl_sgemm('N'") + 1), std::string::npos)
        << columns << ": one call";
  }
}

// y = relu(x * w + bias) on `rows` rows, `width` columns, `depth` deep.
Graph LinearRelu(int64_t width = 32, int64_t depth = 16, int64_t rows = 128) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {rows, depth}});
  const ValueId w = *graph.AddInput("w", TensorType{DType::kF32, {depth, width}});
  const ValueId bias = *graph.AddInput("bias", TensorType{DType::kF32, {width}});
  const NodeId product = *graph.AddNode("matmul", "matmul", {x, w}, {"product"});
  const NodeId add = *graph.AddNode("add", "add", {graph.node(product).outputs[0], bias}, {"sum"});
  const NodeId relu = *graph.AddNode("relu", "relu", {graph.node(add).outputs[0]}, {"y"});
  graph.AddOutput(graph.node(relu).outputs[0]);
  EXPECT_TRUE(InferShapes(graph).ok());
  return graph;
}

TEST(CodegenTest, TheKernelAfterAGemmRunsOnEachThreadsRows) {
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  const GeneratedSource source = Emit(LinearRelu(), openmp);
  EXPECT_EQ(source.kernel_functions, 1);
  EXPECT_EQ(source.launches.size(), 1);
  EXPECT_THAT(source.text,
              HasSubstr("      {\n"
                        "        dnnl_sgemm('N', 'N', loom_last - loom_first, 32, 16, 1.0f, "
                        "g0 + loom_first * 16, 16, g1, 32, 0.0f, g2 + loom_first * 32, 32);\n"
                        "      }\n"
                        "      #pragma omp barrier\n"
                        "    }\n"
                        "    for (int64_t x0 = loom_first; x0 < loom_last; ++x0) {\n"));
  // Apart, or with no threads to share, the epilogue is a kernel of its own.
  proto::CppOptions apart = openmp;
  apart.set_gemm_epilogue_apart(true);
  for (const proto::CppOptions& options : {apart, proto::CppOptions()}) {
    const GeneratedSource two = Emit(LinearRelu(), options);
    EXPECT_EQ(two.kernel_functions, 2);
    EXPECT_THAT(two.text, Not(HasSubstr("loom_per_thread")));
  }
}

// Too few rows for each thread's block, the library shares the product and
// the threads the epilogue, as the kernel decides when it runs: the code is
// the same as for many rows but for the shape constants.
TEST(CodegenTest, AGemmOfFewRowsKeepsItsEpilogueAndDecidesAsItRuns) {
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  const GeneratedSource few = Emit(LinearRelu(32, 16, /*rows=*/8), openmp);
  EXPECT_EQ(few.kernel_functions, 1);
  EXPECT_THAT(few.text, HasSubstr("  if (!loom_per_thread) {\n"
                                  "    const bool loom_alone = (int64_t)8 * 32 * 16 < 1048576;\n"
                                  "    if (loom_alone) omp_set_num_threads(1);\n"));
  EXPECT_THAT(few.text,
              HasSubstr("  if (!loom_per_thread && !((int64_t)8 * 32 > 1 && "
                        "((int64_t)8 * 32 >= 65536 || (int64_t)8 * 32 * 4 >= 262144))) {\n"));
  EXPECT_THAT(few.text, HasSubstr("    const int64_t loom_first = 0;\n"
                                  "    const int64_t loom_last = 8;\n"
                                  "    for (int64_t x0 = loom_first; x0 < loom_last; ++x0) {\n"));
  const GeneratedSource many = Emit(LinearRelu(32, 16, /*rows=*/1024), openmp);
  EXPECT_EQ(Skeleton(few), Skeleton(many));
}

TEST(CodegenTest, AGemmWithASlowLeadingDimensionNeedsMoreRowsPerThread) {
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  // 64 rows a thread on two threads, but 128 where w's rows are 1024 long
  // and it has 2^20 elements.
  for (const auto& [width, depth] : {std::pair{32, 16}, {1024, 16}, {1000, 1024}}) {
    EXPECT_THAT(Emit(LinearRelu(width, depth), openmp).text,
                HasSubstr("const int loom_per_thread = 128 >= 64 * loom_threads"))
        << width << "x" << depth;
  }
  EXPECT_THAT(Emit(LinearRelu(1024, 1024), openmp).text,
              HasSubstr("const int loom_per_thread = 128 >= 128 * loom_threads;\n"));
}

// Where the target has AVX2 but not AVX-512, one library call on every
// thread shares a deep product with 256 to 511 rows a thread
// (library_calls.cc, kSharesMinDepth), as the kernel decides when it runs;
// BLIS takes it only where it runs ahead of oneDNN.
TEST(CodegenTest, ADeepProductOfManyRowsIsSharedOnAvx2) {
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  const std::string text = Emit(LinearRelu(768, 768, /*rows=*/512), openmp).text;
  EXPECT_THAT(text, HasSubstr("const int loom_per_thread = 512 >= 64 * loom_threads && "
                              "!(LOOM_AVX2_ONLY && 768 >= 768 && 512 >= 256 * loom_threads && "
                              "512 < 512 * loom_threads);\n"));
  EXPECT_THAT(text, HasSubstr("if (loom_blis_ahead && 512 >= 256 && "));
}

TEST(CodegenTest, AThreadsBlockOfRowsDecidesAtRunTimeOnItsLastColumn) {
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  EXPECT_THAT(Emit(LinearRelu(49), openmp).text,
              HasSubstr("        if (loom_last - loom_first >= 192) {\n"
                        "          dnnl_sgemm('N', 'N', loom_last - loom_first, 48, 16, 1.0f, "
                        "g0 + loom_first * 16, 16, g1, 49, 0.0f, g2 + loom_first * 49, 49);\n"
                        "          dnnl_sgemm('N', 'N', loom_last - loom_first, 1, 16, 1.0f, "
                        "g0 + loom_first * 16, 16, g1 + 48, 49, 0.0f, g2 + loom_first * 49 + 48, "
                        "49);\n"
                        "        } else {\n"
                        "          dnnl_sgemm('N', 'N', loom_last - loom_first, 49, 16, 1.0f, "
                        "g0 + loom_first * 16, 16, g1, 49, 0.0f, g2 + loom_first * 49, 49);\n"
                        "        }\n"));
}

// A kernel's threads share its rows from about 2^18 steps of work, a
// function of libm's counting as many: 64 x 64 elements of four tanh and
// sigmoid each (an LSTM cell has five) are shared, four adds are not.
TEST(CodegenTest, TranscendentalFunctionsCountAsMoreWorkForTheThreads) {
  proto::CppOptions openmp;
  openmp.set_openmp(true);
  const auto chain = [&](std::vector<const char*> ops) {
    Graph graph;
    ValueId value = *graph.AddInput("x", TensorType{DType::kF32, {64, 64}});
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::string name = absl::StrCat("op", i);
      const bool binary = std::string(ops[i]) == "add";
      const NodeId node = *graph.AddNode(
          name, ops[i], binary ? std::vector<ValueId>{value, value} : std::vector<ValueId>{value},
          {name + ".y"});
      value = graph.node(node).outputs[0];
    }
    graph.AddOutput(value);
    EXPECT_TRUE(InferShapes(graph).ok());
    return Emit(graph, openmp);
  };
  const GeneratedSource shared = chain({"tanh", "sigmoid", "tanh", "sigmoid"});
  EXPECT_THAT(shared.function_plans[0], HasSubstr("threads share: outer loops"));
  EXPECT_THAT(chain({"add", "add", "add", "add"}).function_plans[0],
              HasSubstr("threads share: nothing"));
  // The kernel decides as it runs, by the same rule: its code is the same
  // for every shape.
  EXPECT_THAT(shared.text, HasSubstr("  if ((int64_t)64 * 64 > 1 && ((int64_t)64 * 64 >= "
                                     "65536 || (int64_t)64 * 64 * 65 >= 262144)) {\n"
                                     "    #pragma omp parallel for\n"));
}

TEST(CodegenTest, IdenticalKernelsShareOneFunction) {
  const GeneratedSource source = Emit(DoublingChain(5));
  EXPECT_EQ(source.kernel_functions, 1);
  EXPECT_EQ(source.functions, std::vector<std::string>{"loom_f0"});
  EXPECT_THAT(source.text, HasSubstr("extern \"C\" void loom_f0(void* const* a)"));
  EXPECT_EQ(source.launches.size(), 5);
}

TEST(CodegenTest, ConstantOffsetsMoveIntoTheArguments) {
  // Two halves of x, each scaled by 2 into an output of its own: one
  // function, called at offsets 0 and 16.
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {2, 16}});
  Tensor two(DType::kF32, {});
  two.SetDouble(0, 2);
  const ValueId c = *graph.AddInitializer("two", ValueKind::kConstant, two);
  for (int half = 0; half < 2; ++half) {
    Attrs attrs;
    attrs.Set("starts", std::vector<int64_t>{half});
    attrs.Set("ends", std::vector<int64_t>{half + 1});
    const NodeId slice = *graph.AddNode(absl::StrCat("s", half), "slice", {x},
                                        {absl::StrCat("s", half, ".y")}, attrs);
    const NodeId mul =
        *graph.AddNode(absl::StrCat("m", half), "mul", {graph.node(slice).outputs[0], c},
                       {absl::StrCat("m", half, ".y")});
    graph.AddOutput(graph.node(mul).outputs[0]);
  }
  ASSERT_TRUE(InferShapes(graph).ok());
  const GeneratedSource source = Emit(graph);
  EXPECT_EQ(source.kernel_functions, 1);
  ASSERT_EQ(source.launches.size(), 2);
  // Each launch passes (x + offset, output).
  EXPECT_EQ(source.launches.args[0].offset, 0);
  EXPECT_EQ(source.launches.args[2].offset, 16);
}

TEST(CodegenTest, OutputIsDeterministic) {
  EXPECT_EQ(Emit(DoublingChain(3)).text, Emit(DoublingChain(3)).text);
}

TEST(CodegenTest, ModelNamesNeverReachTheSource) {
  const GeneratedSource source = Emit(DoublingChain(1, "evil\n#include </etc/passwd> */"));
  EXPECT_THAT(source.text, Not(HasSubstr("evil")));
}

TEST(CodegenTest, SimdAndOpenMpOptionsChooseNativeFlags) {
  Graph graph = DoublingChain(1);
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  absl::StatusOr<Schedule> schedule = ScheduleProgram(*program);
  proto::CppOptions scalar;
  scalar.set_simd(proto::CppOptions::SCALAR);
  scalar.set_openmp(true);
  scalar.set_opt_level(3);
  const GeneratedSource source = EmitCpp(*program, *schedule, scalar);
  EXPECT_THAT(source.native_flags, testing::Contains("-O3"));
  EXPECT_THAT(source.native_flags, testing::Contains("-fopenmp"));
  EXPECT_THAT(source.native_flags, testing::Contains("-fno-tree-vectorize"));
  EXPECT_THAT(source.native_flags, Not(testing::Contains("-march=native")));
}

// One node `op` over inputs of `types`, one output.
Graph OneOp(const std::string& op, const std::vector<TensorType>& types, Attrs attrs = {}) {
  Graph graph;
  std::vector<ValueId> inputs;
  for (size_t i = 0; i < types.size(); ++i) {
    inputs.push_back(*graph.AddInput(absl::StrCat("in", i), types[i]));
  }
  const NodeId node = *graph.AddNode("node", op, std::move(inputs), {"y"}, std::move(attrs));
  graph.AddOutput(graph.node(node).outputs[0]);
  EXPECT_TRUE(InferShapes(graph).ok()) << InferShapes(graph);
  return graph;
}

TEST(CodegenTest, HelpersAreEmittedOnlyWhenAKernelCallsThem) {
  EXPECT_THAT(Emit(DoublingChain(1)).text, Not(HasSubstr("loom_imod")));
  const TensorType ints{DType::kI32, {4}};
  const std::string mod = Emit(OneOp("mod", {ints, ints})).text;
  EXPECT_THAT(mod, HasSubstr("static inline int64_t loom_imod("));
  EXPECT_THAT(mod, HasSubstr("= (int32_t)loom_imod(t0, t1);"));
  EXPECT_THAT(mod, Not(HasSubstr("loom_ifmod")));
  Attrs fmod;
  fmod.Set("fmod", int64_t{1});
  const TensorType floats{DType::kF32, {4}};
  const std::string f32_fmod = Emit(OneOp("mod", {floats, floats}, fmod)).text;
  EXPECT_THAT(f32_fmod, HasSubstr("= (float)loom_fmodf(t0, t1);"));
  EXPECT_THAT(f32_fmod, Not(HasSubstr("loom_floor_modf")));
  EXPECT_THAT(Emit(OneOp("mod", {floats, floats})).text,
              HasSubstr("= (float)loom_floor_modf(t0, t1);"));
  const TensorType doubles{DType::kF64, {4}};
  EXPECT_THAT(Emit(OneOp("mod", {doubles, doubles}, fmod)).text, HasSubstr("= fmod(t0, t1);"));
}

// Loops calling libm functions that libmvec has vector variants of declare
// those functions with GCC's simd attribute, and only those; loom's own f32
// exponential needs none.
TEST(CodegenTest, LibmFunctionsWithVectorVariantsAreDeclaredSimd) {
  const TensorType floats{DType::kF32, {64}}, doubles{DType::kF64, {64}};
  const std::string sin = Emit(OneOp("sin", {floats})).text;
  EXPECT_THAT(sin, HasSubstr("#if defined(__x86_64__) && !defined(__clang__) && "
                             "defined(__GLIBC__) && \\\n"
                             "    (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)\n"
                             "extern \"C\" float sinf(float) noexcept "
                             "__attribute__((simd(\"notinbranch\")));\n#elif "));
  // On Arm: SLEEF's function for 4 lanes, behind a wrapper called with the
  // vector procedure call standard, and only the 4 lanes declared.
  EXPECT_THAT(sin, HasSubstr("defined(__aarch64__) && !defined(__clang__) && "
                             "defined(LOOM_HAVE_SLEEF)\n"
                             "#include <arm_neon.h>\n"
                             "extern \"C\" float32x4_t Sleef_sinf4_u10advsimd(float32x4_t x);\n"
                             "extern \"C\" __attribute__((aarch64_vector_pcs, "
                             "visibility(\"hidden\"))) float32x4_t _ZGVnN4v_sinf(float32x4_t x) {\n"
                             "  return Sleef_sinf4_u10advsimd(x);\n}\n"
                             "#pragma omp declare simd simdlen(4) notinbranch\n"
                             "extern \"C\" float sinf(float) noexcept;\n#endif\n"));
  const std::string pow = Emit(OneOp("pow", {doubles, doubles})).text;
  EXPECT_THAT(pow, HasSubstr("extern \"C\" double pow(double, double) noexcept "
                             "__attribute__((simd(\"notinbranch\")));"));
  // f64 pow stays a libm call on Arm (SLEEF's does more work); f32's does not.
  EXPECT_THAT(pow, Not(HasSubstr("Sleef_")));
  EXPECT_THAT(Emit(OneOp("pow", {floats, floats})).text,
              HasSubstr("float32x4_t _ZGVnN4vv_powf(float32x4_t x, float32x4_t y) {\n"
                        "  return Sleef_powf4_u10advsimd(x, y);\n}\n"
                        "#pragma omp declare simd simdlen(4) notinbranch\n"));
  EXPECT_THAT(Emit(OneOp("sigmoid", {doubles})).text,
              HasSubstr("extern \"C\" double exp(double) noexcept"));
  EXPECT_THAT(Emit(OneOp("exp", {floats})).text, Not(HasSubstr("simd(")));
  EXPECT_THAT(Emit(DoublingChain(1)).text, Not(HasSubstr("simd(")));
}

TEST(CodegenTest, RoundIsHalfToEvenAndReluKeepsNan) {
  const TensorType floats{DType::kF32, {4}};
  EXPECT_THAT(Emit(OneOp("round", {floats})).text, HasSubstr("= rintf(t0);"));
  EXPECT_THAT(Emit(OneOp("relu", {floats})).text, HasSubstr("= (t0 < 0 ? (float)0 : t0);"));
}

TEST(CodegenTest, IntegerConstantsSaturateLikeACast) {
  Attrs pad;
  pad.Set("pads", std::vector<int64_t>{1, 0});
  pad.Set("value", 1e10);
  const std::string text = Emit(OneOp("pad", {{DType::kI32, {3}}}, pad)).text;
  EXPECT_THAT(text, HasSubstr("const int32_t t0 = INT32_MAX;"));
}

TEST(CodegenTest, ArgReductionsTrackThePosition) {
  Attrs attrs;
  attrs.Set("axis", int64_t{-1});
  attrs.Set("select_last_index", int64_t{1});
  const std::string text = Emit(OneOp("argmax", {{DType::kF32, {3, 5}}}, attrs)).text;
  EXPECT_THAT(text, HasSubstr("float acc0 = (float)(-INFINITY);"));
  EXPECT_THAT(text, HasSubstr("int64_t arg0 = 0;"));
  EXPECT_THAT(text, HasSubstr("if (t0 >= acc0 || t0 != t0) { acc0 = t0; arg0 = x2; }"));
  EXPECT_THAT(text, HasSubstr("] = arg0;"));
}

TEST(CodegenTest, GatherIsAnIndirectLoadAndCumsumReadsLoopPositions) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {4, 5}});
  Tensor indices(DType::kI64, {2});
  indices.SetInt(0, 3);
  indices.SetInt(1, 1);
  const ValueId idx = *graph.AddInitializer("idx", ValueKind::kWeight, std::move(indices));
  graph.AddNode("g", "gather", {x, idx}, {"y"}).value();
  Attrs axis;
  axis.Set("axis", int64_t{1});
  graph.AddNode("c", "cumsum", {x}, {"z"}, axis).value();
  graph.AddOutput(graph.FindValue("y"));
  graph.AddOutput(graph.FindValue("z"));
  ASSERT_TRUE(InferShapes(graph).ok());
  const std::string text = Emit(graph).text;
  EXPECT_THAT(text, HasSubstr("const float t1 = p1[x1 + 5 * (int64_t)t0];"));
  EXPECT_THAT(text, HasSubstr("const int64_t t1 = x2;"));
  EXPECT_THAT(text, HasSubstr("const int64_t t2 = x1;"));
}

// The source of `graph` (shapes inferred here) lowered and fused with
// outer-loop fusion, which must make `kernels` kernels.
GeneratedSource EmitFusedSource(Graph& graph, const proto::CppOptions& options,
                                size_t kernels = 1) {
  EXPECT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  EXPECT_TRUE(program.ok()) << program.status();
  absl::StatusOr<Schedule> unfused = ScheduleProgram(*program);
  EXPECT_TRUE(unfused.ok()) << unfused.status();
  proto::FuseOptions fuse;
  fuse.set_outer_loop(true);
  absl::StatusOr<Schedule> schedule = FuseSchedule(*program, *unfused, fuse);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(schedule->kernels.size(), kernels);
  return EmitCpp(*program, *schedule, options);
}

std::string EmitFused(Graph& graph, const proto::CppOptions& options) {
  return EmitFusedSource(graph, options).text;
}

// x - max(x) over rows of `shape` fused into one nest: the subtraction is
// an inner loop inside the outer loop over rows. With `exp`, its
// exponential instead (softmax's numerator).
std::string EmitCenteredRows(Shape shape, DType dtype, const proto::CppOptions& options,
                             bool exp = false) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{dtype, shape});
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{1});
  attrs.Set("keepdims", int64_t{1});
  const NodeId max = *graph.AddNode("max", "reduce_max", {x}, {"max.y"}, attrs);
  ValueId y = graph.node(*graph.AddNode("sub", "sub", {x, graph.node(max).outputs[0]}, {"sub.y"}))
                  .outputs[0];
  if (exp) y = graph.node(*graph.AddNode("exp", "exp", {y}, {"exp.y"})).outputs[0];
  graph.AddOutput(y);
  return EmitFused(graph, options);
}

TEST(CodegenTest, LargeOutputsAreStoredAroundTheCachesInWholeLines) {
  proto::CppOptions options;
  options.set_streaming_store_min_bytes(1);
  const std::string text = EmitCenteredRows({8, 64}, DType::kF32, options);
  EXPECT_THAT(text, HasSubstr("for (int64_t x1r = 0; x1r < 64; x1r += 16) {"));
  EXPECT_THAT(text, HasSubstr("loom_lanes[x1 - x1r] = "));
  EXPECT_THAT(text, HasSubstr("loom_stream16(&p1[(64*x0 + x1r)], loom_lanes);"));
  EXPECT_THAT(text, HasSubstr("loom_stream_fence();"));
  EXPECT_THAT(text, HasSubstr("static inline void loom_stream16("));
  // Outputs below the threshold (by default 16 MiB for the model's outputs) stay in the caches.
  EXPECT_THAT(EmitCenteredRows({8, 64}, DType::kF32, proto::CppOptions()),
              Not(HasSubstr("loom_stream")));
  options.set_streaming_store_min_bytes(-1);
  EXPECT_THAT(EmitCenteredRows({8, 64}, DType::kF32, options), Not(HasSubstr("loom_stream")));
}

// By default a model's output streams from 16 MiB, and a buffer that a
// later kernel reads (here a product's operand) from 64 MiB.
TEST(CodegenTest, OutputsStreamFrom16MiBAndBuffersOthersReadFrom64MiB) {
  EXPECT_THAT(EmitCenteredRows({4096, 1024}, DType::kF32, proto::CppOptions()),
              HasSubstr("loom_stream16(&"));
  EXPECT_THAT(EmitCenteredRows({4096, 1023}, DType::kF32, proto::CppOptions()),
              Not(HasSubstr("loom_stream16(&")));
  auto centered_times_w = [](int64_t rows) {
    Graph graph;
    const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {rows, 1024}});
    const ValueId w = *graph.AddInput("w", TensorType{DType::kF32, {1024, 16}});
    Attrs attrs;
    attrs.Set("axes", std::vector<int64_t>{1});
    attrs.Set("keepdims", int64_t{1});
    const NodeId max = *graph.AddNode("max", "reduce_max", {x}, {"max.y"}, attrs);
    const NodeId sub = *graph.AddNode("sub", "sub", {x, graph.node(max).outputs[0]}, {"sub.y"});
    const NodeId mm = *graph.AddNode("mm", "matmul", {graph.node(sub).outputs[0], w}, {"y"});
    graph.AddOutput(graph.node(mm).outputs[0]);
    return EmitFusedSource(graph, proto::CppOptions(), /*kernels=*/2).text;
  };
  EXPECT_THAT(centered_times_w(4096), Not(HasSubstr("loom_stream16(&")));
  EXPECT_THAT(centered_times_w(16384), HasSubstr("loom_stream16(&"));
}

TEST(CodegenTest, StreamingNeedsWholeAlignedLinesOfFloats) {
  proto::CppOptions options;
  options.set_streaming_store_min_bytes(1);
  // Rows of 40 floats: no run of 16 starts every row on a line boundary.
  EXPECT_THAT(EmitCenteredRows({8, 40}, DType::kF32, options), Not(HasSubstr("loom_stream")));
  EXPECT_THAT(EmitCenteredRows({8, 64}, DType::kF64, options), Not(HasSubstr("loom_stream")));
  options.set_simd(proto::CppOptions::SCALAR);
  EXPECT_THAT(EmitCenteredRows({8, 64}, DType::kF32, options), Not(HasSubstr("loom_stream")));
}

TEST(CodegenTest, AnExponentialInAnInnerLoopRunsInExplicitVectors) {
  const std::string text =
      EmitCenteredRows({8, 37}, DType::kF32, proto::CppOptions(), /*exp=*/true);
  // Runs of 16 lanes over 32 of the 37 columns, then the rest one by one.
  EXPECT_THAT(text, HasSubstr("for (int64_t x1 = 0; x1 < 37 / 16 * 16; x1 += 16) {\n"
                              "      __builtin_prefetch(&p0[(37*(x0 + 1) + x1)]);\n"
                              "      const loom_f32v16 t1 = loom_load16(&p0[(37*x0 + x1)]);\n"
                              "      const loom_f32v16 t2 = loom_splat16(acc0);\n"
                              "      const loom_f32v16 t3 = t1 - t2;\n"
                              "      const loom_f32v16 t4 = loom_exp16(t3);\n"
                              "      loom_store16(&p1[(37*x0 + x1)], t4);\n"));
  EXPECT_THAT(text, HasSubstr("for (int64_t x1 = 37 / 16 * 16; x1 < 37; ++x1) {"));
  EXPECT_THAT(text, HasSubstr("static inline loom_f32v16 loom_exp16("));
  EXPECT_THAT(text, HasSubstr("static inline float loom_expf("));
  // Not for doubles, for scalar code, or for a loop without an exponential.
  EXPECT_THAT(EmitCenteredRows({8, 37}, DType::kF64, proto::CppOptions(), /*exp=*/true),
              Not(HasSubstr("loom_f32v16")));
  proto::CppOptions scalar;
  scalar.set_simd(proto::CppOptions::SCALAR);
  EXPECT_THAT(EmitCenteredRows({8, 37}, DType::kF32, scalar, /*exp=*/true),
              Not(HasSubstr("loom_f32v16")));
  EXPECT_THAT(EmitCenteredRows({8, 64}, DType::kF32, proto::CppOptions()),
              Not(HasSubstr("loom_store16(&")));
}

// Softmax over rows of `shape` from its primitives, fused into one nest.
GeneratedSource EmitSoftmaxRowsSource(Shape shape,
                                      const proto::CppOptions& options = proto::CppOptions()) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, shape});
  Attrs rows;
  rows.Set("axes", std::vector<int64_t>{1});
  rows.Set("keepdims", int64_t{1});
  auto add = [&](const std::string& name, const char* op, std::vector<ValueId> inputs,
                 const Attrs& attrs = Attrs()) {
    return graph.node(*graph.AddNode(name, op, inputs, {name + ".y"}, attrs)).outputs[0];
  };
  const ValueId max = add("max", "reduce_max", {x}, rows);
  const ValueId exp = add("exp", "exp", {add("sub", "sub", {x, max})});
  graph.AddOutput(add("div", "div", {exp, add("sum", "reduce_sum", {exp}, rows)}));
  return EmitFusedSource(graph, options);
}

std::string EmitSoftmaxRows(Shape shape, const proto::CppOptions& options = proto::CppOptions()) {
  return EmitSoftmaxRowsSource(shape, options).text;
}

TEST(CodegenTest, EachThreadFencesItsStreamingStoresOnceAndPrefetchesNone) {
  proto::CppOptions options;
  options.set_openmp(true);
  options.set_streaming_store_min_bytes(1);
  const std::string text = EmitSoftmaxRows({1024, 64}, options);
  EXPECT_THAT(text, HasSubstr("  #pragma omp parallel\n"
                              "  {\n"
                              "    #pragma omp for nowait\n"
                              "    for (int64_t x0 = 0; x0 < 1024; ++x0) {\n"));
  EXPECT_THAT(text, HasSubstr("        loom_stream16(&p1[(64*x0 + x1r)], loom_lanes);\n"
                              "      }\n"
                              "    }\n"
                              "    loom_stream_fence();\n"
                              "  }\n"
                              "}\n"));
  EXPECT_THAT(text, HasSubstr("__builtin_prefetch(&p0["));
  EXPECT_THAT(text, Not(HasSubstr("__builtin_prefetch(&p1[")));
  // Without threads, one fence after the loops.
  options.set_openmp(false);
  EXPECT_THAT(EmitSoftmaxRows({1024, 64}, options), HasSubstr("    }\n"
                                                              "  }\n"
                                                              "  loom_stream_fence();\n"
                                                              "}\n"));
}

// The plan says why each member runs as it does; dumps show it before the
// function, the emitted source never.
TEST(CodegenTest, ThePlanOfEachFunctionShowsInDumpsOnly) {
  const GeneratedSource source = EmitSoftmaxRowsSource({8, 37});
  ASSERT_EQ(source.function_plans.size(), source.functions.size());
  const std::string& plan = source.function_plans[0];
  EXPECT_THAT(plan, HasSubstr(": 4 members, outer loops [8]\n"));
  EXPECT_THAT(plan, HasSubstr("  member 0 max: max over [8, 37], stores a variable\n"
                              "    runs: explicit vectors, 4 chains of running extremes\n"));
  EXPECT_THAT(plan, HasSubstr("explicit vectors of 16 lanes (exponential); prefetches the "
                              "stores of p1"));
  EXPECT_THAT(plan, HasSubstr("runs: summed in member 1's vector loop"));
  EXPECT_THAT(source.text, Not(HasSubstr("plan:")));
  const std::string dump = SourceWithPlans(source);
  EXPECT_THAT(dump, HasSubstr("\n// plan: kernel "));
  EXPECT_THAT(dump, HasSubstr("\n// plan:   p0: x + 0 (read)\n"));
  EXPECT_THAT(dump, HasSubstr("(read)\n// plan:   p1: "));
  EXPECT_LT(dump.find("// plan:"), dump.find("extern \"C\" void loom_f0("));
}

TEST(CodegenTest, TheSumOfExponentialsAddsUpInTheirVectorLoop) {
  const std::string text = EmitSoftmaxRows({8, 37});
  EXPECT_THAT(text, HasSubstr("loom_f32v16 lanes2 = loom_splat16(0.0f);\n"
                              "    for (int64_t x1 = 0; x1 < 37 / 16 * 16; x1 += 16) {"));
  EXPECT_THAT(text, HasSubstr("      loom_store16(&l1[x1], t4);\n"
                              "      lanes2 += t4;\n"
                              "    }\n"
                              "    float acc2 = loom_sum16(lanes2);\n"));
  EXPECT_THAT(text, HasSubstr("      l1[x1] = t4;\n      acc2 += t4;\n"));  // the tail
  // The loop also fetches the row the normalisation will write.
  EXPECT_THAT(text, HasSubstr("      __builtin_prefetch(&p0[(37*(x0 + 1) + x1)]);\n"
                              "      __builtin_prefetch(&p1[(37*x0 + x1)], 1);\n"));
  EXPECT_THAT(text, Not(HasSubstr("reduction(+:acc2)")));
}

TEST(CodegenTest, AMaximumRunsInFourVectorChainsThenOneByOne) {
  const std::string text = EmitSoftmaxRows({8, 101});
  EXPECT_THAT(text, HasSubstr("for (int64_t x1b = 0; x1b < 101 / 64 * 64; x1b += 64) {\n"
                              "      {\n"
                              "        const int64_t x1 = x1b + 0;\n"
                              "        const loom_f32v16 t0 = loom_load16(&p0[(101*x0 + x1)]);\n"
                              "        extreme0_0 = loom_max16(t0, extreme0_0);\n"
                              "        nan_lanes0 |= loom_nan_lanes16(t0);\n"));
  EXPECT_THAT(text, HasSubstr("extreme0_3 = loom_max16(t0, extreme0_3);"));
  EXPECT_THAT(text, HasSubstr("acc0 = loom_hmax16(loom_max16(loom_max16(loom_max16("
                              "extreme0_0, extreme0_1), extreme0_2), extreme0_3));\n"
                              "    #pragma omp simd reduction(max:acc0) reduction(|:arg0)\n"
                              "    for (int64_t x1 = 101 / 64 * 64; x1 < 101; ++x1) {"));
  EXPECT_THAT(text, HasSubstr("if (arg0 | loom_any16(nan_lanes0)) acc0 = (float)NAN;"));
  // Without AVX-512 the vector exp is generic vector code, not loom_expf
  // lane by lane.
  const std::string helpers = EmitCenteredRows({8, 64}, DType::kF32, proto::CppOptions());
  EXPECT_THAT(helpers, HasSubstr("static inline loom_f32v8 loom_exp8("));
  EXPECT_THAT(helpers, Not(HasSubstr("loom_expf(x[i])")));
  // Rows shorter than a block of four vectors run only the remainder, the
  // same code as longer ones; rows of a multiple of the block, too.
  EXPECT_THAT(EmitSoftmaxRows({8, 37}),
              HasSubstr("for (int64_t x1b = 0; x1b < 37 / 64 * 64; x1b += 64) {"));
  EXPECT_THAT(EmitSoftmaxRows({8, 128}),
              HasSubstr("for (int64_t x1 = 128 / 64 * 64; x1 < 128; ++x1) {"));
}

// The sigmoid of the mean over `axes` of `shape` (a squeeze-excite's pool of
// channels-last data over its middle axes), fused into one kernel.
GeneratedSource EmitPooledSigmoid(Shape shape, std::vector<int64_t> axes) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, shape});
  Attrs reduced;
  reduced.Set("axes", std::move(axes));
  const NodeId mean = *graph.AddNode("mean", "reduce_mean", {x}, {"mean.y"}, reduced);
  const NodeId sigmoid =
      *graph.AddNode("sigmoid", "sigmoid", {graph.node(mean).outputs[0]}, {"sigmoid.y"});
  graph.AddOutput(graph.node(sigmoid).outputs[0]);
  return EmitFusedSource(graph, proto::CppOptions());
}

TEST(CodegenTest, AReductionOverRowsOfColumnsRunsTheColumnsInnermostInBlocks) {
  const GeneratedSource pool = EmitPooledSigmoid({2, 6, 6, 144}, {1, 2});
  EXPECT_THAT(pool.function_plans[0], HasSubstr("blocks of 16 columns"));
  EXPECT_THAT(pool.text, HasSubstr("  for (int64_t x0 = 0; x0 < 2; ++x0) {\n"
                                   "    for (int64_t x1b = 0; x1b < 144; x1b += 16) {\n"
                                   "      constexpr int64_t x1n = 16;\n"
                                   "      float acc0s[16] __attribute__((aligned(64)));\n"));
  EXPECT_THAT(pool.text, HasSubstr("          #pragma omp simd\n"
                                   "          for (int64_t x1j = 0; x1j < x1n; ++x1j) {\n"
                                   "            const int64_t x1 = x1b + x1j;\n"));
  EXPECT_THAT(pool.text, HasSubstr("acc0s[x1j] += t0;"));
  // Then the columns' means and sigmoids, a vector loop of their own.
  EXPECT_THAT(pool.text, HasSubstr("      #pragma GCC ivdep\n"
                                   "      for (int64_t x1j = 0; x1j < x1n; ++x1j) {\n"
                                   "        const int64_t x1 = x1b + x1j;\n"
                                   "        float acc0 = acc0s[x1j];\n"));
  // Blocks of 64 where they leave enough for the threads; a part block last.
  const GeneratedSource sequence = EmitPooledSigmoid({16, 10, 200}, {1});
  EXPECT_THAT(sequence.function_plans[0], HasSubstr("blocks of 64 columns"));
  EXPECT_THAT(sequence.text, HasSubstr("const int64_t x1n = 200 - x1b < 64 ? 200 - x1b : 64;"));
  // Fewer columns than a block: one block of them all.
  EXPECT_THAT(EmitPooledSigmoid({16, 200, 10}, {1}).text,
              HasSubstr("for (int64_t x1b = 0; x1b < 10; x1b += 10) {\n"
                        "      constexpr int64_t x1n = 10;\n"));
  // A mean over rows of contiguous values stays a row reduction.
  EXPECT_THAT(EmitPooledSigmoid({16, 10, 200}, {2}).text, Not(HasSubstr("x1b")));
}

// The variance and the mean of rows of `shape`, fused into one kernel.
std::string EmitRowStatistics(Shape shape) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, shape});
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{1});
  const NodeId var = *graph.AddNode("var", "reduce_var", {x}, {"var.y"}, attrs);
  const NodeId sum = *graph.AddNode("sum", "reduce_sum", {x}, {"sum.y"}, attrs);
  graph.AddOutput(graph.node(var).outputs[0]);
  graph.AddOutput(graph.node(sum).outputs[0]);
  return EmitFused(graph, proto::CppOptions());
}

TEST(CodegenTest, AVarianceIsOnePassOfWelfordInVectorLanes) {
  const std::string text = EmitRowStatistics({8, 48});
  EXPECT_THAT(text, HasSubstr("for (int64_t x1r = 0; x1r < 48; x1r += 16) {"));
  EXPECT_THAT(text, HasSubstr("#pragma omp simd\n      for (int64_t x1j = 0; x1j < 16; ++x1j) {"));
  EXPECT_THAT(text, HasSubstr("wmean0s[x1j] += wmean0_d * wn0_r;"));
  // The lanes combine in a tree, pairs of equal counts; the sum of the same
  // values is the mean times 48.
  EXPECT_THAT(text, HasSubstr("for (int w = 8; w > 0; w /= 2, wn0_h *= 2) {"));
  EXPECT_THAT(text, HasSubstr("wm20s[j] += wm20s[j + w] + wmean0_d * wmean0_d * wn0_h;"));
  EXPECT_THAT(text, HasSubstr("float acc0 = wm20 / (float)(wn0 * 16);"));
  EXPECT_THAT(text, HasSubstr("float acc1 = wmean0 * (float)48;"));
  // Rows that are a multiple of two vectors run two chains of explicit
  // vectors, kept in registers, stored into the lanes for the tree.
  const std::string chains = EmitRowStatistics({8, 128});
  EXPECT_THAT(chains, HasSubstr("for (int64_t x1r = 0; x1r < 128; x1r += 32) {"));
  EXPECT_THAT(chains, HasSubstr("wmean0v1 += wmean0_d * wn0_rv;"));
  EXPECT_THAT(chains, HasSubstr("wm20v1 += wmean0_d * (t0 - wmean0v1);"));
  EXPECT_THAT(chains, HasSubstr("loom_store16(&wmean0s[16], wmean0v1);"));
  EXPECT_THAT(chains, HasSubstr("for (int w = 16; w > 0; w /= 2, wn0_h *= 2) {"));
  EXPECT_THAT(chains, HasSubstr("float acc0 = wm20 / (float)(wn0 * 32);"));
  // Rows of 40: lanes over 32, a running update over the tail of 8, then
  // the tail joins the lanes.
  const std::string tail = EmitRowStatistics({8, 40});
  EXPECT_THAT(tail, HasSubstr("for (int64_t x1r = 0; x1r < 32; x1r += 16) {"));
  EXPECT_THAT(tail, HasSubstr("for (int64_t x1 = 32; x1 < 40; ++x1) {"));
  EXPECT_THAT(tail, HasSubstr("wmean0t += wmean0t_d / (float)++wn0t;"));
  EXPECT_THAT(tail, HasSubstr("float acc0 = wm20 / (wn0a + wn0b);"));
  EXPECT_THAT(tail, HasSubstr("float acc1 = wmean0 * (float)40;"));
  // Rows of 5 make no vector: one running mean and M2.
  const std::string running = EmitRowStatistics({8, 5});
  EXPECT_THAT(running, HasSubstr("wmean0 += wmean0_d / (float)++wn0;"));
  EXPECT_THAT(running, HasSubstr("float acc0 = wm20 / (float)wn0;"));
}

// One long row: the reduction has no outer loop to share over threads, so
// with OpenMP it splits its own loop (two levels: per thread, then
// combined) when there is more than one thread.
TEST(CodegenTest, AReductionOverOneLongRowSplitsOverTheThreads) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {1, 1 << 16}});
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{1});
  const NodeId sum = *graph.AddNode("sum", "reduce_sum", {x}, {"sum.y"}, attrs);
  graph.AddOutput(graph.node(sum).outputs[0]);
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<LoopProgram> program = LowerGraph(graph);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<Schedule> schedule = ScheduleProgram(*program);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  proto::CppOptions options;
  options.set_openmp(true);
  const std::string text = EmitCpp(*program, *schedule, options).text;
  EXPECT_THAT(text, HasSubstr("int omp_get_max_threads(void) noexcept;"));
  EXPECT_THAT(
      text, HasSubstr("const int loom_split = !(1 % loom_threads == 0 || 1 >= 4 * loom_threads);"));
  EXPECT_THAT(text, HasSubstr("#pragma omp parallel for simd reduction(+:acc0) if(loom_split)"));
  // The members are one function of the outer position, called from a
  // serial loop when they split, so their parallel regions are never
  // nested in the outer loop's.
  EXPECT_THAT(text, HasSubstr("const auto loom_row = [&](int64_t x0) __attribute__((noinline)) {"));
  EXPECT_THAT(text, HasSubstr("  if (loom_split) {\n    for (int64_t x0 = 0; x0 < 1; ++x0) {\n"
                              "      loom_row(x0);\n    }\n  } else {\n"));
  options.set_openmp(false);
  EXPECT_THAT(EmitCpp(*program, *schedule, options).text, Not(HasSubstr("loom_split")));
}

// x [rows, k] times the transpose of w [n, k], the product's value id in
// `product`.
Graph TimesTransposed(int64_t rows, int64_t k, int64_t n, ValueId& product) {
  Graph graph;
  const ValueId x = *graph.AddInput("x", TensorType{DType::kF32, {rows, k}});
  const ValueId w = *graph.AddInput("w", TensorType{DType::kF32, {n, k}});
  Attrs perm;
  perm.Set("perm", std::vector<int64_t>{1, 0});
  const NodeId wt = *graph.AddNode("wt", "transpose", {w}, {"wt"}, std::move(perm));
  const NodeId mm = *graph.AddNode("mm", "matmul", {x, graph.node(wt).outputs[0]}, {"y"});
  product = graph.node(mm).outputs[0];
  return graph;
}

// Two rows times a transposed weight stay loops (passes/lower.h); fused
// with a sum over each row of the product, so that the rows are an inner
// loop, their dot products go to loom_matvec, all 256 at once.
TEST(CodegenTest, AFewRowsTimesATransposedMatrixAreMatrixVectorCalls) {
  ValueId product;
  Graph graph = TimesTransposed(2, 64, 256, product);
  Attrs last;
  last.Set("axes", std::vector<int64_t>{-1});
  const NodeId sum = *graph.AddNode("sum", "reduce_sum", {product}, {"s"}, std::move(last));
  graph.AddOutput(graph.node(sum).outputs[0]);
  ASSERT_TRUE(InferShapes(graph).ok());
  proto::CppOptions vectors;
  vectors.set_simd(proto::CppOptions::NATIVE);
  const std::string text = EmitFused(graph, vectors);
  EXPECT_THAT(text, HasSubstr("static __attribute__((noinline)) void loom_matvec("));
  EXPECT_THAT(text, HasSubstr("loom_matvec<64>(&p0[(64*x0 + 0)], &p1[(64*0 + 0)], 64, 256, "
                              "&l0[0], 1);"));
}

// Two rows times a large transposed weight, then a pointwise op: the
// kernel runs as a team (one parallel region), the product shared by
// blocks of the weight's rows, each block loaded once for both rows; the
// product's local array holds both rows. Five rows are too many.
TEST(CodegenTest, AFewRowsSharingALargeProductRunAsATeam) {
  auto emit = [](int64_t rows) {
    ValueId product;
    Graph graph = TimesTransposed(rows, 256, 1024, product);
    // Each half of the product's row, as a recurrence's gates.
    auto half = [&](int64_t start, const char* name) {
      Attrs attrs;
      attrs.Set("starts", std::vector<int64_t>{start});
      attrs.Set("ends", std::vector<int64_t>{start + 512});
      attrs.Set("axes", std::vector<int64_t>{1});
      return graph.node(*graph.AddNode(name, "slice", {product}, {name}, std::move(attrs)))
          .outputs[0];
    };
    const NodeId sum = *graph.AddNode("sum", "add", {half(0, "lo"), half(512, "hi")}, {"s"});
    graph.AddOutput(graph.node(sum).outputs[0]);
    EXPECT_TRUE(InferShapes(graph).ok());
    proto::CppOptions options;
    options.set_simd(proto::CppOptions::NATIVE);
    options.set_openmp(true);
    return EmitFused(graph, options);
  };
  const std::string team = emit(2);
  EXPECT_THAT(team, HasSubstr("  float l0[2048];\n  #pragma omp parallel\n  {\n"
                              "    #pragma omp for schedule(static)\n"
                              "    for (int64_t x1b = 0; x1b < 1024; x1b += 8) {\n"
                              "      loom_matvecs<256>(&p0[(256*0 + 0)], 256, 2, "
                              "&p1[(256*x1b + 0)], 256, 8, &l0[(1024*0 + x1b)], 1, 1024);\n"));
  EXPECT_THAT(team, HasSubstr("    #pragma omp for\n    for (int64_t x0 = 0; x0 < 2; ++x0) {\n"));
  EXPECT_THAT(team, HasSubstr("static inline void loom_dots8x2("));
  EXPECT_THAT(team, Not(HasSubstr("loom_split")));
  // A batch of one: no outer loop, one thread runs the pointwise members.
  const std::string one = emit(1);
  EXPECT_THAT(one, HasSubstr("loom_matvecs<256>(&p0[0], 0, 1, &p1[(256*x0b + 0)], 256, 8, "
                             "&l0[x0b], 1, 0);\n"));
  EXPECT_THAT(one, HasSubstr("    #pragma omp single\n    {\n"));
  const std::string rows = emit(5);
  EXPECT_THAT(rows, Not(HasSubstr("loom_matvecs<")));
  EXPECT_THAT(rows, HasSubstr("loom_split"));
}

// The source of a kernel that is one product of `rows` rows by a
// transposed [n, k] matrix, in explicit vectors and with OpenMP.
std::string EmitTimesTransposed(int64_t rows, int64_t k, int64_t n) {
  ValueId product;
  Graph graph = TimesTransposed(rows, k, n, product);
  graph.AddOutput(product);
  EXPECT_TRUE(InferShapes(graph).ok());
  proto::CppOptions options;
  options.set_simd(proto::CppOptions::NATIVE);
  options.set_openmp(true);
  return EmitFused(graph, options);
}

// A kernel that is one such product, its rows the outer loop: one call for
// all rows (too little work to share).
TEST(CodegenTest, AKernelOfOneMatrixVectorProductIsOneCall) {
  EXPECT_THAT(EmitTimesTransposed(1, 128, 512),
              HasSubstr("  for (int64_t x0 = 0; x0 < 1; ++x0) {\n"
                        "    loom_matvec<128>(&p0[0], &p1[(128*0 + 0)], 128, 512, &p2[0], 1);\n"
                        "  }\n"));
}

// Several rows' products, each large enough to share: one parallel region
// for them all, each row's blocks shared without a barrier between rows.
TEST(CodegenTest, RowsOfSharedMatrixVectorProductsShareOneParallelRegion) {
  EXPECT_THAT(EmitTimesTransposed(4, 256, 256),
              HasSubstr("  #pragma omp parallel\n  {\n"
                        "    for (int64_t x0 = 0; x0 < 4; ++x0) {\n"
                        "      #pragma omp for schedule(static) nowait\n"
                        "      for (int64_t x1b = 0; x1b < 256; x1b += 8) {\n"));
}

TEST(CodegenTest, IndicesKnownAtRunTimeAreCheckedOnceInTheOuterLoop) {
  Graph graph;
  const ValueId table = *graph.AddInput("table", TensorType{DType::kF32, {10, 8}});
  const ValueId ids = *graph.AddInput("ids", TensorType{DType::kI32, {3}});
  const NodeId lookup = *graph.AddNode("lookup", "gather", {table, ids}, {"rows"});
  const NodeId act = *graph.AddNode("act", "tanh", {graph.node(lookup).outputs[0]}, {"y"});
  graph.AddOutput(graph.node(act).outputs[0]);
  // One kernel: each index checked once, in the outer loop, the index error
  // slot a parameter of its own; the lookup inlined into its consumer, whose
  // inner loop has no check.
  const std::string text = EmitFused(graph, proto::CppOptions());
  EXPECT_THAT(text, HasSubstr("  int64_t* LOOM_RESTRICT p1 = (int64_t*)a[1];\n"));
  EXPECT_THAT(text, HasSubstr("    const int32_t t0 = p0[x0];\n"
                              "    const int64_t t1 = loom_check_index((int64_t)t0, 10, 0, p1);\n"
                              "    #pragma GCC ivdep\n"
                              "    for (int64_t x1 = 0; x1 < 8; ++x1) {\n"
                              "      const int64_t t2 = t1;\n"
                              "      const float t3 = p2[x1 + 8 * (int64_t)t2];\n"));
  EXPECT_THAT(text, HasSubstr("__atomic_compare_exchange_n(&errors[0], &none, site + 1"));
  EXPECT_THAT(Emit(DoublingChain(2)).text, Not(HasSubstr("loom_check_index")));
}

}  // namespace
}  // namespace loom::cpp
