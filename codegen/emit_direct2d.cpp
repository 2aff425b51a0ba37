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

bool transposed_codes(const Ctx& x, int o) {
  const Output& out = x.p.outputs()[size_t(o)];
  return x.plan.direct().block_rows > 1 && out.kind == OutputKind::elems && out.layout.order(x.p.rank()).back() == x.plan.ax_r;
}

// Each thread's packed |x| maximum over its chunks' words, the warp's by shuffles, the CTA's
// through shared memory (one barrier); the scales at the block's (row, column) index.
void emit_block2d_scales(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.direct().chunks_per_thread, Br = pl.direct().block_rows, nw = pl.threads / 32;
  const int S = int(x.v.scales.size());
  x.out += "  // 2-D blocks: the block amax (this thread's chunks, the warp, the CTA), then its scales.\n";
  x.out += fmt::format("  __shared__ mx_u32 mx_wmax[{}][{}];\n", S, nw);
  for (int s = 0; s < S; ++s) {
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
  x.out += "  __syncthreads();\n";
  for (int s = 0; s < S; ++s) {
    x.out += fmt::format("  mx_u32 byte{0}, flag{0};\n  float mult{0}, sval{0};\n  {{\n    mx_u32 m = mx_wmax[{0}][0];\n", s);
    if (nw > 1) x.out += fmt::format("#pragma unroll\n    for (int w_ = 1; w_ < {}; ++w_) m = mx_wmax[{}][w_] > m ? mx_wmax[{}][w_] : m;\n", nw, s, s);
    x.out += scale_from_amax(x.v.scales[size_t(s)], "    ");
    x.out += fmt::format("    byte{0} = byte; flag{0} = flag; mult{0} = mult; sval{0} = sval;\n  }}\n", s);
  }
  const std::vector<int> ra = row_axes(pl);
  x.out += "  if (threadIdx.x == 0 && ok[0]) {  // the block's scales: row 0 of the block, its first chunk\n";
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales) continue;
    std::string off = fmt::format("mx_i64(cc0 / {}) * P.out_stride[{}][{}]", pl.direct().block_cols, o, pl.ax_c);
    for (int a : ra)
      off += a == pl.ax_r ? fmt::format(" + mx_i64(ix{}_[0] / {}) * P.out_stride[{}][{}]", a, Br, o, a)
                          : fmt::format(" + mx_i64(ix{}_[0]) * P.out_stride[{}][{}]", a, o, a);
    x.out += fmt::format("    static_cast<{}*>(P.out[{}])[{}] = {};\n", scale_ctype(out.dtype), o, off,
                         stored_scale(out, std::to_string(x.v.output_index[size_t(o)])));
  }
  x.out += "  }\n";
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
      x.out += fmt::format("    mx_u32 t{0}{1}[4];\n    {{\n", h, rb);
      x.out += fmt::format("      const mx_u32 ab0 = __byte_perm(qt{0}[{1}].{2}, qt{0}[{3}].{2}, 0x5140), ab1 = __byte_perm(qt{0}[{1}].{2}, qt{0}[{3}].{2}, 0x7362);\n",
                           o, u0, f, u0 + 1);
      x.out += fmt::format("      const mx_u32 cd0 = __byte_perm(qt{0}[{1}].{2}, qt{0}[{3}].{2}, 0x5140), cd1 = __byte_perm(qt{0}[{1}].{2}, qt{0}[{3}].{2}, 0x7362);\n",
                           o, u0 + 2, f, u0 + 3);
      x.out += fmt::format("      t{0}{1}[0] = __byte_perm(ab0, cd0, 0x5410); t{0}{1}[1] = __byte_perm(ab0, cd0, 0x7632);\n", h, rb);
      x.out += fmt::format("      t{0}{1}[2] = __byte_perm(ab1, cd1, 0x5410); t{0}{1}[3] = __byte_perm(ab1, cd1, 0x7632);\n    }}\n", h, rb);
    }
  }
  for (int j = 0; j < 8; ++j)
    x.out += fmt::format("    mx_t{0}[lane_c * 8 + {1}][rt ^ key] = make_uint2(t{2}0[{3}], t{2}1[{3}]);\n", o, j, j / 4, j % 4);
  x.out += "    __syncthreads();\n";
  // The block's outer row indices from gi (a thread's own ix may lie past the last row, in the
  // next index of the outer axes), then its first column and row.
  const std::vector<int> ra = row_axes(pl);
  x.out += "    mx_i64 obase = 0;\n";
  if (ra.size() > 1) {
    x.out += "    {\n      mx_i64 oi = gi / nbr;\n";
    for (auto it = ra.rbegin(); it != ra.rend(); ++it)
      if (*it != pl.ax_r)
        x.out += fmt::format("      {{ const mx_i64 i_ = oi % P.shape[{0}]; oi /= P.shape[{0}]; obase += i_ * P.out_stride[{1}][{0}]; }}\n", *it, o);
    x.out += "    }\n";
  }
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
