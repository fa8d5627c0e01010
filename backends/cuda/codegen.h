#ifndef LOOM_BACKENDS_CUDA_CODEGEN_H_
#define LOOM_BACKENDS_CUDA_CODEGEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/cuda_options.pb.h"
#include "ir/gemm.h"
#include "ir/loop_ir.h"
#include "ir/module.h"
#include "ir/schedule.h"

namespace loom::cuda {

// Prints one CUDA C++ translation unit for `schedule`: one
// `extern "C" __global__` function per distinct kernel body, taking its
// arguments as typed device pointers (p0, p1, ... in the order of the launch
// table's arguments), and the launch table that calls them in order.
// Kernels that differ only in the buffers and offsets they touch share one
// function. The text compiles with NVRTC and with nvcc. Output is
// deterministic.
//
// How a kernel maps onto the GPU: each iteration of the kernel's outer loops
// (all pointwise loops of a kernel with one member) is run by a team of
// threads, one thread, a warp or a block, chosen by the work inside one
// iteration. The team shares each member's inner pointwise loop (a
// team-stride loop) and reduces cooperatively (warp shuffles, then shared
// memory), every thread receiving the result; a member with inner loops and
// a reduction gives each thread whole reductions. Internal buffers of one
// element per outer iteration live in registers, larger ones in shared
// memory (such kernels use one block per iteration). Barriers separate
// members that touch the same memory.
//
// A matrix product (a kernel that is one ExternOp::kGemm node) is no
// kernel: its launch is a library call (LaunchTable::gemms) that the
// runtime makes with cuBLAS (CublasCalls).
absl::StatusOr<GeneratedSource> EmitCuda(const LoopProgram& program, const Schedule& schedule,
                                         const proto::CudaOptions& options);

// How a function is launched: blocks needed to cover its outer iterations
// (the runtime may launch fewer: the kernels loop over them), threads per
// block and bytes of dynamic shared memory. The emitted source holds these
// as `extern "C" { __device__ long long <function>_shape[3]; }`, so a compiled
// module describes itself.
struct LaunchShape {
  int64_t blocks = 1;
  int64_t threads = 1;
  int64_t shared_bytes = 0;
};
std::string LaunchShapeSymbol(const std::string& function);

// One cublas<t>gemmStridedBatched call, in cuBLAS's column-major terms: for
// each of `batch_count` positions p, c + p * stride_c = op(a + p * stride_a)
// * op(b + p * stride_b), op(a) m x k, op(b) k x n, c m x n; op transposes
// where `transpose_*` (CUBLAS_OP_T). Pointers are buffers at element
// offsets.
struct CublasCall {
  DType dtype = DType::kF32;
  bool transpose_a = false, transpose_b = false;
  int m = 0, n = 0, k = 0;
  BufferRef a, b, c;
  int lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int batch_count = 1;
  bool accumulate = false;  // beta 1: adds to c (else beta 0: sets it)
};

// The calls that compute `gemm` (row-major, ir/gemm.h): its row-major
// c = a b is the column-major c^T = b^T a^T, so cuBLAS's a is the gemm's b,
// m and n swap, and a matrix stored column-major (GemmMatrix::transposed) is
// passed transposed. The innermost batch loop, merged with those outside it
// that step evenly, is cuBLAS's batch; each position of the other batch
// loops is a call of its own, and within it each position of the
// accumulation loops (all but the first adding to c).
std::vector<CublasCall> CublasCalls(const Gemm& gemm);

}  // namespace loom::cuda

#endif  // LOOM_BACKENDS_CUDA_CODEGEN_H_
