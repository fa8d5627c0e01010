#ifndef LOOM_IR_GEMM_CHAIN_H_
#define LOOM_IR_GEMM_CHAIN_H_

#include <optional>

#include "absl/types/span.h"
#include "ir/gemm.h"
#include "ir/loop_ir.h"
#include "ir/schedule.h"

namespace loom {

// Three kernels in a row that may run as one stream of tasks, each a
// block of rows of one batch position: a product, a kernel that reads it
// a row at a time, and a product whose first operand is that kernel's
// output, row for row. Attention is the case it is for: scores = q * k^T,
// a softmax (with any scale, mask or bias) over each row of scores, then
// probabilities * v. Run apart, the scores of every head and query go to
// memory and come back twice (Whisper-tiny's encoder: 6 x 1500 x 1500
// floats, 54 MB, a layer); run as a chain, each block of rows is made,
// normalised and used while it is in the cache.
struct GemmChain {
  Gemm first;         // its batch positions' rows: the middle kernel's row loops
  Gemm second;        // the same batch and rows; its a, what the middle writes
  int row_loops = 0;  // the middle kernel's first outer loops, row-major
};

// The chain `kernels` (three) make, or nullopt. They make one when each
// task needs nothing that another writes: two f32 products (KernelGemm)
// with the same batch loops and rows and no accumulation loops; between
// them a kernel of loops whose first outer loops, row-major, run through
// those rows, that reads the first product's result only in the row of
// its outer iteration and writes the second product's a only in that row
// (affine indexes; both matrices row-major, their rows dense); no buffer
// that a stage writes is read by the first product or is the second's b;
// the second product's result is touched by no other stage; and no other
// buffer the middle kernel writes is read by a product. Buffers are told
// apart by id: a chain needs a memory plan that keeps every buffer its
// kernels touch live through all three (Kernel::chain_length).
std::optional<GemmChain> MatchGemmChain(const LoopProgram& program,
                                        absl::Span<const Kernel> kernels);

}  // namespace loom

#endif  // LOOM_IR_GEMM_CHAIN_H_
