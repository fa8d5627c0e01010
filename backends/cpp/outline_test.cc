#include "backends/cpp/outline.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::cpp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RenameNumberedNamesTest, NamesBuffersAndOwnNamesInOrderOfFirstUse) {
  const RenamedCode renamed = RenameNumberedNames(
      "  for (int64_t x1 = 0; x1 < 64; ++x1) {\n"
      "    const float t7 = p3[(64*x0 + x1)] + l2[x1];\n"
      "    acc4 += t7 * 1.5e-3f + p3[x1];\n"
      "  }\n");
  EXPECT_EQ(renamed.text,
            "  for (int64_t x1 = 0; x1 < 64; ++x1) {\n"
            "    const float v0 = a0[(64*x0 + x1)] + a1[x1];\n"
            "    v1 += v0 * 1.5e-3f + a0[x1];\n"
            "  }\n");
  EXPECT_THAT(renamed.buffers, ElementsAre("p3", "l2"));
}

TEST(RenameNumberedNamesTest, StepsOfARecurrenceRenameEqual) {
  const RenamedCode step1 = RenameNumberedNames("loom_store16(&l4[x1], loom_exp16(t25) + p8[x1]);");
  const RenamedCode step2 =
      RenameNumberedNames("loom_store16(&l7[x1], loom_exp16(t37) + p11[x1]);");
  EXPECT_EQ(step1.text, step2.text);
  EXPECT_EQ(step1.text, "loom_store16(&a0[x1], loom_exp16(v0) + a1[x1]);");
  EXPECT_THAT(step2.buffers, ElementsAre("l7", "p11"));
}

TEST(RenameNumberedNamesTest, KeepsLiteralsLoopVariablesTypesAndPreludeNames) {
  const RenamedCode renamed =
      RenameNumberedNames("int32_t w = (int32_t)0x1Fp+2f + x1r + x2j + 3e-05 + __m256 + q;");
  EXPECT_EQ(renamed.text, "int32_t w = (int32_t)0x1Fp+2f + x1r + x2j + 3e-05 + __m256 + q;");
  EXPECT_TRUE(renamed.buffers.empty());
}

TEST(RenameNumberedNamesTest, SaysWhereANameIsUsedButNotDeclared) {
  EXPECT_FALSE(RenameNumberedNames("const float t3 = p0[x1];\nint64_t arg2 = 0;\n"
                                   "l1[x1] = t3 + (float)arg2;\n")
                   .uses_outer_names);
  // A TopK's member reading the index an earlier member left in arg4.
  EXPECT_TRUE(RenameNumberedNames("int64_t arg5 = arg4;\np1[x1] = arg5;\n").uses_outer_names);
  EXPECT_TRUE(RenameNumberedNames("return acc3;\n").uses_outer_names);
}

TEST(OutlinedFunctionsTest, AddsEachFunctionOnceAndDeclaresIt) {
  OutlinedFunctions outlined;
  EXPECT_EQ(outlined.Declarations(), "");
  const std::string params = "const float* LOOM_RESTRICT a0, int64_t x0";
  EXPECT_EQ(outlined.Add(params, "  f(a0);\n"), "loom_m0");
  EXPECT_EQ(outlined.Add(params, "  g(a0);\n"), "loom_m1");
  EXPECT_EQ(outlined.Add(params, "  f(a0);\n"), "loom_m0");
  EXPECT_THAT(outlined.Declarations(),
              HasSubstr("void loom_m1(const float* LOOM_RESTRICT a0, int64_t x0);\n"));
  EXPECT_EQ(outlined.Definitions(),
            "\nextern \"C\" void loom_m0(const float* LOOM_RESTRICT a0, int64_t x0) {\n"
            "  f(a0);\n}\n"
            "\nextern \"C\" void loom_m1(const float* LOOM_RESTRICT a0, int64_t x0) {\n"
            "  g(a0);\n}\n");
}

}  // namespace
}  // namespace loom::cpp
