#ifndef LOOM_BACKENDS_CPP_CODEGEN_H_
#define LOOM_BACKENDS_CPP_CODEGEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/module.h"
#include "ir/pipeline.pb.h"
#include "ir/schedule.h"

namespace loom::cpp {

// The function every emitted translation unit exports:
//   extern "C" void loom_run(void* const* buffers);
// with buffers[i] the storage of LoopProgram buffer i.
inline constexpr char kEntryName[] = "loom_run";

// Prints one C++ translation unit for `schedule`: a function per distinct
// kernel body (kernels that differ only in the buffers they touch share
// one) and the entry that calls them in order. Output is deterministic.
GeneratedSource EmitCpp(const LoopProgram& program, const Schedule& schedule,
                        const proto::CppOptions& options);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_CODEGEN_H_
