#ifndef LOOM_PASSES_PAD_GEMM_WEIGHTS_H_
#define LOOM_PASSES_PAD_GEMM_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "pad-gemm-weights": a 2-D f32 weight [k, n] that only matrix products
// of at least kDefaultGemmMinRows rows read, each as its second operand,
// with n a multiple of kSlowRowMultiple and at least 2 of those, is stored
// with kWeightRowPadding more elements at the end of each row, and the
// products read it through a slice of its first n columns (a view: no
// copy at run time). Their GEMM calls then see a leading dimension of
// n + kWeightRowPadding instead of one whose rows lie a multiple of 2 KiB
// apart, where oneDNN 2.6's sgemm loses up to a third of its speed.
// Measured on two threads of a 5th-generation Xeon (AVX-512), dnnl_sgemm
// with b's leading dimension n against n + 16, medians of 15 alternating
// rounds, GFLOP/s (docs/matrix-products.md):
//   [49,768]x[768,3072]  140 vs 211     [64,768]x[768,2048]  194 vs 309
//   [49,1024]x[1024,1024] 203 vs 271    [196,384]x[384,1536] 195 vs 226
//   [64,768]x[768,3072] on one thread   77 vs 116
// and held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2) 67-111 vs 82-124, ahead of
// OpenBLAS's Haswell kernels (69-107) on every shape. With n = 512 or
// 768, level. The padding is never read.
class PadGemmWeightsPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

inline constexpr int64_t kSlowRowMultiple = 512;
inline constexpr int64_t kWeightRowPadding = 16;  // one 64-byte cache line of f32

}  // namespace loom

#endif  // LOOM_PASSES_PAD_GEMM_WEIGHTS_H_
