#ifndef LOOM_PASSES_LOWER_MEMO_H_
#define LOOM_PASSES_LOWER_MEMO_H_

// Lowering's memo of expression results (ExprMemo), private to
// passes/lower*.cc.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "ir/expr.h"
#include "ir/graph.h"

namespace loom {
namespace lowering {

// An expression as a key word: expressions are hash-consed, so equal ones
// share an address.
inline int64_t Bits(Expr e) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(e)); }

// A memo key: the words of a computation's arguments, appended in order
// into fixed storage (lowering builds one per memoised call, so they must
// not allocate). Keys longer than kMaxKey are not cached.
class MemoKey {
 public:
  static constexpr size_t kMaxKey = 16;

  MemoKey& Start(int64_t tag) {
    size_ = 0;
    return Add(tag);
  }
  MemoKey& Add(int64_t word) {
    if (size_ < kMaxKey) words_[size_] = word;
    ++size_;
    return *this;
  }
  MemoKey& Add(absl::Span<const int64_t> words) {
    for (int64_t word : words) Add(word);
    return *this;
  }
  MemoKey& Add(absl::Span<const Expr> exprs) {
    for (Expr e : exprs) Add(Bits(e));
    return *this;
  }

  bool fits() const { return size_ <= kMaxKey; }
  // Only when it fits.
  absl::Span<const int64_t> words() const { return {words_, size_}; }

 private:
  int64_t words_[kMaxKey];
  size_t size_ = 0;
};

// Memoised expression results, by their arguments. Lowering asks for the
// same ones over and over: a graph's values have few distinct shapes and
// views, and an unrolled recurrence repeats each step. The cache is
// direct-mapped and of fixed size (a slot keeps the latest key that hashes
// to it), so it neither grows nor allocates per entry. Recomputing a result
// that was evicted gives the same expression (they are hash-consed), so
// what the cache holds never changes the output.
class ExprMemo {
 public:
  static constexpr size_t kMaxKey = MemoKey::kMaxKey;

  // `slots_log2` sets the size: 2^slots_log2 slots.
  explicit ExprMemo(int slots_log2) : slots_(size_t{1} << slots_log2) {}

  // The result for `key`, computed by compute() when the cache lacks it.
  template <typename Compute>
  Expr Get(const MemoKey& memo_key, Compute compute) {
    if (!memo_key.fits()) return compute();
    const absl::Span<const int64_t> key = memo_key.words();
    const uint64_t hash = HashKey(key);
    if (Expr hit = Find(key, hash)) return hit;
    // Copied before compute(): `key` may be scratch space that it reuses.
    Slot filled;
    filled.hash = hash;
    filled.size = static_cast<uint32_t>(key.size());
    std::copy(key.begin(), key.end(), filled.key);
    filled.result = compute();
    slots_[hash & (slots_.size() - 1)] = filled;
    return filled.result;
  }

  // Records `result` for `key`.
  void Put(const MemoKey& memo_key, Expr result);

 private:
  // Keys are short and the table's contents never reach the output, so a
  // multiply-xor mix (much cheaper than absl::Hash here) is enough.
  static uint64_t HashKey(absl::Span<const int64_t> key) {
    uint64_t hash = key.size();
    for (int64_t word : key) {
      hash = (hash ^ static_cast<uint64_t>(word)) * 0x9e3779b97f4a7c15u;
      hash ^= hash >> 32;
    }
    return hash;
  }

  Expr Find(absl::Span<const int64_t> key, uint64_t hash) const {
    const Slot& slot = slots_[hash & (slots_.size() - 1)];
    if (slot.result == nullptr || slot.hash != hash || slot.size != key.size()) {
      return nullptr;
    }
    for (size_t i = 0; i < key.size(); ++i) {
      if (slot.key[i] != key[i]) return nullptr;
    }
    return slot.result;
  }

  struct Slot {
    uint64_t hash = 0;
    uint32_t size = 0;
    int64_t key[kMaxKey];
    Expr result = nullptr;  // null: empty
  };
  std::vector<Slot> slots_;
};

// Memo slots for a graph (ExprMemo's slots_log2).
int MemoSlotsLog2(const Graph& graph);

}  // namespace lowering
}  // namespace loom

#endif  // LOOM_PASSES_LOWER_MEMO_H_
