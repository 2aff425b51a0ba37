#include "runtime/device.hpp"

#include <array>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "runtime/driver.hpp"

namespace mxjit {

using detail::Driver;

namespace {

/// Retained primary contexts, one per ordinal, kept for the life of the process.
CUcontext primary_context(Driver& d, int ordinal) {
  static std::mutex mutex;
  static std::vector<CUcontext> retained;
  std::lock_guard lock(mutex);
  if (ordinal < static_cast<int>(retained.size()) && retained[ordinal]) return retained[ordinal];
  CUdevice dev = 0;
  d.check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  CUcontext ctx = nullptr;
  d.check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  if (ordinal >= static_cast<int>(retained.size())) retained.resize(ordinal + 1, nullptr);
  retained[ordinal] = ctx;
  return ctx;
}

void check_ordinal(int ordinal) {
  Driver& d = Driver::get();
  int count = 0;
  d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw UsageError(fmt::format("GPU ordinal {} does not exist: {} GPU(s) present (valid: 0..{})",
                                 ordinal, count, count - 1));
}

CUstream as_stream(uint64_t s) { return reinterpret_cast<CUstream>(static_cast<uintptr_t>(s)); }

}  // namespace

bool gpu_available() noexcept { return Driver::available(); }

std::string gpu_unavailable_reason() { return Driver::unavailable_reason(); }

GpuInfo gpu_info(int ordinal) {
  check_ordinal(ordinal);
  Driver& d = Driver::get();
  CUdevice dev = 0;
  d.check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  GpuInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  d.check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    d.check(d.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  info.max_smem_per_block_optin =
      static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  size_t total = 0;
  d.check(d.cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem");
  info.total_mem = total;
  d.check(d.cuDriverGetVersion(&info.driver_version), "cuDriverGetVersion");
  return info;
}

std::string nvrtc_arch(int cc_major, int cc_minor) {
  if (cc_major < 1 || cc_minor < 0 || cc_minor > 9)
    throw UsageError(fmt::format("compute capability {}.{} is not valid", cc_major, cc_minor));
  bool arch_specific = (cc_major == 9 && cc_minor == 0) || cc_major >= 10;
  return fmt::format("sm_{}{}{}", cc_major, cc_minor, arch_specific ? "a" : "");
}

void make_current(int ordinal) {
  check_ordinal(ordinal);
  Driver& d = Driver::get();
  CUcontext cur = nullptr;
  d.check(d.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur) {
    CUdevice cur_dev = -1, want = -1;
    d.check(d.cuCtxGetDevice(&cur_dev), "cuCtxGetDevice");
    d.check(d.cuDeviceGet(&want, ordinal), "cuDeviceGet");
    if (cur_dev == want) return;
  }
  d.check(d.cuCtxSetCurrent(primary_context(d, ordinal)), "cuCtxSetCurrent");
}

// ---- DeviceBuffer ----

DeviceBuffer DeviceBuffer::alloc(size_t bytes) {
  Driver& d = Driver::get();
  DeviceBuffer b;
  b.context_ = detail::current_context();
  CUdeviceptr p = 0;
  if (bytes > 0) d.check(d.cuMemAlloc_v2(&p, bytes), "cuMemAlloc");
  b.ptr_ = static_cast<uint64_t>(p);
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)),
      context_(std::exchange(o.context_, nullptr)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
    context_ = std::exchange(o.context_, nullptr);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

void DeviceBuffer::reset() noexcept {
  if (ptr_) {
    Driver& d = Driver::get();  // cannot throw: ptr_ != 0 means the driver loaded
    CUcontext cur = nullptr;
    d.cuCtxGetCurrent(&cur);
    if (!cur && context_) d.cuCtxSetCurrent(static_cast<CUcontext>(context_));
    d.cuMemFree_v2(static_cast<CUdeviceptr>(ptr_));  // errors ignored in a destructor
  }
  ptr_ = 0;
  bytes_ = 0;
  context_ = nullptr;
}

void DeviceBuffer::upload(const void* src, size_t bytes) {
  if (bytes > bytes_)
    throw UsageError(fmt::format("upload of {} bytes into a device buffer of {} bytes", bytes, bytes_));
  if (bytes == 0) return;
  Driver& d = Driver::get();
  d.check(d.cuMemcpyHtoD_v2(static_cast<CUdeviceptr>(ptr_), src, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* dst, size_t bytes) const {
  if (bytes > bytes_)
    throw UsageError(fmt::format("download of {} bytes from a device buffer of {} bytes", bytes, bytes_));
  if (bytes == 0) return;
  Driver& d = Driver::get();
  d.check(d.cuMemcpyDtoH_v2(dst, static_cast<CUdeviceptr>(ptr_), bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill(uint8_t value) {
  if (bytes_ == 0) return;
  Driver& d = Driver::get();
  d.check(d.cuMemsetD8_v2(static_cast<CUdeviceptr>(ptr_), value, bytes_), "cuMemsetD8");
}

// ---- Stream ----

Stream Stream::create() {
  Driver& d = Driver::get();
  detail::current_context();
  CUstream s = nullptr;
  d.check(d.cuStreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate");
  Stream out;
  out.handle_ = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s));
  out.owned_ = true;
  return out;
}

Stream Stream::wrap(uint64_t handle) noexcept {
  Stream out;
  out.handle_ = handle;
  return out;
}

Stream::Stream(Stream&& o) noexcept
    : handle_(std::exchange(o.handle_, 0)), owned_(std::exchange(o.owned_, false)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    release();
    handle_ = std::exchange(o.handle_, 0);
    owned_ = std::exchange(o.owned_, false);
  }
  return *this;
}

Stream::~Stream() { release(); }

void Stream::release() noexcept {
  if (owned_ && handle_) Driver::get().cuStreamDestroy_v2(as_stream(handle_));
  handle_ = 0;
  owned_ = false;
}

void Stream::synchronize() const {
  Driver& d = Driver::get();
  if (handle_ == 0) detail::current_context();
  d.check(d.cuStreamSynchronize(as_stream(handle_)), "cuStreamSynchronize");
}

// ---- EventTimer ----

EventTimer::EventTimer(EventTimer&& o) noexcept
    : start_(std::exchange(o.start_, nullptr)), stop_(std::exchange(o.stop_, nullptr)),
      started_(std::exchange(o.started_, false)), stopped_(std::exchange(o.stopped_, false)) {}

EventTimer& EventTimer::operator=(EventTimer&& o) noexcept {
  if (this != &o) {
    release();
    start_ = std::exchange(o.start_, nullptr);
    stop_ = std::exchange(o.stop_, nullptr);
    started_ = std::exchange(o.started_, false);
    stopped_ = std::exchange(o.stopped_, false);
  }
  return *this;
}

EventTimer::~EventTimer() { release(); }

void EventTimer::release() noexcept {
  if (start_ || stop_) {
    Driver& d = Driver::get();
    if (start_) d.cuEventDestroy_v2(static_cast<CUevent>(start_));
    if (stop_) d.cuEventDestroy_v2(static_cast<CUevent>(stop_));
  }
  start_ = stop_ = nullptr;
  started_ = stopped_ = false;
}

void EventTimer::create_events() {
  if (start_ && stop_) return;
  Driver& d = Driver::get();
  detail::current_context();
  CUevent a = nullptr, b = nullptr;
  d.check(d.cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
  start_ = a;
  d.check(d.cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
  stop_ = b;
}

void EventTimer::record_start(uint64_t stream) {
  create_events();
  Driver& d = Driver::get();
  d.check(d.cuEventRecord(static_cast<CUevent>(start_), as_stream(stream)), "cuEventRecord");
  started_ = true;
  stopped_ = false;
}

void EventTimer::record_stop(uint64_t stream) {
  create_events();
  Driver& d = Driver::get();
  d.check(d.cuEventRecord(static_cast<CUevent>(stop_), as_stream(stream)), "cuEventRecord");
  stopped_ = true;
}

float EventTimer::elapsed_ms() const {
  if (!started_ || !stopped_)
    throw UsageError("EventTimer::elapsed_ms needs record_start() and then record_stop() first");
  Driver& d = Driver::get();
  d.check(d.cuEventSynchronize(static_cast<CUevent>(stop_)), "cuEventSynchronize");
  float ms = 0;
  d.check(d.cuEventElapsedTime_v2(&ms, static_cast<CUevent>(start_), static_cast<CUevent>(stop_)),
          "cuEventElapsedTime");
  return ms;
}

}  // namespace mxjit

namespace mxjit::detail {

CUcontext current_context() {
  Driver& d = Driver::get();
  CUcontext cur = nullptr;
  d.check(d.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur) return cur;
  make_current(0);
  d.check(d.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  return cur;
}

}  // namespace mxjit::detail
