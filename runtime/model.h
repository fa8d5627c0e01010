#ifndef LOOM_RUNTIME_MODEL_H_
#define LOOM_RUNTIME_MODEL_H_

// A compiled model loaded from its artifact (`loom compile --out_dir=D`
// writes D/model.loom) and run from the caller's own program: no model file,
// no compiler, none of loom's passes (docs/deploying.md).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/dtype.h"
#include "runtime/artifact.pb.h"
#include "runtime/native_library.h"

namespace loom {

// The format of the artifacts this runtime reads and loom writes, and that
// of a model compiled for every shape within its dims' bounds
// (Artifact.dynamic_shapes, compiler/dynamic_model.h), which Model::Load
// refuses.
inline constexpr int kArtifactFormatVersion = 3;
inline constexpr int kDynamicArtifactFormatVersion = 4;

// An input or output of a model: its name, element type and shape.
struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  int64_t elements() const;
  int64_t bytes() const;
};

// The caller's tensors: memory the caller owns, described so that Run can
// check it against the model (the name, the type and the shape must match).
// An output's memory is written in place when it is 64-byte aligned (the
// kernels' streaming stores need that), else through the context's own.
struct InputTensor {
  absl::string_view name;
  DType dtype;
  absl::Span<const int64_t> shape;
  const void* data;
};
struct OutputTensor {
  absl::string_view name;
  DType dtype;
  absl::Span<const int64_t> shape;
  void* data;
};

// The artifact at `path` (a file Model::Serialize wrote), of either
// format. A missing, truncated or corrupt file, or another format version,
// is an error naming the file and the cause.
absl::StatusOr<runtime::proto::Artifact> ReadArtifact(const std::string& path);

class Model {
 public:
  // A kernel of the launch table: the addresses of its arguments.
  using KernelFunction = void (*)(void* const*);

  // Reads and loads the artifact at `path`. A missing, truncated or corrupt
  // file, another format version, or kernels built for a CPU this one is
  // not, is an error naming the file and the cause.
  static absl::StatusOr<Model> Load(const std::string& path);
  // The artifact as its file holds it (Load's input; format 4 where it has
  // dynamic_shapes).
  static std::string Serialize(const runtime::proto::Artifact& artifact);
  // Loads an artifact already in memory (its kernels from shared_object).
  static absl::StatusOr<Model> FromArtifact(const runtime::proto::Artifact& artifact);
  // FromArtifact of the artifact ReadArtifact read from `path`, its errors
  // naming the file.
  static absl::StatusOr<Model> FromArtifactFile(const std::string& path,
                                                const runtime::proto::Artifact& artifact);
  // Binds an artifact whose kernels `library` already holds (its
  // shared_object may then be empty).
  static absl::StatusOr<Model> Bind(NativeLibrary library,
                                    const runtime::proto::Artifact& artifact);
  // Bind, reading the data of each WEIGHT buffer that holds none in place
  // at weights[b] (b: the buffer's index), which must outlive the model: a
  // compile that runs what it compiled copies no weights.
  static absl::StatusOr<Model> Bind(NativeLibrary library, const runtime::proto::Artifact& artifact,
                                    absl::Span<const void* const> weights);
  // Binds an artifact whose kernels are linked into the program, in the
  // order of artifact.functions (loom_cc_library's generated code).
  static absl::StatusOr<Model> BindFunctions(absl::Span<const KernelFunction> functions,
                                             const runtime::proto::Artifact& artifact);

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::string& name() const;
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // How many kernel launches a Run makes.
  int launches() const;
  // What launch `l` (0 <= l < launches()) calls: its kernel function's
  // symbol, and its label (Launch.label: the compute nodes it runs; empty
  // in older artifacts).
  const std::string& launch_function(int l) const;
  const std::string& launch_label(int l) const;

  // Runs the model on every input, each named once, in any order, and
  // writes the named outputs into the caller's memory (outputs not named are
  // computed and dropped). Safe to call from several threads at once: each
  // call takes an execution context (temporaries) from a pool, and
  // allocates only when more calls run at once than ever before. A missing,
  // unknown or repeated name, another type or shape, or a null pointer is an
  // InvalidArgumentError naming the tensor; nothing runs then. An index
  // input holding an index out of range (a gather's or a scatter's) is an
  // InvalidArgumentError naming the node and the index, after the run,
  // whose outputs are then unspecified (the kernels never read or write
  // out of bounds: they go on with a safe index).
  absl::Status Run(absl::Span<const InputTensor> inputs,
                   absl::Span<const OutputTensor> outputs) const;

  // An execution context of its own, for one thread at a time, whose
  // outputs stay in its own memory (64-byte aligned) until its next Run.
  class Session {
   public:
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    ~Session();
    absl::Status Run(absl::Span<const InputTensor> inputs);
    // Run, adding each launch's wall time in seconds to launch_seconds[l]
    // (which must hold launches() of them): a profile. Reading the clock
    // around every launch costs tens of nanoseconds each.
    absl::Status Run(absl::Span<const InputTensor> inputs, absl::Span<double> launch_seconds);
    // Output `i` (in the order of Model::outputs()) of the last Run.
    const void* output(size_t i) const;

   private:
    friend class Model;
    struct State;
    explicit Session(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
  };
  Session NewSession() const;

 private:
  struct Shared;
  class Context;
  struct Pool;
  Model(std::shared_ptr<const Shared> shared);
  static absl::StatusOr<Model> Assemble(std::vector<KernelFunction> functions,
                                        std::optional<NativeLibrary> library,
                                        const runtime::proto::Artifact& artifact,
                                        absl::Span<const void* const> weights = {});

  std::shared_ptr<const Shared> shared_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace loom

#endif  // LOOM_RUNTIME_MODEL_H_
