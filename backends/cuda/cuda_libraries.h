#ifndef LOOM_BACKENDS_CUDA_CUDA_LIBRARIES_H_
#define LOOM_BACKENDS_CUDA_CUDA_LIBRARIES_H_

// The CUDA libraries the backend runs on: the driver API, NVRTC and cuBLAS, all
// loaded with dlopen when first needed (loom never links them, so it builds
// and runs its CPU path on machines without a GPU, a driver or a toolkit;
// the headers give only types), and a disk cache of compiled kernels keyed
// by content hash.

#include <cublas_v2.h>
#include <cuda.h>
#include <nvrtc.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/common/kernel_cache.h"

namespace loom::cuda {

// The driver API functions loom calls. The library is $LOOM_CUDA_DRIVER if
// set (tests point it at a missing file to take the no-GPU path anywhere),
// else libcuda.so.1.
struct Driver {
  decltype(&::cuInit) Init;
  decltype(&::cuDeviceGetCount) DeviceGetCount;
  decltype(&::cuDeviceGet) DeviceGet;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent;
  decltype(&::cuCtxSynchronize) CtxSynchronize;
  decltype(&::cuModuleLoadData) ModuleLoadData;
  decltype(&::cuModuleUnload) ModuleUnload;
  decltype(&::cuModuleGetFunction) ModuleGetFunction;
  decltype(&::cuModuleGetGlobal) ModuleGetGlobal;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute;
  decltype(&::cuMemAlloc) MemAlloc;
  decltype(&::cuMemFree) MemFree;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH;
  decltype(&::cuMemcpyDtoD) MemcpyDtoD;
  decltype(&::cuLaunchKernel) LaunchKernel;
  decltype(&::cuEventCreate) EventCreate;
  decltype(&::cuEventDestroy) EventDestroy;
  decltype(&::cuEventRecord) EventRecord;
  decltype(&::cuEventSynchronize) EventSynchronize;
  decltype(&::cuEventElapsedTime) EventElapsedTime;
  decltype(&::cuGetErrorString) GetErrorString;

  // OK for CUDA_SUCCESS, else an InternalError naming `what` and the error.
  absl::Status Check(CUresult result, absl::string_view what) const;
};

// The device loom runs on (device 0), with its primary context current on
// the calling thread.
struct Device {
  const Driver* driver = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  int max_shared_per_block = 0;  // bytes, with opt-in
  std::string Arch() const;      // "sm_90"
};

// Loads the driver and initialises device 0, once per process (later calls
// only make its context current). Without a driver or a device: a
// FailedPreconditionError that says so and suggests the cpu pipeline.
absl::StatusOr<Device> OpenDevice();

// The cuBLAS functions loom calls (matrix products: LaunchTable::gemms).
// The library is $LOOM_CUBLAS if set, else the first of libcublas.so.13,
// libcublas.so and /usr/local/cuda/lib64/libcublas.so that loads.
struct Cublas {
  decltype(&::cublasCreate_v2) Create;
  decltype(&::cublasDestroy_v2) Destroy;
  decltype(&::cublasSgemmStridedBatched) SgemmStridedBatched;
  decltype(&::cublasDgemmStridedBatched) DgemmStridedBatched;
  decltype(&::cublasGetStatusString) GetStatusString;

  // OK for CUBLAS_STATUS_SUCCESS, else an InternalError naming `what` and
  // the status.
  absl::Status Check(cublasStatus_t status, absl::string_view what) const;
};

// Loads cuBLAS (each call anew; dlopen keeps one copy). Without it: a
// FailedPreconditionError naming the library.
absl::StatusOr<Cublas> LoadCublas();

// A compiled module image.
struct Cubin {
  std::string data;
  bool cache_hit = false;
  double compile_seconds = 0;  // 0 on a cache hit
};

// Compiles CUDA C++ `source` with NVRTC for `arch` ("sm_90") into
// <cache_dir>/<hash>.cubin unless that is cached; the hash covers the
// source, the options and NVRTC's version. Entries appear atomically. NVRTC
// is $LOOM_NVRTC if set, else the first of libnvrtc.so, libnvrtc.so.13,
// libnvrtc.so.12 and /usr/local/cuda/lib64/libnvrtc.so that loads. A
// compile error is an InternalError with NVRTC's log.
absl::StatusOr<Cubin> CompileCubin(std::string_view source, const std::string& arch,
                                   const std::string& cache_dir);

// $LOOM_CACHE_DIR if set, else $HOME/.cache/loom; empty if neither is set.
using kernel_cache::DefaultCacheDir;

}  // namespace loom::cuda

#endif  // LOOM_BACKENDS_CUDA_CUDA_LIBRARIES_H_
