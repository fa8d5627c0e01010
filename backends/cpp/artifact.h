#ifndef LOOM_BACKENDS_CPP_ARTIFACT_H_
#define LOOM_BACKENDS_CPP_ARTIFACT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cpp/native_compiler.h"
#include "ir/module.h"
#include "runtime/artifact.pb.h"

namespace loom::cpp {

// How codegen-cpp's `source` compiles natively (its flags and the
// libraries it links), through the cache in `cache_dir`.
NativeCompileOptions NativeOptions(const GeneratedSource& source, const std::string& cache_dir);

// The kernels of a module through codegen-cpp, compiled (through the cache
// in `cache_dir`) and loaded; `warm_up_dnnl` as NativeCompileOptions'.
absl::StatusOr<CompiledLibrary> CompileModule(const Module& module, const std::string& cache_dir,
                                              bool warm_up_dnnl = true);

// What loom::Model runs: the module's launch table, buffers, weights and
// interface, with the kernels' shared object `shared_object` (empty: none,
// for Model::Bind and Model::BindFunctions, which take the kernels
// themselves). The outputs are named `output_names` (the graph's as
// imported: passes that replace an output value rename it), or the module's
// graph's when empty.
// With `weight_data` false, the WEIGHT buffers hold no data: Model::Bind
// then reads them in place (WeightData).
absl::StatusOr<runtime::proto::Artifact> MakeArtifact(
    const Module& module, std::string shared_object,
    absl::Span<const std::string> output_names = {}, bool weight_data = true);

// The data of each of the module's buffers that is a weight, by buffer
// (null for the others): Model::Bind's `weights`, which then read the
// module's graph's initializers in place.
std::vector<const void*> WeightData(const Module& module);

// MakeArtifact with the kernels embedded, compiled through the cache in
// `cache_dir` (a hit after CppExecutable::Create), written to `path`.
absl::Status WriteArtifact(const Module& module, absl::Span<const std::string> output_names,
                           const std::string& cache_dir, const std::string& path);

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_ARTIFACT_H_
