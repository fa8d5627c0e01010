#include "runtime/content_hash.h"

#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace loom {

struct ContentHasher::State {
  XXH3_state_t xxh3;
};

ContentHasher::ContentHasher() : state_(std::make_unique<State>()) {
  XXH3_128bits_reset(&state_->xxh3);
}

ContentHasher::~ContentHasher() = default;

void ContentHasher::Update(std::string_view data) {
  XXH3_128bits_update(&state_->xxh3, data.data(), data.size());
}

void ContentHasher::Add(std::string_view piece) {
  Update(absl::StrCat(piece.size(), ":"));
  Update(piece);
}

std::string ContentHasher::HexDigest() const {
  const XXH128_hash_t hash = XXH3_128bits_digest(&state_->xxh3);
  return absl::StrFormat("%016x%016x", hash.high64, hash.low64);
}

std::string ContentHash(std::string_view data) {
  const XXH128_hash_t hash = XXH3_128bits(data.data(), data.size());
  return absl::StrFormat("%016x%016x", hash.high64, hash.low64);
}

}  // namespace loom
