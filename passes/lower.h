#ifndef LOOM_PASSES_LOWER_H_
#define LOOM_PASSES_LOWER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/loop_ir.h"

namespace loom {

// The fewest rows for which a product that reads its second operand
// contiguously along the sum is a gemm call by default (LowerOptions).
// Below it, the loops of such a product are dot products that the compiler
// vectorises, and they fuse with their consumers: an LSTM step of batch 2
// and hidden 256 runs its product and gates as one kernel in about half
// the time of a gemm call plus a gates kernel (the call packs the whole
// weight for two rows). Every other product is a call: its loops would
// read the second operand down its columns. Measured by tests/bench/peers
// (docs/matrix-products.md).
constexpr int64_t kDefaultGemmMinRows = 8;
// A weight of fewer elements than this stays in the caches from row to
// row (an LSTM's recurrent weight of hidden 64: 16K): the dot products of
// up to kSmallOperandGemmMinRows - 1 rows reading it stay loops that fuse
// with their consumers too. The seed LSTM at sequence 256 and batch 8, 16
// and 24 ran in 2.1, 5.6 and 8.3 ms rather than 3.2, 7.6 and 10.9 (each
// step a gemm call and a kernel of the cell). Not for operands computed at
// run time: BERT's attention over 8 to 24 tokens was slower so.
constexpr int64_t kSmallOperandElements = int64_t{1} << 16;
constexpr int64_t kSmallOperandGemmMinRows = 32;

// The fewest rows for which a product reading its second operand, of
// `operand_elements` elements, contiguously along the sum is a gemm call
// by default.
int64_t DefaultGemmMinRows(int64_t operand_elements, bool operand_is_weight);

// Whether `node` is a matmul that reads `value` as its second operand only,
// with at least DefaultGemmMinRows rows: a GEMM call by default, which
// wants that operand as [k, n] (simplify transposes constant ones into it,
// pad-gemm-weights pads their rows); fewer rows make matrix-vector
// products, which read a weight as stored, [n, k] (MatchMatVec).
bool IsGemmOperand(const Graph& graph, const Node& node, ValueId value);

// The weights and constants whose type `fits` and whose every reader is a
// GEMM call reading them as its second operand (IsGemmOperand) that
// `product_fits`: those a pass may store in another layout for their
// products (pad-gemm-weights, pack-panel-weights). A graph output is none.
std::vector<ValueId> GemmOperandWeights(const Graph& graph,
                                        const std::function<bool(const Node&)>& product_fits,
                                        const std::function<bool(const TensorType&)>& fits);

struct LowerOptions {
  // See kDefaultGemmMinRows; 0: DefaultGemmMinRows; -1: no product is a
  // gemm call.
  int64_t gemm_min_rows = 0;
  // Fill LoopProgram::inline_decisions (the `lower` pass: where the module
  // asks, Module::record_decisions).
  bool record_inline_decisions = false;
};

absl::StatusOr<LoopProgram> LowerGraph(const Graph& graph, const LowerOptions& options = {});

// LowerGraph for a graph the caller is done with (the `lower` pass): each
// block of its nodes is freed once lowered, so that the nodes and the loop
// program they become are never both held whole (an unrolled recurrence's
// nodes take more memory than its program). On return, failed or not, the
// graph has no nodes; it keeps its values and its inputs, weights,
// constants and outputs, which the runtime binds.
absl::StatusOr<LoopProgram> LowerGraphReleasingNodes(Graph& graph,
                                                     const LowerOptions& options = {});

}  // namespace loom

#endif  // LOOM_PASSES_LOWER_H_
