#include "backends/cuda/cuda_libraries.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/common/kernel_cache.h"
#include "ir/file_io.h"
#include "ir/status_macros.h"
#include "runtime/content_hash.h"

namespace loom::cuda {
namespace {

using kernel_cache::GetEnv;
using kernel_cache::MakeDirs;
using kernel_cache::WriteFileAtomically;

// dlopen's last error, or a placeholder.
std::string DlError() {
  const char* error = dlerror();
  return error == nullptr ? "unknown error" : error;
}

// Looks up `names` in order (newer symbol versions first) and stores the
// first found in `*function`.
template <typename Fn>
absl::Status Bind(void* library, std::vector<const char*> names, Fn* function,
                  absl::string_view what = "the CUDA driver") {
  for (const char* name : names) {
    if (void* symbol = dlsym(library, name)) {
      *function = reinterpret_cast<Fn>(symbol);
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat(what, " has no ", names.front(), " (too old?)"));
}

// Opens the first of `candidates` that loads; an error lists each failure.
absl::StatusOr<void*> OpenFirst(const std::vector<std::string>& candidates) {
  std::vector<std::string> errors;
  for (const std::string& path : candidates) {
    if (void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    errors.push_back(DlError());
  }
  return absl::NotFoundError(absl::StrJoin(errors, "; "));
}

absl::StatusOr<Driver> LoadDriver() {
  std::string path = GetEnv("LOOM_CUDA_DRIVER");
  if (path.empty()) path = "libcuda.so.1";
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver: ", path, " not found (", DlError(),
                     "); the cuda pipeline needs an NVIDIA GPU and its driver, use "
                     "--pipeline=cpu on this machine"));
  }
  Driver d;
  const absl::Status statuses[] = {
      Bind(library, {"cuInit"}, &d.Init),
      Bind(library, {"cuDeviceGetCount"}, &d.DeviceGetCount),
      Bind(library, {"cuDeviceGet"}, &d.DeviceGet),
      Bind(library, {"cuDeviceGetAttribute"}, &d.DeviceGetAttribute),
      Bind(library, {"cuDevicePrimaryCtxRetain"}, &d.DevicePrimaryCtxRetain),
      Bind(library, {"cuCtxSetCurrent"}, &d.CtxSetCurrent),
      Bind(library, {"cuCtxSynchronize"}, &d.CtxSynchronize),
      Bind(library, {"cuModuleLoadData"}, &d.ModuleLoadData),
      Bind(library, {"cuModuleUnload"}, &d.ModuleUnload),
      Bind(library, {"cuModuleGetFunction"}, &d.ModuleGetFunction),
      Bind(library, {"cuModuleGetGlobal_v2"}, &d.ModuleGetGlobal),
      Bind(library, {"cuFuncSetAttribute"}, &d.FuncSetAttribute),
      Bind(library, {"cuMemAlloc_v2"}, &d.MemAlloc),
      Bind(library, {"cuMemFree_v2"}, &d.MemFree),
      Bind(library, {"cuMemcpyHtoD_v2"}, &d.MemcpyHtoD),
      Bind(library, {"cuMemcpyDtoH_v2"}, &d.MemcpyDtoH),
      Bind(library, {"cuMemcpyDtoD_v2"}, &d.MemcpyDtoD),
      Bind(library, {"cuLaunchKernel"}, &d.LaunchKernel),
      Bind(library, {"cuEventCreate"}, &d.EventCreate),
      Bind(library, {"cuEventDestroy_v2", "cuEventDestroy"}, &d.EventDestroy),
      Bind(library, {"cuEventRecord"}, &d.EventRecord),
      Bind(library, {"cuEventSynchronize"}, &d.EventSynchronize),
      Bind(library, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &d.EventElapsedTime),
      Bind(library, {"cuGetErrorString"}, &d.GetErrorString),
  };
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return d;
}

// NVRTC's functions.
struct Nvrtc {
  decltype(&::nvrtcVersion) Version;
  decltype(&::nvrtcCreateProgram) CreateProgram;
  decltype(&::nvrtcDestroyProgram) DestroyProgram;
  decltype(&::nvrtcCompileProgram) CompileProgram;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize;
  decltype(&::nvrtcGetProgramLog) GetProgramLog;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize;
  decltype(&::nvrtcGetCUBIN) GetCUBIN;
  decltype(&::nvrtcGetErrorString) GetErrorString;
  std::string version;  // "13.0"
};

absl::StatusOr<Nvrtc> LoadNvrtc() {
  std::vector<std::string> candidates;
  if (std::string path = GetEnv("LOOM_NVRTC"); !path.empty()) {
    candidates.push_back(path);
  } else {
    candidates = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                  "/usr/local/cuda/lib64/libnvrtc.so"};
  }
  absl::StatusOr<void*> opened = OpenFirst(candidates);
  if (!opened.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVRTC not found (", opened.status().message(),
                     "); install the CUDA toolkit or set LOOM_NVRTC"));
  }
  void* library = *opened;
  Nvrtc n;
  const absl::Status statuses[] = {
      Bind(library, {"nvrtcVersion"}, &n.Version),
      Bind(library, {"nvrtcCreateProgram"}, &n.CreateProgram),
      Bind(library, {"nvrtcDestroyProgram"}, &n.DestroyProgram),
      Bind(library, {"nvrtcCompileProgram"}, &n.CompileProgram),
      Bind(library, {"nvrtcGetProgramLogSize"}, &n.GetProgramLogSize),
      Bind(library, {"nvrtcGetProgramLog"}, &n.GetProgramLog),
      Bind(library, {"nvrtcGetCUBINSize"}, &n.GetCUBINSize),
      Bind(library, {"nvrtcGetCUBIN"}, &n.GetCUBIN),
      Bind(library, {"nvrtcGetErrorString"}, &n.GetErrorString),
  };
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  int major = 0, minor = 0;
  n.Version(&major, &minor);
  n.version = absl::StrCat(major, ".", minor);
  return n;
}

absl::StatusOr<std::string> CompileWithNvrtc(const Nvrtc& nvrtc, std::string_view source,
                                             const std::vector<std::string>& options) {
  const std::string text(source);
  nvrtcProgram program = nullptr;
  nvrtcResult result = nvrtc.CreateProgram(&program, text.c_str(), "model.cu", 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("nvrtcCreateProgram: ", nvrtc.GetErrorString(result)));
  }
  std::vector<const char*> argv;
  for (const std::string& option : options) argv.push_back(option.c_str());
  result = nvrtc.CompileProgram(program, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  std::string log;
  if (nvrtc.GetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtc.GetProgramLog(program, log.data());
    log.resize(log_size - 1);
  }
  std::string cubin;
  if (result == NVRTC_SUCCESS) {
    size_t size = 0;
    result = nvrtc.GetCUBINSize(program, &size);
    if (result == NVRTC_SUCCESS) {
      cubin.resize(size);
      result = nvrtc.GetCUBIN(program, cubin.data());
    }
  }
  nvrtc.DestroyProgram(&program);
  if (result != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("NVRTC compile of the generated CUDA failed (",
                                            nvrtc.GetErrorString(result), ") with options ",
                                            absl::StrJoin(options, " "), ":\n", log));
  }
  return cubin;
}

}  // namespace

absl::Status Driver::Check(CUresult result, absl::string_view what) const {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* text = nullptr;
  if (GetErrorString == nullptr || GetErrorString(result, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "unknown error";
  }
  return absl::InternalError(
      absl::StrCat(what, " failed: ", text, " (CUresult ", static_cast<int>(result), ")"));
}

absl::StatusOr<Cublas> LoadCublas() {
  std::vector<std::string> candidates;
  if (std::string path = GetEnv("LOOM_CUBLAS"); !path.empty()) {
    candidates.push_back(path);
  } else {
    candidates = {"libcublas.so.13", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"};
  }
  absl::StatusOr<void*> library = OpenFirst(candidates);
  if (!library.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuBLAS not found (", library.status().message(),
                     "); the model's matrix products call it: install cuBLAS (libcublas) "
                     "or set LOOM_CUBLAS"));
  }
  Cublas c;
  const absl::Status statuses[] = {
      Bind(*library, {"cublasCreate_v2"}, &c.Create, "cuBLAS"),
      Bind(*library, {"cublasDestroy_v2"}, &c.Destroy, "cuBLAS"),
      Bind(*library, {"cublasSgemmStridedBatched"}, &c.SgemmStridedBatched, "cuBLAS"),
      Bind(*library, {"cublasDgemmStridedBatched"}, &c.DgemmStridedBatched, "cuBLAS"),
      Bind(*library, {"cublasGetStatusString"}, &c.GetStatusString, "cuBLAS"),
  };
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return c;
}

absl::Status Cublas::Check(cublasStatus_t status, absl::string_view what) const {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const char* text = GetStatusString(status);
  return absl::InternalError(absl::StrCat(what,
                                          " failed: ", text != nullptr ? text : "unknown error",
                                          " (cublasStatus_t ", static_cast<int>(status), ")"));
}

std::string Device::Arch() const { return absl::StrCat("sm_", major, minor); }

absl::StatusOr<Device> OpenDevice() {
  static const absl::StatusOr<Device>* const device =
      new absl::StatusOr<Device>([]() -> absl::StatusOr<Device> {
        static absl::StatusOr<Driver> driver = LoadDriver();
        if (!driver.ok()) return driver.status();
        const Driver& d = *driver;
        const CUresult init = d.Init(0);
        int count = 0;
        if (init != CUDA_SUCCESS || d.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
          const absl::Status cause =
              d.Check(init != CUDA_SUCCESS ? init : CUDA_ERROR_NO_DEVICE, "cuInit");
          return absl::FailedPreconditionError(
              absl::StrCat("no CUDA device: ", cause.message(),
                           "; the cuda pipeline needs an NVIDIA GPU, use --pipeline=cpu "
                           "on this machine"));
        }
        Device device;
        device.driver = &d;
        if (absl::Status s = d.Check(d.DeviceGet(&device.device, 0), "cuDeviceGet"); !s.ok()) {
          return s;
        }
        const std::pair<CUdevice_attribute, int*> attributes[] = {
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &device.major},
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &device.minor},
            {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &device.multiprocessors},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &device.max_shared_per_block},
        };
        for (const auto& [attribute, value] : attributes) {
          if (absl::Status s = d.Check(d.DeviceGetAttribute(value, attribute, device.device),
                                       "cuDeviceGetAttribute");
              !s.ok()) {
            return s;
          }
        }
        if (absl::Status s = d.Check(d.DevicePrimaryCtxRetain(&device.context, device.device),
                                     "cuDevicePrimaryCtxRetain");
            !s.ok()) {
          return s;
        }
        return device;
      }());
  if (!device->ok()) return device->status();
  const Device& d = **device;
  if (absl::Status s = d.driver->Check(d.driver->CtxSetCurrent(d.context), "cuCtxSetCurrent");
      !s.ok()) {
    return s;
  }
  return d;
}

absl::StatusOr<Cubin> CompileCubin(std::string_view source, const std::string& arch,
                                   const std::string& cache_dir) {
  static const absl::StatusOr<Nvrtc>* const nvrtc = new absl::StatusOr<Nvrtc>(LoadNvrtc());
  if (!nvrtc->ok()) return nvrtc->status();
  if (cache_dir.empty()) {
    return absl::InvalidArgumentError("no kernel cache dir: set $LOOM_CACHE_DIR or $HOME");
  }
  const std::vector<std::string> options = {absl::StrCat("-arch=", arch), "--std=c++17"};
  ContentHasher hash;
  hash.Add(source);
  for (const std::string& option : options) hash.Add(option);
  hash.Add((*nvrtc)->version);
  const std::string base = absl::StrCat(cache_dir, "/", hash.HexDigest());
  const std::string cubin_path = base + ".cubin";
  Cubin cubin;
  if (absl::StatusOr<std::string> cached = ReadFileBytes(cubin_path);
      cached.ok() && !cached->empty()) {
    cubin.data = *std::move(cached);
    cubin.cache_hit = true;
    return cubin;
  }
  LOOM_RETURN_IF_ERROR(MakeDirs(cache_dir));
  // The source beside its cubin, for whoever debugs a kernel.
  LOOM_RETURN_IF_ERROR(WriteFileAtomically(base + ".cu", source));
  const auto start = std::chrono::steady_clock::now();
  LOOM_ASSIGN_OR_RETURN(std::string data, CompileWithNvrtc(**nvrtc, source, options));
  cubin.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cubin.data = std::move(data);
  LOOM_RETURN_IF_ERROR(WriteFileAtomically(cubin_path, cubin.data));
  return cubin;
}

}  // namespace loom::cuda
