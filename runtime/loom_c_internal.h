#ifndef LOOM_RUNTIME_LOOM_C_INTERNAL_H_
#define LOOM_RUNTIME_LOOM_C_INTERNAL_H_

// What the C interface's two halves (loom_c.cc, the runtime's; and
// loom_c_compile.cc, the compiler's) share.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/artifact.pb.h"
#include "runtime/loom_c.h"
#include "runtime/model.h"

struct loom_model {
  // The model; null for one compiled for every shape (every_shape).
  std::shared_ptr<const loom::Model> model;
  // The reference interpreter on the model as imported (compiled models
  // only; loom_model_reference_run).
  std::function<loom_status(const loom_input*, int, const loom_output*, int)> reference;
  // A model compiled for every shape within its dims' bounds: its interface
  // (-1 where a size is the call's) with its dims' names, and what binds it
  // to the shapes of a call's inputs.
  struct EveryShape {
    std::vector<loom::TensorInfo> inputs, outputs;
    std::vector<std::vector<std::string>> input_dim_names, output_dim_names;
    std::function<absl::StatusOr<std::shared_ptr<const loom::Model>>(
        absl::Span<const loom::InputTensor>)>
        bind;
  };
  std::unique_ptr<EveryShape> every_shape;
};

namespace loom_c {

// `status` as a loom_status, its message kept for loom_last_error().
loom_status Report(const absl::Status& status);

// How loom_model_load loads an artifact compiled for every shape (one with
// dynamic_shapes), read from `path`: libloom's compiler half sets it (such
// a model compiles its front end at each new shape); without it such an
// artifact is an error.
using EveryShapeLoader = absl::StatusOr<std::unique_ptr<loom_model>> (*)(
    const std::string& path, const loom::runtime::proto::Artifact& artifact);
void SetEveryShapeLoader(EveryShapeLoader loader);

}  // namespace loom_c

#endif  // LOOM_RUNTIME_LOOM_C_INTERNAL_H_
