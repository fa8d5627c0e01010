#ifndef LOOM_PASSES_PACK_PANEL_WEIGHTS_H_
#define LOOM_PASSES_PACK_PANEL_WEIGHTS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/gemm.h"
#include "ir/module.h"
#include "passes/pass.h"

namespace loom {

// "pack-panel-weights": a 2-D f32 weight [k, n] that only matrix products
// of few rows read (kDefaultGemmMinRows to kPanelMaxRows: a transformer's
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

inline constexpr int64_t kPanelMaxRows = 16;
// Smaller weights stay in the caches between runs: the library's GEMM is
// as fast on them.
inline constexpr int64_t kPanelMinElements = int64_t{1} << 16;

}  // namespace loom

#endif  // LOOM_PASSES_PACK_PANEL_WEIGHTS_H_
