#include "runtime/module.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "runtime/driver.hpp"

namespace mxjit::detail {

/// The loaded library and the per-context function cache.
struct LoadedKernel::State {
  /// The function of one kernel in one context and what was opted into for it: dynamic shared
  /// memory, and clusters past the portable 8 CTAs.
  struct Entry {
    CUcontext ctx;
    int index;  ///< which kernel of the module (LoadedKernel::load's entry names)
    CUfunction fn;
    unsigned smem_optin;
    bool wide_clusters = false;
    unsigned resident = 0, resident_threads = 0, resident_smem = 0;  ///< resident_ctas(), once computed
  };
  /// The entry of kernel `index` in the current context (created on first use), its dynamic
  /// shared memory opted into up to `smem_bytes` and, for `cluster` > 8, the non-portable cluster
  /// size. Throws UsageError for an index past the entry names. Call with `mutex` held.
  Entry& entry(unsigned smem_bytes, unsigned cluster = 0, int index = 0);
  CUlibrary library = nullptr;
  std::vector<CUkernel> kernels;  ///< one per entry name
  std::vector<std::string> names;
  std::mutex mutex;
  std::vector<Entry> entries;  ///< few contexts and kernels: a linear scan is fastest

  ~State() {
    if (library) Driver::get().cuLibraryUnload(library);  // errors ignored in a destructor
  }
};

LoadedKernel::LoadedKernel() = default;
LoadedKernel::LoadedKernel(LoadedKernel&&) noexcept = default;
LoadedKernel& LoadedKernel::operator=(LoadedKernel&&) noexcept = default;
LoadedKernel::~LoadedKernel() = default;

LoadedKernel LoadedKernel::load(std::string_view cubin, const std::string& kernel_name) {
  return load(cubin, std::vector<std::string>{kernel_name});
}

LoadedKernel LoadedKernel::load(std::string_view cubin, const std::vector<std::string>& entry_names) {
  if (cubin.empty()) throw UsageError("LoadedKernel::load: the cubin is empty");
  if (entry_names.empty()) throw UsageError("LoadedKernel::load: no entry name");
  Driver& d = Driver::get();
  auto state = std::make_unique<State>();
  state->names = entry_names;
  d.check(d.cuLibraryLoadData(&state->library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cuLibraryLoadData");
  for (const std::string& n : entry_names)
    d.check(d.cuLibraryGetKernel(&state->kernels.emplace_back(), state->library, n.c_str()), "cuLibraryGetKernel");
  LoadedKernel k;
  k.state_ = std::move(state);
  return k;
}

const std::string& LoadedKernel::name() const noexcept {
  static const std::string kEmpty;
  return state_ ? state_->names[0] : kEmpty;
}

LoadedKernel::State::Entry& LoadedKernel::State::entry(unsigned smem_bytes, unsigned cluster, int index) {
  if (index < 0 || size_t(index) >= kernels.size())
    throw UsageError(
        fmt::format("LoadedKernel: entry {} of a module of {} kernels ({})", index, kernels.size(), names[0]));
  Driver& d = Driver::get();
  CUcontext ctx = nullptr;
  d.check(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (!ctx) ctx = current_context();
  Entry* e = nullptr;
  for (auto& x : entries)
    if (x.ctx == ctx && x.index == index) {
      e = &x;
      break;
    }
  if (!e) {
    CUfunction f = nullptr;
    d.check(d.cuKernelGetFunction(&f, kernels[size_t(index)]), "cuKernelGetFunction");
    // The dynamic shared memory it takes without opting in: 48 KiB less its static shared memory.
    int allowed = 0;
    d.check(d.cuFuncGetAttribute(&allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f), "cuFuncGetAttribute");
    e = &entries.emplace_back(Entry{ctx, index, f, unsigned(allowed)});
  }
  if (smem_bytes > e->smem_optin) {
    d.check(d.cuFuncSetAttribute(e->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem_bytes)),
            "cuFuncSetAttribute");
    e->smem_optin = smem_bytes;
  }
  // Past the portable 8 CTAs (sm_90/sm_100 allow 16) a cluster launch must be opted into.
  if (cluster > kPortableCluster && !e->wide_clusters) {
    d.check(d.cuFuncSetAttribute(e->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            "cuFuncSetAttribute (non-portable cluster size)");
    e->wide_clusters = true;
  }
  return *e;
}

void launch_function(void* function, Dim3 grid, Dim3 block, unsigned smem_bytes, uint64_t stream, void** args, unsigned cluster) {
  Driver& d = Driver::get();
  const auto fn = static_cast<CUfunction>(function);
  const auto st = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
  if (cluster == 0) {
    d.check(d.cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem_bytes, st, args, nullptr), "cuLaunchKernel");
    return;
  }
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = cluster;
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid.x, cfg.gridDimY = grid.y, cfg.gridDimZ = grid.z;
  cfg.blockDimX = block.x, cfg.blockDimY = block.y, cfg.blockDimZ = block.z;
  cfg.sharedMemBytes = smem_bytes;
  cfg.hStream = st;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  d.check(d.cuLaunchKernelEx(&cfg, fn, args, nullptr), "cuLaunchKernelEx (cluster dimension)");
}

void LoadedKernel::launch(Dim3 grid, Dim3 block, unsigned smem_bytes, uint64_t stream, void** args, unsigned cluster,
                          int entry) const {
  if (!state_) throw UsageError("LoadedKernel::launch: no kernel is loaded");
  CUfunction fn = nullptr;
  {
    std::lock_guard lock(state_->mutex);
    fn = state_->entry(smem_bytes, cluster, entry).fn;
  }
  launch_function(fn, grid, block, smem_bytes, stream, args, cluster);
}

std::pair<void*, void*> LoadedKernel::function(unsigned smem_bytes, unsigned cluster, int entry) const {
  if (!state_) throw UsageError("LoadedKernel::function: no kernel is loaded");
  std::lock_guard lock(state_->mutex);
  const State::Entry& e = state_->entry(smem_bytes, cluster, entry);
  return {static_cast<void*>(e.ctx), static_cast<void*>(e.fn)};
}

unsigned LoadedKernel::resident_ctas(unsigned threads, unsigned smem_bytes) const {
  if (!state_) throw UsageError("LoadedKernel::resident_ctas: no kernel is loaded");
  Driver& d = Driver::get();
  std::lock_guard lock(state_->mutex);
  State::Entry& e = state_->entry(smem_bytes);
  if (e.resident == 0 || e.resident_threads != threads || e.resident_smem != smem_bytes) {
    CUdevice dev = 0;
    int sms = 0, per_sm = 0;
    // A persistent kernel's grid is exactly what is resident: the carveout must not leave room
    // for fewer CTAs than the calculator counts (the rest would start only as others finish).
    d.check(d.cuFuncSetAttribute(e.fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, CU_SHAREDMEM_CARVEOUT_MAX_SHARED),
            "cuFuncSetAttribute");
    d.check(d.cuCtxGetDevice(&dev), "cuCtxGetDevice");
    d.check(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
    d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, e.fn, static_cast<int>(threads), smem_bytes),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    e.resident = unsigned(std::max(1, sms * per_sm));
    e.resident_threads = threads;
    e.resident_smem = smem_bytes;
  }
  return e.resident;
}

}  // namespace mxjit::detail
