#include "runtime/prepared.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <vector>

#include "dsl/errors.hpp"
#include "runtime/driver.hpp"
#include "runtime/prepared_parts.hpp"

namespace mxjit {

namespace {
constexpr size_t kStackWords = 256;  // parameter blocks up to 2 KiB are built on the stack
constexpr size_t kStackPointers = 32;
}  // namespace

struct PreparedLaunch::State {
  /// What the pointer of one view must satisfy (inputs, then outputs).
  struct Pointer {
    int64_t span = 0;       ///< bytes the view can touch from its base (0: empty)
    uint32_t elem = 1;      ///< element bytes: the base is a multiple of it
    bool nonempty = false;  ///< the base must not be null
    int8_t aligned16 = -1;  ///< 1 / 0: the base was (not) 16-byte aligned, which picked the kernel; -1: any
  };
  const Pipeline* pipeline = nullptr;
  std::shared_ptr<const void> owner, loaded;
  std::vector<TensorView> views;  ///< the checked views without data (for the full check's message)
  size_t inputs = 0;
  std::vector<Pointer> pointers;
  bool empty = false;
  std::vector<std::pair<size_t, int64_t>> zero;  ///< (pointer, bytes) zero-filled before the kernel
  std::vector<int64_t> words;                     ///< the parameter block, pointer words 0
  std::vector<std::pair<size_t, size_t>> slots;   ///< (word, pointer)
  int aux = -1;                                   ///< the workspace's word
  size_t workspace = 0;  ///< bytes of scratch a launch needs (Kernel::workspace_bytes)
  const detail::LoadedKernel* kernel = nullptr;
  void* context = nullptr;   ///< where `function` lives (the context current at prepare)
  void* function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned tiles = 0;        ///< a persistent kernel's grid before the cap (another context recomputes it)
  bool persistent = false;
  unsigned cluster = 0;      ///< CTAs per cluster chosen at launch, 0 for a plain launch (Launch::cluster)
  int entry = 0;             ///< which of the module's kernels runs (Launch::entry)
  unsigned threads = 0, smem = 0;
  std::optional<PreparedLaunch> prepass;
  std::vector<int> prepass_inputs;

  bool fits(std::span<const uint64_t> ptrs) const {
    if (ptrs.size() != pointers.size()) return false;
    for (size_t i = 0; i < inputs; ++i)
      if (pointers[i].aligned16 >= 0 && (ptrs[i] % 16 == 0) != (pointers[i].aligned16 == 1)) return false;
    return true;
  }

  // Every rule check_bindings applies to pointers, as it applies them (overlaps: of each output with
  // the outputs before it and with every input).
  bool valid(std::span<const uint64_t> ptrs) const {
    if (!fits(ptrs)) return false;
    for (size_t i = 0; i < pointers.size(); ++i) {
      const Pointer& c = pointers[i];
      if ((c.nonempty && ptrs[i] == 0) || ptrs[i] % c.elem != 0) return false;
      if (i < inputs || c.span == 0) continue;
      const uint64_t lo = ptrs[i], hi = lo + uint64_t(c.span);
      for (size_t j = 0; j < i; ++j) {
        const uint64_t jlo = ptrs[j], jhi = jlo + uint64_t(pointers[j].span);
        if (lo < jhi && jlo < hi) return false;
      }
    }
    return true;
  }

  [[noreturn]] void report(std::span<const uint64_t> ptrs) const {
    if (ptrs.size() != pointers.size())
      throw UsageError(fmt::format("launch: {} pointers given but this launch takes {} ({} inputs, {} outputs)",
                                   ptrs.size(), pointers.size(), inputs, pointers.size() - inputs));
    std::vector<TensorView> v = views;
    for (size_t i = 0; i < v.size(); ++i) v[i].data = reinterpret_cast<void*>(static_cast<uintptr_t>(ptrs[i]));
    const std::span<const TensorView> all(v);
    detail::check_bindings(*pipeline, all.first(inputs), all.subspan(inputs), DeviceKind::cuda);
    for (size_t i = 0; i < inputs; ++i)
      if (pointers[i].aligned16 >= 0 && (ptrs[i] % 16 == 0) != (pointers[i].aligned16 == 1))
        throw UsageError(fmt::format("launch: input '{}': base address 0x{:x} is {}16-byte aligned, unlike the one this "
                                     "launch was prepared for (that picks the kernel): prepare again",
                                     pipeline->inputs()[i].name, ptrs[i], ptrs[i] % 16 == 0 ? "" : "not "));
    throw Error("mxjit internal: a pointer refused by the prepared launch passes the full check");
  }

  void fill(std::span<const uint64_t> ptrs, uint64_t scratch, int64_t* out) const {
    std::copy(words.begin(), words.end(), out);
    for (const auto& [w, i] : slots) out[w] = int64_t(ptrs[i]);
    if (aux >= 0) out[aux] = int64_t(scratch);
  }
};

namespace detail {

void check_workspace(bool needed, uint64_t workspace, size_t bytes) {
  if (needed && (workspace == 0 || workspace % 16 != 0))
    throw UsageError(fmt::format("launch: workspace 0x{:x}: this cast needs {} bytes of 16-byte aligned device scratch "
                                 "(workspace_bytes())", workspace, bytes));
  if (!needed && workspace != 0)
    throw UsageError(fmt::format("launch: workspace 0x{:x} given, but this cast needs none (workspace_bytes() is 0)",
                                 workspace));
}

PreparedLaunch make_prepared(PreparedParts&& parts) {
  auto s = std::make_shared<PreparedLaunch::State>();
  const Binding& b = *parts.binding;
  const Plan& plan = *parts.plan;
  s->pipeline = parts.pipeline;
  s->owner = std::move(parts.owner);
  s->loaded = std::move(parts.loaded);
  s->inputs = parts.inputs.size();
  for (const auto* side : {&parts.inputs, &parts.outputs})
    for (const TensorView& v : *side) {
      PreparedLaunch::State::Pointer c;
      c.span = span_bytes(v);
      c.elem = uint32_t(dtype_size(v.dtype));
      c.nonempty = v.numel() > 0;
      const size_t k = s->views.size();
      if (k < s->inputs && b.strides_aligned[k]) c.aligned16 = b.aligned[k] ? 1 : 0;
      s->pointers.push_back(c);
      s->views.push_back(v);
      s->views.back().data = nullptr;
    }
  for (int o : plan.zero_outputs) {
    const OutputGeometry& g = b.outputs[size_t(o)];
    const Output& out = parts.pipeline->outputs()[size_t(o)];
    // A padded scale layout has padding only for some shapes (mn_major_tma at a multiple of 4 rows
    // has none): where it has none, the kernel writes every byte.
    const bool unpadded = out.kind == OutputKind::scales && !g.padded;
    if (g.storage_bytes > 0 && !unpadded) s->zero.emplace_back(s->inputs + size_t(o), g.storage_bytes);
  }
  s->empty = b.empty;
  s->workspace = parts.workspace_bytes;
  s->prepass = std::move(parts.prepass);
  s->prepass_inputs = std::move(parts.prepass_inputs);
  s->kernel = parts.kernel;
  if (s->empty) return PreparedLaunch(std::move(s));
  const Launch& launch = parts.launch;
  const int rank = parts.pipeline->rank();
  const size_t n_in = parts.inputs.size(), n_out = parts.outputs.size();
  // The parameter block in the plan's order (every word 8 bytes); pointer words are patched per launch.
  std::vector<int64_t>& w = s->words;
  for (const ParamLayout::Field& f : plan.params.fields) {
    switch (f.what) {
      case Param::in:
        for (size_t k = 0; k < n_in; ++k) s->slots.emplace_back(w.size(), k), w.push_back(0);
        break;
      case Param::out:
        for (size_t o = 0; o < n_out; ++o) s->slots.emplace_back(w.size(), n_in + o), w.push_back(0);
        break;
      case Param::shape:
        for (int a = 0; a < rank; ++a) w.push_back(b.shape[size_t(a)]);
        break;
      case Param::in_stride:
        for (const TensorView& v : parts.inputs)
          for (int a = 0; a < rank; ++a) w.push_back(a < v.rank() ? v.strides[size_t(a)] : 0);
        break;
      case Param::out_stride:
        for (const OutputGeometry& g : b.outputs)
          for (int a = 0; a < rank; ++a) w.push_back(a < int(g.view_strides.size()) ? g.view_strides[size_t(a)] : 0);
        break;
      case Param::out_shape:
        for (const OutputGeometry& g : b.outputs)
          for (int a = 0; a < rank; ++a) w.push_back(a < int(g.logical_shape.size()) ? g.logical_shape[size_t(a)] : 1);
        break;
      case Param::tiles_r: w.push_back(launch.tiles_r); break;
      case Param::tiles_c: w.push_back(launch.tiles_c); break;
      case Param::aux: s->aux = int(w.size()), w.push_back(0); break;
      case Param::in_extent:
        for (const TensorView& v : parts.inputs) w.push_back(v.shape.empty() ? 0 : v.shape[0]);
        break;
    }
  }
  if (int(w.size()) != plan.params.words())
    throw Error(fmt::format("mxjit internal: {} parameter words for a layout of {}", w.size(), plan.params.words()));
  s->threads = unsigned(launch.threads > 0 ? launch.threads : plan.threads);
  s->smem = unsigned(launch.smem_bytes >= 0 ? launch.smem_bytes : plan.smem_bytes);
  std::copy(std::begin(launch.grid), std::end(launch.grid), s->grid);
  s->persistent = launch.persistent;
  s->cluster = launch.cluster;
  s->entry = launch.entry;
  s->tiles = launch.grid[0];
  if (s->kernel) {
    // Persistent CTAs walk the tiles: as many as the GPU holds at once.
    if (launch.persistent) s->grid[0] = std::min(s->grid[0], s->kernel->resident_ctas(s->threads, s->smem));
    std::tie(s->context, s->function) = s->kernel->function(s->smem, s->cluster, s->entry);
  }
  return PreparedLaunch(std::move(s));
}

}  // namespace detail

PreparedLaunch::PreparedLaunch(std::shared_ptr<const State> s) : state_(std::move(s)) {}

size_t PreparedLaunch::pointers() const { return state_ ? state_->pointers.size() : 0; }

size_t PreparedLaunch::words() const { return state_ ? state_->words.size() : 0; }

bool PreparedLaunch::fits(std::span<const uint64_t> ptrs) const {
  return state_ && state_->fits(ptrs);
}

void PreparedLaunch::fill_words(std::span<const uint64_t> ptrs, uint64_t workspace, std::span<int64_t> out) const {
  if (!state_) throw UsageError("PreparedLaunch: nothing is prepared (Kernel::prepare)");
  detail::check_workspace(state_->workspace > 0, workspace, state_->workspace);
  if (!state_->valid(ptrs)) state_->report(ptrs);
  if (out.size() != state_->words.size())
    throw UsageError(fmt::format("PreparedLaunch::fill_words: {} words given for a block of {}", out.size(),
                                 state_->words.size()));
  state_->fill(ptrs, workspace, out.data());
}

void PreparedLaunch::operator()(uint64_t stream, std::span<const uint64_t> ptrs, uint64_t workspace) const {
  if (!state_) throw UsageError("PreparedLaunch: nothing is prepared (Kernel::prepare)");
  const State& s = *state_;
  detail::check_workspace(s.workspace > 0, workspace, s.workspace);
  if (!s.valid(ptrs)) s.report(ptrs);
  detail::Driver& d = detail::Driver::get();  // CudaError without a GPU (prepared for the words only)
  const CUstream st = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
  // Tensor amax (4 bytes, combined with atomicMax), grouped scale layouts and padded strided
  // ones (the whole buffer: kernels write real scales only) start from zero, in stream order
  // before the kernel.
  for (const auto& [i, bytes] : s.zero)
    d.check(d.cuMemsetD8Async(static_cast<CUdeviceptr>(ptrs[i]), 0, size_t(bytes), st), "cuMemsetD8Async");
  if (s.empty) return;
  if (s.prepass) {
    // The pre-pass: the tensor amax into the workspace, then the cast reads it (stream order).
    uint64_t pre[kStackPointers];
    if (s.prepass_inputs.size() + 1 > kStackPointers) throw Error("mxjit internal: a pre-pass of too many inputs");
    size_t n = 0;
    for (int k : s.prepass_inputs) pre[n++] = ptrs[size_t(k)];
    pre[n++] = workspace;
    (*s.prepass)(stream, std::span<const uint64_t>(pre, n), 0);
  }
  int64_t stack[kStackWords];
  std::vector<int64_t> heap;
  int64_t* w = stack;
  if (s.words.size() > kStackWords) heap.resize(s.words.size()), w = heap.data();
  s.fill(ptrs, workspace, w);
  void* args[] = {w};
  CUcontext cur = nullptr;
  if (s.function && d.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == static_cast<CUcontext>(s.context)) {
    detail::launch_function(s.function, {s.grid[0], s.grid[1], s.grid[2]}, {s.threads, 1, 1}, s.smem, stream, args, s.cluster);
    return;
  }
  if (!s.kernel) throw UsageError("PreparedLaunch: prepared without a GPU, its kernel not loaded: fill_words only");
  // Another context than at prepare: its function (and persistent grid) looked up there.
  unsigned grid_x = s.persistent ? std::min(s.tiles, s.kernel->resident_ctas(s.threads, s.smem)) : s.grid[0];
  s.kernel->launch({grid_x, s.grid[1], s.grid[2]}, {s.threads, 1, 1}, s.smem, stream, args, s.cluster, s.entry);
}

}  // namespace mxjit
