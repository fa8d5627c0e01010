#include "backends/cuda/prelude.h"

namespace loom::cuda {

// Inline functions with external linkage: nvcc warns about unused static ones.
const char kQualifier[] = "__device__ __forceinline__";

}  // namespace loom::cuda
