#include "ir/dtype.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
    case DType::kI8:
    case DType::kU8:
      return 1;
    case DType::kI16:
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kU32:
      return 4;
    case DType::kU64:
      return 8;
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
    case DType::kI8:
      return "i8";
    case DType::kI16:
      return "i16";
    case DType::kU8:
      return "u8";
    case DType::kU16:
      return "u16";
    case DType::kU32:
      return "u32";
    case DType::kU64:
      return "u64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
  }
  return "?";
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (DTypeName(dtype) == name) return dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name,
      "' (expected f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64 or bool)"));
}

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || IsHalfFloat(dtype);
}

bool IsHalfFloat(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

namespace {

// The fields of a 16-bit float type.
struct HalfFormat {
  int mantissa_bits;
  int exponent_bias;  // the largest finite exponent; the smallest normal is 1 - bias
};

HalfFormat FormatOf(DType dtype) {
  return dtype == DType::kF16 ? HalfFormat{10, 15} : HalfFormat{7, 127};
}

}  // namespace

uint16_t HalfFloatBits(double x, DType dtype) {
  const HalfFormat f = FormatOf(dtype);
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const uint16_t infinity = static_cast<uint16_t>((2 * f.exponent_bias + 1) << f.mantissa_bits);
  if (std::isnan(x)) return sign | infinity | (1 << (f.mantissa_bits - 1));
  const double magnitude = std::fabs(x);
  // The exponent of the magnitude's binade, at least the smallest normal's:
  // below it the spacing is that of the subnormals.
  int exponent = std::ilogb(magnitude);
  if (magnitude == 0 || exponent < 1 - f.exponent_bias) exponent = 1 - f.exponent_bias;
  if (exponent > f.exponent_bias) return sign | infinity;
  // The magnitude in units of the last place, rounded half to even (the
  // default rounding mode); a carry into the next binade, or past the
  // largest finite value into infinity, falls out of the encoding.
  const double units = std::nearbyint(std::ldexp(magnitude, f.mantissa_bits - exponent));
  const int64_t biased = exponent + f.exponent_bias - 1;  // 0 for subnormals
  const int64_t bits = (biased << f.mantissa_bits) + static_cast<int64_t>(units);
  return sign | static_cast<uint16_t>(std::min<int64_t>(bits, infinity));
}

double HalfFloatValue(uint16_t bits, DType dtype) {
  const HalfFormat f = FormatOf(dtype);
  const double sign = bits & 0x8000 ? -1.0 : 1.0;
  const int biased = (bits & 0x7fff) >> f.mantissa_bits;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  if (biased == 2 * f.exponent_bias + 1) {
    return mantissa != 0 ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                         : sign * std::numeric_limits<double>::infinity();
  }
  if (biased == 0) return sign * std::ldexp(mantissa, 1 - f.exponent_bias - f.mantissa_bits);
  return sign *
         std::ldexp(mantissa + (1 << f.mantissa_bits), biased - f.exponent_bias - f.mantissa_bits);
}

bool IsInteger(DType dtype) { return !IsFloat(dtype) && dtype != DType::kBool; }

bool IsUnsigned(DType dtype) {
  return dtype == DType::kU8 || dtype == DType::kU16 || dtype == DType::kU32 ||
         dtype == DType::kU64;
}

int64_t IntegerMinBits(DType dtype) {
  if (IsUnsigned(dtype)) return 0;
  return dtype == DType::kI64 ? std::numeric_limits<int64_t>::min()
                              : -(int64_t{1} << (8 * DTypeSize(dtype) - 1));
}

int64_t IntegerMaxBits(DType dtype) {
  if (dtype == DType::kI64) return std::numeric_limits<int64_t>::max();
  if (dtype == DType::kU64) return -1;  // all ones
  const int bits = 8 * static_cast<int>(DTypeSize(dtype));
  return IsUnsigned(dtype) ? (int64_t{1} << bits) - 1 : (int64_t{1} << (bits - 1)) - 1;
}

bool IntegerLess(int64_t a, int64_t b, DType dtype) {
  return IsUnsigned(dtype) ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

int64_t FloatToIntegerBits(double x, DType dtype) {
  if (std::isnan(x)) return 0;
  const double upper = IntegerSaturationBound(dtype, /*high=*/true);
  const double lower = IntegerSaturationBound(dtype, /*high=*/false);
  if (x >= upper) return IntegerMaxBits(dtype);
  if (x <= lower) return IntegerMinBits(dtype);
  if (IsUnsigned(dtype)) return static_cast<int64_t>(static_cast<uint64_t>(x));
  return static_cast<int64_t>(x);
}

double IntegerSaturationBound(DType dtype, bool high) {
  const int bits = 8 * static_cast<int>(DTypeSize(dtype));
  if (IsUnsigned(dtype)) return high ? std::ldexp(1.0, bits) : -1.0;
  const double half = std::ldexp(1.0, bits - 1);
  return high ? half : -half - 1.0;
}

int64_t IntegerClipBoundBits(double bound, bool is_lower, DType dtype) {
  const double rounded = is_lower ? std::ceil(bound) : std::floor(bound);
  if (std::isnan(rounded)) return IntegerMinBits(dtype);
  return FloatToIntegerBits(rounded, dtype);
}

double IntegerBitsToDouble(int64_t bits, DType dtype) {
  return dtype == DType::kU64 ? static_cast<double>(static_cast<uint64_t>(bits))
                              : static_cast<double>(bits);
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
    case proto::I8:
      return DType::kI8;
    case proto::I16:
      return DType::kI16;
    case proto::U8:
      return DType::kU8;
    case proto::U16:
      return DType::kU16;
    case proto::U32:
      return DType::kU32;
    case proto::U64:
      return DType::kU64;
    case proto::F16:
      return DType::kF16;
    case proto::BF16:
      return DType::kBF16;
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
    case DType::kI8:
      return proto::I8;
    case DType::kI16:
      return proto::I16;
    case DType::kU8:
      return proto::U8;
    case DType::kU16:
      return proto::U16;
    case DType::kU32:
      return proto::U32;
    case DType::kU64:
      return proto::U64;
    case DType::kF16:
      return proto::F16;
    case DType::kBF16:
      return proto::BF16;
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
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(shape), " has a negative dimension"));
    }
    if (d > 0 && elements.has_value()) elements = CheckedMul(*elements, d);
  }
  constexpr char kLimit[] =
      "loom allows at most 2^40 elements per tensor, counting dimensions of "
      "size 0 as 1";
  if (!elements.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(shape),
                     " is too large: its element count overflows int64 (", kLimit, ")"));
  }
  if (*elements > kMaxTensorElements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", ShapeToString(shape), " is too large: ", *elements, " elements (", kLimit, ")"));
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

absl::Status CheckFitsInMemory(double bytes, absl::string_view what) {
  const double memory =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (memory > 0 && bytes > memory) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s need %.4g GB, more than this machine's %.4g GB of memory", what,
                        bytes / 1e9, memory / 1e9));
  }
  return absl::OkStatus();
}

}  // namespace loom
