#include "ir/gemm_chain.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/expr.h"

namespace loom {
namespace {

// Whether the rows of `matrix`, over all of `gemm`'s batch positions in
// row-major order, lie one after the other `row_stride` apart, its
// columns unit-stride: row R of them starts at offset + R * row_stride.
bool RowsDense(const Gemm& gemm, const GemmMatrix& matrix) {
  if (matrix.transposed || matrix.col_stride != 1) return false;
  int64_t stride = gemm.m * matrix.row_stride;
  for (size_t i = gemm.batch.size(); i-- > 0;) {
    if (gemm.batch[i] > 1 && matrix.batch_strides[i] != stride) return false;
    stride *= gemm.batch[i];
  }
  return true;
}

// Whether every element that `index` reaches (an affine index over loops of
// the extents `extents`) lies in row R of `matrix` (RowsDense), among its
// first `width` columns, R being the position of the first `row_loops`
// loops in row-major order.
bool InRowOfIteration(Expr index, absl::Span<const int64_t> extents, int row_loops,
                      const GemmMatrix& matrix, int64_t width) {
  std::vector<int64_t> coefficients(extents.size());
  int64_t constant = 0;
  if (!AffineCoefficients(index, absl::MakeSpan(coefficients), constant)) return false;
  int64_t row_step = matrix.row_stride;
  for (int i = row_loops; i-- > 0;) {
    if (extents[i] > 1 && coefficients[i] != row_step) return false;
    row_step *= extents[i];
  }
  int64_t lowest = constant, highest = constant;
  for (size_t v = row_loops; v < extents.size(); ++v) {
    const int64_t span = coefficients[v] * (extents[v] - 1);
    (span < 0 ? lowest : highest) += span;
  }
  return lowest >= matrix.offset && highest < matrix.offset + width;
}

// The stages of a chain, and which of them read and write a buffer.
enum Stage { kFirst, kMiddle, kSecond };
struct Access {
  std::array<bool, 3> reads = {};
  std::array<bool, 3> writes = {};
};

// Whether the middle kernel reads the first product's result and writes
// the second one's a only within the row of each outer iteration, its
// first `row_loops` outer loops; notes every buffer it reads and writes
// (but its own temporaries) in `access`.
bool MiddleStaysInRows(const LoopProgram& program, const Kernel& middle, int row_loops,
                       const Gemm& first, const Gemm& second,
                       absl::flat_hash_map<BufferId, Access>& access) {
  const auto internal = [&](BufferId buffer) {
    return std::find(middle.internal.begin(), middle.internal.end(), buffer) !=
           middle.internal.end();
  };
  // Whether `index` into `buffer` stays in its row, where it must.
  const auto in_row = [&](BufferId buffer, Expr index, absl::Span<const int64_t> extents) {
    if (buffer == first.c.buffer) {
      return InRowOfIteration(index, extents, row_loops, first.c, first.n);
    }
    if (buffer == second.a.buffer) {
      return InRowOfIteration(index, extents, row_loops, second.a, second.k);
    }
    return true;
  };
  for (int n : middle.nodes) {
    const ComputeNode& node = program.nodes[n];
    if (node.extern_op != ExternOp::kNone) return false;
    const std::vector<int64_t> extents = node.AllRanges();
    for (const ScalarOp& op : node.body) {
      if (op.kind != ScalarOp::Kind::kLoad || internal(op.buffer)) continue;
      const bool gathers = !op.args.empty();
      if ((gathers && (op.buffer == first.c.buffer || op.buffer == second.a.buffer)) ||
          !in_row(op.buffer, op.index, extents)) {
        return false;
      }
      access[op.buffer].reads[kMiddle] = true;
    }
    if (internal(node.output)) continue;
    if (!in_row(node.output, node.store_index, node.ranges)) return false;
    access[node.output].writes[kMiddle] = true;
  }
  return access[first.c.buffer].reads[kMiddle] && access[second.a.buffer].writes[kMiddle];
}

// Whether what the stages do to `buffer` lets tasks run in any order,
// given that the middle kernel keeps to its rows (MiddleStaysInRows).
bool TasksIndependent(BufferId buffer, const Access& access, const Gemm& second) {
  const bool written = access.writes[kFirst] || access.writes[kMiddle] || access.writes[kSecond];
  if (!written) return true;
  if (access.reads[kFirst] || buffer == second.b.buffer) return false;
  if (access.writes[kSecond]) {  // the second product's result
    return !access.writes[kFirst] && !access.writes[kMiddle] && !access.reads[kMiddle];
  }
  // The first product's result, which the middle kernel reads, or what the
  // middle kernel writes: the second product reads only its a.
  return !access.reads[kSecond] || buffer == second.a.buffer;
}

}  // namespace

std::optional<GemmChain> MatchGemmChain(const LoopProgram& program,
                                        absl::Span<const Kernel> kernels) {
  if (kernels.size() != 3) return std::nullopt;
  const std::optional<Gemm> first = KernelGemm(program, kernels[0]);
  const std::optional<Gemm> second = KernelGemm(program, kernels[2]);
  const Kernel& middle = kernels[1];
  if (!first || !second || first->dtype != DType::kF32 || second->dtype != DType::kF32 ||
      !first->accumulate.empty() || !second->accumulate.empty() || first->batch != second->batch ||
      first->m != second->m || !RowsDense(*first, first->c) || !RowsDense(*second, second->a) ||
      middle.nodes.empty() || middle.ordered_loop >= 0) {
    return std::nullopt;
  }
  const ComputeNode& leader = program.nodes[middle.nodes[0]];
  const absl::Span<const int64_t> outer =
      absl::MakeConstSpan(leader.ranges).subspan(0, middle.outer_loops);
  const int64_t rows = NumElements(first->batch) * first->m;
  int row_loops = 0;
  while (row_loops < static_cast<int>(outer.size()) &&
         NumElements(outer.subspan(0, row_loops)) < rows) {
    ++row_loops;
  }
  if (NumElements(outer.subspan(0, row_loops)) != rows) return std::nullopt;

  absl::flat_hash_map<BufferId, Access> access;
  if (!MiddleStaysInRows(program, middle, row_loops, *first, *second, access)) return std::nullopt;
  for (const GemmMatrix* read : {&first->a, &first->b}) access[read->buffer].reads[kFirst] = true;
  access[first->c.buffer].writes[kFirst] = true;
  for (const GemmMatrix* read : {&second->a, &second->b}) {
    access[read->buffer].reads[kSecond] = true;
  }
  access[second->c.buffer].writes[kSecond] = true;
  for (const auto& [buffer, what] : access) {
    if (!TasksIndependent(buffer, what, *second)) return std::nullopt;
  }
  return GemmChain{*first, *second, row_loops};
}

}  // namespace loom
