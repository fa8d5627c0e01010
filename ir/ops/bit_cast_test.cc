// bit_cast: the bits kept, the type changed, the width checked.
#include <cstdint>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/ops/op_test_util.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

Attrs To(const std::string& dtype) { return MakeAttrs({{"to", dtype}}); }

TEST(BitCastTest, FloatsToTheirBitsAndBack) {
  const Tensor x = MakeTensor(DType::kF32, {2, 2}, {1.0, -0.0, INFINITY, -2.5});
  absl::StatusOr<Tensor> bits = RunOp("bit_cast", {x}, To("i32"));
  ASSERT_TRUE(bits.ok()) << bits.status();
  EXPECT_EQ(bits->shape(), (Shape{2, 2}));
  EXPECT_THAT(ToInts(*bits), ::testing::ElementsAre(0x3f800000, INT32_MIN, 0x7f800000,
                                                    static_cast<int32_t>(0xc0200000u)));
  absl::StatusOr<Tensor> back = RunOp("bit_cast", {*bits}, To("f32"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->data(), x.data(), x.num_bytes()), 0);

  absl::StatusOr<Tensor> wide = RunOp("bit_cast", {MakeTensor(DType::kF64, {}, {1.0})}, To("u64"));
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(static_cast<uint64_t>(wide->GetInt(0)), 0x3ff0000000000000u);
}

// f16 and bf16 are read as their bits, not widened to f32 first.
TEST(BitCastTest, HalfFloatsKeepTheirBits) {
  const Tensor h = MakeTensor(DType::kF16, {2}, {1.0, -2.0});
  absl::StatusOr<Tensor> bits = RunOp("bit_cast", {h}, To("u16"));
  ASSERT_TRUE(bits.ok()) << bits.status();
  EXPECT_THAT(ToInts(*bits), ::testing::ElementsAre(0x3c00, 0xc000));
  absl::StatusOr<Tensor> b = RunOp("bit_cast", {h}, To("bf16"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(std::memcmp(b->data(), h.data(), h.num_bytes()), 0);
}

TEST(BitCastTest, IntegersAndBools) {
  absl::StatusOr<Tensor> u8 =
      RunOp("bit_cast", {MakeIntTensor(DType::kI8, {3}, {-1, -128, 5})}, To("u8"));
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_THAT(ToInts(*u8), ::testing::ElementsAre(255, 128, 5));
  // A bool holds 0 or 1; a nonzero byte reads as true.
  absl::StatusOr<Tensor> flags =
      RunOp("bit_cast", {MakeIntTensor(DType::kU8, {3}, {0, 1, 2})}, To("bool"));
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_THAT(ToInts(*flags), ::testing::ElementsAre(0, 1, 1));
  absl::StatusOr<Tensor> bytes =
      RunOp("bit_cast", {MakeIntTensor(DType::kBool, {2}, {1, 0})}, To("i8"));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_THAT(ToInts(*bytes), ::testing::ElementsAre(1, 0));
}

// Interpreted in float64, bit_cast still reads and writes f32 bits (the
// widening casts around it), and its f32 result comes back f64.
TEST(BitCastTest, Float64InterpretationKeepsTheDeclaredTypes) {
  Graph g;
  const ValueId x = *g.AddInput("x", {DType::kF32, {2}});
  const ValueId sum = g.node(*g.AddNode("add", "add", {x, x}, {"sum"})).outputs[0];
  const ValueId bits =
      g.node(*g.AddNode("bits", "bit_cast", {sum}, {"bits"}, To("i32"))).outputs[0];
  const ValueId back =
      g.node(*g.AddNode("back", "bit_cast", {bits}, {"back"}, To("f32"))).outputs[0];
  g.AddOutput(bits);
  g.AddOutput(back);
  ASSERT_TRUE(InferShapes(g).ok());
  const Tensor in = MakeTensor(DType::kF32, {2}, {0.5, 1.5});
  absl::StatusOr<BoundedOutputs> out = InterpretWithErrorBounds(g, {in});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts(out->values[0]), ::testing::ElementsAre(0x3f800000, 0x40400000));
  EXPECT_EQ(out->values[1].dtype(), DType::kF64);
  EXPECT_THAT(ToDoubles(out->values[1]), ::testing::ElementsAre(1.0, 3.0));
}

// The 4- and 2-bit types, a byte each, reinterpret their low bits.
TEST(BitCastTest, SubByteTypesReadTheirLowBits) {
  absl::StatusOr<Tensor> u4 =
      RunOp("bit_cast", {MakeIntTensor(DType::kI4, {3}, {-1, -8, 7})}, To("u4"));
  ASSERT_TRUE(u4.ok()) << u4.status();
  EXPECT_THAT(ToInts(*u4), ::testing::ElementsAre(15, 8, 7));
  absl::StatusOr<Tensor> i2 = RunOp("bit_cast", {MakeIntTensor(DType::kU2, {2}, {3, 1})}, To("i2"));
  ASSERT_TRUE(i2.ok()) << i2.status();
  EXPECT_THAT(ToInts(*i2), ::testing::ElementsAre(-1, 1));
  // f4e2m1's bits 0b0011 are 1.5; as i4, 3.
  absl::StatusOr<Tensor> f4 =
      RunOp("bit_cast", {MakeIntTensor(DType::kI4, {1}, {3})}, To("f4e2m1"));
  ASSERT_TRUE(f4.ok()) << f4.status();
  EXPECT_EQ(f4->GetDouble(0), 1.5);
  absl::StatusOr<Tensor> back = RunOp("bit_cast", {*f4}, To("i4"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->GetInt(0), 3);
}

TEST(BitCastTest, RefusesAnotherWidthOrType) {
  const Tensor x = MakeTensor(DType::kF32, {2}, {1, 2});
  EXPECT_THAT(RunOpError("bit_cast", {x}, To("f64")),
              HasSubstr("node 'test_node' (bit_cast): cannot reinterpret f32 (32 bits) as f64 "
                        "(64 bits)"));
  EXPECT_THAT(RunOpError("bit_cast", {x}, To("f8")), HasSubstr("attribute 'to'"));
  EXPECT_THAT(RunOpError("bit_cast", {x}), HasSubstr("to"));
  EXPECT_THAT(RunOpError("bit_cast", {MakeIntTensor(DType::kI4, {1}, {-1})}, To("u8")),
              HasSubstr("cannot reinterpret i4 (4 bits) as u8 (8 bits)"));
}

}  // namespace
}  // namespace loom
