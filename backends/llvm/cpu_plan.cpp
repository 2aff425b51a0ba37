#include "backends/llvm/cpu_plan.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit::cpu::detail {
namespace {

void add_unique(std::vector<int>& v, int a) {
  if (std::find(v.begin(), v.end(), a) == v.end()) v.push_back(a);
}

int lead_unit_axis(const Pipeline& p, const std::vector<int>& unit_axis) {
  for (size_t i = 0; i < p.inputs().size(); ++i)
    if (p.inputs()[i].kind == InputDecl::Kind::tensor || p.inputs()[i].kind == InputDecl::Kind::codes)
      return i < unit_axis.size() ? unit_axis[i] : -1;
  return -1;
}

/// Innermost stored axis of each element / value output (where stores are contiguous).
std::vector<int> output_inner_axes(const Pipeline& p) {
  std::vector<int> inner;
  for (const Output& o : p.outputs())
    if (o.kind == OutputKind::elems || o.kind == OutputKind::values) add_unique(inner, o.layout.order(p.rank()).back());
  return inner;
}

/// Picks ax_r (the other tile axis) given ax_c: a block axis, else an output's innermost axis,
/// else the innermost remaining axis.
int pick_row_axis(const Pipeline& p, int ax_c, const std::vector<int>& block_axes) {
  for (int a : block_axes) if (a != ax_c) return a;
  for (int a : output_inner_axes(p)) if (a != ax_c) return a;
  for (int a = p.rank() - 1; a >= 0; --a) if (a != ax_c) return a;
  return -1;
}

void check_layouts(const Pipeline& p) {
  for (const Output& o : p.outputs()) {
    if (o.layout.grouped())
      throw UsageError(fmt::format("CPU backend: output '{}' uses the per-group scale layout {}, which this "
                                   "backend does not lower yet; use the CPU reference", o.name, o.layout.str()));
  }
}

}  // namespace

std::string CpuPlan::str() const {
  std::string inst;
  for (const ScaleInstance& i : instances)
    inst += fmt::format("{}(s{}{}{} {}x{}{}{})", inst.empty() ? "" : ",", i.scale, i.flush ? " flush" : "",
                        i.jagged ? " jagged" : "", i.br, i.bc, i.tamax_slot >= 0 ? " tamax" : "",
                        i.whole >= 0 ? fmt::format(" whole={:x}", i.whole_axes) : "");
  return fmt::format("cpu-plan rank={} ax_r={} ax_c={} tile={}x{} batch=[{}] unit=[{}] offsets={} inst=[{}] slots={} "
                     "prepass={} name={}",
                     rank, ax_r, ax_c, tile_r, tile_c, fmt::join(batch_axes, ","), fmt::join(unit_axis, ","),
                     offsets_input, inst, slots, prepass ? 1 : 0, function_name);
}

CpuPlan make_cpu_plan(const Pipeline& p, const std::vector<int>& unit_axis) {
  check_layouts(p);
  CpuPlan plan;
  plan.rank = p.rank();
  plan.unit_axis = unit_axis;
  plan.ni = int(p.inputs().size());
  plan.no = int(p.outputs().size());
  plan.values = ::mxjit::detail::collect_values(p);
  const auto& vs = plan.values;
  const int rank = p.rank();

  // Jagged groups: one offsets input and one axis for the whole pipeline.
  int jagged_axis = -1;
  std::string offsets;
  std::vector<int> block_axes;  // axes with power-of-two blocks: tile axes (whole axes may be batch axes)
  bool whole = false;
  for (const NodePtr& s : vs.scales) {
    const BlockSpec& b = block_of(s);
    whole = whole || b.whole();
    if (b.jagged()) {
      if (!offsets.empty() && (offsets != b.offsets || jagged_axis != b.axes[0]))
        throw UsageError(fmt::format("CPU backend: jagged groups from two offsets inputs or axes ('{}' axis {}, '{}' "
                                     "axis {}) in one pipeline are not lowered", offsets, jagged_axis, b.offsets,
                                     b.axes[0]));
      offsets = b.offsets;
      jagged_axis = b.axes[0];
    } else {
      for (size_t k = 0; k < b.axes.size(); ++k)
        if (b.sizes[k] != kWholeAxis) add_unique(block_axes, b.axes[k]);
    }
  }
  if (whole && jagged_axis >= 0)
    throw UsageError(fmt::format("CPU backend: whole-axis blocks next to jagged groups ('{}' axis {}) in one pipeline "
                                 "are not lowered; use the CPU reference", offsets, jagged_axis));
  const int unit = lead_unit_axis(p, unit_axis);
  if (jagged_axis >= 0) {
    plan.ax_r = jagged_axis;
    plan.offsets_input = p.input_index(offsets);
    if (unit >= 0 && unit != jagged_axis) plan.ax_c = unit;
    else {
      for (int a : block_axes) if (a != jagged_axis && plan.ax_c < 0) plan.ax_c = a;
      if (plan.ax_c < 0) plan.ax_c = pick_row_axis(p, jagged_axis, {});
    }
  } else if (block_axes.size() > 2) {
    throw UsageError(fmt::format("CPU backend: block axes {} span more than two axes; one tile covers two axes",
                                 fmt::join(block_axes, ",")));
  } else if (block_axes.size() == 2) {
    const bool unit_is_block = std::find(block_axes.begin(), block_axes.end(), unit) != block_axes.end();
    plan.ax_c = unit_is_block ? unit : std::max(block_axes[0], block_axes[1]);
    plan.ax_r = block_axes[0] == plan.ax_c ? block_axes[1] : block_axes[0];
  } else if (block_axes.size() == 1) {
    const int b = block_axes[0];
    if (unit >= 0 && unit != b) {
      plan.ax_c = unit;
      plan.ax_r = b;
    } else {
      plan.ax_c = b;
      plan.ax_r = pick_row_axis(p, b, {});
    }
  } else {
    plan.ax_c = unit >= 0 ? unit : rank - 1;
    plan.ax_r = pick_row_axis(p, plan.ax_c, {});
  }
  // Masked rows narrow a tile by the count of its batch index along `by`: the masked axis, never
  // a block axis, takes the tile rows rather than `by`.
  if (const Mask& m = p.mask(); m.active() && plan.ax_r == m.by && plan.ax_c != m.axis) plan.ax_r = m.axis;
  for (int a : block_axes)
    if (a != plan.ax_c && a != plan.ax_r)
      throw UsageError(fmt::format("CPU backend: block axis {} is not a tile axis ({}, {})", a, plan.ax_r, plan.ax_c));
  for (int a = 0; a < rank; ++a)
    if (a != plan.ax_r && a != plan.ax_c) plan.batch_axes.push_back(a);
  if (const Mask& m = p.mask(); m.active() && (m.by == plan.ax_r || m.by == plan.ax_c))
    throw UsageError(fmt::format("CPU backend: mask({}, {}, '{}') counts per index of axis {}, which is a tile axis ({}, {}) "
                                 "here; use the CPU reference", m.axis, m.by, m.counts, m.by, plan.ax_r, plan.ax_c));

  // Scale instances: (scale, flush) as the reference keys them.
  auto instance_of = [&](int s, bool flush) {
    for (size_t i = 0; i < plan.instances.size(); ++i)
      if (plan.instances[i].scale == s && plan.instances[i].flush == flush) return int(i);
    ScaleInstance in;
    in.scale = s;
    in.flush = flush;
    const BlockSpec& b = block_of(vs.scales[size_t(s)]);
    in.jagged = b.jagged();
    if (!in.jagged) {
      for (size_t k = 0; k < b.axes.size(); ++k)
        if (b.sizes[k] == kWholeAxis) in.whole_axes |= 1u << b.axes[k];
      if (in.whole_axes) in.whole = plan.wholes++;
      // Along a whole tile axis a tile is one block: br / bc become the tile's extent below.
      in.br = plan.ax_r >= 0 && !in.whole_along(plan.ax_r) ? b.size_along(plan.ax_r) : 1;
      in.bc = plan.ax_c >= 0 && !in.whole_along(plan.ax_c) ? b.size_along(plan.ax_c) : 1;
      if (jagged_axis >= 0 && in.br != 1)
        throw UsageError(fmt::format("CPU backend: blocks of {} along the jagged axis {} next to jagged groups are "
                                     "not lowered", in.br, jagged_axis));
    }
    if (tensor_amax_of(*vs.scales[size_t(s)])) {  // a two-level scale: its tensor amax comes first
      in.tamax_slot = plan.slots++;
      plan.prepass = true;
    }
    plan.prepass = plan.prepass || in.whole >= 0;
    plan.instances.push_back(in);
    return int(plan.instances.size()) - 1;
  };
  for (size_t q = 0; q < vs.quantizes.size(); ++q)
    plan.quantize_instance.push_back(instance_of(vs.quantize_scale[q], vs.quantizes[q]->flush_subnormals));
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const Output& out = p.outputs()[o];
    const int idx = vs.output_index[o];
    plan.output_instance.push_back(out.kind == OutputKind::scales ? instance_of(idx, vs.scale_flush[size_t(idx)]) : -1);
    plan.amax_slot.push_back(out.kind == OutputKind::amax ? plan.slots++ : -1);
  }

  // Tiles: whole blocks in both directions. Row-wise work gets long rows (long read streams for
  // the prefetcher), transposed stores 32 rows (32-byte runs per column); measured on znver3.
  int64_t br = 1, bc = 1;
  for (const ScaleInstance& i : plan.instances) {
    if (!i.jagged) br = std::max(br, i.br);
    bc = std::max(bc, i.bc);
  }
  bool transposed = false;
  for (int a : output_inner_axes(p)) transposed = transposed || (a == plan.ax_r && a >= 0);
  // A tile holds whole blocks: blocks past kMaxTileValues are refused here (whatever the extents:
  // the reference runs them), and the default extents shrink so that a tile never exceeds it.
  if (br > kMaxTileValues || bc > kMaxTileValues / br)
    throw UsageError(fmt::format("CPU backend: blocks of {}x{} elements (rows x columns of the tile) exceed its tile "
                                 "of {} values", br, bc, limit_text(kMaxTileValues)));
  int64_t tc = plan.ax_c < 0 ? 1 : std::max<int64_t>(bc, plan.ax_r < 0 ? 4096 : (jagged_axis >= 0 ? 64 : (transposed || br > 1 ? 512 : 1024)));
  int64_t tr = plan.ax_r < 0 ? 1 : std::max<int64_t>(br, jagged_axis >= 0 ? 64 : (transposed ? 32 : 4));
  // Blocks along a whole ax_r: taller tiles, fewer atomic maxima per element in the amax pass.
  for (const ScaleInstance& i : plan.instances)
    if (i.whole_along(plan.ax_r)) tr = std::max<int64_t>(tr, 32);
  while (tr * tc > kMaxTileValues && tr > br) tr /= 2;  // powers of two: still whole blocks
  while (tr * tc > kMaxTileValues && tc > bc) tc /= 2;
  plan.tile_c = int(tc);
  plan.tile_r = int(tr);
  for (ScaleInstance& i : plan.instances) {
    if (i.whole_along(plan.ax_r)) i.br = tr;
    if (i.whole_along(plan.ax_c)) i.bc = tc;
  }

  // FP4 codes pack pairs along the innermost stored axis, which must be a tile axis.
  for (const Output& o : p.outputs()) {
    if (o.kind != OutputKind::elems || !o.node->elem.packed()) continue;
    const int pa = o.layout.order(rank).back();
    if (pa != plan.ax_c && pa != plan.ax_r)
      throw UsageError(fmt::format("CPU backend: output '{}' packs FP4 pairs along axis {}, which is not a tile axis "
                                   "({}, {})", o.name, pa, plan.ax_r, plan.ax_c));
  }
  const std::string key = fmt::format("{}|{}|{}", p.hash().hex(), fmt::join(unit_axis, ","), plan.str());
  plan.function_name = "mxcpu_" + hash128(key).hex().substr(0, 16);
  return plan;
}

ScratchLayout scratch_layout(const CpuPlan& plan) {
  ScratchLayout l;
  const int64_t tc = plan.tile_c;
  int64_t off = 0;
  l.colmax = off; off += tc * 4;
  l.mrow = off; off += tc * 4;
  l.frow = off; off += tc * 4;
  for (const ScaleInstance& i : plan.instances) {
    const int64_t nbc = (tc + i.bc - 1) / i.bc;
    l.blk_mult.push_back(off); off += nbc * 4;
    l.blk_flag.push_back(off); off += nbc * 4;
  }
  l.fixed = (off + 63) / 64 * 64;
  return l;
}

int64_t scratch_bytes(const CpuPlan& plan, int64_t cap) {
  const ScratchLayout l = scratch_layout(plan);
  return l.codes(int(plan.values.roots.size()), int(plan.values.quantizes.size()), cap, plan.tile_c) + 64;
}

}  // namespace mxjit::cpu::detail
