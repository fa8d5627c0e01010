#include "ir/gemm.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "ir/expr.h"

namespace loom {
namespace {

constexpr int64_t kMaxBlasInt = std::numeric_limits<int32_t>::max();

// The loops of a product's node: batch loops [0, m), m, the column loops
// (m, first_k) that merge into n, accumulation loops [first_k, k), k.
struct GemmLoops {
  int m = 0, first_k = 0, k = 0;
};

// One matrix's affine index: a coefficient per loop variable and a
// constant.
struct AffineIndex {
  std::vector<int64_t> coefficients;
  int64_t constant = 0;
};

std::optional<AffineIndex> Affine(Expr index, int num_vars) {
  AffineIndex affine;
  affine.coefficients.resize(num_vars);
  if (!AffineCoefficients(index, absl::MakeSpan(affine.coefficients), affine.constant)) {
    return std::nullopt;
  }
  return affine;
}

// The strides of `index` (over the node's loops, none after `loops.k`
// used): the batch and accumulation loops' into `matrix`, `row_loop`'s and
// the merged column loops' (`col_loop` = -1 for the merged n loops, whose
// innermost stride counts) as its row and column strides. False when it
// uses another loop.
bool Strides(const AffineIndex& index, const GemmLoops& loops, int row_loop, int col_loop,
             absl::Span<const int64_t> extents, GemmMatrix& matrix) {
  const std::vector<int64_t>& coefficients = index.coefficients;
  const int num_vars = static_cast<int>(coefficients.size());
  matrix.offset = index.constant;
  const auto uses = [&](int v) {
    return v == row_loop || v == col_loop || (col_loop < 0 && v > loops.m && v < loops.first_k);
  };
  for (int v = loops.m; v < num_vars; ++v) {
    const bool accumulation = v >= loops.first_k && v < loops.k;
    if (!uses(v) && !accumulation && coefficients[v] != 0) return false;
  }
  // Merged column loops: each outer step is a whole run of the one inside.
  if (col_loop < 0) {
    for (int v = loops.m + 1; v + 1 < loops.first_k; ++v) {
      if (coefficients[v] != SaturatingMul(coefficients[v + 1], extents[v + 1])) return false;
    }
  }
  matrix.batch_strides.assign(coefficients.begin(), coefficients.begin() + loops.m);
  matrix.accumulate_strides.assign(coefficients.begin() + std::min(loops.first_k, num_vars),
                                   coefficients.begin() + std::min(loops.k, num_vars));
  matrix.row_stride = row_loop < 0 ? 0 : coefficients[row_loop];
  const int col = col_loop < 0 ? loops.first_k - 1 : col_loop;
  matrix.col_stride = coefficients[col];
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
    const bool folds = gemm.b.batch_strides[last] == 0 && !gemm.a.transposed &&
                       gemm.a.batch_strides[last] == SaturatingMul(gemm.m, gemm.a.leading) &&
                       gemm.c.batch_strides[last] == SaturatingMul(gemm.m, gemm.c.leading) &&
                       SaturatingMul(gemm.m, extent) <= kMaxBlasInt;
    if (!folds && extent != 1) return;
    if (folds) {
      gemm.m = SaturatingMul(gemm.m, extent);
      // The rows were one (whose stride nothing read) or row_stride apart.
      for (GemmMatrix* matrix : {&gemm.a, &gemm.c}) matrix->row_stride = matrix->leading;
    }
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
    matrix->row_stride = matrix->leading;
  }
}

bool IsDirectLoad(const ScalarOp& op) {
  return op.kind == ScalarOp::Kind::kLoad && op.args.empty();
}

// The product with the column loops (loops.m, loops.first_k) merged into n,
// over loops of `extents` (pointwise, then reduction), its operands and
// store at the affine indices `a`, `b` and `c`.
std::optional<Gemm> MatchLoops(const ComputeNode& node, const GemmLoops& loops,
                               absl::Span<const int64_t> extents, const AffineIndex& a,
                               const AffineIndex& b, const AffineIndex& c) {
  const std::vector<ScalarOp>& body = node.body;
  Gemm gemm;
  gemm.dtype = body[2].dtype;
  gemm.batch.assign(extents.begin(), extents.begin() + loops.m);
  gemm.accumulate.assign(extents.begin() + loops.first_k, extents.begin() + loops.k);
  gemm.m = extents[loops.m];
  gemm.n = 1;
  for (int v = loops.m + 1; v < loops.first_k; ++v) gemm.n = SaturatingMul(gemm.n, extents[v]);
  gemm.k = extents[loops.k];
  for (int64_t extent : {gemm.m, gemm.n, gemm.k}) {
    if (extent < 1 || extent > kMaxBlasInt) return std::nullopt;
  }
  gemm.a.buffer = body[0].buffer;
  gemm.b.buffer = body[1].buffer;
  gemm.c.buffer = node.output;
  if (!Strides(a, loops, loops.m, loops.k, extents, gemm.a) ||
      !Strides(b, loops, loops.k, -1, extents, gemm.b) ||
      !Strides(c, loops, loops.m, -1, extents, gemm.c) || !ChooseLayout(gemm.m, gemm.k, gemm.a) ||
      !ChooseLayout(gemm.k, gemm.n, gemm.b) || !ChooseLayout(gemm.m, gemm.n, gemm.c) ||
      gemm.c.transposed) {
    return std::nullopt;
  }
  gemm.c.accumulate_strides.assign(gemm.accumulate.size(), 0);
  TakeTheLongestRows(gemm);
  FoldBatchIntoRows(gemm);
  return gemm;
}

}  // namespace

std::optional<Gemm> MatchGemm(const ComputeNode& node) {
  const std::vector<ScalarOp>& body = node.body;
  if (node.reduce != ReduceKind::kSum || node.reduction_ranges.empty() || node.ranges.size() < 2 ||
      body.size() != 3 || node.root != 2) {
    return std::nullopt;
  }
  const ScalarOp& product = body[2];
  if (!IsDirectLoad(body[0]) || !IsDirectLoad(body[1]) || product.kind != ScalarOp::Kind::kCall ||
      product.fn != ScalarFn::kMul || product.args != StepArgs{0, 1}) {
    return std::nullopt;
  }
  if ((product.dtype != DType::kF32 && product.dtype != DType::kF64) ||
      body[0].dtype != product.dtype || body[1].dtype != product.dtype) {
    return std::nullopt;
  }
  std::vector<int64_t> extents = node.ranges;
  extents.insert(extents.end(), node.reduction_ranges.begin(), node.reduction_ranges.end());
  const int pointwise = static_cast<int>(node.ranges.size());
  const int num_vars = static_cast<int>(extents.size());
  // The store index is over the pointwise loops only: no k.
  const std::optional<AffineIndex> a = Affine(body[0].index, num_vars);
  const std::optional<AffineIndex> b = Affine(body[1].index, num_vars);
  const std::optional<AffineIndex> c = Affine(node.store_index, pointwise);
  if (!a.has_value() || !b.has_value() || !c.has_value()) return std::nullopt;
  GemmLoops loops;
  loops.first_k = pointwise;
  loops.k = num_vars - 1;
  // n the last pointwise loop, else the fewest last loops that merge.
  for (loops.m = pointwise - 2; loops.m >= 0; --loops.m) {
    if (std::optional<Gemm> gemm = MatchLoops(node, loops, extents, *a, *b, *c)) return gemm;
  }
  return std::nullopt;
}

std::optional<Gemm> KernelGemm(const LoopProgram& program, const Kernel& kernel) {
  if (kernel.nodes.size() != 1) return std::nullopt;
  const ComputeNode& node = program.nodes[kernel.nodes[0]];
  if (node.extern_op != ExternOp::kGemm) return std::nullopt;
  return MatchGemm(node);
}

}  // namespace loom
