#ifndef LOOM_IR_DTYPE_H_
#define LOOM_IR_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/graph.pb.h"

namespace loom {

// Element types loom computes with. kF16 (IEEE half) and kBF16 (bfloat16)
// are storage types: ops compute them in f32 and round each result to the
// type (ir/interpreter.h, passes/widen_half.h).
// clang-format off
enum class DType : uint8_t {
  kF32, kF64, kI32, kI64, kBool, kI8, kI16, kU8, kU16, kU32, kU64, kF16, kBF16
};
// clang-format on

inline constexpr DType kAllDTypes[] = {
    DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kBool, DType::kI8,  DType::kI16,
    DType::kU8,  DType::kU16, DType::kU32, DType::kU64, DType::kF16,  DType::kBF16};

// Bytes per element.
int64_t DTypeSize(DType dtype);
// "f32", "f64", "i32", "i64", "bool", "i8", "i16", "u8", "u16", "u32",
// "u64", "f16", "bf16": the spelling used in attributes (cast's `to`),
// messages and dumps.
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> DTypeFromName(absl::string_view name);
bool IsFloat(DType dtype);      // f32, f64, f16, bf16
bool IsHalfFloat(DType dtype);  // f16, bf16: the 16-bit storage types
bool IsInteger(DType dtype);    // signed and unsigned, not bool
bool IsUnsigned(DType dtype);   // u8, u16, u32, u64

// Integer values in loom's common integer type (Tensor::GetInt, the
// interpreter) are int64 "bits": a value of a narrower type is sign- or
// zero-extended, a u64 value is its bit pattern (those above INT64_MAX read
// as negative int64s, so order and division must go through the helpers
// below or through uint64_t).
//
// The bits of the integer dtype's smallest and largest values.
int64_t IntegerMinBits(DType dtype);
int64_t IntegerMaxBits(DType dtype);
// a < b for bits of the integer dtype (unsigned order for u*).
bool IntegerLess(int64_t a, int64_t b, DType dtype);
// The bits of `x` cast to the integer dtype: truncated toward zero,
// saturated at the type's range, NaN as 0 (generated code does the same:
// backends/common/c_scalar.h).
int64_t FloatToIntegerBits(double x, DType dtype);
// The thresholds of that saturation: x >= the high bound gives the
// maximum, x <= the low bound the minimum; between them the truncation is
// in range (max + 1 and min - 1, as doubles).
double IntegerSaturationBound(DType dtype, bool high);
// A clip bound for the integer dtype: the bits of the integers inside it
// (ceil of a lower bound, floor of an upper one), saturated to the dtype's
// range; a NaN bound gives the minimum.
int64_t IntegerClipBoundBits(double bound, bool is_lower, DType dtype);
// The value of integer bits of `dtype` as a double (rounded once).
double IntegerBitsToDouble(int64_t bits, DType dtype);

// The bits of the f16 or bf16 (`dtype`) nearest to `x`, ties to even
// (overflow gives infinity; NaN stays NaN, its sign kept); and back.
uint16_t HalfFloatBits(double x, DType dtype);
double HalfFloatValue(uint16_t bits, DType dtype);

absl::StatusOr<DType> DTypeFromProto(proto::DType dtype);
proto::DType DTypeToProto(DType dtype);

// Static shapes. A scalar has rank 0 and one element.
using Shape = std::vector<int64_t>;

// Size arithmetic. Every product of dimensions, strides, element and byte
// counts goes through CheckedMul or the helpers built on it, never through a
// bare `*` that could wrap.
//
// a * b, or nullopt when the product does not fit in int64.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);
// a * b, or INT64_MAX (INT64_MIN for a negative product) when it does not
// fit: a size that overflows never reads as a small one.
int64_t SaturatingMul(int64_t a, int64_t b);
// The product of `dims` (1 for none; 0 when any is 0, however large the
// others), or nullopt when it does not fit in int64.
std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims);
// The product of the dimensions (1 for a scalar), saturating as
// SaturatingMul does. Exact for shapes within the limits below
// (CheckShapeLimits), which every shape that enters loom is checked against.
int64_t NumElements(absl::Span<const int64_t> dims);
// NumElements(dims) * DTypeSize(dtype), saturating likewise.
int64_t NumBytes(DType dtype, absl::Span<const int64_t> dims);

// The most elements loom accepts in one tensor: element, stride and byte
// counts of any shape within the limit stay far from int64 overflow.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;

// Checks that `shape` has no negative dimension and that its non-zero
// dimensions multiply to at most kMaxTensorElements (a dimension of size 0
// must not hide others whose strides would overflow). Errors describe the
// cause only.
absl::Status CheckShapeLimits(const Shape& shape);

// Refuses `bytes` that exceed this machine's physical memory, naming them
// by `what` ("the model's buffers"): allocating them would throw
// std::bad_alloc or draw the OOM killer, a crash instead of an error.
absl::Status CheckFitsInMemory(double bytes, absl::string_view what);
// "[2,16,32]"
std::string ShapeToString(const Shape& shape);
// Row-major strides, in elements (saturating as NumElements does).
std::vector<int64_t> ContiguousStrides(const Shape& shape);

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const TensorType& a, const TensorType& b) { return !(a == b); }
};

// "f32[2,16,32]"
std::string TypeToString(const TensorType& type);

}  // namespace loom

#endif  // LOOM_IR_DTYPE_H_
