#include "backends/cpp/executable.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::cpp {
namespace {

using ::testing::HasSubstr;

TEST(CppExecutableTest, RefusesBuffersBeyondTheLimitsBeforeCompiling) {
  // As a caller that skipped lowering's checks might hand it over: the
  // buffer's byte count would overflow int64.
  Module module;
  module.loops.emplace();
  Buffer buffer;
  buffer.name = "y";
  buffer.sizes = {int64_t{1} << 40, int64_t{1} << 40};
  buffer.kind = BufferKind::kOutput;
  module.loops->buffers.push_back(buffer);
  module.source.emplace();
  module.source->language = "c++";
  module.source->text = "#error the native compiler must not run\n";
  const absl::StatusOr<CppExecutable> executable =
      CppExecutable::Create(module, std::string(std::getenv("TEST_TMPDIR")) + "/cache");
  EXPECT_EQ(executable.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(executable.status().message()),
              HasSubstr("buffer 'y': shape [1099511627776,1099511627776] is too large: its "
                        "element count overflows int64"));
}

}  // namespace
}  // namespace loom::cpp
