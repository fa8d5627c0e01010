#include "backends/cpp/outline.h"

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/shape_constants.h"

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

// A kernel body's loop over `extent` floats of a row of `stride`, the
// last index divided by `divisor`, marked as codegen-cpp marks its shape
// constants.
std::string RowLoop(int64_t rows, int64_t extent, int64_t stride, int64_t divisor = 2) {
  const std::string n = MarkShapeConstant(extent);
  return absl::StrCat("  float* p0 = (float*)a[0];\n  for (int64_t x0 = 0; x0 < ",
                      MarkShapeConstant(rows), "; ++x0) {\n    for (int64_t x1 = 0; x1 < ", n,
                      "; ++x1) p0[", MarkShapeConstant(stride), "*x0 + x1 / ",
                      MarkShapeConstant(divisor), "] *= ", n, ";\n  }\n");
}

TEST(ShareBodiesAcrossShapesTest, BodiesOfOneSkeletonCallOneFunction) {
  OutlinedFunctions outlined;
  const std::deque<std::string> bodies = {RowLoop(4, 64, 128), "  f(a);\n", RowLoop(8, 32, 128),
                                          RowLoop(2, 16, 128)};
  const std::vector<std::string> shared =
      ShareBodiesAcrossShapes(bodies, outlined, /*min_lines=*/1);
  // Rows, extent, stride and the extent again, each from the array, the
  // stride too, though every body has 128; the divisor, 2 in every body,
  // stays in the code.
  EXPECT_EQ(WithoutShapeConstantMarks(shared[0]),
            "  const int64_t loom_shape[] = {4, 64, 128, 64};\n  loom_m0(a, loom_shape);\n");
  EXPECT_EQ(shared[1], bodies[1]);
  EXPECT_EQ(WithoutShapeConstantMarks(shared[2]),
            "  const int64_t loom_shape[] = {8, 32, 128, 32};\n  loom_m0(a, loom_shape);\n");
  EXPECT_EQ(WithoutShapeConstantMarks(shared[3]),
            "  const int64_t loom_shape[] = {2, 16, 128, 16};\n  loom_m0(a, loom_shape);\n");
  EXPECT_EQ(SharedFunctionCalled(shared[3]), 0);
  EXPECT_EQ(SharedFunctionCalled(bodies[3]), std::nullopt);
  // Every constant stays marked: a shape template reads them.
  EXPECT_EQ(StripShapeConstants(shared[3]).constants.size(), 4);
  const StrippedSource definitions = StripShapeConstants(outlined.Definitions());
  ASSERT_EQ(definitions.constants.size(), 1);
  EXPECT_EQ(definitions.constants[0].value, 2);
  EXPECT_EQ(definitions.text,
            "\nextern \"C\" void loom_m0(void* const* a, const int64_t* LOOM_RESTRICT loom_shape) "
            "{\n"
            "  const int64_t loom_s0 = loom_shape[0];\n"
            "  const int64_t loom_s1 = loom_shape[1];\n"
            "  const int64_t loom_s2 = loom_shape[2];\n"
            "  const int64_t loom_s3 = loom_shape[3];\n"
            "  float* p0 = (float*)a[0];\n"
            "  for (int64_t x0 = 0; x0 < loom_s0; ++x0) {\n"
            "    for (int64_t x1 = 0; x1 < loom_s1; ++x1) p0[loom_s2*x0 + x1 / 2] *= loom_s3;\n"
            "  }\n}\n");
}

TEST(ShareBodiesAcrossShapesTest, ADivisorInWhichTheBodiesDifferIsReadToo) {
  OutlinedFunctions outlined;
  const std::vector<std::string> shared = ShareBodiesAcrossShapes(
      std::deque<std::string>{RowLoop(4, 64, 128, 2), RowLoop(4, 64, 128, 4)}, outlined,
      /*min_lines=*/1);
  EXPECT_EQ(WithoutShapeConstantMarks(shared[1]),
            "  const int64_t loom_shape[] = {4, 64, 128, 4, 64};\n  loom_m0(a, loom_shape);\n");
  EXPECT_THAT(outlined.Definitions(), HasSubstr("x1 / loom_s3]"));
}

TEST(ShareBodiesAcrossShapesTest, LeavesABodyAloneWithItsCodeAndAShortOne) {
  OutlinedFunctions outlined;
  const std::deque<std::string> bodies = {RowLoop(4, 64, 128),
                                          absl::StrCat("  g(", MarkShapeConstant(3), ");\n")};
  EXPECT_THAT(ShareBodiesAcrossShapes(bodies, outlined, /*min_lines=*/1),
              ElementsAre(bodies[0], bodies[1]));
  // Two of one skeleton, of 4 lines each.
  const std::deque<std::string> short_bodies = {RowLoop(4, 64, 128), RowLoop(8, 32, 128)};
  EXPECT_THAT(ShareBodiesAcrossShapes(short_bodies, outlined, /*min_lines=*/5),
              ElementsAre(short_bodies[0], short_bodies[1]));
  EXPECT_EQ(outlined.Definitions(), "");
}

}  // namespace
}  // namespace loom::cpp
