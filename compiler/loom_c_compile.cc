// loom_model_compile and loom_reference_*: the C interface's half that needs
// the compiler.

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/cpp/artifact.h"
#include "compiler/driver.h"
#include "compiler/dynamic_model.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/status_macros.h"
#include "runtime/loom_c.h"
#include "runtime/loom_c_internal.h"

namespace {

// The caller's tensor named `name`, or null.
template <typename CTensor>
const CTensor* Find(const CTensor* tensors, int count, const std::string& name) {
  for (int i = 0; i < count; ++i) {
    if (tensors[i].name != nullptr && name == tensors[i].name) return &tensors[i];
  }
  return nullptr;
}

// Whether the caller's tensor has `type`; the error names it otherwise.
template <typename CTensor>
absl::Status CheckType(const CTensor& tensor, const loom::TensorType& type, const char* what) {
  const bool same = static_cast<int>(tensor.dtype) == static_cast<int>(type.dtype) &&
                    tensor.rank == static_cast<int>(type.shape.size()) &&
                    (tensor.rank == 0 || std::memcmp(tensor.shape, type.shape.data(),
                                                     tensor.rank * sizeof(int64_t)) == 0);
  if (!same) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", tensor.name, "' is not the model's ", loom::TypeToString(type)));
  }
  if (tensor.data == nullptr && loom::NumElements(type.shape) > 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", tensor.name, "' has no data"));
  }
  return absl::OkStatus();
}

absl::Status Interpret(const loom::Graph& graph, const loom_input* inputs, int num_inputs,
                       const loom_output* outputs, int num_outputs) {
  std::vector<loom::Tensor> tensors;
  for (loom::ValueId id : graph.inputs()) {
    const loom::Value& value = graph.value(id);
    const loom_input* given = Find(inputs, num_inputs, value.name);
    if (given == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("the model's input '", value.name, "' is not given"));
    }
    LOOM_RETURN_IF_ERROR(CheckType(*given, value.type, "input"));
    loom::Tensor& tensor = tensors.emplace_back(value.type);
    std::memcpy(tensor.data(), given->data,
                loom::NumElements(value.type.shape) * loom::DTypeSize(value.type.dtype));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<loom::Tensor> results, loom::Interpret(graph, tensors));
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const loom::Value& value = graph.value(graph.outputs()[o]);
    const loom_output* wanted = Find(outputs, num_outputs, graph.output_name(o));
    if (wanted == nullptr) continue;
    LOOM_RETURN_IF_ERROR(CheckType(*wanted, value.type, "output"));
    std::memcpy(wanted->data, results[o].data(),
                loom::NumElements(value.type.shape) * loom::DTypeSize(value.type.dtype));
  }
  return absl::OkStatus();
}

// The options of a compile through the C interface.
loom::CompileOptions OptionsFor(const char* model_path, const char* pipeline) {
  loom::CompileOptions options;
  options.model = model_path;
  if (pipeline != nullptr) options.pipeline = pipeline;
  return options;
}

// loom_model_reference_run's model as imported: imported again from its
// file at the first reference run, not kept from the compile, which would
// hold a second copy of every weight (GPT-2's 500 MB) for a run that most
// callers never make.
class LazyReference {
 public:
  explicit LazyReference(loom::CompileOptions options) : options_(std::move(options)) {}

  absl::Status Run(const loom_input* inputs, int num_inputs, const loom_output* outputs,
                   int num_outputs) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!graph_.has_value()) {
      LOOM_ASSIGN_OR_RETURN(loom::Graph graph, loom::ImportModel(options_));
      graph_ = std::move(graph);
    }
    return Interpret(*graph_, inputs, num_inputs, outputs, num_outputs);
  }

 private:
  const loom::CompileOptions options_;
  std::mutex mutex_;
  std::optional<loom::Graph> graph_;
};

// `bounds` (num_bounds of them) into options.dim_bounds; an error names
// `function` and the bad one.
loom_status AddBounds(const loom_dim_bounds* bounds, int num_bounds, const char* function,
                      loom::CompileOptions& options) {
  for (int i = 0; i < num_bounds; ++i) {
    if (bounds[i].name == nullptr) {
      return loom_c::Report(absl::InvalidArgumentError(
          absl::StrCat(function, ": the name of bounds ", i, " is null")));
    }
    if (!options.dim_bounds.emplace(bounds[i].name, loom::DimBounds{bounds[i].min, bounds[i].max})
             .second) {
      return loom_c::Report(absl::InvalidArgumentError(
          absl::StrCat(function, ": the dim '", bounds[i].name, "' is bounded twice")));
    }
  }
  return LOOM_OK;
}

// Compiles with `options` and binds the result into *model.
// `many_shapes`: a shape of many that the caller compiles
// (loom::CompileShapeOfMany), else a model for one.
loom_status CompileAndBind(const loom::CompileOptions& options, loom_model** model,
                           bool many_shapes = false) {
  absl::StatusOr<loom::CompiledModel> compiled =
      many_shapes ? loom::CompileShapeOfMany(options) : loom::CompileModel(options);
  if (!compiled.ok()) return loom_c::Report(compiled.status());
  if (!compiled->executable.has_value()) {
    return loom_c::Report(
        absl::InvalidArgumentError("loom_model_compile: the pipeline's target is not the CPU"));
  }
  // The kernels come from the cache the compile just filled; the weights
  // are read in place from the compiled module, which the model keeps alive.
  auto owner = std::make_shared<const loom::CompiledModel>(*std::move(compiled));
  absl::StatusOr<loom::cpp::CompiledLibrary> library =
      loom::cpp::CompileModule(owner->module, loom::cpp::DefaultCacheDir());
  if (!library.ok()) return loom_c::Report(library.status());
  absl::StatusOr<loom::runtime::proto::Artifact> artifact = loom::cpp::MakeArtifact(
      owner->module, /*shared_object=*/"", owner->output_names, /*weight_data=*/false);
  if (!artifact.ok()) return loom_c::Report(artifact.status());
  absl::StatusOr<loom::Model> bound = loom::Model::Bind(std::move(library->library), *artifact,
                                                        loom::cpp::WeightData(owner->module));
  if (!bound.ok()) return loom_c::Report(bound.status());
  auto reference = std::make_shared<LazyReference>(options);
  *model = new loom_model{
      std::make_shared<const loom::Model>(*std::move(bound)),
      [owner, reference](const loom_input* inputs, int num_inputs, const loom_output* outputs,
                         int num_outputs) {
        return loom_c::Report(reference->Run(inputs, num_inputs, outputs, num_outputs));
      }};
  return LOOM_OK;
}

// The interface of a model compiled for every shape, as loom_model keeps it.
void Describe(const std::vector<loom::DynamicTensorInfo>& tensors,
              std::vector<loom::TensorInfo>& infos,
              std::vector<std::vector<std::string>>& dim_names) {
  for (const loom::DynamicTensorInfo& tensor : tensors) {
    infos.push_back({tensor.name, tensor.dtype, tensor.shape});
    dim_names.push_back(tensor.dim_names);
  }
}

// loom_model_load of an artifact compiled for every shape.
absl::StatusOr<std::unique_ptr<loom_model>> LoadEveryShape(
    const std::string& path, const loom::runtime::proto::Artifact& artifact) {
  LOOM_ASSIGN_OR_RETURN(loom::DynamicModel loaded,
                        loom::DynamicModel::FromArtifact(path, artifact));
  auto dynamic = std::make_shared<const loom::DynamicModel>(std::move(loaded));
  auto every_shape = std::make_unique<loom_model::EveryShape>();
  Describe(dynamic->inputs(), every_shape->inputs, every_shape->input_dim_names);
  Describe(dynamic->outputs(), every_shape->outputs, every_shape->output_dim_names);
  every_shape->bind = [dynamic](absl::Span<const loom::InputTensor> inputs) {
    absl::flat_hash_map<std::string, loom::Shape> shapes;
    for (const loom::InputTensor& input : inputs) {
      shapes[input.name] = loom::Shape(input.shape.begin(), input.shape.end());
    }
    return dynamic->ModelForShapes(shapes);
  };
  auto model = std::make_unique<loom_model>();
  model->every_shape = std::move(every_shape);
  return model;
}

const bool every_shape_loader_set = (loom_c::SetEveryShapeLoader(&LoadEveryShape), true);

}  // namespace

struct loom_reference {
  loom::Graph graph;
};

extern "C" loom_status loom_reference_load(const char* model_path, loom_reference** reference) {
  if (model_path == nullptr || reference == nullptr) {
    return loom_c::Report(absl::InvalidArgumentError("loom_reference_load: a null argument"));
  }
  absl::StatusOr<loom::Graph> graph = loom::ImportModel(OptionsFor(model_path, nullptr));
  if (!graph.ok()) return loom_c::Report(graph.status());
  *reference = new loom_reference{*std::move(graph)};
  return LOOM_OK;
}

extern "C" loom_status loom_reference_run(const loom_reference* reference, const loom_input* inputs,
                                          int num_inputs, const loom_output* outputs,
                                          int num_outputs) {
  if (reference == nullptr) {
    return loom_c::Report(absl::InvalidArgumentError("loom_reference_run: no reference"));
  }
  return loom_c::Report(Interpret(reference->graph, inputs, num_inputs, outputs, num_outputs));
}

extern "C" void loom_reference_free(loom_reference* reference) { delete reference; }

extern "C" loom_status loom_model_compile(const char* model_path, const char* pipeline,
                                          loom_model** model) {
  return loom_model_compile_with_dims(model_path, pipeline, nullptr, nullptr, 0, model);
}

extern "C" loom_status loom_model_compile_with_dims(const char* model_path, const char* pipeline,
                                                    const char* const* dim_names,
                                                    const int64_t* dim_sizes, int num_dims,
                                                    loom_model** model) {
  if (model_path == nullptr || model == nullptr || num_dims < 0 ||
      (num_dims > 0 && (dim_names == nullptr || dim_sizes == nullptr))) {
    return loom_c::Report(absl::InvalidArgumentError("loom_model_compile: a null argument"));
  }
  loom::CompileOptions options = OptionsFor(model_path, pipeline);
  for (int i = 0; i < num_dims; ++i) {
    if (dim_names[i] == nullptr) {
      return loom_c::Report(absl::InvalidArgumentError(
          absl::StrCat("loom_model_compile_with_dims: dim name ", i, " is null")));
    }
    if (!options.dims.emplace(dim_names[i], dim_sizes[i]).second) {
      return loom_c::Report(absl::InvalidArgumentError(absl::StrCat(
          "loom_model_compile_with_dims: the dim '", dim_names[i], "' is given twice")));
    }
  }
  return CompileAndBind(options, model);
}

extern "C" loom_status loom_model_compile_every_shape(const char* model_path, const char* pipeline,
                                                      const loom_dim_bounds* bounds, int num_bounds,
                                                      const char* out_dir, loom_model** model) {
  if (model_path == nullptr || out_dir == nullptr || model == nullptr || num_bounds < 0 ||
      (num_bounds > 0 && bounds == nullptr)) {
    return loom_c::Report(
        absl::InvalidArgumentError("loom_model_compile_every_shape: a null argument"));
  }
  loom::CompileOptions options = OptionsFor(model_path, pipeline);
  options.out_dir = out_dir;
  if (loom_status s = AddBounds(bounds, num_bounds, "loom_model_compile_every_shape", options);
      s != LOOM_OK) {
    return s;
  }
  absl::StatusOr<loom::proto::Report> compiled = loom::DynamicModel::Compile(options);
  if (!compiled.ok()) return loom_c::Report(compiled.status());
  return loom_model_load(absl::StrCat(out_dir, "/model.loom").c_str(), model);
}

extern "C" loom_status loom_model_compile_for_inputs(const char* model_path, const char* pipeline,
                                                     const loom_dim_bounds* bounds, int num_bounds,
                                                     const loom_input* inputs, int num_inputs,
                                                     loom_model** model) {
  if (model_path == nullptr || model == nullptr || num_bounds < 0 || num_inputs < 0 ||
      (num_bounds > 0 && bounds == nullptr) || (num_inputs > 0 && inputs == nullptr)) {
    return loom_c::Report(
        absl::InvalidArgumentError("loom_model_compile_for_inputs: a null argument"));
  }
  loom::CompileOptions options = OptionsFor(model_path, pipeline);
  if (loom_status s = AddBounds(bounds, num_bounds, "loom_model_compile_for_inputs", options);
      s != LOOM_OK) {
    return s;
  }
  for (int i = 0; i < num_inputs; ++i) {
    const loom_input& input = inputs[i];
    if (input.name == nullptr || input.rank < 0 || (input.rank > 0 && input.shape == nullptr)) {
      return loom_c::Report(absl::InvalidArgumentError(
          absl::StrCat("loom_model_compile_for_inputs: input ", i,
                       " has a null name or shape, or a negative rank")));
    }
    loom::Shape shape(input.shape, input.shape + input.rank);
    for (int64_t size : shape) {
      if (size < 0) {
        return loom_c::Report(absl::InvalidArgumentError(
            absl::StrCat("loom_model_compile_for_inputs: input '", input.name, "' has shape ",
                         loom::ShapeToString(shape), ", with a negative dim")));
      }
    }
    options.input_shapes[input.name] = std::move(shape);
  }
  return CompileAndBind(options, model, /*many_shapes=*/num_bounds > 0);
}
