#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/ops/op_test_util.h"
#include "ir/verifier.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// split on `x` with `num_outputs` outputs, through shape inference, the
// verifier and the interpreter.
absl::StatusOr<std::vector<Tensor>> RunSplit(const Tensor& x, int num_outputs,
                                             const Attrs& attrs = {}) {
  return RunOpOutputs("split", {x}, attrs, num_outputs);
}

std::string SplitError(const Tensor& x, int num_outputs, const Attrs& attrs = {}) {
  return RunSplit(x, num_outputs, attrs).status().ToString();
}

TEST(SplitTest, EqualPartsAlongTheDefaultAxis) {
  absl::StatusOr<std::vector<Tensor>> parts = RunSplit(Iota(DType::kF32, {6, 2}), 3);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ((*parts)[k].type(), (TensorType{DType::kF32, {2, 2}}));
    EXPECT_THAT(ToDoubles((*parts)[k]), ElementsAre(4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3));
  }
}

TEST(SplitTest, GivenSizesOnANegativeAxisIncludingAnEmptyPart) {
  Tensor x = Iota(DType::kI64, {2, 1, 7});
  absl::StatusOr<std::vector<Tensor>> parts =
      RunSplit(x, 4, MakeAttrs({{"axis", int64_t{-1}}, {"split", Ints{2, 0, 4, 1}}}));
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 4u);
  EXPECT_EQ((*parts)[0].shape(), (Shape{2, 1, 2}));
  EXPECT_EQ((*parts)[1].shape(), (Shape{2, 1, 0}));
  EXPECT_EQ((*parts)[2].shape(), (Shape{2, 1, 4}));
  EXPECT_EQ((*parts)[3].shape(), (Shape{2, 1, 1}));
  EXPECT_THAT(ToInts((*parts)[0]), ElementsAre(0, 1, 7, 8));
  EXPECT_THAT(ToInts((*parts)[2]), ElementsAre(2, 3, 4, 5, 9, 10, 11, 12));
  EXPECT_THAT(ToInts((*parts)[3]), ElementsAre(6, 13));
  // One output: a copy.
  parts = RunSplit(x, 1, MakeAttrs({{"axis", int64_t{1}}}));
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ((*parts)[0], x);
}

TEST(SplitTest, ErrorsNameTheNode) {
  Tensor x(DType::kF32, {5, 3});
  EXPECT_THAT(SplitError(x, 2), HasSubstr("node 'test_node' (split): axis 0 of [5,3] (size 5) "
                                          "does not split into 2 equal parts"));
  EXPECT_THAT(SplitError(x, 2, MakeAttrs({{"split", Ints{2, 2}}})),
              HasSubstr("node 'test_node' (split): attribute 'split' [2,2] "
                        "does not sum to 5, the size of axis 0 of [5,3]"));
  EXPECT_THAT(SplitError(x, 2, MakeAttrs({{"split", Ints{INT64_MAX, INT64_MAX}}})),
              HasSubstr("does not sum to 5"));
  EXPECT_THAT(SplitError(x, 3, MakeAttrs({{"split", Ints{2, 3}}})),
              HasSubstr("(split): attribute 'split' [2,3] has 2 sizes for 3 "
                        "outputs"));
  EXPECT_THAT(SplitError(x, 2, MakeAttrs({{"split", Ints{6, -1}}})),
              HasSubstr("(split): attribute 'split' [6,-1] has a negative "
                        "size"));
  EXPECT_THAT(SplitError(x, 1, MakeAttrs({{"axis", int64_t{-3}}})),
              HasSubstr("(split): attribute 'axis': axis -3 is out of range "
                        "for rank 2"));
  EXPECT_THAT(SplitError(x, 0), HasSubstr("node 'test_node' (split): expected at least 1 "
                                          "output, got 0"));
}

TEST(TileTest, RepeatsEachDim) {
  Tensor x = Iota(DType::kI32, {2, 3});
  absl::StatusOr<Tensor> y = RunOp("tile", {x}, MakeAttrs({{"repeats", Ints{2, 1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{4, 3}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5));
  y = RunOp("tile", {x}, MakeAttrs({{"repeats", Ints{1, 3}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 9}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1, 2, 0, 1, 2, 0, 1, 2,  //
                                      3, 4, 5, 3, 4, 5, 3, 4, 5));
  y = RunOp("tile", {MakeIntTensor(DType::kBool, {1, 2}, {1, 0})},
            MakeAttrs({{"repeats", Ints{3, 2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 4}));
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0));
  y = RunOp("tile", {x}, MakeAttrs({{"repeats", Ints{0, 2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 6}));
}

TEST(TileTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("tile", {x}, MakeAttrs({{"repeats", Ints{2}}})),
              HasSubstr("node 'test_node' (tile): attribute 'repeats' [2] "
                        "needs one entry per dim of [2,3]"));
  EXPECT_THAT(RunOpError("tile", {x}, MakeAttrs({{"repeats", Ints{1, -1}}})),
              HasSubstr("(tile): attribute 'repeats' [1,-1] has a negative "
                        "entry"));
  EXPECT_THAT(RunOpError("tile", {x}), HasSubstr("(tile): missing required attribute 'repeats'"));
}

TEST(PadTest, ConstantPaddingBeginsThenEnds) {
  Tensor x = Iota(DType::kF32, {2, 3}, 1);
  // One row before, two columns after.
  absl::StatusOr<Tensor> y =
      RunOp("pad", {x}, MakeAttrs({{"pads", Ints{1, 0, 0, 2}}, {"value", 7.5}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 5}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(7.5, 7.5, 7.5, 7.5, 7.5,  //
                                         1, 2, 3, 7.5, 7.5,        //
                                         4, 5, 6, 7.5, 7.5));
  y = RunOp("pad", {MakeTensor(DType::kF64, {1, 1, 1}, {9})},
            MakeAttrs({{"pads", Ints{0, 1, 0, 0, 0, 1}}, {"mode", std::string("constant")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 2, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 0, 9, 0));
}

TEST(PadTest, ValueConvertsToIntegerAndBoolData) {
  absl::StatusOr<Tensor> y = RunOp("pad", {MakeIntTensor(DType::kI32, {2}, {5, 6})},
                                   MakeAttrs({{"pads", Ints{1, 2}}, {"value", -1.9}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(-1, 5, 6, -1, -1));
  y = RunOp("pad", {MakeIntTensor(DType::kI64, {1}, {5})},
            MakeAttrs({{"pads", Ints{1, 0}}, {"value", 1e30}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(INT64_MAX, 5));
  y = RunOp("pad", {MakeIntTensor(DType::kBool, {1}, {0})},
            MakeAttrs({{"pads", Ints{0, 1}}, {"value", 0.5}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1));
}

TEST(PadTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("pad", {x}, MakeAttrs({{"pads", Ints{1, 1}}})),
              HasSubstr("node 'test_node' (pad): attribute 'pads' [1,1] has 2 "
                        "entries; input [2,3] needs 4"));
  EXPECT_THAT(RunOpError("pad", {x}, MakeAttrs({{"pads", Ints{0, -1, 0, 0}}})),
              HasSubstr("(pad): attribute 'pads' [0,-1,0,0] has a negative "
                        "entry"));
  EXPECT_THAT(RunOpError("pad", {x},
                         MakeAttrs({{"pads", Ints{0, 0, 0, 0}}, {"mode", std::string("wrap")}})),
              HasSubstr("node 'test_node' (pad): attribute 'mode' \"wrap\" "
                        "is not supported (only \"constant\", \"reflect\", \"edge\")"));
  // reflect leaves the edge element out: at most dim - 1 per side.
  EXPECT_THAT(RunOpError("pad", {x},
                         MakeAttrs({{"pads", Ints{0, 3, 0, 0}}, {"mode", std::string("reflect")}})),
              HasSubstr("(pad): mode \"reflect\" pads dim 1 of [2,3] by 3; it allows at "
                        "most the dim's size - 1"));
  EXPECT_THAT(RunOpError("pad", {Tensor(DType::kF32, {2, 0})},
                         MakeAttrs({{"pads", Ints{0, 0, 0, 1}}, {"mode", std::string("edge")}})),
              HasSubstr("(pad): mode \"edge\" pads dim 1 of [2,0] by 1; it needs a "
                        "non-empty dim"));
}

// ONNX's test_reflect_pad / test_edge_pad layout: [2, 3] padded by one row
// before and two columns on each side.
TEST(PadTest, ReflectAndEdgeModes) {
  const Tensor x = Iota(DType::kF32, {2, 3}, 1);  // 1 2 3 / 4 5 6
  const Attrs pads = MakeAttrs({{"pads", Ints{1, 2, 0, 2}}, {"mode", std::string("reflect")}});
  absl::StatusOr<Tensor> y = RunOp("pad", {x}, pads);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 7}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(6, 5, 4, 5, 6, 5, 4,  //
                                         3, 2, 1, 2, 3, 2, 1,  //
                                         6, 5, 4, 5, 6, 5, 4));
  y = RunOp("pad", {x}, MakeAttrs({{"pads", Ints{1, 2, 0, 2}}, {"mode", std::string("edge")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(1, 1, 1, 2, 3, 3, 3,  //
                                         1, 1, 1, 2, 3, 3, 3,  //
                                         4, 4, 4, 5, 6, 6, 6));
  // Any dtype; a dim of one element repeats under edge.
  y = RunOp("pad", {MakeIntTensor(DType::kI64, {1, 2}, {7, 8})},
            MakeAttrs({{"pads", Ints{1, 1, 2, 0}}, {"mode", std::string("edge")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{4, 3}));
  EXPECT_THAT(ToInts(*y), ElementsAre(7, 7, 8, 7, 7, 8, 7, 7, 8, 7, 7, 8));
  // An empty dim left unpadded.
  y = RunOp("pad", {Tensor(DType::kF32, {3, 0})},
            MakeAttrs({{"pads", Ints{1, 0, 1, 0}}, {"mode", std::string("reflect")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{5, 0}));
}

TEST(GatherTest, AxisZeroWithMatrixIndicesAndNegativeIndices) {
  Tensor data = Iota(DType::kF32, {3, 2});
  Tensor indices = MakeIntTensor(DType::kI64, {2, 2}, {0, -1, 2, 1});
  absl::StatusOr<Tensor> y = RunOp("gather", {data, indices});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 2, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 1, 4, 5, 4, 5, 2, 3));
}

TEST(GatherTest, InnerAxisAndScalarIndices) {
  Tensor data = Iota(DType::kI32, {2, 5, 1});
  absl::StatusOr<Tensor> y = RunOp("gather", {data, MakeIntTensor(DType::kI32, {3}, {4, 0, -5})},
                                   MakeAttrs({{"axis", int64_t{-2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 3, 1}));
  EXPECT_THAT(ToInts(*y), ElementsAre(4, 0, 0, 9, 5, 5));
  // A scalar index removes the axis.
  y = RunOp("gather", {data, MakeIntTensor(DType::kI64, {}, {3})},
            MakeAttrs({{"axis", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 1}));
  EXPECT_THAT(ToInts(*y), ElementsAre(3, 8));
}

TEST(GatherElementsTest, PicksAlongTheAxisWithNegativeIndices) {
  Tensor data = Iota(DType::kF32, {2, 3});  // [[0, 1, 2], [3, 4, 5]]
  Tensor indices = MakeIntTensor(DType::kI64, {2, 2}, {2, -3, 1, 0});
  absl::StatusOr<Tensor> y =
      RunOp("gather_elements", {data, indices}, MakeAttrs({{"axis", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(2, 0, 4, 3));
  y = RunOp("gather_elements", {data, MakeIntTensor(DType::kI32, {1, 3}, {1, 0, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(3, 1, 5));
}

TEST(GatherElementsTest, Errors) {
  Tensor data(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("gather_elements", {data, MakeIntTensor(DType::kI64, {1, 1}, {2})}),
              HasSubstr("(gather_elements): index 2 is out of range for axis 0 of size 2"));
  EXPECT_THAT(RunOpError("gather_elements",
                         {
                             data,
                             MakeIntTensor(DType::kI64, {3, 1}, {0, 0, 0}),
                         },
                         MakeAttrs({{"axis", int64_t{1}}})),
              HasSubstr("no larger dim but along axis 1"));
  EXPECT_THAT(RunOpError("gather_elements", {data, MakeIntTensor(DType::kI64, {2}, {0, 0})}),
              HasSubstr("must have the rank of the data"));
}

TEST(ScatterElementsTest, ReplacesInOrderOrFolds) {
  Tensor data = Iota(DType::kF32, {2, 3});  // [[0, 1, 2], [3, 4, 5]]
  Tensor indices = MakeIntTensor(DType::kI64, {1, 3}, {1, -1, 1});
  Tensor updates = MakeIntTensor(DType::kI64, {1, 3}, {10, 20, 30});
  Tensor float_updates(DType::kF32, {1, 3});
  for (int i = 0; i < 3; ++i) float_updates.SetDouble(i, updates.GetInt(i));
  absl::StatusOr<Tensor> y =
      RunOp("scatter_elements", {data, indices, float_updates}, MakeAttrs({{"axis", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 30, 20, 3, 4, 5));  // the last of two wins
  y = RunOp("scatter_elements", {data, indices, float_updates},
            MakeAttrs({{"axis", int64_t{1}}, {"reduction", std::string("add")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 41, 22, 3, 4, 5));
  Tensor ints = Iota(DType::kI64, {2, 3});
  y = RunOp("scatter_elements", {ints, indices, updates},
            MakeAttrs({{"axis", int64_t{1}}, {"reduction", std::string("min")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(ScatterElementsTest, Errors) {
  Tensor data(DType::kF32, {2, 3});
  Tensor updates(DType::kF32, {1, 2});
  EXPECT_THAT(
      RunOpError("scatter_elements", {data, MakeIntTensor(DType::kI64, {1, 2}, {0, -3}), updates}),
      HasSubstr("(scatter_elements): index -3 is out of range for axis 0 of size 2"));
  EXPECT_THAT(RunOpError("scatter_elements", {data, MakeIntTensor(DType::kI64, {1, 2}, {0, 1}),
                                              Tensor(DType::kF32, {2})}),
              HasSubstr("input 2 (updates) is f32[2], expected the data's dtype f32 and the "
                        "indices' shape [1,2]"));
  EXPECT_THAT(
      RunOpError("scatter_elements", {data, MakeIntTensor(DType::kI64, {1, 2}, {0, 1}), updates},
                 MakeAttrs({{"reduction", std::string("sub")}})),
      HasSubstr("attribute 'reduction' \"sub\" is not one of none, add, mul, max, min"));
  Tensor flags(DType::kBool, {2, 3});
  EXPECT_THAT(
      RunOpError("scatter_elements",
                 {flags, MakeIntTensor(DType::kI64, {1, 2}, {0, 1}), Tensor(DType::kBool, {1, 2})},
                 MakeAttrs({{"reduction", std::string("add")}})),
      HasSubstr("reduction \"add\""));
}

TEST(ScatterNdTest, WritesSlicesAtIndexTuples) {
  Tensor data = Iota(DType::kF32, {3, 2});  // [[0, 1], [2, 3], [4, 5]]
  Tensor indices = MakeIntTensor(DType::kI64, {2, 1}, {-1, 0});
  Tensor updates(DType::kF32, {2, 2});
  for (int i = 0; i < 4; ++i) updates.SetDouble(i, 10 + i);
  absl::StatusOr<Tensor> y = RunOp("scatter_nd", {data, indices, updates});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(12, 13, 2, 3, 10, 11));
  y = RunOp("scatter_nd", {data, MakeIntTensor(DType::kI32, {2, 2}, {1, 1, 1, 1}),
                           MakeIntTensor(DType::kI64, {2}, {0, 0})});
  EXPECT_FALSE(y.ok());  // updates of another dtype
  Tensor pair_updates(DType::kF32, {2});
  pair_updates.SetDouble(0, 7);
  pair_updates.SetDouble(1, 8);
  y = RunOp("scatter_nd", {data, MakeIntTensor(DType::kI32, {2, 2}, {1, 1, 1, 1}), pair_updates},
            MakeAttrs({{"reduction", std::string("mul")}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToDoubles(*y), ElementsAre(0, 1, 2, 168, 4, 5));
}

TEST(ScatterNdTest, Errors) {
  Tensor data(DType::kF32, {3, 2});
  EXPECT_THAT(RunOpError("scatter_nd", {data, MakeIntTensor(DType::kI64, {1, 2}, {0, 2}),
                                        Tensor(DType::kF32, {1})}),
              HasSubstr("(scatter_nd): index 2 is out of range for axis 1 of size 2"));
  EXPECT_THAT(RunOpError("scatter_nd", {data, MakeIntTensor(DType::kI64, {1, 3}, {0, 0, 0}),
                                        Tensor(DType::kF32, {1})}),
              HasSubstr("a last dim of at most 2"));
  EXPECT_THAT(RunOpError("scatter_nd", {data, MakeIntTensor(DType::kI64, {1, 1}, {0}),
                                        Tensor(DType::kF32, {1, 3})}),
              HasSubstr("input 2 (updates) is f32[1,3], expected f32[1,2]"));
}

// ONNX's GatherND examples: index pairs into [2, 2] (elements), single
// indices into [2, 2, 2] (rows), and with batch_dims 1 one index per batch.
TEST(GatherNdTest, PicksSlicesAtIndexTuples) {
  absl::StatusOr<Tensor> y = RunOp(
      "gather_nd", {Iota(DType::kI32, {2, 2}), MakeIntTensor(DType::kI64, {2, 2}, {0, 0, 1, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 3));
  y = RunOp("gather_nd",
            {Iota(DType::kF32, {2, 2, 2}), MakeIntTensor(DType::kI64, {2, 1, 2}, {0, 1, -1, 0})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 1, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(2, 3, 4, 5));
  y = RunOp("gather_nd", {Iota(DType::kI32, {2, 2, 2}), MakeIntTensor(DType::kI32, {2, 1}, {1, 0})},
            MakeAttrs({{"batch_dims", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_THAT(ToInts(*y), ElementsAre(2, 3, 4, 5));
}

TEST(GatherNdTest, Errors) {
  Tensor data(DType::kF32, {3, 2});
  EXPECT_THAT(RunOpError("gather_nd", {data, MakeIntTensor(DType::kI64, {1, 2}, {0, -3})}),
              HasSubstr("node 'test_node' (gather_nd): index -3 is out of range for axis 1 of "
                        "size 2"));
  EXPECT_THAT(RunOpError("gather_nd", {data, MakeIntTensor(DType::kI64, {1, 3}, {0, 0, 0})}),
              HasSubstr("have a last dim in [1, 2]"));
  EXPECT_THAT(RunOpError("gather_nd", {data, MakeIntTensor(DType::kI64, {2, 1}, {0, 0})},
                         MakeAttrs({{"batch_dims", int64_t{2}}})),
              HasSubstr("attribute 'batch_dims' (2) must be in [0, 2)"));
  EXPECT_THAT(RunOpError("gather_nd", {data, MakeIntTensor(DType::kI64, {2, 1}, {0, 0})},
                         MakeAttrs({{"batch_dims", int64_t{1}}})),
              HasSubstr("must share the data's first 1 dims"));
  EXPECT_THAT(RunOpError("gather_nd", {data, Tensor(DType::kF32, {1, 1})}),
              HasSubstr("input 1 (indices) has dtype f32"));
}

TEST(GatherTest, Errors) {
  Tensor data(DType::kF32, {3, 2});
  EXPECT_THAT(RunOpError("gather", {data, MakeIntTensor(DType::kI64, {2}, {1, 3})}),
              HasSubstr("node 'test_node' (gather): index 3 is out of range for axis 0 of size 3"));
  EXPECT_THAT(RunOpError("gather", {data, MakeIntTensor(DType::kI32, {1}, {-4})}),
              HasSubstr("(gather): index -4 is out of range"));
  EXPECT_THAT(RunOpError("gather", {data, Tensor(DType::kF32, {1})}),
              HasSubstr("node 'test_node' (gather): input 1 (indices) has "
                        "dtype f32, expected i32 or i64"));
  EXPECT_THAT(
      RunOpError("gather", {data, Tensor(DType::kI32, {1})}, MakeAttrs({{"axis", int64_t{2}}})),
      HasSubstr("(gather): attribute 'axis': axis 2 is out of range "
                "for rank 2"));
}

TEST(CumsumTest, ExclusiveAndReverseOnBothAxes) {
  Tensor x = Iota(DType::kF64, {2, 3}, 1);  // 1 2 3 / 4 5 6
  const struct {
    int64_t axis, exclusive, reverse;
    std::vector<double> expected;
  } cases[] = {
      {1, 0, 0, {1, 3, 6, 4, 9, 15}},  {1, 1, 0, {0, 1, 3, 0, 4, 9}},
      {1, 0, 1, {6, 5, 3, 15, 11, 6}}, {-1, 1, 1, {5, 3, 0, 11, 6, 0}},
      {0, 0, 0, {1, 2, 3, 5, 7, 9}},   {-2, 1, 1, {4, 5, 6, 0, 0, 0}},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Tensor> y =
        RunOp("cumsum", {x},
              MakeAttrs({{"axis", c.axis}, {"exclusive", c.exclusive}, {"reverse", c.reverse}}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(ToDoubles(*y), c.expected) << c.axis << " " << c.exclusive << " " << c.reverse;
  }
}

TEST(CumsumTest, IntegersWrapAndSizeOneAxes) {
  absl::StatusOr<Tensor> y = RunOp("cumsum", {MakeIntTensor(DType::kI64, {3}, {INT64_MAX, 1, -1})},
                                   MakeAttrs({{"axis", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(INT64_MAX, INT64_MIN, INT64_MAX));
  Tensor x = Iota(DType::kI32, {1, 5, 1});
  y = RunOp("cumsum", {x}, MakeAttrs({{"axis", int64_t{2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, x);
  y = RunOp("cumsum", {x}, MakeAttrs({{"axis", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1, 3, 6, 10));
}

TEST(CumsumTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("cumsum", {x}), HasSubstr("node 'test_node' (cumsum): missing required "
                                                   "attribute 'axis'"));
  EXPECT_THAT(RunOpError("cumsum", {x}, MakeAttrs({{"axis", int64_t{2}}})),
              HasSubstr("(cumsum): attribute 'axis': axis 2 is out of range"));
  EXPECT_THAT(RunOpError("cumsum", {x}, MakeAttrs({{"axis", int64_t{0}}, {"reverse", int64_t{2}}})),
              HasSubstr("(cumsum): attribute 'reverse' must be 0 or 1, got 2"));
  EXPECT_THAT(RunOpError("cumsum", {Tensor(DType::kBool, {2})}, MakeAttrs({{"axis", int64_t{0}}})),
              HasSubstr("(cumsum): input 0 has dtype bool"));
}

TEST(FlattenTest, EveryAxisFromMinusRankToRank) {
  Tensor x = Iota(DType::kI64, {2, 3, 5});
  const std::pair<int64_t, Shape> cases[] = {
      {0, {1, 30}}, {1, {2, 15}}, {2, {6, 5}}, {3, {30, 1}}, {-1, {6, 5}}, {-3, {1, 30}},
  };
  for (const auto& [axis, shape] : cases) {
    absl::StatusOr<Tensor> y = RunOp("flatten", {x}, MakeAttrs({{"axis", axis}}));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), shape) << "axis " << axis;
    EXPECT_EQ(ToInts(*y), ToInts(x));
  }
  absl::StatusOr<Tensor> y = RunOp("flatten", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 15}));
  EXPECT_THAT(RunOpError("flatten", {x}, MakeAttrs({{"axis", int64_t{4}}})),
              HasSubstr("node 'test_node' (flatten): attribute 'axis': axis 4 "
                        "is out of range [-3, 3] for rank 3"));
  EXPECT_THAT(RunOpError("flatten", {x}, MakeAttrs({{"axis", int64_t{-4}}})),
              HasSubstr("axis -4 is out of range [-3, 3]"));
}

TEST(DropoutTest, IsTheIdentityAtInference) {
  Tensor x = Iota(DType::kF32, {3, 1, 7}, -1, 0.5);
  absl::StatusOr<Tensor> y = RunOp("dropout", {x}, MakeAttrs({{"ratio", 0.9}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, x);
  EXPECT_THAT(RunOpError("dropout", {Tensor(DType::kI32, {2})}),
              HasSubstr("node 'test_node' (dropout): input 0 has dtype i32"));
}

}  // namespace
}  // namespace loom
