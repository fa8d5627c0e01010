#ifndef LOOM_BACKENDS_CPP_EXECUTABLE_H_
#define LOOM_BACKENDS_CPP_EXECUTABLE_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cpp/native_compiler.h"
#include "ir/module.h"
#include "ir/tensor.h"
#include "runtime/model.h"

namespace loom::cpp {

// A compiled module, ready to run: its kernels compiled and loaded, bound
// as a loom::Model (weights read in place from the module's graph, which
// must outlive the executable; temporaries in one 64-byte-aligned arena at
// the memory plan's offsets) with one session whose outputs every Run
// reuses.
class CppExecutable {
 public:
  // Compiles module.source natively (through the runtime's cache) and binds
  // its buffers. The module must have been through lowering and codegen.
  // `warm_up_dnnl`: as NativeCompileOptions' (false where it will not run).
  static absl::StatusOr<CppExecutable> Create(const Module& module,
                                              std::string cache_dir = DefaultCacheDir(),
                                              bool warm_up_dnnl = true);

  // Runs the schedule on `inputs` (in the order of the graph's inputs;
  // types are checked) and returns copies of the graph's outputs.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);

  // Runs the schedule and leaves the outputs in the executable's own
  // storage, where Outputs() copies them from: nothing is allocated or
  // copied, so this is what a timing loop calls.
  // With `launch_seconds` (Model::launches() of them), each launch's wall
  // time is added to its element (Model::Session::Run's profile).
  absl::Status Execute(absl::Span<const Tensor> inputs, absl::Span<double> launch_seconds = {});
  std::vector<Tensor> Outputs() const;

  bool cache_hit() const { return cache_hit_; }
  double compile_seconds() const { return compile_seconds_; }
  // Whether the kernels are a shape template (backends/cpp/shape_templates.h).
  bool shape_template() const { return shape_template_; }
  const Model& model() const { return model_; }

 private:
  CppExecutable(Model model, bool cache_hit, double compile_seconds, bool shape_template);

  Model model_;
  Model::Session session_;
  bool cache_hit_ = false;
  double compile_seconds_ = 0;
  bool shape_template_ = false;
  std::vector<InputTensor> input_views_;  // scratch of Execute
};

}  // namespace loom::cpp

#endif  // LOOM_BACKENDS_CPP_EXECUTABLE_H_
