#include "backends/cpp/shape_templates.h"

#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpp/outline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/shape_constants.h"

namespace loom::cpp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The source of `marked` (text with its shape constants marked), whose
// kernel functions loom_f0 and loom_f1 run as `function` and `arg_offsets`
// say (LaunchTable).
GeneratedSource TwoFunctions(const std::string& marked, std::vector<int32_t> function,
                             std::vector<int32_t> arg_offsets) {
  StrippedSource stripped = StripShapeConstants(marked);
  GeneratedSource source;
  source.language = "c++";
  source.text = std::move(stripped.text);
  source.shape_constants = std::move(stripped.constants);
  source.functions = {"loom_f0", "loom_f1"};
  source.launches.args.resize(arg_offsets.back());
  source.launches.function = std::move(function);
  source.launches.arg_offsets = std::move(arg_offsets);
  return source;
}

// A unit of two kernel functions as codegen-cpp prints them, the first
// launched with two arguments, the second with one, and an outlined
// function after them; `rows` and `columns` are its shape constants.
GeneratedSource Unit(int64_t rows, int64_t columns) {
  const std::string marked = absl::StrCat(
      "// prelude\n"
      "\nextern \"C\" void loom_f0(void* const* a) {\n"
      "  float* p0 = (float*)a[0];\n"
      "  for (int64_t x0 = 0; x0 < ",
      MarkShapeConstant(rows), "; ++x0) p0[", MarkShapeConstant(columns),
      "*x0] = 1.0f;\n"
      "}\n"
      "\nextern \"C\" void loom_f1(void* const* a) {\n"
      "  float* p0 = (float*)a[0];\n"
      "  p0[",
      MarkShapeConstant(7),
      "] = 2.0f;\n}\n\nextern \"C\" void loom_m0(float* a0) {\n  a0[3] = 0;\n}\n");
  return TwoFunctions(marked, {1, 0}, {0, 1, 3});
}

TEST(ShapeTemplatesTest, ATemplateReadsItsConstantsAfterTheArguments) {
  const GeneratedSource source = Unit(16, 64);
  ASSERT_EQ(source.shape_constants.size(), 3);
  const std::string text = TemplateText(source, {0, 1});
  EXPECT_THAT(text,
              HasSubstr("extern \"C\" void loom_f0(void* const* a) {\n"
                        "  const int64_t* const loom_n = (const int64_t*)a[2];\n"
                        "  const int64_t loom_n0 = loom_n[0];\n"
                        "  const int64_t loom_n1 = loom_n[1];\n"
                        "  float* p0 = (float*)a[0];\n"
                        "  for (int64_t x0 = 0; x0 < loom_n0; ++x0) p0[loom_n1*x0] = 1.0f;\n"));
  // loom_f1 reads none at run time: its code is as it was.
  EXPECT_THAT(text, HasSubstr("extern \"C\" void loom_f1(void* const* a) {\n"
                              "  float* p0 = (float*)a[0];\n  p0[7] = 2.0f;\n}\n"));
  EXPECT_EQ(TemplateText(source, {}), source.text);
}

std::string TestDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp == nullptr ? "/tmp" : tmp, "/",
                      testing::UnitTest::GetInstance()->current_test_info()->name());
}

// A constant that C++ needs at compile time (an array's size) cannot be
// read at run time: the template does not compile, and each shape compiles
// its own code from then on.
TEST(ShapeTemplatesTest, ATemplateThatDoesNotCompileLeavesEachShapeItsOwn) {
  NativeCompileOptions options;
  options.cache_dir = TestDir();
  const auto unit = [](int64_t size) {
    StrippedSource stripped = StripShapeConstants(
        absl::StrCat("\nextern \"C\" void loom_f0(void* const* a) {\n  static float l0[",
                     MarkShapeConstant(size), "];\n  *(float**)a[0] = l0;\n}\n"));
    GeneratedSource source;
    source.text = std::move(stripped.text);
    source.shape_constants = std::move(stripped.constants);
    source.launches.function = {0};
    source.launches.arg_offsets = {0, 1};
    source.launches.args.resize(1);
    return source;
  };
  for (const int64_t size : {16, 32, 48}) {
    SCOPED_TRACE(size);
    const absl::StatusOr<CompiledLibrary> compiled = CompileAndLoadForShapes(unit(size), options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_FALSE(compiled->shape_template);
    EXPECT_FALSE(compiled->cache_hit);
  }
  EXPECT_THAT(TemplateText(unit(16), {0}), Not(HasSubstr("[16]")));
}

// A unit of two kernel functions, launched with two arguments each, that
// are one function but for a constant (ShareBodiesAcrossShapes): 16 steps,
// each writing the first float of row x0 / `divisor` (a constant in which
// the two agree) of rows of 64 and of 32 floats.
GeneratedSource SharedUnit(int64_t divisor) {
  const auto body = [divisor](int64_t columns) {
    return absl::StrCat("  float* p0 = (float*)a[0];\n  for (int64_t x0 = 0; x0 < ",
                        MarkShapeConstant(16), "; ++x0) p0[", MarkShapeConstant(columns), "*(x0 / ",
                        MarkShapeConstant(divisor), ")] = 1.0f;\n");
  };
  OutlinedFunctions outlined;
  const std::vector<std::string> bodies =
      ShareBodiesAcrossShapes(std::deque<std::string>{body(64), body(32)}, outlined,
                              /*min_lines=*/1);
  return TwoFunctions(
      absl::StrCat("#include <stdint.h>\n#define LOOM_RESTRICT __restrict__\n",
                   outlined.Declarations(), "\nextern \"C\" void loom_f0(void* const* a) {\n",
                   bodies[0], "}\n\nextern \"C\" void loom_f1(void* const* a) {\n", bodies[1],
                   "}\n", outlined.Definitions()),
      {0, 1}, {0, 2, 4});
}

// The divisor, in which the two agree, is the shared function's own: a
// template reads it there, after the arguments its callers pass.
TEST(ShapeTemplatesTest, ATemplateReadsASharedFunctionsConstants) {
  const GeneratedSource source = SharedUnit(2);
  // loom_f0's rows and 64, loom_f1's rows and 32, the divisor.
  ASSERT_EQ(source.shape_constants.size(), 5);
  ASSERT_EQ(source.shape_constants[4].value, 2);
  const std::string text = TemplateText(source, {4});
  EXPECT_THAT(text, HasSubstr(absl::StrCat("void loom_m0(", kSharedParams,
                                           ") {\n"
                                           "  const int64_t* const loom_n = (const int64_t*)a[2];\n"
                                           "  const int64_t loom_n4 = loom_n[4];\n"
                                           "  const int64_t loom_s0 = loom_shape[0];\n")));
  EXPECT_THAT(text, HasSubstr("p0[loom_s1*(x0 / loom_n4)]"));

  NativeCompileOptions options;
  options.cache_dir = TestDir();
  for (const int64_t divisor : {2, 3, 5}) {
    SCOPED_TRACE(divisor);
    const absl::StatusOr<CompiledLibrary> compiled =
        CompileAndLoadForShapes(SharedUnit(divisor), options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_EQ(compiled->shape_template, divisor != 2);
  }
}

}  // namespace
}  // namespace loom::cpp
