#include "ir/loop_ir.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

// out[x0] = in[x0] + 1 over 8 elements.
LoopProgram AddOne() {
  LoopProgram program;
  program.buffers = {Buffer{"in", DType::kF32, {8}, BufferKind::kInput},
                     Buffer{"out", DType::kF32, {8}, BufferKind::kOutput}};
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

// out[x0] = table[check(idx[x0])] over 4 elements: a gather at indices
// known only at run time.
LoopProgram CheckedGather() {
  LoopProgram program;
  program.buffers = {Buffer{"table", DType::kF32, {8}, BufferKind::kInput},
                     Buffer{"idx", DType::kI32, {4}, BufferKind::kInput},
                     Buffer{"out", DType::kF32, {4}, BufferKind::kOutput},
                     Buffer{"index_errors", DType::kI64, {2}, BufferKind::kIndexErrors}};
  program.inputs = {0, 1};
  program.outputs = {2};
  program.index_errors = 3;
  program.index_checks = {IndexCheck{"lookup", "gather", 0, 8}};
  ComputeNode node;
  node.name = "lookup";
  node.output = 2;
  node.ranges = {4};
  node.store_index = program.exprs->Var(0);
  ScalarOp index{ScalarOp::Kind::kLoad, DType::kI32};
  index.buffer = 1;
  index.index = program.exprs->Var(0);
  ScalarOp check{ScalarOp::Kind::kCheckIndex, DType::kI64};
  check.site = 0;
  check.extent = 8;
  check.args = {0};
  ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
  load.buffer = 0;
  load.index = program.exprs->Const(0);
  load.stride = 1;
  load.args = {1};
  node.body = {index, check, load};
  node.root = 2;
  program.nodes.push_back(node);
  return program;
}

TEST(LoopIrTest, IndexChecksVerifyAndPrint) {
  const LoopProgram program = CheckedGather();
  EXPECT_TRUE(VerifyLoopProgram(program).ok()) << VerifyLoopProgram(program);
  EXPECT_THAT(PrintLoopProgram(program),
              HasSubstr("buffer index_errors: i64[2] index_errors\n"
                        "index check 0: node lookup (gather) axis 0 of size 8\n"));
  EXPECT_THAT(PrintLoopProgram(program), HasSubstr("t1: i64 = check_index t0 in 8 at 0\n"));
}

TEST(LoopIrTest, VerifierCatchesBrokenIndexChecks) {
  LoopProgram program = CheckedGather();
  program.index_errors = -1;
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("no index error slot"));
  program = CheckedGather();
  program.buffers[3].sizes = {1};
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("no index error slot"));
  program = CheckedGather();
  program.nodes[0].body[1].site = 1;
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("unknown site"));
  program = CheckedGather();
  program.nodes[0].body[1].dtype = DType::kI32;
  EXPECT_THAT(VerifyLoopProgram(program).message(),
              HasSubstr("index check at step 1 needs one integer operand and an i64 result"));
  program = CheckedGather();
  program.nodes[0].body[1].extent = -1;
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("negative extent"));
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

// f16 and bf16 values are loaded, stored and cast, never computed on.
TEST(LoopIrTest, VerifierRefusesArithmeticOnHalfFloats) {
  LoopProgram program = AddOne();
  program.buffers[0].dtype = DType::kF16;
  program.nodes[0].body[0].dtype = DType::kF16;
  EXPECT_THAT(VerifyLoopProgram(program).message(),
              HasSubstr("step 2 computes on a storage type (f16, bf16,"));

  ScalarOp widen{ScalarOp::Kind::kCast, DType::kF32};
  widen.args = {0};
  program.nodes[0].body.insert(program.nodes[0].body.begin() + 1, widen);
  program.nodes[0].body[3].args = {1, 2};
  program.nodes[0].root = 3;
  EXPECT_TRUE(VerifyLoopProgram(program).ok()) << VerifyLoopProgram(program);
}

TEST(LoopIrTest, ScalarFnArity) {
  EXPECT_EQ(ScalarFnArity(ScalarFn::kExp), 1);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kSign), 1);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kNot), 1);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kBitNot), 1);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kAdd), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kFmod), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kGe), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kXor), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kBitXor), 2);
  EXPECT_EQ(ScalarFnArity(ScalarFn::kSelect), 3);
  EXPECT_STREQ(ScalarFnName(ScalarFn::kRound), "round");
  EXPECT_STREQ(ReduceKindName(ReduceKind::kArgMinLast), "argmin_last");
}

// out[x0] = argmax over x1 of data[8 * x1 + idx[x0]]: an index load, then
// an indirect load, folded by an arg reduction.
LoopProgram IndirectArgmax() {
  LoopProgram program;
  ExprContext& e = *program.exprs;
  program.buffers = {Buffer{"data", DType::kF32, {4, 8}, BufferKind::kInput},
                     Buffer{"idx", DType::kI32, {3}, BufferKind::kWeight},
                     Buffer{"out", DType::kI64, {3}, BufferKind::kOutput}};
  program.inputs = {0};
  program.weights = {1};
  program.outputs = {2};
  ComputeNode node;
  node.name = "pick";
  node.output = 2;
  node.ranges = {3};
  node.reduction_ranges = {4};
  node.reduce = ReduceKind::kArgMax;
  node.store_index = e.Var(0);
  ScalarOp index{ScalarOp::Kind::kLoad, DType::kI32};
  index.buffer = 1;
  index.index = e.Var(0);
  ScalarOp load{ScalarOp::Kind::kLoad, DType::kF32};
  load.buffer = 0;
  load.index = e.Mul(e.Var(1), 8);
  load.stride = 1;
  load.args = {0};
  ScalarOp position{ScalarOp::Kind::kIndex, DType::kI64};
  position.index = e.Add(e.Var(0), e.Var(1));
  node.body = {index, load, position};
  node.root = 1;
  program.nodes.push_back(node);
  return program;
}

TEST(LoopIrTest, IndirectLoadsIndexStepsAndArgReductions) {
  const LoopProgram program = IndirectArgmax();
  EXPECT_TRUE(VerifyLoopProgram(program).ok()) << VerifyLoopProgram(program);
  EXPECT_EQ(PrintLoopProgram(program),
            "buffer data: f32[4,8] input\n"
            "buffer idx: i32[3] weight\n"
            "buffer out: i64[3] output\n"
            "node pick: out[x0] over (x0) in [3] argmax over (x1) in [4]\n"
            "  t0: i32 = load idx[x0]\n"
            "  t1: f32 = load data[8*x1 + 1*t0]  <- root\n"
            "  t2: i64 = index x0 + x1\n");
}

TEST(LoopIrTest, VerifierChecksTheNewSteps) {
  LoopProgram program = IndirectArgmax();
  program.nodes[0].body[1].args = {1};
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("not before it"));

  program = IndirectArgmax();
  program.nodes[0].body[0].dtype = DType::kF32;
  program.buffers[1].dtype = DType::kF32;
  EXPECT_THAT(VerifyLoopProgram(program).message(),
              HasSubstr("indirect load at step 1 needs one integer operand"));

  program = IndirectArgmax();
  program.nodes[0].body[2].dtype = DType::kI32;
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("index step 2 must be an i64"));

  program = IndirectArgmax();
  program.nodes[0].body[2].index = program.exprs->Var(2);
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("unknown loops"));

  program = IndirectArgmax();  // an arg reduction stores i64 positions
  program.buffers[2].dtype = DType::kF32;
  EXPECT_THAT(VerifyLoopProgram(program).message(), HasSubstr("wrong dtype"));
}

}  // namespace
}  // namespace loom
