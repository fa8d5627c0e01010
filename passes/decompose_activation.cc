#include "passes/decomposition.h"

namespace loom {

absl::Span<const Decomposition> ActivationDecompositions() { return {}; }

}  // namespace loom
