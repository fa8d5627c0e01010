#ifndef LOOM_BACKENDS_CUDA_PRELUDE_H_
#define LOOM_BACKENDS_CUDA_PRELUDE_H_

namespace loom::cuda {

// The CUDA text around the kernels of a translation unit: the head every
// unit starts with, and the helpers only some kernels call.

extern const char kPrelude[];
// The qualifier of the helpers a unit defines (cscalar::HelperText).
extern const char kQualifier[];
// loom_index_error, for loom_check_index.
extern const char kIndexErrorRecorder[];
// loom_warp_reduce and loom_block_reduce, for team reductions.
extern const char kReductionHelpers[];
// loom_welford and its combine, for variances.
extern const char kWelfordHelpers[];

}  // namespace loom::cuda

#endif  // LOOM_BACKENDS_CUDA_PRELUDE_H_
