#include "passes/pass.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/decompose_options.pb.h"
#include "passes/lower_options.pb.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class NoOpPass : public Pass {
 public:
  explicit NoOpPass(int tag = 0) : tag(tag) {}
  absl::StatusOr<bool> Run(Module&) override { return false; }
  int tag;
};

absl::StatusOr<std::unique_ptr<Pass>> MakeNoOp() { return std::make_unique<NoOpPass>(); }

LOOM_REGISTER_PASS("pass-test-registered", MakeNoOp);

PassSpec Spec(const std::string& name) { return PassSpec{name}; }

PassRegistration NoOp(const std::string& name) { return PassWithoutOptions(name, MakeNoOp); }

// A pass that takes LowerOptions as `field`, its tag their gemm_min_rows.
PassRegistration Lowering(const std::string& name, const std::string& field) {
  return PassWithOptions<proto::LowerOptions>(
      name, field, [](const proto::LowerOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
        return std::make_unique<NoOpPass>(options.gemm_min_rows());
      });
}

TEST(PassRegistryTest, MacroRegistersWithTheGlobalRegistry) {
  EXPECT_TRUE(PassRegistry::Global().Lookup("pass-test-registered").ok());
  absl::StatusOr<std::unique_ptr<Pass>> pass =
      PassRegistry::Global().Create(Spec("pass-test-registered"));
  ASSERT_TRUE(pass.ok()) << pass.status();
  Module module;
  EXPECT_EQ((*pass)->Run(module).value(), false);
}

TEST(PassRegistryTest, UnknownNameListsKnownNamesSorted) {
  PassRegistry registry;
  ASSERT_TRUE(registry.Register(NoOp("zeta")).ok());
  ASSERT_TRUE(registry.Register(NoOp("alpha-2")).ok());
  EXPECT_THAT(registry.Names(), ElementsAre("alpha-2", "zeta"));

  absl::StatusOr<const PassRegistration*> found = registry.Lookup("nope");
  EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(found.status().message(), "unknown pass 'nope'; known passes: alpha-2, zeta");
  EXPECT_EQ(registry.Lookup("").status().message(),
            "pass has no name; known passes: alpha-2, zeta");
}

TEST(PassRegistryTest, RejectsBadRegistrations) {
  PassRegistry registry;
  ASSERT_TRUE(registry.Register(NoOp("dup")).ok());
  EXPECT_THAT(registry.Register(NoOp("dup")).message(), HasSubstr("registered twice"));
  EXPECT_THAT(registry.Register(NoOp("Not_Kebab")).message(), HasSubstr("not kebab-case"));
  EXPECT_THAT(registry.Register(NoOp("")).message(), HasSubstr("not kebab-case"));
  // `name` is the entry's own field; an options block needs a field name.
  EXPECT_THAT(registry.Register(Lowering("odd", "name")).message(),
              HasSubstr("bad options field 'name'"));
  EXPECT_THAT(registry.Register(Lowering("odd", "Not-a-field")).message(),
              HasSubstr("bad options field"));
  EXPECT_TRUE(registry.Register(Lowering("fine", "lowering")).ok());
  // Two passes may share a block only with one type.
  EXPECT_TRUE(registry.Register(Lowering("also-fine", "lowering")).ok());
  EXPECT_THAT(
      registry
          .Register(PassWithOptions<proto::DecomposeOptions>(
              "clash", "lowering", [](const proto::DecomposeOptions&) { return MakeNoOp(); }))
          .message(),
      HasSubstr("registered with options 'lowering' of type loom.proto.DecomposeOptions, "
                "which pass 'fine' takes as loom.proto.LowerOptions"));
}

TEST(PassRegistryTest, ListsEachOptionsBlockOnce) {
  PassRegistry registry;
  ASSERT_TRUE(registry.Register(NoOp("plain")).ok());
  ASSERT_TRUE(registry.Register(Lowering("b", "lowering")).ok());
  ASSERT_TRUE(registry.Register(Lowering("a", "lowering")).ok());
  ASSERT_TRUE(registry
                  .Register(PassWithOptions<proto::DecomposeOptions>(
                      "c", "decompose", [](const proto::DecomposeOptions&) { return MakeNoOp(); }))
                  .ok());
  EXPECT_THAT(registry.OptionsFields(),
              ElementsAre(Pair("decompose", proto::DecomposeOptions::descriptor()),
                          Pair("lowering", proto::LowerOptions::descriptor())));
}

TEST(PassRegistryTest, CreateChecksTheOptionsBlock) {
  PassRegistry registry;
  ASSERT_TRUE(registry.Register(NoOp("plain")).ok());
  ASSERT_TRUE(registry.Register(Lowering("lowering", "lower")).ok());

  proto::LowerOptions options;
  options.set_gemm_min_rows(7);
  EXPECT_EQ(registry.Create({"plain", "lower", &options}).status().message(),
            "pass 'plain' does not take 'lower' options (it takes none)");

  proto::DecomposeOptions decompose;
  EXPECT_EQ(registry.Create({"lowering", "decompose", &decompose}).status().message(),
            "pass 'lowering' does not take 'decompose' options (it takes 'lower')");
  EXPECT_EQ(registry.Create({"lowering", "lower", &decompose}).status().code(),
            absl::StatusCode::kInternal);

  absl::StatusOr<std::unique_ptr<Pass>> pass = registry.Create({"lowering", "lower", &options});
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(static_cast<NoOpPass&>(**pass).tag, 7);

  // Options are optional: a pass that takes some runs with defaults.
  pass = registry.Create(Spec("lowering"));
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(static_cast<NoOpPass&>(**pass).tag, 0);
}

TEST(PassRegistryTest, FactoryErrorsPassThrough) {
  PassRegistry registry;
  ASSERT_TRUE(registry
                  .Register(PassWithoutOptions("picky",
                                               []() -> absl::StatusOr<std::unique_ptr<Pass>> {
                                                 return absl::InvalidArgumentError("no thanks");
                                               }))
                  .ok());
  EXPECT_EQ(registry.Create(Spec("picky")).status().message(), "no thanks");
}

}  // namespace
}  // namespace loom
