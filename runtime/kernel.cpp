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
#include "runtime/prepared_cache.hpp"
#include "runtime/prepared_parts.hpp"
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
    return std::make_shared<Loaded>(
        Loaded{detail::LoadedKernel::load(ck.cubin, ck.plan.entry_names()), ck.plan, ck.source});
  } catch (const CudaError&) {
    if (!ck.from_disk) throw;
    // A cached cubin that fails to load is a miss: drop it and compile afresh.
    detail::evict(ck.content_key);
    ck = detail::compile(p, t, sc, opts);
    return std::make_shared<Loaded>(
        Loaded{detail::LoadedKernel::load(ck.cubin, ck.plan.entry_names()), ck.plan, ck.source});
  }
}

// Loaded kernels that lost a race to the semantic cache: never unloaded (a few KiB each, rare).
void retire(std::shared_ptr<Loaded> l) {
  static std::mutex mutex;
  static auto* retired = new std::vector<std::shared_ptr<Loaded>>;  // leaked: not even unloaded at exit
  std::lock_guard lock(mutex);
  retired->push_back(std::move(l));
}

// True when a GPU of this process has architecture `arch` (looked up once): only then can a
// kernel compiled for it load (sm_100a code does not load on an H100).
bool arch_present(const std::string& arch) {
  static const std::vector<std::string> archs = [] {
    std::vector<std::string> a;
    detail::Driver& d = detail::Driver::get();
    int n = 0;
    d.check(d.cuDeviceGetCount(&n), "cuDeviceGetCount");
    for (int i = 0; i < n; ++i) {
      const GpuInfo g = gpu_info(i);
      a.push_back(nvrtc_arch(g.cc_major, g.cc_minor));
    }
    return a;
  }();
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
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

  // Launches of geometries seen before (Kernel::operator()): key -> prepared launch.
  detail::PreparedCache<PreparedLaunch> prepared;

  // The schedule for this stride class and shape class: with the default schedule, one stored by
  // the tuner for that class (looked up once per class and object). The schedule must apply
  // exactly to the contiguous inputs' kernel; other stride classes take the fields that apply to
  // theirs, and so do stored winners.
  std::pair<Schedule, detail::Fit> choose(const detail::StrideClass& sc, const std::string& cls) const {
    if (!schedule.is_default()) return {schedule, sc == default_sc ? detail::Fit::exact : detail::Fit::lenient};
    // A tuned winner for this shape class, else the planner's default for a short whole axis.
    Schedule s = detail::stored_schedule(pipeline, target, sc, cls);
    if (s.is_default() && cls.ends_with('w')) s = detail::short_whole_schedule(pipeline, target, sc);
    return {s, detail::Fit::lenient};
  }

  // The loaded kernel for this stride class and shape class.
  std::shared_ptr<Loaded> get(const detail::StrideClass& sc, const std::string& cls = "m") const {
    const std::string local = sc.str() + cls;
    {
      std::shared_lock lock(mutex);
      for (const auto& [k, v] : seen)
        if (k == local) return v;
    }
    const auto [s, fit] = choose(sc, cls);
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

  // Without a GPU: the plan of that kernel, compiled (or read from the disk cache), not loaded.
  detail::Plan plan_only(const detail::StrideClass& sc, const std::string& cls) const {
    const auto [s, fit] = choose(sc, cls);
    detail::CompileOptions opts;
    opts.schedule = s;
    opts.fit = fit;
    return detail::compile(pipeline, target, sc, opts).plan;
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
  // Compile (or fetch from SQLite) now for the common case; load only where a GPU of the target's
  // architecture exists (a kernel for another GPU is compiled only, e.g. warm-up of a disk cache).
  detail::CompileOptions opts;
  opts.schedule = schedule;
  detail::Plan plan;
  if (gpu_available() && arch_present(target.arch)) {
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

PreparedLaunch Kernel::prepare(std::span<const TensorView> inputs, std::span<const TensorView> outputs) const {
  return prepare(inputs, outputs, true);
}

PreparedLaunch Kernel::prepare(std::span<const TensorView> inputs, std::span<const TensorView> outputs, bool own) const {
  const Pipeline& p = state_->pipeline;
  detail::Binding b = detail::check_bindings(p, inputs, outputs, DeviceKind::cuda);
  detail::StrideClass sc{b.unit_axis, b.aligned};
  // Offsets and per-channel vectors are read element by element: their alignment is not part of
  // the class (as in default_stride_class, so that contiguous inputs reuse the eager compile).
  for (size_t k = 0; k < p.inputs().size() && k < sc.aligned.size(); ++k)
    if (p.inputs()[k].kind != InputDecl::Kind::tensor && p.inputs()[k].kind != InputDecl::Kind::codes) sc.aligned[k] = false;
  const std::string cls = detail::shape_class(p, b.shape);
  detail::PreparedParts parts;
  detail::Plan unloaded;
  if (gpu_available()) {
    std::shared_ptr<Loaded> l = state_->get(sc, cls);
    parts.plan = &l->plan;
    parts.kernel = &l->kernel;
    parts.loaded = std::move(l);
  } else {
    unloaded = state_->plan_only(sc, cls);
    parts.plan = &unloaded;
  }
  // An empty domain has nothing to compute but the scales of jagged groups over an empty axis
  // (each an empty, zero block): launch only when the kernel has bytes of its own to write.
  const std::vector<int>& zeroed = parts.plan->zero_outputs;
  bool work = !b.empty;
  for (size_t o = 0; o < b.outputs.size() && !work; ++o)
    work = b.outputs[o].storage_bytes > 0 && std::find(zeroed.begin(), zeroed.end(), int(o)) == zeroed.end();
  b.empty = !work;  // from here: nothing to launch
  if (!b.empty) {
    for (size_t o = 0; o < b.outputs.size(); ++o)
      if (detail::is_blocked(p.outputs()[o].layout) && b.outputs[o].storage_bytes >= (int64_t(1) << 32))
        throw UsageError(fmt::format("launch: output '{}': a blocked scale tensor of {} bytes; the kernels address "
                                     "blocked scales with 32-bit offsets (< 4 GiB)", p.outputs()[o].name,
                                     b.outputs[o].storage_bytes));
    parts.launch = parts.plan->launch(b.shape, b.groups);
  }
  if (state_->amax_pass && !b.empty) {
    // The pre-pass writes the tensor amax into the workspace (an f32 [1] output). Its address is
    // known per launch only: prepared at one past every input, where it overlaps none of them.
    std::vector<TensorView> ain;
    uintptr_t end = 16;
    for (int i : state_->amax_inputs) ain.push_back(inputs[size_t(i)]);
    for (const TensorView& v : ain)
      end = std::max(end, reinterpret_cast<uintptr_t>(v.data) + uintptr_t(detail::span_bytes(v)));
    TensorView tv = TensorView::contiguous(reinterpret_cast<void*>((end + 15) / 16 * 16), DType::f32, {1},
                                           DeviceKind::cuda, inputs[0].device_ordinal);
    parts.prepass = state_->amax_pass->prepare(ain, std::span<const TensorView>(&tv, 1));
    parts.prepass_inputs = state_->amax_inputs;
  }
  parts.pipeline = &p;
  parts.inputs = inputs;
  parts.outputs = outputs;
  parts.binding = &b;
  if (own) parts.owner = state_;
  parts.workspace_bytes = state_->workspace;
  return detail::make_prepared(std::move(parts));
}

void Kernel::operator()(uint64_t stream, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                        uint64_t workspace) const {
  detail::check_workspace(state_->amax_pass.has_value(), workspace, workspace_bytes());
  // The geometry's key: what prepare() depends on besides the pointers, and the inputs' alignment bits.
  thread_local std::vector<int64_t> key;
  thread_local std::vector<uint64_t> ptrs;
  key.clear();
  ptrs.clear();
  key.push_back(int64_t(inputs.size()));
  for (const auto* side : {&inputs, &outputs})
    for (const TensorView& v : *side) {
      const uint64_t ptr = uint64_t(reinterpret_cast<uintptr_t>(v.data));
      ptrs.push_back(ptr);
      key.push_back(int64_t(v.dtype) | int64_t(v.device) << 8 | int64_t(v.device_ordinal) << 16 |
                    int64_t(ptr % 16 == 0) << 40 | int64_t(v.rank()) << 48);
      key.insert(key.end(), v.shape.begin(), v.shape.end());
      key.push_back(int64_t(v.strides.size()));
      key.insert(key.end(), v.strides.begin(), v.strides.end());
    }
  std::optional<PreparedLaunch> pl = state_->prepared.find(key);
  if (!pl) {
    if (!gpu_available()) {
      detail::check_bindings(state_->pipeline, inputs, outputs, DeviceKind::cuda);
      detail::Driver::get();  // throws the CudaError that says why there is no GPU
    }
    pl = state_->prepared.insert(key, prepare(inputs, outputs, false));  // kept by the state: no owner (no cycle)
  }
  (*pl)(stream, ptrs, workspace);
}

}  // namespace mxjit
