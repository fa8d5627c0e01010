#include "ir/dtype.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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
      return 1;  // the 4- and 2-bit types unpacked, one element a byte
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
    case DType::kF8E4M3FN:
      return "f8e4m3fn";
    case DType::kF8E4M3FNUZ:
      return "f8e4m3fnuz";
    case DType::kF8E5M2:
      return "f8e5m2";
    case DType::kF8E5M2FNUZ:
      return "f8e5m2fnuz";
    case DType::kF8E8M0:
      return "f8e8m0";
    case DType::kF4E2M1:
      return "f4e2m1";
    case DType::kI4:
      return "i4";
    case DType::kU4:
      return "u4";
    case DType::kI2:
      return "i2";
    case DType::kU2:
      return "u2";
  }
  return "?";
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (DTypeName(dtype) == name) return dtype;
  }
  std::vector<absl::string_view> names;
  for (DType dtype : kAllDTypes) names.push_back(DTypeName(dtype));
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "' (expected one of ",
                                                 absl::StrJoin(names, ", "), ")"));
}

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || IsNarrowFloat(dtype);
}

bool IsHalfFloat(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

bool IsNarrowFloat(DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF4E2M1:
      return true;
    default:
      return false;
  }
}

bool IsSubByteInteger(DType dtype) {
  return dtype == DType::kI4 || dtype == DType::kU4 || dtype == DType::kI2 || dtype == DType::kU2;
}

bool IsStorageType(DType dtype) { return IsNarrowFloat(dtype) || IsSubByteInteger(dtype); }

DType ComputeType(DType dtype) {
  if (IsNarrowFloat(dtype)) return DType::kF32;
  if (IsSubByteInteger(dtype)) return DType::kI32;
  return dtype;
}

namespace {

// What a narrow float format does with the codes past its largest finite
// value.
enum class Specials {
  kInfinityAndNaN,   // IEEE: an all-ones exponent is infinity or NaN (f16, bf16, f8e5m2)
  kNaNOnly,          // FN: all-ones exponent and mantissa is NaN, the rest finite
  kUnsignedZeroNaN,  // FNUZ: "-0" (the sign bit alone) is NaN, all else finite
  kNone,             // f4e2m1: every code is finite
};

// The fields of a narrow float with an exponent and a mantissa (every one
// but f8e8m0).
struct NarrowFormat {
  int width;  // bits
  int mantissa_bits;
  int exponent_bias;  // the smallest normal exponent is 1 - bias
  Specials specials;

  uint32_t sign_bit() const { return 1u << (width - 1); }
  uint32_t infinity() const { return (sign_bit() - 1) >> mantissa_bits << mantissa_bits; }
  // The magnitude of the largest finite value's code.
  uint32_t max_finite() const {
    switch (specials) {
      case Specials::kInfinityAndNaN:
        return infinity() - 1;
      case Specials::kNaNOnly:
        return sign_bit() - 2;
      default:
        return sign_bit() - 1;
    }
  }
  // The code of NaN with the sign `sign` (0 or sign_bit()).
  uint32_t nan(uint32_t sign) const {
    switch (specials) {
      case Specials::kInfinityAndNaN:
        return sign | infinity() | (1u << (mantissa_bits - 1));  // quiet
      case Specials::kNaNOnly:
        return sign | (sign_bit() - 1);
      case Specials::kUnsignedZeroNaN:
        return sign_bit();
      case Specials::kNone:
        return 0;
    }
    return 0;
  }
  // The code of a value of the sign `sign` past the largest finite one.
  uint32_t overflow(uint32_t sign) const {
    switch (specials) {
      case Specials::kInfinityAndNaN:
        return sign | infinity();
      case Specials::kNone:
        return sign | max_finite();
      default:
        return nan(sign);
    }
  }
};

NarrowFormat FormatOf(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return {16, 10, 15, Specials::kInfinityAndNaN};
    case DType::kBF16:
      return {16, 7, 127, Specials::kInfinityAndNaN};
    case DType::kF8E4M3FN:
      return {8, 3, 7, Specials::kNaNOnly};
    case DType::kF8E4M3FNUZ:
      return {8, 3, 8, Specials::kUnsignedZeroNaN};
    case DType::kF8E5M2:
      return {8, 2, 15, Specials::kInfinityAndNaN};
    case DType::kF8E5M2FNUZ:
      return {8, 2, 16, Specials::kUnsignedZeroNaN};
    default:  // kF4E2M1
      return {4, 1, 1, Specials::kNone};
  }
}

constexpr uint16_t kE8M0NaN = 0xff;

// ONNX's conversion to f8e8m0 by default (round_mode "up", saturate): the
// exponent field of `x` as f32, plus one when a mantissa bit is set, except
// at the largest exponent; infinity and NaN give NaN. An f32 subnormal
// (exponent field 0) rounds up to 2^-127 (code 0) or 2^-126, as ONNX's
// table says (ONNX's reference gives 2^-126 to every one but 0).
uint16_t E8M0Bits(double x) {
  uint32_t bits;
  const float f = static_cast<float>(x);
  std::memcpy(&bits, &f, sizeof(bits));
  const uint32_t exponent = (bits >> 23) & 0xff;
  const uint32_t fraction = bits & 0x7fffff;
  if (exponent == 0xff) return kE8M0NaN;
  if (exponent == 0) return fraction > 0x400000 ? 1 : 0;  // above 2^-127 or not
  return static_cast<uint16_t>(exponent + (fraction != 0 && exponent < 0xfe ? 1 : 0));
}

}  // namespace

uint16_t NarrowFloatBits(double x, DType dtype) {
  if (dtype == DType::kF8E8M0) return E8M0Bits(x);
  const NarrowFormat f = FormatOf(dtype);
  const uint32_t sign = std::signbit(x) ? f.sign_bit() : 0;
  if (std::isnan(x)) return static_cast<uint16_t>(f.nan(sign));
  const double magnitude = std::fabs(x);
  // The exponent of the magnitude's binade, at least the smallest normal's:
  // below it the spacing is that of the subnormals.
  int exponent = std::ilogb(magnitude);
  if (magnitude == 0 || exponent < 1 - f.exponent_bias) exponent = 1 - f.exponent_bias;
  if (exponent > f.exponent_bias + 1) return static_cast<uint16_t>(f.overflow(sign));
  // The magnitude in units of the last place, rounded half to even (the
  // default rounding mode); a carry into the next binade falls out of the
  // encoding, and so does one past the largest finite value.
  const double units = std::nearbyint(std::ldexp(magnitude, f.mantissa_bits - exponent));
  const int64_t biased = exponent + f.exponent_bias - 1;  // 0 for subnormals
  const int64_t code = (biased << f.mantissa_bits) + static_cast<int64_t>(units);
  if (code > f.max_finite()) return static_cast<uint16_t>(f.overflow(sign));
  if (code == 0 && f.specials == Specials::kUnsignedZeroNaN) return 0;  // no -0
  return static_cast<uint16_t>(sign | code);
}

double NarrowFloatValue(uint16_t bits, DType dtype) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (dtype == DType::kF8E8M0) return bits == kE8M0NaN ? kNaN : std::ldexp(1.0, bits - 127);
  const NarrowFormat f = FormatOf(dtype);
  const double sign = bits & f.sign_bit() ? -1.0 : 1.0;
  const uint32_t magnitude = bits & (f.sign_bit() - 1);
  if (f.specials == Specials::kUnsignedZeroNaN && bits == f.sign_bit()) return kNaN;
  if (f.specials != Specials::kNone && magnitude > f.max_finite()) {
    return magnitude == f.infinity() && f.specials == Specials::kInfinityAndNaN
               ? sign * std::numeric_limits<double>::infinity()
               : std::copysign(kNaN, sign);
  }
  const int biased = static_cast<int>(magnitude >> f.mantissa_bits);
  const int mantissa = static_cast<int>(magnitude & ((1u << f.mantissa_bits) - 1));
  if (biased == 0) return sign * std::ldexp(mantissa, 1 - f.exponent_bias - f.mantissa_bits);
  return sign *
         std::ldexp(mantissa + (1 << f.mantissa_bits), biased - f.exponent_bias - f.mantissa_bits);
}

double NarrowFloatMax(DType dtype) {
  if (dtype == DType::kF8E8M0) return std::ldexp(1.0, 127);
  return NarrowFloatValue(static_cast<uint16_t>(FormatOf(dtype).max_finite()), dtype);
}

bool IsInteger(DType dtype) { return !IsFloat(dtype) && dtype != DType::kBool; }

bool IsUnsigned(DType dtype) {
  return dtype == DType::kU8 || dtype == DType::kU16 || dtype == DType::kU32 ||
         dtype == DType::kU64 || dtype == DType::kU4 || dtype == DType::kU2;
}

int IntegerWidth(DType dtype) {
  if (dtype == DType::kI4 || dtype == DType::kU4) return 4;
  if (dtype == DType::kI2 || dtype == DType::kU2) return 2;
  return 8 * static_cast<int>(DTypeSize(dtype));
}

int ValueBits(DType dtype) { return dtype == DType::kF4E2M1 ? 4 : IntegerWidth(dtype); }

int64_t IntegerMinBits(DType dtype) {
  if (IsUnsigned(dtype)) return 0;
  return dtype == DType::kI64 ? std::numeric_limits<int64_t>::min()
                              : -(int64_t{1} << (IntegerWidth(dtype) - 1));
}

int64_t IntegerMaxBits(DType dtype) {
  if (dtype == DType::kI64) return std::numeric_limits<int64_t>::max();
  if (dtype == DType::kU64) return -1;  // all ones
  const int bits = IntegerWidth(dtype);
  return IsUnsigned(dtype) ? (int64_t{1} << bits) - 1 : (int64_t{1} << (bits - 1)) - 1;
}

bool IntegerLess(int64_t a, int64_t b, DType dtype) {
  return IsUnsigned(dtype) ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

int64_t FloatToIntegerBits(double x, DType dtype) {
  if (std::isnan(x)) return 0;
  if (IsSubByteInteger(dtype)) {
    const double truncated = std::trunc(x);
    const bool in_range = truncated >= IntegerMinBits(dtype) && truncated <= IntegerMaxBits(dtype);
    return in_range ? static_cast<int64_t>(truncated) : 0;
  }
  const double upper = IntegerSaturationBound(dtype, /*high=*/true);
  const double lower = IntegerSaturationBound(dtype, /*high=*/false);
  if (x >= upper) return IntegerMaxBits(dtype);
  if (x <= lower) return IntegerMinBits(dtype);
  if (IsUnsigned(dtype)) return static_cast<int64_t>(static_cast<uint64_t>(x));
  return static_cast<int64_t>(x);
}

double IntegerSaturationBound(DType dtype, bool high) {
  const int bits = IntegerWidth(dtype);
  if (IsUnsigned(dtype)) return high ? std::ldexp(1.0, bits) : -1.0;
  const double half = std::ldexp(1.0, bits - 1);
  return high ? half : -half - 1.0;
}

int64_t IntegerClipBoundBits(double bound, bool is_lower, DType dtype) {
  const double rounded = is_lower ? std::ceil(bound) : std::floor(bound);
  if (std::isnan(rounded)) return IntegerMinBits(dtype);
  if (IsSubByteInteger(dtype)) {  // which FloatToIntegerBits does not saturate
    return static_cast<int64_t>(
        std::clamp<double>(rounded, IntegerMinBits(dtype), IntegerMaxBits(dtype)));
  }
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
    case proto::F8E4M3FN:
      return DType::kF8E4M3FN;
    case proto::F8E4M3FNUZ:
      return DType::kF8E4M3FNUZ;
    case proto::F8E5M2:
      return DType::kF8E5M2;
    case proto::F8E5M2FNUZ:
      return DType::kF8E5M2FNUZ;
    case proto::F8E8M0:
      return DType::kF8E8M0;
    case proto::F4E2M1:
      return DType::kF4E2M1;
    case proto::I4:
      return DType::kI4;
    case proto::U4:
      return DType::kU4;
    case proto::I2:
      return DType::kI2;
    case proto::U2:
      return DType::kU2;
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
    case DType::kF8E4M3FN:
      return proto::F8E4M3FN;
    case DType::kF8E4M3FNUZ:
      return proto::F8E4M3FNUZ;
    case DType::kF8E5M2:
      return proto::F8E5M2;
    case DType::kF8E5M2FNUZ:
      return proto::F8E5M2FNUZ;
    case DType::kF8E8M0:
      return proto::F8E8M0;
    case DType::kF4E2M1:
      return proto::F4E2M1;
    case DType::kI4:
      return proto::I4;
    case DType::kU4:
      return proto::U4;
    case DType::kI2:
      return proto::I2;
    case DType::kU2:
      return proto::U2;
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
