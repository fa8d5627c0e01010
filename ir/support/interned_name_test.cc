#include "ir/support/interned_name.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

// Equal names share one copy of their text, whatever they were made from.
TEST(InternedNameTest, EqualNamesShareTheirText) {
  const OpName add("add");
  EXPECT_EQ(add, "add");
  EXPECT_EQ(OpName(std::string("add")).data(), add.data());
  EXPECT_EQ(OpName(absl::string_view("addx", 3)).data(), add.data());
  EXPECT_NE(OpName("mul"), add);
  EXPECT_EQ(absl::StrCat("(", add, ")"), "(add)");
  EXPECT_EQ(OpName(), "");
  // Text that changed at an address seen before is looked up again.
  char buffer[] = "sub";
  const OpName sub(buffer);
  buffer[0] = 'n';
  EXPECT_EQ(OpName(buffer), "nub");
  EXPECT_EQ(sub, "sub");
}

TEST(OpLookupCacheTest, FindsEachOpOnce) {
  OpLookupCache<int> cache;
  int finds = 0;
  auto find = [&](OpName op) {
    ++finds;
    return static_cast<int>(op.size());
  };
  const std::string add = "add";
  EXPECT_EQ(cache.Get("add", find), 3);
  EXPECT_EQ(cache.Get(add, find), 3);
  EXPECT_EQ(cache.Get("matmul", find), 6);
  EXPECT_EQ(cache.Get(OpName("add"), find), 3);
  EXPECT_EQ(finds, 2);
}

}  // namespace
}  // namespace loom
