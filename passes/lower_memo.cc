#include "passes/lower_memo.h"

namespace loom {
namespace lowering {

void ExprMemo::Put(const MemoKey& memo_key, Expr result) {
  if (!memo_key.fits()) return;
  const absl::Span<const int64_t> key = memo_key.words();
  const uint64_t hash = HashKey(key);
  Slot& slot = slots_[hash & (slots_.size() - 1)];
  slot.hash = hash;
  slot.size = static_cast<uint32_t>(key.size());
  std::copy(key.begin(), key.end(), slot.key);
  slot.result = result;
}

// Memo slots for a graph: about one per node, within [2^8, 2^12], so that
// small graphs do not pay for a large table and a large one stays in cache
// (lowering reuses few results at a time: those of the shapes and views at
// hand; a table much larger than the cache makes every lookup a miss).
int MemoSlotsLog2(const Graph& graph) {
  int log2 = 8;
  while (log2 < 12 && (size_t{1} << log2) < graph.nodes().size()) ++log2;
  return log2;
}

}  // namespace lowering
}  // namespace loom
