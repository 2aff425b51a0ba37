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
};

// Tier 1: (pipeline, target, stride class) -> loaded kernel, shared by every Kernel object.
using SemanticCache = cache::MemoryCache<std::string, std::shared_ptr<Loaded>>;
SemanticCache& semantic_cache() {
  static SemanticCache c;
  return c;
}

std::shared_ptr<Loaded> load(const Pipeline& p, const Target& t, const detail::StrideClass& sc, const detail::Tuning& tuning) {
  detail::CompileOptions opts;
  opts.tuning = tuning;
  detail::CompiledKernel ck = detail::compile(p, t, sc, opts);
  try {
    return std::make_shared<Loaded>(Loaded{detail::LoadedKernel::load(ck.cubin, ck.plan.kernel_name), ck.plan});
  } catch (const CudaError&) {
    if (!ck.from_disk) throw;
    // A cached cubin that fails to load is a miss: drop it and compile afresh.
    detail::evict(ck.content_key);
    ck = detail::compile(p, t, sc, opts);
    return std::make_shared<Loaded>(Loaded{detail::LoadedKernel::load(ck.cubin, ck.plan.kernel_name), ck.plan});
  }
}

}  // namespace

struct Kernel::State {
  Pipeline pipeline;
  // NVFP4: a pre-pass kernel computing the per-tensor amax, and its input positions in ours.
  std::optional<Kernel> amax_pass;
  std::vector<int> amax_inputs;
  std::mutex scratch_mutex;
  std::map<uint64_t, DeviceBuffer> scratch;  // per stream: the 4-byte tensor amax
  float* scratch_for(uint64_t stream) {
    std::lock_guard lock(scratch_mutex);
    auto it = scratch.find(stream);
    if (it == scratch.end()) it = scratch.emplace(stream, DeviceBuffer::alloc(4)).first;
    return reinterpret_cast<float*>(it->second.ptr());
  }
  Target target;
  detail::Tuning tuning;
  std::string hash_prefix;
  // Per-Kernel tier 0: the specialisations this object launched, checked without hashing.
  mutable std::shared_mutex mutex;
  mutable std::vector<std::pair<std::string, std::shared_ptr<Loaded>>> seen;  // key: stride + shape class

  // The loaded kernel for this stride class and shape class. With default plan parameters, a
  // tuning stored by the tuner for that class is used (looked up once per class and object).
  std::shared_ptr<Loaded> get(const detail::StrideClass& sc, const std::string& cls = "m") const {
    const std::string local = sc.str() + cls;
    {
      std::shared_lock lock(mutex);
      for (const auto& [k, v] : seen)
        if (k == local) return v;
    }
    detail::Tuning t = tuning.is_default() ? detail::stored_tuning(pipeline, target, sc, cls) : tuning;
    const std::string key = hash_prefix + t.str() + "/" + sc.str();
    std::shared_ptr<const std::shared_ptr<Loaded>> found = semantic_cache().find(key);
    detail::disk_cache().count_memory_lookup(found != nullptr);
    std::shared_ptr<Loaded> loaded = found ? *found : nullptr;
    if (!loaded) loaded = *semantic_cache().insert(key, load(pipeline, target, sc, t));
    std::unique_lock lock(mutex);
    seen.emplace_back(local, loaded);
    return loaded;
  }
};

const Pipeline& Kernel::pipeline() const { return state_->pipeline; }
const Target& Kernel::target() const { return state_->target; }

std::string Kernel::source() const {
  return detail::generate(state_->pipeline, state_->target, detail::default_stride_class(state_->pipeline), state_->tuning).source;
}

Kernel jit(const Pipeline& p, const Target& target, const detail::Tuning& tuning) {
  Kernel k;
  k.state_ = std::make_shared<Kernel::State>();
  k.state_->pipeline = p;
  k.state_->target = target;
  k.state_->tuning = tuning;
  k.state_->hash_prefix = p.hash().hex() + "/" + target.arch + "/";
  // NVFP4 scales need the tensor amax first: a pre-pass pipeline over the same value.
  for (const Output& o : p.outputs()) {
    if ((o.kind != OutputKind::scales && o.kind != OutputKind::elems)) continue;
    const NodePtr& sn = o.kind == OutputKind::scales ? o.node : o.node->args[1];
    if (sn->scale_format != ScaleFormat::e4m3 || k.state_->amax_pass) continue;
    Pipeline ap = pipeline({output("tamax", Amax(sn->args[1]))});
    for (const InputDecl& in : ap.inputs()) k.state_->amax_inputs.push_back(p.input_index(in.name));
    k.state_->amax_pass = jit(ap, target);
  }
  // Compile (or fetch from SQLite) now for the common case; load only where a GPU exists.
  const detail::StrideClass sc = detail::default_stride_class(p);
  detail::CompileOptions opts;
  opts.tuning = tuning;
  if (gpu_available()) k.state_->get(sc);
  else detail::compile(p, target, sc, opts);
  return k;
}

void Kernel::operator()(uint64_t stream, std::span<const TensorView> inputs, std::span<const TensorView> outputs) const {
  const Pipeline& p = state_->pipeline;
  detail::Binding b = detail::check_bindings(p, inputs, outputs, DeviceKind::cuda);
  detail::StrideClass sc{std::move(b.unit_axis), std::move(b.aligned)};
  std::shared_ptr<Loaded> l = state_->get(sc, detail::shape_class(b.shape));
  const detail::Plan& plan = l->plan;
  detail::Driver& drv = detail::Driver::get();
  // Tensor amax (4 bytes, combined with atomicMax) and grouped scale layouts (the whole padded
  // buffer: kernels write real scales only) start from zero, in stream order before the kernel.
  for (int o : plan.zero_outputs)
    if (const int64_t bytes = b.outputs[size_t(o)].storage_bytes; bytes > 0)
      drv.check(drv.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(outputs[size_t(o)].data), 0, size_t(bytes),
                                    reinterpret_cast<CUstream>(stream)), "cuMemsetD8Async");
  // An empty domain has nothing to compute but the scales of jagged groups over an empty axis
  // (each an empty, zero block): launch only when the kernel has bytes of its own to write.
  bool work = !b.empty;
  for (size_t o = 0; o < b.outputs.size() && !work; ++o)
    work = b.outputs[o].storage_bytes > 0 &&
           std::find(plan.zero_outputs.begin(), plan.zero_outputs.end(), int(o)) == plan.zero_outputs.end();
  if (!work) return;
  for (size_t o = 0; o < b.outputs.size(); ++o)
    if (b.outputs[o].row_axis >= 0 && b.outputs[o].storage_bytes >= (int64_t(1) << 32))
      throw UsageError(fmt::format("launch: output '{}': a blocked scale tensor of {} bytes; the kernels address "
                                   "blocked scales with 32-bit offsets (< 4 GiB)", p.outputs()[o].name,
                                   b.outputs[o].storage_bytes));
  const int rank = p.rank();
  int64_t tiles_c, tiles_r, grid;
  if (plan.kind == detail::Plan::Kind::direct) {
    // Rows: every index of the axes other than ax_c; slots: chunk positions per row.
    const int64_t n_c = b.shape[size_t(plan.ax_c)];
    // With blocked scales both run on into the scale matrices' padding, which the kernel zeroes
    // (rows of the innermost row axis to pad_r, block columns to pad_c).
    tiles_c = ((n_c + plan.block_c - 1) / plan.block_c + plan.pad_c - 1) / plan.pad_c * plan.pad_c * plan.group;
    tiles_r = 1;
    int inner = -1;
    for (int a = 0; a < rank; ++a)
      if (a != plan.ax_c) inner = a;
    for (int a = 0; a < rank; ++a)
      if (a != plan.ax_c) tiles_r *= a == inner ? (b.shape[size_t(a)] + plan.pad_r - 1) / plan.pad_r * plan.pad_r : b.shape[size_t(a)];
    grid = 0;
  } else {
    tiles_c = (b.shape[size_t(plan.ax_c)] + plan.tile_c - 1) / plan.tile_c;
    tiles_r = plan.ax_r >= 0 ? (b.shape[size_t(plan.ax_r)] + plan.tile_r - 1) / plan.tile_r : 1;
    int64_t batch = 1;
    for (int a : plan.batch_axes) batch *= b.shape[size_t(a)];
    grid = tiles_c * tiles_r * batch;
  }
  if (grid >= (int64_t(1) << 31))
    throw UsageError(fmt::format("launch: {} tiles exceed one launch's 2^31 CTAs", grid));
  // The direct and columns kernels index within the domain with 32-bit integers.
  if (plan.kind == detail::Plan::Kind::direct || plan.kind == detail::Plan::Kind::columns)
    for (size_t a = 0; a < b.shape.size(); ++a)
      if (b.shape[a] >= (int64_t(1) << 31))
        throw UsageError(fmt::format("launch: input extent {} along axis {} exceeds 2^31 - 1 (this cast's kernel indexes "
                                     "the domain with 32-bit integers)", b.shape[a], a));
  // Parameter block, in the order the generated MxParams declares it (every field 8 bytes).
  std::vector<int64_t> w;
  w.reserve(size_t(detail::param_words(p) + detail::grouped_param_words(p)));
  for (const TensorView& v : inputs) w.push_back(int64_t(reinterpret_cast<uintptr_t>(v.data)));
  for (const TensorView& v : outputs) w.push_back(int64_t(reinterpret_cast<uintptr_t>(v.data)));
  for (int a = 0; a < rank; ++a) w.push_back(b.shape[size_t(a)]);
  for (const TensorView& v : inputs)
    for (int a = 0; a < rank; ++a) w.push_back(a < v.rank() ? v.strides[size_t(a)] : 0);
  for (const OutputGeometry& g : b.outputs)
    for (int a = 0; a < rank; ++a) w.push_back(a < int(g.view_strides.size()) ? g.view_strides[size_t(a)] : 0);
  for (const OutputGeometry& g : b.outputs)
    for (int a = 0; a < rank; ++a) w.push_back(a < int(g.logical_shape.size()) ? g.logical_shape[size_t(a)] : 1);
  const size_t tiles_r_word = w.size();
  w.push_back(tiles_r);
  w.push_back(tiles_c);
  int64_t aux = 0;
  if (state_->amax_pass) {
    // NVFP4: tensor amax into this stream's scratch word, then the cast reads it (stream order).
    float* t = state_->scratch_for(stream);
    std::vector<TensorView> ain;
    for (int i : state_->amax_inputs) ain.push_back(inputs[size_t(i)]);
    TensorView tv = TensorView::contiguous(t, DType::f32, {1}, DeviceKind::cuda, inputs[0].device_ordinal);
    (*state_->amax_pass)(stream, std::span<const TensorView>(ain), std::span<const TensorView>(&tv, 1));
    aux = int64_t(reinterpret_cast<uintptr_t>(t));
  }
  w.push_back(aux);
  // Grouped scale layouts: each input's extent along axis 0 (the group count of an offsets input).
  if (detail::grouped_param_words(p) > 0)
    for (const TensorView& v : inputs) w.push_back(v.shape.empty() ? 0 : v.shape[0]);
  void* args[] = {w.data()};
  if (plan.kind == detail::Plan::Kind::grouped) {
    // x: tile_c columns (times the cluster: its CTAs are neighbours along x); y: one CTA row per
    // group, plus one for the rows past the last end.
    const int64_t gx = (b.shape[size_t(plan.ax_c)] + plan.tile_c - 1) / plan.tile_c * plan.cluster;
    if (b.groups + 1 > 65535) throw UsageError(fmt::format("launch: {} groups exceed 65534", b.groups));
    if (gx >= (int64_t(1) << 31)) throw UsageError("launch: the domain is too large for one launch");
    w[tiles_r_word] = b.groups;  // tiles_r: the number of groups
    l->kernel.launch({unsigned(gx), unsigned(b.groups + 1), 1}, {unsigned(plan.threads), 1, 1},
                     unsigned(plan.smem_bytes), stream, args);
    return;
  }
  if (plan.kind == detail::Plan::Kind::direct) {
    // x: slots of a row; y, z: groups of `unroll` rows.
    const int64_t gx = (tiles_c + plan.threads - 1) / plan.threads;
    const int64_t groups = (tiles_r + plan.unroll - 1) / plan.unroll;
    const int64_t gy = std::min<int64_t>(groups, 65535), gz = (groups + gy - 1) / gy;
    if (gx >= (int64_t(1) << 31) || gz > 65535) throw UsageError("launch: the domain is too large for one launch");
    l->kernel.launch({unsigned(gx), unsigned(gy), unsigned(gz)}, {unsigned(plan.threads), 1, 1},
                     unsigned(plan.smem_bytes), stream, args);
    return;
  }
  if (plan.kind == detail::Plan::Kind::columns && plan.stages > 1)  // persistent CTAs walk the tiles
    grid = std::min<int64_t>(grid, l->kernel.resident_ctas(unsigned(plan.threads), unsigned(plan.smem_bytes)));
  l->kernel.launch({unsigned(grid), 1, 1}, {unsigned(plan.threads), 1, 1}, unsigned(plan.smem_bytes), stream, args);
}

}  // namespace mxjit
