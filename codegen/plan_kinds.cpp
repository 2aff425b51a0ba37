// The defaults and derived choices of each kernel kind, one function per kind: the schedule's
// fields where set (already fitted to the kind), else the defaults measured best (the
// measurements behind them: docs/perf-log.md, "Notes moved from code comments"). Shared-memory
// budgets come from the Target's limits.
#include "codegen/plan_kinds.hpp"
#include "codegen/plan_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/scale_expr_cuda.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

// True when scale s has a scales output of FP32 scales.
bool f32_scales_output(const Pipeline& p, const ValueSet& v, int s) {
  for (size_t o = 0; o < p.outputs().size(); ++o)
    if (p.outputs()[o].kind == OutputKind::scales && v.output_index[o] == s && p.outputs()[o].dtype == DType::f32) return true;
  return false;
}

}  // namespace

bool columns_rowwise(const ValueSet& v, int ax_c) {
  for (const NodePtr& sn : v.scales)
    if (block_of(sn).axes[0] == ax_c) return true;
  return false;
}

namespace {
// A schedule's threads (0: the kernel's default) are whole warps, at most a CTA's 1024.
void check_warps(int threads, const char* kernel) {
  if (threads && (threads < 32 || threads > 1024 || threads % 32))
    throw UsageError(
        fmt::format("schedule: threads {} of the {} kernel must be a multiple of 32 in 32..1024", threads, kernel));
}
// A schedule's CTAs an SM (at least 1) fit the target's SM: at most its resident CTAs, and their
// threads at most its resident threads (the launch bounds promise that occupancy to ptxas).
void check_ctas(int ctas, int threads, const Target& target, const char* kernel) {
  if (ctas < 1 || ctas > target.max_ctas_per_sm() || int64_t(ctas) * threads > target.max_threads_per_sm())
    throw UsageError(
        fmt::format("schedule: ctas_per_sm {} of the {} kernel must be at most {}, and at most {} threads an "
                    "SM ({} threads a CTA on {})",
                    ctas, kernel, target.max_ctas_per_sm(), target.max_threads_per_sm(), threads, target.arch));
}
}  // namespace

TiledPlan plan_tiled(const Pipeline& p, const ValueSet& v, const Plan& plan, const Schedule& s, const Target& target) {
  (void)p;
  TiledPlan t;
  // The tile: whole scale blocks in both directions (every scale's, not only the quantizes').
  int64_t br = 1, bc = 1;
  for (const NodePtr& sn : v.scales) {
    const BlockSpec& b = block_of(sn);
    if (plan.ax_r >= 0) br = std::max(br, b.size_along(plan.ax_r));
    bc = std::max(bc, b.size_along(plan.ax_c));
  }
  // A tile holds whole blocks as FP32 values in at most 200 KiB of shared memory (checked later
  // with the padding): refuse longer blocks before the tile extents are narrowed to int.
  constexpr int64_t kTileValues = 200 * 1024 / 4;
  if (br > kTileValues || bc > kTileValues / br)
    throw UsageError(fmt::format("GPU generator: blocks of {}x{} elements (rows x columns of the tile) do not fit one "
                                 "tile of {} FP32 values in shared memory (200 KiB); the CPU backend or the reference "
                                 "runs them", br, bc, kTileValues));
  if (plan.ax_r < 0) {
    t.tile_rows = 1;
    t.tile_cols = int(std::max<int64_t>(s.tile_cols ? s.tile_cols : 2048, bc));
  } else {
    t.tile_rows = int(std::max<int64_t>(s.tile_rows ? s.tile_rows : 64, br));
    t.tile_cols = int(std::max<int64_t>(s.tile_cols ? s.tile_cols : 128, bc));
  }
  if (t.tile_rows % br || t.tile_cols % bc || t.tile_cols % 32)
    throw UsageError(fmt::format("schedule: tile {}x{} must be a multiple of the block {}x{} and of 32 columns", t.tile_rows,
                                 t.tile_cols, br, bc));
  t.hoist_loads = s.hoist_loads != 0;  // defaults: docs/perf-log.md#tiled-defaults
  t.rows_per_store = s.rows_per_thread ? s.rows_per_thread : 16;
  if (t.rows_per_store != 8 && t.rows_per_store != 16 && t.rows_per_store != 32)
    throw UsageError(fmt::format("schedule: rows_per_thread {} must be 8, 16 or 32", t.rows_per_store));
  // Rows padded so that 8-float column groups and consecutive rows fall in different banks
  // (stride = 16 mod 32 plus one float per 8): 16-byte chunk writes and column reads stay
  // (nearly) conflict-free.
  t.row_stride = t.tile_cols + t.tile_cols / 8;
  if (t.row_stride % 32 != 16) t.row_stride += (16 - t.row_stride % 32 + 32) % 32;
  t.value_tiles = int(v.roots.size());
  (void)target;
  return t;
}

void plan_tiled_ctas(Plan& plan, const Schedule& s, const Target& target) {
  check_warps(s.threads, "tiled");  // its block maxima reduce by warp shuffles
  plan.threads = s.threads ? s.threads : 256;
  plan.ctas_per_sm = s.ctas_per_sm ? s.ctas_per_sm : 4;
  check_ctas(plan.ctas_per_sm, plan.threads, target, "tiled");
}

int tiled_smem_bytes(const ValueSet& v, const Plan& plan, const TiledPlan& t) {
  int64_t smem = int64_t(t.value_tiles) * t.tile_rows * t.row_stride * 4;
  for (const NodePtr& sn : v.scales) {  // the emitter keeps three arrays per scale
    const BlockSpec& b = block_of(sn);
    const int64_t nb = (t.tile_rows / (plan.ax_r >= 0 ? b.size_along(plan.ax_r) : 1)) * (t.tile_cols / b.size_along(plan.ax_c));
    smem += nb * 12;  // multiplier, info word, stored FP32 scale
  }
  return int(std::min<int64_t>(smem, int64_t(1) << 30));
}

DirectPlan plan_direct(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target,
                       const StrideClass& sc) {
  DirectPlan d;
  // Tensorwise: the block is the whole tensor, its amax the pre-pass's; a chunk is its own block.
  d.tensorwise = tensorwise(p, v);
  int64_t bsize = 8;
  // 2-D blocks (direct2d_applies): some block spans rows; the tile is the largest extents.
  const int64_t brows = !d.tensorwise && plan.ax_r >= 0 ? tile2d(v, plan).rows : 1;
  const bool two_d = brows > 1;
  if (two_d) bsize = tile2d(v, plan).cols;
  else if (!d.tensorwise) {  // direct_applies: one block size along ax_c
    for (const NodePtr& n : v.quantizes) bsize = block_of(n).size_along(plan.ax_c);
    for (const NodePtr& n : v.scales) bsize = block_of(n).size_along(plan.ax_c);
  }
  d.block_cols = int(bsize);
  d.lanes_per_block = int(bsize / 8);
  // Plain casts (nearest-even, bare 2-byte inputs) and FP8 casts through the hardware cvt ("hw
  // FP8") take 4 chunks per thread where every tensor input has 16-byte loads (element loads keep
  // 8 floats per chunk, and 4 chunks of them spill at 32 registers), else 2; 8 CTAs per SM for hw
  // FP8 (<= 32 registers), 6 otherwise (<= 40). docs/perf-log.md#direct-defaults
  bool bare_rne = true;  // nearest-even casts of bare 2-byte inputs
  for (const NodePtr& q : v.quantizes) bare_rne = bare_rne && q->round == Round::nearest_even;
  for (const NodePtr& r : v.roots) bare_rne = bare_rne && r->op == Op::input;
  for (const InputDecl& in : p.inputs())
    if (in.kind == InputDecl::Kind::tensor) bare_rne = bare_rne && dtype_size(in.dtype) == 2;
  bool hw_fp8 = target.hw_fp8();
  for (const NodePtr& q : v.quantizes)
    hw_fp8 = hw_fp8 && (q->elem == e4m3 || q->elem == e5m2) && q->round == Round::nearest_even && !q->flush_subnormals;
  for (const NodePtr& r : v.roots) hw_fp8 = hw_fp8 && (r->op == Op::input || chunk_dequant(p, plan.ax_c, sc, r));
  bool vec = true;
  for (size_t i = 0; i < p.inputs().size(); ++i)
    if (p.inputs()[i].kind == InputDecl::Kind::tensor) vec = vec && sc.vector_along(i, plan.ax_c);
  d.chunks_per_thread = s.chunks_per_thread ? s.chunks_per_thread : ((hw_fp8 || bare_rne) && vec ? 4 : 2);
  // Elements divided by their factor (a generic scale's Apply::divide: an IEEE division per
  // element, a call ptxas gives registers) spill at 32 registers: <= 40, in CTAs of 128 threads
  // (12 a SM, the warps of 6 of 256), which measured 1.5% faster for vLLM's cast; the multiplying
  // casts keep 256 (neutral or slower at 128). docs/perf-log.md#direct-defaults
  bool divides = false;
  for (const NodePtr& sn : v.scales) divides = divides || sn->apply == Apply::divide;
  check_warps(s.threads, "direct");
  const bool small_ctas = divides && !s.threads;
  plan.threads = s.threads ? s.threads : small_ctas ? 128 : 256;
  plan.ctas_per_sm = s.ctas_per_sm ? s.ctas_per_sm : (hw_fp8 && !divides ? 8 : small_ctas ? 12 : 6);
  // Token groups: the scale bytes held across phase 2 for warp 0's search take 40 registers, 6 CTAs
  // of 256 threads (at 32 they spilled; docs/perf-log.md#grouped-rows-search).
  for (int o = 0; o < int(p.outputs().size()); ++o)
    if (grouped_one_per_row(p, v, plan, o) && !s.ctas_per_sm)
      plan.ctas_per_sm = std::min(plan.ctas_per_sm, 6 * 256 / plan.threads);
  plan.smem_bytes = 0;
  for (const Output& o : p.outputs())
    if (o.kind == OutputKind::scales && mxjit::detail::is_blocked(o.layout) && !o.layout.grouped() && p.rank() >= 2) {
      d.pad_rows = std::max(d.pad_rows, mxjit::detail::blocked_atom(o.layout).first);
      d.pad_block_cols = std::max(d.pad_block_cols, mxjit::detail::blocked_atom(o.layout).second);
    }
  // Token groups of a 2-D cast: the grid in whole 128-row blocks too, so that a thread's rows (below)
  // keep their padded rows in one atom line wherever a group holds all four
  // (docs/perf-log.md#grouped-rows-stores).
  for (int o = 0; o < int(p.outputs().size()); ++o)
    if (grouped_one_per_row(p, v, plan, o) && p.rank() == 2) d.pad_rows = std::max(d.pad_rows, 128);
  // Rows between a thread's chunks: 32 with 128-row blocked scales and 4 chunks, so that a
  // thread's rows fill the 4 row slots of one 16-byte line of a 128x4 atom.
  d.row_step = d.pad_rows == 128 && d.chunks_per_thread == 4 ? 32 : 1;
  d.wide_rows = !vec;
  const int G = d.lanes_per_block, U = d.chunks_per_thread;
  // A scale computed once per block row (its G lanes share U rows) where its amax comes from
  // loaded words and its codes are software-encoded: those casts are bound by the ALU pipe on
  // sm_90; FP8 through the hardware cvt is not, and there the registers cost more
  // (docs/perf-log.md#direct-scatter-scales).
  // A scale definition that flags no block (nan_if, zero_if never), stored only from its owner
  // lanes: one scale computation a lane instead of U, the multiplier fetched by one shuffle a
  // chunk; also where the lanes outnumber the rows (G / U lanes share a row).
  const auto amax_words = [&](int si) {
    const int k = amax_words_input(p, v, si);
    return k >= 0 && sc.vector_along(size_t(k), plan.ax_c);
  };
  const auto gathered = [&](int si, int lanes, int rows) {
    const NodePtr& sn = v.scales[size_t(si)];
    if (!generic_scale(*sn) || sn->args.at(kScaleNanIf)->op != Op::never || sn->args.at(kScaleZeroIf)->op != Op::never) return false;
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      const Output& out = p.outputs()[o];
      if (out.kind == OutputKind::scales && v.output_index[o] == si && (mxjit::detail::is_blocked(out.layout) || out.layout.grouped()))
        return false;
    }
    return amax_words(si) && lanes > 1 && (rows % lanes == 0 || lanes % rows == 0);
  };
  for (int si = 0; si < int(v.scales.size()); ++si) {
    const NodePtr& sn = v.scales[size_t(si)];
    const bool cvt = target.hw_fp8() && (sn->elem == e4m3 || sn->elem == e5m2);
    d.scatter_scales.push_back((amax_words(si) && G > 1 && mx_e8m0(*sn) && !cvt && U % G == 0) || gathered(si, G, U));
    // The gathered multipliers and the owners' stores spill at 32 registers: the warps of 6 CTAs
    // of 256 threads per SM (<= 40).
    if (gathered(si, G, U) && !s.ctas_per_sm) plan.ctas_per_sm = std::min(plan.ctas_per_sm, 6 * 256 / plan.threads);
  }
  for (const NodePtr& q : v.quantizes) {
    const int si = v.quantize_scale[size_t(&q - v.quantizes.data())];
    const int k = amax_words_input(p, v, si);
    const bool e8m0 = mx_e8m0(*q->args[1]);
    // E2M1 from the bf16 words by bf16x2 arithmetic (sm_90, no FP4 cvt): nearest-even, no flush.
    const bool w = target.sm() >= 90 && !target.hw_fp4_fp6() && q->elem == e2m1 && q->round == Round::nearest_even &&
                   !q->flush_subnormals && e8m0 && amax_words(si) && p.inputs()[size_t(k)].dtype == DType::bf16;
    d.e2m1_words.push_back(w);
    // NVFP4 without the FP4 cvt: 8 codes at once where the multiplier is finite.
    d.eight_at_once.push_back(!w && q->elem == e2m1 && q->round == Round::nearest_even && !target.hw_fp4_fp6() && !e8m0 &&
                              !generic_scale(*q->args[1]));  // NVFP4's multipliers only
  }
  for (const Output& o : p.outputs()) {
    BlockedStore b = BlockedStore::none;
    if (o.kind == OutputKind::scales && mxjit::detail::is_blocked(o.layout) && !o.layout.grouped()) {
      const bool words = dtype_size(o.dtype) == 1 && mxjit::detail::blocked_atom(o.layout).second == 4 && G <= 8 && d.pad_rows % U == 0;
      b = !words ? BlockedStore::bytes : (U == 4 && mxjit::detail::blocked_atom(o.layout).first == 128 && d.row_step == 32 ? BlockedStore::atom_lines : BlockedStore::words);
    }
    d.blocked.push_back(b);
  }
  if (two_d) {  // direct2d_applies: bare 16-bit words, linear scales; one CTA a block
    d.block_rows = int(brows);
    d.chunks_per_thread = s.chunks_per_thread ? s.chunks_per_thread : 8;
    const int rows_a_round = d.block_rows / d.chunks_per_thread;
    plan.threads = G * rows_a_round;
    if (d.block_rows % d.chunks_per_thread || plan.threads < 32 || plan.threads > kDirect2dMaxThreads ||
        (plan.threads & (plan.threads - 1)))
      throw UsageError(fmt::format("schedule: chunks_per_thread {} must divide the block's {} rows into rounds of {} lanes each, "
                                   "32..{} threads a power of two", d.chunks_per_thread, d.block_rows, G, kDirect2dMaxThreads));
    for (int o = 0; o < int(p.outputs().size()); ++o)
      if (codes_along_rows(p, plan, o) && d.chunks_per_thread != 8)
        throw UsageError(fmt::format("schedule: chunks_per_thread {} with codes output '{}' transposed must be 8 (8x8 byte transposes)",
                                     d.chunks_per_thread, p.outputs()[size_t(o)].name));
    if (s.threads && s.threads != plan.threads)
      throw UsageError(fmt::format("schedule: threads {} of the direct kernel with {}x{} blocks must be {} (one CTA a block, {} rows a "
                                   "thread)", s.threads, d.block_rows, d.block_cols, plan.threads, d.chunks_per_thread));
    // Eight 16-byte chunks a thread held across the block amax: 4 CTAs of 256 threads (<= 64
    // registers); column blocks add 8 multipliers and masks a thread: 3 (<= 80; 4 spill on
    // sm_100a: docs/perf-log.md#direct2d-column-scales). Codes transposed through the shared tile,
    // 128-row blocks without column blocks: 5, more blocks' loads in flight across the tile's
    // barriers (docs/perf-log.md#direct2d-transposed-ctas).
    bool columns = false, transposed = false;
    for (const NodePtr& n : v.scales) columns = columns || block2d_kind(block_of(n), plan) == Block2d::column;
    for (int o = 0; o < int(p.outputs().size()); ++o) transposed = transposed || codes_along_rows(p, plan, o);
    const int sm_threads = columns ? 768 : transposed && plan.threads == 256 ? 1280 : 1024;
    plan.ctas_per_sm = s.ctas_per_sm ? s.ctas_per_sm : std::max(1, sm_threads / plan.threads);
    // Row blocks of the tile (1 x block_cols) as 1-D blocks: one scale a lane where gathered.
    for (int si = 0; si < int(v.scales.size()); ++si)
      d.scatter_scales[size_t(si)] = block2d_kind(block_of(v.scales[size_t(si)]), plan) == Block2d::row &&
                                     gathered(si, d.lanes_per_block, d.chunks_per_thread);
    d.e2m1_words.assign(v.quantizes.size(), false);
    d.eight_at_once.assign(v.quantizes.size(), false);
    d.row_step = 1;
  }
  // An asked count fits the SM; the defaults are register caps that smaller SMs run fewer of.
  if (s.ctas_per_sm) check_ctas(plan.ctas_per_sm, plan.threads, target, "direct");
  return d;
}

ColumnsPlan plan_columns(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target) {
  ColumnsPlan c;
  c.rowwise_scale = columns_rowwise(v, plan.ax_c);
  // Rows per thread: 16, or 8 (half the registers) with a row-wise scale too
  // (docs/perf-log.md#columns-rows-per-thread).
  c.rows_per_thread = s.rows_per_thread ? s.rows_per_thread : c.rowwise_scale ? 8 : 16;
  if (c.rows_per_thread != 8 && c.rows_per_thread != 16)
    throw UsageError(fmt::format("schedule: rows_per_thread {} of the columns kernel must be 8 or 16", c.rows_per_thread));
  for (const NodePtr& sn : v.scales)
    if (block_of(sn).axes[0] == plan.ax_r && block_of(sn).sizes[0] < c.rows_per_thread) c.rows_per_thread = int(block_of(sn).sizes[0]);
  c.tile_rows = 128;
  plan.threads = 256;  // 512 threads measured slower (docs/perf-log.md#columns-threads)
  c.stages = s.stages ? s.stages : 1;  // pipelined: a schedule, not the default (docs/perf-log.md#columns-pipelined)
  if (c.stages < 1 || c.stages > 4) throw UsageError(fmt::format("schedule: stages {} must be 1..4", c.stages));
  if (c.stages > 1 && target.sm() < 90)
    throw UsageError(fmt::format("schedule: stages {} needs sm_90 or newer (bulk copies); the target is {}", c.stages, target.arch));
  // Staged codes: dim0+dim1 at 8 rows a thread and 256 threads (128 x 128 tiles), 8-bit codes.
  bool packed = false;
  for (size_t o = 0; o < p.outputs().size(); ++o)
    if (p.outputs()[o].kind == OutputKind::elems && v.quantizes[size_t(v.output_index[o])]->elem.packed()) packed = true;
  c.codes_staged = c.rows_per_thread == 8 && plan.threads == 256 && !packed && c.rowwise_scale;
  c.lanes_along_rows = columns_lanes_r(c.rows_per_thread, c.rowwise_scale, c.stages == 1 && c.codes_staged);
  c.lines_padded = c.codes_staged && c.lanes_along_rows == 4;
  // Warps stacked along ax_r until they cover 128 rows, the rest side by side along ax_c.
  const int warps_r = c.tile_rows / (c.lanes_along_rows * c.rows_per_thread);
  c.tile_cols = (plan.threads / 32 / warps_r) * (32 / c.lanes_along_rows) * 8;
  bool scales_blocked = true;
  for (const Output& out : p.outputs())
    if (out.kind == OutputKind::scales && (!mxjit::detail::is_blocked(out.layout) || out.layout.grouped())) scales_blocked = false;
  // Bulk copy-out of the staged lines: sm_90+ with blocked scales (slower with linear ones).
  c.bulk_copy_out = c.stages == 1 && c.lines_padded && target.sm() >= 90 && scales_blocked;
  for (int si = 0; si < int(v.scales.size()); ++si) {
    const BlockSpec& b = block_of(v.scales[size_t(si)]);
    const bool along_r = b.axes[0] == plan.ax_r;
    const int items = along_r ? 8 : c.rows_per_thread, lanes = along_r ? int(b.sizes[0] / c.rows_per_thread) : 4;
    c.scatter_scales.push_back(amax_words_input(p, v, si) >= 0 && lanes >= 2 && items % lanes == 0 &&
                               mx_e8m0(*v.scales[size_t(si)]) && !f32_scales_output(p, v, si));
  }
  plan.smem_bytes = c.stages > 1 ? c.stages * columns_slot_bytes(c) : 0;
  // Static shared memory besides the ring: the staged scales (double-buffered when pipelined)
  // and, for dim0+dim1 with 8-bit codes, the two 16 KiB staged code tiles.
  const int static_smem = 4096 + (c.codes_staged ? 32768 : 0) + (c.lines_padded ? 2 * kColumnsLinePad : 0);
  const int per_cta = plan.smem_bytes + static_smem + target.smem_reserved_per_cta();
  // 16 rows: 2 CTAs per SM (<= 128 registers); 8 rows with a row-wise scale: 4 (64 registers).
  // Pipelined: as many as the rings fit (at most 4).
  plan.ctas_per_sm = s.ctas_per_sm                             ? s.ctas_per_sm
                     : c.stages > 1                            ? std::clamp(target.smem_per_sm() / per_cta, 1, 4)
                     : c.rowwise_scale && c.rows_per_thread == 8 ? 4
                                                               : 2;
  // The default one-tile form's CTAs per SM is a register cap (__launch_bounds__), which smaller
  // SMs (sm_89: 100 KiB) simply run fewer of; an asked count, or a ring, must fit.
  if ((s.ctas_per_sm || c.stages > 1) && int64_t(plan.ctas_per_sm) * per_cta > target.smem_per_sm())
    throw UsageError(fmt::format("schedule: {} CTAs per SM with a {}-byte ring ({} stages) and {} bytes of other shared memory exceed "
                                 "the SM's {} KiB ({})",
                                 plan.ctas_per_sm, plan.smem_bytes, c.stages, static_smem + target.smem_reserved_per_cta(),
                                 target.smem_per_sm() / 1024, target.arch));
  if (s.ctas_per_sm) check_ctas(plan.ctas_per_sm, plan.threads, target, "columns");
  return c;
}

namespace {
/// A cast of the input itself, rounded to nearest: no prologue or stochastic rounding, whose
/// registers spill where more CTAs share an SM.
bool light_cast(const ValueSet& v) {
  return std::all_of(v.roots.begin(), v.roots.end(), [](const NodePtr& r) { return r->op == Op::input; }) &&
         std::none_of(v.quantizes.begin(), v.quantizes.end(),
                      [](const NodePtr& q) { return q->round == Round::stochastic; });
}
}  // namespace

JaggedPlan plan_jagged(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target, bool vector,
                       bool lanes) {
  JaggedPlan j;
  j.vector = vector;
  plan.smem_bytes = 0;
  if (!vector) {
    plan.threads = 256;
    j.cols_per_cta = 256;
    j.lanes = lanes;
    if (lanes) j.cols_per_cta = plan.threads / 32;
    // Element loads move 64 bytes a warp: rows in flight keep enough of them outstanding
    // (docs/perf-log.md, eleventh session).
    j.rows_in_flight = s.rows_in_flight ? s.rows_in_flight : lanes ? 4 : 16;
    if (j.rows_in_flight < 1 || j.rows_in_flight > 16)
      throw UsageError(fmt::format("schedule: rows_in_flight {} of the jagged kernel must be 1..16", j.rows_in_flight));
    return j;
  }
  // Shared memory caps CTAs per SM at ctas_per_sm and, beyond the reduction's arrays, caches the
  // first cached_rows rows of the CTA's group for the second pass; the rest are re-read (from L2
  // while few CTAs run).
  // Column-major codes: 32 columns per CTA, so that a warp's runs of one column meet in 128
  // bytes (docs/perf-log.md, jagged column-major codes).
  const bool along_rows = jagged_codes_along_rows(p, plan);
  j.cols_per_cta = s.tile_cols ? s.tile_cols : along_rows ? 32 : 64;
  plan.threads = s.threads ? s.threads : 256;
  j.cluster = s.cluster ? s.cluster : 1;
  plan.ctas_per_sm = s.ctas_per_sm ? s.ctas_per_sm : (j.cluster > 1 ? 4 : 2);
  // Runs of 8 rows (8-byte stores; 16 measured slower), or 4 within 64 registers (more spill).
  j.run_rows = !along_rows ? 0 : s.rows_per_thread ? s.rows_per_thread : plan.ctas_per_sm > 3 ? 4 : 8;
  if (!along_rows && s.rows_per_thread)
    throw UsageError(fmt::format("schedule: rows_per_thread {} applies to the jagged kernel's column-major codes only", s.rows_per_thread));
  if (along_rows && j.run_rows != 4 && j.run_rows != 8 && j.run_rows != 16)
    throw UsageError(fmt::format(
        "schedule: rows_per_thread {} of the jagged kernel's column-major codes must be 4, 8 or 16", j.run_rows));
  int esize = 2;
  bool f16 = false;
  for (const InputDecl& in : p.inputs())
    if (in.kind == InputDecl::Kind::tensor) esize = int(dtype_size(in.dtype)), f16 = in.dtype == DType::f16;
  // Rows in flight set the registers of pass 2: 8 fit 2 CTAs per SM; at 4 CTAs (64 registers)
  // 4 (2 of f32), and with a cluster 1 of f32 and 3 of f16 (ptxas spills at more;
  // docs/perf-log.md#jagged-rows-in-flight). A cluster is a schedule, not the default
  // (docs/perf-log.md#jagged-cluster).
  j.rows_in_flight = s.rows_in_flight ? s.rows_in_flight
                     : plan.ctas_per_sm <= 2           ? 8
                     : esize == 4 && j.cluster > 1     ? 1
                     : f16 && j.cluster > 1            ? 3
                                                       : 8 / esize;
  if (j.cluster != 1 && j.cluster != 2 && j.cluster != 4 && j.cluster != 8 && j.cluster != 16)
    throw UsageError(fmt::format("schedule: cluster {} of the jagged kernel must be 1, 2, 4, 8 or 16", j.cluster));
  if (j.cluster > 1 && target.max_cluster() == 1)
    throw UsageError(fmt::format("schedule: cluster {} needs thread-block clusters (sm_90 or later; target {})", j.cluster, target.arch));
  if (j.cluster > target.max_cluster())
    throw UsageError(fmt::format("schedule: cluster {} exceeds the {} CTAs a thread-block cluster holds on {}",
                                 j.cluster, target.max_cluster(), target.arch));
  if (j.cols_per_cta != 32 && j.cols_per_cta != 64 && j.cols_per_cta != 128 && j.cols_per_cta != 256)
    throw UsageError(fmt::format("schedule: tile_cols {} of the jagged kernel must be 32, 64, 128 or 256", j.cols_per_cta));
  if (plan.threads % 32 || plan.threads < j.cols_per_cta / 8 || plan.threads > 1024 || j.rows_in_flight < 1 || j.rows_in_flight > 16 ||
      plan.ctas_per_sm < 1 || plan.ctas_per_sm > 8)
    throw UsageError(fmt::format("schedule: jagged kernel threads {} (32..1024, a multiple of 32), rows_in_flight {} (1..16), "
                                 "ctas_per_sm {} (1..8)", plan.threads, j.rows_in_flight, plan.ctas_per_sm));
  check_ctas(plan.ctas_per_sm, plan.threads, target, "jagged");
  // Cached rows read back per loop step: 4, or 2 within 64 registers (where 4 spill f16).
  j.cached_rows_per_step = plan.ctas_per_sm <= 2 ? 4 : 2;
  // The reduction's arrays: a row of column maxima per warp, multipliers, flags (and the
  // cluster's partial maxima, one row per CTA, and their transaction barrier).
  const int need = (plan.threads / 32 * j.cols_per_cta + (2 + (j.cluster > 1 ? j.cluster : 0)) * j.cols_per_cta) * 4 +
                   (j.cluster > 1 ? 16 : 0);
  // At most ctas_per_sm CTAs of (smem + the reserved bytes) fit the SM.
  const int budget = std::min(target.smem_per_sm() / plan.ctas_per_sm - target.smem_reserved_per_cta(), target.smem_per_cta()) / 16 * 16;
  j.cached_rows = std::max(0, (budget - need) / (j.cols_per_cta * esize));
  plan.smem_bytes = need + j.cached_rows * j.cols_per_cta * esize;
  (void)v;
  return j;
}

namespace {
/// Where the jagged kernel's module holds more than one kernel: a 2-byte input on sm_90+ (where
/// they were measured), the vector kernel, no cluster asked for.
bool several_kernels(const Pipeline& p, const Schedule& js, const Target& target, bool vector) {
  const int lead = lead_tensor_input(p);
  return vector && !js.cluster && target.max_cluster() >= 2 && lead >= 0 &&
         dtype_size(p.inputs()[size_t(lead)].dtype) == 2;
}
/// Column-major codes of a plain cast in the default CTA shape (no CTA count, tile or thread
/// count asked for).
bool column_major_default(const Pipeline& p, const ValueSet& v, const Plan& plan, const Schedule& js) {
  return jagged_codes_along_rows(p, plan) && !js.ctas_per_sm && !js.tile_cols && !js.threads && light_cast(v);
}
/// The kernel that `s` plans, as one of the module's kernels beside the plan's own.
SideKernel plan_beside(const Pipeline& p, const ValueSet& v, const Plan& plan, const Schedule& s, const Target& target,
                       bool vector, bool lanes) {
  Plan pp = plan;
  const JaggedPlan pj = plan_jagged(p, v, pp, s, target, vector, lanes);
  return SideKernel{pp.ctas_per_sm,    pp.smem_bytes, pj.cached_rows, pj.cached_rows_per_step,
                    pj.rows_in_flight, pp.threads,    pj.run_rows};
}
}  // namespace

JaggedKernels plan_jagged_kernels(const Pipeline& p, const ValueSet& v, const Plan& plan, const Schedule& js,
                                  const Target& target, bool vector, bool lanes) {
  // By default a plain kernel for small groups and another for large ones, chosen at launch
  // (docs/perf-log.md#jagged-two-kernels).
  JaggedKernels k{js, std::nullopt, std::nullopt};
  if (!several_kernels(p, js, target, vector)) return k;
  Schedule ps = js;
  ps.cluster = 1;
  if (jagged_codes_along_rows(p, plan)) {
    // Column-major codes of a plain cast in the default CTA shape: 3 CTAs an SM (85 registers, a
    // 1,180-row cache of 32 columns), and 2 CTAs (a 1,788-row cache) for groups past it
    // (docs/perf-log.md#jagged-column-major-two-kernels).
    if (!column_major_default(p, v, plan, js)) return k;
    ps.ctas_per_sm = 3;
    k.own.ctas_per_sm = 2;
    if (!js.rows_per_thread) {
      // And for small groups 128 threads (32 row lanes: pass 2 takes 128 rows a step in runs of
      // 4) and 6 CTAs an SM, the same 24 warps as 3 CTAs of 256 threads, each CTA a quarter of
      // the cache (580 rows); groups of 256 rows left half of the 256-thread CTA's row lanes idle
      // (docs/perf-log.md#jagged-column-major-small-groups).
      Schedule ss = js;
      ss.cluster = 1;
      ss.threads = 128;
      ss.ctas_per_sm = 6;
      ss.rows_per_thread = 4;
      k.small = plan_beside(p, v, plan, ss, target, vector, lanes);
    }
  } else {
    // Row-major codes: the plain kernel 4 CTAs an SM by default (64 registers, 428 cached rows of
    // 64 bf16 columns), 2 under a prologue or stochastic rounding (which spill at 64 registers);
    // a 2-CTA cluster a group for large groups.
    if (!ps.ctas_per_sm) ps.ctas_per_sm = light_cast(v) ? 4 : 2;
    k.own.cluster = 2;
    if (!k.own.ctas_per_sm) k.own.ctas_per_sm = 2;
  }
  k.plain = plan_beside(p, v, plan, ps, target, vector, lanes);
  return k;
}

namespace {
/// The across form's default schedule on sm_90+ (0: plan_jagged's own default; measured in
/// docs/perf-log.md, fourteenth session):
///
///   codes along      input    clusters of 16 allowed           clusters of at most 8
///   the lines        any      16 CTAs, 2 per SM                8 CTAs, 1 per SM
///   the whole axis   FP32     8 CTAs, 2 per SM (64 registers: FP32 runs spill at 3)
///   the whole axis   2-byte   16 CTAs, 3 per SM, 64 lines,     8 CTAs
///                             runs of 8 (128-byte row segments)
struct AcrossDefault {
  int cluster, ctas_per_sm = 0, tile_cols = 0, rows_per_thread = 0;
};
AcrossDefault across_default(bool codes_along_axis, bool f32, bool c16) {
  if (!codes_along_axis) return c16 ? AcrossDefault{16, 2} : AcrossDefault{8, 1};
  if (f32) return {8, 2};
  return c16 ? AcrossDefault{16, 3, 64, 8} : AcrossDefault{8};
}
}  // namespace

RowsPlan plan_rows(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target,
                   const StrideClass& sc) {
  RowsPlan r;
  r.across_axis = rows_across_axis(p, plan, sc);
  // Across lines with 16-byte loads: the jagged vector kernel over one group (the whole axis),
  // its axes relabelled (rows: the whole axis; columns: the across axis). On sm_90+ a cluster
  // splits each tile's whole axis, so that its parts fit the row caches (across_default).
  if (rows_columns_applies(p, v, plan, sc)) {
    Plan cp = rows_columns_axes(plan, r.across_axis);
    {
      Schedule js = s;
      js.chunks_per_thread = 0;
      if (!js.cluster && !js.ctas_per_sm && target.sm() >= 90) {
        const bool f32 = p.inputs()[size_t(first_tensor_input(p))].dtype == DType::f32;
        const AcrossDefault d = across_default(jagged_codes_along_rows(p, cp), f32, target.max_cluster() >= 16);
        js.cluster = d.cluster;
        js.ctas_per_sm = d.ctas_per_sm;
        if (!js.tile_cols) js.tile_cols = d.tile_cols;  // a schedule's own fields stand
        if (!js.rows_per_thread) js.rows_per_thread = d.rows_per_thread;
      }
      r.columns = plan_jagged(p, v, cp, js, target, true);
      // The default cluster is a maximum, its size chosen at launch from the whole axis's extent;
      // so is a cluster past the portable 8, which launches opt into.
      r.columns->cluster_at_launch = (!s.cluster || s.cluster > 8) && r.columns->cluster > 1;
      plan.threads = cp.threads;
      plan.ctas_per_sm = cp.ctas_per_sm;
      plan.smem_bytes = cp.smem_bytes;
      for (const Output& o : p.outputs())
        r.strided_codes.push_back(o.kind == OutputKind::elems && o.layout.order(p.rank()).back() != plan.ax_c);
      return r;
    }
  }
  // Along a line: 256 threads, 4 CTAs per SM, each thread holding 8 chunks' raw words (a line of
  // 16384 is read once; docs/perf-log.md, the rows kernel). Across lines:
  // the CTA's warps split the whole axis, so the grid is the lines / 32 and CTAs are large.
  const bool across = r.across_axis >= 0;
  plan.threads = s.threads ? s.threads : across ? 1024 : 256;
  plan.ctas_per_sm = s.ctas_per_sm ? s.ctas_per_sm : across ? 1 : 4;
  plan.smem_bytes = 0;
  // 8 chunks of a 2-byte input read by vectors are 32 registers; 4 of anything else.
  bool narrow = true;
  for (size_t k = 0; k < p.inputs().size(); ++k)
    if (p.inputs()[k].kind == InputDecl::Kind::tensor)
      narrow = narrow && dtype_size(p.inputs()[k].dtype) == 2 && sc.vector_along(k, plan.ax_c);
  r.chunks_per_thread = s.chunks_per_thread ? s.chunks_per_thread : across ? 2 : narrow ? 8 : 4;
  if (plan.threads < 32 || plan.threads > 1024 || (plan.threads & (plan.threads - 1)) != 0)
    throw UsageError(fmt::format("schedule: rows kernel threads {} must be a power of two from 32 to 1024", plan.threads));
  if (r.chunks_per_thread < 1 || r.chunks_per_thread > 8)
    throw UsageError(fmt::format("schedule: rows kernel chunks_per_thread {} must be in 1..8", r.chunks_per_thread));
  check_ctas(plan.ctas_per_sm, plan.threads, target, "rows");
  for (const Output& o : p.outputs())
    r.strided_codes.push_back(o.kind == OutputKind::elems && o.layout.order(p.rank()).back() != plan.ax_c);
  return r;
}

}  // namespace mxjit::detail
