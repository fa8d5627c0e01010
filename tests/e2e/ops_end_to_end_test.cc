// The op set of issue 3 (all but the recurrent ops) through the whole CPU
// path (decompose, lower, schedule, emit C++, native compile, run), compared
// with the reference interpreter. Each test builds one graph of many ops, so
// the native compiler runs once per test; shapes include size-1 dims, odd
// sizes and negative axes, inputs NaN, infinities and ties where the op
// defines what they do.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/tensor.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Each test compiles for this machine and for Arm (cross-compiled and run
// under QEMU: aarch64_run.h); on Arm, graphs whose kernels call a library
// are left out (CompileRunAndCompare says so).
class OpsEndToEndTest : public testing::TestWithParam<std::string> {
 protected:
  EndToEndOptions Options() const {
    EndToEndOptions options;
    options.march = GetParam();
    return options;
  }
};

INSTANTIATE_TEST_SUITE_P(Marches, OpsEndToEndTest, testing::Values("", "armv8-a"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param.empty() ? std::string("native")
                                                     : std::string("armv8_a");
                         });

// Overwrites the first elements of `t` with `values`.
void SetFirst(Tensor& t, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size() && i < t.num_elements(); ++i) {
    t.SetDouble(i, values[i]);
  }
}

Tensor IntTensor(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.SetInt(i, values[i]);
  return t;
}

TEST_P(OpsEndToEndTest, ElementwisePrimitives) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {3, 17});
  const ValueId y = b.Input("y", DType::kF32, {17});
  for (const char* op : {"erf", "sin", "cos", "floor", "ceil", "round", "sign"}) {
    b.Output(b.Op(op, {x}));
  }
  b.Output(b.Op("mod", {x, y}));
  b.Output(b.Op("mod", {x, y}, MakeAttrs({{"fmod", int64_t{1}}})));
  const ValueId x64 = b.Input("x64", DType::kF64, {2, 1, 5});
  const ValueId y64 = b.Input("y64", DType::kF64, {3, 1});
  for (const char* op : {"erf", "cos", "round", "sign"}) {
    b.Output(b.Op(op, {x64}));
  }
  b.Output(b.Op("mod", {x64, y64}));
  b.Output(b.Op("mod", {y64, x64}, MakeAttrs({{"fmod", int64_t{1}}})));
  const ValueId xi = b.Input("xi", DType::kI32, {4, 6});
  const ValueId yi = b.Input("yi", DType::kI32, {6});
  b.Output(b.Op("sign", {xi}));
  b.Output(b.Op("mod", {xi, yi}));
  b.Output(b.Op("mod", {xi, yi}, MakeAttrs({{"fmod", int64_t{1}}})));
  const ValueId xl = b.Input("xl", DType::kI64, {5});
  b.Output(b.Op("sign", {xl}));
  b.Output(b.Op("mod", {xl, b.Weight("three", {1}, 0, 3, 4, DType::kI64)}));
  // Logical ops on [3, 17] x [17] bools.
  const ValueId p = b.Op("less", {x, y});
  const ValueId q = b.Op("greater", {y, b.Weight("half", {1}, 0, 0.5, 0.5)});
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    b.Output(b.Op(op, {p, q}));
    b.Output(b.Op(op, {q, p}));
  }
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    switch (i) {
      case 0:  // x: halves (round to even), signed zeros, NaN, infinities
        SetFirst(t,
                 {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, kNan, kInf, -kInf, 1e30, -3.0, 3.0});
        break;
      case 1:  // y: divisors, one of them zero
        SetFirst(t, {0.0, 1.5, -1.5, 0.75, -2.0, 1.0, -1.0, 3.0, 2.0});
        break;
      case 4:  // xi: the most negative i32 divided by -1
        SetFirst(t, {std::numeric_limits<int32_t>::min(), -7, 7, 0, -1});
        break;
      case 5:  // yi: no zero divisor (the interpreter rejects it)
        SetFirst(t, {-1, 3, -3, 2, 5, -4});
        break;
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST_P(OpsEndToEndTest, IntegerModByZeroGivesZeroInGeneratedCode) {
  GraphBuilder b;
  const ValueId a = b.Input("a", DType::kI32, {5});
  const ValueId d = b.Input("d", DType::kI32, {5});
  b.Output(b.Op("mod", {a, d}));
  b.Output(b.Op("mod", {a, d}, MakeAttrs({{"fmod", int64_t{1}}})));
  const ValueId al = b.Input("al", DType::kI64, {3});
  const ValueId dl = b.Input("dl", DType::kI64, {3});
  b.Output(b.Op("mod", {al, dl}));
  ASSERT_TRUE(InferShapes(b.graph()).ok());
  const std::vector<Tensor> inputs = {
      IntTensor(DType::kI32, {5}, {7, -7, std::numeric_limits<int32_t>::min(), -7, 7}),
      IntTensor(DType::kI32, {5}, {0, 0, -1, 3, -3}),
      IntTensor(DType::kI64, {3}, {std::numeric_limits<int64_t>::min(), 4, 9}),
      IntTensor(DType::kI64, {3}, {-1, 0, -4}),
  };
  absl::StatusOr<std::vector<Tensor>> outputs =
      CompileAndRun(std::move(b.graph()), inputs, GetParam());
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_EQ((*outputs)[0], IntTensor(DType::kI32, {5}, {0, 0, 0, 2, -2}));
  EXPECT_EQ((*outputs)[1], IntTensor(DType::kI32, {5}, {0, 0, 0, -1, 1}));
  EXPECT_EQ((*outputs)[2], IntTensor(DType::kI64, {3}, {0, 0, -3}));
}

// Every element of `t` set to bits(i) (ir/dtype.h: a u64 above INT64_MAX
// is a negative int64).
template <typename Fn>
void SetAllInts(Tensor& t, Fn bits) {
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetInt(i, bits(i));
}

// The narrow and unsigned integer types: wrap-around, unsigned order,
// division, remainders, shifts by up to and past the width, casts from
// NaN, infinities and out-of-range floats, selects, reductions, clip and
// max_pool (decomposed), all against the interpreter; one test per family
// of types.
TEST_P(OpsEndToEndTest, U8Integers) {
  GraphBuilder b;
  const ValueId a = b.Input("a", DType::kU8, {3, 37});
  const ValueId d = b.Input("d", DType::kU8, {37});  // no zero
  const ValueId s = b.Input("s", DType::kU8, {37});  // shifts 0..9
  for (const char* op : {"add", "sub", "mul", "div", "mod", "maximum", "minimum"}) {
    b.Output(b.Op(op, {a, d}));
  }
  b.Output(b.Op("bit_shift", {a, s}, MakeAttrs({{"direction", std::string("left")}})));
  b.Output(b.Op("bit_shift", {a, s}, MakeAttrs({{"direction", std::string("right")}})));
  for (const char* op : {"neg", "abs", "sign", "relu"}) b.Output(b.Op(op, {a}));
  const ValueId a_less = b.Op("less", {a, d});
  b.Output(a_less);
  b.Output(b.Op("where", {a_less, a, d}));
  for (const char* to : {"f32", "i8", "i16", "u64"}) {
    b.Output(b.Op("cast", {a}, MakeAttrs({{"to", std::string(to)}})));
  }
  b.Output(b.Op("reduce_sum", {a}, IntsAttr("axes", {1})));
  b.Output(b.Op("reduce_max", {a}, IntsAttr("axes", {1})));
  b.Output(b.Op("reduce_min", {a}, IntsAttr("axes", {0})));
  b.Output(b.Op("argmax", {a}, MakeAttrs({{"axis", int64_t{1}}})));
  b.Output(b.Op("clip", {a}, MakeAttrs({{"min", 2.5}, {"max", 200.0}})));
  const ValueId image = b.Input("image", DType::kU8, {1, 2, 5, 6});
  b.Output(b.Op("max_pool", {image},
                MakeAttrs({{"kernel_shape", std::vector<int64_t>{3, 3}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{2, 2}}})));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    switch (i) {
      case 0:  // a: all of 0..255
        SetAllInts(t, [](int64_t k) { return (k * 37 + 11) % 256; });
        break;
      case 1:  // d: 1..255
        SetAllInts(t, [](int64_t k) { return 1 + (k * 53) % 255; });
        break;
      case 2:  // s: shifts 0..9 (8 and 9 past the width)
        SetAllInts(t, [](int64_t k) { return k % 10; });
        break;
      case 3:  // image
        SetAllInts(t, [](int64_t k) { return (k * 91) % 256; });
        break;
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST_P(OpsEndToEndTest, U64Integers) {
  GraphBuilder b;
  const ValueId c = b.Input("c", DType::kU64, {37});
  const ValueId e = b.Input("e", DType::kU64, {37});  // no zero
  const ValueId s64 = b.Input("s64", DType::kU64, {37});
  for (const char* op : {"add", "mul", "div", "mod", "maximum", "minimum", "pow"}) {
    b.Output(b.Op(op, {c, e}));
  }
  b.Output(b.Op("mod", {c, e}, MakeAttrs({{"fmod", int64_t{1}}})));
  b.Output(b.Op("greater", {c, e}));
  b.Output(b.Op("bit_shift", {c, s64}, MakeAttrs({{"direction", std::string("left")}})));
  b.Output(b.Op("bit_shift", {c, s64}, MakeAttrs({{"direction", std::string("right")}})));
  for (const char* to : {"f32", "f64", "u8", "i64"}) {
    b.Output(b.Op("cast", {c}, MakeAttrs({{"to", std::string(to)}})));
  }
  b.Output(b.Op("reduce_max", {c}));
  b.Output(b.Op("argmin", {c}));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    const int64_t top = std::numeric_limits<int64_t>::min();  // 2^63 as u64
    switch (i) {
      case 0:  // c: around 2^63 and 2^64 - 1
        SetAllInts(t, [top](int64_t k) { return k % 3 == 0 ? top + k : k % 3 == 1 ? -k : k * k; });
        break;
      case 1:  // e: no zero, some above 2^63
        SetAllInts(t, [top](int64_t k) { return k % 4 == 0 ? top + 7 * k : k + 1; });
        break;
      case 2:  // s64: shifts 0..70
        SetAllInts(t, [](int64_t k) { return (k * 13) % 71; });
        break;
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// i8, and the products and shifts of i16, u16 and u32.
TEST_P(OpsEndToEndTest, I8I16U16AndU32Integers) {
  GraphBuilder b;
  const ValueId g = b.Input("g", DType::kI8, {37});
  const ValueId h = b.Input("h", DType::kI8, {37});  // no zero
  for (const char* op : {"add", "sub", "mul", "div", "mod", "maximum", "pow"}) {
    b.Output(b.Op(op, {g, h}));
  }
  b.Output(b.Op("mod", {g, h}, MakeAttrs({{"fmod", int64_t{1}}})));
  for (const char* op : {"neg", "abs", "sign"}) b.Output(b.Op(op, {g}));
  b.Output(b.Op("clip", {g}, MakeAttrs({{"min", -100.5}, {"max", 1e9}})));
  b.Output(b.Op("cast", {g}, MakeAttrs({{"to", std::string("u16")}})));
  const ValueId s = b.Input("s", DType::kU8, {37});  // shifts 0..9
  const ValueId i16 = b.Input("i16", DType::kI16, {37});
  const ValueId u16 = b.Input("u16", DType::kU16, {37});
  const ValueId u32 = b.Input("u32", DType::kU32, {37});
  b.Output(b.Op("mul", {i16, i16}));
  b.Output(b.Op("mul", {u16, u16}));
  b.Output(b.Op("sub", {u32, b.Op("mul", {u32, u32})}));
  const Attrs left = MakeAttrs({{"direction", std::string("left")}});
  const Attrs right = MakeAttrs({{"direction", std::string("right")}});
  b.Output(
      b.Op("bit_shift", {u16, b.Op("cast", {s}, MakeAttrs({{"to", std::string("u16")}}))}, left));
  b.Output(
      b.Op("bit_shift", {u32, b.Op("cast", {s}, MakeAttrs({{"to", std::string("u32")}}))}, right));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    switch (i) {
      case 0:  // g: -128..127
        SetAllInts(t, [](int64_t k) { return (k * 71) % 256 - 128; });
        break;
      case 1:  // h: no zero; -1 (for -128 / -1) and -128
        SetAllInts(t, [](int64_t k) {
          return k == 0 ? -1 : k == 1 ? -128 : k % 9 - 4 == 0 ? 3 : k % 9 - 4;
        });
        break;
      case 2:  // s: shifts 0..9 (8 and 9 past the width)
        SetAllInts(t, [](int64_t k) { return k % 10; });
        break;
      case 3:  // i16
      case 4:  // u16
      case 5:  // u32
        SetAllInts(t, [i](int64_t k) { return (k * 7919 + 12345) << (4 * (i - 3)); });
        break;
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// The bitwise ops of signed and unsigned types, one operand broadcast, and
// shifts of every type family by negative amounts, by up to the width and
// past it (signed: ONNX's BitShift 28).
TEST_P(OpsEndToEndTest, BitwiseOpsAndShifts) {
  GraphBuilder b;
  const Attrs left = MakeAttrs({{"direction", std::string("left")}});
  const Attrs right = MakeAttrs({{"direction", std::string("right")}});
  for (DType dtype : {DType::kI8, DType::kI16, DType::kI32, DType::kI64, DType::kU8, DType::kU64}) {
    const std::string name(DTypeName(dtype));
    const ValueId x = b.Input(absl::StrCat("x_", name), dtype, {3, 37});
    const ValueId mask = b.Input(absl::StrCat("mask_", name), dtype, {37});
    const ValueId by = b.Input(absl::StrCat("by_", name), dtype, {37});
    for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
      b.Output(b.Op(op, {x, mask}));
    }
    b.Output(b.Op("bitwise_not", {x}));
    b.Output(b.Op("bit_shift", {x, by}, left));
    b.Output(b.Op("bit_shift", {x, by}, right));
  }
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    const int64_t width = 8 * DTypeSize(t.dtype());
    switch (i % 3) {
      case 0:  // x, mask: bits all over the type (2^64 / golden ratio steps)
      case 1:
        SetAllInts(t, [i](int64_t k) {
          return static_cast<int64_t>((k + 1 + 97 * i) * uint64_t{0x9E3779B97F4A7C15});
        });
        break;
      case 2:  // by: negative (for unsigned types: huge), 0 to the width and past it
        SetAllInts(t, [width](int64_t k) {
          const int64_t edges[] = {-1, -width, width - 1, width, width + 3, 127};
          return k < 6 ? edges[k] : k % width;
        });
        break;
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// Floats cast to the narrow and unsigned types: truncated, saturated, NaN
// as 0.
TEST_P(OpsEndToEndTest, FloatsCastToNarrowAndUnsignedIntegers) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {37});
  const ValueId x64 = b.Input("x64", DType::kF64, {37});
  for (const char* to : {"i8", "i16", "u8", "u16", "u32", "u64"}) {
    b.Output(b.Op("cast", {x}, MakeAttrs({{"to", std::string(to)}})));
    b.Output(b.Op("cast", {x64}, MakeAttrs({{"to", std::string(to)}})));
  }
  EndToEndOptions options = Options();
  options.fill = [](size_t, Tensor& t) {  // x, x64: every saturation edge
    SetFirst(t, {kNan,
                 kInf,
                 -kInf,
                 -0.5,
                 -1.0,
                 -0.99,
                 255.5,
                 256.0,
                 127.9,
                 128.0,
                 -128.9,
                 -129.0,
                 32767.5,
                 -32769.0,
                 65535.9,
                 65536.0,
                 4294967295.0,
                 4294967296.0,
                 1.8446744073709552e19,
                 1e30,
                 -1e30,
                 9.2233720368547758e18,
                 3.7,
                 -3.7});
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST_P(OpsEndToEndTest, Activations) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {4, 9});
  b.Output(b.Op("gelu", {x}));
  b.Output(b.Op("gelu", {x}, MakeAttrs({{"approximate", std::string("tanh")}})));
  b.Output(b.Op("silu", {x}));
  b.Output(b.Op("clip", {x}, MakeAttrs({{"min", -1.5}, {"max", 2.25}})));
  b.Output(b.Op("clip", {x}, MakeAttrs({{"min", 0.1}})));
  b.Output(b.Op("clip", {x}, MakeAttrs({{"max", -0.3}})));
  b.Output(b.Op("clip", {x}, MakeAttrs({{"min", 1.0}, {"max", -1.0}})));
  b.Output(b.Op("clip", {x}));
  b.Output(b.Op("leaky_relu", {x}, MakeAttrs({{"alpha", 0.2}})));
  b.Output(b.Op("leaky_relu", {x}));
  b.Output(b.Op("elu", {x}, MakeAttrs({{"alpha", 0.7}})));
  b.Output(b.Op("selu", {x}));
  b.Output(b.Op("softplus", {x}));
  b.Output(b.Op("hard_sigmoid", {x}));
  b.Output(b.Op("hard_sigmoid", {x}, MakeAttrs({{"alpha", 0.5}, {"beta", 0.1}})));
  b.Output(b.Op("hard_swish", {x}));
  b.Output(b.Op("prelu", {x, b.Weight("slope", {9}, 1)}));
  b.Output(b.Op("prelu", {x, b.Weight("column", {4, 1}, 2)}));
  const ValueId x64 = b.Input("x64", DType::kF64, {7});
  for (const char* op : {"gelu", "silu", "softplus", "elu", "hard_swish"}) {
    b.Output(b.Op(op, {x64}));
  }
  const ValueId xi = b.Input("xi", DType::kI32, {2, 5});
  b.Output(b.Op("clip", {xi}, MakeAttrs({{"min", -2.5}, {"max", 3.7}})));
  b.Output(b.Op("clip", {xi}, MakeAttrs({{"max", 1e20}, {"min", -1e20}})));
  const ValueId xl = b.Input("xl", DType::kI64, {6});
  b.Output(b.Op("clip", {xl}, MakeAttrs({{"max", 0.5}})));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    if (!IsFloat(t.dtype())) return;
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      t.SetDouble(k, 3 * t.GetDouble(k));  // [-6, 6): past the kinks
    }
    if (i == 0) SetFirst(t, {kNan, kInf, -kInf, 0.0, -0.0, 30.0, -30.0});
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST_P(OpsEndToEndTest, LinearAlgebra) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 3, 5});
  const ValueId w = b.Weight("w", {4, 5}, 1);
  const ValueId bias = b.Weight("bias", {4}, 2);
  b.Output(b.Op("linear", {x, w, bias}));
  b.Output(b.Op("linear", {x, w}));
  const ValueId v = b.Input("v", DType::kF32, {5});
  b.Output(b.Op("linear", {v, w, bias}));
  const ValueId xi = b.Input("xi", DType::kI32, {3, 2});
  b.Output(b.Op("linear", {xi, b.Weight("wi", {1, 2}, 3, -4, 4, DType::kI32),
                           b.Weight("bi", {1}, 4, -4, 4, DType::kI32)}));

  const ValueId a = b.Input("a", DType::kF32, {3, 5});
  const ValueId bm = b.Weight("bm", {5, 4}, 5);
  const ValueId c = b.Weight("c", {4}, 6);
  b.Output(b.Op("gemm", {a, bm, c}));
  b.Output(b.Op("gemm", {a, bm}, MakeAttrs({{"alpha", -1.0}})));
  const ValueId at = b.Input("at", DType::kF32, {5, 3});
  const ValueId bt = b.Weight("bt", {4, 5}, 7);
  b.Output(
      b.Op("gemm", {at, bt, b.Weight("col", {3, 1}, 8)},
           MakeAttrs(
               {{"trans_a", int64_t{1}}, {"trans_b", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}})));
  b.Output(b.Op("gemm", {a, bt, c}, MakeAttrs({{"trans_b", int64_t{1}}, {"beta", 0.0}})));
  const ValueId row = b.Input("row", DType::kF64, {1, 5});
  b.Output(b.Op("gemm", {row, b.Weight("colw", {5, 1}, 9, -1, 1, DType::kF64),
                         b.Weight("one", {1, 1}, 10, -1, 1, DType::kF64)}));
  CompileRunAndCompare(std::move(b.graph()), Options());
}

// Variances take Welford's update in 16 vector lanes when the innermost
// reduction loop is a multiple of 16 (64; 4 x 32 over two loops), one
// running update otherwise (5, 40), and NaN over nothing; a mean over the
// same values next to a variance comes from the same pass.
TEST_P(OpsEndToEndTest, Variances) {
  GraphBuilder b;
  for (const Shape& shape : {Shape{3, 64}, Shape{2, 4, 32}, Shape{3, 4, 5}, Shape{2, 40}}) {
    const ValueId x =
        b.Input(absl::StrCat("x", shape.size(), "_", shape.back()), DType::kF32, shape);
    Attrs last = IntsAttr("axes", {-1});
    last.Set("keepdims", int64_t{1});
    b.Output(b.Op("reduce_var", {x}, last));
    b.Output(b.Op("reduce_mean", {x}, last));
    b.Output(b.Op("reduce_var", {x}, IntsAttr("axes", {-2, -1})));
  }
  b.Output(b.Op("reduce_var", {b.Input("empty", DType::kF32, {2, 0})}, IntsAttr("axes", {1})));
  b.Output(b.Op("reduce_var", {b.Input("x64", DType::kF64, {2, 48})}, IntsAttr("axes", {1})));
  CompileRunAndCompare(std::move(b.graph()), Options());
}

TEST_P(OpsEndToEndTest, Reductions) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {3, 4, 5});
  const ValueId positive = b.Input("positive", DType::kF32, {3, 4, 5});
  Attrs last = IntsAttr("axes", {-1});
  Attrs keep = IntsAttr("axes", {0, 2});
  keep.Set("keepdims", int64_t{1});
  for (const char* op : {"reduce_prod", "reduce_l1", "reduce_l2", "reduce_log_sum",
                         "reduce_log_sum_exp", "reduce_sum_square"}) {
    const ValueId in = std::string(op) == "reduce_log_sum" ? positive : x;
    b.Output(b.Op(op, {in}, last));
    b.Output(b.Op(op, {in}, keep));
    b.Output(b.Op(op, {in}));
  }
  const ValueId ones = b.Input("ones", DType::kF32, {1, 6, 1});
  b.Output(b.Op("reduce_log_sum_exp", {ones}, IntsAttr("axes", {0, 2})));
  b.Output(b.Op("reduce_l2", {ones}, IntsAttr("axes", {-2})));
  const ValueId inf = b.Input("inf", DType::kF32, {4, 3});
  b.Output(b.Op("reduce_log_sum_exp", {inf}, IntsAttr("axes", {1})));
  const ValueId xi = b.Input("xi", DType::kI32, {4, 3});
  b.Output(b.Op("reduce_prod", {xi}, IntsAttr("axes", {0})));
  Attrs keep_all;
  keep_all.Set("keepdims", int64_t{1});
  b.Output(b.Op("reduce_sum_square", {xi}, keep_all));
  const ValueId xl = b.Input("xl", DType::kI64, {5});
  b.Output(b.Op("reduce_l1", {xl}));
  b.Output(b.Op("reduce_prod", {xl}, IntsAttr("axes", {-1})));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    if (i == 1) {  // positive
      for (int64_t k = 0; k < t.num_elements(); ++k) {
        t.SetDouble(k, std::fabs(t.GetDouble(k)) + 0.1);
      }
    }
    if (i == 3) {  // rows: +inf present, all -inf, NaN, finite
      SetFirst(t, {1.0, kInf, 2.0, -kInf, -kInf, -kInf, 0.0, kNan, 1.0});
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST_P(OpsEndToEndTest, ArgmaxAndArgmin) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {4, 5, 3});
  for (const char* op : {"argmax", "argmin"}) {
    for (int64_t axis : {0, 1, -1}) {
      for (int64_t keepdims : {0, 1}) {
        for (int64_t last : {0, 1}) {
          b.Output(b.Op(
              op, {x},
              MakeAttrs({{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}})));
        }
      }
    }
  }
  const ValueId xi = b.Input("xi", DType::kI32, {6, 2});
  b.Output(b.Op("argmax", {xi}));
  b.Output(b.Op("argmax", {xi}, MakeAttrs({{"select_last_index", int64_t{1}}})));
  const ValueId xl = b.Input("xl", DType::kI64, {3, 7});
  b.Output(b.Op("argmin", {xl}, MakeAttrs({{"axis", int64_t{-1}}})));
  const ValueId single = b.Input("single", DType::kF64, {3, 1});
  b.Output(b.Op("argmax", {single}, MakeAttrs({{"axis", int64_t{1}}})));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    if (i != 0) return;
    // Few distinct values, so that rows have ties; NaNs in some rows.
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      t.SetDouble(k, std::floor(t.GetDouble(k)));
    }
    for (int64_t k : {7, 11, 22, 40, 41, 55}) t.SetDouble(k, kNan);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

TEST_P(OpsEndToEndTest, ShapeOps) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {2, 6, 4});
  for (ValueId part : b.Ops("split", {x}, 3, MakeAttrs({{"axis", int64_t{1}}}))) {
    b.Output(part);
  }
  for (ValueId part :
       b.Ops("split", {x}, 3,
             MakeAttrs({{"axis", int64_t{-1}}, {"split", std::vector<int64_t>{1, 0, 3}}}))) {
    b.Output(b.Op("neg", {part}));
  }
  // One part: the whole input, as a view.
  const ValueId xi = b.Input("xi", DType::kI32, {5});
  b.Output(b.Op("neg", b.Ops("split", {xi}, 1)));
  for (int64_t axis : {0, 1, -1, 3}) {
    b.Output(b.Op("flatten", {x}, MakeAttrs({{"axis", axis}})));
  }
  b.Output(b.Op("exp", {b.Op("dropout", {x}, MakeAttrs({{"ratio", 0.3}}))}));
  // Overlapping windows of a stored input, of a transposed view and of an
  // inlined value (those two copied first).
  const Attrs windows = MakeAttrs({{"shape", std::vector<int64_t>{2, 19, 5}},
                                   {"strides", std::vector<int64_t>{24, 1, 1}},
                                   {"offset", int64_t{1}}});
  b.Output(b.Op("as_strided", {x}, windows));
  b.Output(b.Op("as_strided",
                {b.Op("transpose", {x}, MakeAttrs({{"perm", std::vector<int64_t>{0, 2, 1}}}))},
                windows));
  b.Output(b.Op("as_strided", {b.Op("exp", {x})}, windows));

  const ValueId small = b.Input("small", DType::kF32, {2, 1, 3});
  b.Output(b.Op("tile", {small}, IntsAttr("repeats", {2, 3, 1})));
  b.Output(b.Op("neg", {b.Op("tile", {small}, IntsAttr("repeats", {1, 4, 2}))}));
  b.Output(b.Op("tile", {small}, IntsAttr("repeats", {0, 1, 1})));

  const ValueId m = b.Input("m", DType::kF32, {2, 3});
  Attrs pad = IntsAttr("pads", {1, 0, 2, 4});
  pad.Set("value", 1.5);
  b.Output(b.Op("pad", {m}, pad));
  b.Output(b.Op("exp", {b.Op("pad", {m}, IntsAttr("pads", {0, 1, 0, 0}))}));
  b.Output(b.Op("pad", {m}, IntsAttr("pads", {0, 0, 0, 0})));
  const ValueId mi = b.Input("mi", DType::kI32, {3});
  Attrs big = IntsAttr("pads", {2, 1});
  big.Set("value", 1e10);
  b.Output(b.Op("pad", {mi}, big));
  CompileRunAndCompare(std::move(b.graph()), Options());
}

TEST_P(OpsEndToEndTest, GatherAndCumsum) {
  GraphBuilder b;
  // gather: weight and constant indices, negative ones, several axes.
  const ValueId data = b.Input("data", DType::kF32, {4, 5});
  const ValueId idx2d = b.Initializer("idx2d", ValueKind::kWeight,
                                      IntTensor(DType::kI64, {2, 3}, {0, 3, -1, 2, -5, 4}));
  b.Output(b.Op("gather", {data, idx2d}, MakeAttrs({{"axis", int64_t{1}}})));
  const ValueId idx =
      b.Initializer("idx", ValueKind::kConstant, IntTensor(DType::kI32, {3}, {3, -4, 0}));
  b.Output(b.Op("gather", {data, idx}));
  const ValueId scalar =
      b.Initializer("scalar", ValueKind::kConstant, IntTensor(DType::kI64, {}, {-2}));
  b.Output(b.Op("gather", {data, scalar}, MakeAttrs({{"axis", int64_t{-1}}})));
  const ValueId view = b.Op("reshape", {b.Op("transpose", {data})}, IntsAttr("shape", {2, 10}));
  const ValueId idx_view =
      b.Initializer("idx_view", ValueKind::kWeight, IntTensor(DType::kI32, {3}, {9, 0, -1}));
  b.Output(b.Op("gather", {view, idx_view}, MakeAttrs({{"axis", int64_t{1}}})));
  const ValueId ints = b.Input("ints", DType::kI32, {3, 4});
  b.Output(b.Op("gather", {ints, idx}, MakeAttrs({{"axis", int64_t{-1}}})));

  // cumsum: every mode, two axes, integers, a size-1 axis.
  const ValueId c = b.Input("c", DType::kF32, {3, 5});
  for (int64_t axis : {0, -1}) {
    for (int64_t exclusive : {0, 1}) {
      for (int64_t reverse : {0, 1}) {
        b.Output(b.Op("cumsum", {c},
                      MakeAttrs({{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}})));
      }
    }
  }
  const ValueId ci = b.Input("ci", DType::kI64, {7});
  b.Output(
      b.Op("cumsum", {ci},
           MakeAttrs({{"axis", int64_t{0}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}})));
  const ValueId col = b.Input("col", DType::kF64, {3, 1});
  b.Output(b.Op("cumsum", {col}, MakeAttrs({{"axis", int64_t{1}}})));
  CompileRunAndCompare(std::move(b.graph()), Options());
}

// Rows of 37 run 32 columns in explicit vectors (loom_exp16) and 5 one by
// one; rows of 16 only vectors, rows of 5 none. The inputs reach every
// range of the exponential: underflow to 0 and to denormals, overflow to
// infinity, infinities and NaN.
TEST_P(OpsEndToEndTest, ExponentialsInVectorLanes) {
  GraphBuilder b;
  Attrs keepdims = IntsAttr("axes", {1});
  keepdims.Set("keepdims", int64_t{1});
  for (int64_t columns : {37, 16, 5}) {
    const ValueId x = b.Input(absl::StrCat("x", columns), DType::kF32, {4, columns});
    b.Output(b.Op("exp", {b.Op("sub", {x, b.Op("reduce_max", {x}, keepdims)})}));
    b.Output(b.Op("exp", {b.Op("sub", {x, b.Op("reduce_min", {x}, keepdims)})}));
    b.Output(b.Op("softmax", {x}));
  }
  EndToEndOptions options = Options();
  options.fill = [](size_t, Tensor& t) {
    SetFirst(t, {0.0,   -100.0, -87.5, -150.0, 45.0, -50.0,  88.0, 1e-3, -1e-3, 3.5,
                 -20.0, 60.0,   -60.0, 0.25,   7.0,  -104.5, 30.0, -0.5, 2.0,   1.0});
    const int64_t columns = t.shape()[1];
    t.SetDouble(columns + 1, kNan);      // row 1
    t.SetDouble(2 * columns, -kInf);     // row 2
    t.SetDouble(3 * columns + 2, kInf);  // row 3
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// Maxima and minima over rows of 64 columns and more run in blocks of 64 in
// explicit vectors and the rest one by one; a NaN anywhere in a row (a block
// or the rest) is the row's result, and infinities are extremes.
TEST_P(OpsEndToEndTest, MaximaAndMinimaInVectorBlocks) {
  GraphBuilder b;
  const Attrs rows = IntsAttr("axes", {1});
  for (int64_t columns : {64, 101}) {
    const ValueId x = b.Input(absl::StrCat("x", columns), DType::kF32, {5, columns});
    b.Output(b.Op("reduce_max", {x}, rows));
    b.Output(b.Op("reduce_min", {x}, rows));
    b.Output(b.Op("softmax", {x}));
  }
  EndToEndOptions options = Options();
  options.fill = [](size_t, Tensor& t) {
    const int64_t columns = t.shape()[1];
    for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, 50 * std::sin(0.37 * i));
    t.SetDouble(columns + 3, kNan);       // row 1: in the first block
    t.SetDouble(3 * columns - 1, kNan);   // row 2: in the last column
    t.SetDouble(3 * columns + 17, kInf);  // row 3
    t.SetDouble(3 * columns + 40, -kInf);
    t.SetDouble(5 * columns - 2, 1000);  // row 4: both extremes in the last columns
    t.SetDouble(5 * columns - 1, -1000);
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// Reductions over the rows of channels-last data and over a sequence run
// the columns innermost (CppPlanner::ColumnBlock), in blocks of 16 or 64
// with a part block at the end (40 and 200 columns); a NaN in a column is
// that column's maximum and minimum, infinities are extremes, and the values
// after a reduction (a squeeze-excite's sigmoid) run per column.
TEST_P(OpsEndToEndTest, ColumnReductions) {
  GraphBuilder b;
  Attrs rows_keep = IntsAttr("axes", {1, 2});
  rows_keep.Set("keepdims", int64_t{1});
  const ValueId image = b.Input("image", DType::kF32, {2, 9, 5, 40});
  const ValueId pooled = b.Op("reduce_mean", {image}, rows_keep);
  b.Output(b.Op("mul", {image, b.Op("sigmoid", {pooled})}));
  for (const char* op : {"reduce_max", "reduce_min", "reduce_sum", "reduce_prod"}) {
    b.Output(b.Op(op, {image}, IntsAttr("axes", {1, 2})));
  }
  const Attrs sequence = IntsAttr("axes", {1});
  const ValueId tokens = b.Input("tokens", DType::kF32, {4, 33, 200});
  for (const char* op : {"reduce_mean", "reduce_max", "reduce_min"}) {
    b.Output(b.Op(op, {tokens}, sequence));
  }
  const ValueId counts = b.Input("counts", DType::kI32, {7, 48});
  b.Output(b.Op("reduce_sum", {counts}, IntsAttr("axes", {0})));
  b.Output(b.Op("reduce_max", {counts}, IntsAttr("axes", {0})));
  EndToEndOptions options = Options();
  options.fill = [](size_t i, Tensor& t) {
    if (i == 2) return;  // counts: the default draw
    const int64_t columns = t.shape().back();
    for (int64_t k = 0; k < t.num_elements(); ++k) t.SetDouble(k, 0.9 + 0.2 * std::sin(0.37 * k));
    t.SetDouble(3 * columns + 5, kNan);              // column 5 of the first image or sequence
    t.SetDouble(t.num_elements() - 1, kNan);         // the last column of the last
    t.SetDouble(4 * columns + 17, kInf);             // column 17
    t.SetDouble(t.num_elements() - columns, -kInf);  // column 0 of the last
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

// Products of 8 rows and more (up to PanelMaxRows(): 11 and 16 rows where
// this CPU has AVX-512) by a weight of 2^16 elements or more read it as
// panels of 16 columns (passes/pack_panel_weights.h, loom_panel_gemm):
// rows in whole blocks and a rest, an odd number of panels (a pair at a
// time, then one), a k that is no multiple of the vectors, one weight
// shared by three products, and the bias and activation after them. Each
// x86 level's vectors too (16, 8 or 4 lanes: the panels at once and the
// rows' blocks differ), where this CPU runs them.
TEST_P(OpsEndToEndTest, ProductsOfFewRowsReadWeightPanels) {
  const auto products = [] {
    GraphBuilder b;
    const ValueId w = b.Weight("w", {300, 272}, 1);
    for (int64_t rows : {8, 11, 16}) {
      const ValueId x = b.Input(absl::StrCat("x", rows), DType::kF32, {rows, 300});
      const ValueId bias = b.Weight(absl::StrCat("bias", rows), {272}, 2 + rows);
      b.Output(b.Op("relu", {b.Op("add", {b.Op("matmul", {x, w}), bias})}));
    }
    const ValueId sequences = b.Input("sequences", DType::kF32, {2, 5, 256});
    b.Output(b.Op("matmul", {sequences, b.Weight("w_wide", {256, 768}, 3)}));
    return std::move(b.graph());
  };
  CompileRunAndCompare(products(), Options());
  if (!GetParam().empty()) return;
  for (const char* march : {"haswell", "x86-64"}) {
    if (std::string(march) == "haswell" && !__builtin_cpu_supports("avx2")) continue;
    EndToEndOptions options;
    options.march = march;
    CompileRunAndCompare(products(), options);
  }
}

TEST_P(OpsEndToEndTest, SoftmaxAndNormalisations) {
  GraphBuilder b;
  const ValueId x = b.Input("x", DType::kF32, {3, 7});
  b.Output(b.Op("log_softmax", {x}));
  b.Output(b.Op("log_softmax", {x}, MakeAttrs({{"axis", int64_t{0}}})));

  const ValueId seq = b.Input("seq", DType::kF32, {2, 3, 8});
  b.Output(b.Op("layer_norm", {seq, b.Weight("ln_scale", {8}, 1), b.Weight("ln_bias", {8}, 2)}));
  b.Output(b.Op("layer_norm", {seq, b.Weight("ln_scale2", {3, 8}, 3)},
                MakeAttrs({{"axis", int64_t{1}}, {"epsilon", 1e-3}})));
  b.Output(b.Op("layer_norm", {b.Input("narrow", DType::kF32, {4, 1})}));
  b.Output(b.Op("layer_norm", {b.Input("wide", DType::kF64, {2, 9})}));

  const ValueId image = b.Input("image", DType::kF32, {2, 6, 3, 5});
  b.Output(b.Op("group_norm", {image, b.Weight("gn_scale", {6}, 4), b.Weight("gn_bias", {6}, 5)},
                MakeAttrs({{"num_groups", int64_t{3}}})));
  const ValueId flat = b.Input("flat", DType::kF32, {2, 4});
  b.Output(b.Op("group_norm", {flat, b.Weight("gn_scale2", {4}, 6), b.Weight("gn_bias2", {4}, 7)},
                MakeAttrs({{"num_groups", int64_t{2}}})));
  b.Output(
      b.Op("instance_norm", {image, b.Weight("in_scale", {6}, 8), b.Weight("in_bias", {6}, 9)}));
  b.Output(
      b.Op("instance_norm", {flat, b.Weight("in_scale2", {4}, 10), b.Weight("in_bias2", {4}, 11)}));
  const ValueId batch = b.Input("batch", DType::kF32, {2, 3, 4});
  b.Output(b.Op("batch_norm",
                {batch, b.Weight("bn_scale", {3}, 12), b.Weight("bn_bias", {3}, 13),
                 b.Weight("bn_mean", {3}, 14), b.Weight("bn_var", {3}, 15, 0.5, 2)},
                MakeAttrs({{"epsilon", 1e-3}})));
  CompileRunAndCompare(std::move(b.graph()), Options());
}

// The values of index input `i` of the graph of IndicesKnownOnlyAtRunTime
// (in range, negative ones and repeats among them); other inputs keep
// MakeInputs' values.
void FillRunTimeIndices(size_t i, Tensor& t) {
  static const std::vector<std::vector<int64_t>>* const values =
      new std::vector<std::vector<int64_t>>{
          {},                                        // table
          {0, 6, -1, 3, 3, -7},                      // ids: i64 [2, 3]
          {4, -5, 0, 2},                             // ids32: i32 [4]
          {},                                        // data
          {2, -3, 1, 0, 0, 2, -1, 1},                // picks: [2, 4] along axis 1 of 5
          {},                                        // updates
          {1, -4, 1, 3, 0, 0, 2, -1},                // targets: [2, 4] along axis 0 of 4
          {},                                        // rows
          {-1, 0, -1},                               // where: [3, 1] into dim 0 of 4
          {0, 4, -1, -5, 3, 0, 2, 2, -4, 1, 1, -1},  // pairs: [2, 3, 2] into data
          {4, -5, 0, 2, 1, 1, -1, 3},                // columns: [4, 2, 1] per row of data
          {4, -5, 2},                                // transposed_rows: [3, 1] into dim 0 of 5
      };
  if (i >= values->size()) return;
  const std::vector<int64_t>& v = (*values)[i];
  for (size_t k = 0; k < v.size() && k < static_cast<size_t>(t.num_elements()); ++k) {
    t.SetInt(k, v[k]);
  }
}

// gather, gather_elements, gather_nd, scatter_elements and scatter_nd whose
// indices are graph inputs (checked as the kernels run), fused into consumers.
TEST_P(OpsEndToEndTest, IndicesKnownOnlyAtRunTime) {
  GraphBuilder b;
  const ValueId table = b.Input("table", DType::kF32, {7, 6});
  const ValueId ids = b.Input("ids", DType::kI64, {2, 3});
  const ValueId ids32 = b.Input("ids32", DType::kI32, {4});
  // An embedding lookup and its consumer, and a gather along an inner axis.
  const ValueId rows = b.Op("gather", {table, ids});
  b.Output(b.Op("tanh", {b.Op("mul", {rows, rows})}));
  b.Output(b.Op("gather", {table, ids32}, MakeAttrs({{"axis", int64_t{1}}})));
  b.Output(b.Op("gather", {b.Op("transpose", {table}), ids32}));
  const ValueId data = b.Input("data", DType::kF32, {4, 5});
  const ValueId picks = b.Input("picks", DType::kI64, {2, 4});
  b.Output(b.Op("gather_elements", {data, picks}, MakeAttrs({{"axis", int64_t{1}}})));
  const ValueId updates = b.Input("updates", DType::kF32, {2, 4});
  const ValueId targets = b.Input("targets", DType::kI64, {2, 4});
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    b.Output(b.Op("scatter_elements", {data, targets, updates},
                  MakeAttrs({{"reduction", std::string(reduction)}})));
  }
  const ValueId slices = b.Input("rows", DType::kF32, {3, 5});
  const ValueId where = b.Input("where", DType::kI64, {3, 1});
  b.Output(b.Op("scatter_nd", {data, where, slices}));
  b.Output(
      b.Op("scatter_nd", {data, where, slices}, MakeAttrs({{"reduction", std::string("add")}})));
  // gather_nd: elements by (row, column) pairs; columns per row (batch_dims
  // 1); rows of a view (copied).
  b.Output(b.Op("gather_nd", {data, b.Input("pairs", DType::kI64, {2, 3, 2})}));
  b.Output(b.Op("gather_nd", {data, b.Input("columns", DType::kI64, {4, 2, 1})},
                MakeAttrs({{"batch_dims", int64_t{1}}})));
  b.Output(b.Op("exp", {b.Op("gather_nd", {b.Op("transpose", {data}),
                                           b.Input("transposed_rows", DType::kI64, {3, 1})})}));
  EndToEndOptions options = Options();
  options.fill = FillRunTimeIndices;
  CompileRunAndCompare(std::move(b.graph()), options);
}

// A run on an index out of range fails with the message the interpreter
// gives, naming the node and the index: never a read or write out of
// bounds.
TEST_P(OpsEndToEndTest, AnIndexOutOfRangeFailsTheRunNamingTheNode) {
  struct Case {
    std::string op;
    std::vector<int64_t> indices;
    std::string message;
    Shape data = {4};
  };
  for (const Case& c :
       {Case{"gather",
             {0, 2, 1000000},
             "node 'gather_0' (gather): index 1000000 is out of range "
             "for axis 0 of size 4"},
        Case{"gather",
             {-5, 0, 0},
             "node 'gather_0' (gather): index -5 is out of range for "
             "axis 0 of size 4"},
        Case{"scatter_elements",
             {1, 4, 0},
             "node 'scatter_elements_0' (scatter_elements): index 4 is out of range for axis 0 "
             "of size 4"},
        // No element reads the indices: each is checked all the same.
        Case{"gather",
             {0, 4, 1},
             "node 'gather_0' (gather): index 4 is out of range for axis 0 "
             "of size 4",
             {4, 0}}}) {
    GraphBuilder b;
    const ValueId data = b.Input("data", DType::kF32, c.data);
    const ValueId indices = b.Input("indices", DType::kI64, {3});
    if (c.op == "gather") {
      b.Output(b.Op("gather", {data, indices}));
    } else {
      b.Output(b.Op("scatter_elements", {data, indices, b.Weight("updates", {3}, 1)}));
    }
    Graph& graph = b.graph();
    ASSERT_TRUE(InferShapes(graph).ok());
    std::vector<Tensor> inputs = MakeInputs(graph);
    for (size_t k = 0; k < c.indices.size(); ++k) inputs[1].SetInt(k, c.indices[k]);
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(graph, inputs);
    EXPECT_EQ(expected.status().message(), c.message);
    absl::StatusOr<std::vector<Tensor>> actual = CompileAndRun(graph, inputs, GetParam());
    EXPECT_EQ(actual.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(actual.status().message(), c.message);
  }
}

}  // namespace
}  // namespace loom
