#include "backends/cpp/outline.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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

TEST(ReplaceNamesTest, ReplacesWholeIdentifiersOnly) {
  EXPECT_EQ(ReplaceNames("f(p1, p12, l1[x1], 1.5e1f, p1x);", {{"p1", "q"}, {"l1", "t[s]"}}),
            "f(q, p12, t[s][x1], 1.5e1f, p1x);");
}

// The pointer types RollRepeatedMembers casts to: p0 is written.
std::string TypeOf(absl::string_view name) {
  return name == "p0" || name[0] == 'l' ? "float*" : "const float*";
}

TEST(RollRepeatedMembersTest, StepsOfARecurrenceRunAsOneLoop) {
  // Three steps of two members each (a product into a local, then a call
  // reading it), then a member that differs.
  std::vector<std::string> codes;
  for (int t = 0; t < 3; ++t) {
    codes.push_back(absl::StrCat("  loom_matvec<64>(&l", 2 * t, "[0], &p1[0], 64, 256, &l",
                                 2 * t + 1, "[0], 1);\n"));
    codes.push_back(absl::StrCat("  loom_m0(p", 2 + 3 * t, ", p1, l", 2 * t + 1, ", x0);\n"));
  }
  codes.push_back("  p0[x0] = l5[0];\n");
  const std::string rolled =
      RollRepeatedMembers(codes, std::vector<bool>(codes.size(), true), 1, TypeOf);
  EXPECT_EQ(rolled,
            "  float* const loom_rolled0[3] = {l0, l2, l4};\n"
            "  float* const loom_rolled1[3] = {l1, l3, l5};\n"
            "  for (int64_t loom_step = 0; loom_step < 3; ++loom_step) {\n"
            "    loom_matvec<64>(&loom_rolled0[loom_step][0], &p1[0], 64, 256, "
            "&loom_rolled1[loom_step][0], 1);\n"
            "    loom_m0(((const float*)a[2 + 3 * loom_step]), p1, loom_rolled1[loom_step], x0);\n"
            "  }\n"
            "  p0[x0] = l5[0];\n");
}

TEST(RollRepeatedMembersTest, LeavesTooFewRepeatsUnevenStridesAndUnmarkedMembers) {
  const std::vector<std::string> two = {"  f(p1);\n", "  f(p2);\n"};
  EXPECT_EQ(RollRepeatedMembers(two, {true, true}, 1, TypeOf), "  f(p1);\n  f(p2);\n");
  const std::vector<std::string> uneven = {"  f(p1);\n", "  f(p2);\n", "  f(p4);\n"};
  EXPECT_EQ(RollRepeatedMembers(uneven, {true, true, true}, 1, TypeOf),
            "  f(p1);\n  f(p2);\n  f(p4);\n");
  const std::vector<std::string> even = {"  f(p1);\n", "  f(p2);\n", "  f(p3);\n"};
  EXPECT_EQ(RollRepeatedMembers(even, {true, false, true}, 1, TypeOf),
            "  f(p1);\n  f(p2);\n  f(p3);\n");
  // A member reading what another declared is no loop's.
  const std::vector<std::string> outer = {"  p1[0] = t3;\n", "  p2[0] = t3;\n", "  p3[0] = t3;\n"};
  EXPECT_EQ(RollRepeatedMembers(outer, {true, true, true}, 1, TypeOf),
            "  p1[0] = t3;\n  p2[0] = t3;\n  p3[0] = t3;\n");
}

TEST(RollRepeatedMembersTest, LoopsOfOneKernelNameTheirTablesApart) {
  // Two directions' steps: the backward one visits its arrays downwards.
  const std::vector<std::string> codes = {"  f(l1);\n", "  f(l2);\n", "  f(l3);\n",
                                          "  g(l9);\n", "  g(l6);\n", "  g(l3);\n"};
  EXPECT_EQ(RollRepeatedMembers(codes, std::vector<bool>(codes.size(), true), 1, TypeOf),
            "  float* const loom_rolled0[3] = {l1, l2, l3};\n"
            "  for (int64_t loom_step = 0; loom_step < 3; ++loom_step) {\n"
            "    f(loom_rolled0[loom_step]);\n"
            "  }\n"
            "  float* const loom_rolled1[3] = {l9, l6, l3};\n"
            "  for (int64_t loom_step = 0; loom_step < 3; ++loom_step) {\n"
            "    g(loom_rolled1[loom_step]);\n"
            "  }\n");
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
