#ifndef LOOM_BACKENDS_CPP_AARCH64_RUN_H_
#define LOOM_BACKENDS_CPP_AARCH64_RUN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/module.h"
#include "ir/tensor.h"

namespace loom::cpp {

// For tests on an x86-64 machine: Arm's kernels run under emulation.
//
// `module`'s emitted C++ (codegen-cpp with march for aarch64, e.g.
// "armv8-a") cross-compiled by Debian's aarch64-linux-gnu-g++ and run by
// aarch64_runner.cc under user-mode QEMU (qemu-aarch64), which lays out
// the buffers as loom::Model does. `inputs` are by module.graph's inputs;
// the outputs by its outputs, named `output_names` (as MakeArtifact).
// Unimplemented where the kernels call a library (oneDNN, BLAS, the conv
// support object), which the cross toolchain lacks; a failed index check is
// the runtime's InvalidArgument error. Scratch files go under `scratch_dir`.
absl::StatusOr<std::vector<Tensor>> RunOnAarch64(const Module& module,
                                                 absl::Span<const std::string> output_names,
                                                 absl::Span<const Tensor> inputs,
                                                 const std::string& scratch_dir);

// `module`'s kernels cross-compiled for aarch64 into a shared object under
// `scratch_dir`: its path.
absl::StatusOr<std::string> CompileForAarch64(const Module& module, const std::string& scratch_dir);

// Whether `march` names an Arm target that RunOnAarch64 runs.
bool IsAarch64March(const std::string& march);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_AARCH64_RUN_H_
