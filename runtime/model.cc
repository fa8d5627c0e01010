#include "runtime/model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "ir/file_io.h"
#include "ir/index_error.h"
#include "ir/status_macros.h"
#include "runtime/content_hash.h"

namespace loom {
namespace {

namespace rproto = runtime::proto;

constexpr char kMagic[] = "loom-artifact";
constexpr int64_t kAlignment = 64;  // the arena's and every buffer's

// 64-byte aligned bytes, zeroed.
struct AlignedBytes {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte[], Free> bytes;

  static AlignedBytes Zeroed(int64_t size) { return Holding(size, {}); }
  // `size` bytes, the first of them `data`'s and the rest zero; a weight
  // is written once (zeroing it first was a tenth of loading BERT-base).
  static AlignedBytes Holding(int64_t size, absl::string_view data) {
    const size_t rounded = static_cast<size_t>((size + kAlignment - 1) / kAlignment * kAlignment);
    AlignedBytes result;
    result.bytes.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
    if (result.bytes != nullptr) {
      if (!data.empty()) std::memcpy(result.bytes.get(), data.data(), data.size());
      std::memset(result.bytes.get() + data.size(), 0, rounded - data.size());
    }
    return result;
  }
  std::byte* get() const { return bytes.get(); }
};

// The fields of an ArtifactFile (artifact.proto), its payload a view into
// the file's bytes: parsing the message would copy the payload, which holds
// the weights. False where the bytes are no ArtifactFile.
struct ArtifactFileView {
  std::string magic, payload_hash;
  int64_t format_version = 0;
  absl::string_view payload;
};

bool ParseArtifactFile(absl::string_view bytes, ArtifactFileView& file) {
  using google::protobuf::internal::WireFormatLite;
  if (bytes.size() > INT_MAX) return false;  // protobuf's limit
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  while (const uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const WireFormatLite::WireType type = WireFormatLite::GetTagWireType(tag);
    if (type == WireFormatLite::WIRETYPE_LENGTH_DELIMITED &&
        (field == 1 || field == 3 || field == 4)) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length) || length > bytes.size() - in.CurrentPosition()) return false;
      const absl::string_view value = bytes.substr(in.CurrentPosition(), length);
      if (!in.Skip(static_cast<int>(length))) return false;
      if (field == 1) file.magic = std::string(value);
      if (field == 3) file.payload_hash = std::string(value);
      if (field == 4) file.payload = value;
    } else if (type == WireFormatLite::WIRETYPE_VARINT && field == 2) {
      uint64_t version = 0;
      if (!in.ReadVarint64(&version)) return false;
      file.format_version = static_cast<int32_t>(version);
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string TypeString(DType dtype, absl::Span<const int64_t> shape) {
  return absl::StrCat(DTypeName(dtype), ShapeString(shape));
}

bool MultiplyChecked(int64_t a, int64_t b, int64_t& product) {
  return !__builtin_mul_overflow(a, b, &product);
}

}  // namespace

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorInfo::bytes() const { return elements() * DTypeSize(dtype); }

// What every context of one model shares: the kernels, the launch table,
// the weights and the interface. Immutable once built.
struct Model::Shared {
  std::optional<NativeLibrary> library;  // none: the kernels are linked in
  std::string name;
  std::vector<KernelFunction> functions;
  std::vector<std::string> function_names;
  std::vector<int32_t> launch_function;
  std::vector<std::string> launch_labels;
  std::vector<int32_t> arg_offsets = {0};
  std::vector<int32_t> arg_buffer;
  std::vector<int64_t> arg_byte_offset;
  std::vector<rproto::Buffer::Kind> kinds;
  std::vector<int64_t> bytes;             // per buffer
  std::vector<int64_t> arena_offset;      // per buffer (ARENA only)
  std::vector<AlignedBytes> own_weights;  // per buffer (WEIGHT read from the artifact)
  // Per buffer (WEIGHT only): its data, own or the caller's (Bind's
  // `weights`). Kernels only read weights.
  std::vector<void*> weights;
  int64_t arena_bytes = 0;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<int32_t> input_buffers, output_buffers;
  int32_t index_errors = -1;  // the INDEX_ERRORS buffer, if any
  std::vector<rproto::IndexCheck> index_checks;
  std::vector<int64_t> shape_constants;  // every launch's last argument

  // Each checks its part of the artifact as it adds it (Assemble).
  absl::Status AddBuffer(const rproto::Buffer& buffer, const void* borrowed_weight);
  absl::Status AddLaunch(const rproto::Launch& launch, int num_functions);
  template <typename Specs>
  absl::Status AddInterface(const Specs& specs, const char* what, std::vector<TensorInfo>& infos,
                            std::vector<int32_t>& buffer_of);
};

// One execution's storage: the arena, the temporaries and outputs, and the
// address of every buffer.
class Model::Context {
 public:
  explicit Context(const Shared& shared) : shared_(shared) {
    arena_ = AlignedBytes::Zeroed(std::max<int64_t>(shared.arena_bytes, 1));
    const size_t n = shared.kinds.size();
    own_.resize(n);
    pointers_.assign(n, nullptr);
    for (size_t b = 0; b < n; ++b) {
      switch (shared.kinds[b]) {
        case rproto::Buffer::TEMP:
        case rproto::Buffer::OUTPUT:
        case rproto::Buffer::INDEX_ERRORS:
          own_[b] = AlignedBytes::Zeroed(std::max<int64_t>(shared.bytes[b], 1));
          pointers_[b] = own_[b].get();
          break;
        case rproto::Buffer::ARENA:
          pointers_[b] = arena_.get() + shared.arena_offset[b];
          break;
        case rproto::Buffer::WEIGHT:
          pointers_[b] = shared.weights[b];
          break;
        case rproto::Buffer::INPUT:
        case rproto::Buffer::NONE:
        default:
          break;
      }
    }
    own_pointers_ = pointers_;
    arguments_.reserve(shared.arg_buffer.size() + 1);
  }

  // Binds the inputs and the outputs (`outputs[i]` null: the context's own)
  // and runs every launch. A failed index check fails the run (after every
  // launch: a kernel goes on with a safe index) with its message.
  absl::Status Execute(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       double* launch_seconds = nullptr) {
    int64_t* const errors =
        shared_.index_errors < 0 ? nullptr : static_cast<int64_t*>(pointers_[shared_.index_errors]);
    if (errors != nullptr) errors[0] = errors[1] = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      // Kernels only read inputs: the const_cast never leads to a write.
      pointers_[shared_.input_buffers[i]] = const_cast<void*>(inputs[i]);
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const int32_t b = shared_.output_buffers[i];
      if (shared_.kinds[b] == rproto::Buffer::OUTPUT) {
        pointers_[b] = outputs[i] != nullptr ? outputs[i] : own_pointers_[b];
      }
    }
    for (size_t l = 0; l < shared_.launch_function.size(); ++l) {
      arguments_.clear();
      for (int32_t a = shared_.arg_offsets[l]; a < shared_.arg_offsets[l + 1]; ++a) {
        char* const base = static_cast<char*>(pointers_[shared_.arg_buffer[a]]);
        arguments_.push_back(base == nullptr ? nullptr : base + shared_.arg_byte_offset[a]);
      }
      // Kernels only read them.
      arguments_.push_back(const_cast<int64_t*>(shared_.shape_constants.data()));
      const KernelFunction function = shared_.functions[shared_.launch_function[l]];
      if (launch_seconds == nullptr) {
        function(arguments_.data());
        continue;
      }
      const auto start = std::chrono::steady_clock::now();
      function(arguments_.data());
      launch_seconds[l] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (errors != nullptr && errors[0] != 0) return IndexError(errors[0] - 1, errors[1]);
    // An output that is not an output buffer of its own (an input or a
    // weight the graph returns) is copied.
    for (size_t i = 0; i < outputs.size(); ++i) {
      const int32_t b = shared_.output_buffers[i];
      if (outputs[i] != nullptr && pointers_[b] != outputs[i]) {
        std::memcpy(outputs[i], pointers_[b], static_cast<size_t>(shared_.bytes[b]));
      }
    }
    return absl::OkStatus();
  }

  const void* output(size_t i) const { return pointers_[shared_.output_buffers[i]]; }

 private:
  absl::Status IndexError(int64_t check, int64_t index) const {
    if (check < 0 || check >= static_cast<int64_t>(shared_.index_checks.size())) {
      return absl::InternalError(absl::StrCat("a kernel reports index ", index,
                                              " out of range at an unknown check ", check));
    }
    const rproto::IndexCheck& site = shared_.index_checks[check];
    return absl::InvalidArgumentError(
        IndexOutOfRangeMessage(site.node(), site.op(), index, site.axis(), site.size()));
  }

  const Shared& shared_;
  AlignedBytes arena_;
  std::vector<AlignedBytes> own_;
  std::vector<void*> pointers_, own_pointers_;
  std::vector<void*> arguments_;
};

// Contexts free for the next Run.
struct Model::Pool {
  absl::Mutex mutex;
  std::vector<std::unique_ptr<Context>> free ABSL_GUARDED_BY(mutex);
};

struct Model::Session::State {
  std::shared_ptr<const Shared> shared;
  std::unique_ptr<Context> context;
  std::vector<const void*> input_pointers;
};

namespace {

absl::StatusOr<DType> DTypeOf(const std::string& name, absl::string_view what) {
  absl::StatusOr<DType> dtype = DTypeFromName(name);
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has an unknown element type '", name, "'"));
  }
  return *dtype;
}

// The caller's tensor for each of the model's (-1: not given), after
// checking every one against the model's by name. No allocation for the
// usual handful of tensors.
using Slots = absl::InlinedVector<int, 8>;

template <typename Tensor>
absl::StatusOr<Slots> MatchByName(absl::Span<const Tensor> given,
                                  const std::vector<TensorInfo>& expected, absl::string_view what,
                                  bool all_required) {
  Slots slot_of(expected.size(), -1);
  for (size_t g = 0; g < given.size(); ++g) {
    const Tensor& tensor = given[g];
    size_t e = 0;
    while (e < expected.size() && expected[e].name != tensor.name) ++e;
    if (e == expected.size()) {
      std::vector<std::string> names;
      for (const TensorInfo& info : expected) names.push_back(info.name);
      return absl::InvalidArgumentError(absl::StrCat("the model has no ", what, " '", tensor.name,
                                                     "' (its ", what,
                                                     "s: ", absl::StrJoin(names, ", "), ")"));
    }
    if (slot_of[e] >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " '", tensor.name, "' is given twice"));
    }
    const TensorInfo& info = expected[e];
    if (tensor.dtype != info.dtype || tensor.shape != absl::MakeConstSpan(info.shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", tensor.name, "' is ", TypeString(tensor.dtype, tensor.shape),
                       ", the model's is ", TypeString(info.dtype, info.shape)));
    }
    if (tensor.data == nullptr && info.bytes() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", tensor.name, "' has no data (a null pointer)"));
    }
    slot_of[e] = static_cast<int>(g);
  }
  if (all_required) {
    for (size_t e = 0; e < expected.size(); ++e) {
      if (slot_of[e] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("the model's ", what, " '", expected[e].name, "' is not given"));
      }
    }
  }
  return slot_of;
}

absl::StatusOr<TensorInfo> InfoOf(const rproto::TensorSpec& spec, int buffers,
                                  absl::string_view what) {
  TensorInfo info;
  info.name = spec.name();
  LOOM_ASSIGN_OR_RETURN(DType dtype,
                        DTypeOf(spec.dtype(), absl::StrCat(what, " '", spec.name(), "'")));
  info.dtype = dtype;
  info.shape.assign(spec.shape().begin(), spec.shape().end());
  int64_t elements = 1;
  for (int64_t d : info.shape) {
    if (d < 0 || !MultiplyChecked(elements, d, elements)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", spec.name(), "' has shape ", ShapeString(info.shape)));
    }
  }
  if (spec.buffer() < 0 || spec.buffer() >= buffers) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", spec.name(), "' names buffer ", spec.buffer(), " of ", buffers));
  }
  return info;
}

}  // namespace

std::string Model::Serialize(const rproto::Artifact& artifact) {
  rproto::ArtifactFile file;
  file.set_magic(kMagic);
  file.set_format_version(artifact.has_dynamic_shapes() ? kDynamicArtifactFormatVersion
                                                        : kArtifactFormatVersion);
  file.set_payload(artifact.SerializeAsString());
  file.set_payload_hash(ContentHash(file.payload()));
  return file.SerializeAsString();
}

absl::StatusOr<rproto::Artifact> ReadArtifact(const std::string& path) {
  const absl::StatusOr<MappedFile> bytes = MappedFile::Map(path);
  if (!bytes.ok()) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot be read (no such file?)"));
  }
  ArtifactFileView file;
  if (!ParseArtifactFile(bytes->bytes(), file) || file.magic != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a loom artifact (truncated or corrupt?)"));
  }
  if (file.format_version != kArtifactFormatVersion &&
      file.format_version != kDynamicArtifactFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": artifact format ", file.format_version, ", this loom reads formats ",
                     kArtifactFormatVersion, " and ", kDynamicArtifactFormatVersion,
                     " only: compile the model again with this loom"));
  }
  rproto::Artifact artifact;
  if (ContentHash(std::string_view(file.payload.data(), file.payload.size())) !=
          file.payload_hash ||
      !artifact.ParseFromArray(file.payload.data(), static_cast<int>(file.payload.size())) ||
      artifact.has_dynamic_shapes() != (file.format_version == kDynamicArtifactFormatVersion)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the artifact is damaged (its checksum does not match)"));
  }
  return artifact;
}

absl::StatusOr<Model> Model::Load(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(const rproto::Artifact artifact, ReadArtifact(path));
  if (artifact.has_dynamic_shapes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": a model compiled for every shape within its dims' bounds, which compiles its front "
        "end at each new shape: load it with loom::DynamicModel (compiler/dynamic_model.h) or "
        "`loom run`"));
  }
  return FromArtifactFile(path, artifact);
}

absl::StatusOr<Model> Model::FromArtifactFile(const std::string& path,
                                              const rproto::Artifact& artifact) {
  absl::StatusOr<Model> model = FromArtifact(artifact);
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(path, ": ", model.status().message()));
  }
  return model;
}

absl::StatusOr<Model> Model::FromArtifact(const rproto::Artifact& artifact) {
  if (!artifact.cpu_features().empty() && artifact.cpu_features() != HostCpuFeatures()) {
    return absl::FailedPreconditionError(
        "the kernels were compiled for the native instruction set of another CPU "
        "(codegen-cpp march: native); compile them here, or for a named target "
        "(march: \"x86-64-v3\")");
  }
  bool openmp = false;
  for (const std::string& flag : artifact.native_flags()) openmp |= flag == "-fopenmp";
  const std::vector<std::string> libraries(artifact.libraries().begin(),
                                           artifact.libraries().end());
  LOOM_ASSIGN_OR_RETURN(NativeLibrary library,
                        LoadSharedObject(artifact.shared_object(), openmp, libraries,
                                         absl::StrCat("model '", artifact.model_name(), "'")));
  return Bind(std::move(library), artifact);
}

absl::StatusOr<Model> Model::Bind(NativeLibrary library, const rproto::Artifact& artifact) {
  return Bind(std::move(library), artifact, {});
}

absl::StatusOr<Model> Model::Bind(NativeLibrary library, const rproto::Artifact& artifact,
                                  absl::Span<const void* const> weights) {
  if (!weights.empty() && static_cast<int>(weights.size()) != artifact.buffers_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(weights.size(), " weight pointers for ", artifact.buffers_size(), " buffers"));
  }
  std::vector<KernelFunction> functions;
  for (const std::string& name : artifact.functions()) {
    LOOM_ASSIGN_OR_RETURN(void* function, library.Symbol(name));
    functions.push_back(reinterpret_cast<KernelFunction>(function));
  }
  return Assemble(std::move(functions), std::move(library), artifact, weights);
}

absl::StatusOr<Model> Model::BindFunctions(absl::Span<const KernelFunction> functions,
                                           const rproto::Artifact& artifact) {
  if (static_cast<int>(functions.size()) != artifact.functions_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(functions.size(), " kernel functions for ", artifact.functions_size()));
  }
  return Assemble({functions.begin(), functions.end()}, std::nullopt, artifact);
}

absl::Status Model::Shared::AddBuffer(const rproto::Buffer& buffer, const void* borrowed_weight) {
  LOOM_ASSIGN_OR_RETURN(DType dtype,
                        DTypeOf(buffer.dtype(), absl::StrCat("buffer '", buffer.name(), "'")));
  int64_t size = 0;
  if (buffer.elements() < 0 || !MultiplyChecked(buffer.elements(), DTypeSize(dtype), size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer '", buffer.name(), "' has ", buffer.elements(), " elements"));
  }
  kinds.push_back(buffer.kind());
  bytes.push_back(size);
  arena_offset.push_back(buffer.arena_offset());
  AlignedBytes weight;
  if (buffer.kind() == rproto::Buffer::ARENA &&
      (buffer.arena_offset() < 0 || buffer.arena_offset() % kAlignment != 0 ||
       buffer.arena_offset() > arena_bytes - size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer '", buffer.name(), "' lies outside the arena"));
  }
  if (buffer.kind() == rproto::Buffer::WEIGHT && borrowed_weight != nullptr &&
      buffer.data().empty()) {
    weights.push_back(const_cast<void*>(borrowed_weight));
  } else if (buffer.kind() == rproto::Buffer::WEIGHT) {
    if (static_cast<int64_t>(buffer.data().size()) != size) {
      return absl::InvalidArgumentError(absl::StrCat("weight '", buffer.name(), "' has ",
                                                     buffer.data().size(), " bytes, not ", size));
    }
    weight = AlignedBytes::Holding(std::max<int64_t>(size, 1), buffer.data());
    if (weight.get() == nullptr) return absl::ResourceExhaustedError("out of memory");
    weights.push_back(weight.get());
  } else {
    weights.push_back(nullptr);
  }
  own_weights.push_back(std::move(weight));
  if (buffer.kind() == rproto::Buffer::INDEX_ERRORS) {
    if (index_errors >= 0 || dtype != DType::kI64 || buffer.elements() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer '", buffer.name(), "' is not the one index error slot"));
    }
    index_errors = static_cast<int32_t>(kinds.size() - 1);
  }
  return absl::OkStatus();
}

absl::Status Model::Shared::AddLaunch(const rproto::Launch& launch, int num_functions) {
  if (launch.function() < 0 || launch.function() >= num_functions ||
      launch.buffer_size() != launch.offset_size()) {
    return absl::InvalidArgumentError("a launch names no function of the artifact");
  }
  launch_function.push_back(launch.function());
  launch_labels.push_back(launch.label());
  const int buffers = static_cast<int>(kinds.size());
  for (int a = 0; a < launch.buffer_size(); ++a) {
    const int32_t b = launch.buffer(a);
    if (b < 0 || b >= buffers || launch.offset(a) < 0 || launch.offset(a) > bytes[b]) {
      return absl::InvalidArgumentError("a launch's argument lies outside its buffers");
    }
    arg_buffer.push_back(b);
    arg_byte_offset.push_back(launch.offset(a));
  }
  arg_offsets.push_back(static_cast<int32_t>(arg_buffer.size()));
  return absl::OkStatus();
}

template <typename Specs>
absl::Status Model::Shared::AddInterface(const Specs& specs, const char* what,
                                         std::vector<TensorInfo>& infos,
                                         std::vector<int32_t>& buffer_of) {
  for (const rproto::TensorSpec& spec : specs) {
    LOOM_ASSIGN_OR_RETURN(TensorInfo info, InfoOf(spec, static_cast<int>(kinds.size()), what));
    if (info.bytes() != bytes[spec.buffer()]) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", spec.name(), "' does not fit its buffer"));
    }
    infos.push_back(std::move(info));
    buffer_of.push_back(spec.buffer());
  }
  return absl::OkStatus();
}

absl::StatusOr<Model> Model::Assemble(std::vector<KernelFunction> functions,
                                      std::optional<NativeLibrary> library,
                                      const rproto::Artifact& artifact,
                                      absl::Span<const void* const> weights) {
  auto shared = std::make_shared<Shared>();
  shared->library = std::move(library);
  shared->functions = std::move(functions);
  shared->function_names.assign(artifact.functions().begin(), artifact.functions().end());
  shared->name = artifact.model_name();
  shared->arena_bytes = artifact.arena_bytes();
  if (shared->arena_bytes < 0) return absl::InvalidArgumentError("negative arena size");
  for (int b = 0; b < artifact.buffers_size(); ++b) {
    LOOM_RETURN_IF_ERROR(
        shared->AddBuffer(artifact.buffers(b), weights.empty() ? nullptr : weights[b]));
  }
  shared->index_checks.assign(artifact.index_checks().begin(), artifact.index_checks().end());
  shared->shape_constants.assign(artifact.shape_constants().begin(),
                                 artifact.shape_constants().end());
  for (const rproto::Launch& launch : artifact.launches()) {
    LOOM_RETURN_IF_ERROR(shared->AddLaunch(launch, artifact.functions_size()));
  }
  LOOM_RETURN_IF_ERROR(
      shared->AddInterface(artifact.inputs(), "input", shared->inputs, shared->input_buffers));
  LOOM_RETURN_IF_ERROR(
      shared->AddInterface(artifact.outputs(), "output", shared->outputs, shared->output_buffers));
  // Kernel support code that keeps what it made of weights by their
  // address (oneDNN's convolutions: backends/cpp/dnnl_conv.inc) checks
  // their contents again only after a bind.
  if (shared->library.has_value()) {
    if (absl::StatusOr<void*> bound = shared->library->Symbol("loom_weights_bound"); bound.ok()) {
      reinterpret_cast<void (*)()> (*bound)();
    }
  }
  return Model(std::move(shared));
}

Model::Model(std::shared_ptr<const Shared> shared)
    : shared_(std::move(shared)), pool_(std::make_unique<Pool>()) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const std::string& Model::name() const { return shared_->name; }
const std::vector<TensorInfo>& Model::inputs() const { return shared_->inputs; }
const std::vector<TensorInfo>& Model::outputs() const { return shared_->outputs; }
int Model::launches() const { return static_cast<int>(shared_->launch_function.size()); }
const std::string& Model::launch_function(int l) const {
  return shared_->function_names[shared_->launch_function[l]];
}
const std::string& Model::launch_label(int l) const { return shared_->launch_labels[l]; }

absl::Status Model::Run(absl::Span<const InputTensor> inputs,
                        absl::Span<const OutputTensor> outputs) const {
  LOOM_ASSIGN_OR_RETURN(Slots input_slots,
                        MatchByName(inputs, shared_->inputs, "input", /*all_required=*/true));
  LOOM_ASSIGN_OR_RETURN(Slots output_slots,
                        MatchByName(outputs, shared_->outputs, "output", /*all_required=*/false));
  std::unique_ptr<Context> context;
  {
    absl::MutexLock lock(&pool_->mutex);
    if (!pool_->free.empty()) {
      context = std::move(pool_->free.back());
      pool_->free.pop_back();
    }
  }
  if (context == nullptr) context = std::make_unique<Context>(*shared_);
  // The matched pointers, on the stack for the usual handful of tensors.
  absl::InlinedVector<const void*, 8> input_data(shared_->inputs.size());
  for (size_t i = 0; i < input_data.size(); ++i) input_data[i] = inputs[input_slots[i]].data;
  absl::InlinedVector<void*, 8> output_data(shared_->outputs.size(), nullptr);
  absl::InlinedVector<void*, 8> copy_to(shared_->outputs.size(), nullptr);
  for (size_t o = 0; o < output_data.size(); ++o) {
    if (output_slots[o] < 0) continue;
    void* data = outputs[output_slots[o]].data;
    if (reinterpret_cast<uintptr_t>(data) % kAlignment == 0) {
      output_data[o] = data;
    } else {
      copy_to[o] = data;
    }
  }
  const absl::Status status = context->Execute(input_data, output_data);
  for (size_t o = 0; o < copy_to.size() && status.ok(); ++o) {
    if (copy_to[o] != nullptr) {
      std::memcpy(copy_to[o], context->output(o), static_cast<size_t>(shared_->outputs[o].bytes()));
    }
  }
  absl::MutexLock lock(&pool_->mutex);
  pool_->free.push_back(std::move(context));
  return status;
}

Model::Session Model::NewSession() const {
  auto state = std::make_unique<Session::State>();
  state->shared = shared_;
  state->context = std::make_unique<Context>(*shared_);
  state->input_pointers.resize(shared_->inputs.size());
  return Session(std::move(state));
}

Model::Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Model::Session::Session(Session&&) noexcept = default;
Model::Session& Model::Session::operator=(Session&&) noexcept = default;
Model::Session::~Session() = default;

absl::Status Model::Session::Run(absl::Span<const InputTensor> inputs) {
  return Run(inputs, absl::Span<double>());
}

absl::Status Model::Session::Run(absl::Span<const InputTensor> inputs,
                                 absl::Span<double> launch_seconds) {
  const size_t launches = state_->shared->launch_function.size();
  if (!launch_seconds.empty() && launch_seconds.size() != launches) {
    return absl::InvalidArgumentError(absl::StrCat("a profile of ", launch_seconds.size(),
                                                   " launches for a model of ", launches));
  }
  LOOM_ASSIGN_OR_RETURN(
      Slots slots, MatchByName(inputs, state_->shared->inputs, "input", /*all_required=*/true));
  for (size_t i = 0; i < state_->input_pointers.size(); ++i) {
    state_->input_pointers[i] = inputs[slots[i]].data;
  }
  return state_->context->Execute(state_->input_pointers, {},
                                  launch_seconds.empty() ? nullptr : launch_seconds.data());
}

const void* Model::Session::output(size_t i) const { return state_->context->output(i); }

}  // namespace loom
