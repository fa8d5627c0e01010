#ifndef LOOM_BACKENDS_CPP_PRELUDE_H_
#define LOOM_BACKENDS_CPP_PRELUDE_H_

#include <string>

#include "backends/common/c_scalar.h"

namespace loom::cpp {

// The C text the kernels of a translation unit need around them: the
// head every unit starts with, and the helpers only some kernels call.

extern const char kPreludeHead[];
// The qualifier of the helpers a unit defines (cscalar::HelperText).
extern const char kHelperQualifier[];
// loom_stream16 and loom_stream_fence, for streaming stores.
extern const char kStreamHelpers[];
// loom_index_error, for loom_check_index.
extern const char kIndexErrorRecorder[];
// dnnl_sgemm and cblas_dgemm, for gemm calls.
extern const char kDnnlDeclaration[];
// bli_sgemm and its switch LOOM_BLIS, for large f32 gemm calls.
extern const char kBlisDeclaration[];
// cblas_sgemm and its switch LOOM_OPENBLAS_SGEMM, for f32 gemm calls that
// oneDNN runs slowly on AVX2.
extern const char kOpenBlasSgemmDeclaration[];
extern const char kBlasDeclaration[];
// loom_dnnl_conv_new, _run and _delete (dnnl_conv.inc), for conv calls.
extern const char kDnnlConvDeclarations[];

// The explicit vectors (loom_f32v16) and their functions, with the team
// products (loom_matvecs) when `teams`.
std::string VectorHelpers(bool teams);

// libm's functions that `calls` names, declared with their simd attribute.
std::string VectorLibmDeclarations(const cscalar::LibmCalls& calls);

// Whether `fn` for `dtype` (or any of `calls`) calls SLEEF's vector
// functions on aarch64, rather than libm once per element.
bool ArmCallsSleef(cscalar::LibmFn fn, DType dtype);
bool ArmCallsSleef(const cscalar::LibmCalls& calls);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_PRELUDE_H_
