#pragma once
/// \file A compiled kernel loaded into the driver (cuLibraryLoadData) and its launch.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mxjit::detail {

/// Grid or block extent, like CUDA's dim3.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// The most CTAs a cluster holds without the function opting into a non-portable size.
inline constexpr unsigned kPortableCluster = 8;

/// Launches CUfunction `function` (as void*) on `stream`: cuLaunchKernel, or, where `cluster` is
/// not 0, cuLaunchKernelEx with a thread-block cluster of `cluster` CTAs along x (grid.x a
/// multiple of it; Launch::cluster). A cluster above kPortableCluster needs the function opted
/// in first (LoadedKernel::function or launch with that cluster). Throws CudaError naming the call.
void launch_function(void* function, Dim3 grid, Dim3 block, unsigned smem_bytes, uint64_t stream, void** args, unsigned cluster = 0);

/// One kernel of a loaded cubin (move-only; unloads the library on destruction). The library is
/// context-independent; the CUfunction of each context is looked up once and cached.
class LoadedKernel {
 public:
  /// An empty kernel; launch() throws UsageError.
  LoadedKernel();
  /// Loads `cubin` (cuLibraryLoadData) and finds `kernel_name` (an extern "C" name) in it.
  /// Throws the driver's CudaError without a GPU or when the name is absent.
  static LoadedKernel load(std::string_view cubin, const std::string& kernel_name);
  /// Loads `cubin` and finds each of `entry_names` in it (Plan::entry_names: a plan whose launch
  /// chooses among kernels of one module); entry i is what launch(..., i) runs.
  static LoadedKernel load(std::string_view cubin, const std::vector<std::string>& entry_names);
  LoadedKernel(LoadedKernel&&) noexcept;
  LoadedKernel& operator=(LoadedKernel&&) noexcept;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  ~LoadedKernel();

  /// Launches on `stream` (a CUstream as integer, 0 = default stream) in the calling thread's
  /// current context (GPU 0's primary context when none is current). Dynamic shared memory above
  /// 48 KiB and clusters above kPortableCluster are opted into once per context. `args` as for
  /// cuLaunchKernel. `entry`: which of the loaded entries runs (Launch::entry). Thread-safe.
  void launch(Dim3 grid, Dim3 block, unsigned smem_bytes, uint64_t stream, void** args, unsigned cluster = 0,
              int entry = 0) const;
  /// How many CTAs of `threads` threads and `smem_bytes` dynamic shared memory the current
  /// context's GPU holds at once (multiprocessors x the occupancy calculator's CTAs per SM, at
  /// least 1): the grid of a persistent kernel. Cached per context. Thread-safe.
  unsigned resident_ctas(unsigned threads, unsigned smem_bytes) const;
  /// The current context (GPU 0's primary context when none is current) and this kernel's
  /// CUfunction in it, dynamic shared memory opted into up to `smem_bytes` and clusters of
  /// `cluster` CTAs: what a prepared launch keeps so that each launch is one driver call; `entry`
  /// as for launch(). Driver handles as void*. Thread-safe.
  std::pair<void*, void*> function(unsigned smem_bytes, unsigned cluster = 0, int entry = 0) const;
  /// The kernel's name (its first entry's).
  const std::string& name() const noexcept;
  /// True when a kernel is loaded.
  explicit operator bool() const noexcept { return state_ != nullptr; }

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mxjit::detail
