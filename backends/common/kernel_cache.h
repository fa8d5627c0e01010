#ifndef LOOM_BACKENDS_COMMON_KERNEL_CACHE_H_
#define LOOM_BACKENDS_COMMON_KERNEL_CACHE_H_

// The on-disk kernel cache both backends share: content hashes that name
// entries, a directory private to the user, and entries that appear
// atomically (a reader sees no file or the whole file), so that threads and
// processes may share one cache.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace loom::kernel_cache {

// 128-bit FNV-1a, fed piece by piece: stable across runs, builds and
// machines (unlike absl::Hash), so it can name files on disk.
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

// The variable's value, or "" when unset.
std::string GetEnv(const char* name);

// $LOOM_CACHE_DIR if set, else $HOME/.cache/loom; empty if neither is set.
std::string DefaultCacheDir();

// Creates `dir` and its missing parents, each with mode 0700 (the cache holds
// code this process will run, so nobody else may write it).
absl::Status MakeDirs(const std::string& dir);

// `path` plus a suffix no other thread or process picks at the same time.
std::string TempPathFor(const std::string& path);

// Writes `contents` to a temporary file and renames it onto `path`, so that
// readers see the old file or the whole new one.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> ReadFile(const std::string& path);

}  // namespace loom::kernel_cache

#endif  // LOOM_BACKENDS_COMMON_KERNEL_CACHE_H_
