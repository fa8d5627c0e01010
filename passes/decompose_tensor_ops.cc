#include "passes/decomposition.h"

namespace loom {

absl::Span<const Decomposition> TensorOpDecompositions() { return {}; }

}  // namespace loom
