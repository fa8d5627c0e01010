#ifndef LOOM_PASSES_PACK_PANEL_WEIGHTS_H_
#define LOOM_PASSES_PACK_PANEL_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/gemm.h"
#include "ir/module.h"
#include "passes/lower.h"
#include "passes/pass.h"

namespace loom {

// "pack-panel-weights": a 2-D f32 weight [k, n] that only matrix products
// of few rows read (kDefaultGemmMinRows to PanelMaxRows(): a transformer's
// linear layers over a short sequence), each as its second operand, with n
// a multiple of kPanelWidth and at least kPanelMinElements elements, is
// stored as panels of kPanelWidth of its columns, [n / 16, k, 16] (panel q
// holds columns 16q to 16q + 15, row by row), and each product
// x [..., k] @ w becomes [rows, k] @ panels -> [n / 16, rows, 16], viewed
// back as [..., n] (a transpose and reshapes: no copy at run time). Such a
// product reads its weight once, and a weight is most of what it moves; as
// stored, the GEMM library walks w's rows in strides of n, while a panel
// is one run of memory, so the C++ backend computes the batch of panel
// products with loom_panel_gemm (prelude), which streams each panel once
// for all the rows (docs/matrix-products.md, Products of few rows).
class PackPanelWeightsPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Module& module) override;
  StageRule stages() const override { return StageRule::From(Stage::kGraph, Stage::kGraph); }
};

// The most rows of a product that reads panels: 32 where the CPU that
// compiles (which the kernels are for, unless a pipeline names another
// `march`) has AVX-512, else 8. BERT-base's products on two threads of a
// Zen 4 (loom run, 3 alternating rounds, against the library's GEMM):
// with AVX-512 faster up to 32 rows (sequence 32: 33.9 -> 29.4 ms), level
// at 48, slower at 64; held to AVX2 faster at 8 (21.2 -> 17.1) but slower
// at 16 and 32 (24.5 -> 29.5, 39.8 -> 46.5), where the sums of a pair of
// panels fill the registers at two rows.
int64_t PanelMaxRows();
// Smaller weights stay in the caches between runs: the library's GEMM is
// as fast on them, and products of so few rows are loops (lower.h).
inline constexpr int64_t kPanelMinElements = kSmallOperandElements;

}  // namespace loom

#endif  // LOOM_PASSES_PACK_PANEL_WEIGHTS_H_
