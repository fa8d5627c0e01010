#include "ir/support/attrs.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace loom {
namespace {

TEST(AttrsTest, TypedReadsWithDefaults) {
  Attrs attrs;
  attrs.Set("axis", int64_t{-1});
  attrs.Set("axes", std::vector<int64_t>{0, 2});
  attrs.Set("to", std::string("f64"));
  attrs.Set("axis", int64_t{1});  // overwrites, keeps its position
  EXPECT_EQ(attrs.GetInt("axis", 0), 1);
  EXPECT_EQ(attrs.GetInts("axes"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(attrs.GetString("to", ""), "f64");
  EXPECT_EQ(attrs.GetFloat("axis", 0), 1.0);  // an int reads as a float
  EXPECT_EQ(attrs.GetInt("missing", 7), 7);
  EXPECT_EQ(attrs.GetInt("to", 7), 7);  // wrong type reads as the default
  ASSERT_EQ(attrs.entries().size(), 3);
  EXPECT_EQ(attrs.entries()[0].first, "axis");
}

TEST(AttrsTest, CopiesAndMovesTheirEntries) {
  Attrs attrs;
  attrs.Reserve(1);
  attrs.Set("axis", int64_t{2});
  attrs.Set("axes", std::vector<int64_t>{0, 1});  // grows past the room
  const Attrs copy = attrs;
  Attrs moved = std::move(attrs);
  Attrs assigned;
  assigned = copy;
  for (const Attrs* a : std::vector<const Attrs*>{&copy, &moved, &assigned}) {
    ASSERT_EQ(a->entries().size(), 2);
    EXPECT_EQ(a->GetInt("axis", 0), 2);
    EXPECT_EQ(*a->FindInts("axes"), (std::vector<int64_t>{0, 1}));
  }
  EXPECT_TRUE(Attrs().entries().empty());
}

// Attribute names are interned: equal names share one copy of their text,
// whatever string they were set from, and op names share it too.
TEST(AttrsTest, NamesAreInterned) {
  Attrs a, b;
  a.Set("axes", std::vector<int64_t>{0});
  b.Set(std::string("axes"), std::vector<int64_t>{1});
  EXPECT_EQ(a.entries()[0].first.data(), b.entries()[0].first.data());
  EXPECT_EQ(a.entries()[0].first.data(), OpName("axes").data());
  b.Set(absl::string_view("axes"), int64_t{2});  // replaces, keeps one entry
  ASSERT_EQ(b.entries().size(), 1);
  EXPECT_EQ(b.GetInt("axes", 0), 2);
}

// Short int lists live in the entry; longer ones on the heap. Both read back
// alike, as a vector or in place.
TEST(AttrsTest, IntListsOfAnyLength) {
  static_assert(sizeof(AttrValue) <= sizeof(std::string) + 8);
  Attrs attrs;
  attrs.Set("short", std::vector<int64_t>{1, 2, 3});
  attrs.Set("long", AttrInts{1, 2, 3, 4, 5});
  attrs.Set("empty", std::vector<int64_t>{});
  EXPECT_EQ(attrs.GetInts("short"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(attrs.GetInts("long"), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(*attrs.FindInts("long"), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  ASSERT_NE(attrs.FindInts("empty"), nullptr);
  EXPECT_TRUE(attrs.FindInts("empty")->empty());
  EXPECT_EQ(attrs.FindInts("missing"), nullptr);
  EXPECT_EQ(attrs.GetInts("missing", {9}), (std::vector<int64_t>{9}));
  const std::vector<int64_t> as_vector = *attrs.FindInts("short");
  EXPECT_EQ(as_vector, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(*attrs.FindInts("short") == (std::vector<int64_t>{1, 2}));
}

TEST(AttrsTest, MakeAttrsKeepsTheOrderOfItsPairs) {
  const Attrs attrs = MakeAttrs({{"axis", int64_t{-1}}, {"mode", std::string("nearest")}});
  ASSERT_EQ(attrs.entries().size(), 2);
  EXPECT_EQ(attrs.entries()[0].first, "axis");
  EXPECT_EQ(attrs.GetInt("axis", 0), -1);
  EXPECT_EQ(attrs.GetString("mode", ""), "nearest");
}

}  // namespace
}  // namespace loom
