#ifndef LOOM_BACKENDS_CPP_PRELUDE_H_
#define LOOM_BACKENDS_CPP_PRELUDE_H_

#include <string>

#include "backends/common/c_scalar.h"
#include "backends/cpp/prelude_text.h"

namespace loom::cpp {

// The C text the kernels of a translation unit need around them: the
// head every unit starts with, and the helpers only some kernels call.
// prelude_text.h, generated from prelude.inc, declares its sections:
// kPreludeHead; kOpenMpDeclarations (the OpenMP functions the kernels
// call); kStreamHelpers (loom_stream16 and loom_stream_fence, for
// streaming stores); kIndexErrorRecorder (loom_index_error, for
// loom_check_index); the library functions that calls declare,
// kDnnlDeclaration (dnnl_sgemm), kBlisDeclaration (bli_sgemm and its switch
// LOOM_BLIS), kOpenBlasSgemmDeclaration (cblas_sgemm and its switch
// LOOM_OPENBLAS_SGEMM), kBlasDeclaration (cblas_dgemm) and
// kDnnlConvDeclarations (dnnl_conv.inc's functions); and the parts of
// VectorHelpers.

// The qualifier of the helpers a unit defines (cscalar::HelperText).
extern const char kHelperQualifier[];

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
