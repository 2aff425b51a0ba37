#include "runtime/kernel.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "cache/memory_cache.hpp"
#include "dsl/errors.hpp"
#include "runtime/bindings.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "runtime/tuner.hpp"

namespace mxjit {

Target current_target(int ordinal) {
  GpuInfo info = gpu_info(ordinal);
  return Target::parse(nvrtc_arch(info.cc_major, info.cc_minor));
}

namespace {

// One loaded specialisation.
struct Loaded {
  detail::LoadedKernel kernel;
  detail::Plan plan;
  std::string source;  // what was compiled
};

// Tier 1: (pipeline, target, stride class) -> loaded kernel, shared by every Kernel object.
using SemanticCache = cache::MemoryCache<std::string, std::shared_ptr<Loaded>>;
SemanticCache& semantic_cache() {
  static SemanticCache c;
  return c;
}

std::shared_ptr<Loaded> load(const Pipeline& p, const Target& t, const detail::StrideClass& sc, const Schedule& schedule,
                             detail::Fit fit) {
  detail::CompileOptions opts;
  opts.schedule = schedule;
  opts.fit = fit;
  detail::CompiledKernel ck = detail::compile(p, t, sc, opts);
  try {
    return std::make_shared<Loaded>(Loaded{detail::LoadedKernel::load(ck.cubin, ck.plan.kernel_name), ck.plan, ck.source});
  } catch (const CudaError&) {
    if (!ck.from_disk) throw;
    // A cached cubin that fails to load is a miss: drop it and compile afresh.
    detail::evict(ck.content_key);
    ck = detail::compile(p, t, sc, opts);
    return std::make_shared<Loaded>(Loaded{detail::LoadedKernel::load(ck.cubin, ck.plan.kernel_name), ck.plan, ck.source});
  }
}

// Loaded kernels that lost a race to the semantic cache: never unloaded (a few KiB each, rare).
void retire(std::shared_ptr<Loaded> l) {
  static std::mutex mutex;
  static auto* retired = new std::vector<std::shared_ptr<Loaded>>;  // leaked: not even unloaded at exit
  std::lock_guard lock(mutex);
  retired->push_back(std::move(l));
}

}  // namespace

struct Kernel::State {
  Pipeline pipeline;
  // NVFP4: the plan's pre-pass (the tensor amax kernel) and its input positions in ours.
  std::optional<Kernel> amax_pass;
  std::vector<int> amax_inputs;
  size_t workspace = 0;  // Kernel::workspace_bytes()
  std::mutex scratch_mutex;
  std::map<uint64_t, DeviceBuffer> scratch;  // per stream: the workspace of launches that bring none
  float* scratch_for(uint64_t stream) {
    std::lock_guard lock(scratch_mutex);
    auto it = scratch.find(stream);
    if (it == scratch.end()) it = scratch.emplace(stream, DeviceBuffer::alloc(workspace)).first;
    return reinterpret_cast<float*>(it->second.ptr());
  }
  Target target;
  Schedule schedule;
  detail::StrideClass default_sc;
  std::string source;  // compiled for default_sc
  std::string hash_prefix;
  // Per-Kernel tier 0: the specialisations this object launched, checked without hashing.
  mutable std::shared_mutex mutex;
  mutable std::vector<std::pair<std::string, std::shared_ptr<Loaded>>> seen;  // key: stride + shape class

  // The loaded kernel for this stride class and shape class. With the default schedule, one
  // stored by the tuner for that class is used (looked up once per class and object). The
  // schedule must apply exactly to the contiguous inputs' kernel; other stride classes take the
  // fields that apply to theirs, and so do stored winners.
  std::shared_ptr<Loaded> get(const detail::StrideClass& sc, const std::string& cls = "m") const {
    const std::string local = sc.str() + cls;
    {
      std::shared_lock lock(mutex);
      for (const auto& [k, v] : seen)
        if (k == local) return v;
    }
    const bool stored = schedule.is_default();
    const Schedule s = stored ? detail::stored_schedule(pipeline, target, sc, cls) : schedule;
    const detail::Fit fit = !stored && sc == default_sc ? detail::Fit::exact : detail::Fit::lenient;
    const std::string key = hash_prefix + s.str() + "/" + sc.str();
    std::shared_ptr<const std::shared_ptr<Loaded>> found = semantic_cache().find(key);
    detail::disk_cache().count_memory_lookup(found != nullptr);
    std::shared_ptr<Loaded> loaded = found ? *found : nullptr;
    if (!loaded) {
      std::shared_ptr<Loaded> mine = load(pipeline, target, sc, s, fit);
      loaded = *semantic_cache().insert(key, mine);
      // Another thread loaded the same kernel first: keep ours loaded rather than unload it now,
      // since an unload would invalidate a CUDA-graph capture running on some stream.
      if (loaded != mine) retire(std::move(mine));
    }
    std::unique_lock lock(mutex);
    seen.emplace_back(local, loaded);
    return loaded;
  }
};

const Pipeline& Kernel::pipeline() const { return state_->pipeline; }
const Target& Kernel::target() const { return state_->target; }
const Schedule& Kernel::schedule() const { return state_->schedule; }

std::string Kernel::source() const { return state_->source; }

Kernel jit(const Pipeline& p, const Target& target, const Schedule& schedule) {
  Kernel k;
  k.state_ = std::make_shared<Kernel::State>();
  k.state_->pipeline = p;
  k.state_->target = target;
  k.state_->schedule = schedule;
  k.state_->default_sc = detail::default_stride_class(p);
  k.state_->hash_prefix = p.hash().hex() + "/" + target.arch + "/";
  // Compile (or fetch from SQLite) now for the common case; load only where a GPU exists.
  detail::CompileOptions opts;
  opts.schedule = schedule;
  detail::Plan plan;
  if (gpu_available()) {
    const std::shared_ptr<Loaded> l = k.state_->get(k.state_->default_sc);
    plan = l->plan;
    k.state_->source = l->source;
  } else {
    detail::CompiledKernel ck = detail::compile(p, target, k.state_->default_sc, opts);
    plan = std::move(ck.plan);
    k.state_->source = std::move(ck.source);
  }
  // The plan's pre-pass (NVFP4's tensor amax) is a kernel of its own, run before the cast.
  if (plan.prepass) {
    k.state_->amax_pass = jit(plan.prepass->pipeline, target);
    k.state_->amax_inputs = plan.prepass->inputs;
    k.state_->workspace = size_t(plan.prepass->workspace_bytes);
  }
  return k;
}

void warmup(const std::vector<Pipeline>& pipelines, const Target& target, int threads) {
  std::vector<detail::WarmupItem> items;
  for (const Pipeline& p : pipelines) {
    items.push_back({p, detail::default_stride_class(p)});
    // The NVFP4 tensor-amax pre-pass is a kernel of its own.
    if (const auto pre = detail::make_plan(p, target, items.back().stride_class).prepass)
      items.push_back({pre->pipeline, detail::default_stride_class(pre->pipeline)});
  }
  detail::compile_all(items, target, threads);
}

size_t Kernel::workspace_bytes() const { return state_->workspace; }

void Kernel::operator()(uint64_t stream, std::span<const TensorView> inputs, std::span<const TensorView> outputs) const {
  (*this)(stream, inputs, outputs, state_->amax_pass ? uint64_t(reinterpret_cast<uintptr_t>(state_->scratch_for(stream))) : 0);
}

void Kernel::operator()(uint64_t stream, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                        uint64_t workspace) const {
  if (state_->amax_pass && (workspace == 0 || workspace % 16 != 0))
    throw UsageError(fmt::format("launch: workspace 0x{:x}: this cast needs {} bytes of 16-byte aligned device scratch "
                                 "(workspace_bytes())", workspace, workspace_bytes()));
  if (!state_->amax_pass && workspace != 0)
    throw UsageError(fmt::format("launch: workspace 0x{:x} given, but this cast needs none (workspace_bytes() is 0)",
                                 workspace));
  const Pipeline& p = state_->pipeline;
  detail::Binding b = detail::check_bindings(p, inputs, outputs, DeviceKind::cuda);
  detail::StrideClass sc{std::move(b.unit_axis), std::move(b.aligned)};
  std::shared_ptr<Loaded> l = state_->get(sc, detail::shape_class(b.shape));
  const detail::Plan& plan = l->plan;
  detail::Driver& drv = detail::Driver::get();
  // Tensor amax (4 bytes, combined with atomicMax), grouped scale layouts and padded strided
  // ones (the whole buffer: kernels write real scales only) start from zero, in stream order
  // before the kernel.
  for (int o : plan.zero_outputs)
    if (const int64_t bytes = b.outputs[size_t(o)].storage_bytes; bytes > 0)
      drv.check(drv.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(outputs[size_t(o)].data), 0, size_t(bytes),
                                    reinterpret_cast<CUstream>(stream)), "cuMemsetD8Async");
  if (b.empty) return;
  for (size_t o = 0; o < b.outputs.size(); ++o)
    if (detail::is_blocked(p.outputs()[o].layout) && b.outputs[o].storage_bytes >= (int64_t(1) << 32))
      throw UsageError(fmt::format("launch: output '{}': a blocked scale tensor of {} bytes; the kernels address "
                                   "blocked scales with 32-bit offsets (< 4 GiB)", p.outputs()[o].name,
                                   b.outputs[o].storage_bytes));
  const detail::Launch launch = plan.launch(b.shape, b.groups);
  const int rank = p.rank();
  // The parameter block in the plan's order (every word 8 bytes).
  std::vector<int64_t> w;
  w.reserve(size_t(plan.params.words()));
  for (const detail::ParamLayout::Field& f : plan.params.fields) {
    switch (f.what) {
      case detail::Param::in:
        for (const TensorView& v : inputs) w.push_back(int64_t(reinterpret_cast<uintptr_t>(v.data)));
        break;
      case detail::Param::out:
        for (const TensorView& v : outputs) w.push_back(int64_t(reinterpret_cast<uintptr_t>(v.data)));
        break;
      case detail::Param::shape:
        for (int a = 0; a < rank; ++a) w.push_back(b.shape[size_t(a)]);
        break;
      case detail::Param::in_stride:
        for (const TensorView& v : inputs)
          for (int a = 0; a < rank; ++a) w.push_back(a < v.rank() ? v.strides[size_t(a)] : 0);
        break;
      case detail::Param::out_stride:
        for (const OutputGeometry& g : b.outputs)
          for (int a = 0; a < rank; ++a) w.push_back(a < int(g.view_strides.size()) ? g.view_strides[size_t(a)] : 0);
        break;
      case detail::Param::out_shape:
        for (const OutputGeometry& g : b.outputs)
          for (int a = 0; a < rank; ++a) w.push_back(a < int(g.logical_shape.size()) ? g.logical_shape[size_t(a)] : 1);
        break;
      case detail::Param::tiles_r: w.push_back(launch.tiles_r); break;
      case detail::Param::tiles_c: w.push_back(launch.tiles_c); break;
      case detail::Param::aux: w.push_back(int64_t(workspace)); break;
      case detail::Param::in_extent:
        for (const TensorView& v : inputs) w.push_back(v.shape.empty() ? 0 : v.shape[0]);
        break;
    }
  }
  if (int(w.size()) != plan.params.words())
    throw Error(fmt::format("mxjit internal: {} parameter words for a layout of {}", w.size(), plan.params.words()));
  if (state_->amax_pass) {
    // The pre-pass: the tensor amax into the workspace, then the cast reads it (stream order).
    std::vector<TensorView> ain;
    for (int i : state_->amax_inputs) ain.push_back(inputs[size_t(i)]);
    TensorView tv = TensorView::contiguous(reinterpret_cast<void*>(static_cast<uintptr_t>(workspace)), DType::f32, {1},
                                           DeviceKind::cuda, inputs[0].device_ordinal);
    (*state_->amax_pass)(stream, std::span<const TensorView>(ain), std::span<const TensorView>(&tv, 1));
  }
  void* args[] = {w.data()};
  unsigned grid_x = launch.grid[0];
  if (launch.persistent)  // persistent CTAs walk the tiles: as many as the GPU holds at once
    grid_x = unsigned(std::min<int64_t>(grid_x, l->kernel.resident_ctas(unsigned(plan.threads), unsigned(plan.smem_bytes))));
  l->kernel.launch({grid_x, launch.grid[1], launch.grid[2]}, {unsigned(plan.threads), 1, 1}, unsigned(plan.smem_bytes), stream,
                   args);
}

}  // namespace mxjit
