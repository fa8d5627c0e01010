#include "scheduler/chain_gemms.h"

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "ir/gemm_chain.h"
#include "scheduler/fused_loops_pass.h"

namespace loom {
namespace {

LOOM_REGISTER_PASS("chain-gemms", [] {
  return absl::StatusOr<std::unique_ptr<Pass>>(
      std::make_unique<FusedLoopsPass>(&ChainGemms, /*before_planning=*/true));
});

}  // namespace

bool ChainGemms(LoopProgram& program, Schedule& schedule) {
  bool changed = false;
  const absl::Span<Kernel> kernels = absl::MakeSpan(schedule.kernels);
  for (size_t k = 0; k + 3 <= kernels.size(); ++k) {
    const std::optional<GemmChain> chain = MatchGemmChain(program, kernels.subspan(k, 3));
    if (!chain) continue;
    const Gemm& first = chain->first;
    const int64_t rows = NumElements(first.batch) * first.m;
    if (first.k > kMaxChainedDepth || NumBytes(first.dtype, {rows, first.n}) < kMinChainedBytes) {
      continue;
    }
    kernels[k].chain_length = 3;
    changed = true;
    k += 2;
  }
  return changed;
}

}  // namespace loom
