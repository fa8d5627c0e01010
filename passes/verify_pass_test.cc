#include "passes/verify_pass.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

Module ReluModule() {
  Module module;
  Graph& graph = module.graph;
  const ValueId x = graph.AddInput("x", TensorType{DType::kF32, {4}}).value();
  graph.AddNode("r", "relu", {x}, {"y"}).value();
  graph.AddOutput(graph.FindValue("y"));
  EXPECT_TRUE(InferShapes(graph).ok());
  return module;
}

TEST(VerifyPassTest, ValidGraphIsUnchanged) {
  Module module = ReluModule();
  absl::StatusOr<bool> changed = VerifyPass().Run(module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(module.graph.nodes().size(), 1);
}

TEST(VerifyPassTest, InvalidGraphIsAnError) {
  Module module = ReluModule();
  module.graph.mutable_node(0).op = "no_such_op";
  absl::StatusOr<bool> changed = VerifyPass().Run(module);
  EXPECT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("no_such_op"));
}

TEST(VerifyPassTest, IsRegisteredAsVerify) {
  PassSpec spec{"verify"};
  absl::StatusOr<std::unique_ptr<Pass>> pass = PassRegistry::Global().Create(spec);
  ASSERT_TRUE(pass.ok()) << pass.status();
  Module module = ReluModule();
  EXPECT_EQ((*pass)->Run(module).value(), false);
}

}  // namespace
}  // namespace loom
