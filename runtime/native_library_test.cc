#include "runtime/native_library.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/file_io.h"
#include "runtime/native_library_test_util.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

constexpr char kAddLibrary[] = "runtime/libnative_library_test_add.so";  // in the runfiles

TEST(NativeLibraryTest, OpensAFileAndFindsItsSymbols) {
  absl::StatusOr<NativeLibrary> library = NativeLibrary::Open(kAddLibrary);
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ(library->path(), kAddLibrary);
  EXPECT_EQ(CallAdd(*library), 5);
}

TEST(NativeLibraryTest, AMissingFileIsAnErrorNamingIt) {
  absl::StatusOr<NativeLibrary> library = NativeLibrary::Open("/no/such/library.so");
  EXPECT_EQ(library.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(library.status().message(), HasSubstr("/no/such/library.so"));
}

TEST(NativeLibraryTest, MissingSymbolIsNotFoundNamingSymbolAndLibrary) {
  absl::StatusOr<NativeLibrary> library = NativeLibrary::Open(kAddLibrary);
  ASSERT_TRUE(library.ok()) << library.status();
  absl::StatusOr<void*> missing = library->Symbol("subtract");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("'subtract'"));
  EXPECT_THAT(missing.status().message(), HasSubstr(kAddLibrary));

  NativeLibrary moved = *std::move(library);
  EXPECT_EQ(CallAdd(moved), 5);
  EXPECT_EQ(library->Symbol("add").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LoadSharedObjectTest, LoadsFromMemoryUnderItsName) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(kAddLibrary);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<NativeLibrary> library =
      LoadSharedObject(*bytes, /*openmp=*/true, /*libraries=*/{}, "model 'add'");
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ(library->path(), "model 'add'");
  EXPECT_EQ(CallAdd(*library), 5);
}

// Libraries loaded from memory one after another, all alive, are each
// their own (dlopen would give the first again for a path it named).
TEST(LoadSharedObjectTest, LibrariesLoadedOneAfterAnotherAreTheirOwn) {
  absl::StatusOr<std::string> add = ReadFileBytes(kAddLibrary);
  absl::StatusOr<std::string> sgemm = ReadFileBytes("runtime/libnative_library_test_sgemm.so");
  ASSERT_TRUE(add.ok() && sgemm.ok());
  std::vector<NativeLibrary> libraries;
  for (int i = 0; i < 3; ++i) {
    for (const std::string* bytes : {&*add, &*sgemm}) {
      absl::StatusOr<NativeLibrary> library = LoadSharedObject(*bytes, false, {}, "model");
      ASSERT_TRUE(library.ok()) << library.status();
      libraries.push_back(*std::move(library));
    }
  }
  for (size_t i = 0; i < libraries.size(); ++i) {
    EXPECT_EQ(libraries[i].Symbol("add").ok(), i % 2 == 0) << i;
    EXPECT_EQ(libraries[i].Symbol("sgemm_products").ok(), i % 2 == 1) << i;
  }
}

TEST(LoadSharedObjectTest, BytesThatAreNoSharedObjectAreAnErrorNamingThem) {
  absl::StatusOr<NativeLibrary> library =
      LoadSharedObject("not an ELF file", /*openmp=*/false, /*libraries=*/{}, "model 'bad'");
  EXPECT_EQ(library.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(library.status().message(), HasSubstr("the kernels of model 'bad' cannot be loaded"));
}

TEST(WarmUpOneDnnTest, RunsOneProductThroughTheLibrary) {
  constexpr char kSgemmLibrary[] = "runtime/libnative_library_test_sgemm.so";
  WarmUpOneDnn(kSgemmLibrary);
  absl::StatusOr<NativeLibrary> library = NativeLibrary::Open(kSgemmLibrary);
  ASSERT_TRUE(library.ok()) << library.status();
  auto count = [&](const char* name) -> int64_t {
    absl::StatusOr<void*> symbol = library->Symbol(name);
    EXPECT_TRUE(symbol.ok()) << symbol.status();
    return symbol.ok() ? reinterpret_cast<int64_t (*)()>(*symbol)() : -1;
  };
  EXPECT_EQ(count("sgemm_products"), 1);
  EXPECT_EQ(count("sgemm_last_size"), 64 * 64 * 64);
  absl::StatusOr<void*> corner = library->Symbol("sgemm_last_corner");
  ASSERT_TRUE(corner.ok()) << corner.status();
  EXPECT_EQ(reinterpret_cast<float (*)()>(*corner)(), 64.0f);  // a row of ones times a column
}

TEST(WarmUpOneDnnTest, DoesNothingWithoutTheLibraryOrItsProduct) {
  WarmUpOneDnn("/no/such/libdnnl.so.2");
  WarmUpOneDnn(kAddLibrary);  // loads, but has no dnnl_sgemm
  absl::StatusOr<NativeLibrary> library = NativeLibrary::Open(kAddLibrary);
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ(CallAdd(*library), 5);
}

TEST(HostCpuFeaturesTest, IsTheCpuinfoLineOfTheExtensions) {
  const std::string& features = HostCpuFeatures();
  EXPECT_TRUE(absl::StartsWith(features, "flags") || absl::StartsWith(features, "Features"))
      << features;
}

}  // namespace
}  // namespace loom
