#ifndef LOOM_COMPILER_DYNAMIC_MODEL_H_
#define LOOM_COMPILER_DYNAMIC_MODEL_H_

// A model compiled for every shape within its named dims' bounds, as one
// artifact: `loom compile --model=M.onnx --dims=batch=1..64,sequence=1..4096
// --out_dir=D` writes D/model.loom and a copy of the model beside it.
//
// The compile runs the front end at a sweep of shapes across the bounds
// (SweepShapes) and groups their kernels' sources into classes of one
// skeleton (backends/cpp/shape_templates.h): each class's kernels compile
// natively once, as a template that reads at run time the shape constants
// in which its shapes differ. A run at a shape not met before compiles the
// front end again for that shape (milliseconds: import, passes, memory
// plan, the kernels' source), finds the class its source belongs to and
// binds that class's kernels: no native compiler. A shape whose source
// belongs to no class of the artifact (a size class the sweep did not meet)
// compiles its kernels then, through the kernel cache, where a C++ compiler
// is installed; without one that is an error naming the shape.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "compiler/driver.h"
#include "ir/tensor.h"
#include "runtime/model.h"

namespace loom {

// Sizes of named dims, and their bounds, by name.
using DimSizes = std::map<std::string, int64_t>;
using NamedDimBounds = std::map<std::string, DimBounds>;

// The shapes a compile for every shape within `bounds` sweeps: each dim at
// its bounds, at every size up to 8 and at 2^k and 3 * 2^k from there (12,
// 16, 24, 32, 48, ...) between them, in every combination of the dims'
// sizes; then the NeighbourShapes of its classes.
std::vector<DimSizes> SweepShapes(const NamedDimBounds& bounds);

// The shapes next to the shape of each class of one (one more, or one
// less, in each dim that varies) that `swept` lacks; `classes` lists each
// class's shapes. A class of one shape serves that shape alone, its
// template reading nothing; one that holds a neighbour too reads the
// constants that vary with the sizes about it (mobilenet_v3_small's class
// of batch 8 then serves 9 to 11).
std::vector<DimSizes> NeighbourShapes(const std::vector<std::vector<DimSizes>>& classes,
                                      const std::vector<DimSizes>& swept,
                                      const NamedDimBounds& bounds);

// An input or output of a model compiled for every shape: -1 in `shape`
// where the size is the call's, and each dim's name where the model file
// names it ("" elsewhere).
struct DynamicTensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
};

class DynamicModel {
 public:
  // Compiles options.model (an ONNX model, or graph text with named dims)
  // for every shape of its named dims within options.dim_bounds (the dims
  // in options.dims keep their size) and writes options.out_dir/model.loom, with the model file and
  // its external data copied beside it; the report's model, pipeline,
  // frontend_seconds, native_compile_seconds, shapes and shape_classes say
  // what it did. A dim without bounds or size, or bounds with no upper
  // limit, is an InvalidArgumentError naming the dim.
  static absl::StatusOr<proto::Report> Compile(const CompileOptions& options);

  // Loads what Compile wrote. A file that is not such an artifact, or a
  // missing model file beside it, is an error naming the file.
  static absl::StatusOr<DynamicModel> Load(const std::string& path);
  // Load of the artifact read from `path`.
  static absl::StatusOr<DynamicModel> FromArtifact(const std::string& path,
                                                   const runtime::proto::Artifact& artifact);

  DynamicModel(DynamicModel&&) noexcept;
  DynamicModel& operator=(DynamicModel&&) noexcept;
  ~DynamicModel();

  const std::string& name() const;
  // The bounded dims, by name (a dim compiled for one size: MIN = MAX).
  const NamedDimBounds& bounds() const;
  const std::vector<DynamicTensorInfo>& inputs() const;
  const std::vector<DynamicTensorInfo>& outputs() const;

  // The model bound for inputs of these shapes (by input name), or for
  // these sizes of the named dims: compiled at the first call for a shape
  // and kept for the last kMaxShapes shapes. Inputs that disagree on a dim,
  // or a size outside its bounds, is an InvalidArgumentError naming the
  // input, the dim and the bound. Safe to call from several threads; the
  // shapes already kept run while another compiles.
  absl::StatusOr<std::shared_ptr<const Model>> ModelForShapes(
      const absl::flat_hash_map<std::string, Shape>& input_shapes) const;
  absl::StatusOr<std::shared_ptr<const Model>> ModelForDims(const DimSizes& dims) const;

  // Model::Run for the shapes of `inputs`.
  absl::Status Run(absl::Span<const InputTensor> inputs,
                   absl::Span<const OutputTensor> outputs) const;

  // How many shapes were compiled since Load, and how many of them needed a
  // native compile (their class was not in the artifact).
  int shapes_compiled() const;
  int native_compiles() const;

  static constexpr int kMaxShapes = 8;

 private:
  struct State;
  explicit DynamicModel(std::unique_ptr<State> state);
  absl::StatusOr<std::shared_ptr<const Model>> ModelFor(const CompileOptions& shape,
                                                        const std::string& key) const;
  // The model of one shape (`shape`'s sizes; `key` names it in errors):
  // its front end, and its class's kernels from the artifact, or compiled
  // natively (`compiled_natively`) where the artifact has no class for it.
  static absl::StatusOr<std::shared_ptr<const Model>> BindShape(const State& state,
                                                                const CompileOptions& shape,
                                                                const std::string& key,
                                                                bool& compiled_natively);

  std::unique_ptr<State> state_;
};

// CompileModel at one shape of options.model's named dims (options.dims,
// or read from options.input_shapes), for a caller that meets many shapes:
// where the kernel cache has not met its source's skeleton, the front end
// at the neighbouring shape (one more in each named dim, or one less at
// its bound) first, so that this compile builds the template that serves
// both, and the shapes beyond that share their skeleton with no compile of
// their own (cpp::MeetSkeleton).
absl::StatusOr<CompiledModel> CompileShapeOfMany(const CompileOptions& options);

// `loom run` of an artifact of either kind (RunArtifact's): one compiled
// for every shape runs at the shapes of options.inputs_dir's .npy files,
// else at `dims`.
absl::Status RunAnyArtifact(const std::string& path, const DimSizes& dims,
                            const RunModelOptions& options, proto::Report& report);

}  // namespace loom

#endif  // LOOM_COMPILER_DYNAMIC_MODEL_H_
