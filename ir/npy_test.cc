#include "ir/npy.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/file_io.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// What numpy.save(f, numpy.arange(6, dtype='<f4').reshape(2, 3)) writes.
std::string NumpyWritten() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size()));
  bytes.push_back('\0');
  bytes += header;
  for (int i = 0; i < 6; ++i) {
    const float value = i;
    bytes.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  return bytes;
}

TEST(NpyTest, ReadsWhatNumpyWrites) {
  const std::string path = TempPath("a.npy");
  ASSERT_TRUE(WriteFileBytes(path, NumpyWritten()).ok());
  absl::StatusOr<Tensor> tensor = ReadNpy(path);
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_EQ(tensor->dtype(), DType::kF32);
  EXPECT_EQ(tensor->type().shape, (Shape{2, 3}));
  EXPECT_EQ(tensor->data_as<float>()[5], 5.0f);
  absl::StatusOr<TensorType> type = ReadNpyType(path);
  ASSERT_TRUE(type.ok()) << type.status();
  EXPECT_EQ(type->shape, (Shape{2, 3}));
}

TEST(NpyTest, WritesWhatItReads) {
  for (const Shape& shape : {Shape{}, Shape{4}, Shape{2, 0, 3}}) {
    Tensor tensor(DType::kI64, shape);
    for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data_as<int64_t>()[i] = 7 * i - 3;
    absl::StatusOr<std::string> bytes = NpyBytes(tensor);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    // NumPy's layout: the data starts at a multiple of 64 bytes.
    absl::StatusOr<NpyHeader> header = ParseNpyHeader(*bytes, "x.npy");
    ASSERT_TRUE(header.ok()) << header.status();
    EXPECT_EQ(header->data_offset % 64, 0u);
    const std::string path = TempPath("b.npy");
    ASSERT_TRUE(WriteFileBytes(path, *bytes).ok());
    absl::StatusOr<Tensor> read = ReadNpy(path);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->type(), tensor.type());
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      EXPECT_EQ(read->data_as<int64_t>()[i], tensor.data_as<int64_t>()[i]);
    }
  }
  EXPECT_THAT(NpyBytes(Tensor(DType::kBF16, {1})).status().message(),
              HasSubstr("an .npy file cannot hold bf16 elements"));
}

TEST(NpyTest, RefusesWhatItCannotReadNamingTheFileAndTheCause) {
  const std::string good = NumpyWritten();
  auto error = [](const std::string& bytes) {
    const std::string path = TempPath("bad.npy");
    EXPECT_TRUE(WriteFileBytes(path, bytes).ok());
    absl::StatusOr<Tensor> tensor = ReadNpy(path);
    EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(tensor.status().message());
  };
  EXPECT_THAT(error("x,y\n1,2\n"), HasSubstr("bad.npy: not a readable .npy file (it does not"));
  EXPECT_THAT(error(good.substr(0, 40)), HasSubstr("truncated header"));
  EXPECT_THAT(error(good.substr(0, good.size() - 4)),
              HasSubstr("20 bytes of data, but its header's f32[2,3] needs 24"));
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  EXPECT_THAT(error(big_endian), HasSubstr("elements of type '>f4', which loom does not read"));
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THAT(error(fortran), HasSubstr("a Fortran-ordered array"));
  std::string version = good;
  version[6] = 9;
  EXPECT_THAT(error(version), HasSubstr("format version 9"));
  EXPECT_THAT(ReadNpy(TempPath("missing.npy")).status().message(), HasSubstr("missing.npy"));
}

}  // namespace
}  // namespace loom
