#include "codegen/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <sstream>

#include "codegen/values.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {

std::string StrideClass::str() const {
  std::string s;
  for (size_t i = 0; i < unit_axis.size(); ++i)
    s += fmt::format("{}{}{}", i ? "," : "", unit_axis[i], i < aligned.size() && aligned[i] ? "a" : "");
  return "sc(" + s + ")";
}

std::string Tuning::str() const {
  return fmt::format("tune({},{},{},{},{},{},{},{},{},{})", tile_r, tile_c, threads, min_blocks, hoist, col_w, unroll,
                     int(force_tiled), cluster, stages);
}

Tuning Tuning::parse(const std::string& text) {
  Tuning t;
  int f = 0, n = 0;
  int n8 = 0, n9 = 0;
  const int got = std::sscanf(text.c_str(), "tune(%d,%d,%d,%d,%d,%d,%d,%d%n,%d%n,%d)%n", &t.tile_r, &t.tile_c, &t.threads,
                              &t.min_blocks, &t.hoist, &t.col_w, &t.unroll, &f, &n8, &t.cluster, &n9, &t.stages, &n);
  // Older forms (stored before the cluster and stages fields existed) end with ')' right after
  // force_tiled or cluster.
  auto closes = [&](int at) { return at > 0 && text.compare(size_t(at), std::string::npos, ")") == 0; };
  const bool older = (got == 8 && closes(n8)) || (got == 9 && closes(n9));
  if (!(got == 10 && size_t(n) == text.size()) && !older)
    throw UsageError(fmt::format("tuning '{}': expected tune(tile_r,tile_c,threads,min_blocks,hoist,col_w,unroll,"
                                 "force_tiled,cluster,stages)", text));
  t.force_tiled = f != 0;
  return t;
}

namespace {
const char* kind_name(Plan::Kind k) {
  switch (k) {
    case Plan::Kind::direct: return "direct";
    case Plan::Kind::grouped: return "grouped";
    case Plan::Kind::columns: return "columns";
    default: return "tiled";
  }
}
}  // namespace

std::string Plan::str() const {
  return fmt::format("plan kind={} block_c={} group={} unroll={} min_blocks={} hoist={} col_w={} rank={} ax_r={} ax_c={} tile={}x{} row_stride={} threads={} roots={} smem={} cluster={} stages={} pad={}x{} batch=[{}] "
                     "zero=[{}] name={}",
                     kind_name(kind), block_c, group, unroll, min_blocks, int(hoist), col_w, rank, ax_r, ax_c, tile_r, tile_c, row_stride, threads, roots, smem_bytes,
                     cluster, stages, pad_r, pad_c, fmt::join(batch_axes, ","), fmt::join(zero_outputs, ","), kernel_name);
}

Plan Plan::parse(const std::string& text) {
  Plan p;
  std::istringstream in(text);
  std::string word;
  auto ints = [](const std::string& v) {
    std::vector<int> r;
    std::string body = v.substr(1, v.size() - 2), item;
    std::istringstream s(body);
    while (std::getline(s, item, ',')) r.push_back(std::stoi(item));
    return r;
  };
  try {
    while (in >> word) {
      size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      std::string k = word.substr(0, eq), v = word.substr(eq + 1);
      if (k == "kind") p.kind = v == "direct" ? Kind::direct : v == "grouped" ? Kind::grouped : v == "columns" ? Kind::columns : Kind::tiled;
      else if (k == "block_c") p.block_c = std::stoi(v);
      else if (k == "group") p.group = std::stoi(v);
      else if (k == "unroll") p.unroll = std::stoi(v);
      else if (k == "min_blocks") p.min_blocks = std::stoi(v);
      else if (k == "hoist") p.hoist = std::stoi(v) != 0;
      else if (k == "col_w") p.col_w = std::stoi(v);
      else if (k == "rank") p.rank = std::stoi(v);
      else if (k == "ax_r") p.ax_r = std::stoi(v);
      else if (k == "ax_c") p.ax_c = std::stoi(v);
      else if (k == "tile") { p.tile_r = std::stoi(v.substr(0, v.find('x'))); p.tile_c = std::stoi(v.substr(v.find('x') + 1)); }
      else if (k == "row_stride") p.row_stride = std::stoi(v);
      else if (k == "threads") p.threads = std::stoi(v);
      else if (k == "roots") p.roots = std::stoi(v);
      else if (k == "smem") p.smem_bytes = std::stoi(v);
      else if (k == "cluster") p.cluster = std::stoi(v);
      else if (k == "stages") p.stages = std::stoi(v);
      else if (k == "pad") { p.pad_r = std::stoi(v.substr(0, v.find('x'))); p.pad_c = std::stoi(v.substr(v.find('x') + 1)); }
      else if (k == "batch") p.batch_axes = ints(v);
      else if (k == "zero") p.zero_outputs = ints(v);
      else if (k == "name") p.kernel_name = v;
    }
  } catch (const std::exception&) {
    throw Error("mxjit: unreadable launch metadata: " + text);
  }
  return p;
}

namespace {

// The columns kernel (emit_columns.cpp) applies: one 2-byte tensor input read with 16-byte loads
// along ax_c, 1-D E8M0/FP32 blocks of 16..128 along ax_r (at least one) or of 32 along ax_c,
// only codes and scales as outputs, codes stored along their block axis.
bool columns_apply(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc) {
  if (plan.ax_r < 0) return false;
  int tensors = 0;
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& in = p.inputs()[k];
    if (in.kind == InputDecl::vector) continue;
    if (in.kind != InputDecl::tensor || (in.dtype != DType::bf16 && in.dtype != DType::f16)) return false;
    if (!sc.vector_along(k, plan.ax_c)) return false;
    ++tensors;
  }
  if (tensors != 1) return false;
  bool along_r = false;
  for (const NodePtr& s : v.scales) {
    const BlockSpec& b = block_of(s);
    if (s->scale_format == ScaleFormat::e4m3 || b.axes.size() != 1 || b.jagged()) return false;
    if (b.axes[0] == plan.ax_r) {
      if (b.sizes[0] != 16 && b.sizes[0] != 32 && b.sizes[0] != 64 && b.sizes[0] != 128) return false;
      along_r = true;
    } else if (b.axes[0] != plan.ax_c || b.sizes[0] != 32) {
      return false;
    }
  }
  for (const Output& o : p.outputs()) {
    if (o.kind == OutputKind::scales) {
      if (o.layout.is_grouped()) return false;
    } else if (o.kind == OutputKind::elems) {
      if (o.layout.order(p.rank()).back() != block_of(o.node).axes[0]) return false;
    } else {
      return false;
    }
  }
  return along_r;
}

// The grouped vector kernel (emit_groups.cpp) applies: one bf16/f16/f32 tensor input read with
// 16-byte loads along ax_c, a root computed from registers only, and codes stored along ax_c
// (FP4 codes, packed along the group axis, never are).
bool grouped_vector_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc) {
  int tensors = 0;
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& in = p.inputs()[k];
    if (in.kind == InputDecl::offsets) continue;
    if (in.kind != InputDecl::tensor || (in.dtype != DType::bf16 && in.dtype != DType::f16 && in.dtype != DType::f32))
      return false;
    if (!sc.vector_along(k, plan.ax_c)) return false;
    ++tensors;
  }
  if (tensors != 1 || v.roots.size() != 1 || !register_leaves(v.roots[0])) return false;
  for (const Output& o : p.outputs())
    if (o.kind == OutputKind::elems && o.layout.order(p.rank()).back() != plan.ax_c) return false;
  return true;
}

int first_tensor_input(const Pipeline& p) {
  for (size_t i = 0; i < p.inputs().size(); ++i)
    if (p.inputs()[i].kind == InputDecl::tensor || p.inputs()[i].kind == InputDecl::codes) return int(i);
  return -1;
}

}  // namespace

bool chunk_dequant(const Pipeline& p, const Plan& plan, const StrideClass& sc, const NodePtr& n) {
  if (n->op != Op::dequant || n->block.axes.size() != 1 || n->block.axes[0] != plan.ax_c || n->block.sizes[0] % 8 != 0)
    return false;
  return sc.vector_along(size_t(p.input_index(n->args[0]->name)), plan.ax_c);
}

bool columns_along_c(const ValueSet& v, const Plan& plan) {
  for (const NodePtr& sn : v.scales)
    if (block_of(sn).axes[0] == plan.ax_c) return true;
  return false;
}

bool columns_stage_codes(const Pipeline& p, const ValueSet& v, const Plan& plan) {
  // 8 rows x 8 columns per thread, 256 threads: 128 x 128 tiles at 4 or 8 lanes along the rows.
  if (plan.kind != Plan::Kind::columns || plan.col_w != 8 || plan.threads != 256) return false;
  for (size_t o = 0; o < p.outputs().size(); ++o)
    if (p.outputs()[o].kind == OutputKind::elems && v.quantizes[size_t(v.output_index[o])]->elem.packed()) return false;
  return columns_along_c(v, plan);
}

int columns_plan_lanes_r(const Pipeline& p, const ValueSet& v, const Plan& plan) {
  return columns_lanes_r(plan.col_w, columns_along_c(v, plan), plan.stages == 1 && columns_stage_codes(p, v, plan));
}

bool columns_lines_padded(const Pipeline& p, const ValueSet& v, const Plan& plan) {
  return columns_stage_codes(p, v, plan) && columns_plan_lanes_r(p, v, plan) == 4;
}

Plan make_plan(const Pipeline& p, const Target& target, const StrideClass& sc, const Tuning& tuning) {
  Plan plan;
  plan.rank = p.rank();
  const int rank = p.rank();
  ValueSet values = collect_values(p);
  for (const NodePtr& sn : values.scales) {
    if (!block_of(sn).jagged()) continue;
    // Jagged groups (MoE token groups): one cast, rank 2, elements and/or scales only.
    if (rank != 2 || values.scales.size() != 1 || values.quantizes.size() > 1 || sn->scale_format == ScaleFormat::e4m3)
      throw UsageError("GPU generator: jagged groups run on the GPU for one rank-2 E8M0 or FP32 cast; this pipeline "
                       "runs on the CPU reference");
    for (const Output& o : p.outputs())
      if (o.kind != OutputKind::elems && o.kind != OutputKind::scales)
        throw UsageError(fmt::format("GPU generator: output '{}' beside a jagged cast runs on the CPU reference only",
                                     o.name));
    plan.kind = Plan::Kind::grouped;
    plan.ax_r = block_of(sn).axes[0];
    plan.ax_c = 1 - plan.ax_r;
    plan.tile_r = 1;
    plan.roots = 1;
    plan.smem_bytes = 0;
    if (grouped_vector_applies(p, values, plan, sc)) {
      // col_w 8: the vector kernel (emit_groups.cpp), 8 columns per thread. Shared memory caps
      // CTAs per SM at min_blocks and, beyond the reduction's arrays, caches the first tile_r rows
      // of the CTA's group for the second pass; the rest are re-read (from L2 while few CTAs run).
      plan.col_w = 8;
      plan.tile_c = tuning.tile_c ? tuning.tile_c : 64;
      plan.threads = tuning.threads ? tuning.threads : 256;

      // cluster > 1 (sm_90+, a tuning): that many CTAs split each group's rows and combine their
      // column maxima through distributed shared memory. Not the default: 4 CTAs per group (4 per
      // SM, 4 rows in flight) measured 296 us against 271 for one at 16384^2, G = 16 (H200).
      plan.cluster = tuning.cluster ? tuning.cluster : 1;
      plan.min_blocks = tuning.min_blocks ? tuning.min_blocks : (plan.cluster > 1 ? 4 : 2);
      int esize = 2;
      bool f16 = false;
      for (const InputDecl& in : p.inputs())
        if (in.kind == InputDecl::tensor) esize = int(dtype_size(in.dtype)), f16 = in.dtype == DType::f16;
      // unroll: rows per thread in flight through registers, in pass 1 for the rows past the row
      // cache (the cached ones are copied with cp.async, no registers held) and in pass 2 for all.
      // Pass 2 sets the registers: 8 rows fit 2 CTAs per SM (98 registers bf16, 124 f32); 4 CTAs
      // leave 64 registers, where 8 rows spill and 4 fit (2 of f32: 16 bytes a thread per row's 8
      // columns more), and 1 of f32 with a cluster (ptxas 13.0 spills 8 bytes at 2 on sm_90a).
      // With a cluster, f16 takes 3 (its widening holds more registers: ptxas 13.0 spills 8 bytes
      // at 4 on sm_90a, and 60 at 2).
      plan.unroll = tuning.unroll ? tuning.unroll
                    : plan.min_blocks <= 2                 ? 8
                    : esize == 4 && plan.cluster > 1       ? 1
                    : f16 && plan.cluster > 1              ? 3
                                                           : 8 / esize;
      if (plan.cluster != 1 && plan.cluster != 2 && plan.cluster != 4 && plan.cluster != 8)
        throw UsageError(fmt::format("tuning: cluster {} of the grouped kernel must be 1, 2, 4 or 8", plan.cluster));
      if (plan.cluster > 1 && target.sm() < 90)
        throw UsageError(fmt::format("tuning: cluster {} needs thread-block clusters (sm_90 or later; target {})",
                                     plan.cluster, target.arch));
      if (plan.tile_c != 32 && plan.tile_c != 64 && plan.tile_c != 128 && plan.tile_c != 256)
        throw UsageError(fmt::format("tuning: tile_c {} of the grouped kernel must be 32, 64, 128 or 256", plan.tile_c));
      if (plan.threads % 32 || plan.threads < plan.tile_c / 8 || plan.threads > 1024 || plan.unroll < 1 || plan.unroll > 16 ||
          plan.min_blocks < 1 || plan.min_blocks > 8)
        throw UsageError(fmt::format("tuning: grouped kernel threads {} (32..1024, a multiple of 32), unroll {} (1..16), "
                                     "min_blocks {} (1..8)", plan.threads, plan.unroll, plan.min_blocks));
      // The reduction's arrays: a row of column maxima per warp, multipliers, flags (and the
      // cluster's partial maxima).
      const int need = (plan.threads / 32 * plan.tile_c + (plan.cluster > 1 ? 3 : 2) * plan.tile_c) * 4;
      // At most min_blocks CTAs of (smem + 1 KiB reserved) fit the SM's 228 KiB.
      const int budget = std::min(233472 / plan.min_blocks - 1024, 227 * 1024) / 16 * 16;
      plan.tile_r = std::max(0, (budget - need) / (plan.tile_c * esize));
      plan.smem_bytes = need + plan.tile_r * plan.tile_c * esize;
    } else {
      plan.col_w = 1;
      plan.threads = 256;
      plan.tile_c = 256;
    }
    plan.kernel_name = "mxjit_" + p.hash().hex().substr(0, 16);
    return plan;
  }
  std::string tensor_amax;
  for (const NodePtr& sn : values.scales) {
    if (sn->scale_format == ScaleFormat::e4m3) {
      // NVFP4: the per-tensor amax comes from a pre-pass kernel (one per pipeline).
      const std::string t = canonical(sn->args[1]);
      if (!tensor_amax.empty() && t != tensor_amax)
        throw UsageError("GPU generator: NVFP4 casts of two different values in one pipeline are not supported; "
                         "split the pipeline");
      tensor_amax = t;
      for (size_t q = 0; q < values.quantizes.size(); ++q)
        if (values.scales[size_t(values.quantize_scale[q])] == sn && values.quantizes[q]->flush_subnormals)
          throw UsageError("GPU generator: NVFP4 with flush_subnormals runs on the CPU reference only in this version");
    }
  }
  // ax_c: the unit-stride axis of the first tensor input (loads are then 16-byte vectors).
  int lead = first_tensor_input(p);
  int unit = lead >= 0 && lead < int(sc.unit_axis.size()) ? sc.unit_axis[lead] : -1;
  std::vector<int> block_axes;
  for (const NodePtr& q : values.quantizes)
    for (int a : block_of(q).axes)
      if (std::find(block_axes.begin(), block_axes.end(), a) == block_axes.end()) block_axes.push_back(a);
  std::vector<int> inner_axes;
  for (const Output& o : p.outputs())
    if (o.kind == OutputKind::elems || o.kind == OutputKind::values) inner_axes.push_back(o.layout.order(rank).back());
  plan.ax_c = unit >= 0 ? unit : (!block_axes.empty() && block_axes.size() == 1 ? block_axes[0] : rank - 1);
  if (rank == 1) {
    plan.ax_r = -1;
  } else {
    plan.ax_r = -1;
    for (int a : block_axes) if (a != plan.ax_c && plan.ax_r < 0) plan.ax_r = a;
    for (int a : inner_axes) if (a != plan.ax_c && plan.ax_r < 0) plan.ax_r = a;
    if (plan.ax_r < 0) for (int a = rank - 1; a >= 0; --a) if (a != plan.ax_c) { plan.ax_r = a; break; }
  }
  for (int a : block_axes)
    if (a != plan.ax_c && a != plan.ax_r)
      throw UsageError(fmt::format(
          "GPU generator: block axes {} and the input's unit-stride axis {} span more than two axes; one tile "
          "covers two axes", fmt::join(block_axes, ","), plan.ax_c));
  for (int a = 0; a < rank; ++a)
    if (a != plan.ax_r && a != plan.ax_c) plan.batch_axes.push_back(a);
  // Tile: whole scale blocks in both directions.
  int64_t br = 1, bc = 1;
  // Every scale's blocks (a pipeline may output scales without codes), not only the quantizes'.
  for (const NodePtr& sn : values.scales) {
    const BlockSpec& b = block_of(sn);
    if (plan.ax_r >= 0) br = std::max(br, b.size_along(plan.ax_r));
    bc = std::max(bc, b.size_along(plan.ax_c));
  }
  // A tile holds whole blocks as FP32 values in at most 200 KiB of shared memory (checked below
  // with the padding): refuse longer blocks before the tile extents are narrowed to int.
  constexpr int64_t kTileValues = 200 * 1024 / 4;
  if (br > kTileValues || bc > kTileValues / br)
    throw UsageError(fmt::format("GPU generator: blocks of {}x{} elements (rows x columns of the tile) do not fit one "
                                 "tile of {} FP32 values in shared memory (200 KiB); the CPU backend or the reference "
                                 "runs them", br, bc, kTileValues));
  if (plan.ax_r < 0) {
    plan.tile_r = 1;
    plan.tile_c = int(std::max<int64_t>(tuning.tile_c ? tuning.tile_c : 2048, bc));
  } else {
    plan.tile_r = int(std::max<int64_t>(tuning.tile_r ? tuning.tile_r : 64, br));
    plan.tile_c = int(std::max<int64_t>(tuning.tile_c ? tuning.tile_c : 128, bc));
  }
  if (plan.tile_r % br || plan.tile_c % bc || plan.tile_c % 32)
    throw UsageError(fmt::format("tuning: tile {}x{} must be a multiple of the block {}x{} and of 32 columns",
                                 plan.tile_r, plan.tile_c, br, bc));
  plan.threads = tuning.threads ? tuning.threads : 256;
  // Defaults from mxjit_sweep on an H200 (16384^2 bf16): 64x128 tiles, hoisted loads, 16 rows per
  // column-wise store, >= 4 CTAs per SM.
  plan.min_blocks = tuning.min_blocks ? tuning.min_blocks : 4;
  plan.hoist = tuning.hoist != 0;
  plan.col_w = tuning.col_w ? tuning.col_w : 16;
  if (plan.col_w != 8 && plan.col_w != 16 && plan.col_w != 32)
    throw UsageError(fmt::format("tuning: col_w {} must be 8, 16 or 32", plan.col_w));
  // Rows padded so that 8-float column groups and consecutive rows fall in different banks
  // (stride = 16 mod 32 plus one float per 8): 16-byte chunk writes and column reads stay
  // (nearly) conflict-free.
  plan.row_stride = plan.tile_c + plan.tile_c / 8;
  if (plan.row_stride % 32 != 16) plan.row_stride += (16 - plan.row_stride % 32 + 32) % 32;
  plan.roots = int(values.roots.size());
  int64_t smem = int64_t(plan.roots) * plan.tile_r * plan.row_stride * 4;
  for (const NodePtr& sn : values.scales) {  // the emitter keeps these three arrays per scale
    const BlockSpec& b = block_of(sn);
    int64_t nb = (plan.tile_r / (plan.ax_r >= 0 ? b.size_along(plan.ax_r) : 1)) * (plan.tile_c / b.size_along(plan.ax_c));
    smem += nb * 12;  // multiplier, info word, stored FP32 scale
  }
  if (smem > 200 * 1024)
    throw UsageError(fmt::format("GPU generator: the tile needs {} bytes of shared memory (blocks {}x{}, {} values); "
                                 "at most 200 KiB fit", smem, br, bc, plan.roots));
  plan.smem_bytes = int(smem);
  for (size_t i = 0; i < p.outputs().size(); ++i)
    if (p.outputs()[i].kind == OutputKind::amax || p.outputs()[i].layout.is_grouped())
      plan.zero_outputs.push_back(int(i));  // grouped: kernels write real scales only, never padding
  // Direct (register) kernels when nothing needs transposing.
  bool direct = true;
  int64_t bsize = 0;
  for (const NodePtr& q : values.quantizes) {
    const BlockSpec& b = block_of(q);
    if (b.axes.size() != 1 || b.axes[0] != plan.ax_c || (bsize && b.sizes[0] != bsize)) direct = false;
    bsize = b.sizes[0];
  }
  for (const NodePtr& s : values.scales) {
    const BlockSpec& b = block_of(s);
    if (b.axes.size() != 1 || b.axes[0] != plan.ax_c || (bsize && b.sizes[0] != bsize)) direct = false;
    bsize = b.sizes[0];
  }
  if (bsize == 0) bsize = 8;
  if (bsize % 8 != 0 || bsize / 8 > 32) direct = false;
  for (int a : inner_axes)
    if (a != plan.ax_c) direct = false;
  if (tuning.tile_r || tuning.tile_c || tuning.force_tiled) direct = false;  // a tile asks for the tiled kernel
  if (direct) {
    plan.kind = Plan::Kind::direct;
    plan.block_c = int(bsize);
    plan.group = int(bsize / 8);
    // Defaults from `mxjit explore` on an H200 (16384^2 bf16 -> MXFP8, blocked scales): 4 chunks
    // per thread and 8 CTAs per SM (<= 32 registers, full occupancy) for plain FP8 casts (199.9 us
    // against 209.4 with 2 chunks, 213.8 at 4 CTAs); 2 chunks and 6 CTAs (<= 40 registers) where
    // software encoders or prologues need more. Plain casts through the software encoder
    // (mx_encode_rne: FP4/FP6/INT8 on sm_90) from 2-byte inputs: 4 chunks at 6 CTAs (<= 40
    // registers; MXFP4 342.7 us against 351.5 with 2 chunks, MXINT8 267.5 against 278.6, H200).
    // NVFP4 too, since its per-tensor factors are computed once per thread (40 registers, no
    // spills; H200, 16384^2: TE 403.8 us against 442.3 with 2 chunks, torchao 584.5 against 622.0).
    bool plain = true;
    for (const NodePtr& q : values.quantizes) plain = plain && q->round == Round::nearest_even;
    for (const NodePtr& r : values.roots) plain = plain && r->op == Op::input;
    for (const InputDecl& in : p.inputs())
      if (in.kind == InputDecl::tensor) plain = plain && dtype_size(in.dtype) == 2;
    bool light = target.hw_fp8();
    for (const NodePtr& q : values.quantizes)
      light = light && (q->elem == e4m3 || q->elem == e5m2) && q->round == Round::nearest_even && !q->flush_subnormals;
    for (const NodePtr& r : values.roots) light = light && (r->op == Op::input || chunk_dequant(p, plan, sc, r));
    // 4 chunks only with 16-byte loads: element loads keep 8 floats per chunk, and 4 chunks of
    // them spill at 32 registers.
    bool vec = true;
    for (size_t i = 0; i < p.inputs().size(); ++i)
      if (p.inputs()[i].kind == InputDecl::tensor)
        vec = vec && sc.vector_along(i, plan.ax_c);
    plan.unroll = tuning.unroll ? tuning.unroll : ((light || plain) && vec ? 4 : 2);
    plan.min_blocks = tuning.min_blocks ? tuning.min_blocks : (light ? 8 : 6);
    plan.threads = tuning.threads ? tuning.threads : 256;
    plan.smem_bytes = 0;
    plan.roots = int(values.roots.size());
    plan.tile_r = 1;
    plan.tile_c = 8;
    for (const Output& o : p.outputs())
      if (o.kind == OutputKind::scales && o.layout.is_blocked() && !o.layout.is_grouped() && p.rank() >= 2) {
        plan.pad_r = std::max(plan.pad_r, o.layout.atom_rows());
        plan.pad_c = std::max(plan.pad_c, o.layout.atom_cols());
      }
  }
  if (!direct && !tuning.tile_r && !tuning.tile_c && !tuning.force_tiled && columns_apply(p, values, plan, sc)) {
    plan.kind = Plan::Kind::columns;
    // col_w: rows per thread, 16 or 8 (half the registers); see columns_lanes_r for the warp shape.
    const bool along_c = columns_along_c(values, plan);
    // A row-wise scale too (dim0+dim1 from one read): 8 rows per thread at 4 CTAs per SM (64
    // registers) measured 374 us at 16384^2 on an H200, 16 rows at 2 CTAs per SM 466 us.
    plan.col_w = tuning.col_w ? tuning.col_w : along_c ? 8 : 16;
    if (plan.col_w != 8 && plan.col_w != 16) throw UsageError(fmt::format("tuning: col_w {} must be 8 or 16", plan.col_w));
    for (const NodePtr& sn : values.scales)
      if (block_of(sn).axes[0] == plan.ax_r && block_of(sn).sizes[0] < plan.col_w) plan.col_w = int(block_of(sn).sizes[0]);
    plan.tile_r = 128;
    // 256 threads. dim0+dim1 on 128 x 256 tiles of 512 threads (half the partial writes of linear
    // row-wise scales) measured slower at every shape: 338.3 / 335.9 us against 316.1 / 295.7
    // (linear / blocked, 16384^2, H200); the CTA-wide barriers cost more than the stores.
    plan.threads = 256;
    plan.stages = tuning.stages ? tuning.stages : 1;  // see below
    if (plan.stages < 1 || plan.stages > 4) throw UsageError(fmt::format("tuning: stages {} must be 1..4", plan.stages));
    if (plan.stages > 1 && target.sm() < 90)
      throw UsageError(fmt::format("tuning: stages {} needs sm_90 or newer (bulk copies); the target is {}", plan.stages, target.arch));
    // Warps stacked along ax_r until they cover 128 rows, the rest side by side along ax_c.
    const int lanes_r = columns_plan_lanes_r(p, values, plan), warps_r = plan.tile_r / (lanes_r * plan.col_w);
    plan.tile_c = (plan.threads / 32 / warps_r) * (32 / lanes_r) * 8;
    // Pipelined (stages >= 2: persistent CTAs, bulk copies into a ring, emit_columns.cpp) is a
    // tuning, not the default. It removes the one-tile form's wait on its loads (ncu, H200,
    // dim0+dim1 16384^2: 5.1 of 16 cycles between a warp's issues on the long scoreboard), but
    // measured slower: 346.5 / 322.7 us (linear / blocked scales; 3 stages 358.4 / 359.9)
    // against 318.8 / 309.3 in one run. The ring and the staged codes (100 KiB per CTA) leave 2
    // CTAs per SM (22% of the warps active), and the copies add instructions (170.7 M against
    // 154.7 M: a copy takes uniform operands, so each warp issues its 16 rows' copies one lane
    // after another). With the codes staged in the tile's own slot (3 CTAs per SM): 357.1 /
    // 334.7 us, 182.6 M instructions. dim1 at 8 rows per thread: 221.7 us against 205.0. The
    // per-thread cp.async ring it replaced, same run at stages 2: dim0+dim1 444.9 us (bulk:
    // 347.3), dim1 307.5 (220.1), 3-D E=4 198.1 (138.8).
    plan.smem_bytes = plan.stages > 1 ? plan.stages * columns_slot_bytes(plan) : 0;
    // Static shared memory besides the ring: the staged scales (double-buffered when pipelined)
    // and, for dim0+dim1 with 8-bit codes, the two 16 KiB staged code tiles.
    const int static_smem = 4096 + (columns_stage_codes(p, values, plan) ? 32768 : 0) +
                            (columns_lines_padded(p, values, plan) ? 2 * kColumnsLinePad : 0);
    const int per_cta = plan.smem_bytes + static_smem + 1024;  // 1 KiB reserved per CTA
    // 16 rows: 2 CTAs per SM (<= 128 registers; fewer spill the 64-word tile, H200 sweep);
    // 8 rows with a row-wise scale: 4 (64 registers; see col_w above). Pipelined: as many as
    // the rings fit (at most 4).
    plan.min_blocks = tuning.min_blocks   ? tuning.min_blocks
                      : plan.stages > 1 ? std::clamp(228 * 1024 / per_cta, 1, 4)
                      : along_c && plan.col_w == 8 ? 4 : 2;
    if (int64_t(plan.min_blocks) * per_cta > 228 * 1024)
      throw UsageError(fmt::format("tuning: {} CTAs per SM with a {}-byte ring ({} stages) and {} bytes of other shared memory exceed the SM's 228 KiB",
                                   plan.min_blocks, plan.smem_bytes, plan.stages, static_smem + 1024));
    plan.row_stride = 0;
  }
  plan.kernel_name = "mxjit_" + p.hash().hex().substr(0, 16);
  return plan;
}

}  // namespace mxjit::detail
