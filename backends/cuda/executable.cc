#include "backends/cuda/executable.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/index_error.h"
#include "ir/status_macros.h"

namespace loom::cuda {
namespace {

// Device memory is allocated in multiples of this, so every buffer and the
// arena start aligned for any access the kernels make.
constexpr int64_t kDeviceAlignment = 256;
// Blocks launched per multiprocessor at most: the kernels loop over the
// outer iterations beyond the grid.
constexpr int64_t kBlocksPerMultiprocessor = 32;
// Static shared memory a block may use without opting in.
constexpr int64_t kDefaultSharedBytes = 48 << 10;
constexpr int64_t kCopyBytes = int64_t{256} << 20;

// Times what `work` enqueues on the default stream, in seconds.
template <typename Work>
absl::StatusOr<double> TimeOnDevice(const Driver& d, Work work) {
  CUevent events[2] = {nullptr, nullptr};
  absl::Status status;
  for (CUevent& event : events) {
    if (status.ok()) {
      status = d.Check(d.EventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
    }
  }
  if (status.ok()) status = d.Check(d.EventRecord(events[0], nullptr), "cuEventRecord");
  if (status.ok()) status = work();
  if (status.ok()) status = d.Check(d.EventRecord(events[1], nullptr), "cuEventRecord");
  if (status.ok()) {
    status = d.Check(d.EventSynchronize(events[1]), "running the kernels (cuEventSynchronize)");
  }
  float milliseconds = 0;
  if (status.ok()) {
    status = d.Check(d.EventElapsedTime(&milliseconds, events[0], events[1]), "cuEventElapsedTime");
  }
  for (CUevent event : events) {
    if (event != nullptr) d.EventDestroy(event);
  }
  if (!status.ok()) return status;
  return milliseconds / 1e3;
}

// Makes `call` with cuBLAS's `gemm` for element type T, on the pointers
// `p` of its a, b and c.
template <typename T, typename GemmFunction>
cublasStatus_t CallGemm(GemmFunction gemm, cublasHandle_t handle, const CublasCall& call,
                        const CUdeviceptr (&p)[3]) {
  const T one = 1, zero = 0;
  return gemm(handle, call.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
              call.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, call.m, call.n, call.k, &one,
              reinterpret_cast<const T*>(p[0]), call.lda, call.stride_a,
              reinterpret_cast<const T*>(p[1]), call.ldb, call.stride_b,
              call.accumulate ? &one : &zero, reinterpret_cast<T*>(p[2]), call.ldc, call.stride_c,
              call.batch_count);
}

// Enqueues `calls` on the buffers at `pointers` (on the handle's stream).
absl::Status CallCublas(const Cublas& cublas, cublasHandle_t handle,
                        const std::vector<CublasCall>& calls,
                        const std::vector<CUdeviceptr>& pointers) {
  for (const CublasCall& call : calls) {
    const int64_t bytes = DTypeSize(call.dtype);
    const CUdeviceptr p[3] = {pointers[call.a.buffer] + call.a.offset * bytes,
                              pointers[call.b.buffer] + call.b.offset * bytes,
                              pointers[call.c.buffer] + call.c.offset * bytes};
    const bool f32 = call.dtype == DType::kF32;
    const cublasStatus_t status =
        f32 ? CallGemm<float>(cublas.SgemmStridedBatched, handle, call, p)
            : CallGemm<double>(cublas.DgemmStridedBatched, handle, call, p);
    if (absl::Status s =
            cublas.Check(status, f32 ? "cublasSgemmStridedBatched" : "cublasDgemmStridedBatched");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CudaExecutable> CudaExecutable::Create(const Module& module, std::string cache_dir) {
  if (!module.loops.has_value() || !module.source.has_value() ||
      module.source->language != "cuda") {
    return absl::FailedPreconditionError(
        "the pipeline emitted no CUDA (does it end with 'codegen-cuda'?)");
  }
  const LoopProgram& program = *module.loops;
  const MemoryPlan* plan = module.schedule.has_value() && module.schedule->memory.has_value()
                               ? &*module.schedule->memory
                               : nullptr;
  if (plan != nullptr && plan->offsets.size() != program.buffers.size()) {
    return absl::InternalError("the memory plan does not cover every buffer");
  }
  CudaExecutable e;
  e.source_ = module.source->text;
  e.cache_dir_ = std::move(cache_dir);
  e.functions_ = module.source->functions;
  e.launches_ = module.source->launches;
  for (const Gemm& gemm : e.launches_.gemms) {
    e.gemm_calls_.push_back(CublasCalls(gemm));
  }
  e.arena_bytes_ = plan != nullptr ? plan->arena_bytes : 0;
  for (BufferId id = 0; id < static_cast<BufferId>(program.buffers.size()); ++id) {
    const Buffer& buffer = program.buffers[id];
    e.element_bytes_.push_back(DTypeSize(buffer.dtype));
    e.buffer_bytes_.push_back(NumBytes(buffer.dtype, buffer.sizes));
    const bool temp = buffer.kind == BufferKind::kTemp;
    const int64_t offset = plan != nullptr && temp ? plan->offsets[id] : -1;
    e.arena_offsets_.push_back(offset);
    // Planned temporaries outside the arena are internal: no kernel touches
    // their memory.
    e.needs_storage_.push_back(!(plan != nullptr && temp && offset < 0));
    if (buffer.kind == BufferKind::kWeight) {
      e.weights_.emplace_back(id, module.graph.initializer(buffer.source));
    }
  }
  e.inputs_ = program.inputs;
  for (BufferId id : program.inputs) {
    e.input_types_.push_back(TensorType{program.buffers[id].dtype, program.buffers[id].sizes});
  }
  e.index_errors_ = program.index_errors;
  e.index_checks_ = program.index_checks;
  e.outputs_ = program.outputs;
  for (BufferId id : program.outputs) {
    e.output_types_.push_back(TensorType{program.buffers[id].dtype, program.buffers[id].sizes});
  }
  return e;
}

CudaExecutable::CudaExecutable(CudaExecutable&& other) noexcept { *this = std::move(other); }

CudaExecutable& CudaExecutable::operator=(CudaExecutable&& other) noexcept {
  if (this == &other) return *this;
  Release();
  source_ = std::move(other.source_);
  cache_dir_ = std::move(other.cache_dir_);
  functions_ = std::move(other.functions_);
  launches_ = std::move(other.launches_);
  gemm_calls_ = std::move(other.gemm_calls_);
  buffer_bytes_ = std::move(other.buffer_bytes_);
  element_bytes_ = std::move(other.element_bytes_);
  arena_offsets_ = std::move(other.arena_offsets_);
  arena_bytes_ = other.arena_bytes_;
  needs_storage_ = std::move(other.needs_storage_);
  weights_ = std::move(other.weights_);
  inputs_ = std::move(other.inputs_);
  input_types_ = std::move(other.input_types_);
  outputs_ = std::move(other.outputs_);
  output_types_ = std::move(other.output_types_);
  index_errors_ = other.index_errors_;
  index_checks_ = std::move(other.index_checks_);
  bound_ = std::exchange(other.bound_, false);
  device_ = other.device_;
  module_ = std::exchange(other.module_, nullptr);
  kernels_ = std::move(other.kernels_);
  shapes_ = std::move(other.shapes_);
  cublas_ = other.cublas_;
  cublas_handle_ = std::exchange(other.cublas_handle_, nullptr);
  allocations_ = std::move(other.allocations_);
  other.allocations_.clear();
  pointers_ = std::move(other.pointers_);
  cache_hit_ = other.cache_hit_;
  compile_seconds_ = other.compile_seconds_;
  kernel_seconds_ = other.kernel_seconds_;
  host_outputs_ = std::move(other.host_outputs_);
  return *this;
}

CudaExecutable::~CudaExecutable() { Release(); }

void CudaExecutable::Release() {
  // Failures while freeing leave nothing to recover.
  if (device_.driver == nullptr) return;
  for (CUdeviceptr pointer : allocations_) device_.driver->MemFree(pointer);
  allocations_.clear();
  if (module_ != nullptr) device_.driver->ModuleUnload(module_);
  module_ = nullptr;
  if (cublas_handle_ != nullptr) cublas_->Destroy(cublas_handle_);
  cublas_handle_ = nullptr;
  kernels_.clear();
  shapes_.clear();
  pointers_.clear();
  bound_ = false;
}

absl::Status CudaExecutable::Bind() {
  LOOM_ASSIGN_OR_RETURN(Device device, OpenDevice());
  device_ = device;
  if (!gemm_calls_.empty()) LOOM_RETURN_IF_ERROR(BindCublas());
  // A module of library calls alone has no kernels to compile.
  if (!functions_.empty()) LOOM_RETURN_IF_ERROR(LoadModule());
  for (const std::string& name : functions_) LOOM_RETURN_IF_ERROR(LoadKernel(name));
  LOOM_RETURN_IF_ERROR(AllocateBuffers());
  const Driver& d = *device_.driver;
  for (const auto& [id, tensor] : weights_) {
    LOOM_RETURN_IF_ERROR(d.Check(d.MemcpyHtoD(pointers_[id], tensor.data(), tensor.num_bytes()),
                                 "uploading weights (cuMemcpyHtoD)"));
  }
  bound_ = true;
  return absl::OkStatus();
}

absl::Status CudaExecutable::BindCublas() {
  static const absl::StatusOr<Cublas>* const cublas = new absl::StatusOr<Cublas>(LoadCublas());
  if (!cublas->ok()) return cublas->status();
  cublas_ = &**cublas;
  // The handle's stream is the default one, the kernels' own.
  if (absl::Status s = cublas_->Check(cublas_->Create(&cublas_handle_), "cublasCreate"); !s.ok()) {
    cublas_handle_ = nullptr;
    return s;
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::LoadModule() {
  const Driver& d = *device_.driver;
  LOOM_ASSIGN_OR_RETURN(Cubin cubin, CompileCubin(source_, device_.Arch(), cache_dir_));
  cache_hit_ = cubin.cache_hit;
  compile_seconds_ = cubin.compile_seconds;
  return d.Check(d.ModuleLoadData(&module_, cubin.data.data()), "cuModuleLoadData");
}

absl::Status CudaExecutable::LoadKernel(const std::string& name) {
  const Driver& d = *device_.driver;
  CUfunction function = nullptr;
  LOOM_RETURN_IF_ERROR(d.Check(d.ModuleGetFunction(&function, module_, name.c_str()),
                               absl::StrCat("cuModuleGetFunction ", name)));
  // The function's launch shape, from the module itself.
  const std::string symbol = LaunchShapeSymbol(name);
  CUdeviceptr address = 0;
  size_t bytes = 0;
  long long shape[3] = {1, 1, 0};
  LOOM_RETURN_IF_ERROR(d.Check(d.ModuleGetGlobal(&address, &bytes, module_, symbol.c_str()),
                               absl::StrCat("cuModuleGetGlobal ", symbol)));
  if (bytes != sizeof(shape)) {
    return absl::InternalError(absl::StrCat(symbol, " has ", bytes, " bytes"));
  }
  LOOM_RETURN_IF_ERROR(d.Check(d.MemcpyDtoH(shape, address, sizeof(shape)), "cuMemcpyDtoH"));
  const LaunchShape launch{shape[0], shape[1], shape[2]};
  if (launch.shared_bytes > device_.max_shared_per_block) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, " needs ", launch.shared_bytes, " bytes of shared memory per block; the device has ",
        device_.max_shared_per_block));
  }
  if (launch.shared_bytes > kDefaultSharedBytes) {
    LOOM_RETURN_IF_ERROR(
        d.Check(d.FuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(launch.shared_bytes)),
                "cuFuncSetAttribute"));
  }
  kernels_.push_back(function);
  shapes_.push_back(launch);
  return absl::OkStatus();
}

absl::StatusOr<CUdeviceptr> CudaExecutable::Allocate(int64_t bytes) {
  const Driver& d = *device_.driver;
  CUdeviceptr pointer = 0;
  const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + kDeviceAlignment - 1) /
                                          kDeviceAlignment * kDeviceAlignment);
  LOOM_RETURN_IF_ERROR(
      d.Check(d.MemAlloc(&pointer, size), absl::StrCat("cuMemAlloc of ", size, " bytes")));
  allocations_.push_back(pointer);
  return pointer;
}

absl::Status CudaExecutable::AllocateBuffers() {
  CUdeviceptr arena = 0;
  if (arena_bytes_ > 0) {
    LOOM_ASSIGN_OR_RETURN(CUdeviceptr pointer, Allocate(arena_bytes_));
    arena = pointer;
  }
  pointers_.assign(buffer_bytes_.size(), 0);
  for (size_t id = 0; id < buffer_bytes_.size(); ++id) {
    if (arena_offsets_[id] >= 0) {
      pointers_[id] = arena + arena_offsets_[id];
    } else if (needs_storage_[id]) {
      LOOM_ASSIGN_OR_RETURN(CUdeviceptr pointer, Allocate(buffer_bytes_[id]));
      pointers_[id] = pointer;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> CudaExecutable::Run(absl::Span<const Tensor> inputs) {
  LOOM_RETURN_IF_ERROR(Execute(inputs));
  return Outputs();
}

absl::Status CudaExecutable::Execute(absl::Span<const Tensor> inputs) {
  LOOM_RETURN_IF_ERROR(CheckInputs(inputs));
  if (!bound_) {
    absl::Status status = Bind();
    if (!status.ok()) {
      Release();
      return status;
    }
  }
  const Driver& d = *device_.driver;
  LOOM_RETURN_IF_ERROR(d.Check(d.CtxSetCurrent(device_.context), "cuCtxSetCurrent"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    LOOM_RETURN_IF_ERROR(
        d.Check(d.MemcpyHtoD(pointers_[inputs_[i]], inputs[i].data(), inputs[i].num_bytes()),
                "copying inputs in (cuMemcpyHtoD)"));
  }
  int64_t errors[2] = {0, 0};  // the index error slot (BufferKind::kIndexErrors)
  if (index_errors_ >= 0) {
    LOOM_RETURN_IF_ERROR(d.Check(d.MemcpyHtoD(pointers_[index_errors_], errors, sizeof(errors)),
                                 "clearing the index error slot (cuMemcpyHtoD)"));
  }
  LOOM_ASSIGN_OR_RETURN(kernel_seconds_, TimeOnDevice(d, [this] { return EnqueueLaunches(); }));
  if (index_errors_ >= 0) {
    LOOM_RETURN_IF_ERROR(d.Check(d.MemcpyDtoH(errors, pointers_[index_errors_], sizeof(errors)),
                                 "reading the index error slot (cuMemcpyDtoH)"));
    if (errors[0] != 0) return IndexError(errors[0] - 1, errors[1]);
  }
  host_outputs_.resize(outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    Tensor& tensor = host_outputs_[i];
    if (tensor.type() != output_types_[i]) tensor = Tensor(output_types_[i]);
    LOOM_RETURN_IF_ERROR(
        d.Check(d.MemcpyDtoH(tensor.data(), pointers_[outputs_[i]], tensor.num_bytes()),
                "copying outputs out (cuMemcpyDtoH)"));
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::CheckInputs(absl::Span<const Tensor> inputs) const {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes ", inputs_.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].type() != input_types_[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input #", i, " is ", TypeToString(inputs[i].type()), ", the model expects ",
                       TypeToString(input_types_[i])));
    }
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::EnqueueLaunches() {
  const Driver& d = *device_.driver;
  const int64_t max_blocks =
      std::max<int64_t>(1, device_.multiprocessors * kBlocksPerMultiprocessor);
  std::vector<CUdeviceptr> values;
  std::vector<void*> params;
  for (size_t i = 0; i < launches_.size(); ++i) {
    if (launches_.IsGemm(i)) {
      LOOM_RETURN_IF_ERROR(
          CallCublas(*cublas_, cublas_handle_, gemm_calls_[launches_.GemmOf(i)], pointers_));
      continue;
    }
    values.clear();
    for (int a = launches_.arg_offsets[i]; a < launches_.arg_offsets[i + 1]; ++a) {
      const BufferRef& arg = launches_.args[a];
      const CUdeviceptr base = pointers_[arg.buffer];
      values.push_back(base == 0 ? 0 : base + arg.offset * element_bytes_[arg.buffer]);
    }
    params.clear();
    for (CUdeviceptr& value : values) params.push_back(&value);
    const int f = launches_.function[i];
    const LaunchShape& shape = shapes_[f];
    const unsigned grid = static_cast<unsigned>(std::min(shape.blocks, max_blocks));
    LOOM_RETURN_IF_ERROR(d.Check(
        d.LaunchKernel(kernels_[f], grid, 1, 1, static_cast<unsigned>(shape.threads), 1, 1,
                       static_cast<unsigned>(shape.shared_bytes), nullptr, params.data(), nullptr),
        absl::StrCat("launching ", functions_[f])));
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::IndexError(int64_t check, int64_t index) const {
  if (check < 0 || check >= static_cast<int64_t>(index_checks_.size())) {
    return absl::InternalError(absl::StrCat("a kernel reports index ", index,
                                            " out of range at an unknown check ", check));
  }
  const IndexCheck& site = index_checks_[check];
  return absl::InvalidArgumentError(
      IndexOutOfRangeMessage(site.node, site.op, index, site.axis, site.extent));
}

absl::StatusOr<double> CudaExecutable::MeasureCopyBandwidth() {
  LOOM_ASSIGN_OR_RETURN(Device device, OpenDevice());
  const Driver& d = *device.driver;
  CUdeviceptr buffers[2] = {0, 0};
  absl::Status status;
  for (CUdeviceptr& buffer : buffers) {
    if (status.ok()) status = d.Check(d.MemAlloc(&buffer, kCopyBytes), "cuMemAlloc");
  }
  double best = 0;
  for (int rep = 0; rep < 6 && status.ok(); ++rep) {
    absl::StatusOr<double> seconds = TimeOnDevice(d, [&] {
      return d.Check(d.MemcpyDtoD(buffers[1], buffers[0], kCopyBytes), "cuMemcpyDtoD");
    });
    if (!seconds.ok()) {
      status = seconds.status();
    } else if (rep > 0 && *seconds > 0) {  // the first copy warms up
      best = std::max(best, 2.0 * kCopyBytes / *seconds / 1e9);
    }
  }
  for (CUdeviceptr buffer : buffers) {
    if (buffer != 0) d.MemFree(buffer);
  }
  if (!status.ok()) return status;
  return best;
}

}  // namespace loom::cuda
