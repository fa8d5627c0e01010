#include "ir/support/interned_name.h"

#include <array>
#include <cstdint>
#include <string>

#include "absl/base/const_init.h"
#include "absl/container/node_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace loom {

absl::string_view InternedName::Intern(absl::string_view name) {
  // Nodes are made by the million, nearly all from a few literal names:
  // each thread remembers which interned name it last found for the text at
  // each of a few addresses (checking the text, which may have changed), so
  // that a name seen before takes no lock.
  struct Seen {
    const char* data = nullptr;
    absl::string_view interned;
  };
  thread_local std::array<Seen, 64> seen;
  const uint64_t address = reinterpret_cast<uintptr_t>(name.data());
  Seen& slot = seen[(address * 0x9E3779B97F4A7C15u) >> 58];
  if (slot.data == name.data() && slot.interned == name) return slot.interned;

  static absl::Mutex mutex(absl::kConstInit);
  static auto* const names = new absl::node_hash_set<std::string>;
  absl::string_view interned;
  {
    absl::MutexLock lock(&mutex);
    interned = *names->emplace(name).first;
  }
  slot = Seen{name.data(), interned};
  return interned;
}

}  // namespace loom
