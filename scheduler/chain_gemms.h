#ifndef LOOM_SCHEDULER_CHAIN_GEMMS_H_
#define LOOM_SCHEDULER_CHAIN_GEMMS_H_

#include <cstdint>

#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Below this size of the first product's result a gemm chain's kernels run
// apart: the result stays in the caches between them anyway.
inline constexpr int64_t kMinChainedBytes = int64_t{4} << 20;

// A chain pays where the first product is shallow: few multiply-adds for
// each element of its result, so that writing the result to memory and
// reading it back twice costs as much as computing it. Whisper-tiny's
// attention (64 deep) ran 74-103 ms chained against 108-120 apart; its
// feed-forward layers (384 deep: linear, GELU, linear) 62-89 ms chained
// against 50-56 apart (loom run --profile, 4 layers, a 2-core Intel Xeon).
inline constexpr int64_t kMaxChainedDepth = 128;

// Marks each gemm chain (ir/gemm_chain.h, MatchGemmChain) whose first
// product is at most kMaxChainedDepth deep and whose result has
// kMinChainedBytes or more (Kernel::chain_length: the
// `chain-gemms` pass, after fusion and before memory planning), so that
// the memory plan keeps what its kernels touch live through all three and
// a backend may run them as one stream of tasks. Returns whether it marked
// any.
bool ChainGemms(LoopProgram& program, Schedule& schedule);

}  // namespace loom

#endif  // LOOM_SCHEDULER_CHAIN_GEMMS_H_
