#include "ir/npy.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ir/file_io.h"
#include "ir/status_macros.h"
#include "re2/re2.h"

namespace loom {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";
// NumPy's `descr` of each type loom reads, little-endian ('|': one byte).
struct NpyType {
  absl::string_view descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"|b1", DType::kBool}, {"|i1", DType::kI8},  {"|u1", DType::kU8},  {"<i2", DType::kI16},
    {"<u2", DType::kU16},  {"<i4", DType::kI32}, {"<u4", DType::kU32}, {"<i8", DType::kI64},
    {"<u8", DType::kU64},  {"<f2", DType::kF16}, {"<f4", DType::kF32}, {"<f8", DType::kF64},
};

absl::Status Malformed(absl::string_view what, absl::string_view cause) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": not a readable .npy file (", cause, ")"));
}

// The header's length, and where it starts, from the file's first bytes.
absl::StatusOr<std::pair<size_t, size_t>> HeaderSpan(absl::string_view bytes,
                                                     absl::string_view what) {
  if (bytes.size() < 10 || !absl::StartsWith(bytes, kMagic)) {
    return Malformed(what, "it does not start with \\x93NUMPY");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) {
    return Malformed(what, absl::StrCat("format version ", major, "; loom reads 1 to 3"));
  }
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_bytes) return Malformed(what, "truncated header");
  size_t length = 0;
  for (size_t i = 0; i < length_bytes; ++i) {
    length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  return std::make_pair(8 + length_bytes, length);
}

absl::StatusOr<Shape> ParseShape(absl::string_view text, absl::string_view what) {
  Shape shape;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int64_t size;
    if (!absl::SimpleAtoi(part, &size) || size < 0) {
      return Malformed(what, absl::StrCat("shape entry '", part, "'"));
    }
    shape.push_back(size);
  }
  return shape;
}

}  // namespace

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, absl::string_view what) {
  LOOM_ASSIGN_OR_RETURN(auto span, HeaderSpan(bytes, what));
  const auto [start, length] = span;
  if (bytes.size() < start + length) return Malformed(what, "truncated header");
  const re2::StringPiece header(bytes.data() + start, length);
  static const LazyRE2 kDescr = {R"('descr'\s*:\s*'([^']*)')"};
  static const LazyRE2 kFortran = {R"('fortran_order'\s*:\s*(True|False))"};
  static const LazyRE2 kShape = {R"('shape'\s*:\s*\(([^)]*)\))"};
  std::string descr, fortran, shape_text;
  if (!RE2::PartialMatch(header, *kDescr, &descr) ||
      !RE2::PartialMatch(header, *kFortran, &fortran) ||
      !RE2::PartialMatch(header, *kShape, &shape_text)) {
    return Malformed(what, "its header lacks 'descr', 'fortran_order' or 'shape'");
  }
  if (fortran == "True") {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": a Fortran-ordered array; loom reads C order (numpy.ascontiguousarray)"));
  }
  NpyHeader result;
  result.data_offset = start + length;
  LOOM_ASSIGN_OR_RETURN(result.type.shape, ParseShape(shape_text, what));
  for (const NpyType& type : kNpyTypes) {
    if (descr == type.descr) {
      result.type.dtype = type.dtype;
      return result;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": elements of type '", descr,
      "', which loom does not read (little-endian bool, integers, float16, float32, float64)"));
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(const std::string bytes, ReadFileBytes(path));
  LOOM_ASSIGN_OR_RETURN(const NpyHeader header, ParseNpyHeader(bytes, path));
  Tensor tensor(header.type);
  const size_t data_bytes = bytes.size() - header.data_offset;
  if (static_cast<int64_t>(data_bytes) != tensor.num_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", data_bytes, " bytes of data, but its header's ",
                     TypeToString(header.type), " needs ", tensor.num_bytes()));
  }
  std::memcpy(tensor.data(), bytes.data() + header.data_offset, data_bytes);
  return tensor;
}

absl::StatusOr<TensorType> ReadNpyType(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(const std::string bytes, ReadFileBytes(path));
  LOOM_ASSIGN_OR_RETURN(const NpyHeader header, ParseNpyHeader(bytes, path));
  return header.type;
}

absl::StatusOr<std::string> NpyBytes(const Tensor& tensor) {
  absl::string_view descr;
  for (const NpyType& type : kNpyTypes) {
    if (type.dtype == tensor.dtype()) descr = type.descr;
  }
  if (descr.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("an .npy file cannot hold ", DTypeName(tensor.dtype()), " elements"));
  }
  std::string shape;
  for (int64_t size : tensor.type().shape) absl::StrAppend(&shape, size, ", ");
  if (tensor.type().shape.size() > 1) shape.resize(shape.size() - 1);  // (2,) but (2, 3)
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                                    absl::StripSuffix(shape, " "), "), }");
  // Padded with spaces and a newline so that the data starts at a multiple
  // of 64 bytes, as NumPy writes it.
  const size_t unpadded = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string bytes(kMagic);
  bytes.push_back('\x01');
  bytes.push_back('\x00');
  bytes.push_back(static_cast<char>(header.size() & 0xff));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  bytes.append(static_cast<const char*>(tensor.data()), tensor.num_bytes());
  return bytes;
}

}  // namespace loom
