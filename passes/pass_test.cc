#include "passes/pass.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class NoOpPass : public Pass {
 public:
  explicit NoOpPass(int tag = 0) : tag(tag) {}
  absl::StatusOr<bool> Run(Module&) override { return false; }
  int tag;
};

absl::StatusOr<std::unique_ptr<Pass>> MakeNoOp(const proto::PassSpec&) {
  return std::make_unique<NoOpPass>();
}

LOOM_REGISTER_PASS("pass-test-registered", "", MakeNoOp);

proto::PassSpec Spec(const std::string& name) {
  proto::PassSpec spec;
  spec.set_name(name);
  return spec;
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
  ASSERT_TRUE(registry.Register({"zeta", "", MakeNoOp}).ok());
  ASSERT_TRUE(registry.Register({"alpha-2", "", MakeNoOp}).ok());
  EXPECT_THAT(registry.Names(), ElementsAre("alpha-2", "zeta"));

  absl::StatusOr<const PassRegistration*> found = registry.Lookup("nope");
  EXPECT_EQ(found.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(found.status().message(), "unknown pass 'nope'; known passes: alpha-2, zeta");
  EXPECT_EQ(registry.Lookup("").status().message(),
            "pass has no name; known passes: alpha-2, zeta");
}

TEST(PassRegistryTest, RejectsBadRegistrations) {
  PassRegistry registry;
  ASSERT_TRUE(registry.Register({"dup", "", MakeNoOp}).ok());
  EXPECT_THAT(registry.Register({"dup", "", MakeNoOp}).message(), HasSubstr("registered twice"));
  EXPECT_THAT(registry.Register({"Not_Kebab", "", MakeNoOp}).message(),
              HasSubstr("not kebab-case"));
  EXPECT_THAT(registry.Register({"", "", MakeNoOp}).message(), HasSubstr("not kebab-case"));
  // `name` is a field of PassSpec but not one of its options.
  EXPECT_THAT(registry.Register({"odd", "name", MakeNoOp}).message(),
              HasSubstr("PassSpec.options does not have"));
  EXPECT_THAT(registry.Register({"odd", "nonesuch", MakeNoOp}).message(),
              HasSubstr("PassSpec.options does not have"));
  EXPECT_TRUE(registry.Register({"fine", "fuse", MakeNoOp}).ok());
}

TEST(PassRegistryTest, CreateChecksTheOptionsBlock) {
  PassRegistry registry;
  ASSERT_TRUE(registry.Register({"plain", "", MakeNoOp}).ok());
  ASSERT_TRUE(
      registry
          .Register({"fusing", "fuse",
                     [](const proto::PassSpec& spec) -> absl::StatusOr<std::unique_ptr<Pass>> {
                       return std::make_unique<NoOpPass>(spec.fuse().max_nodes_per_kernel());
                     }})
          .ok());

  proto::PassSpec plain_with_fuse = Spec("plain");
  plain_with_fuse.mutable_fuse();
  EXPECT_EQ(registry.Create(plain_with_fuse).status().message(),
            "pass 'plain' does not take 'fuse' options (it takes none)");

  proto::PassSpec fusing_with_cpp = Spec("fusing");
  fusing_with_cpp.mutable_cpp();
  EXPECT_EQ(registry.Create(fusing_with_cpp).status().message(),
            "pass 'fusing' does not take 'cpp' options (it takes 'fuse')");

  proto::PassSpec fusing = Spec("fusing");
  fusing.mutable_fuse()->set_max_nodes_per_kernel(7);
  absl::StatusOr<std::unique_ptr<Pass>> pass = registry.Create(fusing);
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(static_cast<NoOpPass&>(**pass).tag, 7);

  // Options are optional: a pass that takes some runs with defaults.
  EXPECT_TRUE(registry.Create(Spec("fusing")).ok());
}

TEST(PassRegistryTest, FactoryErrorsPassThrough) {
  PassRegistry registry;
  ASSERT_TRUE(registry
                  .Register({"picky", "",
                             [](const proto::PassSpec&) -> absl::StatusOr<std::unique_ptr<Pass>> {
                               return absl::InvalidArgumentError("no thanks");
                             }})
                  .ok());
  EXPECT_EQ(registry.Create(Spec("picky")).status().message(), "no thanks");
}

}  // namespace
}  // namespace loom
