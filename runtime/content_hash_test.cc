#include "runtime/content_hash.h"

#include <string>

#include "gtest/gtest.h"

namespace loom {
namespace {

TEST(ContentHashTest, IsStableFnv1a128) {
  // Published FNV-1a 128-bit values.
  EXPECT_EQ(ContentHash(""), "6c62272e07bb014262b821756295c58d");
  EXPECT_EQ(ContentHash("a"), "d228cb696f1a8caf78912b704e4a8964");
  EXPECT_EQ(ContentHash("loom"), "691e7dbc5e757277b806e95d7414a1c4");
  EXPECT_NE(ContentHash("loom"), ContentHash("mool"));
  EXPECT_NE(ContentHash(std::string("a\0b", 3)), ContentHash("a"));
}

TEST(ContentHashTest, PiecesAreLengthPrefixed) {
  ContentHasher ab_c, a_bc;
  ab_c.Add("ab");
  ab_c.Add("c");
  a_bc.Add("a");
  a_bc.Add("bc");
  EXPECT_NE(ab_c.HexDigest(), a_bc.HexDigest());
}

}  // namespace
}  // namespace loom
