// bit_cast through the whole CPU path against the interpreter: f32 and f64
// to and from integers of their width (NaNs, infinities, -0 and subnormals
// among them), the 8- and 16-bit integers, bool, and the 16- and 8-bit
// floats, whose kernels hold their bits.

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_test_util.h"

namespace loom {
namespace {

Attrs To(DType dtype) {
  Attrs attrs;
  attrs.Set("to", std::string(DTypeName(dtype)));
  return attrs;
}

TEST(BitCastEndToEndTest, EveryPairOfOneWidth) {
  const std::vector<std::pair<DType, DType>> pairs = {
      {DType::kF32, DType::kI32},     {DType::kF32, DType::kU32},   {DType::kI32, DType::kF32},
      {DType::kU32, DType::kI32},     {DType::kF64, DType::kI64},   {DType::kU64, DType::kF64},
      {DType::kF16, DType::kI16},     {DType::kU16, DType::kBF16},  {DType::kBF16, DType::kF16},
      {DType::kI8, DType::kU8},       {DType::kBool, DType::kU8},   {DType::kU8, DType::kBool},
      {DType::kU8, DType::kF8E4M3FN}, {DType::kF8E5M2, DType::kI8}, {DType::kI4, DType::kU4},
      {DType::kU4, DType::kF4E2M1},   {DType::kF4E2M1, DType::kI4}, {DType::kU2, DType::kI2}};
  GraphBuilder b;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [from, to] = pairs[i];
    const ValueId x = b.Input(absl::StrCat("x", i), from, {4, 9});
    b.Output(b.Op("bit_cast", {x}, To(to)));
  }
  EndToEndOptions options;
  // The floats' specials and the integers' extremes among the inputs.
  options.fill = [](size_t, Tensor& input) {
    const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, 5e-324, 1.0, -2.5};
    if (IsFloat(input.dtype())) {
      for (int i = 0; i < 9; ++i) input.SetDouble(i, specials[i]);
    } else if (input.dtype() != DType::kBool) {
      input.SetInt(0, IntegerMinBits(input.dtype()));
      input.SetInt(1, IntegerMaxBits(input.dtype()));
      input.SetInt(2, -1);
    }
  };
  CompileRunAndCompare(std::move(b.graph()), options);
}

}  // namespace
}  // namespace loom
