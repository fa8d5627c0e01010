#include "ir/gemm.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "ir/expr.h"

namespace loom {
namespace {

constexpr int64_t kMaxBlasInt = std::numeric_limits<int32_t>::max();

// The strides of an affine `index` over the node's loops: the batch loops'
// into `batch_strides`, then those of the loops that give its rows and
// columns. False when the index is not affine or uses another loop.
bool Strides(Expr index, int num_vars, int batch_loops, int row_var, int col_var,
             GemmMatrix& matrix) {
  std::vector<int64_t> coefficients(num_vars);
  if (!AffineCoefficients(index, absl::MakeSpan(coefficients), matrix.offset)) return false;
  for (int v = batch_loops; v < num_vars; ++v) {
    if (v != row_var && v != col_var && coefficients[v] != 0) return false;
  }
  matrix.batch_strides.assign(coefficients.begin(), coefficients.begin() + batch_loops);
  matrix.row_stride = row_var < 0 ? 0 : coefficients[row_var];
  matrix.col_stride = col_var < 0 ? 0 : coefficients[col_var];
  return true;
}

// Chooses the BLAS layout of a rows x cols matrix from its strides; false
// when neither fits. A stride along an extent of 1 is never used, so it
// counts as whatever fits.
bool ChooseLayout(int64_t rows, int64_t cols, GemmMatrix& matrix) {
  const bool unit_cols = cols == 1 || matrix.col_stride == 1;
  const bool unit_rows = rows == 1 || matrix.row_stride == 1;
  const int64_t row_major_leading = rows == 1 ? cols : matrix.row_stride;
  const int64_t col_major_leading = cols == 1 ? rows : matrix.col_stride;
  if (unit_cols && row_major_leading >= cols) {
    matrix.transposed = false;
    matrix.leading = row_major_leading;
  } else if (unit_rows && col_major_leading >= rows) {
    matrix.transposed = true;
    matrix.leading = col_major_leading;
  } else {
    return false;
  }
  return matrix.leading <= kMaxBlasInt;
}

// Folds the innermost batch loop into the rows of a and c while that reads
// and writes the same memory: b is shared across it, and a and c are
// row-major with the loop stepping over exactly m of their rows.
void FoldBatchIntoRows(Gemm& gemm) {
  while (!gemm.batch.empty()) {
    const size_t last = gemm.batch.size() - 1;
    const int64_t extent = gemm.batch[last];
    const bool folds =
        gemm.b.batch_strides[last] == 0 && !gemm.a.transposed &&
        gemm.a.batch_strides[last] == SaturatingMul(gemm.m, gemm.a.leading) &&
        gemm.c.batch_strides[last] == SaturatingMul(gemm.m, gemm.c.leading) &&
        SaturatingMul(gemm.m, extent) <= kMaxBlasInt;
    if (!folds && extent != 1) return;
    if (folds) gemm.m = SaturatingMul(gemm.m, extent);
    gemm.batch.pop_back();
    for (GemmMatrix* matrix : {&gemm.a, &gemm.b, &gemm.c}) matrix->batch_strides.pop_back();
  }
}

// Takes as the rows of a and c the longest batch loop that can be (b shared
// across it, a and c row-major with room for their rows there), when longer
// than the rows: fewer, larger calls (an attention's projection of a
// sequence-first input was 16 calls of 2 rows, now 2 of 16).
void TakeTheLongestRows(Gemm& gemm) {
  if (gemm.a.transposed || gemm.c.transposed) return;
  int best = -1;
  for (size_t j = 0; j < gemm.batch.size(); ++j) {
    const bool fits = gemm.b.batch_strides[j] == 0 && gemm.a.batch_strides[j] >= gemm.k &&
                      gemm.c.batch_strides[j] >= gemm.n && gemm.a.batch_strides[j] <= kMaxBlasInt &&
                      gemm.c.batch_strides[j] <= kMaxBlasInt;
    if (fits && gemm.batch[j] > (best < 0 ? gemm.m : gemm.batch[best])) best = static_cast<int>(j);
  }
  if (best < 0) return;
  std::swap(gemm.batch[best], gemm.m);
  for (GemmMatrix* matrix : {&gemm.a, &gemm.c}) {
    std::swap(matrix->batch_strides[best], matrix->leading);
  }
}

bool IsDirectLoad(const ScalarOp& op) {
  return op.kind == ScalarOp::Kind::kLoad && op.args.empty();
}

}  // namespace

std::optional<Gemm> MatchGemm(const ComputeNode& node) {
  const std::vector<ScalarOp>& body = node.body;
  if (node.reduce != ReduceKind::kSum || node.reduction_ranges.size() != 1 ||
      node.ranges.size() < 2 || body.size() != 3 || node.root != 2) {
    return std::nullopt;
  }
  const ScalarOp& product = body[2];
  if (!IsDirectLoad(body[0]) || !IsDirectLoad(body[1]) ||
      product.kind != ScalarOp::Kind::kCall || product.fn != ScalarFn::kMul ||
      product.args != StepArgs{0, 1}) {
    return std::nullopt;
  }
  Gemm gemm;
  gemm.dtype = product.dtype;
  if ((gemm.dtype != DType::kF32 && gemm.dtype != DType::kF64) ||
      body[0].dtype != gemm.dtype || body[1].dtype != gemm.dtype) {
    return std::nullopt;
  }
  const int batch_loops = static_cast<int>(node.ranges.size()) - 2;
  const int m_var = batch_loops, n_var = batch_loops + 1, k_var = batch_loops + 2;
  const int num_vars = k_var + 1;
  gemm.batch.assign(node.ranges.begin(), node.ranges.begin() + batch_loops);
  gemm.m = node.ranges[m_var];
  gemm.n = node.ranges[n_var];
  gemm.k = node.reduction_ranges[0];
  for (int64_t extent : {gemm.m, gemm.n, gemm.k}) {
    if (extent < 1 || extent > kMaxBlasInt) return std::nullopt;
  }
  gemm.a.buffer = body[0].buffer;
  gemm.b.buffer = body[1].buffer;
  gemm.c.buffer = node.output;
  // The store index is over the pointwise loops only: no k.
  if (!Strides(body[0].index, num_vars, batch_loops, m_var, k_var, gemm.a) ||
      !Strides(body[1].index, num_vars, batch_loops, k_var, n_var, gemm.b) ||
      !Strides(node.store_index, num_vars - 1, batch_loops, m_var, n_var, gemm.c) ||
      !ChooseLayout(gemm.m, gemm.k, gemm.a) || !ChooseLayout(gemm.k, gemm.n, gemm.b) ||
      !ChooseLayout(gemm.m, gemm.n, gemm.c) || gemm.c.transposed) {
    return std::nullopt;
  }
  TakeTheLongestRows(gemm);
  FoldBatchIntoRows(gemm);
  return gemm;
}

}  // namespace loom
