// CpuKernel: launch checks, parameter block, tiles (dense or along jagged groups), the amax
// pass (NVFP4's tensor amax, whole-axis blocks) and the thread pool (cpu_backend.hpp).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <fmt/format.h>
#include <map>
#include <mutex>

#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/limits.hpp"
#include "runtime/bindings.hpp"
#include "backends/llvm/cpu_backend.hpp"
#include "backends/llvm/jit_engine.hpp"
#include "backends/llvm/thread_pool.hpp"
#include "backends/reference/blocking.hpp"

namespace mxjit::cpu {

using detail::CompiledFunction;
using detail::CpuPlan;

struct CpuKernelState {
  explicit CpuKernelState(Pipeline p) : pipeline(std::move(p)) {}
  Pipeline pipeline;
  std::shared_ptr<const CompiledFunction> first;
  std::mutex mutex;
  std::map<std::vector<int>, std::shared_ptr<const CompiledFunction>> by_class;

  std::shared_ptr<const CompiledFunction> get(const std::vector<int>& unit) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = by_class.find(unit);
    if (it != by_class.end()) return it->second;
    auto f = detail::compile_function(pipeline, unit);
    by_class.emplace(unit, f);
    return f;
  }
};

namespace {

/// Every dequantize node, by the name of its codes input.
void collect_dequant(const NodePtr& n, std::map<std::string, const Node*>& out) {
  if (n->op == Op::dequant) out[n->args[0]->name] = n.get();
  for (const NodePtr& a : n->args) collect_dequant(a, out);
}

/// The checks the reference makes beyond check_bindings: dequantize codes / scales extents and
/// jagged group ends. Returns the group ends of the offsets input (if any).
std::vector<int32_t> check_inputs(const Pipeline& p, std::span<const TensorView> in, const std::vector<int64_t>& domain,
                                  int offsets_input) {
  std::map<std::string, const Node*> dq;
  for (const Output& o : p.outputs()) collect_dequant(o.node, dq);
  std::vector<int32_t> ends;
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& d = p.inputs()[k];
    std::vector<int64_t> want;
    if (d.kind == InputDecl::Kind::codes) {
      want = domain;
      if (dq.at(d.name)->elem.packed()) want[size_t(d.axis)] /= 2;
    } else if (d.kind == InputDecl::Kind::scales) {
      for (auto& [name, node] : dq)
        if (node->args[1]->name == d.name) want = scale_shape(node->block, domain);
    } else if (d.kind == InputDecl::Kind::offsets) {
      std::vector<int32_t> e(size_t(in[k].shape[0]));
      for (size_t g = 0; g < e.size(); ++g) e[g] = static_cast<const int32_t*>(in[k].data)[int64_t(g) * in[k].strides[0]];
      reference::validate_group_ends(d.name, e, domain.at(size_t(d.axis)));
      if (int(k) == offsets_input) ends = std::move(e);
      continue;
    } else {
      continue;
    }
    if (in[k].shape != want)
      throw UsageError(fmt::format("input '{}': extents must be [{}], got [{}]", d.name, fmt::join(want, ","),
                                   fmt::join(in[k].shape, ",")));
  }
  return ends;
}

/// The mask's counts (Pipeline::mask()), validated as the reference does; empty without a mask.
std::vector<int32_t> read_counts(const Pipeline& p, std::span<const TensorView> in, const std::vector<int64_t>& domain) {
  const int k = p.counts_input();
  if (k < 0) return {};
  const TensorView& v = in[size_t(k)];
  std::vector<int32_t> c(size_t(v.shape[0]));
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<const int32_t*>(v.data)[int64_t(i) * v.strides[0]];
  reference::validate_counts(p.mask().counts, c, domain.at(size_t(p.mask().axis)));
  return c;
}

/// Rows of one tile along ax_r: [start, end) and its group (-1: dense or outside the groups).
struct RowRange {
  int64_t start, end, group;
};

std::vector<RowRange> row_ranges(const CpuPlan& plan, const std::vector<int64_t>& shape, const std::vector<int32_t>& ends) {
  std::vector<RowRange> rows;
  const int64_t extent = plan.ax_r >= 0 ? shape[size_t(plan.ax_r)] : 1;
  int64_t start = 0;
  if (plan.offsets_input >= 0) {
    for (size_t g = 0; g < ends.size(); ++g) {
      rows.push_back({start, std::max<int64_t>(start, ends[g]), int64_t(g)});
      start = std::max<int64_t>(start, ends[g]);
    }
  }
  for (; start < extent; start += plan.tile_r) rows.push_back({start, std::min(extent, start + plan.tile_r), -1});
  return rows;
}

/// One worker's scratch, kept between calls.
char* scratch_of(int64_t bytes) {
  thread_local std::unique_ptr<char[]> buf;
  thread_local int64_t size = 0;
  if (size < bytes) {
    buf.reset(new char[size_t(bytes) + 64]);
    size = bytes;
  }
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(buf.get()) + 63) & ~uintptr_t(63));
}

uint32_t canonical_bits(uint32_t m) { return m > 0x7f800000u ? 0x7fc00000u : m; }

}  // namespace

void CpuKernel::operator()(std::span<const TensorView> in, std::span<const TensorView> out, int threads) const {
  const Pipeline& p = state_->pipeline;
  const ::mxjit::detail::Binding b = ::mxjit::detail::check_bindings(p, in, out, DeviceKind::cpu);
  std::shared_ptr<const CompiledFunction> f = state_->get(b.unit_axis);
  const CpuPlan& plan = f->plan;
  const int rank = plan.rank;
  const std::vector<int64_t>& shape = b.shape;
  const std::vector<int32_t> ends = check_inputs(p, in, shape, plan.offsets_input);
  const std::vector<int32_t> counts = read_counts(p, in, shape);
  const Mask& mask = p.mask();
  if (plan.offsets_input >= 0)
    for (size_t o = 0; o < p.outputs().size(); ++o)
      if (b.outputs[o].packed_axis == plan.ax_r && plan.ax_r >= 0)
        for (size_t g = 0; g < ends.size(); ++g)
          if (ends[g] % 2)
            throw UsageError(fmt::format("CPU backend: output '{}' packs FP4 pairs along the jagged axis {}, but group "
                                         "end [{}] = {} is odd (a byte would hold two groups)",
                                         p.outputs()[o].name, plan.ax_r, g, ends[g]));

  // Parameter block.
  std::vector<int64_t> P(size_t(plan.param_words()), 0);
  std::vector<uint32_t> slots(size_t(std::max(plan.slots, 1)), 0);
  for (int k = 0; k < plan.ni; ++k) {
    P[size_t(plan.p_in(k))] = int64_t(reinterpret_cast<uintptr_t>(in[size_t(k)].data));
    for (int a = 0; a < int(in[size_t(k)].strides.size()) && a < rank; ++a)
      P[size_t(plan.p_in_stride(k, a))] = in[size_t(k)].strides[size_t(a)];
  }
  for (int o = 0; o < plan.no; ++o) {
    const OutputGeometry& g = b.outputs[size_t(o)];
    P[size_t(plan.p_out(o))] = int64_t(reinterpret_cast<uintptr_t>(out[size_t(o)].data));
    for (int a = 0; a < rank; ++a) {
      if (a < int(g.view_strides.size()) && int(g.view_strides.size()) == rank)
        P[size_t(plan.p_out_stride(o, a))] = g.view_strides[size_t(a)];
      P[size_t(plan.p_out_shape(o, a))] = a < int(g.logical_shape.size()) ? g.logical_shape[size_t(a)] : 1;
    }
    if (g.padded && g.storage_bytes > 0)
      std::memset(out[size_t(o)].data, 0, size_t(g.storage_bytes));  // padding is zero (the reference's rule)
  }
  int64_t acc = 1;  // saturates only for an empty domain, which runs no tile
  for (int a = rank - 1; a >= 0; --a) {
    P[size_t(plan.p_shape(a))] = shape[size_t(a)];
    P[size_t(plan.p_dom_stride(a))] = acc;
    acc = checked_mul(acc, shape[size_t(a)]).value_or(std::numeric_limits<int64_t>::max());
  }
  P[size_t(plan.p_slots())] = int64_t(reinterpret_cast<uintptr_t>(slots.data()));
  // Whole-axis blocks: one zeroed u32 amax word per scale, filled by the amax pass.
  std::vector<std::vector<uint32_t>> whole(size_t(plan.wholes));
  for (const detail::ScaleInstance& i : plan.instances) {
    if (i.whole < 0) continue;
    const std::vector<int64_t> sshape = scale_shape(block_of(plan.values.scales[size_t(i.scale)]), shape);
    whole[size_t(i.whole)].assign(size_t(reference::product(sshape)), 0u);
    P[size_t(plan.p_whole(i.whole))] = int64_t(reinterpret_cast<uintptr_t>(whole[size_t(i.whole)].data()));
    const std::vector<int64_t> st = reference::row_major_strides(sshape);
    for (int a = 0; a < rank; ++a) P[size_t(plan.p_whole_stride(i.whole, a))] = st[size_t(a)];
  }

  // Tiles: batch index x row range x column tile (columns fastest). An empty domain has none,
  // whatever its other extents (only jagged groups over an empty axis: their zero-block scales).
  const int64_t extent_c = plan.ax_c >= 0 ? shape[size_t(plan.ax_c)] : 1;
  const int64_t tiles_c = ceil_div(extent_c, plan.tile_c);
  std::vector<int64_t> batch_extents;
  for (int a : plan.batch_axes) batch_extents.push_back(shape[size_t(a)]);
  const int64_t batches = reference::product(batch_extents);
  const std::vector<RowRange> rows = tiles_c == 0 || batches == 0 ? std::vector<RowRange>{} : row_ranges(plan, shape, ends);
  const int64_t items = batches * int64_t(rows.size()) * tiles_c;
  int64_t cap = 1;
  for (const RowRange& r : rows) cap = std::max(cap, r.end - r.start);
  const int64_t scratch = detail::scratch_bytes(plan, cap);
  const int pool = detail::ThreadPool::instance().size();
  const int nthreads = int(std::min<int64_t>(threads > 0 ? threads : pool, std::max<int64_t>(items, 1)));

  auto pass = [&](int64_t mode) {
    std::atomic<int64_t> next{0};
    const int64_t chunk = std::max<int64_t>(1, items / (int64_t(nthreads) * 16));
    detail::ThreadPool::instance().run(nthreads, [&](int) {
      char* s = scratch_of(scratch);
      std::vector<int64_t> T(size_t(detail::kBatch + rank), 0);
      T[detail::kMode] = mode;
      T[detail::kCap] = cap;
      for (;;) {
        const int64_t first = next.fetch_add(chunk);
        if (first >= items) return;
        for (int64_t item = first; item < std::min(items, first + chunk); ++item) {
          int64_t rest = item;
          const int64_t tc = rest % tiles_c;
          rest /= tiles_c;
          const RowRange& rr = rows[size_t(rest % int64_t(rows.size()))];
          rest /= int64_t(rows.size());
          for (auto it = plan.batch_axes.rbegin(); it != plan.batch_axes.rend(); ++it) {
            T[size_t(detail::kBatch + *it)] = rest % shape[size_t(*it)];
            rest /= shape[size_t(*it)];
          }
          T[detail::kR0] = rr.start;
          T[detail::kNr] = rr.end - rr.start;
          T[detail::kC0] = tc * plan.tile_c;
          T[detail::kNc] = std::min<int64_t>(plan.tile_c, extent_c - tc * plan.tile_c);
          T[detail::kGroup] = rr.group;
          if (mask.active()) {  // masked rows: the tile narrowed to the real ones (make_cpu_plan: `by` is a batch axis)
            const int64_t n = counts[size_t(T[size_t(detail::kBatch + mask.by)])];
            if (mask.axis == plan.ax_r) T[detail::kNr] = std::min(T[detail::kNr], n - T[detail::kR0]);
            else if (mask.axis == plan.ax_c) T[detail::kNc] = std::min(T[detail::kNc], n - T[detail::kC0]);
            else if (T[size_t(detail::kBatch + mask.axis)] >= n) continue;
            if (T[detail::kNr] <= 0 || T[detail::kNc] <= 0) continue;
          }
          f->fn(P.data(), T.data(), s);
        }
      }
    });
  };
  if (plan.prepass) {
    pass(0);
    for (const detail::ScaleInstance& i : plan.instances)
      if (i.tamax_slot >= 0) P[size_t(plan.p_tamax(i.tamax_slot))] = canonical_bits(slots[size_t(i.tamax_slot)]);
  }
  pass(1);
  for (size_t o = 0; o < p.outputs().size(); ++o)
    if (plan.amax_slot[o] >= 0) {
      const uint32_t m = canonical_bits(slots[size_t(plan.amax_slot[o])]);
      std::memcpy(out[o].data, &m, 4);
    }
}

const Pipeline& CpuKernel::pipeline() const { return state_->pipeline; }
const CpuCompileInfo& CpuKernel::compile_info() const { return state_->first->info; }
std::string CpuKernel::ir_text() const { return state_->first->ir_text; }

CpuKernel cpu_jit(const Pipeline& p) {
  std::vector<int> unit;
  for (const InputDecl& in : p.inputs())
    unit.push_back(in.one_dim() ? 0 : in.rank - 1);
  CpuKernel k;
  k.state_ = std::make_shared<CpuKernelState>(p);
  k.state_->first = k.state_->get(unit);
  return k;
}

bool cpu_backend_available() { return detail::engine_available(nullptr); }

std::string cpu_backend_unavailable_reason() {
  std::string r;
  return detail::engine_available(&r) ? std::string() : r;
}

std::string cpu_target_name() { return detail::host_target_name(); }

}  // namespace mxjit::cpu
