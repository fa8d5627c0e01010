#ifndef LOOM_RUNTIME_CONTENT_HASH_H_
#define LOOM_RUNTIME_CONTENT_HASH_H_

#include <string>
#include <string_view>

namespace loom {

// 128-bit FNV-1a, fed piece by piece: stable across runs, builds and
// machines (unlike absl::Hash), so it can name files on disk (the kernel
// cache's entries) and check them (an artifact's payload).
class ContentHasher {
 public:
  // The bytes as they are.
  void Update(std::string_view data);
  // Length-prefixed, so that no two different lists of pieces hash alike.
  void Add(std::string_view piece);
  // 32 lower-case hex digits.
  std::string HexDigest() const;

 private:
  unsigned __int128 state_ =
      (static_cast<unsigned __int128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
};

// ContentHasher over `data` alone.
std::string ContentHash(std::string_view data);

}  // namespace loom

#endif  // LOOM_RUNTIME_CONTENT_HASH_H_
