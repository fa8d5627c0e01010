// Every starter op through the whole CPU path (decompose, lower, schedule,
// emit C++, native compile, run), compared with the reference interpreter.
// Ops are grouped into a few graphs so that each test compiles once.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/cpp/artifact.h"
#include "backends/cpp/executable.h"
#include "compiler/check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/module.h"
#include "ir/op_registry.h"
#include "runtime/model.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

TEST(EndToEndTest, UnaryOps) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {3, 17});
  const ValueId positive = b.Op("add", {b.Op("abs", {x}), b.Weight("one", {1}, 0)});
  for (const char* op : {"neg", "abs", "exp", "tanh", "sigmoid", "relu"}) {
    b.Output(b.Op(op, {x}));
  }
  for (const char* op : {"log", "sqrt", "rsqrt", "reciprocal"}) {
    b.Output(b.Op(op, {positive}));
  }
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, BinaryOpsBroadcast) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 1, 5});
  const ValueId y = b.Input("y", DType::kF32, {3, 1});
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
    b.Output(b.Op(op, {x, y}));
  }
  const ValueId positive = b.Op("add", {b.Op("abs", {y}), b.Weight("one", {1}, 0)});
  b.Output(b.Op("div", {x, positive}));
  b.Output(b.Op("pow", {positive, x}));
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, ComparisonsWhereAndCast) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {4, 6});
  const ValueId y = b.Input("y", DType::kF32, {6});
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    b.Output(b.Op(op, {x, y}));
  }
  const ValueId less = b.Op("less", {x, y});
  b.Output(b.Op("where", {less, x, y}));
  b.Output(b.Op("logical_not", {less}));
  for (const char* to : {"f64", "i32", "i64", "bool"}) {
    Attrs attrs;
    attrs.Set("to", std::string(to));
    b.Output(b.Op("cast", {x}, attrs));
  }
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, NanPropagationAndSaturatingCasts) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {4, 9});
  const ValueId nan_where_negative = b.Op("sqrt", {x});
  b.Output(b.Op("maximum", {nan_where_negative, x}));
  b.Output(b.Op("minimum", {x, nan_where_negative}));
  b.Output(b.Op("reduce_max", {nan_where_negative}, IntsAttr("axes", {1})));
  b.Output(b.Op("reduce_min", {nan_where_negative}, IntsAttr("axes", {0})));
  Tensor huge_data(DType::kF32, {1});
  huge_data.SetDouble(0, 3e18);
  const ValueId huge = *b.graph().AddInitializer("huge", ValueKind::kWeight, huge_data);
  const ValueId big = b.Op("mul", {x, huge});
  for (const char* to : {"i32", "i64"}) {
    Attrs attrs;
    attrs.Set("to", std::string(to));
    b.Output(b.Op("cast", {big}, attrs));
    b.Output(b.Op("cast", {nan_where_negative}, attrs));
  }
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, IntegerArithmetic) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kI32, {5, 3});
  const ValueId y = b.Input("y", DType::kI32, {3});
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum", "neg", "abs", "relu"}) {
    b.Output(op == std::string("neg") || op == std::string("abs") || op == std::string("relu")
                 ? b.Op(op, {x})
                 : b.Op(op, {x, y}));
  }
  const ValueId z = b.Input("z", DType::kI64, {7});
  Attrs all;
  all.Set("keepdims", int64_t{1});
  b.Output(b.Op("reduce_sum", {z}, all));
  b.Output(b.Op("reduce_max", {z}, all));
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, Reductions) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {3, 4, 5});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    b.Output(b.Op(op, {x}, IntsAttr("axes", {-1})));
    Attrs keep = IntsAttr("axes", {0, 2});
    keep.Set("keepdims", int64_t{1});
    b.Output(b.Op(op, {x}, keep));
    b.Output(b.Op(op, {x}));
  }
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, ViewsAndConcat) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 3, 4});
  const ValueId t = b.Op("transpose", {x}, IntsAttr("perm", {2, 0, 1}));
  b.Output(b.Op("neg", {b.Op("reshape", {t}, IntsAttr("shape", {4, -1}))}));
  b.Output(b.Op("reshape", {x}, IntsAttr("shape", {6, 4})));
  const ValueId u = b.Op("unsqueeze", {x}, IntsAttr("axes", {1}));
  b.Output(b.Op("exp", {u}));
  b.Output(b.Op("squeeze", {u}, IntsAttr("axes", {1})));
  const ValueId col = b.Input("col", DType::kF32, {3, 1});
  b.Output(b.Op("expand", {col}, IntsAttr("shape", {2, 3, 4})));
  Attrs slice = IntsAttr("starts", {-1, 1});
  slice.Set("ends", std::vector<int64_t>{-100, 3});
  slice.Set("axes", std::vector<int64_t>{2, 1});
  slice.Set("steps", std::vector<int64_t>{-2, 1});
  b.Output(b.Op("slice", {x}, slice));
  Attrs concat;
  concat.Set("axis", int64_t{-1});
  b.Output(b.Op("concat", {x, b.Op("neg", {x}), x}, concat));
  CompileRunAndCompare(std::move(b.graph()));
}

// DenseNet's pattern: each layer reads the concat of the block's input and
// every earlier layer's output; the concats share the buffer of the
// longest (lowering's FindConcatPrefixes). With a batch of 2 the shorter
// ones are strided views of it. Also: a prefix concat as a graph output,
// two concats that extend one prefix differently, a repeated concat, and
// a chain along the first axis.
TEST(EndToEndTest, ConcatsThatExtendEachOther) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 3, 4, 5});
  Attrs channels;
  channels.Set("axis", int64_t{1});
  // A layer: 2 channels computed from all the features so far.
  auto layer = [&](ValueId features, uint64_t seed) {
    const ValueId w = b.Weight(absl::StrCat("w", seed), {1, 2, 1, 1}, seed);
    Attrs first_two = IntsAttr("starts", {0});
    first_two.Set("ends", std::vector<int64_t>{2});
    first_two.Set("axes", std::vector<int64_t>{1});
    return b.Op("mul", {b.Op("tanh", {b.Op("slice", {features}, first_two)}), w});
  };
  std::vector<ValueId> features = {x};
  ValueId block = x;
  for (uint64_t l = 1; l <= 4; ++l) {
    features.push_back(layer(block, l));
    block = b.Op("concat", features, channels);
    if (l == 2) b.Output(b.Op("neg", {block}));
    if (l == 3) b.Output(block);
  }
  b.Output(b.Op("exp", {block}));
  // Another extension of the first two features, and the same concat again.
  b.Output(b.Op("concat", {x, features[1], x}, channels));
  b.Output(b.Op("concat", {features[0], features[1], features[2], features[3]}, channels));
  Attrs rows;
  rows.Set("axis", int64_t{0});
  const ValueId first = b.Op("concat", {x, x}, rows);
  b.Output(b.Op("abs", {first}));
  b.Output(b.Op("concat", {x, x, b.Op("neg", {first})}, rows));
  // A matrix product of a concat of columns that a longer one extends: its
  // rows are strided in the longer one's buffer.
  Attrs columns;
  columns.Set("axis", int64_t{-1});
  const ValueId m = b.Input("m", DType::kF32, {4, 3});
  const ValueId negated = b.Op("neg", {m});
  const ValueId pair = b.Op("concat", {m, negated}, columns);
  const ValueId product = b.Op("matmul", {pair, b.Weight("wm", {6, 5}, 9)});
  b.Output(b.Op("concat", {m, negated, product}, columns));
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, MatmulShapes) {
  GraphBuilder b;
  const ValueId a = b.Input("a", DType::kF32, {2, 3, 5});
  const ValueId w = b.Weight("w", {5, 7}, 1);
  const ValueId v = b.Input("v", DType::kF32, {5});
  const ValueId batched = b.Input("batched", DType::kF32, {1, 7, 4});
  const ValueId aw = b.Op("matmul", {a, w});  // [2,3,7]
  b.Output(aw);
  b.Output(b.Op("matmul", {aw, batched}));  // [2,3,4] with batch broadcast
  b.Output(b.Op("matmul", {a, v}));         // [2,3]
  b.Output(b.Op("matmul", {v, w}));         // [7]
  b.Output(b.Op("matmul", {v, v}));         // []
  CompileRunAndCompare(std::move(b.graph()));
}

// Products that become gemm calls (passes/lower.h): transposed operands,
// batch loops of their own (the threads take whole calls of a batch of 8,
// blocks of every call's rows of a batch of 3, the transposed one's too),
// broadcast ones, a shared weight folded into the rows, f64, an operand at
// an offset (a slice) and one computed first.
TEST(EndToEndTest, GemmCalls) {
  GraphBuilder b;
  Attrs swap;
  swap.Set("perm", std::vector<int64_t>{0, 2, 1});
  const ValueId a = b.Input("a", DType::kF32, {3, 17, 9});
  const ValueId bb = b.Input("b", DType::kF32, {3, 9, 11});
  b.Output(b.Op("matmul", {a, bb}));  // batched
  b.Output(b.Op("matmul",
                {b.Input("a8", DType::kF32, {8, 5, 6}), b.Input("b8", DType::kF32, {8, 6, 4})}));
  b.Output(b.Op("matmul", {b.Op("transpose", {bb}, swap), b.Op("transpose", {a}, swap)}));
  b.Output(b.Op("matmul", {a, b.Weight("w", {9, 13}, 2)}));  // folded rows
  b.Output(b.Op("matmul", {a, b.Input("shared", DType::kF32, {1, 9, 5})}));
  Attrs rows;
  rows.Set("starts", std::vector<int64_t>{4});
  rows.Set("ends", std::vector<int64_t>{16});
  rows.Set("axes", std::vector<int64_t>{1});
  b.Output(b.Op("matmul", {b.Op("exp", {b.Op("slice", {a}, rows)}), bb}));
  const ValueId d = b.Input("d", DType::kF64, {12, 10});
  b.Output(b.Op("matmul", {d, b.Input("e", DType::kF64, {10, 12})}));
  CompileRunAndCompare(std::move(b.graph()));
}

// Products whose next kernel runs as their epilogue (PrintGemmWithEpilogue),
// one graph each so that the two kernels are neighbours: 201 rows, each
// thread's block computed alone (blocks of unequal size); 100, too few for
// two blocks, so the two stay apart (tests/examples_test.sh runs the
// library's shared product before the epilogue, on more threads); a batch of
// sequences whose epilogue (a residual and a layer norm) runs over two row
// loops with reductions inside; a softmax; and a transposed left operand, whose
// blocks of rows are columns in memory.
TEST(EndToEndTest, GemmEpilogues) {
  for (int64_t rows : {201, 100}) {
    GraphBuilder b;
    const ValueId x = b.Input("x", DType::kF32, {rows, 24});
    b.Output(
        b.Op("gelu", {b.Op("linear", {x, b.Weight("w", {33, 24}, 1), b.Weight("bias", {33}, 2)})}));
    CompileRunAndCompare(std::move(b.graph()));
  }
  GraphBuilder sequences;
  const ValueId x = sequences.Input("x", DType::kF32, {8, 24, 16});
  const ValueId linear = sequences.Op(
      "linear", {x, sequences.Weight("w", {16, 16}, 3), sequences.Weight("bias", {16}, 4)});
  sequences.Output(sequences.Op(
      "layer_norm", {sequences.Op("add", {linear, x}), sequences.Weight("scale", {16}, 5)}));
  CompileRunAndCompare(std::move(sequences.graph()));
  GraphBuilder classifier;  // a softmax in explicit vectors over each row
  classifier.Output(
      classifier.Op("softmax",
                    {classifier.Op("matmul", {classifier.Input("x", DType::kF32, {130, 24}),
                                              classifier.Weight("w", {24, 48}, 7)})},
                    MakeAttrs({{"axis", int64_t{-1}}})));
  CompileRunAndCompare(std::move(classifier.graph()));
  GraphBuilder transposed;
  const ValueId at = transposed.Input("at", DType::kF32, {24, 131});
  transposed.Output(
      transposed.Op("relu", {transposed.Op("gemm", {at, transposed.Weight("w", {24, 40}, 6)},
                                           MakeAttrs({{"trans_a", int64_t{1}}}))}));
  CompileRunAndCompare(std::move(transposed.graph()));
}

// Layers at other widths and row counts: products with their epilogues
// that are one code but for their shape constants share one function
// (ShareBodiesAcrossShapes), which reads each caller's constants.
TEST(EndToEndTest, LayersOfOtherWidthsShareTheirFunctions) {
  GraphBuilder b;
  ValueId x = b.Input("x", DType::kF32, {150, 24});
  int64_t depth = 24;
  int seed = 1;
  for (const int64_t width : {40, 72, 16}) {
    x = b.Op("relu", {b.Op("linear", {x, b.Weight(absl::StrCat("w", width), {width, depth}, seed),
                                      b.Weight(absl::StrCat("bias", width), {width}, seed + 1)})});
    depth = width;
    seed += 2;
  }
  b.Output(x);
  Graph graph = b.graph();
  ASSERT_TRUE(InferShapes(graph).ok());
  const absl::StatusOr<Module> module = EmitModule(std::move(graph));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(module->source->text, testing::HasSubstr("loom_m0(a, loom_shape);"));
  CompileRunAndCompare(std::move(b.graph()));
}

TEST(EndToEndTest, SoftmaxThroughDecomposition) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {3, 33});
  Attrs last, first;
  last.Set("axis", int64_t{-1});
  first.Set("axis", int64_t{0});
  b.Output(b.Op("softmax", {x}, last));
  b.Output(b.Op("softmax", {x}, first));
  CompileRunAndCompare(std::move(b.graph()));
}

// Rows too few for the threads: each member's own loops are shared by the
// threads, reductions in two levels.
TEST(EndToEndTest, LongRowsSplitOverTheThreads) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {1, 1 << 16});
  const ValueId two_rows = b.Input("two_rows", DType::kF32, {2, 1 << 16});
  Attrs last;
  last.Set("axis", int64_t{-1});
  b.Output(b.Op("softmax", {x}, last));
  b.Output(b.Op("reduce_max", {two_rows}, IntsAttr("axes", {-1})));
  b.Output(b.Op("reduce_sum", {two_rows}, IntsAttr("axes", {-1})));
  CompileRunAndCompare(std::move(b.graph()));
}

// Recurrences of every kind on one input: an LSTM forwards and both ways,
// a GRU either way round, an RNN; at odd lengths and batches.
Graph Recurrences(int64_t seq, int64_t batch, int64_t hidden = 16) {
  GraphBuilder b;
  const int64_t input = 5;
  const ValueId x = b.Input("x", DType::kF32, {seq, batch, input});
  auto recurrence = [&](const std::string& op, int64_t gates, int64_t directions, Attrs attrs) {
    attrs.Set("hidden_size", hidden);
    if (directions == 2) attrs.Set("direction", std::string("bidirectional"));
    const uint64_t seed = gates * 10 + directions;
    const std::string name = absl::StrCat(op, directions);
    const ValueId w = b.Weight(name + "_w", {directions, gates * hidden, input}, seed, -0.5, 0.5);
    const ValueId r =
        b.Weight(name + "_r", {directions, gates * hidden, hidden}, seed + 1, -0.5, 0.5);
    const ValueId bias =
        b.Weight(name + "_b", {directions, 2 * gates * hidden}, seed + 2, -0.5, 0.5);
    for (ValueId output : b.Ops(op, {x, w, r, bias}, op == "lstm" ? 3 : 2, attrs)) {
      b.Output(output);
    }
  };
  recurrence("lstm", 4, 1, {});
  recurrence("lstm", 4, 2, {});
  Attrs reset_after;
  reset_after.Set("linear_before_reset", int64_t{1});
  recurrence("gru", 3, 1, reset_after);
  recurrence("gru", 3, 2, {});
  recurrence("rnn", 1, 1, {});
  return std::move(b.graph());
}

// Unrolled into one kernel a chunk of steps, the steps that repeat run as
// one loop over the repeats (backends/cpp/outline.h).
TEST(EndToEndTest, UnrolledRecurrenceStepsRunAsALoop) {
  Graph graph = Recurrences(11, 3);
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<Module> module = EmitModule(Graph(graph));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(module->source->text, testing::HasSubstr("for (int64_t loom_step = 0;"));
  CompileRunAndCompare(std::move(graph));
}

// Kept as loops (decompose's rnn: LOOP): one kernel a direction, whatever
// the length, its steps in order.
TEST(EndToEndTest, RecurrencesKeptAsLoops) {
  EndToEndOptions options;
  options.rnn_loop = true;
  // Batch 37: blocks of rows (whole tiles of LOOM_VECMAT_ROWS rows and the
  // rest in one tile); batch 9, a thread's five rows all in that one;
  // hidden 160: a recurrent weight that the products read in blocks of its
  // rows for fewer than four rows, and whole for more; hidden 40 at batch
  // 1: one vector's wider tiles, then the narrower ones for the 160
  // columns' last 32; hidden 192: a team sharing each step's products.
  struct Shape {
    int64_t seq, batch, hidden;
  };
  for (const auto [seq, batch, hidden] :
       {Shape{11, 3, 16}, Shape{1, 1, 16}, Shape{40, 2, 16}, Shape{5, 37, 16}, Shape{3, 1, 160},
        Shape{3, 9, 160}, Shape{4, 1, 40}, Shape{3, 1, 192}, Shape{4, 9, 192}}) {
    SCOPED_TRACE(absl::StrCat("seq ", seq, ", batch ", batch, ", hidden ", hidden));
    Graph graph = Recurrences(seq, batch, hidden);
    ASSERT_TRUE(InferShapes(graph).ok());
    absl::StatusOr<Module> module = EmitModule(Graph(graph), "", 4096, false, false, true);
    ASSERT_TRUE(module.ok()) << module.status();
    int ordered = 0;
    for (const Kernel& kernel : module->schedule->kernels) ordered += kernel.ordered_loop >= 0;
    EXPECT_EQ(ordered, 7) << "a kernel per direction";  // 1 + 2 + 1 + 2 + 1
    // The LSTMs' steps multiply a weight of 4 x 192 x 192 floats, 576 KiB:
    // a team; every other step's rows run in blocks.
    const std::string& source = module->source->text;
    EXPECT_EQ(source.find("#pragma omp barrier") != std::string::npos, hidden == 192);
    EXPECT_NE(source.find("loom_row_block("), std::string::npos);
    // On Arm too (under QEMU), where the input projection is loops rather
    // than a library call (fewer than 8 rows).
    if (seq * batch < 8) {
      EndToEndOptions arm = options;
      arm.march = "armv8-a";
      CompileRunAndCompare(Graph(graph), arm);
    }
    CompileRunAndCompare(std::move(graph), options);
  }
}

// Kernels whose code differs between two shapes only in shape constants
// share one native compile (backends/cpp/shape_templates.h): the first
// shape compiles its own code, the second a template that reads the
// constants that differed as it runs, and every later shape that differs
// only in those runs the template without compiling; one that differs in
// another constant compiles a template that reads it too. Each shape's
// results are checked against the interpreter's.
TEST(EndToEndTest, ShapesOfOneCodeShareOneNativeCompile) {
  const std::string cache = TestCacheDir() + "/shape_templates";
  struct Step {
    int64_t seq, batch;
    bool shared, compiles;
  };
  for (const auto [seq, batch, shared, compiles] :
       {Step{11, 9, false, true}, Step{12, 9, true, true}, Step{13, 9, true, false},
        Step{13, 10, true, true}, Step{20, 12, true, false}}) {
    SCOPED_TRACE(absl::StrCat("seq ", seq, ", batch ", batch));
    Graph graph = Recurrences(seq, batch);
    ASSERT_TRUE(InferShapes(graph).ok());
    const std::vector<Tensor> inputs = MakeInputs(graph);
    const absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status();
    std::vector<std::string> names;
    for (ValueId id : graph.outputs()) names.push_back(graph.value(id).name);
    absl::StatusOr<Module> module = EmitModule(std::move(graph), "", 4096, false, false, true);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<cpp::CppExecutable> executable = cpp::CppExecutable::Create(*module, cache);
    ASSERT_TRUE(executable.ok()) << executable.status();
    EXPECT_EQ(executable->shape_template(), shared);
    EXPECT_EQ(executable->cache_hit(), !compiles);
    const absl::StatusOr<std::vector<Tensor>> actual = executable->Run(inputs);
    ASSERT_TRUE(actual.ok()) << actual.status();
    ExpectEqualWithinTolerance(*actual, *expected, names);
    // An artifact of these kernels passes them its shape constants too.
    const std::string artifact = absl::StrCat(cache, "/model.loom");
    ASSERT_TRUE(cpp::WriteArtifact(*module, {}, cache, artifact).ok());
    const absl::StatusOr<Model> loaded = Model::Load(artifact);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    std::vector<InputTensor> bound;
    for (size_t i = 0; i < inputs.size(); ++i) {
      bound.push_back(
          {loaded->inputs()[i].name, inputs[i].dtype(), inputs[i].shape(), inputs[i].data()});
    }
    Model::Session session = loaded->NewSession();
    ASSERT_TRUE(session.Run(bound).ok());
    const Tensor& first = (*expected)[0];
    const float* got = static_cast<const float*>(session.output(0));
    for (int64_t e = 0; e < first.num_elements(); ++e) {
      ASSERT_NEAR(got[e], first.GetDouble(e),
                  kCheckAbsTolerance + kCheckRelTolerance * std::fabs(first.GetDouble(e)));
    }
  }
  // LOOM_SHAPE_TEMPLATES=0: a shape of that code compiles its own.
  ASSERT_EQ(setenv("LOOM_SHAPE_TEMPLATES", "0", 1), 0);
  Graph graph = Recurrences(21, 12);
  ASSERT_TRUE(InferShapes(graph).ok());
  absl::StatusOr<Module> module = EmitModule(std::move(graph), "", 4096, false, false, true);
  ASSERT_TRUE(module.ok()) << module.status();
  const absl::StatusOr<cpp::CppExecutable> own = cpp::CppExecutable::Create(*module, cache);
  unsetenv("LOOM_SHAPE_TEMPLATES");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE(own->shape_template());
  EXPECT_FALSE(own->cache_hit());
}

// The rest of what a recurrence may have, kept as a loop: lengths known
// at run time (masking), initial states, peepholes, clipping, batch-first
// layout, a backward direction.
TEST(EndToEndTest, RecurrenceVariantsKeptAsLoops) {
  const int64_t seq = 6, batch = 4, input = 3, hidden = 8;
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {batch, seq, input});
  const ValueId lens = b.Input("lens", DType::kI32, {batch});
  const ValueId h0 = b.Input("h0", DType::kF32, {batch, 1, hidden});
  const ValueId c0 = b.Input("c0", DType::kF32, {batch, 1, hidden});
  Attrs lstm;
  lstm.Set("hidden_size", hidden);
  lstm.Set("layout", int64_t{1});
  lstm.Set("clip", 1.5);
  for (ValueId output : b.Ops(
           "lstm",
           {x, b.Weight("w", {1, 4 * hidden, input}, 1), b.Weight("r", {1, 4 * hidden, hidden}, 2),
            b.Weight("b", {1, 8 * hidden}, 3), lens, h0, c0, b.Weight("p", {1, 3 * hidden}, 4)},
           3, lstm)) {
    b.Output(output);
  }
  Attrs gru;
  gru.Set("hidden_size", hidden);
  gru.Set("layout", int64_t{1});
  gru.Set("direction", std::string("reverse"));
  for (ValueId output : b.Ops("gru",
                              {x, b.Weight("gw", {1, 3 * hidden, input}, 5),
                               b.Weight("gr", {1, 3 * hidden, hidden}, 6),
                               b.Weight("gb", {1, 6 * hidden}, 7), lens, h0},
                              2, gru)) {
    b.Output(output);
  }
  EndToEndOptions options;
  options.rnn_loop = true;
  options.fill = [&](size_t i, Tensor& tensor) {
    if (i != 1) return;
    const int64_t lengths[] = {6, 0, 3, 1};
    for (int64_t k = 0; k < batch; ++k) tensor.SetInt(k, lengths[k]);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

}  // namespace
}  // namespace loom
