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

// Element types loom computes with. The narrow floats (kF16: IEEE half,
// kBF16: bfloat16, the 8-bit floats kF8*, 4-bit kF4E2M1) and the sub-byte
// integers (kI4, kU4, kI2, kU2) are storage types: ops compute them in
// their ComputeType (f32, i32) and round or wrap each result to the type
// (ir/interpreter.h, passes/widen_half.h). The 8-bit floats are ONNX's
// (and ml_dtypes'): E4M3FN and E5M2FNUZ style formats, FN having no
// infinity, FNUZ no infinity and no -0 (0x80 is NaN); kF8E8M0 is a
// biased exponent only (2^(bits - 127), 0xff NaN); kF4E2M1 has no
// infinity or NaN. Each 8-, 4- or 2-bit element takes one byte: 4- and
// 2-bit values are not packed (a sub-byte integer's byte holds its value
// sign- or zero-extended, a narrow float's its bits).
// clang-format off
enum class DType : uint8_t {
  kF32, kF64, kI32, kI64, kBool, kI8, kI16, kU8, kU16, kU32, kU64, kF16, kBF16,
  kF8E4M3FN, kF8E4M3FNUZ, kF8E5M2, kF8E5M2FNUZ, kF8E8M0, kF4E2M1, kI4, kU4, kI2, kU2
};

inline constexpr DType kAllDTypes[] = {
    DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kBool, DType::kI8,  DType::kI16,
    DType::kU8,  DType::kU16, DType::kU32, DType::kU64, DType::kF16,  DType::kBF16,
    DType::kF8E4M3FN, DType::kF8E4M3FNUZ, DType::kF8E5M2, DType::kF8E5M2FNUZ, DType::kF8E8M0,
    DType::kF4E2M1, DType::kI4, DType::kU4, DType::kI2, DType::kU2};
// clang-format on

// Bytes per element.
int64_t DTypeSize(DType dtype);
// "f32", "f64", "i32", "i64", "bool", "i8", "i16", "u8", "u16", "u32",
// "u64", "f16", "bf16", "f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz",
// "f8e8m0", "f4e2m1", "i4", "u4", "i2", "u2": the spelling used in
// attributes (cast's `to`), messages and dumps.
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> DTypeFromName(absl::string_view name);
bool IsFloat(DType dtype);           // f32, f64 and the narrow floats
bool IsHalfFloat(DType dtype);       // f16, bf16: the 16-bit storage types
bool IsNarrowFloat(DType dtype);     // f16, bf16, f8*, f4e2m1
bool IsSubByteInteger(DType dtype);  // i4, u4, i2, u2
bool IsStorageType(DType dtype);     // the narrow floats and the sub-byte integers
bool IsInteger(DType dtype);         // signed and unsigned, not bool
bool IsUnsigned(DType dtype);        // u8, u16, u32, u64, u4, u2
// The type a storage type computes in (f32 for the narrow floats, i32 for
// the sub-byte integers); any other type itself.
DType ComputeType(DType dtype);
// The width of an integer type in bits (4 for i4).
int IntegerWidth(DType dtype);
// The width of an element's value in bits, whatever its storage: 4 for
// i4, u4 and f4e2m1, 2 for i2 and u2, 8 * DTypeSize for the others.
int ValueBits(DType dtype);

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
// backends/common/c_scalar.h). A sub-byte integer type does not saturate:
// a value outside its range (after truncation), infinity or NaN gives 0,
// as ONNX's reference (ml_dtypes) does.
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

// The bits of the narrow float `dtype` nearest to `x`, ties to even, as
// cast converts (ONNX's Cast with saturate=0, ml_dtypes' astype): past the
// largest finite value, infinity where the type has one (f16, bf16,
// f8e5m2), NaN where it has NaN only (the FN and FNUZ f8s), the largest
// finite value in f4e2m1, which has neither (its NaN gives 0); NaN stays
// NaN, its sign kept where the type has signed NaNs; FNUZ types have no
// -0 (it becomes 0). f8e8m0 rounds `x` to f32 and takes its exponent,
// rounding up (to the next power of two) when `x` is not a power of two,
// 2^-127 at least, and saturating at 2^127, as ONNX's Cast does by default
// (round_mode "up", saturate=1); its sign is ignored and infinity gives
// NaN, as in ONNX's reference. And back: the value of such bits.
uint16_t NarrowFloatBits(double x, DType dtype);
double NarrowFloatValue(uint16_t bits, DType dtype);
// The largest finite value of the narrow float `dtype`.
double NarrowFloatMax(DType dtype);

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
