#include "runtime/module.hpp"

#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "runtime/driver.hpp"

namespace mxjit::detail {

namespace {
constexpr unsigned kDefaultSmemLimit = 48 * 1024;  ///< dynamic smem allowed without opt-in
}

/// The loaded library and the per-context function cache.
struct LoadedKernel::State {
  /// The function of one context and the dynamic shared memory opted into for it.
  struct Entry {
    CUcontext ctx;
    CUfunction fn;
    unsigned smem_optin;
  };
  CUlibrary library = nullptr;
  CUkernel kernel = nullptr;
  std::string name;
  std::mutex mutex;
  std::vector<Entry> entries;  ///< few contexts: a linear scan is fastest

  ~State() {
    if (library) Driver::get().cuLibraryUnload(library);  // errors ignored in a destructor
  }
};

LoadedKernel::LoadedKernel() = default;
LoadedKernel::LoadedKernel(LoadedKernel&&) noexcept = default;
LoadedKernel& LoadedKernel::operator=(LoadedKernel&&) noexcept = default;
LoadedKernel::~LoadedKernel() = default;

LoadedKernel LoadedKernel::load(std::string_view cubin, const std::string& kernel_name) {
  Driver& d = Driver::get();
  if (cubin.empty()) throw UsageError("LoadedKernel::load: the cubin is empty");
  auto state = std::make_unique<State>();
  state->name = kernel_name;
  d.check(d.cuLibraryLoadData(&state->library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          "cuLibraryLoadData");
  d.check(d.cuLibraryGetKernel(&state->kernel, state->library, kernel_name.c_str()), "cuLibraryGetKernel");
  LoadedKernel k;
  k.state_ = std::move(state);
  return k;
}

const std::string& LoadedKernel::name() const noexcept {
  static const std::string kEmpty;
  return state_ ? state_->name : kEmpty;
}

void LoadedKernel::launch(Dim3 grid, Dim3 block, unsigned smem_bytes, uint64_t stream, void** args) const {
  if (!state_) throw UsageError("LoadedKernel::launch: no kernel is loaded");
  Driver& d = Driver::get();
  CUcontext ctx = nullptr;
  d.check(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (!ctx) ctx = current_context();

  CUfunction fn = nullptr;
  {
    std::lock_guard lock(state_->mutex);
    State::Entry* entry = nullptr;
    for (auto& e : state_->entries)
      if (e.ctx == ctx) {
        entry = &e;
        break;
      }
    if (!entry) {
      CUfunction f = nullptr;
      d.check(d.cuKernelGetFunction(&f, state_->kernel), "cuKernelGetFunction");
      entry = &state_->entries.emplace_back(State::Entry{ctx, f, kDefaultSmemLimit});
    }
    if (smem_bytes > entry->smem_optin) {
      d.check(d.cuFuncSetAttribute(entry->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(smem_bytes)),
              "cuFuncSetAttribute");
      entry->smem_optin = smem_bytes;
    }
    fn = entry->fn;
  }
  d.check(d.cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem_bytes,
                           reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream)), args, nullptr),
          "cuLaunchKernel");
}

}  // namespace mxjit::detail
