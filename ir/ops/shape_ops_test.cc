#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// --- reshape ---------------------------------------------------------------

TEST(ReshapeTest, InfersMinusOneAndKeepsOrder) {
  Tensor x = Iota(DType::kI32, {2, 3, 4});
  absl::StatusOr<Tensor> y = RunOp("reshape", {x}, MakeAttrs({{"shape", Ints{4, -1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kI32, {4, 6}}));
  EXPECT_EQ(ToInts(*y), ToInts(x));
  y = RunOp("reshape", {x}, MakeAttrs({{"shape", Ints{-1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{24}));
  y = RunOp("reshape", {MakeTensor(DType::kF32, {1, 1}, {7})}, MakeAttrs({{"shape", Ints{}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(7));
}

TEST(ReshapeTest, ZeroIsAZeroSizeDimension) {
  absl::StatusOr<Tensor> y =
      RunOp("reshape", {Tensor(DType::kF32, {3, 0})}, MakeAttrs({{"shape", Ints{0, 5}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 5}));
  // Not ONNX's "copy the input dimension": [2, 3] -> [0, 6] has 0 elements.
  EXPECT_THAT(
      RunOpError("reshape", {Tensor(DType::kF32, {2, 3})}, MakeAttrs({{"shape", Ints{0, 6}}})),
      HasSubstr("cannot reshape [2,3] (6 elements) to [0,6]"));
}

TEST(ReshapeTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(RunOpError("reshape", {x}, MakeAttrs({{"shape", Ints{4, 2}}})),
              HasSubstr("node 'test_node' (reshape): cannot reshape [2,3] (6 "
                        "elements) to [4,2] (8 elements)"));
  EXPECT_THAT(RunOpError("reshape", {x}, MakeAttrs({{"shape", Ints{4, -1}}})),
              HasSubstr("(reshape): cannot reshape [2,3] (6 elements) to "
                        "[4,-1]: the -1 cannot be inferred"));
  EXPECT_THAT(RunOpError("reshape", {x}, MakeAttrs({{"shape", Ints{-1, -1}}})),
              HasSubstr("(reshape): attribute 'shape' [-1,-1] has more than one "
                        "-1"));
  EXPECT_THAT(RunOpError("reshape", {x}, MakeAttrs({{"shape", Ints{-2, -3}}})),
              HasSubstr("has invalid entry -2"));
  EXPECT_THAT(
      RunOpError("reshape", {Tensor(DType::kF32, {0, 3})}, MakeAttrs({{"shape", Ints{0, -1}}})),
      HasSubstr("the -1 cannot be inferred"));
  EXPECT_THAT(RunOpError("reshape", {x}),
              HasSubstr("(reshape): missing required attribute 'shape' (ints)"));
}

// --- transpose -------------------------------------------------------------

TEST(TransposeTest, DefaultReversesDims) {
  Tensor x = Iota(DType::kF64, {2, 3, 4});
  absl::StatusOr<Tensor> y = RunOp("transpose", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{4, 3, 2}));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(y->GetDouble((k * 3 + j) * 2 + i), x.GetDouble((i * 3 + j) * 4 + k));
      }
    }
  }
}

TEST(TransposeTest, ExplicitPermutation) {
  Tensor x = Iota(DType::kBool, {1, 2, 3}, 0, 1);  // 0 then ones
  absl::StatusOr<Tensor> y =
      RunOp("transpose", {Iota(DType::kI64, {1, 2, 3})}, MakeAttrs({{"perm", Ints{2, 0, 1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 1, 2}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 3, 1, 4, 2, 5));
  y = RunOp("transpose", {x}, MakeAttrs({{"perm", Ints{0, 2, 1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1, 1, 1, 1, 1));
}

TEST(TransposeTest, RejectsNonPermutations) {
  Tensor x(DType::kF32, {2, 3, 4});
  for (const Ints& perm : {Ints{0, 0, 1}, Ints{0, 1}, Ints{0, 1, 3}, Ints{-1, 0, 1}}) {
    EXPECT_THAT(RunOpError("transpose", {x}, MakeAttrs({{"perm", perm}})),
                HasSubstr("node 'test_node' (transpose): attribute 'perm' " + ShapeToString(perm) +
                          " is not a permutation of the 3 input dims"));
  }
}

// --- squeeze / unsqueeze ---------------------------------------------------

TEST(SqueezeTest, DefaultRemovesEverySizeOneDim) {
  Tensor x = Iota(DType::kF32, {1, 3, 1, 2});
  absl::StatusOr<Tensor> y = RunOp("squeeze", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_EQ(ToDoubles(*y), ToDoubles(x));
  y = RunOp("squeeze", {x}, MakeAttrs({{"axes", Ints{-2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 3, 2}));
  y = RunOp("squeeze", {Tensor(DType::kF32, {1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{}));
}

TEST(SqueezeTest, Errors) {
  Tensor x(DType::kF32, {1, 3});
  EXPECT_THAT(RunOpError("squeeze", {x}, MakeAttrs({{"axes", Ints{1}}})),
              HasSubstr("node 'test_node' (squeeze): cannot squeeze axis 1 of "
                        "[1,3]: its size is 3, not 1"));
  EXPECT_THAT(RunOpError("squeeze", {x}, MakeAttrs({{"axes", Ints{2}}})),
              HasSubstr("(squeeze): attribute 'axes': axis 2 is out of range"));
  EXPECT_THAT(RunOpError("squeeze", {x}, MakeAttrs({{"axes", Ints{0, -2}}})),
              HasSubstr("axis 0 is listed more than once"));
}

TEST(UnsqueezeTest, AxesArePositionsInTheOutput) {
  Tensor x = Iota(DType::kI32, {3, 2});
  absl::StatusOr<Tensor> y = RunOp("unsqueeze", {x}, MakeAttrs({{"axes", Ints{0, -1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 3, 2, 1}));
  EXPECT_EQ(ToInts(*y), ToInts(x));
  y = RunOp("unsqueeze", {x}, MakeAttrs({{"axes", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 1, 2}));
  y = RunOp("unsqueeze", {MakeTensor(DType::kF32, {}, {4})}, MakeAttrs({{"axes", Ints{0, 1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 1}));
}

TEST(UnsqueezeTest, Errors) {
  Tensor x(DType::kF32, {3, 2});
  EXPECT_THAT(RunOpError("unsqueeze", {x}),
              HasSubstr("node 'test_node' (unsqueeze): missing required "
                        "attribute 'axes'"));
  EXPECT_THAT(RunOpError("unsqueeze", {x}, MakeAttrs({{"axes", Ints{3}}})),
              HasSubstr("(unsqueeze): attribute 'axes': axis 3 is out of range "
                        "for rank 3"));
  EXPECT_THAT(RunOpError("unsqueeze", {x}, MakeAttrs({{"axes", Ints{1, -3}}})),
              HasSubstr("axis 1 is listed more than once"));
}

// --- expand ----------------------------------------------------------------

TEST(ExpandTest, BroadcastsBothWays) {
  Tensor x = MakeIntTensor(DType::kI64, {3, 1}, {1, 2, 3});
  absl::StatusOr<Tensor> y = RunOp("expand", {x}, MakeAttrs({{"shape", Ints{2, 1, 2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 3, 2}));
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3));
  // Like ONNX Expand, a target dim of 1 keeps the input's.
  y = RunOp("expand", {x}, MakeAttrs({{"shape", Ints{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 1}));
}

TEST(ExpandTest, Errors) {
  Tensor x(DType::kF32, {3});
  EXPECT_THAT(RunOpError("expand", {x}, MakeAttrs({{"shape", Ints{2}}})),
              HasSubstr("node 'test_node' (expand): cannot broadcast shapes [3] "
                        "and [2]"));
  EXPECT_THAT(RunOpError("expand", {x}, MakeAttrs({{"shape", Ints{-1, 3}}})),
              HasSubstr("(expand): attribute 'shape' [-1,3] has a negative "
                        "entry"));
}

// --- concat ----------------------------------------------------------------

TEST(ConcatTest, JoinsAlongAnAxis) {
  Tensor a = Iota(DType::kI32, {2, 1});
  Tensor b = Iota(DType::kI32, {2, 3}, 10);
  Tensor c = Iota(DType::kI32, {2, 2}, 20);
  absl::StatusOr<Tensor> y = RunOp("concat", {a, b, c}, MakeAttrs({{"axis", int64_t{-1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 6}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 10, 11, 12, 20, 21, 1, 13, 14, 15, 22, 23));
  y = RunOp("concat", {b, Iota(DType::kI32, {1, 3}, 7)}, MakeAttrs({{"axis", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(10, 11, 12, 13, 14, 15, 7, 8, 9));
}

TEST(ConcatTest, OneInputAndEmptyInputs) {
  Tensor a = Iota(DType::kBool, {2, 2});
  absl::StatusOr<Tensor> y =
      RunOp("concat", {a, Tensor(DType::kBool, {2, 0})}, MakeAttrs({{"axis", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(ToInts(*y), ToInts(a));
  y = RunOp("concat", {a}, MakeAttrs({{"axis", int64_t{0}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(ToInts(*y), ToInts(a));
}

TEST(ConcatTest, Errors) {
  Tensor a(DType::kF32, {2, 3});
  EXPECT_THAT(
      RunOpError("concat", {a, Tensor(DType::kF32, {3, 3})}, MakeAttrs({{"axis", int64_t{1}}})),
      HasSubstr("node 'test_node' (concat): input 1 has shape [3,3] but "
                "input 0 has [2,3]; they may differ only on axis 1"));
  EXPECT_THAT(
      RunOpError("concat", {a, Tensor(DType::kF32, {2, 3, 1})}, MakeAttrs({{"axis", int64_t{1}}})),
      HasSubstr("input 1 has shape [2,3,1]"));
  EXPECT_THAT(
      RunOpError("concat", {a, Tensor(DType::kI32, {2, 3})}, MakeAttrs({{"axis", int64_t{1}}})),
      HasSubstr("(concat): inputs 0 and 1 have different dtypes"));
  EXPECT_THAT(RunOpError("concat", {a, a}),
              HasSubstr("(concat): missing required attribute 'axis' (int)"));
  EXPECT_THAT(RunOpError("concat", {Tensor(DType::kF32, {})}, MakeAttrs({{"axis", int64_t{0}}})),
              HasSubstr("(concat): attribute 'axis': axis 0 is out of range for "
                        "rank 0"));
  EXPECT_THAT(RunOpError("concat", {}, MakeAttrs({{"axis", int64_t{0}}})),
              HasSubstr("(concat): expected at least 1 input, got 0"));
}

// --- slice -----------------------------------------------------------------

// Python's slice.indices() (CPython's PySlice_AdjustIndices): an independent
// statement of the semantics ONNX Slice shares with numpy, except in one
// corner that the ONNX spec words differently: with a negative step, a start
// before the first element clamps to 0 (selecting it) where Python selects
// nothing. Returns the selected indices.
std::vector<int64_t> OnnxSlice(int64_t start, int64_t stop, int64_t step, int64_t length) {
  auto adjust = [&](int64_t v, bool is_start) {
    if (v < 0) {
      v += length;
      if (v < 0) v = step < 0 && !is_start ? -1 : 0;
    } else if (v >= length) {
      v = step < 0 ? length - 1 : length;
    }
    return v;
  };
  std::vector<int64_t> indices;
  if (length == 0) return indices;
  const int64_t end = adjust(stop, false);
  for (int64_t i = adjust(start, true); step > 0 ? i < end : i > end; i += step) {
    indices.push_back(i);
  }
  return indices;
}

TEST(SliceTest, OnnxDocumentationExamples) {
  Tensor data = MakeTensor(DType::kF32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  absl::StatusOr<Tensor> y = RunOp("slice", {data},
                                   MakeAttrs({{"starts", Ints{1, 0}},
                                              {"ends", Ints{2, 3}},
                                              {"axes", Ints{0, 1}},
                                              {"steps", Ints{1, 2}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 2}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(5, 7));
  y = RunOp("slice", {data}, MakeAttrs({{"starts", Ints{0, 1}}, {"ends", Ints{-1, 1000}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{1, 3}));
  EXPECT_THAT(ToDoubles(*y), ElementsAre(2, 3, 4));
}

TEST(SliceTest, MatchesTheReferenceOnEveryCombination) {
  const int64_t n = 5;
  Tensor x = Iota(DType::kI64, {3, n});
  const int64_t bounds[] = {kMin, -7, -5, -2, -1, 0, 1, 3, 4, 5, 6, kMax};
  for (int64_t step : {-3, -2, -1, 1, 2, 4}) {
    for (int64_t start : bounds) {
      for (int64_t end : bounds) {
        absl::StatusOr<Tensor> y = RunOp("slice", {x},
                                         MakeAttrs({{"starts", Ints{start}},
                                                    {"ends", Ints{end}},
                                                    {"axes", Ints{-1}},
                                                    {"steps", Ints{step}}}));
        ASSERT_TRUE(y.ok()) << y.status();
        const std::vector<int64_t> indices = OnnxSlice(start, end, step, n);
        const int64_t count = indices.size();
        ASSERT_EQ(y->shape(), (Shape{3, count})) << start << ":" << end << ":" << step;
        for (int64_t row = 0; row < 3; ++row) {
          for (int64_t i = 0; i < count; ++i) {
            EXPECT_EQ(y->GetInt(row * count + i), row * n + indices[i]);
          }
        }
      }
    }
  }
}

TEST(SliceTest, OnnxConformanceShapes) {
  Tensor x(DType::kF32, {20, 10, 5});
  auto shape_of = [&](Attrs attrs) -> Shape {
    absl::StatusOr<Tensor> y = RunOp("slice", {x}, attrs);
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? y->shape() : Shape{-1};
  };
  // test_slice_neg_steps
  EXPECT_EQ(shape_of(MakeAttrs({{"starts", Ints{20, 10, 4}},
                                {"ends", Ints{0, 0, 1}},
                                {"axes", Ints{0, 1, 2}},
                                {"steps", Ints{-1, -3, -2}}})),
            (Shape{19, 3, 2}));
  // test_slice_start_out_of_bounds
  EXPECT_EQ(shape_of(MakeAttrs({{"starts", Ints{1000}}, {"ends", Ints{1000}}, {"axes", Ints{1}}})),
            (Shape{20, 0, 5}));
  // test_slice_negative_axes
  EXPECT_EQ(shape_of(MakeAttrs(
                {{"starts", Ints{0, 0, 3}}, {"ends", Ints{20, 10, 4}}, {"axes", Ints{0, -2, -1}}})),
            (Shape{20, 10, 1}));
  // INT64_MAX / INT64_MIN ends and an INT64_MIN step
  EXPECT_EQ(shape_of(MakeAttrs({{"starts", Ints{1}}, {"ends", Ints{kMax}}, {"axes", Ints{1}}})),
            (Shape{20, 9, 5}));
  EXPECT_EQ(
      shape_of(MakeAttrs(
          {{"starts", Ints{-1}}, {"ends", Ints{kMin}}, {"axes", Ints{1}}, {"steps", Ints{kMin}}})),
      (Shape{20, 1, 5}));
  EXPECT_EQ(
      shape_of(MakeAttrs(
          {{"starts", Ints{0}}, {"ends", Ints{kMax}}, {"axes", Ints{0}}, {"steps", Ints{kMax}}})),
      (Shape{1, 10, 5}));
}

TEST(SliceTest, NegativeStepStartBeforeTheBeginningClampsToZero) {
  // ONNX clamps the start into [0, dim - 1]; numpy would select nothing.
  absl::StatusOr<Tensor> y =
      RunOp("slice", {Iota(DType::kI32, {4}, 10)},
            MakeAttrs({{"starts", Ints{-9}}, {"ends", Ints{kMin}}, {"steps", Ints{-1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(10));
}

TEST(SliceTest, ReversesAndSlicesEmptyDims) {
  absl::StatusOr<Tensor> y =
      RunOp("slice", {Iota(DType::kBool, {4}, 0, 1)},
            MakeAttrs({{"starts", Ints{-1}}, {"ends", Ints{kMin}}, {"steps", Ints{-1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 1, 1, 0));
  y = RunOp("slice", {Tensor(DType::kF32, {0, 2})},
            MakeAttrs({{"starts", Ints{-1}}, {"ends", Ints{kMin}}, {"steps", Ints{-1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 2}));
}

TEST(SliceTest, Errors) {
  Tensor x(DType::kF32, {4, 4});
  EXPECT_THAT(RunOpError("slice", {x},
                         MakeAttrs({{"starts", Ints{0}}, {"ends", Ints{2}}, {"steps", Ints{0}}})),
              HasSubstr("node 'test_node' (slice): attribute 'steps' has a 0 "
                        "entry"));
  EXPECT_THAT(RunOpError("slice", {x}, MakeAttrs({{"starts", Ints{0, 0}}, {"ends", Ints{2}}})),
              HasSubstr("(slice): attributes 'starts', 'ends', 'axes' and "
                        "'steps' must have the same length, got 2, 1, 2 and 2"));
  EXPECT_THAT(
      RunOpError("slice", {x},
                 MakeAttrs({{"starts", Ints{0, 0}}, {"ends", Ints{2, 2}}, {"axes", Ints{1, -1}}})),
      HasSubstr("(slice): attribute 'axes': axis 1 is listed more than "
                "once"));
  EXPECT_THAT(RunOpError("slice", {x},
                         MakeAttrs({{"starts", Ints{0}}, {"ends", Ints{2}}, {"axes", Ints{2}}})),
              HasSubstr("axis 2 is out of range for rank 2"));
  EXPECT_THAT(RunOpError("slice", {x}, MakeAttrs({{"starts", Ints{0}}})),
              HasSubstr("(slice): missing required attribute 'ends'"));
}

// --- as_strided ------------------------------------------------------------

TEST(AsStridedTest, OverlappingWindows) {
  // The 2-element windows of [0..5] at steps of 1, and a broadcast column.
  Tensor x = Iota(DType::kI32, {2, 3});
  absl::StatusOr<Tensor> y =
      RunOp("as_strided", {x}, MakeAttrs({{"shape", Ints{5, 2}}, {"strides", Ints{1, 1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->type(), (TensorType{DType::kI32, {5, 2}}));
  EXPECT_THAT(ToInts(*y), ElementsAre(0, 1, 1, 2, 2, 3, 3, 4, 4, 5));
  y = RunOp("as_strided", {x},
            MakeAttrs({{"shape", Ints{2, 3}}, {"strides", Ints{0, 2}}, {"offset", int64_t{1}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToInts(*y), ElementsAre(1, 3, 5, 1, 3, 5));
  y = RunOp("as_strided", {x}, MakeAttrs({{"shape", Ints{0, 9}}, {"strides", Ints{100, 100}}}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 9}));
}

TEST(AsStridedTest, Errors) {
  Tensor x(DType::kF32, {2, 3});
  EXPECT_THAT(
      RunOpError(
          "as_strided", {x},
          MakeAttrs({{"shape", Ints{2, 3}}, {"strides", Ints{3, 1}}, {"offset", int64_t{1}}})),
      HasSubstr("node 'test_node' (as_strided): the view reads element 6 of an "
                "input of 6 elements (f32[2,3])"));
  EXPECT_THAT(
      RunOpError("as_strided", {x}, MakeAttrs({{"shape", Ints{2}}, {"strides", Ints{1, 1}}})),
      HasSubstr("attributes 'shape' and 'strides' must have the same length, got 1 "
                "and 2"));
  EXPECT_THAT(RunOpError("as_strided", {x}, MakeAttrs({{"shape", Ints{2}}, {"strides", Ints{-1}}})),
              HasSubstr("attribute 'strides' has a negative entry: -1"));
  EXPECT_THAT(
      RunOpError("as_strided", {x},
                 MakeAttrs({{"shape", Ints{2}}, {"strides", Ints{1}}, {"offset", int64_t{-1}}})),
      HasSubstr("attribute 'offset' is negative: -1"));
  EXPECT_THAT(RunOpError("as_strided", {x},
                         MakeAttrs({{"shape", Ints{2, 2}}, {"strides", Ints{kMax, kMax}}})),
              HasSubstr("the view reads element"));
}

}  // namespace
}  // namespace loom
