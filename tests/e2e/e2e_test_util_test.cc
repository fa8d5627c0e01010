// The harness compiles with the built-in cpu pipeline and the options the
// tests ask for in place of the pipeline's.

#include "tests/e2e/e2e_test_util.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"

namespace loom {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// A 3x3 conv of 64 channels (oneDNN's convolution when convs are calls),
// and rows less their means: an output of 8 KiB written row by row.
Graph ConvAndCenteredRows() {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {1, 64, 14, 14});
  b.Output(b.Op("conv", {x, b.Weight("w", {64, 64, 3, 3}, 1)}, IntsAttr("pads", {1, 1, 1, 1})));
  const ValueId rows = b.Input("rows", DType::kF32, {32, 64});
  b.Output(b.Op(
      "sub",
      {rows, b.Op("reduce_mean", {rows},
                  MakeAttrs({{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}}))}));
  EXPECT_TRUE(InferShapes(b.graph()).ok());
  return std::move(b.graph());
}

TEST(EmitModuleTest, ConvsAreCallsOnlyWhenAskedFor) {
  for (bool conv_calls : {false, true}) {
    absl::StatusOr<Module> module = EmitModule(ConvAndCenteredRows(), "", 4096, conv_calls);
    ASSERT_TRUE(module.ok()) << module.status();
    EXPECT_EQ(module->source->support_sources.empty(), !conv_calls) << conv_calls;
  }
}

TEST(EmitModuleTest, MarchAndStreamingStoresAreTheTestsOwn) {
  absl::StatusOr<Module> arm = EmitModule(ConvAndCenteredRows(), "armv8-a", 4096);
  ASSERT_TRUE(arm.ok()) << arm.status();
  EXPECT_THAT(arm->source->native_flags, Contains("-march=armv8-a"));
  absl::StatusOr<Module> native = EmitModule(ConvAndCenteredRows());
  ASSERT_TRUE(native.ok()) << native.status();
  EXPECT_THAT(native->source->native_flags, Contains("-march=native"));
  EXPECT_THAT(native->source->text, HasSubstr("loom_stream"));
  absl::StatusOr<Module> unstreamed = EmitModule(ConvAndCenteredRows(), "", -1);
  ASSERT_TRUE(unstreamed.ok()) << unstreamed.status();
  EXPECT_THAT(unstreamed->source->text, Not(HasSubstr("loom_stream")));
}

}  // namespace
}  // namespace loom
