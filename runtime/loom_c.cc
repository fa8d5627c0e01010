#include "runtime/loom_c.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "runtime/loom_c_internal.h"
#include "runtime/model.h"

namespace {

thread_local std::string last_error;
loom_c::EveryShapeLoader every_shape_loader = nullptr;

}  // namespace

void loom_c::SetEveryShapeLoader(EveryShapeLoader loader) { every_shape_loader = loader; }

loom_status loom_c::Report(const absl::Status& status) {
  last_error = std::string(status.message());
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return LOOM_OK;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      return LOOM_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return LOOM_NOT_FOUND;
    case absl::StatusCode::kFailedPrecondition:
      return LOOM_FAILED_PRECONDITION;
    default:
      return LOOM_INTERNAL;
  }
}

namespace {

using loom_c::Report;

loom_status Invalid(const std::string& message) {
  return Report(absl::InvalidArgumentError(message));
}

// loom_dtype and loom::DType list the same types in the same order.
bool ToDType(loom_dtype dtype, loom::DType& out) {
  if (dtype < LOOM_F32 || dtype > LOOM_U2) return false;
  out = static_cast<loom::DType>(dtype);
  return true;
}

loom_status Describe(const std::vector<loom::TensorInfo>& tensors, int index, const char* what,
                     const char** name, loom_dtype* dtype, int* rank, const int64_t** shape) {
  if (index < 0 || index >= static_cast<int>(tensors.size())) {
    return Invalid(
        absl::StrCat("the model has no ", what, " ", index, " (it has ", tensors.size(), ")"));
  }
  const loom::TensorInfo& info = tensors[index];
  if (name != nullptr) *name = info.name.c_str();
  if (dtype != nullptr) *dtype = static_cast<loom_dtype>(info.dtype);
  if (rank != nullptr) *rank = static_cast<int>(info.shape.size());
  if (shape != nullptr) *shape = info.shape.data();
  return LOOM_OK;
}

// The model's interface: a model compiled for every shape has -1 where a
// size is the call's.
const std::vector<loom::TensorInfo>& Inputs(const loom_model& model) {
  return model.every_shape != nullptr ? model.every_shape->inputs : model.model->inputs();
}
const std::vector<loom::TensorInfo>& Outputs(const loom_model& model) {
  return model.every_shape != nullptr ? model.every_shape->outputs : model.model->outputs();
}

// The C tensors as the C++ API's, or an error naming the bad one.
template <typename CTensor, typename Tensor>
loom_status Convert(const CTensor* given, int count, const char* what, std::vector<Tensor>& out) {
  if (count < 0 || (count > 0 && given == nullptr)) {
    return Invalid(absl::StrCat("no array of ", count, " ", what, "s"));
  }
  out.clear();
  for (int i = 0; i < count; ++i) {
    const CTensor& t = given[i];
    if (t.name == nullptr) return Invalid(absl::StrCat(what, " #", i, " has no name"));
    loom::DType dtype;
    if (!ToDType(t.dtype, dtype)) {
      return Invalid(absl::StrCat(what, " '", t.name, "' has an unknown dtype ", int{t.dtype}));
    }
    if (t.rank < 0 || (t.rank > 0 && t.shape == nullptr)) {
      return Invalid(absl::StrCat(what, " '", t.name, "' has no shape of rank ", t.rank));
    }
    out.push_back({t.name, dtype, absl::MakeConstSpan(t.shape, t.rank), t.data});
  }
  return LOOM_OK;
}

}  // namespace

extern "C" {

const char* loom_last_error(void) { return last_error.c_str(); }

loom_status loom_model_load(const char* path, loom_model** model) {
  if (path == nullptr || model == nullptr) return Invalid("loom_model_load: a null argument");
  absl::StatusOr<loom::runtime::proto::Artifact> artifact = loom::ReadArtifact(path);
  if (!artifact.ok()) return Report(artifact.status());
  if (artifact->has_dynamic_shapes()) {
    if (every_shape_loader == nullptr) {
      return Invalid(absl::StrCat(path,
                                  ": a model compiled for every shape within its dims' bounds "
                                  "needs libloom's compiler, which this program lacks"));
    }
    absl::StatusOr<std::unique_ptr<loom_model>> loaded = every_shape_loader(path, *artifact);
    if (!loaded.ok()) return Report(loaded.status());
    *model = loaded->release();
    return LOOM_OK;
  }
  absl::StatusOr<loom::Model> loaded = loom::Model::FromArtifactFile(path, *artifact);
  if (!loaded.ok()) return Report(loaded.status());
  *model = new loom_model{std::make_shared<const loom::Model>(*std::move(loaded))};
  return LOOM_OK;
}

void loom_model_free(loom_model* model) { delete model; }

int loom_model_num_inputs(const loom_model* model) {
  return model == nullptr ? 0 : static_cast<int>(Inputs(*model).size());
}

int loom_model_num_outputs(const loom_model* model) {
  return model == nullptr ? 0 : static_cast<int>(Outputs(*model).size());
}

int loom_model_num_launches(const loom_model* model) {
  return model == nullptr || model->model == nullptr ? 0 : model->model->launches();
}

loom_status loom_model_input(const loom_model* model, int index, const char** name,
                             loom_dtype* dtype, int* rank, const int64_t** shape) {
  if (model == nullptr) return Invalid("loom_model_input: no model");
  return Describe(Inputs(*model), index, "input", name, dtype, rank, shape);
}

loom_status loom_model_output(const loom_model* model, int index, const char** name,
                              loom_dtype* dtype, int* rank, const int64_t** shape) {
  if (model == nullptr) return Invalid("loom_model_output: no model");
  return Describe(Outputs(*model), index, "output", name, dtype, rank, shape);
}

loom_status loom_model_input_dim_name(const loom_model* model, int index, int axis,
                                      const char** name) {
  if (model == nullptr || name == nullptr) {
    return Invalid("loom_model_input_dim_name: a null argument");
  }
  if (loom_status s = Describe(Inputs(*model), index, "input", nullptr, nullptr, nullptr, nullptr);
      s != LOOM_OK) {
    return s;
  }
  const loom::TensorInfo& input = Inputs(*model)[index];
  if (axis < 0 || axis >= static_cast<int>(input.shape.size())) {
    return Invalid(absl::StrCat("input '", input.name, "' has no dim ", axis, " (its rank is ",
                                input.shape.size(), ")"));
  }
  static const std::string kNone;
  *name = model->every_shape == nullptr ? kNone.c_str()
                                        : model->every_shape->input_dim_names[index][axis].c_str();
  return LOOM_OK;
}

loom_status loom_model_bind(const loom_model* model, const loom_input* inputs, int num_inputs,
                            loom_model** bound) {
  if (model == nullptr || bound == nullptr) return Invalid("loom_model_bind: a null argument");
  if (model->every_shape == nullptr) {
    *bound = new loom_model{model->model, model->reference};
    return LOOM_OK;
  }
  std::vector<loom::InputTensor> in;
  if (loom_status s = Convert(inputs, num_inputs, "input", in); s != LOOM_OK) return s;
  absl::StatusOr<std::shared_ptr<const loom::Model>> at_shapes = model->every_shape->bind(in);
  if (!at_shapes.ok()) return Report(at_shapes.status());
  *bound = new loom_model{*std::move(at_shapes)};
  return LOOM_OK;
}

loom_status loom_model_run(const loom_model* model, const loom_input* inputs, int num_inputs,
                           const loom_output* outputs, int num_outputs) {
  if (model == nullptr) return Invalid("loom_model_run: no model");
  // Per thread, so that a steady caller allocates nothing.
  thread_local std::vector<loom::InputTensor> in;
  thread_local std::vector<loom::OutputTensor> out;
  if (loom_status s = Convert(inputs, num_inputs, "input", in); s != LOOM_OK) return s;
  if (loom_status s = Convert(outputs, num_outputs, "output", out); s != LOOM_OK) return s;
  if (model->every_shape == nullptr) return Report(model->model->Run(in, out));
  absl::StatusOr<std::shared_ptr<const loom::Model>> at_shapes = model->every_shape->bind(in);
  if (!at_shapes.ok()) return Report(at_shapes.status());
  return Report((*at_shapes)->Run(in, out));
}

loom_status loom_model_reference_run(const loom_model* model, const loom_input* inputs,
                                     int num_inputs, const loom_output* outputs, int num_outputs) {
  if (model == nullptr) return Invalid("loom_model_reference_run: no model");
  if (!model->reference) {
    return Report(absl::FailedPreconditionError(
        "the model was loaded from an artifact, which holds no reference graph: "
        "compile it (loom_model_compile) to run the reference"));
  }
  return model->reference(inputs, num_inputs, outputs, num_outputs);
}

}  // extern "C"
