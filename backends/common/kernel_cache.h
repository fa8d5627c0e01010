#ifndef LOOM_BACKENDS_COMMON_KERNEL_CACHE_H_
#define LOOM_BACKENDS_COMMON_KERNEL_CACHE_H_

// The on-disk kernel cache both backends share: a directory private to the
// user, whose entries (each named by the ContentHash of its inputs,
// runtime/content_hash.h) appear atomically (a reader sees no file or the
// whole file), so that threads and processes may share one cache.

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace loom::kernel_cache {

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

}  // namespace loom::kernel_cache

#endif  // LOOM_BACKENDS_COMMON_KERNEL_CACHE_H_
