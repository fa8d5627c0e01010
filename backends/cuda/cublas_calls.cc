#include <cstdint>
#include <limits>
#include <vector>

#include "backends/cuda/codegen.h"

namespace loom::cuda {
std::vector<CublasCall> CublasCalls(const Gemm& gemm) {
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  std::vector<int64_t> batch = gemm.batch;
  // In cuBLAS's order: a, b, c.
  std::vector<int64_t> strides[3] = {gemm.b.batch_strides, gemm.a.batch_strides,
                                     gemm.c.batch_strides};
  // A loop merges into the one inside it when one step of it is a whole
  // run of the inner one in every matrix ([b, h] batches of a contiguous
  // [b, h, m, k]).
  while (batch.size() >= 2) {
    const size_t outer = batch.size() - 2, inner = outer + 1;
    bool even = SaturatingMul(batch[outer], batch[inner]) <= kMaxInt;
    for (const std::vector<int64_t>& s : strides) {
      even &= s[outer] == SaturatingMul(s[inner], batch[inner]);
    }
    if (!even) break;
    batch[inner] = SaturatingMul(batch[inner], batch[outer]);
    batch.erase(batch.begin() + outer);
    for (std::vector<int64_t>& s : strides) s.erase(s.begin() + outer);
  }
  CublasCall call;
  call.dtype = gemm.dtype;
  call.transpose_a = gemm.b.transposed;
  call.transpose_b = gemm.a.transposed;
  // MatchGemm keeps extents and leading dimensions within an int.
  call.m = static_cast<int>(gemm.n);
  call.n = static_cast<int>(gemm.m);
  call.k = static_cast<int>(gemm.k);
  call.a = BufferRef{gemm.b.buffer, gemm.b.offset};
  call.b = BufferRef{gemm.a.buffer, gemm.a.offset};
  call.c = BufferRef{gemm.c.buffer, gemm.c.offset};
  call.lda = static_cast<int>(gemm.b.leading);
  call.ldb = static_cast<int>(gemm.a.leading);
  call.ldc = static_cast<int>(gemm.c.leading);
  if (!batch.empty() && batch.back() <= kMaxInt) {
    call.batch_count = static_cast<int>(batch.back());
    call.stride_a = strides[0].back();
    call.stride_b = strides[1].back();
    call.stride_c = strides[2].back();
    batch.pop_back();
    for (std::vector<int64_t>& s : strides) s.pop_back();
  }
  // Each position of the batch loops left, then of the accumulation
  // loops, is a call. (The accumulation loops do not move c.)
  batch.insert(batch.end(), gemm.accumulate.begin(), gemm.accumulate.end());
  strides[0].insert(strides[0].end(), gemm.b.accumulate_strides.begin(),
                    gemm.b.accumulate_strides.end());
  strides[1].insert(strides[1].end(), gemm.a.accumulate_strides.begin(),
                    gemm.a.accumulate_strides.end());
  strides[2].resize(batch.size(), 0);
  const int64_t accumulations = NumElements(gemm.accumulate);
  std::vector<CublasCall> calls;
  for (int64_t p = 0, positions = NumElements(batch); p < positions; ++p) {
    CublasCall& at = calls.emplace_back(call);
    at.accumulate = p % accumulations != 0;
    int64_t rest = p;
    for (size_t loop = batch.size(); loop-- > 0;) {
      const int64_t x = rest % batch[loop];
      rest /= batch[loop];
      at.a.offset += x * strides[0][loop];
      at.b.offset += x * strides[1][loop];
      at.c.offset += x * strides[2][loop];
    }
  }
  return calls;
}

}  // namespace loom::cuda
