// The direct kernel: no shared memory. Each thread owns `unroll` chunks of 8 consecutive
// elements along ax_c (all loaded before any is used, so several 16-byte loads are in flight);
// the `group` lanes holding one block combine their amax with warp shuffles; every lane encodes
// its own 8 codes and stores them with one 8-byte (FP8/FP6) or 4-byte (FP4) store.
//
//   lane:     0        1        2        3        4 ...
//   columns:  [0..7]   [8..15]  [16..23] [24..31] [32..39]      block of 32 = lanes 0-3
//   amax:     max over 8 -> shfl_xor 1 -> shfl_xor 2 -> every lane of the block has it
//
// Software-encoded casts (DirectPlan::scatter_scales) reduce-scatter instead: lane j of a block ends with the
// amax of its j-th row, computes that row's scale only, and the others fetch it by a shuffle.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/emit_common.hpp"
#include "codegen/emit_direct2d.hpp"
#include "codegen/emit_expr.hpp"
#include "codegen/layout_cuda.hpp"
#include "codegen/plan_rules.hpp"
#include "codegen/scale_expr_cuda.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {

std::vector<int> row_axes(const Plan& pl) {
  std::vector<int> a;
  for (int i = 0; i < pl.rank; ++i)
    if (i != pl.ax_c) a.push_back(i);
  return a;
}

bool vec_input(const Ctx& x, int k) { return x.sc.vector_along(size_t(k), x.plan.ax_c); }

int words_input(const Ctx& x, int s) {
  const int k = packed_amax_input(x, s, true);
  return k >= 0 && vec_input(x, k) ? k : -1;
}

bool drops_nan(const Ctx& x, int s) { return x.v.scales[size_t(s)]->amax_nan == AmaxNan::ignore; }

namespace {

// DirectPlan::row_step 32: a thread's rows r, r+32, r+64, r+96 fill the 4 row slots of one
// 16-byte line of a 128x4 atom, which the first lane of 4 blocks stores whole (emit_blocked_line):
//
//   grid row group g -> rows 128*(g/32) + g%32 + {0, 32, 64, 96}
//   atom line (r%32): [ r: c0..c3 | r+32: c0..c3 | r+64: c0..c3 | r+96: c0..c3 ]  (16 bytes)


// The per-root running maxima a tensor amax output accumulates into: tamax (NaN kept), or
// tamax_fmax (NaN skipped, AmaxNan::ignore), so that two outputs of one value may differ.
const char* amax_accumulator(const Output& o) { return o.node->amax_nan == AmaxNan::ignore ? "tamax_fmax" : "tamax"; }

// Whether scale s is computed once per block row, on one lane (the plan's choice).
bool scatter_scale(const Ctx& x, int s) { return x.plan.direct().scatter_scales[size_t(s)]; }

bool owner_stores(const Ctx& x, int o);

// Whether a scales output of scale s is stored in phase 2 (not by the owners of emit_scatter_scales).
bool phase2_stores(const Ctx& x, int s) {
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (x.p.outputs()[size_t(o)].kind == OutputKind::scales && x.v.output_index[size_t(o)] == s && !owner_stores(x, o))
      return true;
  return false;
}

// Whether phase 2 fetches reduce-scattered scale s from its owners: for codes, or for a store
// that its owners do not make.
bool gathered(const Ctx& x, int s) { return scatter_scale(x, s) && (scale_coded(x, s) || phase2_stores(x, s)); }

// The bf16 input whose words quantize q's E2M1 codes come from (DirectPlan::e2m1_words), or -1.
int e2m1_words_input(const Ctx& x, const NodePtr& q, int s) {
  for (size_t i = 0; i < x.v.quantizes.size(); ++i)
    if (x.v.quantizes[i] == q) return x.plan.direct().e2m1_words[i] ? words_input(x, s) : -1;
  return -1;
}

// Words of 16 bytes per 8-element chunk of a vec input: one for 2-byte types, two for f32.
int vec_words(DType t) { return t == DType::f32 ? 2 : 1; }

bool vec_dequant(const Ctx& x, const NodePtr& n) { return chunk_dequant(x.p, x.plan.ax_c, x.sc, n); }

// The vec_dequant nodes under the roots, each once (the index is the suffix of dqc<i>_ / dqs<i>_).
void collect_dequants(const Ctx& x, const NodePtr& n, std::vector<NodePtr>& out) {
  if (vec_dequant(x, n)) {
    for (const NodePtr& d : out)
      if (d == n) return;
    out.push_back(n);
    return;
  }
  for (const NodePtr& a : n->args) collect_dequants(x, a, out);
}

// True when every leaf under n is a register: a tensor input or a vec_dequant node.
bool register_values(const Ctx& x, const NodePtr& n) {
  if (vec_dequant(x, n)) return true;
  if (n->op == Op::vec_input || n->op == Op::dequant) return false;
  for (const NodePtr& a : n->args)
    if (!register_values(x, a)) return false;
  return true;
}

// Phase-1 loads of vec_dequant node i for chunk u: its codes (raw, zero past n_c) into dqc<i>_[u]
// and its block's scale value into dqs<i>_[u].
void emit_dequant_loads(Ctx& x, const NodePtr& n, int i) {
  const Plan& pl = x.plan;
  const int kc = x.p.input_index(n->args[0]->name), ks = x.p.input_index(n->args[1]->name);
  const bool fp4 = n->elem.packed();
  std::string cb, sb;
  for (int a : row_axes(pl)) {
    cb += fmt::format(" + mx_i64(ix{}_[u]) * P.in_stride[{}][{}]", a, kc, a);
    sb += fmt::format(" + mx_i64(ix{}_[u]) * P.in_stride[{}][{}]", a, ks, a);
  }
  x.out += fmt::format("    {{  // dequantize '{}' / '{}': 8 codes, one scale\n", n->args[0]->name, n->args[1]->name);
  x.out += fmt::format("      const mx_u8* const cp = static_cast<const mx_u8*>(P.in[{}]) + (0{}) + ({});\n", kc, cb, fp4 ? "cc_[u] >> 1" : "cc_[u]");
  if (fp4) {
    x.out += fmt::format("      if (ok[u] && cc_[u] + 8 <= n_c) dqc{0}_[u] = make_uint2(*reinterpret_cast<const mx_u32*>(cp), 0u);\n", i);
    x.out += fmt::format("      else {{ mx_u32 w = 0u; for (int e = 0; e < 8; e += 2) if (ok[u] && cc_[u] + e < n_c) w |= mx_u32(cp[e >> 1]) << (4 * e); dqc{}_[u] = make_uint2(w, 0u); }}\n", i);
  } else {
    x.out += fmt::format("      if (ok[u] && cc_[u] + 8 <= n_c) dqc{0}_[u] = *reinterpret_cast<const uint2*>(cp);\n", i);
    x.out += fmt::format("      else {{ mx_u32 w[2] = {{0u, 0u}}; for (int e = 0; e < 8; ++e) if (ok[u] && cc_[u] + e < n_c) w[e >> 2] |= mx_u32(cp[e]) << (8 * (e & 3)); dqc{}_[u] = make_uint2(w[0], w[1]); }}\n", i);
  }
  const std::string s_off = fmt::format("(0{}) + mx_i64(cc_[u] / {}) * P.in_stride[{}][{}]", sb, n->block.sizes[0], ks, pl.ax_c);
  x.out += fmt::format("      dqs{}_[u] = ok[u] && cc_[u] < n_c ? {} : 0.0f;\n    }}\n", i, dequant_scale_value(n->scale_format, ks, s_off));
}

// Loads of tensor input k for chunk u. Vec inputs keep the raw loaded words (r<k>_[u][..]) and
// are unpacked to floats in phase 2: unpacking here would make the next chunk's load wait for
// this one (ptxas joins the vector and tail paths on the floats), one load in flight instead of
// `unroll`. Other inputs load floats into x<k>_[u][0..7].
void emit_chunk_loads(Ctx& x, int k) {
  const Plan& pl = x.plan;
  const InputDecl& in = x.p.inputs()[size_t(k)];
  const bool unit = k < int(x.sc.unit_axis.size()) && x.sc.unit_axis[size_t(k)] == pl.ax_c;
  std::string base;
  for (int a : row_axes(pl)) base += fmt::format("{}ix{}_[u] * P.in_stride[{}][{}]", base.empty() ? "" : " + ", a, k, a);
  if (base.empty()) base = "0";
  x.out += fmt::format("    {{\n      const mx_i64 base = {};\n", base);
  if (!vec_input(x, k)) {
    std::string col = unit ? "c" : fmt::format("c * P.in_stride[{}][{}]", k, pl.ax_c);
    x.out += fmt::format(
        "      for (int e = 0; e < 8; ++e) {{ const int c = cc_[u] + e; x{0}_[u][e] = (ok[u] && c < n_c) ? {1}(P.in[{0}], base + {2}) : 0.0f; }}\n    }}\n",
        k, load_fn(in.dtype), col);
    return;
  }
  const int nw = vec_words(in.dtype);
  x.out += "      if (ok[u] && cc_[u] + 8 <= n_c) {\n";
  for (int i = 0; i < nw; ++i)
    x.out += fmt::format("        r{0}_[u][{1}] = mx_ld16(static_cast<const char*>(P.in[{0}]) + (base + cc_[u]) * {2}{3});\n", k, i,
                         dtype_size(in.dtype), i ? " + 16" : "");
  x.out += "      } else {\n";
  for (int i = 0; i < nw; ++i)
    x.out += raw_chunk_tail(in.dtype, k, fmt::format("r{}_[u][{}]", k, i), i ? "cc_[u] + 4" : "cc_[u]", "ok[u] && c < n_c", "base + c",
                            "        ");
  x.out += "      }\n    }\n";
}

// Offset, in scale values, of the scale at block column C of this thread's row: strided layouts
// by their strides, any other (packed words, split axes) by the layout's offset function.
std::string scale_offset(const Ctx& x, int o, const std::string& C) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  if (generic_layout(out)) {
    std::vector<std::string> index, shape;
    for (int a = 0; a < pl.rank; ++a) {
      index.push_back(a == pl.ax_c ? C : fmt::format("ix{}", a));
      shape.push_back(fmt::format("P.out_shape[{}][{}]", o, a));
    }
    return cuda_offset(out.bound, index, shape);
  }
  std::string s = fmt::format("{} * P.out_stride[{}][{}]", C, o, pl.ax_c);
  for (int a : row_axes(pl)) s += fmt::format(" + ix{} * P.out_stride[{}][{}]", a, o, a);
  return s;
}

// Whether blocked output o leaves the direct kernel gathered into words or atom lines
// (DirectPlan::blocked), not byte by byte.
bool blocked_words(const Ctx& x, int o) {
  const BlockedStore b = x.plan.direct().blocked[size_t(o)];
  return b == BlockedStore::words || b == BlockedStore::atom_lines;
}

// The blocked scale matrix of output o: its batch base (the row axes other than the blocked row
// axis, the innermost one) at chunk u, and the declarations of Cp and (where the base or a guard
// against the grid's padded rows, `rows_guarded`, reads it) Rp.
std::string blocked_frame(const Ctx& x, int o, const std::string& u, const std::string& ind, bool rows_guarded) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const int ar = mxjit::detail::blocked_atom(out.layout).first, ac = mxjit::detail::blocked_atom(out.layout).second;
  const std::vector<int> ra = row_axes(pl);
  std::string batch = "0";
  for (size_t i = 0; i + 1 < ra.size(); ++i) batch = fmt::format("({}) * P.shape[{}] + ix{}_[{}]", batch, ra[i], ra[i], u);
  std::string f = fmt::format("{}const unsigned Cp = (unsigned(nblk) + {}u) / {}u * {}u;\n", ind, ac - 1, ac, ac);
  if (batch == "0" && !rows_guarded) return f + ind + "const mx_i64 base = 0;\n";
  f +=
      fmt::format("{}const unsigned Rp = (unsigned(P.shape[{}]) + {}u) / {}u * {}u;\n", ind, ra.back(), ar - 1, ar, ar);
  return f + fmt::format("{}const mx_i64 base = {};\n", ind,
                         batch == "0" ? "0" : fmt::format("mx_i64({}) * Rp * Cp", batch));
}

// One block's scale of chunk u into output o. Linear scales: a byte (or float) from the block's
// first lane. Blocked scales: kept in sb<o>[u] (zero for padding) for emit_blocked_words.
void emit_scale_store(Ctx& x, int o, int s) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const char* t = scale_ctype(out.dtype);
  const std::string val = stored_scale(out, std::to_string(s));
  if (blocked_words(x, o))
    return void(x.out += fmt::format("    sb{0}[u / 4] |= (ok[u] ? mx_u32({1}) : 0u) << (8 * (u % 4));\n", o, val));
  if (mxjit::detail::is_blocked(out.layout) && !out.layout.grouped()) {
    // Blocked, one byte per block from its first lane; the grid covers the padding (zeros).
    const std::vector<int> ra = row_axes(pl);
    x.out += fmt::format("    if (row0 < rows && slot < pslots && (threadIdx.x % {}) == 0) {{\n", pl.direct().lanes_per_block);
    x.out += blocked_frame(x, o, "u", "      ", mxjit::detail::blocked_atom(out.layout).first < pl.direct().pad_rows);
    x.out += fmt::format("      const unsigned R = unsigned(ix{}_[u]);\n", ra.back());
    if (mxjit::detail::blocked_atom(out.layout).first < pl.direct().pad_rows) x.out += "      if (R < Rp)\n";
    x.out += fmt::format("      static_cast<{}*>(P.out[{}])[base + mx_blocked_offset32<{}, {}>(R, unsigned(cc / {}), Cp)] = ok[u] ? {} : {}(0);\n    }}\n",
                         t, o, mxjit::detail::blocked_atom(out.layout).first, mxjit::detail::blocked_atom(out.layout).second, pl.direct().block_cols, val, t);
    return;
  }
  if (grouped_one_per_row(x, o))  // stored after phase 2 (emit_placed_stores)
    return void(x.out += fmt::format("    sbg{0}[u / 4] |= mx_u32({1}) << (8 * (u % 4));\n", o, val));
  x.out += fmt::format("    if (ok[u] && (threadIdx.x % {}) == 0 && cc < n_c) {{\n", pl.direct().lanes_per_block);
  x.out += fmt::format("      {}* const sp = static_cast<{}*>(P.out[{}]);\n", t, t, o);
  x.out += fmt::format("      const int C = cc / {};\n", pl.direct().block_cols);
  if (out.layout.grouped())
    return void(x.out += grouped_scale_store(x, o, fmt::format("ix{}", pl.ax_r), "C", val, "      ",
                                             fmt::format("gcur{}", o), "sp", "") +
                         "    }\n");
  x.out += fmt::format("      sp[{}] = {};\n    }}\n", scale_offset(x, o, "C"), val);
}

// Blocked scales a 16-byte atom line at a time (4 rows per thread, 32 apart: rows r, r+32, r+64,
// r+96 of one 128x4 atom line). The first lane of every 4 blocks takes the other 3 blocks' words
// (3 shuffles) and transposes the 4 x 4 bytes (mx_transpose4x4):
//
//   held:   A = sb(block 0) = [A0 A1 A2 A3]   (byte u: row r + 32u)   B, C, D: blocks 1-3
//   line:   [A0 B0 C0 D0 | A1 B1 C1 D1 | A2 B2 C2 D2 | A3 B3 C3 D3]   -> one 16-byte store
void emit_blocked_line(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const int G = pl.direct().lanes_per_block;
  x.out += fmt::format("  {{  // blocked scales '{}': one 16-byte atom line (4 blocks x 4 rows) per 4 blocks\n", out.name);
  x.out += "    const unsigned lane = threadIdx.x & 31u;\n";
  x.out += blocked_frame(x, o, "0", "    ", false);
  x.out += fmt::format("    const mx_u32 a = sb{0}[0], b = __shfl_down_sync(0xffffffffu, a, {1}), c = __shfl_down_sync(0xffffffffu, a, {2}),\n"
                       "                 d = __shfl_down_sync(0xffffffffu, a, {3});\n", o, G, 2 * G, 3 * G);
  x.out += fmt::format("    if (row0 < rows && slot < pslots && lane % {}u == 0) {{\n", 4 * G);
  x.out += "      const mx_v16 line = mx_transpose4x4(a, b, c, d);\n";
  x.out += fmt::format("      mx_u8* const p = static_cast<mx_u8*>(P.out[{}]) + base + mx_blocked_offset32<128, 4>(unsigned(ix{}_[0]), slot / {}u, Cp);\n",
                       o, row_axes(pl).back(), G);
  x.out += "      if (mx_aligned16(p)) mx_st16(p, line);\n";
  x.out += "      else for (int b_ = 0; b_ < 16; ++b_) p[b_] = mx_u8((b_ < 4 ? line.x : b_ < 8 ? line.y : b_ < 12 ? line.z : line.w) >> (8 * (b_ % 4)));\n";
  x.out += "    }\n  }\n";
}

// Blocked scales 4 bytes at a time. The G lanes of a block hold the same U scales (one per row);
// 4 neighbouring blocks (4G lanes) fill one atom row's 4 bytes per matrix row. Lane j of the first
// block gathers row j's 4 bytes from the 4 blocks' lane j (which offers its row j) and stores them:
//
//   lanes  (block 0: 0..G-1)  (block 1: G..2G-1)  (block 2)  (block 3)
//   row j:  s[j][C0]           s[j][C0+1]          s[j][C0+2] s[j][C0+3]  -> lane j of block 0: one u32
//
// One store instruction per warp and round instead of U byte stores, and the grid's padding lanes
// and rows store zeros, so blocked scales need no memset.
void emit_blocked_words(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const int G = pl.direct().lanes_per_block, U = pl.direct().chunks_per_thread, ar = mxjit::detail::blocked_atom(out.layout).first, ac = mxjit::detail::blocked_atom(out.layout).second;
  if (x.plan.direct().blocked[size_t(o)] == BlockedStore::atom_lines) return emit_blocked_line(x, o);
  x.out += fmt::format("  {{  // blocked scales '{}': one 4-byte word (4 block columns of one row) per lane and round\n", out.name);
  x.out += fmt::format("    const unsigned lane = threadIdx.x & 31u, j = lane % {}u;\n", G);
  x.out += blocked_frame(x, o, "0", "    ", ar < pl.direct().pad_rows);
  x.out += fmt::format("    mx_u8* const sp = static_cast<mx_u8*>(P.out[{}]) + base;\n", o);
  x.out += fmt::format("    const unsigned R0 = unsigned(ix{}_[0]), C0 = (slot / {}u) & ~3u;\n", row_axes(pl).back(), G);
  x.out += fmt::format("    const bool st = row0 < rows && slot < pslots && lane % {}u < {}u;  // block 0 of its 4\n", 4 * G, G);
  for (int t = 0; t * G < U; ++t) {
    // Row u = t*G + j is byte u % 4 of word u / 4 (a select, not a dynamic index into registers).
    x.out += fmt::format("    {{\n      const unsigned u = {};\n      mx_u32 mine = sb{}[{}];\n", t * G ? fmt::format("{}u + j", t * G) : "j", o,
                         t * G / 4);
    for (int w = t * G / 4 + 1; w <= (std::min(U, t * G + G) - 1) / 4; ++w) x.out += fmt::format("      mine = u / 4u == {}u ? sb{}[{}] : mine;\n", w, o, w);
    x.out += "      mine = (mine >> (8u * (u % 4u))) & 0xffu;\n";
    x.out += "      mx_u32 w = 0u;\n";
    for (int c = 0; c < 4; ++c) {
      const std::string from = c ? fmt::format("(lane & ~{}u) | {}u | j", 4 * G - 1, c * G) : fmt::format("(lane & ~{}u) | j", 4 * G - 1);
      x.out += fmt::format("      w |= __shfl_sync(0xffffffffu, mine, {}){};\n", from, c ? fmt::format(" << {}", 8 * c) : "");
    }
    x.out += fmt::format("      const unsigned R = R0 + u * {}u;\n", pl.direct().row_step);
    std::string cond = fmt::format("st && j < {}u", std::min(G, U - t * G));
    if (ar < pl.direct().pad_rows) cond += " && R < Rp";
    x.out += fmt::format("      if ({}) {{\n        mx_u8* const p = sp + mx_blocked_offset32<{}, {}>(R, C0, Cp);\n", cond, ar, ac);
    x.out += "        if ((reinterpret_cast<mx_u64>(p) & 3u) == 0) *reinterpret_cast<mx_u32*>(p) = w;\n";
    x.out += "        else for (int b = 0; b < 4; ++b) p[b] = mx_u8(w >> (8 * b));\n      }\n    }\n";
  }
  x.out += "  }\n";
}

// Chunk u's row (a C expression `u` in scope): `ok` (a real row, a real slot) and the row-axis
// indices ix<a> by `ix` (a format with one {} for the axis), split around cc_'s line.
struct RowFrame {
  std::string row_ok, indices;
};
RowFrame row_frame(const Ctx& x, bool all_vec, const std::string& ok, const std::string& ix, const std::string& ind) {
  const Plan& pl = x.plan;
  const std::vector<int> ra = row_axes(pl);
  const auto ixa = [&](int a) { return fmt::format(fmt::runtime(ix), a); };
  RowFrame f;
  // One row axis: its real extent bounds the rows (the grid's padding rows beyond it load nothing).
  const std::string real_rows = pl.direct().pad_rows > 1 && ra.size() == 1 ? fmt::format("P.shape[{}]", ra[0]) : "rows";
  f.row_ok = fmt::format("{0}const mx_i64 row = row0 + {1};\n{0}{2} = row < {3} && slot < slots;\n", ind, times("u", pl.direct().row_step), ok, real_rows);
  if (ra.empty()) return f;  // a rank-1 domain is one row: no row indices
  const std::string n_inner = pl.direct().pad_rows > 1 ? fmt::format("(unsigned(P.shape[{0}]) + {1}u) / {2}u * {2}u", ra.back(), pl.direct().pad_rows - 1, pl.direct().pad_rows)
                                           : fmt::format("unsigned(P.shape[{}])", ra.back());
  if (ra.size() == 1) {
    f.indices = fmt::format("{}{} = {};\n", ind, ixa(ra[0]), all_vec ? "int(row)" : "row");
  } else {
    // 32-bit decomposition: extents are checked to fit in 31 bits at launch.
    f.indices = ind + "unsigned rr = unsigned(row);\n";
    for (auto it = ra.rbegin(); it != ra.rend(); ++it)
      f.indices += fmt::format("{}{{ const unsigned n = {}; {} = rr % n; rr /= n; }}\n", ind,
                               *it == ra.back() ? n_inner : fmt::format("unsigned(P.shape[{}])", *it), ixa(*it));
  }
  if (pl.direct().pad_rows > 1 && ra.size() > 1)
    f.indices += fmt::format("{0}{1} = {1} && {2} < P.shape[{3}];  // not a padding row\n", ind, ok, ixa(ra.back()), ra.back());
  if (const int k = x.p.counts_input(); k >= 0) {  // after `ok`: rows past the domain read no count
    const Mask& m = x.p.mask();
    f.indices += fmt::format("{0}{1} = {1} && {2} < static_cast<const int*>(P.in[{3}])[mx_i64({4}) * P.in_stride[{3}][0]];  // mask({5}, {6}, '{7}')\n",
                             ind, ok, ixa(m.axis), k, ixa(m.by), m.axis, m.by, m.counts);
  }
  if (pl.direct().block_rows > 1)  // 2-D blocks: rows rb0 + u of the CTA's block row (emit_direct_kernel)
    f.row_ok = fmt::format("{0}const mx_i64 row = row0 + u;\n{0}{1} = gi < rows && rb0 + u < P.shape[{2}];\n", ind, ok, pl.ax_r);
  return f;
}

// Whether scales output o leaves from the lanes that computed its scales (a reduce-scattered
// scale, linear layout): lane j of a block stores its own rows' bytes, one store per lane and
// owned row, in place of one per row from the block's first lane (emit_scale_store), every one
// of which needed the byte back from its owner. Blocked and grouped scales keep their paths.
bool owner_stores(const Ctx& x, int o) {
  const Output& out = x.p.outputs()[size_t(o)];
  return out.kind == OutputKind::scales && !mxjit::detail::is_blocked(out.layout) && !out.layout.grouped() &&
         scatter_scale(x, x.v.output_index[size_t(o)]);
}

// The xors of scale s's reduce-scatter over a block's G lanes (G/2 first; see emit_scatter_scales).
std::vector<int> scatter_xors(const Plan& pl) {
  std::vector<int> xors;
  for (int l = pl.direct().lanes_per_block / 2; l >= 1; l /= 2) xors.push_back(l);
  return xors;
}

// The owner's store of output o (see owner_stores), in emit_scatter_scales' loop over the lane's
// rows: row tb<s> + i of the thread's chunks, column block cc0 / B.
std::string owner_store(const Ctx& x, int o, int s, bool all_vec, const std::string& ind) {
  const Plan& pl = x.plan;
  std::string t = fmt::format("{0}{{  // scales '{1}' from their owner lane\n", ind, x.p.outputs()[size_t(o)].name);
  const std::string in = ind + "  ";
  t += fmt::format("{}const int u = tb{} + i;\n{}bool okr;\n", in, s, in);
  for (int a : row_axes(pl)) t += fmt::format("{}{} ix{};\n", in, all_vec ? "int" : "mx_i64", a);
  const RowFrame f = row_frame(x, all_vec, "okr", "ix{}", in);
  t += f.row_ok + f.indices;
  // Every owner lane of a real slot stores: in a partial last block the owner's own chunk may lie
  // past the end (its loads were zeros), but its row's scale is the block's. With more lanes than
  // rows, several lanes own each row: the first of them stores.
  const int shared = scatter_shared_lanes(pl.direct().chunks_per_thread, scatter_xors(pl));
  const std::string first = shared ? fmt::format(" && (lane & {}) == 0", shared) : "";
  const Output& out = x.p.outputs()[size_t(o)];
  t += fmt::format("{}if (okr{}) static_cast<{}*>(P.out[{}])[{}] = {};\n", in, first, scale_ctype(out.dtype), o,
                   scale_offset(x, o, fmt::format("(cc0 / {})", pl.direct().block_cols)), stored_scale(out, ""));
  return t + ind + "}\n";
}

// Before phase 2: scale s's rows, reduce-scattered over the block's lanes (emit_scatter_scales),
// so that each lane computes U / G of the U rows' scales. The rule is integer work on the ALU
// pipe, which limits the FP4/FP6/INT8 casts on sm_90.
//
//   U = G = 4:  lane j of a block: row maxima m0 m1 m2 m3  --xor 2-->  2 rows  --xor 1-->  row j
void emit_scatter_rows(Ctx& x, int s, bool all_vec) {
  const Plan& pl = x.plan;
  const int k = words_input(x, s);
  const std::string w = fmt::format("r{}_[u][0]", k);
  x.out += fmt::format("  mx_u32 pw{0}[{1}];  // scale {0}: each row's packed |x| max\n#pragma unroll\n  for (int u = 0; u < {1}; ++u) pw{0}[u] = {2};\n",
                       s, pl.direct().chunks_per_thread, packed_abs_max4(x, k, w + ".x", w + ".y", w + ".z", w + ".w", drops_nan(x, s)));
  const ItemExpr row_m = [&](const std::string& u) { return widen_half(x, k, fmt::format("pw{}[{}]", s, u), -1); };
  const auto store = [&](const std::string& ind) {
    std::string t;
    for (int o = 0; o < int(x.p.outputs().size()); ++o)
      if (owner_stores(x, o) && x.v.output_index[size_t(o)] == s) t += owner_store(x, o, s, all_vec, ind);
    return t;
  };
  emit_scatter_scales(x, s, pl.direct().chunks_per_thread, scatter_xors(pl), row_m, nullptr, "  ", gathered(x, s), store);
}

void emit_elems_store(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const int qi = x.v.output_index[size_t(o)];
  const NodePtr& q = x.v.quantizes[size_t(qi)];
  const int si = x.v.quantize_scale[size_t(qi)];
  const int root = x.v.scale_root[size_t(si)];
  const bool fp4 = q->elem.packed();
  x.out += fmt::format("    {{  // output '{}' ({})\n", x.p.outputs()[size_t(o)].name, q->elem.str());
  if (const int k = e2m1_words_input(x, q, si); k >= 0) {
    x.out += fmt::format("      mx_u32 wd[1];\n      wd[0] = mx_e2m1x8_bf16_finite(r{0}_[u][0].x, r{0}_[u][0].y, r{0}_[u][0].z, r{0}_[u][0].w, mult{1});\n",
                         k, si);
    x.out += fmt::format("      if (flag{}) wd[0] = 0u;  // zero and NaN blocks: E2M1 has no NaN code\n", si);
  } else {
    // NVFP4's signs from the bf16 words where the root is that input, else from the values.
    const int w = words_input(x, si);
    const std::string signs = w >= 0 && x.p.inputs()[size_t(w)].dtype == DType::bf16
                                  ? fmt::format("mx_e2m1_signs8_bf16(r{0}_[u][0].x, r{0}_[u][0].y, r{0}_[u][0].z, r{0}_[u][0].w)", w)
                                  : "mx_e2m1_signs8_f32(y)";
    const bool per_column = x.plan.direct().block_rows > 1 && block2d_kind(x, si) == Block2d::column;
    emit_packed_codes(x, q, si, fmt::format("v{}", root), 8,
                      [&](int h) { return x.linear_index("", fmt::format("(cc + e + {})", h)); }, "      ", per_column,
                      x.plan.direct().eight_at_once[size_t(qi)] ? signs : std::string());
  }
  if (transposed_codes(x, o)) return void(x.out += fmt::format("      qt{}[u] = make_uint2(wd[0], wd[1]);\n    }}\n", o));
  // Codes and values outputs are dense with ax_c innermost (the plan's rule for this kernel; the
  // launcher checks output strides against the layout): unit stride along ax_c, no multiply.
  std::string off = fp4 ? "(cc >> 1)" : "cc";
  for (int a : row_axes(pl)) off += fmt::format(" + ix{} * P.out_stride[{}][{}]", a, o, a);
  x.out += fmt::format("      mx_u8* const ob = static_cast<mx_u8*>(P.out[{}]) + ({});\n", o, off);
  emit_store_codes(x, q, 8, fmt::format("full && oal{}", o), "ok[u] && cc + e < n_c", "      ", true);
  x.out += "    }\n";
}

void emit_values_store(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const int root = x.v.output_index[size_t(o)];
  std::string off = "cc";
  for (int a : row_axes(pl)) off += fmt::format(" + ix{} * P.out_stride[{}][{}]", a, o, a);
  x.out += fmt::format("    {{  // values '{}'\n", out.name);
  if (out.dtype == DType::f32) {
    x.out += fmt::format("      float* const ob = static_cast<float*>(P.out[{}]) + ({});\n", o, off);
    x.out += fmt::format("      float w[8];\n      for (int e = 0; e < 8; ++e) w[e] = v{0}[e] != v{0}[e] ? mx_float(0x7fc00000u) : v{0}[e];\n", root);
    x.out += "      if (full && mx_aligned16(ob)) {\n";
    x.out += "        mx_st16(ob, mx_v16{mx_bits(w[0]), mx_bits(w[1]), mx_bits(w[2]), mx_bits(w[3])});\n";
    x.out += "        mx_st16(ob + 4, mx_v16{mx_bits(w[4]), mx_bits(w[5]), mx_bits(w[6]), mx_bits(w[7])});\n";
    x.out += "      } else if (ok[u]) for (int e = 0; e < 8; ++e) if (cc + e < n_c) ob[e] = w[e];\n    }\n";
    return;
  }
  // Pairs by one cvt.rn each where the target has it (sm_89+ here), else element by element.
  const bool bf = out.dtype == DType::bf16;
  const std::string pair = x.target.hw_fp8() ? (bf ? "mx_pack_bf16x2" : "mx_pack_f16x2") : "";
  const char* cv = bf ? "mx_f32_to_bf16_bits" : "mx_f32_to_f16_bits";
  x.out += fmt::format("      mx_u16* const ob = static_cast<mx_u16*>(P.out[{}]) + ({});\n", o, off);
  if (!pair.empty())
    x.out += fmt::format("      mx_u32 h2[4];\n      for (int e = 0; e < 4; ++e) h2[e] = {0}(v{1}[2 * e], v{1}[2 * e + 1]);\n", pair, root);
  else
    x.out += fmt::format("      mx_u32 h2[4];\n      for (int e = 0; e < 4; ++e) h2[e] = ({0}(v{1}[2 * e]) & 0xffffu) | ({0}(v{1}[2 * e + 1]) << 16);\n", cv, root);
  x.out += "      if (full && mx_aligned16(ob)) mx_st16(ob, mx_v16{h2[0], h2[1], h2[2], h2[3]});\n";
  x.out += "      else if (ok[u]) for (int e = 0; e < 8; ++e) if (cc + e < n_c) ob[e] = mx_u16(h2[e >> 1] >> (16 * (e & 1)));\n    }\n";
}

// The outputs whose token groups place one scale row per domain row (grouped_one_per_row).
std::vector<int> placed_outputs(const Ctx& x) {
  std::vector<int> placed;
  for (size_t o = 0; o < x.p.outputs().size(); ++o)
    if (grouped_one_per_row(x, int(o))) placed.push_back(int(o));
  return placed;
}

// Token groups: every thread of a CTA holds the same U rows (grid.x runs along one row group), so
// warp 0 alone finds their padded rows, lane l for chunk l % U, into shared memory, while its
// loads are in flight; the other warps skip the search (its shuffles bound the cast on the H200:
// docs/perf-log.md#grouped-rows-search). Each block's scale bytes wait in sbg<o> until
// emit_placed_stores.
void emit_placed_search(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread;
  const std::vector<int> placed = placed_outputs(x);
  if (placed.empty()) return;
  for (int o : placed)
    x.out += fmt::format(
        "  __shared__ int mx_gp{0}[{1}];  // output '{2}': the padded rows of the CTA's {1} rows\n"
        "  mx_u32 sbg{0}[{3}] = {{}};  // this block's scale bytes, one a chunk\n",
        o, U, x.p.outputs()[size_t(o)].name, (U + 3) / 4);
  x.out += "  if (threadIdx.x < 32u) {  // warp 0 searches\n";
  x.out += fmt::format("    mx_i64 grow_ = ix{}_[0];  // the row lane l searches: chunk l % {}'s\n", pl.ax_r, U);
  for (int u = 1; u < U; ++u)
    x.out += fmt::format("    if (threadIdx.x % {}u == {}u) grow_ = ix{}_[{}];\n", U, u, pl.ax_r, u);
  for (int o : placed) {
    x.out += "    " + grouped_rows_place(x, o, "grow_", fmt::format("gpw{}", o));
    x.out += fmt::format("    if (threadIdx.x < {}u) mx_gp{}[threadIdx.x] = int(gpw{});\n", U, o, o);
  }
  x.out += "  }\n";
}

// The token groups' scale bytes kept by phase 2, stored once warp 0's padded rows are in shared
// memory (the one barrier, after the codes). With 4 lanes a block, 4 chunks a thread and rows
// r, r+32, r+64, r+96 (row_step 32), lane 16k gathers its 4 blocks' bytes into a word a row and
// stores them together (mx_grouped_rows_store4: one atom line where a group holds the 4 rows);
// else each block's first lane stores its bytes (docs/perf-log.md#grouped-rows-stores).
void emit_placed_stores(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread;
  const std::vector<int> placed = placed_outputs(x);
  if (placed.empty()) return;
  x.out += "  __syncthreads();  // warp 0's padded rows\n";
  if (pl.direct().lanes_per_block == 4 && U == 4 && pl.direct().row_step == 32) {
    x.out += "  {  // 4 blocks' bytes (byte u: chunk u's row) gathered into lane 16k, a word a row\n";
    x.out += fmt::format("    const unsigned lane = threadIdx.x & 31u;\n    const int C = cc_[0] / {};\n",
                         pl.direct().block_cols);
    for (int o : placed) {
      const int ca = blocked_axes(block_of(x.v.scales.at(size_t(x.v.output_index.at(size_t(o))))), pl.rank).second;
      x.out += fmt::format(
          "    {{\n"
          "      const mx_u32 b0 = sbg{0}[0], b1 = __shfl_down_sync(0xffffffffu, b0, 4), b2 = __shfl_down_sync(0xffffffffu, b0, 8),\n"
          "                   b3 = __shfl_down_sync(0xffffffffu, b0, 12);\n"
          "      const int nc = int(P.out_shape[{0}][{1}]);\n"
          "      if (lane % 16u == 0 && slot < slots && C < nc) {{\n"
          "        mx_grouped_rows_store4(static_cast<mx_u8*>(P.out[{0}]), mx_gp{0}, C, nc - C < 4 ? nc - C : 4, (nc + 3) / 4 * 4,\n"
          "                               mx_transpose4x4(b0, b1, b2, b3));\n"
          "      }}\n"
          "    }}\n",
          o, ca);
    }
    x.out += "  }\n";
    return;
  }
  x.out += fmt::format("  if ((threadIdx.x % {}) == 0) {{\n#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n",
                       pl.direct().lanes_per_block, U);
  x.out += "      const int cc = cc_[u];\n      if (!(ok[u] && cc < n_c)) continue;\n";
  x.out += fmt::format("      const mx_i64 ix{0} = ix{0}_[u];\n      const int C = cc / {1};\n", pl.ax_r,
                       pl.direct().block_cols);
  for (int o : placed) {
    x.out += fmt::format("      const mx_i64 gp{0} = mx_gp{0}[u];\n", o);
    x.out += grouped_scale_store(x, o, fmt::format("ix{}", pl.ax_r), "C",
                                 fmt::format("mx_u8(sbg{}[u / 4] >> (8 * (u % 4)))", o), "      ", "", "",
                                 fmt::format("gp{}", o));
  }
  x.out += "    }\n  }\n";
}

// Phase 2 of the direct kernel: per chunk u, its values, its block scales (by shuffles within
// each block's lanes, or fetched from their owner lane where reduce-scattered) and its outputs.
// `clean`: no block of the warp is flagged for the reduce-scattered scales (emit_clean_split).
void emit_phase2(Ctx& x, const std::vector<NodePtr>& dqs, bool clean) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread, G = pl.direct().lanes_per_block;
  const std::vector<int> ra = row_axes(pl);
  bool any2 = false;
  for (int s = 0; s < int(x.v.scales.size()); ++s) any2 = any2 || phase2_scale(x, s);
  x.out += !any2 ? "  // Phase 2: values and codes (the scales are above).\n"
                 : "  // Phase 2: values, block scales (amax by shuffles within each block's lanes), codes.\n";
  // Grouped scales walked per scale: one cursor per output over the chunks (kept where read).
  std::vector<Decl> cursors;
  for (size_t o = 0; o < x.p.outputs().size(); ++o)
    if (x.p.outputs()[o].layout.grouped() && !grouped_one_per_row(x, int(o)))
      cursors.push_back({fmt::format("gcur{}", o), group_cursor_decl(fmt::format("gcur{}", o), "  ")});
  if (!cursors.empty()) defer_decls(x, cursors);
  x.out += fmt::format("#pragma unroll\n  for (int u = 0; u < {}; ++u) {{\n", U);
  std::vector<Decl> used_only = {{"cc", "    const int cc = cc_[u];\n"}};  // declared where the body below reads them
  const size_t decl_at = x.out.size();
  for (int a : ra)
    used_only.push_back({fmt::format("ix{}", a), fmt::format("    const mx_i64 ix{0} = ix{0}_[u];\n", a)});
  // The roots phase 2 reads as values: not those whose scales and codes all come from raw words.
  std::vector<bool> need(x.v.roots.size(), false);
  for (int s = 0; s < int(x.v.scales.size()); ++s)
    if (phase2_scale(x, s) && !scatter_scale(x, s) && words_input(x, s) < 0) need[size_t(x.v.scale_root[size_t(s)])] = true;
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    const int i = x.v.output_index[size_t(o)];
    if (out.kind == OutputKind::values || out.kind == OutputKind::amax) need[size_t(i)] = true;
    if (out.kind != OutputKind::elems) continue;
    const int si = x.v.quantize_scale[size_t(i)];
    if (e2m1_words_input(x, x.v.quantizes[size_t(i)], si) < 0) need[size_t(x.v.scale_root[size_t(si)])] = true;
  }
  const bool any_values = std::find(need.begin(), need.end(), true) != need.end();
  for (size_t k = 0; k < x.p.inputs().size() && any_values; ++k) {
    const InputDecl& in = x.p.inputs()[k];
    if (in.kind != InputDecl::Kind::tensor) continue;
    x.out += fmt::format("    float x{}[8];\n", k);
    if (!vec_input(x, int(k)))
      x.out += fmt::format("    for (int e = 0; e < 8; ++e) x{0}[e] = x{0}_[u][e];\n", k);
    else
      for (int i = 0; i < vec_words(in.dtype); ++i) x.out += fmt::format("    {}(r{}_[u][{}], {});\n", unpack_fn(in.dtype), k, i, plus(fmt::format("x{}", k), 4 * i));
  }
  for (size_t r = 0; r < x.v.roots.size(); ++r)
    if (need[r]) x.out += fmt::format("    float v{}[8];\n", r);
  // FP8 codes decode eight at a time through the hardware cvt (sm_89+).
  auto hw_decode = [&](const NodePtr& n) { return x.target.hw_fp8() && (n->elem == e4m3 || n->elem == e5m2); };
  for (size_t i = 0; i < dqs.size(); ++i)
    if (hw_decode(dqs[i]))
      x.out += fmt::format("    float dqf{0}[8];\n    mx_decode8_fp8<{1}>(dqc{0}_[u], dqf{0});\n", i, dqs[i]->elem == e5m2);
  const size_t full_at = x.out.size();
  bool pure = true;
  for (const NodePtr& r : x.v.roots) pure = pure && register_values(x, r);
  std::string body;
  ExprEmitter em(
      [&](const NodePtr& n) {
        for (size_t i = 0; i < dqs.size(); ++i)
          if (dqs[i] == n) {
            if (hw_decode(n)) return fmt::format("(dqf{0}[e] * dqs{0}_[u])", i);
            const std::string code = n->elem.packed() ? fmt::format("((dqc{}_[u].x >> (4 * e)) & 15u)", i)
                                                      : fmt::format("(((e < 4 ? dqc{0}_[u].x : dqc{0}_[u].y) >> (8 * (e & 3))) & 255u)", i);
            return fmt::format("(mx_decode<{}>({}) * dqs{}_[u])", format_args(n->elem), code, i);
          }
        return leaf_expr(x, n);
      },
      "t");
  std::string zero;
  for (size_t r = 0; r < x.v.roots.size(); ++r) {
    if (!need[r]) continue;
    std::string var = em.emit(x.v.roots[r], body, "      ");
    body += fmt::format("      v{}[e] = {};\n", r, var);
    zero += fmt::format("v{}[e] = 0.0f; ", r);
  }
  // Roots that are tensor inputs themselves are already +0 out of range (the loads' tails).
  bool bare = true;
  for (const NodePtr& r : x.v.roots)
    bare = bare && r->op == Op::input && x.p.inputs()[size_t(x.p.input_index(r->name))].kind == InputDecl::Kind::tensor;
  if (any_values && pure) {
    // Values from registers for every element (tails hold zeros), then out-of-range ones masked:
    // the full-chunk path has no per-element branches.
    x.out += "#pragma unroll\n    for (int e = 0; e < 8; ++e) {\n" +
             std::string(uses(body, "c") ? "      const int c = cc + e;\n" : "") + body + "    }\n";
    if (!bare)
      x.out += "    if (!full) {\n#pragma unroll\n      for (int e = 0; e < 8; ++e) if (!(ok[u] && cc + e < n_c)) { " + zero + "}\n    }\n";
  } else if (any_values) {
    x.out += "#pragma unroll\n    for (int e = 0; e < 8; ++e) {\n      const int c = cc + e;\n";
    x.out += "      if (!(full || (ok[u] && c < n_c))) { " + zero + "continue; }\n" + body + "    }\n";
  }
  for (size_t s = 0; s < x.v.scales.size(); ++s) {
    if (!phase2_scale(x, int(s))) continue;  // emit_tensorwise_scales, emit_block2d_scales
    const int root = x.v.scale_root[s];
    const bool stored = phase2_stores(x, int(s)), coded = scale_coded(x, int(s));
    if (scatter_scale(x, int(s)) && !gathered(x, int(s))) continue;  // its owners stored it, and nothing here reads it
    x.out += scale_slot_decls(x, int(s), stored, coded, "    ") + "    {\n";
    if (scatter_scale(x, int(s)) && generic_scale(*x.v.scales[s])) {
      // A scale definition's multiplier, gathered; its owners stored the scales (owner_stores),
      // and it flags no block (DirectPlan::scatter_scales): the word is the multiplier's bits.
      emit_gather_scale(x, int(s), U, scatter_xors(pl), "u", "      ", "", true);
      x.out += scale_slot_copy(x, int(s), stored, coded, "      ", "", "0u", "0.0f") + "    }\n";
      continue;
    }
    if (scatter_scale(x, int(s))) {
      emit_gather_scale(x, int(s), U, scatter_xors(pl), "u", "      ", "", clean);
      // The multiplier is 2^(127 - byte): its exponent field is 254 - byte (0 for byte 254, 2^-127).
      if (stored)
        x.out += clean ? "      const mx_u32 byte = 254u - (w_ >> 23);\n"
                       : "      const mx_u32 byte = w_ < 3u ? (w_ == 2u ? 255u : 0u) : 254u - (w_ >> 23);\n";
      x.out += scale_slot_copy(x, int(s), stored, coded, "      ", "", "byte", "0.0f") + "    }\n";
      continue;
    }
    if (const int k = words_input(x, int(s)); k >= 0) {
      // A bare 16-bit input: the maximum of its loaded words, two lanes per instruction (the
      // flush of the maximum is the maximum of the flushed values: flushing is monotonic).
      const std::string w = fmt::format("r{}_[u][0]", k);
      x.out += fmt::format("      const mx_u32 pw = {};\n", packed_abs_max4(x, k, w + ".x", w + ".y", w + ".z", w + ".w", drops_nan(x, int(s))));
      x.out += fmt::format("      mx_u32 m = {};\n", widen_half(x, k, "pw", -1));
      if (x.v.scale_flush[s]) x.out += "      if (m < 0x00800000u) m = 0u;\n";
    } else {
      x.out += fmt::format("      mx_u32 m = 0u;\n      for (int e = 0; e < 8; ++e) {{ mx_u32 a = mx_bits(v{}[e]) & 0x7fffffffu; {}{}m = a > m ? a : m; }}\n",
                           root, x.v.scale_flush[s] ? "if (a < 0x00800000u) a = 0u; " : "", amax_drop_nan(*x.v.scales[s], "a"));
    }
    for (int off = G / 2; off >= 1; off /= 2)
      x.out += fmt::format("      {{ const mx_u32 w = __shfl_xor_sync(0xffffffffu, m, {}); m = w > m ? w : m; }}\n", off);
    x.out += scale_from_amax(x.v.scales[s], "      ", nvfp4(*x.v.scales[s]) ? mult_table(int(s)) : "", stored, coded);
    x.out += scale_slot_copy(x, int(s), stored, coded, "      ") + "    }\n";
  }
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    switch (out.kind) {
      case OutputKind::scales:
        if (!owner_stores(x, o) && phase2_scale(x, x.v.output_index[size_t(o)])) emit_scale_store(x, o, x.v.output_index[size_t(o)]);
        break;
      case OutputKind::elems: emit_elems_store(x, o); break;
      case OutputKind::values: emit_values_store(x, o); break;
      case OutputKind::amax: {
        const int r = x.v.output_index[size_t(o)];
        const char* acc = amax_accumulator(out);
        const std::string drop = amax_drop_nan(*out.node, "a");
        x.out += fmt::format(
            "    for (int e = 0; e < 8; ++e) {{ {3}mx_u32 a = mx_bits(v{0}[e]) & 0x7fffffffu; {2}{1}[{0}] = a > {1}[{0}] ? a : {1}[{0}]; }}\n",
            r, acc, drop, drop.empty() ? "const " : "");
        break;
      }
    }
  }
  insert_used(x.out, full_at, {{"full", "    const bool full = ok[u] && cc + 8 <= n_c;\n"}});
  insert_used(x.out, decl_at, used_only);
  x.out += "  }\n";
}

// DirectPlan::tensorwise: every scale from the pre-pass's tensor amax (the workspace word,
// flushed where a cast flushes: flushing commutes with the maximum), once per thread before
// phase 2; the one scale of each scales output stored by thread 0 of CTA 0 (at offset 0: every
// scale index is 0).
void emit_tensorwise_scales(Ctx& x) {
  x.out += "  // Tensorwise: the scales of the one block, from the pre-pass's tensor amax (P.aux).\n";
  x.out += "  const mx_u32 mx_tensor_m = *static_cast<const mx_u32*>(P.aux);\n";
  for (size_t s = 0; s < x.v.scales.size(); ++s) {
    const bool stored = scale_stored(x, int(s)), coded = scale_coded(x, int(s));
    x.out += scale_slot_decls(x, int(s), stored, coded, "  ") + "  {\n    mx_u32 m = mx_tensor_m;\n";
    if (x.v.scale_flush[s]) x.out += "    if (m < 0x00800000u) m = 0u;\n";
    x.out += scale_from_amax(x.v.scales[s], "    ", "", stored, coded);
    x.out += scale_slot_copy(x, int(s), stored, coded, "    ") + "  }\n";
  }
  x.out += "  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0) {\n";
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales) continue;
    x.out += fmt::format("    static_cast<{}*>(P.out[{}])[0] = {};\n", scale_ctype(out.dtype), o,
                         stored_scale(out, std::to_string(x.v.output_index[size_t(o)])));
  }
  x.out += "  }\n";
}

}  // namespace

void emit_direct_kernel(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread, G = pl.direct().lanes_per_block, B = pl.direct().block_cols;
  x.out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const MxParams P) {{\n", pl.threads, pl.ctas_per_sm, pl.kernel_name);
  emit_tamax(x, true);
  // Column indices are 32-bit: the launcher checks every extent < 2^31.
  x.out += fmt::format("  const int n_c = int(P.shape[{}]);\n", pl.ax_c);
  // With blocked scales the grid also covers their padding (DirectPlan::pad_rows, pad_block_cols): pslots chunk
  // slots per row, and the innermost row axis runs to Rpad; padding chunks load nothing (ok false).
  // 2-D blocks bound their rows by the block row instead of `slots` (row_frame).
  const int pc = pl.direct().pad_block_cols;
  std::vector<Decl> counts = {{"nblk", fmt::format("  const int nblk = (n_c + {} - 1) / {};\n", B, B)}};
  if (pl.direct().block_rows == 1)
    counts.push_back(
        {"slots",
         fmt::format("  const unsigned slots = unsigned(nblk) * {}u;  // chunk slots per row: {} lanes per block\n", G,
                     G)});
  counts.push_back(
      {"pslots",
       fmt::format("  const unsigned pslots = {} * {}u;\n",
                   pc == 1 ? "unsigned(nblk)" : fmt::format("unsigned((nblk + {0} - 1) / {0} * {0})", pc), G)});
  counts.push_back({"rows", "  const mx_i64 rows = P.tiles_r;\n"});  // read unless the real extent bounds the rows
  defer_decls(x, std::move(counts));
  x.out += fmt::format("  bool ok[{0}];\n  int cc_[{0}];\n", U);
  // Row indices: 32-bit with 16-byte loads (off local memory at the register caps), 64-bit with
  // element loads (DirectPlan::wide_rows; docs/perf-log.md#direct-row-indices).
  const bool all_vec = !pl.direct().wide_rows;
  for (int a : row_axes(pl)) x.out += fmt::format("  {} ix{}_[{}];\n", all_vec ? "int" : "mx_i64", a, U);
  for (size_t k = 0; k < x.p.inputs().size(); ++k) {
    const InputDecl& in = x.p.inputs()[k];
    if (in.kind != InputDecl::Kind::tensor) continue;
    if (vec_input(x, int(k))) x.out += fmt::format("  mx_v16 r{}_[{}][{}];\n", k, U, vec_words(in.dtype));
    else x.out += fmt::format("  float x{}_[{}][8];\n", k, U);
  }
  std::vector<NodePtr> dqs;
  for (const NodePtr& r : x.v.roots) collect_dequants(x, r, dqs);
  for (size_t i = 0; i < dqs.size(); ++i) x.out += fmt::format("  uint2 dqc{0}_[{1}];\n  float dqs{0}_[{1}];\n", i, U);
  x.out += "  // Phase 1: all loads first, so that several are in flight per thread.\n";
  const int Br = pl.direct().block_rows;
  if (Br == 1) x.out += "  // grid.x runs along the slots of a row (32-bit), grid.y/z over groups of rows.\n";
  if (Br > 1) {
    x.out += fmt::format("  // One CTA a {}x{} block: lane_c across its columns, rt down its rows ({} rows a thread).\n", Br, B, U);
    x.out += fmt::format("  const unsigned lane_c = threadIdx.x % {0}u, rt = threadIdx.x / {0}u;\n", G);
    defer_decls(x, {{"slot", fmt::format("  const unsigned slot = blockIdx.x * {}u + lane_c;\n", G)}});
    x.out += fmt::format("  const int cc0 = int(blockIdx.x) * {} + int(lane_c) * 8;\n", B);
    x.out += "  const mx_i64 gi = mx_i64(blockIdx.z) * gridDim.y + blockIdx.y;  // outer row index x block rows + block row\n";
    x.out +=
        fmt::format("  const mx_i64 nbr = (P.shape[{0}] + {1}) / {2}, rblk = gi % nbr * {2}, rb0 = rblk + rt * {3};\n",
                    pl.ax_r, Br - 1, Br, U);
    x.out += fmt::format("  const mx_i64 row0 = gi / nbr * P.shape[{}] + rb0;\n", pl.ax_r);
  } else {
    x.out += "  const unsigned slot = blockIdx.x * blockDim.x + threadIdx.x;\n";
    x.out += fmt::format("  const int cc0 = int(slot / {}u) * {} + int(slot % {}u) * 8;\n", G, B, G);
  }
  if (Br == 1 && pl.direct().row_step == 1) {
    x.out += fmt::format("  const mx_i64 row0 = (mx_i64(blockIdx.z) * gridDim.y + blockIdx.y) * {};\n", U);
  } else if (Br == 1) {
    x.out += "  const mx_i64 gi = mx_i64(blockIdx.z) * gridDim.y + blockIdx.y;  // rows interleaved by 32 (row_step)\n";
    x.out += "  const mx_i64 row0 = gi / 32 * 128 + gi % 32;\n";
  }
  x.out += fmt::format("#pragma unroll\n  for (int u = 0; u < {}; ++u) {{\n", U);
  const RowFrame f = row_frame(x, all_vec, "ok[u]", "ix{}_[u]", "    ");
  x.out += f.row_ok + "    cc_[u] = cc0;\n" + f.indices;
  for (size_t k = 0; k < x.p.inputs().size(); ++k)
    if (x.p.inputs()[k].kind == InputDecl::Kind::tensor) emit_chunk_loads(x, int(k));
  for (size_t i = 0; i < dqs.size(); ++i) emit_dequant_loads(x, dqs[i], int(i));
  x.out += "  }\n";
  for (const char* acc : {"tamax", "tamax_fmax"}) {
    bool any = false;
    for (const Output& o : x.p.outputs()) any |= o.kind == OutputKind::amax && amax_accumulator(o) == std::string(acc);
    if (any) x.out += fmt::format("  mx_u32 {}[{}] = {{}};\n", acc, x.v.roots.size());
  }
  // Whole-chunk code stores are aligned when the base and every row stride are (chunks start at
  // multiples of 8 columns): one test per thread instead of one per store.
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    if (x.p.outputs()[size_t(o)].kind != OutputKind::elems || transposed_codes(x, o)) continue;
    const int qi = x.v.output_index[size_t(o)];
    const int bytes = x.v.quantizes[size_t(qi)]->elem.packed() ? 4 : 8;
    std::string bits = fmt::format("reinterpret_cast<mx_u64>(P.out[{}])", o);
    for (int a : row_axes(pl)) bits += fmt::format(" | mx_u64(P.out_stride[{}][{}])", o, a);
    x.out += fmt::format("  const bool oal{} = (({}) & {}u) == 0;\n", o, bits, bytes - 1);
  }
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (x.p.outputs()[size_t(o)].kind == OutputKind::scales && blocked_words(x, o)) x.out += fmt::format("  mx_u32 sb{}[{}] = {{}};  // blocked scale bytes, 4 rows per word\n", o, (U + 3) / 4);
  if (pl.direct().tensorwise) emit_tensorwise_scales(x);
  if (Br > 1) emit_block2d_scales(x);
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (transposed_codes(x, o)) x.out += fmt::format("  uint2 qt{}[{}];  // codes '{}' by row, for emit_transposed_codes\n", o, U, x.p.outputs()[size_t(o)].name);
  bool any_scatter = false;
  for (int s = 0; s < int(x.v.scales.size()); ++s) any_scatter = any_scatter || scatter_scale(x, s);
  if (any_scatter) x.out += "  const int lane = threadIdx.x & 31;\n";
  for (int s = 0; s < int(x.v.scales.size()); ++s)
    if (scatter_scale(x, s)) emit_scatter_rows(x, s, all_vec);
  // With reduce-scattered scales, phase 2 comes twice: for warps without a zero or NaN block of
  // those scales (no flag tests on their codes), and for the others.
  std::string clean_cond;
  for (int s = 0; s < int(x.v.scales.size()); ++s)
    if (gathered(x, s) && !generic_scale(*x.v.scales[size_t(s)]))
      clean_cond += (clean_cond.empty() ? "" : " && ") + scales_clean(s, U, scatter_xors(pl));
  emit_placed_search(x);
  emit_clean_split(x, clean_cond, "  ", [&](bool clean) { emit_phase2(x, dqs, clean); });
  emit_placed_stores(x);
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (transposed_codes(x, o)) emit_transposed_codes(x, o);
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (x.p.outputs()[size_t(o)].kind == OutputKind::scales && blocked_words(x, o)) emit_blocked_words(x, o);
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (x.p.outputs()[size_t(o)].kind == OutputKind::amax) {
      const int r = x.v.output_index[size_t(o)];
      x.out += fmt::format("  mx_block_amax_publish(static_cast<mx_u32*>(P.out[{}]), {}[{}]);\n", o,
                           amax_accumulator(x.p.outputs()[size_t(o)]), r);
    }
  // Grouped layouts whose padding this kernel writes (no launcher memset: Plan::zero_outputs), last,
  // where nothing else is live (at the start the inlined walk spilled the phases' registers).
  for (size_t o = 0; o < x.p.outputs().size(); ++o) {
    if (!kernel_writes_padding(x.p, x.v, pl, int(o))) continue;
    const Output& out = x.p.outputs()[o];
    const int k = x.p.input_index(out.layout.group_offsets()), ga = out.layout.group_axis();
    const int ca = blocked_axes(block_of(x.v.scales.at(size_t(x.v.output_index.at(o)))), pl.rank).second;
    x.out += fmt::format("  // Output '{}' ({}): its padding rows and columns, zeros, by every warp.\n", out.name,
                         out.layout.str());
    x.out += fmt::format(
        "  mx_grouped_rows_pad(static_cast<mx_u8*>(P.out[{}]), static_cast<const int*>(P.in[{}]), P.in_stride[{}][0], "
        "P.in_extent[{}], P.shape[{}], P.out_shape[{}][{}]);\n",
        o, k, k, k, ga, o, ca);
  }
  x.out += "}\n";
}

}  // namespace mxjit::detail
