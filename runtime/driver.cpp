#include "runtime/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit::detail {

namespace {

/// Older names tried when a driver lacks the newest exported name (same signature).
const char* fallback_name(const char* name) {
  std::string_view n(name);
  if (n == "cuEventElapsedTime_v2") return "cuEventElapsedTime";
  return nullptr;
}

}  // namespace

Driver& Driver::instance() noexcept {
  static Driver driver;
  static std::once_flag once;
  std::call_once(once, [] { driver.load(); });
  return driver;
}

void Driver::load() noexcept {
  try {
    dlerror();
    handle_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* why = dlerror();
      error_call_ = "dlopen";
      error_ = fmt::format(
          "no CUDA driver: libcuda.so.1 could not be loaded ({}); a GPU is needed to launch kernels",
          why ? why : "unknown reason");
      unavailable_ = error_;
      return;
    }
    auto resolve = [&](const char* name) -> void* {
      void* p = dlsym(handle_, name);
      if (!p) {
        if (const char* alt = fallback_name(name)) p = dlsym(handle_, alt);
      }
      if (!p && error_.empty()) {
        error_call_ = "dlsym";
        error_ = fmt::format(
            "CUDA driver too old: libcuda.so.1 does not export {}; a GPU with a CUDA 12.8+ driver "
            "is needed to launch kernels",
            name);
      }
      return p;
    };
#define MXJIT_DRIVER_RESOLVE(name) name = reinterpret_cast<decltype(name)>(resolve(#name));
    MXJIT_DRIVER_FUNCTIONS(MXJIT_DRIVER_RESOLVE)
#undef MXJIT_DRIVER_RESOLVE
    if (!error_.empty()) {
      unavailable_ = error_;
      return;
    }
    CUresult r = cuInit(0);
    if (r != CUDA_SUCCESS) {
      error_call_ = "cuInit";
      error_code_ = static_cast<int>(r);
      error_ = fmt::format("cuInit failed: {}; a GPU is needed to launch kernels", describe(r));
      unavailable_ = error_;
      return;
    }
    int count = 0;
    r = cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
      unavailable_ = fmt::format("cuDeviceGetCount failed: {}", describe(r));
    } else if (count <= 0) {
      unavailable_ = "the CUDA driver is present but reports no GPU";
    }
    device_count_ = r == CUDA_SUCCESS ? count : 0;
  } catch (...) {  // only std::bad_alloc from formatting can land here
    error_call_ = "dlopen";
    error_ = "no CUDA driver: loading libcuda.so.1 failed";
    unavailable_ = error_;
  }
}

Driver& Driver::get() {
  Driver& d = instance();
  if (!d.error_.empty()) throw CudaError(d.error_, d.error_call_, d.error_code_);
  return d;
}

bool Driver::available() noexcept {
  Driver& d = instance();
  return d.error_.empty() && d.device_count_ > 0;
}

std::string Driver::unavailable_reason() {
  return available() ? std::string() : instance().unavailable_;
}

std::string Driver::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string s = name ? std::string(name) : fmt::format("CUresult {}", static_cast<int>(r));
  if (text) s += fmt::format(" ({})", text);
  return s;
}

void Driver::check(CUresult r, const char* call) const {
  if (r == CUDA_SUCCESS) return;
  throw CudaError(fmt::format("{} failed: {}", call, describe(r)), call, static_cast<int>(r));
}

}  // namespace mxjit::detail
