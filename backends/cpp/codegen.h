#ifndef LOOM_BACKENDS_CPP_CODEGEN_H_
#define LOOM_BACKENDS_CPP_CODEGEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpp/cpp_options.pb.h"
#include "ir/loop_ir.h"
#include "ir/module.h"
#include "ir/schedule.h"

namespace loom::cpp {

// Prints one C++ translation unit for `schedule`: one exported function
// (`extern "C" void loom_fN(void* const* a)`, a[i] the address of its i-th
// argument) per distinct kernel body, and the launch table that calls them
// in order. Kernels that differ only in the buffers and offsets they touch
// share one function. Output is deterministic.
GeneratedSource EmitCpp(const LoopProgram& program, const Schedule& schedule,
                        const proto::CppOptions& options);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_CODEGEN_H_
