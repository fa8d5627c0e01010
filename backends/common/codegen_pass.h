#ifndef LOOM_BACKENDS_COMMON_CODEGEN_PASS_H_
#define LOOM_BACKENDS_COMMON_CODEGEN_PASS_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "ir/loop_ir.h"
#include "ir/module.h"
#include "ir/pipeline.pb.h"
#include "passes/pass.h"

namespace loom {

// What a backend emits for a module's loop program and schedule (EmitCpp,
// EmitCuda, with their options bound).
using EmitSourceFn =
    std::function<absl::StatusOr<GeneratedSource>(const LoopProgram&, const Schedule&)>;

// A codegen pass for `target`: it runs on a memory-planned schedule and
// leaves emitted source (checked when the pipeline loads), sets
// module.source to what `emit` returns, and without a schedule fails with
// an error that names the pass.
std::unique_ptr<Pass> MakeCodegenPass(proto::Target target, EmitSourceFn emit);

}  // namespace loom

#endif  // LOOM_BACKENDS_COMMON_CODEGEN_PASS_H_
