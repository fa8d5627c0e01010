#ifndef LOOM_IR_EXPR_MAP_H_
#define LOOM_IR_EXPR_MAP_H_

#include <cstddef>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "ir/expr.h"

namespace loom {

// Values by expression: the results memoised for one Substitute or Simplify
// call, or the nodes a walk has seen (ForEachNode). Most index expressions
// have a handful of nodes, so the entries are searched linearly until there
// are more than kLinear of them; then they move to a hash map.
template <typename V>
class ExprMap {
 public:
  const V* Find(Expr e) const {
    if (!hashed_.empty()) {
      auto it = hashed_.find(e);
      return it == hashed_.end() ? nullptr : &it->second;
    }
    for (const auto& [key, value] : linear_) {
      if (key == e) return &value;
    }
    return nullptr;
  }

  // `e` must not be in the map yet.
  void Insert(Expr e, V value) {
    if (hashed_.empty() && linear_.size() < kLinear) {
      linear_.emplace_back(e, value);
      return;
    }
    if (hashed_.empty()) {
      hashed_.insert(linear_.begin(), linear_.end());
      linear_.clear();
    }
    hashed_.emplace(e, value);
  }

  void Clear() {
    linear_.clear();
    hashed_.clear();
  }

  // Moves the entries' storage out of `spare`, leaving it empty.
  static ExprMap Take(ExprMap& spare) {
    ExprMap taken = std::move(spare);
    spare.Clear();
    return taken;
  }

 private:
  static constexpr size_t kLinear = 16;
  absl::InlinedVector<std::pair<Expr, V>, kLinear> linear_;
  absl::flat_hash_map<Expr, V> hashed_;
};

}  // namespace loom

#endif  // LOOM_IR_EXPR_MAP_H_
