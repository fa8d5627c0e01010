#ifndef LOOM_IR_GEMM_H_
#define LOOM_IR_GEMM_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/dtype.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// A matrix of `rows` x `cols` elements inside a buffer, as a BLAS call
// takes it: row-major with `leading` elements between rows, or, when
// `transposed`, column-major with `leading` elements between columns.
// Element [r][c] at batch position (b0, b1, ...) and accumulation position
// (s0, s1, ...) is
//   buffer[offset + sum_i batch_strides[i] * b_i + sum_j accumulate_strides[j] * s_j
//          + r * row_stride + c * col_stride].
struct GemmMatrix {
  BufferId buffer = -1;
  int64_t offset = 0;
  std::vector<int64_t> batch_strides;
  std::vector<int64_t> accumulate_strides;  // 0 for c
  int64_t row_stride = 0;
  int64_t col_stride = 0;
  bool transposed = false;
  int64_t leading = 0;
};

// The columns of a weight's panel (passes/pack_panel_weights.h): 16 f32,
// one 64-byte cache line.
inline constexpr int64_t kPanelWidth = 16;

// A matrix product node (ExternOp::kGemm) as calls of a BLAS gemm: for
// every position of the `batch` loops (outermost first), c = a * b with a
// m x k, b k x n and c m x n, summed over the positions of the `accumulate`
// loops (the first call sets c, the others add to it: a convolution's
// kernel positions, each a product over the input channels). Batch loops
// that a row-major a and c can absorb into their rows (b shared by all of
// them: a linear layer over a batch of sequences) are folded into m.
struct Gemm {
  DType dtype = DType::kF32;
  std::vector<int64_t> batch;
  std::vector<int64_t> accumulate;
  int64_t m = 0, n = 0, k = 0;
  GemmMatrix a, b, c;
};

// The calls that compute `node`, or nullopt when `node` is not a product
// that gemm calls can compute: its body must be two direct loads (a's at
// (m, k), b's at (k, n)) and their product, summed over its reduction
// loops, the last k and any others accumulation loops; its pointwise loops
// batch loops, then m, then n: one loop, or several that b and c step
// through as one (a row-major [rows, cols] of each); f32 or f64; every
// index affine, each matrix unit-stride along its rows or its columns, c
// along its rows; every extent and leading dimension within a BLAS int.
// Matching ignores node.extern_op.
std::optional<Gemm> MatchGemm(const ComputeNode& node);

// The product `kernel` computes, when it is a lone ExternOp::kGemm node
// that gemm calls can compute, which the backends call instead of
// printing loops.
std::optional<Gemm> KernelGemm(const LoopProgram& program, const Kernel& kernel);

}  // namespace loom

#endif  // LOOM_IR_GEMM_H_
