#ifndef LOOM_RUNTIME_CONTENT_HASH_H_
#define LOOM_RUNTIME_CONTENT_HASH_H_

#include <memory>
#include <string>
#include <string_view>

namespace loom {

// XXH3's 128-bit hash (xxHash, libxxhash-dev, inlined), fed piece by
// piece: stable across runs, builds and machines (unlike absl::Hash), so
// it can name files on disk (the kernel cache's entries) and check them (an
// artifact's payload). Tens of GB/s: a BERT-base artifact (435 MB) is
// checked in tens of milliseconds, where 128-bit FNV-1a, a byte at a time,
// took 0.85 s.
class ContentHasher {
 public:
  ContentHasher();
  ~ContentHasher();
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;

  // The bytes as they are.
  void Update(std::string_view data);
  // Length-prefixed, so that no two different lists of pieces hash alike.
  void Add(std::string_view piece);
  // 32 lower-case hex digits.
  std::string HexDigest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ContentHasher over `data` alone.
std::string ContentHash(std::string_view data);

}  // namespace loom

#endif  // LOOM_RUNTIME_CONTENT_HASH_H_
