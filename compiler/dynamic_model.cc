#include "compiler/dynamic_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpp/artifact.h"
#include "backends/cpp/native_compiler.h"
#include "backends/cpp/shape_templates.h"
#include "compiler/check.h"
#include "frontends/onnx/onnx_importer.h"
#include "ir/file_io.h"
#include "ir/graph_io.h"
#include "ir/named_dims.h"
#include "ir/parallel.h"
#include "ir/status_macros.h"
#include "passes/pass_manager.h"
#include "runtime/native_library.h"

namespace loom {
namespace {

namespace rproto = runtime::proto;
namespace fs = std::filesystem;

// SweepShapes' sizes of one dim.
std::vector<int64_t> SweepSizes(const DimBounds& bounds) {
  std::set<int64_t> sizes = {bounds.min, bounds.max};
  for (int64_t size = 1; size <= 8; ++size) sizes.insert(size);
  for (int64_t power = 8;; power *= 2) {
    sizes.insert(power);
    sizes.insert(power + power / 2);
    if (power > bounds.max / 2) break;
  }
  std::vector<int64_t> within;
  for (int64_t size : sizes) {
    if (size >= bounds.min && size <= bounds.max) within.push_back(size);
  }
  return within;
}

std::string DimsString(const DimSizes& dims) {
  return absl::StrJoin(dims, ",", absl::PairFormatter("="));
}

// A class of the sweep, with its first source (its template's text).
struct ClassBuild {
  cpp::ShapeClass shape_class;
  GeneratedSource first;
  std::vector<DimSizes> shapes;
};

// Adds `source` to the class of its skeleton it joins, or to a new one.
void Classify(GeneratedSource source, const DimSizes& shape, std::vector<ClassBuild>& classes) {
  std::string hash = cpp::SkeletonHash(source);
  for (ClassBuild& build : classes) {
    if (build.shape_class.skeleton_hash == hash && cpp::JoinShapeClass(source, build.shape_class)) {
      build.shapes.push_back(shape);
      return;
    }
  }
  cpp::ShapeClass shape_class = cpp::StartShapeClass(source, std::move(hash));
  classes.push_back({std::move(shape_class), std::move(source), {shape}});
}

// Copies `from` to `to` (a hard link where both are on one file system),
// unless they are the same file.
absl::Status CopyFile(const fs::path& from, const fs::path& to) {
  std::error_code error;
  if (fs::equivalent(from, to, error)) return absl::OkStatus();
  fs::create_directories(to.parent_path(), error);
  fs::remove(to, error);
  fs::create_hard_link(from, to, error);
  if (!error) return absl::OkStatus();
  if (!fs::copy_file(from, to, fs::copy_options::overwrite_existing, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot copy ", from.string(), " to ", to.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

bool IsOnnx(const std::string& model) { return absl::EndsWith(model, ".onnx"); }

// The files of the model's external data (an ONNX model's, or a graph
// text's weights and constants in other files), relative to its folder.
absl::StatusOr<std::vector<std::string>> ExternalDataFiles(const std::string& model) {
  if (IsOnnx(model)) return OnnxExternalDataFiles(model);
  LOOM_ASSIGN_OR_RETURN(const proto::Graph graph, LoadGraphProto(model));
  std::vector<std::string> files;
  for (const auto* list : {&graph.weight(), &graph.constant()}) {
    for (const proto::Initializer& init : *list) {
      if (!init.has_external() || absl::c_linear_search(files, init.external().file())) continue;
      const fs::path file(init.external().file());
      if (file.is_absolute() || absl::c_linear_search(file, "..")) {
        return absl::InvalidArgumentError(absl::StrCat(
            model, ": initializer '", init.name(), "' reads ", file.string(),
            ", outside the model's folder; a compile for every shape copies the model with its "
            "data, which must be in its folder"));
      }
      files.push_back(file.string());
    }
  }
  return files;
}

// The names of the model's inputs' dims (and an ONNX model's outputs'), by
// value name: "" where a dim has none.
absl::StatusOr<absl::flat_hash_map<std::string, std::vector<std::string>>> ModelDimNames(
    const std::string& model) {
  if (IsOnnx(model)) return OnnxDimNames(model);
  LOOM_ASSIGN_OR_RETURN(const proto::Graph graph, LoadGraphProto(model));
  return GraphDimNames(graph);
}

// The model file and its external data, copied into `out_dir`; its name
// there.
absl::StatusOr<std::string> CopyModel(const std::string& model, const std::string& out_dir) {
  const fs::path path(model);
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string> external, ExternalDataFiles(model));
  for (const std::string& file : external) {
    LOOM_RETURN_IF_ERROR(CopyFile(path.parent_path() / file, fs::path(out_dir) / file));
  }
  const std::string name = path.filename().string();
  LOOM_RETURN_IF_ERROR(CopyFile(path, fs::path(out_dir) / name));
  return name;
}

// The interface of the compile at one shape, as specs: its graph's inputs,
// then its outputs (by the names as imported).
std::vector<rproto::TensorSpec> InterfaceOf(const CompiledModel& compiled) {
  const Graph& graph = compiled.module.graph;
  std::vector<rproto::TensorSpec> specs;
  auto add = [&](const std::string& name, ValueId id) {
    rproto::TensorSpec& spec = specs.emplace_back();
    spec.set_name(name);
    spec.set_dtype(std::string(DTypeName(graph.value(id).type.dtype)));
    for (int64_t d : graph.value(id).type.shape) spec.add_shape(d);
  };
  for (ValueId id : graph.inputs()) add(graph.value(id).name, id);
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    add(compiled.output_names[o], graph.outputs()[o]);
  }
  return specs;
}

// `interface` with -1 for each size in which `other` differs.
void MarkVaryingDims(const std::vector<rproto::TensorSpec>& other,
                     std::vector<rproto::TensorSpec>& interface) {
  for (size_t t = 0; t < interface.size() && t < other.size(); ++t) {
    for (int d = 0; d < interface[t].shape_size() && d < other[t].shape_size(); ++d) {
      if (interface[t].shape(d) != other[t].shape(d)) interface[t].set_shape(d, -1);
    }
  }
}

// Adds the interface to `dynamic`, each dim named as the model names it.
absl::Status AddInterface(const std::string& model, std::vector<rproto::TensorSpec> interface,
                          size_t inputs, rproto::DynamicShapes& dynamic) {
  LOOM_ASSIGN_OR_RETURN(const auto dim_names, ModelDimNames(model));
  for (size_t t = 0; t < interface.size(); ++t) {
    rproto::TensorSpec& spec = interface[t];
    const auto named = dim_names.find(spec.name());
    for (int d = 0; d < spec.shape_size(); ++d) {
      const bool has_name = named != dim_names.end() && d < static_cast<int>(named->second.size());
      spec.add_dim_names(has_name ? named->second[d] : "");
    }
    *(t < inputs ? dynamic.add_inputs() : dynamic.add_outputs()) = std::move(spec);
  }
  return absl::OkStatus();
}

// The bounds to compile for: options.dim_bounds, and each size of
// options.dims as bounds of that size alone.
absl::StatusOr<NamedDimBounds> BoundsToCompile(const CompileOptions& options) {
  NamedDimBounds bounds(options.dim_bounds.begin(), options.dim_bounds.end());
  for (const auto& [name, b] : bounds) {
    if (b.max == std::numeric_limits<int64_t>::max() || b.min < 0 || b.min > b.max) {
      return absl::InvalidArgumentError(
          absl::StrCat("the dim '", name,
                       "' needs bounds MIN..MAX with 0 <= MIN <= MAX to compile for every "
                       "shape within them"));
    }
  }
  for (const auto& [name, size] : options.dims) bounds[name] = {size, size};
  return bounds;
}

// What a shape's front end needs at run time: the pipeline and its options,
// and the dims' bounds.
void AddCompileOptions(const CompileOptions& options, const std::string& pipeline_text,
                       const NamedDimBounds& bounds, rproto::DynamicShapes& dynamic) {
  dynamic.set_pipeline_name(options.pipeline);
  dynamic.set_pipeline_text(pipeline_text);
  for (const PassOptionsOverride& o : options.pass_options) {
    rproto::DynamicShapes::PassOptions& out = *dynamic.add_pass_options();
    out.set_pass(o.pass);
    out.set_options(o.options);
  }
  for (const auto& [name, b] : bounds) {
    rproto::DimBounds& out = *dynamic.add_bounds();
    out.set_name(name);
    out.set_min(b.min);
    out.set_max(b.max);
  }
}

// What the front end made of one shape of the sweep.
struct ShapeCompile {
  GeneratedSource source;
  std::vector<rproto::TensorSpec> interface;  // InterfaceOf
  size_t inputs = 0;                          // how many of `interface` are inputs
  std::string model_name, cpu_features;
};

absl::StatusOr<ShapeCompile> FrontEnd(const CompileOptions& options,
                                      const std::string& pipeline_text, const DimSizes& shape) {
  CompileOptions at_shape = options;
  at_shape.dims = absl::flat_hash_map<std::string, int64_t>(shape.begin(), shape.end());
  at_shape.dim_bounds.clear();
  at_shape.input_shapes.clear();
  at_shape.out_dir.clear();
  at_shape.pipeline_text = pipeline_text;
  at_shape.native_compile = false;
  absl::StatusOr<CompiledModel> compiled = CompileModel(at_shape);
  if (!compiled.ok()) {
    return absl::Status(compiled.status().code(),
                        absl::StrCat("at ", DimsString(shape), ": ", compiled.status().message()));
  }
  if (!compiled->module.source.has_value() || compiled->module.source->language != "c++") {
    return absl::InvalidArgumentError(
        "a compile for every shape within bounds needs a pipeline that emits C++");
  }
  LOOM_ASSIGN_OR_RETURN(const rproto::Artifact artifact,
                        cpp::MakeArtifact(compiled->module, "", compiled->output_names,
                                          /*weight_data=*/false));
  return ShapeCompile{*std::move(compiled->module.source), InterfaceOf(*compiled),
                      compiled->module.graph.inputs().size(), artifact.model_name(),
                      artifact.cpu_features()};
}

// FrontEnd at every shape, on every core (a compile's passes run on one):
// the first error in the shapes' order, if any.
absl::StatusOr<std::vector<ShapeCompile>> FrontEnds(const CompileOptions& options,
                                                    const std::string& pipeline_text,
                                                    const std::vector<DimSizes>& shapes) {
  if (shapes.empty()) return std::vector<ShapeCompile>();
  std::vector<std::optional<absl::StatusOr<ShapeCompile>>> results(shapes.size());
  std::atomic<size_t> next{0};
  const int64_t threads = std::min<int64_t>(HardwareThreads(), shapes.size());
  RunInParts(threads, threads, [&](int64_t, int64_t) {
    for (size_t i = next++; i < shapes.size(); i = next++) {
      results[i] = FrontEnd(options, pipeline_text, shapes[i]);
    }
  });
  std::vector<ShapeCompile> compiles;
  for (std::optional<absl::StatusOr<ShapeCompile>>& result : results) {
    if (!result->ok()) return result->status();
    compiles.push_back(**std::move(result));
  }
  return compiles;
}

// The sizes of the model's named input dims next to those `options` gives
// (options.dims, or read from options.input_shapes): for each dim that may
// vary, one more in it (or one less where that passes its bound).
absl::StatusOr<std::vector<DimSizes>> NeighbourSizes(const CompileOptions& options) {
  LOOM_ASSIGN_OR_RETURN(const auto dim_names, ModelDimNames(options.model));
  NamedDimUses uses;
  for (const auto& [value, names] : dim_names) {
    for (size_t d = 0; d < names.size(); ++d) {
      if (!names[d].empty()) uses[names[d]].emplace_back(value, static_cast<int>(d));
    }
  }
  NamedDimOptions given;
  given.dims = options.dims;
  given.input_shapes = options.input_shapes;
  LOOM_ASSIGN_OR_RETURN(const NamedSizes sizes, ResolveNamedDims(uses, given));
  const DimSizes at(sizes.begin(), sizes.end());
  std::vector<DimSizes> neighbours;
  for (const auto& [name, size] : at) {
    const auto given = options.dim_bounds.find(name);
    const DimBounds bounds = given == options.dim_bounds.end() ? DimBounds() : given->second;
    const int64_t next = size < bounds.max ? size + 1 : size - 1;
    if (next < bounds.min || next > bounds.max) continue;  // the dim has one size
    neighbours.emplace_back(at)[name] = next;
  }
  return neighbours;
}

// Where the kernel cache has not met the skeleton of `source` (the model's
// at one shape of its named dims, `options`), runs the front end at the
// neighbouring shapes too and records those of the same skeleton with it
// (cpp::MeetNeighbours): the compile of `source` that follows builds the
// template of their class. A neighbour that does not compile, or has
// another skeleton, only leaves that template without the constants it
// would vary.
void MeetNeighbourShapes(const CompileOptions& options, const GeneratedSource& source) {
  if (source.language != "c++" || source.shape_constants.empty()) return;
  const cpp::NativeCompileOptions native = cpp::NativeOptions(
      source, options.cache_dir.empty() ? cpp::DefaultCacheDir() : options.cache_dir);
  if (cpp::SkeletonMet(source, native)) return;
  std::vector<GeneratedSource> neighbours;
  absl::StatusOr<std::vector<DimSizes>> sizes = NeighbourSizes(options);
  for (const DimSizes& at : sizes.ok() ? *sizes : std::vector<DimSizes>()) {
    absl::StatusOr<ShapeCompile> neighbour = FrontEnd(options, options.pipeline_text, at);
    if (neighbour.ok()) neighbours.push_back(std::move(neighbour->source));
  }
  cpp::MeetNeighbours(source, neighbours, native);
}

// Compiles a class's kernels (its template, or its one source) into `out`,
// adding to the report's native seconds and classes.
absl::Status CompileClass(const ClassBuild& build, const std::string& cache_dir,
                          rproto::ShapeClass& out, proto::Report& report) {
  const cpp::ShapeClass& c = build.shape_class;
  const std::string text =
      c.at_run_time.empty() ? build.first.text : cpp::TemplateText(build.first, c.at_run_time);
  LOOM_ASSIGN_OR_RETURN(cpp::CompiledLibrary library,
                        cpp::CompileAndLoad(text, cpp::NativeOptions(build.first, cache_dir)));
  report.set_native_compile_seconds(report.native_compile_seconds() + library.compile_seconds);
  std::vector<std::string> shapes;
  for (const DimSizes& shape : build.shapes) shapes.push_back(DimsString(shape));
  report.add_shape_classes(absl::StrJoin(shapes, " "));
  out.set_skeleton_hash(c.skeleton_hash);
  for (int64_t v : c.values) out.add_values(v);
  for (int i : c.at_run_time) out.add_at_run_time(i);
  LOOM_ASSIGN_OR_RETURN(*out.mutable_shared_object(), ReadFileBytes(library.library.path()));
  return absl::OkStatus();
}

}  // namespace

std::vector<DimSizes> NeighbourShapes(const std::vector<std::vector<DimSizes>>& classes,
                                      const std::vector<DimSizes>& swept,
                                      const NamedDimBounds& bounds) {
  std::set<DimSizes> taken(swept.begin(), swept.end());
  std::vector<DimSizes> neighbours;
  for (const std::vector<DimSizes>& shapes : classes) {
    if (shapes.size() != 1) continue;
    for (const auto& [name, b] : bounds) {
      DimSizes next = shapes[0];
      int64_t& size = next[name];
      size = size < b.max ? size + 1 : size - 1;
      if (size >= b.min && taken.insert(next).second) neighbours.push_back(next);
    }
  }
  return neighbours;
}

std::vector<DimSizes> SweepShapes(const NamedDimBounds& bounds) {
  std::vector<DimSizes> shapes = {{}};
  for (const auto& [name, b] : bounds) {
    std::vector<DimSizes> more;
    for (int64_t size : SweepSizes(b)) {
      for (DimSizes shape : shapes) {
        shape[name] = size;
        more.push_back(std::move(shape));
      }
    }
    shapes = std::move(more);
  }
  return shapes;
}

struct DynamicModel::State {
  std::string name;
  std::string model_path;
  CompileOptions base;  // the model, its pipeline and bounds
  NamedDimBounds bounds;
  std::vector<DynamicTensorInfo> inputs, outputs;
  // The artifact's classes and their kernels' shared objects.
  std::vector<std::pair<cpp::ShapeClass, std::string>> classes;

  // A shape's compile and the model bound to it, which reads its weights.
  struct Entry {
    CompiledModel compiled;
    std::optional<Model> model;
  };
  std::mutex mutex;
  std::vector<std::pair<std::string, std::shared_ptr<const Model>>> recent;  // oldest first
  int shapes_compiled = 0;
  int native_compiles = 0;

  // The model kept for `key`, now the most recent; null if none.
  std::shared_ptr<const Model> Recent(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = recent.begin(); it != recent.end(); ++it) {
      if (it->first != key) continue;
      std::shared_ptr<const Model> model = it->second;
      recent.erase(it);
      recent.emplace_back(key, model);
      return model;
    }
    return nullptr;
  }
};

absl::StatusOr<std::shared_ptr<const Model>> DynamicModel::BindShape(const State& state,
                                                                     const CompileOptions& shape,
                                                                     const std::string& key,
                                                                     bool& compiled_natively) {
  auto entry = std::make_shared<State::Entry>();
  LOOM_ASSIGN_OR_RETURN(entry->compiled, CompileModel(shape));
  const Module& module = entry->compiled.module;
  LOOM_ASSIGN_OR_RETURN(const rproto::Artifact artifact,
                        cpp::MakeArtifact(module, "", entry->compiled.output_names,
                                          /*weight_data=*/false));
  const std::string hash = cpp::SkeletonHash(*module.source);
  const auto in_class = absl::c_find_if(state.classes, [&](const auto& c) {
    return cpp::InShapeClass(*module.source, hash, c.first);
  });
  std::optional<NativeLibrary> library;
  if (in_class != state.classes.end()) {
    const bool openmp = absl::c_linear_search(artifact.native_flags(), "-fopenmp");
    LOOM_ASSIGN_OR_RETURN(library,
                          LoadSharedObject(in_class->second, openmp,
                                           std::vector<std::string>(artifact.libraries().begin(),
                                                                    artifact.libraries().end()),
                                           absl::StrCat("model '", state.name, "'")));
  } else {
    MeetNeighbourShapes(shape, *module.source);
    absl::StatusOr<cpp::CompiledLibrary> compiled =
        cpp::CompileModule(module, cpp::DefaultCacheDir());
    if (!compiled.ok()) {
      return absl::Status(compiled.status().code(),
                          absl::StrCat(state.name, ": ", key,
                                       " is a class of shapes whose kernels the artifact lacks, "
                                       "and compiling them failed: ",
                                       compiled.status().message()));
    }
    library = std::move(compiled->library);
    compiled_natively = true;
  }
  LOOM_ASSIGN_OR_RETURN(entry->model,
                        Model::Bind(*std::move(library), artifact, cpp::WeightData(module)));
  return std::shared_ptr<const Model>(entry, &*entry->model);
}

absl::StatusOr<CompiledModel> CompileShapeOfMany(const CompileOptions& options) {
  CompileOptions front_end = options;
  front_end.native_compile = false;
  LOOM_ASSIGN_OR_RETURN(CompiledModel compiled, CompileModel(front_end));
  if (compiled.module.source.has_value()) MeetNeighbourShapes(options, *compiled.module.source);
  LOOM_RETURN_IF_ERROR(CompileNatively(options, compiled));
  return compiled;
}

absl::StatusOr<proto::Report> DynamicModel::Compile(const CompileOptions& options) {
  if (options.out_dir.empty()) {
    return absl::InvalidArgumentError("a compile for every shape within bounds needs --out_dir");
  }
  LOOM_ASSIGN_OR_RETURN(const NamedDimBounds bounds, BoundsToCompile(options));
  LOOM_ASSIGN_OR_RETURN(const LoadedPipeline pipeline,
                        LoadPipeline(options.pipeline, options.pass_options));
  proto::Report report;
  report.set_model(options.model);
  report.set_pipeline(options.pipeline);
  const auto start = std::chrono::steady_clock::now();
  std::vector<DimSizes> shapes = SweepShapes(bounds);
  LOOM_ASSIGN_OR_RETURN(std::vector<ShapeCompile> compiles,
                        FrontEnds(options, pipeline.text, shapes));
  rproto::Artifact artifact;
  artifact.set_model_name(compiles[0].model_name);
  rproto::DynamicShapes& dynamic = *artifact.mutable_dynamic_shapes();
  dynamic.set_cpu_features(compiles[0].cpu_features);
  std::vector<rproto::TensorSpec> interface = compiles[0].interface;
  std::vector<ClassBuild> classes;
  const auto classify = [&](std::vector<ShapeCompile>& compiled, const std::vector<DimSizes>& at) {
    for (size_t i = 0; i < at.size(); ++i) {
      MarkVaryingDims(compiled[i].interface, interface);
      Classify(std::move(compiled[i].source), at[i], classes);
    }
  };
  classify(compiles, shapes);
  std::vector<std::vector<DimSizes>> class_shapes;
  for (const ClassBuild& build : classes) class_shapes.push_back(build.shapes);
  const std::vector<DimSizes> neighbours = NeighbourShapes(class_shapes, shapes, bounds);
  LOOM_ASSIGN_OR_RETURN(std::vector<ShapeCompile> neighbour_compiles,
                        FrontEnds(options, pipeline.text, neighbours));
  classify(neighbour_compiles, neighbours);
  report.set_frontend_seconds(SecondsSince(start));
  report.set_shapes(static_cast<int>(shapes.size() + neighbours.size()));
  const std::string cache_dir =
      options.cache_dir.empty() ? cpp::DefaultCacheDir() : options.cache_dir;
  for (const ClassBuild& build : classes) {
    LOOM_RETURN_IF_ERROR(CompileClass(build, cache_dir, *dynamic.add_classes(), report));
  }
  LOOM_RETURN_IF_ERROR(CreateDirectories(options.out_dir));
  LOOM_ASSIGN_OR_RETURN(const std::string model_file, CopyModel(options.model, options.out_dir));
  dynamic.set_model_file(model_file);
  LOOM_RETURN_IF_ERROR(
      AddInterface(options.model, std::move(interface), compiles[0].inputs, dynamic));
  AddCompileOptions(options, pipeline.text, bounds, dynamic);
  LOOM_RETURN_IF_ERROR(
      WriteFileBytes(fs::path(options.out_dir) / "model.loom", Model::Serialize(artifact)));
  return report;
}

absl::StatusOr<DynamicModel> DynamicModel::Load(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(rproto::Artifact artifact, ReadArtifact(path));
  return FromArtifact(path, artifact);
}

absl::StatusOr<DynamicModel> DynamicModel::FromArtifact(const std::string& path,
                                                        const rproto::Artifact& artifact) {
  if (!artifact.has_dynamic_shapes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a model compiled for one shape: load it with loom::Model::Load"));
  }
  const rproto::DynamicShapes& dynamic = artifact.dynamic_shapes();
  if (!dynamic.cpu_features().empty() && dynamic.cpu_features() != HostCpuFeatures()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the kernels were compiled for the native instruction set of another CPU"));
  }
  auto state = std::make_unique<State>();
  state->name = artifact.model_name();
  state->model_path = (fs::path(path).parent_path() / dynamic.model_file()).string();
  if (!fs::exists(state->model_path)) {
    return absl::NotFoundError(absl::StrCat(path, ": its model file ", state->model_path,
                                            " is missing (it goes with the artifact)"));
  }
  CompileOptions& base = state->base;
  base.model = state->model_path;
  base.pipeline = dynamic.pipeline_name();
  base.pipeline_text = dynamic.pipeline_text();
  base.native_compile = false;
  for (const rproto::DynamicShapes::PassOptions& o : dynamic.pass_options()) {
    base.pass_options.push_back({o.pass(), o.options()});
  }
  for (const rproto::DimBounds& b : dynamic.bounds()) {
    state->bounds[b.name()] = {b.min(), b.max()};
    base.dim_bounds[b.name()] = {b.min(), b.max()};
  }
  for (const auto& [specs, infos] : {std::pair{&dynamic.inputs(), &state->inputs},
                                     std::pair{&dynamic.outputs(), &state->outputs}}) {
    for (const rproto::TensorSpec& spec : *specs) {
      LOOM_ASSIGN_OR_RETURN(DType dtype, DTypeFromName(spec.dtype()));
      infos->push_back({spec.name(),
                        dtype,
                        {spec.shape().begin(), spec.shape().end()},
                        {spec.dim_names().begin(), spec.dim_names().end()}});
    }
  }
  for (const rproto::ShapeClass& c : dynamic.classes()) {
    state->classes.push_back(
        {{c.skeleton_hash(), std::vector<int64_t>(c.values().begin(), c.values().end()),
          std::vector<int>(c.at_run_time().begin(), c.at_run_time().end())},
         c.shared_object()});
  }
  return DynamicModel(std::move(state));
}

DynamicModel::DynamicModel(std::unique_ptr<State> state) : state_(std::move(state)) {}
DynamicModel::DynamicModel(DynamicModel&&) noexcept = default;
DynamicModel& DynamicModel::operator=(DynamicModel&&) noexcept = default;
DynamicModel::~DynamicModel() = default;

const std::string& DynamicModel::name() const { return state_->name; }
const NamedDimBounds& DynamicModel::bounds() const { return state_->bounds; }
const std::vector<DynamicTensorInfo>& DynamicModel::inputs() const { return state_->inputs; }
const std::vector<DynamicTensorInfo>& DynamicModel::outputs() const { return state_->outputs; }

int DynamicModel::shapes_compiled() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->shapes_compiled;
}

int DynamicModel::native_compiles() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->native_compiles;
}

absl::StatusOr<std::shared_ptr<const Model>> DynamicModel::ModelForShapes(
    const absl::flat_hash_map<std::string, Shape>& input_shapes) const {
  const std::map<std::string, Shape> sorted(input_shapes.begin(), input_shapes.end());
  std::string key = "inputs";
  for (const auto& [name, shape] : sorted) absl::StrAppend(&key, " ", name, ShapeToString(shape));
  CompileOptions shape = state_->base;
  shape.input_shapes = input_shapes;
  return ModelFor(shape, key);
}

absl::StatusOr<std::shared_ptr<const Model>> DynamicModel::ModelForDims(
    const DimSizes& dims) const {
  CompileOptions shape = state_->base;
  shape.dims = absl::flat_hash_map<std::string, int64_t>(dims.begin(), dims.end());
  // A dim compiled for one size needs none.
  for (const auto& [name, b] : state_->bounds) {
    if (b.min == b.max) shape.dims.emplace(name, b.min);
  }
  return ModelFor(shape, absl::StrCat("dims ", DimsString(dims)));
}

absl::Status DynamicModel::Run(absl::Span<const InputTensor> inputs,
                               absl::Span<const OutputTensor> outputs) const {
  absl::flat_hash_map<std::string, Shape> shapes;
  for (const InputTensor& input : inputs) {
    shapes[input.name] = Shape(input.shape.begin(), input.shape.end());
  }
  LOOM_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, ModelForShapes(shapes));
  return model->Run(inputs, outputs);
}

absl::StatusOr<std::shared_ptr<const Model>> DynamicModel::ModelFor(const CompileOptions& shape,
                                                                    const std::string& key) const {
  State& state = *state_;
  if (std::shared_ptr<const Model> model = state.Recent(key)) return model;
  // Compiled without the lock: the shapes already bound run meanwhile.
  bool compiled_natively = false;
  LOOM_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model,
                        BindShape(state, shape, key, compiled_natively));
  std::lock_guard<std::mutex> lock(state.mutex);
  ++state.shapes_compiled;
  state.native_compiles += compiled_natively;
  for (const auto& [kept_key, kept] : state.recent) {
    if (kept_key == key) return kept;  // another thread's compile of the shape came first
  }
  state.recent.emplace_back(key, model);
  if (state.recent.size() > kMaxShapes) state.recent.erase(state.recent.begin());
  return model;
}

}  // namespace loom

namespace loom {

absl::Status RunAnyArtifact(const std::string& path, const DimSizes& dims,
                            const RunModelOptions& options, proto::Report& report) {
  LOOM_ASSIGN_OR_RETURN(const runtime::proto::Artifact artifact, ReadArtifact(path));
  if (!artifact.has_dynamic_shapes()) {
    if (!dims.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path,
                       ": --dims sizes the named dims of a model compiled for every shape; "
                       "this one was compiled for one"));
    }
    LOOM_ASSIGN_OR_RETURN(const Model model, Model::FromArtifactFile(path, artifact));
    return RunArtifact(model, path, options, report);
  }
  LOOM_ASSIGN_OR_RETURN(const DynamicModel dynamic, DynamicModel::FromArtifact(path, artifact));
  absl::StatusOr<std::shared_ptr<const Model>> model;
  if (!options.inputs_dir.empty()) {
    LOOM_ASSIGN_OR_RETURN(const auto shapes, NpyInputShapes(options.inputs_dir));
    model = dynamic.ModelForShapes(shapes);
  } else {
    for (const auto& [name, b] : dynamic.bounds()) {
      if (b.min < b.max && dims.count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": give the size of the dim '", name, "' (", b.min, "..", b.max,
                         ") with --dims=", name, "=N, or inputs that have it with --inputs=DIR"));
      }
    }
    model = dynamic.ModelForDims(dims);
  }
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  return RunArtifact(**model, path, options, report);
}

}  // namespace loom
