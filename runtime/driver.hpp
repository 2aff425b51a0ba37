#pragma once
/// \file The CUDA Driver API, loaded at run time with dlopen("libcuda.so.1"). mxjit never links
/// libcuda, so programs start on machines without a GPU or driver and say so clearly.
#include <cuda.h>  // types and prototypes only; every function is called through Driver

#include <string>

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "mxjit resolves the legacy-stream Driver API symbols; do not define CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

namespace mxjit::detail {

/// The dlopen'ed CUDA driver: one process-wide instance holding a pointer per Driver API entry
/// point, resolved by its exact exported (versioned) name. Loading is lazy, thread-safe and silent.
class Driver {
 public:
  /// The loaded driver, cuInit done. Throws CudaError (call "dlopen", "dlsym" or "cuInit") when
  /// the driver is absent or unusable; the message says a GPU is needed to launch kernels.
  static Driver& get();
  /// True when the driver loaded, cuInit succeeded and at least one device is present. Never throws.
  static bool available() noexcept;
  /// Why available() is false, in words; empty when it is true.
  static std::string unavailable_reason();
  /// Throws CudaError("<call> failed: CUDA_ERROR_... (text)", call, r) unless r is CUDA_SUCCESS.
  void check(CUresult r, const char* call) const;
  /// "CUDA_ERROR_... (text)" for a result code.
  std::string describe(CUresult r) const;

  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

/// Every entry point, by the exact name libcuda exports (cuda.h maps e.g. cuMemAlloc to
/// cuMemAlloc_v2; the members carry the real names so no macro renames them).
#define MXJIT_DRIVER_FUNCTIONS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)  \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain)             \
  X(cuDevicePrimaryCtxRelease_v2) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxGetDevice) \
  X(cuCtxSynchronize) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2)                \
  X(cuMemcpyDtoH_v2) X(cuMemcpyDtoD_v2) X(cuMemcpyDtoDAsync_v2) X(cuMemsetD8_v2)         \
  X(cuMemsetD8Async) X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetKernel)       \
  X(cuKernelGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel)   \
  X(cuLaunchKernelEx)                                                                    \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                         \
  X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize)                         \
  X(cuStreamBeginCapture_v2) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags)        \
  X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuEventCreate)              \
  X(cuStreamIsCapturing) X(cuThreadExchangeStreamCaptureMode)                            \
  X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime_v2) X(cuEventDestroy_v2)   \
  X(cuGetErrorName) X(cuGetErrorString)

#define MXJIT_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  MXJIT_DRIVER_FUNCTIONS(MXJIT_DRIVER_MEMBER)
#undef MXJIT_DRIVER_MEMBER

 private:
  Driver() = default;
  /// Loads the library and resolves every symbol; records failures instead of throwing.
  void load() noexcept;
  /// The process-wide instance, loaded once.
  static Driver& instance() noexcept;

  void* handle_ = nullptr;
  std::string error_call_;    ///< "dlopen", "dlsym" or "cuInit" when loading failed
  std::string error_;         ///< the message thrown by get() when loading failed
  int error_code_ = -1;
  int device_count_ = 0;
  std::string unavailable_;   ///< unavailable_reason() (also covers zero devices)
};

/// The calling thread's current context; when none is current, GPU 0's primary context is made
/// current first (see mxjit::make_current). Throws CudaError without a GPU. Defined in device.cpp.
CUcontext current_context();

}  // namespace mxjit::detail
