#pragma once
/// \file GPUs as users see them: presence, properties, current context, device memory, streams
/// and event timing. No CUDA header is needed: device pointers and streams are uint64_t.
#include <cstddef>
#include <cstdint>
#include <string>

namespace mxjit {

/// Properties of one GPU, as reported by the driver.
struct GpuInfo {
  int ordinal = 0;                       ///< CUDA device ordinal
  std::string name;                      ///< e.g. "NVIDIA H200"
  int cc_major = 0;                      ///< compute capability, major
  int cc_minor = 0;                      ///< compute capability, minor
  int sm_count = 0;                      ///< streaming multiprocessors
  size_t l2_bytes = 0;                   ///< L2 cache size
  size_t total_mem = 0;                  ///< global memory
  size_t max_smem_per_block_optin = 0;   ///< shared memory per block with the opt-in attribute
  int driver_version = 0;                ///< e.g. 13000 for CUDA 13.0
};

/// True when a CUDA driver is loaded and at least one GPU is present. Never throws, never prints.
bool gpu_available() noexcept;

/// Why gpu_available() is false, in words; empty when a GPU is available.
std::string gpu_unavailable_reason();

/// Properties of GPU `ordinal`. Throws CudaError without a GPU, UsageError for a bad ordinal.
GpuInfo gpu_info(int ordinal = 0);

/// The exact NVRTC architecture for a compute capability: arch-specific ("a") for 9.0 and for
/// 10.0 and above ("sm_90a", "sm_100a", "sm_103a", "sm_120a"), plain otherwise ("sm_89", "sm_80").
std::string nvrtc_arch(int cc_major, int cc_minor);

/// Makes GPU `ordinal` current for the calling thread: a context already current on that device
/// is kept; otherwise the device's primary context is retained (once per process) and set current.
void make_current(int ordinal);

/// Bytes of device memory (move-only, freed on destruction). Allocated in the calling thread's
/// current context; when none is current, GPU 0's primary context is made current first.
class DeviceBuffer {
 public:
  /// An empty buffer (ptr() == 0).
  DeviceBuffer() = default;
  /// Allocates `bytes` bytes (cuMemAlloc). Throws CudaError without a GPU or on failure.
  static DeviceBuffer alloc(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  /// The device address (CUdeviceptr), 0 when empty.
  uint64_t ptr() const noexcept { return ptr_; }
  /// Size in bytes.
  size_t bytes() const noexcept { return bytes_; }
  /// Copies `bytes` bytes from host memory to the start of the buffer (synchronous).
  void upload(const void* src, size_t bytes);
  /// Copies `bytes` bytes from the start of the buffer to host memory (synchronous).
  void download(void* dst, size_t bytes) const;
  /// Sets every byte of the buffer to `value` (synchronous memset).
  void fill(uint8_t value);
  /// Frees the memory now; the buffer becomes empty.
  void reset() noexcept;

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
  void* context_ = nullptr;  ///< CUcontext the memory was allocated in
};

/// A CUDA stream. Default-constructed (or Stream::null()) it is the legacy default stream 0 and
/// owns nothing; Stream::create() makes a new stream destroyed with the object.
class Stream {
 public:
  /// The default stream (handle 0).
  Stream() = default;
  /// The default stream (handle 0).
  static Stream null() noexcept { return Stream(); }
  /// A new stream (cuStreamCreate, default flags) in the current context (GPU 0's when none).
  static Stream create();
  /// A non-owning wrapper of an existing CUstream given as an integer (e.g. torch's cuda_stream).
  static Stream wrap(uint64_t handle) noexcept;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  /// The CUstream as an integer (0 for the default stream).
  uint64_t handle() const noexcept { return handle_; }
  /// Waits until all work queued on the stream has finished.
  void synchronize() const;

 private:
  void release() noexcept;
  uint64_t handle_ = 0;
  bool owned_ = false;
};

/// Times GPU work between two CUDA events recorded on a stream.
class EventTimer {
 public:
  /// Creates nothing yet; the events are created at the first record (in the current context).
  EventTimer() = default;
  EventTimer(EventTimer&& other) noexcept;
  EventTimer& operator=(EventTimer&& other) noexcept;
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer();

  /// Records the start event on `stream` (a CUstream as integer; 0 = default stream).
  void record_start(uint64_t stream = 0);
  /// Records the start event on `stream`.
  void record_start(const Stream& stream) { record_start(stream.handle()); }
  /// Records the stop event on `stream`.
  void record_stop(uint64_t stream = 0);
  /// Records the stop event on `stream`.
  void record_stop(const Stream& stream) { record_stop(stream.handle()); }
  /// Milliseconds between start and stop; waits for the stop event first. UsageError when either
  /// event was not recorded.
  float elapsed_ms() const;

 private:
  void create_events();
  void release() noexcept;
  void* start_ = nullptr;  ///< CUevent
  void* stop_ = nullptr;   ///< CUevent
  bool started_ = false, stopped_ = false;
};

}  // namespace mxjit
