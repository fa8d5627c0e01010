#include "frontends/onnx/onnx_tensor.h"

#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/file_io.h"
#include "ir/parallel.h"
#include "ir/shared_weights.h"
#include "ir/status_macros.h"

namespace loom {
namespace {

// The element types ONNX added after 1.12 (libonnx-dev's enum lacks them).
enum NewerOnnxType : int32_t {
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

// ONNX packs the 4- and 2-bit types, two or four to a byte, the first
// element in the low bits (in raw_data, external data and int32_data, one
// byte per int32); loom holds one a byte. 1 for every other type.
int ElementsPerByte(DType dtype) {
  if (dtype == DType::kF4E2M1 || dtype == DType::kI4 || dtype == DType::kU4) return 2;
  if (dtype == DType::kI2 || dtype == DType::kU2) return 4;
  return 1;
}

// The bytes of ONNX's data for `elements` of `dtype`.
int64_t OnnxDataBytes(DType dtype, int64_t elements) {
  const int per_byte = ElementsPerByte(dtype);
  if (per_byte == 1) return SaturatingMul(elements, DTypeSize(dtype));
  return elements / per_byte + (elements % per_byte != 0 ? 1 : 0);
}

// Unpacks ONNX's packed data into `tensor` (of a 4- or 2-bit type): a
// sub-byte integer sign- or zero-extended, a float4's bits as they are.
void Unpack(const uint8_t* packed, Tensor& tensor) {
  const int per_byte = ElementsPerByte(tensor.dtype());
  const int bits = 8 / per_byte;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    const int code = (packed[i / per_byte] >> (bits * (i % per_byte))) & ((1 << bits) - 1);
    if (IsNarrowFloat(tensor.dtype())) {
      tensor.data_as<uint8_t>()[i] = static_cast<uint8_t>(code);
    } else {
      tensor.SetInt(i, code);  // wraps: the code's bits, sign-extended for i4 and i2
    }
  }
}

// Every element of `tensor` from ONNX's little-endian bytes of its type.
void CopyBytes(const char* bytes, Tensor& tensor) {
  if (ElementsPerByte(tensor.dtype()) > 1) {
    Unpack(reinterpret_cast<const uint8_t*>(bytes), tensor);
  } else {
    // Every machine loom runs on is little-endian.
    CopyInParts(tensor.data(), bytes, tensor.num_bytes());
  }
}

absl::StatusOr<Shape> DimsOf(const onnx::TensorProto& proto, absl::string_view what) {
  Shape shape(proto.dims().begin(), proto.dims().end());
  if (absl::Status s = CheckShapeLimits(shape); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  }
  return shape;
}

// The typed field that holds a `dtype` tensor's values when raw_data is
// not used (bools, the integers narrower than 32 bits and the bits of the
// narrow floats are stored as int32_data, the 4- and 2-bit types packed,
// u32 and u64 as uint64_data), and its name.
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
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF4E2M1:
    case DType::kI4:
    case DType::kU4:
    case DType::kI2:
    case DType::kU2:
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
  if (ElementsPerByte(tensor.dtype()) > 1) {
    const std::vector<uint8_t> packed(proto.int32_data().begin(), proto.int32_data().end());
    Unpack(packed.data(), tensor);
    return;
  }
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
      default:  // the 8-bit floats' bits
        tensor.data_as<uint8_t>()[i] = static_cast<uint8_t>(proto.int32_data(i));
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

// Where a tensor's data is in an external file (TensorProto.external_data:
// location, offset, length), its length checked against what the dims need.
struct ExternalRegion {
  std::string path;
  int64_t offset = 0;
  int64_t bytes = 0;
};

absl::StatusOr<ExternalRegion> ExternalRegionOf(const onnx::TensorProto& proto,
                                                absl::string_view what, const std::string& dir,
                                                DType dtype, const Shape& shape) {
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
  const int64_t bytes = OnnxDataBytes(dtype, NumElements(shape));
  if (length >= 0 && length != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data of ", length,
                                                   " bytes, shape ", ShapeToString(shape), " of ",
                                                   DTypeName(dtype), " needs ", bytes));
  }
  return ExternalRegion{path.string(), offset, bytes};
}

// The tensor in `region`, read once the file is known to hold it.
absl::StatusOr<Tensor> ReadExternal(const ExternalRegion& region, absl::string_view what,
                                    DType dtype, Shape shape) {
  // Mapped, not read into a buffer first: a 435 MB model's weights are
  // copied once, from the page cache into their tensors.
  absl::StatusOr<MappedFile> file = MappedFile::Map(region.path);
  if (!file.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot read its external data: ", file.status().message()));
  }
  const absl::string_view data = file->bytes();
  if (data.size() < static_cast<size_t>(region.offset) ||
      data.size() - region.offset < static_cast<size_t>(region.bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": its external data '", region.path,
                                                   "' has fewer than ", region.bytes,
                                                   " bytes from offset ", region.offset));
  }
  Tensor tensor = Tensor::Uninitialized({dtype, std::move(shape)});
  CopyBytes(data.data() + region.offset, tensor);
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
    case kFloat8E4M3FN:
      return DType::kF8E4M3FN;
    case kFloat8E4M3FNUZ:
      return DType::kF8E4M3FNUZ;
    case kFloat8E5M2:
      return DType::kF8E5M2;
    case kFloat8E5M2FNUZ:
      return DType::kF8E5M2FNUZ;
    case kFloat8E8M0:
      return DType::kF8E8M0;
    case kFloat4E2M1:
      return DType::kF4E2M1;
    case kInt4:
      return DType::kI4;
    case kUInt4:
      return DType::kU4;
    case kInt2:
      return DType::kI2;
    case kUInt2:
      return DType::kU2;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": element type ", OnnxTypeName(elem_type),
      " is not supported (loom computes with FLOAT, DOUBLE, FLOAT16, BFLOAT16, the FLOAT8 types, "
      "FLOAT4E2M1, INT2, INT4, INT8, INT16, INT32, INT64, UINT2, UINT4, UINT8, UINT16, UINT32, "
      "UINT64 and BOOL)"));
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
    LOOM_ASSIGN_OR_RETURN(ExternalRegion region,
                          ExternalRegionOf(proto, what, external_dir, dtype, shape));
    return ReadExternal(region, what, dtype, std::move(shape));
  }
  // Sizes are checked before allocating: dims may claim far more than the
  // data holds.
  const int64_t elements = NumElements(shape);
  if (proto.has_raw_data()) {
    const int64_t bytes = OnnxDataBytes(dtype, elements);
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": raw_data has ", proto.raw_data().size(), " bytes, shape ",
                       ShapeToString(shape), " of ", DTypeName(dtype), " needs ", bytes));
    }
    Tensor tensor = Tensor::Uninitialized({dtype, std::move(shape)});
    CopyBytes(proto.raw_data().data(), tensor);
    NormalizeBools(tensor);
    return tensor;
  }
  absl::string_view field;
  const int64_t count = TypedCount(proto, dtype, field);
  // The 4- and 2-bit types' int32_data holds their packed bytes.
  const int64_t expected = ElementsPerByte(dtype) > 1 ? OnnxDataBytes(dtype, elements) : elements;
  if (count != expected) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", count, " values in ", field,
                                                   " for shape ", ShapeToString(shape), " (",
                                                   elements, " elements, ", expected, " values)"));
  }
  Tensor tensor(dtype, std::move(shape));
  CopyTyped(proto, tensor);
  return tensor;
}

absl::StatusOr<std::shared_ptr<const LazyTensor>> SharedTensorFromOnnx(
    const onnx::TensorProto& proto, absl::string_view what, const std::string& external_dir) {
  if (proto.data_location() != onnx::TensorProto::EXTERNAL || proto.has_segment()) {
    LOOM_ASSIGN_OR_RETURN(Tensor tensor, TensorFromOnnx(proto, what, external_dir));
    return std::make_shared<const LazyTensor>(std::move(tensor));
  }
  LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(proto.data_type(), what));
  LOOM_ASSIGN_OR_RETURN(Shape shape, DimsOf(proto, what));
  LOOM_ASSIGN_OR_RETURN(ExternalRegion region,
                        ExternalRegionOf(proto, what, external_dir, dtype, shape));
  return SharedFileTensor(region.path, region.offset, {dtype, shape},
                          [&] { return ReadExternal(region, what, dtype, shape); });
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
