#include "runtime/content_hash.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace loom {
namespace {

constexpr unsigned __int128 kFnvPrime =
    (static_cast<unsigned __int128>(1) << 88) | 0x13b;  // 2^88 + 2^8 + 0x3b

}  // namespace

void ContentHasher::Update(std::string_view data) {
  for (unsigned char byte : data) {
    state_ ^= byte;
    state_ *= kFnvPrime;
  }
}

void ContentHasher::Add(std::string_view piece) {
  Update(absl::StrCat(piece.size(), ":"));
  Update(piece);
}

std::string ContentHasher::HexDigest() const {
  return absl::StrFormat("%016x%016x", static_cast<uint64_t>(state_ >> 64),
                         static_cast<uint64_t>(state_));
}

std::string ContentHash(std::string_view data) {
  ContentHasher hash;
  hash.Update(data);
  return hash.HexDigest();
}

}  // namespace loom
