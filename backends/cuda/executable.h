#ifndef LOOM_BACKENDS_CUDA_EXECUTABLE_H_
#define LOOM_BACKENDS_CUDA_EXECUTABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cuda/codegen.h"
#include "backends/cuda/cuda_libraries.h"
#include "ir/module.h"
#include "ir/tensor.h"

namespace loom::cuda {

// A module compiled by the cuda pipeline, run on the GPU. Creating one needs
// no GPU; the first Run opens the device, compiles the source with NVRTC for
// its architecture (through the kernel cache), loads it, allocates device
// memory for every buffer (temporaries in one arena at the memory plan's
// offsets; internal buffers get none) and uploads the weights; a module with
// matrix products also loads cuBLAS and creates a handle. Each Run then
// copies the inputs in, launches the kernels and makes the cuBLAS calls of
// the launch table in order (all on the default stream) and copies the
// outputs out. Movable, not copyable.
class CudaExecutable {
 public:
  // The module must have been through lowering and codegen-cuda.
  static absl::StatusOr<CudaExecutable> Create(const Module& module,
                                               std::string cache_dir = DefaultCacheDir());

  CudaExecutable(CudaExecutable&& other) noexcept;
  CudaExecutable& operator=(CudaExecutable&& other) noexcept;
  CudaExecutable(const CudaExecutable&) = delete;
  CudaExecutable& operator=(const CudaExecutable&) = delete;
  ~CudaExecutable();

  // Runs the schedule on `inputs` (in the order of the graph's inputs;
  // types are checked) and returns the graph's outputs. Without a driver or
  // a device, or without cuBLAS for a module that calls it: a
  // FailedPreconditionError saying so.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);

  // Run, leaving the outputs in the executable's host storage, where
  // Outputs() copies them from (as CppExecutable does).
  absl::Status Execute(absl::Span<const Tensor> inputs);
  std::vector<Tensor> Outputs() const { return host_outputs_; }

  // Device time of the last Run's kernels and cuBLAS calls (no copies), in
  // seconds.
  double kernel_seconds() const { return kernel_seconds_; }
  // Of the NVRTC compile, once the first Run has happened.
  bool cache_hit() const { return cache_hit_; }
  double compile_seconds() const { return compile_seconds_; }

  // A device-to-device copy's bandwidth in GB/s (bytes read plus bytes
  // written), best of a few copies of 256 MiB: the roofline of the
  // bandwidth-bound kernels, measured in the same process.
  absl::StatusOr<double> MeasureCopyBandwidth();

 private:
  CudaExecutable() = default;
  // The device work of the first Run, in order: cuBLAS's handle (when the
  // module calls it), the module and each kernel with its launch shape,
  // the buffers' memory, the weights.
  absl::Status Bind();
  absl::Status BindCublas();
  absl::Status LoadModule();
  absl::Status LoadKernel(const std::string& name);
  // Device memory of at least `bytes`, rounded up to kDeviceAlignment.
  absl::StatusOr<CUdeviceptr> Allocate(int64_t bytes);
  absl::Status AllocateBuffers();
  void Release();
  absl::Status CheckInputs(absl::Span<const Tensor> inputs) const;
  // The launch table's kernels and cuBLAS calls, on the default stream.
  absl::Status EnqueueLaunches();
  // The run's error for a failed index check at index_checks_[check].
  absl::Status IndexError(int64_t check, int64_t index) const;

  // From the module.
  std::string source_;
  std::string cache_dir_;
  std::vector<std::string> functions_;
  LaunchTable launches_;
  std::vector<std::vector<CublasCall>> gemm_calls_;  // per launches_.gemms
  std::vector<int64_t> buffer_bytes_;
  std::vector<int64_t> element_bytes_;
  std::vector<int64_t> arena_offsets_;  // per buffer; -1 outside the arena
  int64_t arena_bytes_ = 0;
  std::vector<bool> needs_storage_;  // not internal
  std::vector<std::pair<BufferId, Tensor>> weights_;
  std::vector<BufferId> inputs_;
  std::vector<TensorType> input_types_;
  std::vector<BufferId> outputs_;
  std::vector<TensorType> output_types_;
  BufferId index_errors_ = -1;  // LoopProgram::index_errors
  std::vector<IndexCheck> index_checks_;

  // On the device, after Bind.
  bool bound_ = false;
  Device device_;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> kernels_;
  std::vector<LaunchShape> shapes_;
  const Cublas* cublas_ = nullptr;  // with a handle when the module calls it
  cublasHandle_t cublas_handle_ = nullptr;
  std::vector<CUdeviceptr> allocations_;
  std::vector<CUdeviceptr> pointers_;  // per buffer; 0 for internal ones
  bool cache_hit_ = false;
  double compile_seconds_ = 0;
  double kernel_seconds_ = 0;
  std::vector<Tensor> host_outputs_;
};

}  // namespace loom::cuda

#endif  // LOOM_BACKENDS_CUDA_EXECUTABLE_H_
