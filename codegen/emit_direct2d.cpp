// The direct kernel's 2-D blocks (DirectPlan::block_rows): one CTA a block_rows x block_cols
// block, lane_c = threadIdx.x % G across its columns (8 each), rt = threadIdx.x / G down its rows
// (U consecutive rows each), every chunk loaded before the block amax is known.
//
//   block 128x128, 256 threads (G = 16, U = 8):  thread (lane_c, rt) holds rows 8 rt .. 8 rt + 7
//                                                 x columns 8 lane_c .. 8 lane_c + 7
//
// Codes stored transposed (rows innermost: torchao's column-major weight codes, Transformer
// Engine's columnwise usage) go through a shared tile so that the global stores run along the
// rows, 16 bytes a thread.
#include <fmt/format.h>

#include "codegen/emit_direct2d.hpp"
#include "codegen/scale_expr_cuda.hpp"

namespace mxjit::detail {

bool transposed_codes(const Ctx& x, int o) { return x.plan.direct().block_rows > 1 && codes_along_rows(x.p, x.plan, o); }

Block2d block2d_kind(const Ctx& x, int s) { return block2d_kind(block_of(x.v.scales[size_t(s)]), x.plan); }

bool phase2_scale(const Ctx& x, int s) {
  const DirectPlan& d = x.plan.direct();
  return !d.tensorwise && (d.block_rows == 1 || block2d_kind(x, s) == Block2d::row);
}

namespace {

// The tile's (row, column) offset of scales output o: its block column `col` and thread 0's rows.
std::string scale2d_offset(const Ctx& x, int o, const std::string& col) {
  const Plan& pl = x.plan;
  std::string off = fmt::format("mx_i64({}) * P.out_stride[{}][{}]", col, o, pl.ax_c);
  for (int a : row_axes(pl))
    off += a == pl.ax_r ? fmt::format(" + mx_i64(ix{}_[0] / {}) * P.out_stride[{}][{}]", a, pl.direct().block_rows, o, a)
                        : fmt::format(" + mx_i64(ix{}_[0]) * P.out_stride[{}][{}]", a, o, a);
  return off;
}

// `base` += output o's offset of the block's outer row indices (every row axis but ax_r), taken
// from gi = outer index x block rows + block row (a thread's own ix may lie past the last row, in
// the next outer index), at indent `in`.
std::string outer_rows_offset(const Ctx& x, int o, const std::string& base, const std::string& in) {
  const Plan& pl = x.plan;
  const std::vector<int> ra = row_axes(pl);
  if (ra.size() < 2) return "";
  std::string l = in + "{\n" + in + "  mx_i64 oi = gi / nbr;\n";
  for (auto it = ra.rbegin(); it != ra.rend(); ++it)
    if (*it != pl.ax_r)
      l += fmt::format(
          "{0}  {{ const mx_i64 i_ = oi % P.shape[{1}]; oi /= P.shape[{1}]; {2} += i_ * P.out_stride[{3}][{1}]; }}\n",
          in, *it, base, o);
  return l + in + "}\n";
}

// Column-block scale s: each column's packed |x| maximum over the thread's rows (cw[i]: columns
// 2i, 2i+1), over the warp's rows of the same columns by shuffles, into shared memory.
void emit_column_partials(Ctx& x, int s) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread, G = pl.direct().lanes_per_block, k = words_input(x, s);
  // NaN-skipping maxima from +0 never give NaN (max without .NaN); NaN-keeping ones keep it.
  const std::string fn = drops_nan(x, s) ? (x.p.inputs()[size_t(k)].dtype == DType::f16 ? "mx_max_f16x2_num" : "mx_max_bf16x2_num")
                                         : packed_max_fn(x, k);
  x.out += fmt::format("  {{  // scale {}: column blocks, each column's maximum over the block's rows\n", s);
  x.out += "    mx_u32 cw[4] = {0u, 0u, 0u, 0u};\n";
  x.out += fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", U);
  const char* f[4] = {"x", "y", "z", "w"};
  for (int i = 0; i < 4; ++i) x.out += fmt::format("      cw[{0}] = {1}(cw[{0}], r{2}_[u][0].{3} & 0x7fff7fffu);\n", i, fn, k, f[i]);
  x.out += "    }\n";
  for (int off = G; off < 32; off *= 2)
    x.out += fmt::format("#pragma unroll\n    for (int i = 0; i < 4; ++i) cw[i] = {}(cw[i], __shfl_xor_sync(0xffffffffu, cw[i], {}));\n", fn, off);
  x.out += fmt::format("    if ((threadIdx.x & 31u) < {}u)\n#pragma unroll\n      for (int i = 0; i < 4; ++i) mx_cmax{}[threadIdx.x >> 5][lane_c][i] = cw[i];\n  }}\n", G, s);
}

// Column-block scale s after the barrier: one column a thread (the first B threads, B = the block's
// columns) takes the column's maximum over the warps and its scale, stores it, and leaves its flag
// and multiplier in shared memory; after a second barrier each thread reads its 8 columns' (mult<s>[e],
// the codes' keep / fill masks as the jagged kernel's). Each thread computing its own 8 columns'
// scales computed every scale 16 times (docs/perf-log.md#direct2d-column-scales).
void emit_column_scales(Ctx& x, int s) {
  const Plan& pl = x.plan;
  const int nw = pl.threads / 32, k = words_input(x, s), B = pl.direct().block_cols;
  const NodePtr* q = nullptr;
  for (size_t i = 0; i < x.v.quantizes.size(); ++i)
    if (x.v.quantize_scale[i] == s) q = &x.v.quantizes[i];
  const bool stored = scale_stored(x, s), coded = scale_coded(x, s);
  // The codes' flags and multipliers pass through shared memory.
  if (coded)
    x.out += fmt::format(
        "  __shared__ __align__(16) mx_u32 mx_cflag{0}[{1}];\n  __shared__ __align__(16) float mx_cmult{0}[{1}];\n", s,
        B);
  x.out += B <= pl.threads
               ? fmt::format("  if (const unsigned c_ = threadIdx.x; c_ < {}u) {{  // one column a thread\n", B)
               : fmt::format("  for (unsigned c_ = threadIdx.x; c_ < {}u; c_ += {}u) {{  // one column a thread\n", B,
                             pl.threads);
  x.out += fmt::format("    mx_u32 w_ = mx_cmax{}[0][c_ / 8u][c_ % 8u / 2u];\n", s);
  if (nw > 1)
    x.out += fmt::format(
        "#pragma unroll\n    for (int i = 1; i < {}; ++i) w_ = {}(w_, mx_cmax{}[i][c_ / 8u][c_ % 8u / 2u]);\n", nw,
        packed_max_fn(x, k), s);
  x.out += fmt::format("    mx_u32 m = (c_ & 1u) ? {} : {};\n", widen_half(x, k, "w_", 1), widen_half(x, k, "w_", 0));
  if (x.v.scale_flush[size_t(s)]) x.out += "    if (m < 0x00800000u) m = 0u;\n";
  x.out += scale_from_amax(x.v.scales[size_t(s)], "    ", "", stored, coded);
  if (coded) x.out += fmt::format("    mx_cflag{0}[c_] = flag;\n    mx_cmult{0}[c_] = mult;\n", s);
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales || x.v.output_index[size_t(o)] != s) continue;
    x.out +=
        fmt::format("    if (gi < rows && int(blockIdx.x) * {} + int(c_) < n_c) {{  // scales '{}'\n", B, out.name);
    x.out += fmt::format(
        "      mx_i64 off = mx_i64(blockIdx.x * {}u + c_) * P.out_stride[{}][{}] + gi % nbr * P.out_stride[{}][{}];\n",
        B, o, pl.ax_c, o, pl.ax_r);
    x.out += outer_rows_offset(x, o, "off", "      ");
    x.out += fmt::format("      static_cast<{}*>(P.out[{}])[off] = {};\n    }}\n", scale_ctype(out.dtype), o,
                         stored_scale(out, ""));
  }
  x.out += "  }\n  __syncthreads();\n";
  // This thread's 8 columns' flags and multipliers.
  if (coded) {
    x.out += scale_slot_decls(x, s, false, true, "  ", "[8]");
    x.out += fmt::format(
        "#pragma unroll\n  for (int e = 0; e < 8; ++e) {{ flag{0}[e] = mx_cflag{0}[lane_c * 8 + e]; mult{0}[e] = mx_cmult{0}[lane_c * 8 + e]; }}\n",
        s);
  }
  if (q) {
    x.out += fmt::format("  mx_u32 keep{0}[2], fill{0}[2];  // per code byte: kept, or the zero / NaN block's fill\n", s);
    x.out += fmt::format("#pragma unroll\n  for (int w = 0; w < 2; ++w) {{\n    keep{0}[w] = 0u; fill{0}[w] = 0u;\n#pragma unroll\n    for (int j = 0; j < 4; ++j) {{\n", s);
    x.out += fmt::format("      const mx_u32 f = flag{0}[w * 4 + j];\n      keep{0}[w] |= (f == 0u ? 255u : 0u) << (8 * j);\n      fill{0}[w] |= (f == 2u ? {1}u : 0u) << (8 * j);\n    }}\n  }}\n",
                         s, nan_code((*q)->elem));
  }
}

}  // namespace

// Tile scales: each thread's packed |x| maximum over its chunks' words, the warp's by shuffles, the
// CTA's through shared memory (one barrier); thread 0 stores them. Column scales: emit_column_*.
void emit_block2d_scales(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread, G = pl.direct().lanes_per_block, nw = pl.threads / 32;
  const int S = int(x.v.scales.size());
  std::vector<int> tiles, columns;
  for (int s = 0; s < S; ++s) {
    if (block2d_kind(x, s) == Block2d::tile) tiles.push_back(s);
    if (block2d_kind(x, s) == Block2d::column) columns.push_back(s);
  }
  x.out += "  // 2-D blocks: tile and column blocks' maxima (this thread's chunks, the warp, the CTA), then their scales.\n";
  if (!tiles.empty()) x.out += fmt::format("  __shared__ mx_u32 mx_wmax[{}][{}];\n", S, nw);
  for (int s : columns) x.out += fmt::format("  __shared__ mx_u32 mx_cmax{}[{}][{}][4];\n", s, nw, G);
  for (int s : tiles) {
    const int k = words_input(x, s);
    const std::string w = fmt::format("r{}_[u][0]", k);
    x.out += fmt::format("  {{\n    mx_u32 pw = 0u;\n#pragma unroll\n    for (int u = 0; u < {}; ++u) pw = {}(pw, {});\n", U,
                         packed_max_fn(x, k), packed_abs_max4(x, k, w + ".x", w + ".y", w + ".z", w + ".w", drops_nan(x, s)));
    x.out += fmt::format("    mx_u32 m = {};\n", widen_half(x, k, "pw", -1));
    if (x.v.scale_flush[size_t(s)]) x.out += "    if (m < 0x00800000u) m = 0u;\n";
    for (int off = 16; off >= 1; off /= 2)
      x.out += fmt::format("    {{ const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, m, {}); m = o_ > m ? o_ : m; }}\n", off);
    x.out += fmt::format("    if ((threadIdx.x & 31u) == 0) mx_wmax[{}][threadIdx.x >> 5] = m;\n  }}\n", s);
  }
  for (int s : columns) emit_column_partials(x, s);
  if (tiles.empty() && columns.empty()) return;
  x.out += "  __syncthreads();\n";
  for (int s : tiles) {
    const bool stored = scale_stored(x, s), coded = scale_coded(x, s);
    x.out += scale_slot_decls(x, s, stored, coded, "  ") + fmt::format("  {{\n    mx_u32 m = mx_wmax[{0}][0];\n", s);
    if (nw > 1) x.out += fmt::format("#pragma unroll\n    for (int w_ = 1; w_ < {}; ++w_) m = mx_wmax[{}][w_] > m ? mx_wmax[{}][w_] : m;\n", nw, s, s);
    x.out += scale_from_amax(x.v.scales[size_t(s)], "    ", "", stored, coded);
    x.out += scale_slot_copy(x, s, stored, coded, "    ") + "  }\n";
  }
  for (int s : columns) emit_column_scales(x, s);
  std::string stores;
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales || block2d_kind(x, x.v.output_index[size_t(o)]) != Block2d::tile) continue;
    stores += fmt::format("    static_cast<{}*>(P.out[{}])[{}] = {};\n", scale_ctype(out.dtype), o,
                          scale2d_offset(x, o, fmt::format("cc0 / {}", pl.direct().block_cols)),
                          stored_scale(out, std::to_string(x.v.output_index[size_t(o)])));
  }
  if (!stores.empty())
    x.out += "  if (threadIdx.x == 0 && ok[0]) {  // the tiles' scales: row 0 of the block, its first chunk\n" + stores + "  }\n";
}

// Thread (lane_c, rt) holds codes of rows 8 rt + u (qt<o>[u], columns 8 lane_c + 0..7). Four 4x4
// byte transposes (as emit_blocked_line) turn them into 8 bytes a column (rows 8 rt .. 8 rt + 7),
// written to a shared tile of 8-row granules whose order a column's lane XOR-swizzles, so that the
// G lanes of one rt write G different banks; then each thread stores 16 rows of one column:
//
//   tile mx_t<o>[c][g ^ (c / 8 % NG)] = rows 8g .. 8g+7 of column c          (NG = block_rows / 8)
//   read pass p (of 4): column 2G p + t / (NG/2), granules 2k and 2k+1 (k = t % (NG/2)) -> one
//   16-byte store at (column, rows 16k .. 16k+15) of the block
void emit_transposed_codes(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const int G = pl.direct().lanes_per_block, B = pl.direct().block_cols, NG = pl.direct().block_rows / 8, tpc = NG / 2;
  x.out += fmt::format("  {{  // codes '{}' transposed: 8x8 byte transposes, a shared tile, 16-byte stores along the rows\n", out.name);
  x.out += fmt::format("    __shared__ uint2 mx_t{}[{}][{}];\n", o, B, NG);
  x.out += fmt::format("    const unsigned key = lane_c % {}u;\n", NG);
  for (int h = 0; h < 2; ++h) {  // columns 0-3 from the low words, 4-7 from the high words
    const char* f = h ? "y" : "x";
    for (int rb = 0; rb < 2; ++rb) {
      const int u0 = 4 * rb;
      x.out += fmt::format(
          "    const mx_v16 t{0}{1} = mx_transpose4x4(qt{2}[{3}].{4}, qt{2}[{5}].{4}, qt{2}[{6}].{4}, qt{2}[{7}].{4});\n",
          h, rb, o, u0, f, u0 + 1, u0 + 2, u0 + 3);
    }
  }
  for (int j = 0; j < 8; ++j)
    x.out += fmt::format("    mx_t{0}[lane_c * 8 + {1}][rt ^ key] = make_uint2(t{2}0.{3}, t{2}1.{3});\n", o, j, j / 4,
                         "xyzw"[j % 4]);
  x.out += "    __syncthreads();\n";
  // The block's outer row indices from gi (a thread's own ix may lie past the last row, in the
  // next index of the outer axes), then its first column and row.
  const std::vector<int> ra = row_axes(pl);
  x.out += "    mx_i64 obase = 0;\n" + outer_rows_offset(x, o, "obase", "    ");
  const std::string base = fmt::format("obase + mx_i64(blockIdx.x) * {} * P.out_stride[{}][{}]", B, o, pl.ax_c);
  std::string bits = fmt::format("reinterpret_cast<mx_u64>(P.out[{}]) | mx_u64(P.out_stride[{}][{}])", o, o, pl.ax_c);
  for (int a : ra)
    if (a != pl.ax_r) bits += fmt::format(" | mx_u64(P.out_stride[{}][{}])", o, a);
  x.out += fmt::format("    const bool al = (({}) & 15u) == 0;\n", bits);
  x.out += fmt::format("    const unsigned k = threadIdx.x % {}u;\n", tpc);
  x.out += fmt::format("    mx_u8* const ob0 = static_cast<mx_u8*>(P.out[{}]) + ({}) + rblk + 16 * k;\n", o, base);
  x.out += "#pragma unroll\n    for (int p_ = 0; p_ < 4; ++p_) {\n";
  x.out += fmt::format("      const unsigned c = p_ * {}u + threadIdx.x / {}u, kk = c / 8u % {}u;\n", 2 * G, tpc, NG);
  x.out += fmt::format("      const uint2 g0 = mx_t{0}[c][(2u * k) ^ kk], g1 = mx_t{0}[c][(2u * k + 1u) ^ kk];\n", o);
  x.out += fmt::format("      const mx_i64 r = rblk + 16 * k;  // the thread's first row along axis {}\n", pl.ax_r);
  x.out += fmt::format("      if (gi >= rows || int(blockIdx.x) * {} + int(c) >= n_c) continue;\n", B);
  x.out += fmt::format("      mx_u8* const ob = ob0 + mx_i64(c) * P.out_stride[{}][{}];\n", o, pl.ax_c);
  x.out += fmt::format("      if (al && r + 16 <= P.shape[{}]) mx_st16(ob, mx_v16{{g0.x, g0.y, g1.x, g1.y}});\n", pl.ax_r);
  x.out += "      else {\n        const mx_u32 w[4] = {g0.x, g0.y, g1.x, g1.y};\n";
  x.out += fmt::format("        for (int e = 0; e < 16; ++e) if (r + e < P.shape[{}]) ob[e] = mx_u8(w[e >> 2] >> (8 * (e & 3)));\n      }}\n", pl.ax_r);
  x.out += "    }\n  }\n";
}

}  // namespace mxjit::detail
