// The columns kernel: dim1 (and 3-D per-expert, and dim0+dim1 fused) casts without shared memory.
// Each thread holds 16 rows x 8 columns of the 2-byte input in registers (16-byte loads along
// ax_c); a scale block of B rows along ax_r is B/16 neighbouring lanes (amax by shuffles), and
// every column's 16 codes leave as one 16-byte store along ax_r. Lanes of a warp are arranged so
// that one store instruction writes whole 128-byte lines of each column:
//
//   lane = cl * 8 + rg        rg: 16-row group (0..7)     cl: 8-column group (0..3)
//
//            cols c0..c0+7 (cl=0)   c0+8.. (cl=1)   ...           (a warp: 128 rows x 32 cols,
//   rows  0-15   lane 0             lane 8                          a CTA: 8 warps side by side
//   rows 16-31   lane 1             lane 9                          = 128 rows x 256 cols)
//   ...
//   rows 112-127 lane 7             lane 15
//
// Column-wise output: lanes 0..7 store rows 0..127 of one column = one 128-byte line per column.
// Row-wise blocks of 32 (the fused dim0 half) are the 4 lanes cl=0..3 of one rg (shuffles 8, 16).
// Measured on an H200 (hand-written twin of this kernel, 16384^2 bf16 -> MXFP8 dim1): 92% of
// copy bandwidth, against 40-45% when each column got only 32 contiguous bytes per warp store.
#include <fmt/format.h>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

constexpr int kCols = 8;  // columns per thread (16 bytes of a 2-byte input); rows per thread: plan.col_w

// Index of axis `a` in scale-tensor coordinates, given the block coordinate along the blocked
// axis (`blk_axis`, index `blk`) and the element coordinates (r, c) otherwise.
std::string scale_index(const Ctx& x, int a, int blk_axis, const std::string& blk) {
  if (a == blk_axis) return blk;
  return x.idx(a, "r", "c");
}

// A scale write. Blocked layouts get real scales only: the launcher zeroes a scale tensor that
// has padding before the kernel runs, so the hot, unrolled passes carry no padding code.
void emit_scale_write(Ctx& x, int o, int s, int blk_axis, const std::string& blk, const std::string& ind) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const bool f32 = out.dtype == DType::f32;
  const std::string val = stored_scale(out, std::to_string(s));
  const char* t = f32 ? "float" : "mx_u8";
  x.out += fmt::format("{}{{\n{}  {}* const sp = static_cast<{}*>(P.out[{}]);\n", ind, ind, t, t, o);
  if (!out.layout.is_blocked()) {
    std::string off;
    for (int a = 0; a < pl.rank; ++a)
      off += fmt::format("{}({}) * P.out_stride[{}][{}]", off.empty() ? "" : " + ", scale_index(x, a, blk_axis, blk), o, a);
    x.out += fmt::format("{}  sp[{}] = {};\n{}}}\n", ind, off, val, ind);
    return;
  }
  auto [ra, ca] = blocked_axes(block_of(x.v.scales[size_t(s)]), pl.rank);
  const int ar = out.layout.atom_rows(), ac = out.layout.atom_cols();
  std::string b = "0";
  for (int a = 0; a < pl.rank; ++a)
    if (a != ra && a != ca) b = fmt::format("({}) * P.out_shape[{}][{}] + {}", b, o, a, scale_index(x, a, blk_axis, blk));
  // 32-bit in-batch offsets (the launcher refuses blocked scale tensors of 4 GiB or more).
  x.out += fmt::format("{}  const unsigned R = unsigned({}), C = unsigned({}), nR = unsigned(P.out_shape[{}][{}]), nC = unsigned(P.out_shape[{}][{}]);\n",
                       ind, scale_index(x, ra, blk_axis, blk), scale_index(x, ca, blk_axis, blk), o, ra, o, ca);
  x.out += fmt::format("{}  const unsigned Cp = (nC + {} - 1) / {} * {};\n", ind, ac, ac, ac);
  const std::string base = b == "0" ? "0" : fmt::format("({}) * mx_i64((nR + {} - 1) / {} * {}) * Cp", b, ar, ar, ar);
  x.out += fmt::format("{}  (void)nC;\n{}  sp[{} + mx_blocked_offset32<{}, {}>(R, C, Cp)] = {};\n{}}}\n", ind, ind, base, ar, ac, val, ind);
}

// The values of root `root` for `n` elements of a row or column into arr[0..n) (loop variable
// `var`, 0 out of range). Register-only expressions are computed unguarded and masked on the
// tail path only; expressions that load (vec inputs, dequant) are guarded per element.
void emit_values(Ctx& x, int root, const std::string& arr, const std::string& var, int n, const std::string& ind) {
  std::string body;
  ExprEmitter em([&](const NodePtr& nd) -> std::string {
    if (nd->op == Op::input) {
      const InputDecl& d = x.p.inputs()[size_t(x.p.input_index(nd->name))];
      const int k = x.p.input_index(nd->name);
      if (d.dtype == DType::bf16) return fmt::format("mx_float((c & 1) ? (w{0}[r][c >> 1] & 0xffff0000u) : (w{0}[r][c >> 1] << 16))", k);
      return fmt::format("mx_f16_to_f32(mx_u16((c & 1) ? (w{0}[r][c >> 1] >> 16) : (w{0}[r][c >> 1] & 0xffffu)))", k);
    }
    return leaf_expr(x, nd);
  }, "t");
  const NodePtr& rn = x.v.roots[size_t(root)];
  std::string v = em.emit(rn, body, ind + "  ");
  const std::string in = "r0 + r < n_r && c0 + c < n_c";
  x.out += fmt::format("{}float {}[{}];\n#pragma unroll\n{}for (int {} = 0; {} < {}; ++{}) {{\n", ind, arr, n, ind, var, var, n, var);
  if (register_leaves(rn)) {
    x.out += fmt::format("{}{}  {}[{}] = {};\n{}}}\n", body, ind, arr, var, v, ind);
    // A bare input needs no mask: the loads leave +0 bits out of range. Only with one scale: in
    // the fused dim0+dim1 kernel the unmasked values raised ptxas's spills from 136 to 376 bytes.
    if (rn->op != Op::input || x.v.scales.size() > 1)
      x.out += fmt::format("{}if (!(rows_full && cols_full)) {{\n#pragma unroll\n{}  for (int {} = 0; {} < {}; ++{}) if (!({})) {}[{}] = 0.0f;\n{}}}\n",
                           ind, ind, var, var, n, var, in, arr, var, ind);
  } else {
    x.out += fmt::format("{}  if (!((rows_full && cols_full) || ({}))) {{ {}[{}] = 0.0f; continue; }}\n{}{}  {}[{}] = {};\n{}}}\n", ind, in,
                         arr, var, body, ind, arr, var, v, ind);
  }
}

void emit_amax_of(Ctx& x, int s, const std::string& arr, int n, const std::vector<int>& xors, const std::string& ind) {
  x.out += fmt::format("{0}mx_u32 m = 0u;\n#pragma unroll\n{0}for (int e = 0; e < {1}; ++e) {{ mx_u32 a = mx_bits({2}[e]) & 0x7fffffffu; {3}m = a > m ? a : m; }}\n",
                       ind, n, arr, x.v.scale_flush[size_t(s)] ? "if (a < 0x00800000u) a = 0u; " : "");
  for (int o : xors) x.out += fmt::format("{}{{ const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, m, {}); m = o_ > m ? o_ : m; }}\n", ind, o);
  x.out += scale_from_amax(x.v.scales[size_t(s)], ind);
  x.out += fmt::format("{0}const mx_u32 byte{1} = byte, flag{1} = flag;\n{0}const float mult{1} = mult, sval{1} = sval;\n{0}(void)byte{1}; (void)sval{1};\n",
                       ind, s);
}

// True (a C expression, the same for every thread) when output o's code stores of `bytes` bytes
// along `unit` are all aligned: unit stride there, and base and other strides multiples of
// `bytes` (a thread's first row or column is a multiple of its rows or columns per thread).
std::string stores_aligned(const Ctx& x, int o, int unit, int bytes) {
  std::string bits = fmt::format("reinterpret_cast<mx_u64>(P.out[{}])", o);
  for (int a = 0; a < x.plan.rank; ++a)
    if (a != unit) bits += fmt::format(" | mx_u64(P.out_stride[{}][{}])", o, a);
  return fmt::format("(P.out_stride[{}][{}] == 1 && (({}) & {}u) == 0)", o, unit, bits, bytes - 1);
}

// Outputs that use scale s: its scales outputs and the elems of its quantizes.
void emit_uses(Ctx& x, int s, bool along_r, int blk_axis, const std::string& blk, const std::string& ind,
               const std::string& scale_cond, const std::string& arr) {
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind == OutputKind::scales && x.v.output_index[size_t(o)] == s) {
      x.out += fmt::format("{}if ({}) {{\n", ind, scale_cond);
      emit_scale_write(x, o, s, blk_axis, blk, ind + "  ");
      x.out += ind + "}\n";
    }
  }
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::elems) continue;
    const int qi = x.v.output_index[size_t(o)];
    if (x.v.quantize_scale[size_t(qi)] != s) continue;
    const NodePtr& q = x.v.quantizes[size_t(qi)];
    const int n = along_r ? x.plan.col_w : kCols;
    x.out += fmt::format("{}{{  // output '{}' ({})\n", ind, out.name, q->elem.str());
    emit_packed_codes(x, q, s, arr, n, [&](int h) {
      const std::string e = fmt::format("(e + {})", h);
      return along_r ? x.linear_index(e, "c") : x.linear_index("r", e);
    }, ind + "  ");
    const int packed = q->elem.packed() ? (along_r ? x.plan.ax_r : x.plan.ax_c) : -1;
    x.out += fmt::format("{}  mx_u8* const ob = static_cast<mx_u8*>(P.out[{}]) + ({});\n", ind, o, x.out_offset(o, "r", "c", packed));
    const int bytes = q->elem.packed() ? n / 2 : n;
    if (along_r)
      emit_store_codes(x, q, n, "rows_full && c0 + c < n_c && " + stores_aligned(x, o, x.plan.ax_r, bytes),
                       "r0 + e < n_r && c0 + c < n_c", ind + "  ", true);
    else
      emit_store_codes(x, q, n, "cols_full && r0 + r < n_r && " + stores_aligned(x, o, x.plan.ax_c, bytes),
                       "r0 + r < n_r && c0 + e < n_c", ind + "  ", true);
    x.out += ind + "}\n";
  }
}

}  // namespace

void emit_columns_kernel(Ctx& x) {
  const Plan& pl = x.plan;
  const int kRows = pl.col_w, lanes_r = pl.tile_r / kRows;  // lanes along rows: 8 (16 rows each) or 16 (8 rows)
  x.out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const MxParams P) {{\n", pl.threads, pl.min_blocks,
                       pl.kernel_name);
  // Row tiles run fastest over the grid: neighbouring CTAs complete each column's lines together.
  // 32-bit decomposition (a 64-bit division is a long subroutine): the launcher checks that every
  // extent and tile count fits in 31 bits.
  x.out += "  unsigned t = blockIdx.x;\n  const mx_i64 tr = t % unsigned(P.tiles_r); t /= unsigned(P.tiles_r);\n";
  x.out += "  const mx_i64 tc = t % unsigned(P.tiles_c); t /= unsigned(P.tiles_c);\n";
  for (auto it = pl.batch_axes.rbegin(); it != pl.batch_axes.rend(); ++it)
    x.out += fmt::format("  const mx_i64 bi{0} = t % unsigned(P.shape[{0}]); t /= unsigned(P.shape[{0}]);\n", *it);
  x.out += fmt::format("  const int lane = threadIdx.x & 31, rg = lane % {0}, cl = lane / {0}, warp = threadIdx.x >> 5;\n", lanes_r);
  x.out += fmt::format("  const mx_i64 r0 = tr * {} + rg * {};  // this thread's rows r0 .. r0+{} (axis {})\n", pl.tile_r, kRows, kRows - 1, pl.ax_r);
  x.out += fmt::format("  const mx_i64 c0 = tc * {} + warp * {} + cl * {};  // columns c0 .. c0+{} (axis {})\n", pl.tile_c, 32 / lanes_r * kCols, kCols, kCols - 1, pl.ax_c);
  x.out += fmt::format("  const mx_i64 n_r = P.shape[{}], n_c = P.shape[{}];\n", pl.ax_r, pl.ax_c);
  x.out += fmt::format("  const bool rows_full = r0 + {} <= n_r, cols_full = c0 + {} <= n_c;\n", kRows, kCols);
  x.out += "  (void)rows_full; (void)cols_full;\n";
  // Loads: 16 rows of 16 bytes, all issued before any is used.
  for (size_t k = 0; k < x.p.inputs().size(); ++k) {
    if (x.p.inputs()[k].kind != InputDecl::tensor) continue;
    x.out += fmt::format("  mx_u32 w{}[{}][4];\n#pragma unroll\n  for (int r = 0; r < {}; ++r) {{\n", k, kRows, kRows);
    x.out += "    const int c = 0;\n";
    x.out += fmt::format("    const mx_u16* const p = static_cast<const mx_u16*>(P.in[{}]) + ({});\n", k, x.in_offset(int(k), "r", "c"));
    x.out += fmt::format("    if (cols_full && r0 + r < n_r) {{\n      const mx_v16 v = mx_ld16(p);\n      w{0}[r][0] = v.x; w{0}[r][1] = v.y; w{0}[r][2] = v.z; w{0}[r][3] = v.w;\n", k);
    x.out += "    } else {\n";
    x.out += fmt::format("      for (int e = 0; e < 4; ++e) w{}[r][e] = 0u;\n", k);
    x.out += fmt::format("      if (r0 + r < n_r) for (int e = 0; e < {}; ++e) if (c0 + e < n_c) w{}[r][e >> 1] |= mx_u32(p[e]) << (16 * (e & 1));\n", kCols, k);
    x.out += "    }\n  }\n";
  }
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    const BlockSpec& b = block_of(x.v.scales[size_t(s)]);
    const int root = x.v.scale_root[size_t(s)];
    const int64_t bs = b.sizes[0];
    if (b.axes[0] == pl.ax_r) {
      const int lanes = int(bs / kRows);
      std::vector<int> xors;
      for (int l = lanes / 2; l >= 1; l /= 2) xors.push_back(l);
      x.out += fmt::format("  // Scales {}: blocks of {} along axis {} ({} lanes), column by column.\n", s, bs, pl.ax_r, lanes);
      x.out += fmt::format("#pragma unroll\n  for (int c = 0; c < {}; ++c) {{\n", kCols);
      emit_values(x, root, "col", "r", kRows, "    ");
      x.out += "    {\n";
      emit_amax_of(x, s, "col", kRows, xors, "      ");
      x.out += "      const int r = 0;\n";
      emit_uses(x, s, true, pl.ax_r, fmt::format("((r0 + r) / {})", bs), "      ",
                fmt::format("(rg % {}) == 0 && r0 < n_r && c0 + c < n_c", lanes), "col");
      x.out += "    }\n  }\n";
    } else {
      x.out += fmt::format("  // Scales {}: blocks of {} along axis {} (4 lanes), row by row.\n", s, bs, pl.ax_c);
      x.out += fmt::format("#pragma unroll\n  for (int r = 0; r < {}; ++r) {{\n", kRows);
      emit_values(x, root, "row", "c", kCols, "    ");
      x.out += "    {\n";
      emit_amax_of(x, s, "row", kCols, {lanes_r, 2 * lanes_r}, "      ");
      x.out += "      const int c = 0;\n";
      emit_uses(x, s, false, pl.ax_c, fmt::format("((c0 + c) / {})", bs), "      ", "cl == 0 && r0 + r < n_r && c0 < n_c", "row");
      x.out += "    }\n  }\n";
    }
  }
  x.out += "}\n";
}

}  // namespace mxjit::detail
