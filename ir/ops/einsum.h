#ifndef LOOM_IR_OPS_EINSUM_H_
#define LOOM_IR_OPS_EINSUM_H_

// einsum(x0, x1, ...) with an `equation` (string, required) in numpy's and
// ONNX's notation: comma-separated input terms, each a letter (a-z, A-Z)
// per dim, "..." standing for any number of leading, trailing or middle
// dims (aligned from the right across operands, broadcasting sizes of 1),
// then optionally "->" and the output term. Without "->" the output is the
// "..." dims followed by the letters that occur once, in alphabetical
// (ASCII) order. A letter repeated within a term takes that operand's
// diagonal; a letter not in the output is summed over. Sizes of a letter
// must agree across operands, or be 1 (broadcast); within one term they
// must agree. Read and checked here for the op (einsum.cc) and its
// decomposition (passes/decompose_einsum.cc).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/dtype.h"

namespace loom {

struct EinsumSpec {
  // Per operand, a label per dim; labels number the distinct letters and
  // "..." dims of the equation from 0.
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  // Per label, its size (the broadcast of its sizes in the operands).
  std::vector<int64_t> sizes;
};

absl::StatusOr<EinsumSpec> ParseEinsum(const std::string& equation, absl::Span<const Shape> shapes);

}  // namespace loom

#endif  // LOOM_IR_OPS_EINSUM_H_
