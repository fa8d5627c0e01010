#include "ir/support/attrs.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace loom {

Attrs::Attrs(const Attrs& other) {
  Reserve(other.size_);
  std::copy(other.entries_.get(), other.entries_.get() + other.size_, entries_.get());
  size_ = other.size_;
}

Attrs::Attrs(Attrs&& other) noexcept
    : entries_(std::move(other.entries_)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Attrs& Attrs::operator=(const Attrs& other) {
  if (this != &other) *this = Attrs(other);
  return *this;
}

Attrs& Attrs::operator=(Attrs&& other) noexcept {
  entries_ = std::move(other.entries_);
  size_ = std::exchange(other.size_, 0);
  capacity_ = std::exchange(other.capacity_, 0);
  return *this;
}

void Attrs::Reserve(size_t n) {
  if (n <= capacity_) return;
  auto grown = std::make_unique<Entry[]>(n);
  std::move(entries_.get(), entries_.get() + size_, grown.get());
  entries_ = std::move(grown);
  capacity_ = static_cast<uint32_t>(n);
}

void Attrs::Set(AttrName name, AttrValue value) {
  for (Entry& entry : absl::MakeSpan(entries_.get(), size_)) {
    if (entry.first == name) {
      entry.second = std::move(value);
      return;
    }
  }
  if (size_ == capacity_) Reserve(std::max<size_t>(2 * capacity_, 1));
  entries_[size_++] = Entry(name, std::move(value));
}

const AttrValue* Attrs::Find(absl::string_view name) const {
  for (const auto& [key, value] : entries()) {
    if (key == name) return &value;
  }
  return nullptr;
}

namespace {

template <typename T>
T GetOr(const Attrs& attrs, absl::string_view name, T default_value) {
  const AttrValue* value = attrs.Find(name);
  if (value == nullptr) return default_value;
  if (const T* typed = std::get_if<T>(value)) return *typed;
  return default_value;
}

}  // namespace

int64_t Attrs::GetInt(absl::string_view name, int64_t default_value) const {
  return GetOr<int64_t>(*this, name, default_value);
}

double Attrs::GetFloat(absl::string_view name, double default_value) const {
  const AttrValue* value = Find(name);
  if (value != nullptr && std::holds_alternative<int64_t>(*value)) {
    return static_cast<double>(std::get<int64_t>(*value));
  }
  return GetOr<double>(*this, name, default_value);
}

std::string Attrs::GetString(absl::string_view name, std::string default_value) const {
  return GetOr<std::string>(*this, name, std::move(default_value));
}

std::vector<int64_t> Attrs::GetInts(absl::string_view name,
                                    std::vector<int64_t> default_value) const {
  const AttrInts* ints = FindInts(name);
  return ints == nullptr ? std::move(default_value) : std::vector<int64_t>(*ints);
}

const AttrInts* Attrs::FindInts(absl::string_view name) const {
  const AttrValue* value = Find(name);
  return value == nullptr ? nullptr : std::get_if<AttrInts>(value);
}

std::vector<double> Attrs::GetFloats(absl::string_view name,
                                     std::vector<double> default_value) const {
  return GetOr<std::vector<double>>(*this, name, std::move(default_value));
}

std::vector<std::string> Attrs::GetStrings(absl::string_view name,
                                           std::vector<std::string> default_value) const {
  return GetOr<std::vector<std::string>>(*this, name, std::move(default_value));
}

Attrs MakeAttrs(std::initializer_list<std::pair<std::string, AttrValue>> list) {
  Attrs attrs;
  attrs.Reserve(list.size());
  for (const auto& [name, value] : list) attrs.Set(name, value);
  return attrs;
}

}  // namespace loom
