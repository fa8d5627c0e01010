#ifndef LOOM_IR_SUPPORT_ATTRS_H_
#define LOOM_IR_SUPPORT_ATTRS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/support/interned_name.h"

namespace loom {

// A list of ints as an attribute holds it: up to three in place (the axes,
// starts and ends of a slice, most shapes), so that a short list takes no
// heap block of its own. It converts from and to a std::vector.
class AttrInts : public absl::InlinedVector<int64_t, 3> {
 public:
  using InlinedVector::InlinedVector;
  using InlinedVector::operator=;
  // NOLINTNEXTLINE(google-explicit-constructor)
  AttrInts(const std::vector<int64_t>& v) : InlinedVector(v.begin(), v.end()) {}

  // NOLINTNEXTLINE(google-explicit-constructor)
  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }

  // Exact overloads for two AttrInts, which the vector ones would otherwise
  // make ambiguous (clang) with InlinedVector's own.
  friend bool operator==(const AttrInts& a, const AttrInts& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const AttrInts& a, const AttrInts& b) { return !(a == b); }
  friend bool operator==(const AttrInts& a, const std::vector<int64_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const std::vector<int64_t>& a, const AttrInts& b) { return b == a; }
};

// The alternatives are in the order of AttrType (ir/op_registry.h). No
// larger than a std::string and its index (40 bytes).
using AttrValue = std::variant<int64_t, double, std::string, AttrInts, std::vector<double>,
                               std::vector<std::string>>;

// A node's attributes, in the order they were set (so that printing is
// deterministic). Nodes carry a handful, so lookup is a linear scan.
class Attrs {
 public:
  // 56 bytes (the interned name 16, the value 40), with no heap block for
  // the name or a short list of ints: a slice's three attributes take 168
  // bytes, all in the one block of entries.
  using Entry = std::pair<AttrName, AttrValue>;

  Attrs() = default;
  Attrs(const Attrs& other);
  Attrs(Attrs&& other) noexcept;
  Attrs& operator=(const Attrs& other);
  Attrs& operator=(Attrs&& other) noexcept;
  ~Attrs() = default;

  void Set(AttrName name, AttrValue value);
  // Makes room for this many attributes, so that setting them one by one
  // allocates once.
  void Reserve(size_t n);
  const AttrValue* Find(absl::string_view name) const;
  bool Has(absl::string_view name) const { return Find(name) != nullptr; }

  // Typed reads with a default for an absent attribute. The op registry
  // checks types when a node is verified, so a mismatched type here is a
  // broken invariant and reads as the default.
  int64_t GetInt(absl::string_view name, int64_t default_value) const;
  double GetFloat(absl::string_view name, double default_value) const;
  std::string GetString(absl::string_view name, std::string default_value) const;
  std::vector<int64_t> GetInts(absl::string_view name,
                               std::vector<int64_t> default_value = {}) const;
  // The list of ints `name` in place (no copy), or null when absent (or of
  // another type).
  const AttrInts* FindInts(absl::string_view name) const;
  std::vector<double> GetFloats(absl::string_view name,
                                std::vector<double> default_value = {}) const;
  std::vector<std::string> GetStrings(absl::string_view name,
                                      std::vector<std::string> default_value = {}) const;

  absl::Span<const Entry> entries() const { return absl::MakeConstSpan(entries_.get(), size_); }

 private:
  // Entries [0, size_) of room for capacity_: one heap block, and 16 bytes
  // in every node (a std::vector would take 24; most nodes have no
  // attributes, and a decomposed graph has millions of nodes).
  std::unique_ptr<Entry[]> entries_;
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;
};

// Attributes from (name, value) pairs, in that order:
// MakeAttrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}).
Attrs MakeAttrs(std::initializer_list<std::pair<std::string, AttrValue>> list);

}  // namespace loom

#endif  // LOOM_IR_SUPPORT_ATTRS_H_
