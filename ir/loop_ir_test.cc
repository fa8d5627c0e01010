#include "ir/loop_ir.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// out[x0] = in[x0] + 1 over 8 elements.
LoopProgram AddOne() {
  LoopProgram program;
  program.buffers = {Buffer{"in", DType::kF32, {8}, {1}, BufferKind::kInput},
                     Buffer{"out", DType::kF32, {8}, {1}, BufferKind::kOutput}};
  program.inputs = {0};
  program.outputs = {1};
  ComputeNode node;
  node.name = "add_one";
  node.output = 1;
  node.ranges = {8};
  node.store_index = program.exprs->Var(0);
  ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
  load.buffer = 0;
  load.index = program.exprs->Var(0);
  ScalarOp one{ScalarOp::Kind::kConst, DType::kF32};
  one.constant = 1;
  ScalarOp add{ScalarOp::Kind::kCall, DType::kF32};
  add.fn = ScalarFn::kAdd;
  add.args = {0, 1};
  node.body = {load, one, add};
  node.root = 2;
  program.nodes.push_back(node);
  return program;
}

TEST(LoopIrTest, ValidProgramVerifiesAndPrints) {
  const LoopProgram program = AddOne();
  EXPECT_TRUE(VerifyLoopProgram(program).ok());
  EXPECT_EQ(PrintLoopProgram(program),
            "buffer in: f32[8] input\n"
            "buffer out: f32[8] output\n"
            "node add_one: out[x0] over (x0) in [8]\n"
            "  t0: f32 = load in[x0]\n"
            "  t1: f32 = const 1\n"
            "  t2: f32 = add(t0, t1)  <- root\n");
}

TEST(LoopIrTest, VerifierCatchesBrokenPrograms) {
  LoopProgram program = AddOne();
  program.nodes[0].body[2].args = {0, 2};
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("not before it"));

  program = AddOne();
  program.nodes[0].body[0].index = program.exprs->Var(1);
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("unknown loops"));

  program = AddOne();
  program.nodes[0].body[0].dtype = DType::kF64;
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("wrong dtype"));

  program = AddOne();
  program.inputs.clear();
  EXPECT_THAT(VerifyLoopProgram(program).message(),
              HasSubstr("reads buffer 'in' before anything writes it"));

  program = AddOne();
  program.nodes[0].reduction_ranges = {4};
  EXPECT_THAT(VerifyLoopProgram(program).message(),
              HasSubstr("reduction loops and reduce kind disagree"));

  program = AddOne();
  program.nodes.clear();
  EXPECT_THAT(VerifyLoopProgram(program).message(),
              HasSubstr("output buffer 'out' is never written"));
}

TEST(LoopIrTest, ScalarFnArity) {
  EXPECT_EQ(ScalarFnArity(ScalarFn::kExp), 1);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kNot), 1);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kAdd), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kGe), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kSelect), 3);
}

}  // namespace
}  // namespace loom
