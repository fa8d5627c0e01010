#include "frontends/onnx/onnx_tensor.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/file_io.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

absl::StatusOr<Shape> DimsOf(const onnx::TensorProto& proto, absl::string_view what) {
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (absl::Status s = CheckShapeLimits(shape); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return shape;
}

// The typed field that holds a `dtype` tensor's values when raw_data is
// not used (bools, the integers narrower than 32 bits and the bits of
// float16 and bfloat16 are stored as int32_data, u32 and u64 as
// uint64_data), and its name.
int64_t TypedCount(const onnx::TensorProto& proto, DType dtype, absl::string_view& field) {
  switch (dtype) {
    case DType::kF32:
      field = "float_data";
      return proto.float_data_size();
    case DType::kF64:
      field = "double_data";
      return proto.double_data_size();
    case DType::kI64:
      field = "int64_data";
      return proto.int64_data_size();
    case DType::kI32:
    case DType::kBool:
    case DType::kI8:
    case DType::kI16:
    case DType::kU8:
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      field = "int32_data";
      return proto.int32_data_size();
    case DType::kU32:
    case DType::kU64:
      field = "uint64_data";
      return proto.uint64_data_size();
  }
  return 0;
}

void CopyTyped(const onnx::TensorProto& proto, Tensor& tensor) {
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    switch (tensor.dtype()) {
      case DType::kF32:
        tensor.SetDouble(i, proto.float_data(i));
        break;
      case DType::kF64:
        tensor.SetDouble(i, proto.double_data(i));
        break;
      case DType::kI64:
        tensor.SetInt(i, proto.int64_data(i));
        break;
      case DType::kI32:
      case DType::kBool:
      case DType::kI8:
      case DType::kI16:
      case DType::kU8:
      case DType::kU16:
        tensor.SetInt(i, proto.int32_data(i));
        break;
      case DType::kU32:
      case DType::kU64:
        tensor.SetInt(i, static_cast<int64_t>(proto.uint64_data(i)));
        break;
      case DType::kF16:
      case DType::kBF16:
        tensor.data_as<uint16_t>()[i] = static_cast<uint16_t>(proto.int32_data(i));
        break;
    }
  }
}

// Bools as 0 and 1, whatever nonzero byte the data held.
void NormalizeBools(Tensor& tensor) {
  if (tensor.dtype() != DType::kBool) return;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    tensor.SetInt(i, tensor.data_as<uint8_t>()[i] != 0);
  }
}

// The path of external data, `location` inside the model's folder `dir`.
absl::StatusOr<std::filesystem::path> ExternalPath(const std::string& location,
                                                   const std::string& dir, absl::string_view what) {
  if (location.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data without a location"));
  }
  if (dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": its data is in an external file, which needs the model's folder (import the "
        "model from its file)"));
  }
  const std::filesystem::path relative(location);
  const bool escapes = absl::c_any_of(relative, [](const auto& part) { return part == ".."; });
  if (relative.is_absolute() || escapes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data location '", location,
                                                   "' is not a path inside the model's folder"));
  }
  return std::filesystem::path(dir) / relative;
}

// A tensor whose data is in an external file (TensorProto.external_data:
// location, offset, length), read once the file is known to hold it.
absl::StatusOr<Tensor> ExternalTensor(const onnx::TensorProto& proto, absl::string_view what,
                                      const std::string& dir, DType dtype, Shape shape) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t value = 0;
      if (!absl::SimpleAtoi(entry.value(), &value) || value < 0) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": external data ", entry.key(), " '",
                                                       entry.value(), "' is not a byte count"));
      }
      (entry.key() == "offset" ? offset : length) = value;
    }
  }
  LOOM_ASSIGN_OR_RETURN(std::filesystem::path path, ExternalPath(location, dir, what));
  const int64_t bytes = NumBytes(dtype, shape);
  if (length >= 0 && length != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data of ", length,
                                                   " bytes, shape ", ShapeToString(shape), " of ",
                                                   DTypeName(dtype), " needs ", bytes));
  }
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read its external data '",
                                                   path.string(), "': ", error.message()));
  }
  if (size < static_cast<uintmax_t>(offset) || size - offset < static_cast<uintmax_t>(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": its external data '", path.string(),
                                                   "' has fewer than ", bytes,
                                                   " bytes from offset ", offset));
  }
  Tensor tensor(dtype, std::move(shape));
  std::ifstream file(path, std::ios::binary);
  if (!file.seekg(offset) || !file.read(static_cast<char*>(tensor.data()), bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot read its external data '", path.string(), "'"));
  }
  NormalizeBools(tensor);
  return tensor;
}

}  // namespace

std::string OnnxTypeName(int32_t elem_type) {
  // The types ONNX added after 1.12, whose names libonnx-dev does not know.
  static constexpr const char* kNewer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",
      "FLOAT4E2M1",   "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  constexpr int32_t kFirstNewer = 17;
  if (elem_type >= kFirstNewer && elem_type < kFirstNewer + int32_t{std::size(kNewer)}) {
    return kNewer[elem_type - kFirstNewer];
  }
  if (!onnx::TensorProto::DataType_IsValid(elem_type)) {
    return absl::StrCat("type #", elem_type);
  }
  return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem_type));
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type, absl::string_view what) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DType::kF32;
    case onnx::TensorProto::DOUBLE:
      return DType::kF64;
    case onnx::TensorProto::INT32:
      return DType::kI32;
    case onnx::TensorProto::INT64:
      return DType::kI64;
    case onnx::TensorProto::BOOL:
      return DType::kBool;
    case onnx::TensorProto::INT8:
      return DType::kI8;
    case onnx::TensorProto::INT16:
      return DType::kI16;
    case onnx::TensorProto::UINT8:
      return DType::kU8;
    case onnx::TensorProto::UINT16:
      return DType::kU16;
    case onnx::TensorProto::UINT32:
      return DType::kU32;
    case onnx::TensorProto::UINT64:
      return DType::kU64;
    case onnx::TensorProto::FLOAT16:
      return DType::kF16;
    case onnx::TensorProto::BFLOAT16:
      return DType::kBF16;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": element type ", OnnxTypeName(elem_type),
                   " is not supported (loom computes with FLOAT, DOUBLE, FLOAT16, BFLOAT16, "
                   "INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 and BOOL)"));
}

absl::StatusOr<Tensor> TensorFromOnnx(const onnx::TensorProto& proto, absl::string_view what,
                                      const std::string& external_dir) {
  if (proto.has_segment()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": segmented tensor data is not supported"));
  }
  LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(proto.data_type(), what));
  LOOM_ASSIGN_OR_RETURN(Shape shape, DimsOf(proto, what));
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return ExternalTensor(proto, what, external_dir, dtype, std::move(shape));
  }
  // Sizes are checked before allocating: dims may claim far more than the
  // data holds.
  const int64_t elements = NumElements(shape);
  if (proto.has_raw_data()) {
    const int64_t bytes = NumBytes(dtype, shape);
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": raw_data has ", proto.raw_data().size(), " bytes, shape ",
                       ShapeToString(shape), " of ", DTypeName(dtype), " needs ", bytes));
    }
    Tensor tensor(dtype, std::move(shape));
    // raw_data is little-endian, like every machine loom runs on.
    std::memcpy(tensor.data(), proto.raw_data().data(), bytes);
    NormalizeBools(tensor);
    return tensor;
  }
  absl::string_view field;
  const int64_t count = TypedCount(proto, dtype, field);
  if (count != elements) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", count, " values in ", field,
                                                   " for shape ", ShapeToString(shape), " (",
                                                   elements, " elements)"));
  }
  Tensor tensor(dtype, std::move(shape));
  CopyTyped(proto, tensor);
  return tensor;
}

absl::StatusOr<onnx::TensorProto> ReadTensorProtoFile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a serialised ONNX TensorProto"));
  }
  return proto;
}

}  // namespace loom
