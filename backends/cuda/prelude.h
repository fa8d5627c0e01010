#ifndef LOOM_BACKENDS_CUDA_PRELUDE_H_
#define LOOM_BACKENDS_CUDA_PRELUDE_H_

#include "backends/cuda/prelude_text.h"

namespace loom::cuda {

// The CUDA text around the kernels of a translation unit: the head every
// unit starts with, and the helpers only some kernels call. prelude_text.h,
// generated from prelude.inc, declares its sections: kPrelude;
// kIndexErrorRecorder (loom_index_error, for loom_check_index);
// kReductionHelpers (loom_warp_reduce and loom_block_reduce, for team
// reductions); kWelfordHelpers (loom_welford and its combine, for
// variances).

// The qualifier of the helpers a unit defines (cscalar::HelperText).
extern const char kQualifier[];

}  // namespace loom::cuda

#endif  // LOOM_BACKENDS_CUDA_PRELUDE_H_
