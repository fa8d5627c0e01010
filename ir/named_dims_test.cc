#include "ir/named_dims.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

TEST(EvaluateDimExprTest, ReadsSizesAsPythonWould) {
  const NamedSizes sizes = {{"s0", 7}, {"seq_len", 12}};
  EXPECT_EQ(*EvaluateDimExpr("42", sizes), 42);
  EXPECT_EQ(*EvaluateDimExpr("s0*seq_len + 1", sizes), 85);
  EXPECT_EQ(*EvaluateDimExpr("2 * (s0 - 3) // 3", sizes), 2);
  EXPECT_EQ(*EvaluateDimExpr("-s0 // 2", sizes), -4);  // floor, as Python's //
  EXPECT_EQ(*EvaluateDimExpr("-s0 % 3", sizes), 2);
  EXPECT_EQ(*EvaluateDimExpr("s0 - seq_len - 1", sizes), -6);  // left to right
  EXPECT_EQ(*EvaluateDimExpr("max(1, s0 - 10, -2)", sizes), 1);
  EXPECT_EQ(*EvaluateDimExpr("min(seq_len, 64) * --2", sizes), 24);
}

TEST(EvaluateDimExprTest, ErrorsSayWhatAndWhere) {
  const NamedSizes sizes = {{"s0", 7}};
  EXPECT_THAT(EvaluateDimExpr("s1 + 1", sizes).status().message(),
              HasSubstr("reads the named dim 's1', which has none"));
  EXPECT_THAT(EvaluateDimExpr("s0 +", sizes).status().message(),
              HasSubstr("expected a number, a name or '(' at column 5"));
  EXPECT_THAT(EvaluateDimExpr("(s0", sizes).status().message(), HasSubstr("expected ')'"));
  EXPECT_THAT(EvaluateDimExpr("s0 s0", sizes).status().message(), HasSubstr("unexpected text"));
  EXPECT_THAT(EvaluateDimExpr("s0 // (s0 - 7)", sizes).status().message(),
              HasSubstr("divides by zero"));
  EXPECT_THAT(EvaluateDimExpr("4294967296 * 4294967296", sizes).status().message(),
              HasSubstr("overflows 64 bits"));
  EXPECT_THAT(EvaluateDimExpr("99999999999999999999", sizes).status().message(),
              HasSubstr("too large number"));
  EXPECT_FALSE(EvaluateDimExpr("", sizes).ok());
}

TEST(ResolveNamedDimsTest, SizesFromOptionsAndInputsAgreeWithinBounds) {
  const NamedDimUses uses = {{"batch", {{"x", 0}, {"m", 0}}}, {"seq", {{"x", 1}}}};
  NamedDimOptions options;
  options.input_shapes = {{"x", {2, 5, 8}}, {"m", {2, 1}}};
  absl::StatusOr<NamedSizes> sizes = ResolveNamedDims(uses, options);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(sizes->at("batch"), 2);
  EXPECT_EQ(sizes->at("seq"), 5);

  options.input_shapes["m"] = {3, 1};
  EXPECT_THAT(ResolveNamedDims(uses, options).status().message(),
              HasSubstr("graph input 'm': dim 0, the named dim 'batch', is 3 but 2 in graph "
                        "input 'x' (dim 0)"));
  options.input_shapes["m"] = {2, 1};
  options.dim_bounds["seq"] = {1, 4};
  EXPECT_THAT(ResolveNamedDims(uses, options).status().message(),
              HasSubstr("the named dim 'seq', is 5, outside its bounds 1..4"));
  options.dim_bounds = {{"sequence", {1, 4}}};
  EXPECT_THAT(ResolveNamedDims(uses, options).status().message(),
              HasSubstr("the named dim 'sequence', which no graph input has (the model's: "
                        "batch, seq)"));
}

}  // namespace
}  // namespace loom
