#ifndef LOOM_BACKENDS_CPP_ARTIFACT_H_
#define LOOM_BACKENDS_CPP_ARTIFACT_H_

#include <string>

#include "absl/status/statusor.h"
#include "backends/cpp/runtime.h"
#include "ir/module.h"
#include "runtime/artifact.pb.h"

namespace loom::cpp {

// The kernels of a module through codegen-cpp, compiled (through the cache
// in `cache_dir`) and loaded.
absl::StatusOr<NativeLibrary> CompileModule(const Module& module, const std::string& cache_dir);

// What loom::Model runs: the module's launch table, buffers, weights and
// interface, and the kernels `library` holds (its shared object's bytes in
// the artifact when `embed_kernels`, else none: Model::Bind then takes the
// loaded library itself).
absl::StatusOr<runtime::proto::Artifact> MakeArtifact(const Module& module,
                                                      const NativeLibrary& library,
                                                      bool embed_kernels);

// MakeArtifact with the kernels embedded, compiled through the cache in
// `cache_dir` (a hit after CppExecutable::Create), written to `path`.
absl::Status WriteArtifact(const Module& module, const std::string& cache_dir,
                           const std::string& path);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_ARTIFACT_H_
