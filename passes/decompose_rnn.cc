#include "passes/decomposition.h"

namespace loom {

absl::Span<const Decomposition> RnnDecompositions() { return {}; }

}  // namespace loom
