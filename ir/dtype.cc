#include "ir/dtype.h"

#include <limits>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace loom {

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (DTypeName(dtype) == name) return dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name, "' (expected f32, f64, i32, i64 or bool)"));
}

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64;
}

bool IsInteger(DType dtype) {
  return dtype == DType::kI32 || dtype == DType::kI64;
}

absl::StatusOr<DType> DTypeFromProto(proto::DType dtype) {
  switch (dtype) {
    case proto::F32:
      return DType::kF32;
    case proto::F64:
      return DType::kF64;
    case proto::I32:
      return DType::kI32;
    case proto::I64:
      return DType::kI64;
    case proto::BOOL:
      return DType::kBool;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported dtype ", proto::DType_Name(dtype)));
  }
}

proto::DType DTypeToProto(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return proto::F32;
    case DType::kF64:
      return proto::F64;
    case DType::kI32:
      return proto::I32;
    case DType::kI64:
      return proto::I64;
    case DType::kBool:
      return proto::BOOL;
  }
  return proto::DTYPE_UNSPECIFIED;
}

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

int64_t SaturatingMul(int64_t a, int64_t b) {
  std::optional<int64_t> product = CheckedMul(a, b);
  if (product.has_value()) return *product;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                            : std::numeric_limits<int64_t>::max();
}

std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims) {
  if (absl::c_linear_search(dims, 0)) return 0;
  int64_t product = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> next = CheckedMul(product, d);
    if (!next.has_value()) return std::nullopt;
    product = *next;
  }
  return product;
}

int64_t NumElements(absl::Span<const int64_t> dims) {
  if (absl::c_linear_search(dims, 0)) return 0;
  int64_t product = 1;
  for (int64_t d : dims) product = SaturatingMul(product, d);
  return product;
}

int64_t NumBytes(DType dtype, absl::Span<const int64_t> dims) {
  return SaturatingMul(NumElements(dims), DTypeSize(dtype));
}

absl::Status CheckShapeLimits(const Shape& shape) {
  // The product of the non-zero dimensions: a 0 must not hide others whose
  // strides would overflow.
  std::optional<int64_t> elements = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeToString(shape), " has a negative dimension"));
    }
    if (d > 0 && elements.has_value()) elements = CheckedMul(*elements, d);
  }
  constexpr char kLimit[] =
      "loom allows at most 2^40 elements per tensor, counting dimensions of "
      "size 0 as 1";
  if (!elements.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(shape),
                     " is too large: its element count overflows int64 (",
                     kLimit, ")"));
  }
  if (*elements > kMaxTensorElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(shape), " is too large: ",
                     *elements, " elements (", kLimit, ")"));
  }
  return absl::OkStatus();
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride = SaturatingMul(stride, shape[i]);
  }
  return strides;
}

std::string TypeToString(const TensorType& type) {
  return absl::StrCat(DTypeName(type.dtype), ShapeToString(type.shape));
}

}  // namespace loom
