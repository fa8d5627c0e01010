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

// Element types loom computes with.
enum class DType : uint8_t { kF32, kF64, kI32, kI64, kBool };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kI32,
                                       DType::kI64, DType::kBool};

// Bytes per element.
int64_t DTypeSize(DType dtype);
// "f32", "f64", "i32", "i64", "bool": the spelling used in attributes
// (cast's `to`), messages and dumps.
absl::string_view DTypeName(DType dtype);
absl::StatusOr<DType> DTypeFromName(absl::string_view name);
bool IsFloat(DType dtype);
bool IsInteger(DType dtype);  // i32, i64 (not bool)

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
  friend bool operator!=(const TensorType& a, const TensorType& b) {
    return !(a == b);
  }
};

// "f32[2,16,32]"
std::string TypeToString(const TensorType& type);

}  // namespace loom

#endif  // LOOM_IR_DTYPE_H_
