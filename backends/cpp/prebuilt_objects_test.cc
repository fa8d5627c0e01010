#include "backends/cpp/prebuilt_objects.h"

#include <string>
#include <vector>

#include "backends/cpp/dnnl_conv_text.h"
#include "gtest/gtest.h"

namespace loom::cpp {
namespace {

constexpr char kV3Flags[] = "flags\t\t: fpu sse2 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave";
constexpr char kV4Flags[] =
    "flags\t\t: fpu sse2 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave avx512f avx512bw avx512cd "
    "avx512dq avx512vl";

const PrebuiltObject* ObjectOfLevel(std::string_view level) {
  for (const PrebuiltObject& object : PrebuiltObjects()) {
    if (object.level == level) return &object;
  }
  return nullptr;
}

TEST(PrebuiltObjectsTest, X86HostsHaveTheConvolutionForEachLevel) {
#if defined(__x86_64__)
  for (std::string_view level : {"x86-64-v3", "x86-64-v4"}) {
    const PrebuiltObject* object = ObjectOfLevel(level);
    ASSERT_NE(object, nullptr) << level;
    EXPECT_EQ(object->source, kDnnlConvSupport);
    EXPECT_EQ(object->bytes.substr(0, 4),
              "\x7f"
              "ELF")
        << level;
  }
#else
  EXPECT_TRUE(PrebuiltObjects().empty());
#endif
}

TEST(PrebuiltObjectsTest, TheHighestLevelTheMachineHasIsChosen) {
  if (PrebuiltObjects().empty()) GTEST_SKIP() << "no prebuilt objects off x86-64";
  const std::vector<std::string> command = PrebuiltObjects()[0].Command();
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, command, kV3Flags),
            ObjectOfLevel("x86-64-v3")->bytes);
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, command, kV4Flags),
            ObjectOfLevel("x86-64-v4")->bytes);
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, command, "flags\t\t: fpu sse2 avx avx2 fma"),
            std::nullopt);
}

TEST(PrebuiltObjectsTest, DefinesDoNotMatterButEveryOtherArgumentDoes) {
  if (PrebuiltObjects().empty()) GTEST_SKIP() << "no prebuilt objects off x86-64";
  const std::vector<std::string> command = PrebuiltObjects()[0].Command();
  std::vector<std::string> with_define = command;
  with_define.insert(with_define.end() - 1, "-DLOOM_HAVE_BLIS");
  EXPECT_NE(PrebuiltObjectFor(kDnnlConvSupport, with_define, kV3Flags), std::nullopt);

  std::vector<std::string> other_level = command;
  for (std::string& arg : other_level) {
    if (arg == "-march=native") arg = "-march=haswell";
  }
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, other_level, kV3Flags), std::nullopt);
  std::vector<std::string> extra = command;
  extra.push_back("-O2");
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, extra, kV3Flags), std::nullopt);
  std::vector<std::string> clang = command;
  clang[0] = "clang++";
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, clang, kV3Flags), std::nullopt);
  EXPECT_EQ(PrebuiltObjectFor("int x;", command, kV3Flags), std::nullopt);
  EXPECT_EQ(PrebuiltObjectFor(kDnnlConvSupport, {}, kV3Flags), std::nullopt);
}

}  // namespace
}  // namespace loom::cpp
