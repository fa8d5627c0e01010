#include "ir/dtype.h"

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

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::Status CheckShapeLimits(const Shape& shape) {
  int64_t product = 1;  // of the non-zero dimensions so far
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeToString(shape), " has a negative dimension"));
    }
    if (d == 0) continue;
    if (product > kMaxTensorElements / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeToString(shape),
          " is too large (loom allows at most 2^40 elements per tensor, "
          "counting dimensions of size 0 as 1)"));
    }
    product *= d;
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
    stride *= shape[i];
  }
  return strides;
}

std::string TypeToString(const TensorType& type) {
  return absl::StrCat(DTypeName(type.dtype), ShapeToString(type.shape));
}

}  // namespace loom
