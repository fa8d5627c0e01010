#include "runtime/content_hash.h"

#include <string>

#include "gtest/gtest.h"

namespace loom {
namespace {

TEST(ContentHashTest, IsStableXxh3_128) {
  // XXH3-128 as xxHash's reference implementation gives it (the Python
  // package xxhash 3's xxh3_128_hexdigest).
  EXPECT_EQ(ContentHash(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(ContentHash("a"), "a96faf705af16834e6c632b61e964e1f");
  EXPECT_EQ(ContentHash("loom"), "0441d5ca6d23a93443eb4ba434c8aff1");
  EXPECT_NE(ContentHash("loom"), ContentHash("mool"));
  EXPECT_NE(ContentHash(std::string("a\0b", 3)), ContentHash("a"));
}

TEST(ContentHashTest, PiecesFedOneByOneHashAsTheirWhole) {
  const std::string data(1000, 'x');
  ContentHasher pieces;
  pieces.Update(data.substr(0, 7));
  pieces.Update(data.substr(7));
  EXPECT_EQ(pieces.HexDigest(), ContentHash(data));
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
