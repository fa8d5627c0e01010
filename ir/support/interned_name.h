#ifndef LOOM_IR_SUPPORT_INTERNED_NAME_H_
#define LOOM_IR_SUPPORT_INTERNED_NAME_H_

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace loom {

// A name interned for the life of the process: a view of the one copy
// that every InternedName with the same text shares, so that it takes 16
// bytes instead of a std::string's 32 (and no heap block for long text). It
// is an absl::string_view, so it compares with strings and goes into StrCat
// as they do; it is made from any string, which it then interns.
class InternedName : public absl::string_view {
 public:
  InternedName() = default;
  InternedName(absl::string_view name)  // NOLINT(google-explicit-constructor)
      : absl::string_view(Intern(name)) {}
  InternedName(const char* name)  // NOLINT(google-explicit-constructor)
      : InternedName(absl::string_view(name)) {}
  InternedName(const std::string& name)  // NOLINT(google-explicit-constructor)
      : InternedName(absl::string_view(name)) {}

  template <typename H>
  friend H AbslHashValue(H state, const InternedName& name) {
    return H::combine(std::move(state), absl::string_view(name));
  }

 private:
  static absl::string_view Intern(absl::string_view name);
};

// A node's op, and an attribute's name: a decomposed graph has millions of
// nodes, nearly all named from a few literals.
using OpName = InternedName;
using AttrName = InternedName;

// What a lookup by op name found, remembered by the address of the interned
// name (equal names share one address): a pass that looks up the ops of
// millions of nodes then hashes a pointer per node rather than the text.
// Not thread-safe: one per run of a pass.
template <typename V>
class OpLookupCache {
 public:
  // find(op), called once per distinct op. (A copy: V is a small handle,
  // and a reference into the table would not outlive its next growth.)
  template <typename Find>
  V Get(OpName op, Find&& find) {
    auto [it, inserted] = found_.try_emplace(op.data());
    if (inserted) it->second = find(op);
    return it->second;
  }

 private:
  absl::flat_hash_map<const char*, V> found_;
};

}  // namespace loom

#endif  // LOOM_IR_SUPPORT_INTERNED_NAME_H_
