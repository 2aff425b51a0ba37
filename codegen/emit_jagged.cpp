// The jagged kernel: jagged groups along ax_r (MoE token groups from a device offsets array,
// no host synchronisation); pass 1 reads a group's rows for its column maxima, pass 2 reads them
// again and writes codes. Three forms (JaggedPlan):
//   scalar  one thread per column, one element per load (any strides and types); `lanes`: a warp
//           per column, its lanes on consecutive rows (inputs unit-stride along the groups);
//   vector  a CTA per (group, 32..256 columns), 16-byte loads, a shared-memory row cache, codes
//           row-major or, in runs of rows transposed in registers, column-major; it also serves
//           the rows kernel's whole-axis casts across lines (emit_whole_columns_kernel).
// A last "group" G covers the rows past the final end (their codes are 0, as in the reference).
//
//   rows  0 .. e0     | group 0: one scale per column  -> s[0, c]
//         e0 .. e1    | group 1                         -> s[1, c]
//         ...         | (empty groups are zero blocks)
//         e[G-1] .. N | no group: codes 0
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "codegen/plan_rules.hpp"
#include "codegen/scale_expr_cuda.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {

namespace {

// " + ix<b> * P.<what>_stride[i][b]" over the axes other than ax_r and ax_c (the grid rows of
// the whole-axis form; none for jagged groups).
std::string batch_offset(const Ctx& x, const char* what, int i) {
  std::string s;
  for (int a = 0; a < x.plan.rank; ++a)
    if (a != x.plan.ax_r && a != x.plan.ax_c) s += fmt::format(" + ix{} * P.{}_stride[{}][{}]", a, what, i, a);
  return s;
}

// `e` plus the batch offset, parenthesised where there is one.
std::string plus_batch(const Ctx& x, const std::string& e, const char* what, int i) {
  const std::string b = batch_offset(x, what, i);
  return b.empty() ? e : "(" + e + b + ")";
}

// Stores the scale of group g (the whole axis: its one block), column c (scale_from_amax's
// byte/sval) into every scales output, where `cond` holds.
void store_group_scales(Ctx& x, const std::string& cond, const std::string& ind, bool whole = false) {
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales) continue;
    const std::string row = whole ? "" : fmt::format("g * P.out_stride[{}][{}] + ", o, x.plan.ax_r);
    x.out += fmt::format("{}if ({}) static_cast<{}*>(P.out[{}])[{}c * P.out_stride[{}][{}]{}] = {};\n", ind, cond, scale_ctype(out.dtype), o,
                         row, o, x.plan.ax_c, batch_offset(x, "out", o), stored_scale(out, ""));
  }
}

// The scalar kernel: one thread per column, one element per load (any strides and types). With
// JaggedPlan::lanes (the input unit-stride along the group axis), a warp per column instead, its
// lanes on consecutive rows of the group (coalesced loads and code stores), the maximum reduced
// across the warp. Both passes load JaggedPlan::rows_in_flight (R) rows before using any:
//
//   column c (a row of a row-major input), group g:  rows row_s .. row_e-1
//     thread:  chunks of rows i0 .. i0+R-1                -> max -> scale
//     lane l:  chunks of rows i0 + 32e, i0 = row_s + l     -> warp max -> scale (lane 0 stores it)
void emit_jagged_scalar(Ctx& x) {
  const Plan& pl = x.plan;
  const bool lanes = pl.jagged().lanes;
  const NodePtr& sn = x.v.scales[0];
  const int koff = x.p.input_index(block_of(sn).offsets);
  const int ar = pl.ax_r, ac = pl.ax_c;
  x.out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(const MxParams P) {{\n", pl.threads, pl.kernel_name);
  x.out += fmt::format("  const int* const ends = static_cast<const int*>(P.in[{}]);\n", koff);
  x.out += fmt::format("  const mx_i64 G = P.tiles_r, g = blockIdx.y, n_r = P.shape[{}];\n", ar);
  // Offsets are trusted on the GPU (no host round trip to validate them): clamped into range.
  x.out += "  mx_i64 row_s = g == 0 ? 0 : mx_i64(ends[g - 1]), row_e = g < G ? mx_i64(ends[g]) : n_r;\n";
  x.out += "  row_s = row_s < 0 ? 0 : (row_s > n_r ? n_r : row_s);\n";
  x.out += "  row_e = row_e < row_s ? row_s : (row_e > n_r ? n_r : row_e);\n";
  if (lanes) {
    x.out += "  const int lane = int(threadIdx.x) % 32;\n";
    x.out += fmt::format("  const mx_i64 c = mx_i64(blockIdx.x) * {} + threadIdx.x / 32;  // a warp per column\n  if (c >= P.shape[{}]) return;\n",
                         pl.threads / 32, ac);
  } else {
    x.out += fmt::format("  const mx_i64 c = mx_i64(blockIdx.x) * {} + threadIdx.x;\n  if (c >= P.shape[{}]) return;\n", pl.threads, ac);
  }
  // A chunk of R rows: the loads of all R first (independent, in flight together), then row by
  // row the value at row ix<ar> = i0 + e * step, where that row is inside the group.
  const int R = pl.jagged().rows_in_flight, step = lanes ? 32 : 1;
  const std::string first = lanes ? "row_s + lane" : "row_s", row = step == 1 ? "i0 + e" : "i0 + e * 32";
  std::string loads = fmt::format("    mx_i64 ix{};\n", ar);
  for (size_t k = 0; k < x.p.inputs().size(); ++k)
    if (x.p.inputs()[k].kind == InputDecl::Kind::tensor) loads += fmt::format("    float x{}[{}];\n", k, R);
  loads += fmt::format("#pragma unroll\n    for (int e = 0; e < {}; ++e) {{\n      ix{} = {};\n", R, ar, row);
  for (size_t k = 0; k < x.p.inputs().size(); ++k)
    if (x.p.inputs()[k].kind == InputDecl::Kind::tensor)
      loads += fmt::format("      x{0}[e] = ix{1} < row_e ? {2}(P.in[{0}], {3}) : 0.0f;\n", k, ar, load_fn(x.p.inputs()[k].dtype),
                           x.in_offset(int(k), "", "c"));
  loads += "    }\n";
  const std::string chunk = fmt::format("  for (mx_i64 i0 = {}; i0 < row_e; i0 += {}) {{\n", first, R * step) + loads +
                            fmt::format("#pragma unroll\n    for (int e = 0; e < {}; ++e) {{\n      ix{} = {};\n      if (ix{} >= row_e) break;\n",
                                        R, ar, row, ar);
  ExprEmitter em([&](const NodePtr& n) { return leaf_expr(x, n); }, "t");
  std::string eval;
  std::string v = em.emit(x.v.roots[0], eval, "      ");
  x.out += "  mx_u32 m = 0u;\n" + chunk + eval;
  x.out += fmt::format("      mx_u32 a = mx_bits({}) & 0x7fffffffu;\n", v);
  if (x.v.scale_flush[0]) x.out += "      if (a < 0x00800000u) a = 0u;\n";
  if (const std::string drop = amax_drop_nan(*sn, "a"); !drop.empty()) x.out += "      " + drop + "\n";
  x.out += "      m = a > m ? a : m;\n    }\n  }\n";
  if (lanes) x.out += "  for (int off = 16; off >= 1; off /= 2) m = mx_umax(m, __shfl_xor_sync(0xffffffffu, m, off));\n";
  const bool coded = scale_coded(x, 0);  // else only the scales: no multiplier, no flag
  x.out += scale_from_amax(sn, "  ", "", true, coded);
  if (coded) x.out += "  if (g == G) flag = 1u;  // rows past the last end: codes 0, no scale\n";
  store_group_scales(x, lanes ? "g < G && lane == 0" : "g < G", "  ");
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::elems) continue;
    const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
    x.out += chunk + eval;
    x.out += fmt::format("      float y = {};\n", v);
    if (q->flush_subnormals) x.out += "      if ((mx_bits(y) & 0x7fffffffu) < 0x00800000u) y = mx_float(mx_bits(y) & 0x80000000u);\n";
    x.out += generic_scale(*sn) ? fmt::format("      y = {};\n", generic_scale_element(*sn, "y", "mult")) : "      y = y * mult;\n";
    std::string rnd = "0u";
    if (q->round == Round::stochastic) {
      x.out += fmt::format("      const mx_u32 rnd = mx_philox_word0(mx_u64({}), {}ull, {}ull);\n", x.linear_index("", "c"), q->offset,
                           q->seed);
      rnd = "rnd";
    }
    // One value at a time: a hardware pair conversion with a zero partner (FP8 only, byte-sized).
    const char* pair = hw_pair_fn(x, q);
    if (pair && (q->elem == e4m3 || q->elem == e5m2)) x.out += fmt::format("      mx_u32 k = {}(y, 0.0f) & 0xffu;\n", pair);
    else x.out += fmt::format("      mx_u32 k = {};\n", encode_call(x, q, "y", rnd));
    x.out += fmt::format("      if (flag) k = flag == 1u ? 0u : {}u;\n", nan_code(q->elem));
    x.out += fmt::format("      static_cast<mx_u8*>(P.out[{}])[ix{} * P.out_stride[{}][{}] + c * P.out_stride[{}][{}]] = mx_u8(k);\n    }}\n  }}\n",
                         o, ar, o, ar, o, ac);
  }
  x.out += "}\n";
}

// Pass 2 with column-major codes within 64 registers (more than 2 CTAs an SM): fewer rows in
// flight, and the multipliers read from shared memory row by row.
bool tight_pass2(const Plan& pl) { return pl.ctas_per_sm > 2; }

// Pass 2 of the vector kernel for column-major codes (output o's unit axis is the group axis):
// a thread takes R consecutive rows at a time (JaggedPlan::run_rows: 8, or 4 within 64 registers), chunks anchored
// at multiples of R, so that a column's R codes are one aligned store (rows outside the group are
// masked), and a warp's neighbouring row lanes at multiples of A = R x its row lanes (64 rows), so
// that their runs of one column fill whole 32-byte sectors (a group starting mid-sector left a
// third of the sectors stored partly):
//
//   chunk rows r .. r+R-1 (r = A * floor(row_s / A) + R * (rl + j * RL)), columns c0 .. c0+7
//   encode row by row:   cw[u] = codes of row u (8 columns)     R x 8 bytes
//   transpose (prmt):    run[e] = codes of column e (R rows)     -> out[c0 + e][r .. r + R-1]
//
// With `fast_runs` (the rows kernel's across form), a chunk whose R rows are all cached and inside
// the axis, its 8 columns inside the tensor and its runs aligned (nearly every chunk) reads its
// rows at fixed offsets from one cache pointer and stores its 8 runs unguarded; the others take
// each row's and each column's checks (the bounds, the cache's end, element-by-element tails).
// Token groups keep the checked form: there it measured faster (docs/perf-log.md#pass2-fast-runs).
//
// `loads_row()` fills w[u][] for row ix, `row_values(in)` turns it into val[8].
void emit_pass2_along_rows(Ctx& x, const JaggedPlan& jp, int o, bool fast_runs,
                           const std::function<std::string()>& loads_row,
                           const std::function<std::string(const std::string&)>& row_values) {
  const Plan& pl = x.plan;
  const int ar = pl.ax_r, ac = pl.ax_c, TC = jp.cols_per_cta / 8, RL = pl.threads / TC;
  const bool f32 = x.p.inputs()[size_t(lead_tensor_input(x.p))].dtype == DType::f32;
  const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
  // Rows per run (R, JaggedPlan::run_rows) and rows' loads in flight at once (B, the plan's
  // rows in flight as a divisor of R): within 64 registers (ctas_per_sm > 2) at most 2, and the
  // multipliers read from shared memory per row.
  const bool tight = tight_pass2(pl);
  const int R = jp.run_rows, H = R / 4;
  int B = std::min({jp.rows_in_flight, R, tight ? 2 : 8});
  while (R % B) --B;
  // A warp's lanes take neighbouring runs: anchored at a multiple of their rows (A), a warp's
  // stores of one column fill whole 32-byte sectors wherever the group starts.
  const int A = R * std::min(RL, 32 / TC);
  x.out += fmt::format(
      "  // Pass 2 (codes column-major): chunks of {0} rows, a warp's from a multiple of {1}, transposed into\n"
      "  // {0}-byte runs of a column.\n",
      R, A);
  x.out += fmt::format("  const mx_i64 os_r = P.out_stride[{0}][{1}], os_c = P.out_stride[{0}][{2}];\n", o, ar, ac);
  x.out += fmt::format("  mx_u8* const ocol = static_cast<mx_u8*>(P.out[{}]) + {};  // column c0, row 0\n", o, plus_batch(x, "c0 * os_c", "out", o));
  const int NW = f32 ? 8 : 4, TCW = TC * NW / 4;  // 32-bit words of a row's 8 columns; 16-byte chunks of a cached row
  if (fast_runs)
    x.out += fmt::format(
        "  const bool fast_cols = cols_full && os_r == 1 && ((reinterpret_cast<mx_u64>(ocol) | mx_u64(os_c)) & {}u) == 0;  // runs aligned\n",
        R - 1);
  x.out +=
      fmt::format("  for (mx_i64 r = (row_s & ~mx_i64({0})) + {1} * rl; r < row_e; r += {2}) {{\n", A - 1, R, R * RL);
  // The chunk's codes into run[8][H] (rows from the cache pointer d where `fast`, else each row
  // by loads_row), at 4-space indent.
  // Rows in groups of B (b: the group's first row), or all R at once (no group loop).
  const bool one = B == R;
  const std::string bu = one ? "u" : "b + u";
  auto encode_chunk = [&](bool fast) {
    x.out += fmt::format("    mx_u32 cw[{}][2];  // codes of row {}, columns 4k .. 4k+3 in cw[{}][k]\n", R, bu, bu);
    if (!one) x.out += fmt::format("#pragma unroll\n    for (int b = 0; b < {}; b += {}) {{\n", R, B);
    const size_t group_at = x.out.size();  // the group loop's body, indented once it is written
    x.out += fmt::format("    mx_u32 w[{}][{}];\n#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", B, NW, B);
    if (fast) {
      for (int h = 0; h < NW / 4; ++h)
        x.out += fmt::format(
            "      {{ const mx_v16 v = d[{} * {}{}]; w[u][{}] = v.x; w[u][{}] = v.y; w[u][{}] = v.z; w[u][{}] = v.w; }}\n",
            one ? "u" : "(b + u)", TCW, h ? fmt::format(" + {}", h) : "", 4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3);
    } else {
      x.out += "      const mx_i64 ix = r + " + bu + ";\n" + loads_row();
    }
    x.out += fmt::format("    }}\n#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", B);
    const size_t row_at = x.out.size();
    x.out += row_values("      ");
    // Within 64 registers the multipliers come from shared memory row by row (8 fewer live).
    if (tight)
      x.out +=
          "      float mult0[8];\n#pragma unroll\n      for (int e = 0; e < 8; ++e) mult0[e] = s_mult[tc * 8 + e];\n";
    emit_packed_codes(
        x, q, 0, "val", 8, [&](int h) { return x.linear_index("", fmt::format("(c0 + e + {})", h)); }, "      ", true);
    insert_used(x.out, row_at, {{fmt::format("ix{}", ar), fmt::format("      const mx_i64 ix{} = r + {};\n", ar, bu)}});
    x.out += fmt::format("      cw[{0}][0] = wd[0];\n      cw[{0}][1] = wd[1];\n    }}\n", bu);
    if (!one) x.out = x.out.substr(0, group_at) + indent_lines(x.out.substr(group_at), "  ", true) + "    }\n";
    x.out += fmt::format(
        "    // 4 x 4 byte transposes: run[e][h] = column e's codes of rows 4h .. 4h+3.\n    mx_u32 run[8][{}];\n", H);
    x.out += fmt::format(
        "#pragma unroll\n    for (int h = 0; h < {}; ++h) {{\n#pragma unroll\n      for (int k = 0; k < 2; ++k) {{\n",
        H);
    x.out +=
        "        const mx_v16 t = mx_transpose4x4(cw[4 * h][k], cw[4 * h + 1][k], cw[4 * h + 2][k], cw[4 * h + 3][k]);\n";
    x.out +=
        "        run[4 * k][h] = t.x;\n        run[4 * k + 1][h] = t.y;\n        run[4 * k + 2][h] = t.z;\n        run[4 * k + 3][h] = t.w;\n      }\n    }\n";
  };
  const std::string run_store = R == 16  ? "mx_st16(ob, mx_v16{run[e][0], run[e][1], run[e][2], run[e][3]});\n"
                                : R == 8 ? "*reinterpret_cast<uint2*>(ob) = make_uint2(run[e][0], run[e][1]);\n"
                                         : "*reinterpret_cast<mx_u32*>(ob) = run[e][0];\n";
  // One pointer stepped across the columns (eight hoisted column pointers would cost 16 registers).
  if (fast_runs) {
    x.out += fmt::format("    if (fast_cols && r >= row_s && r + {} <= row_c) {{  // every row cached and inside\n", R);
    x.out += fmt::format("    const mx_v16* const d = cache + (r - row_s) * {} + {};  // row r's chunks\n", TCW,
                         times("tc", NW / 4));
    encode_chunk(true);
    x.out += "    mx_u8* ob = ocol + r;\n#pragma unroll\n    for (int e = 0; e < 8; ++e, ob += os_c) " + run_store +
             "    continue;\n    }\n";
  }
  encode_chunk(false);
  x.out += fmt::format("    const bool whole = r >= row_s && r + {} <= row_e && os_r == 1;\n", R);
  x.out += "    mx_u8* ob = ocol + r * os_r;\n";
  x.out += "#pragma unroll\n    for (int e = 0; e < 8; ++e, ob += os_c) {\n      if (c0 + e >= n_c) continue;\n";
  x.out += R == 16  ? "      if (whole && mx_aligned16(ob)) {\n"
           : R == 8 ? "      if (whole && (reinterpret_cast<mx_u64>(ob) & 7u) == 0) {\n"
                    : "      if (whole && (reinterpret_cast<mx_u64>(ob) & 3u) == 0) {\n";
  x.out += "        " + run_store;
  x.out += fmt::format("      }} else {{\n#pragma unroll\n        for (int u = 0; u < {}; ++u)\n", R);
  x.out += "          if (r + u >= row_s && r + u < row_e) ob[u * os_r] = mx_u8(run[e][u >> 2] >> (8 * (u & 3)));\n      }\n    }\n  }\n";
}

// The vector kernel: a CTA owns one group and W = tile_c columns; a thread owns 8 neighbouring
// columns (16-byte chunks) and every RL-th row of the group, RL = threads / (W / 8):
//
//            c0 .. c0+W-1 (one CTA)
//   row_s    | t0 | t1 | .. | t(W/8-1) |  } the first tile_r rows: the row cache
//   row_s+1  | t(W/8) ...              |  }
//   ...      (rows of the group, strided by RL)
//   row_e-1  |                         |  the rest
//
//   pass 1 (column maxima):
//     (a) each thread's cached rows go straight into its own cache chunks with cp.async (16-byte
//         asynchronous copies, zero-filled past the last column): all of them in flight at once,
//         no registers held;
//     (b) meanwhile the rest go through registers, U rows per thread in flight;
//     (c) once its copies land (wait, no barrier: a thread reads back only its own chunks) it
//         folds the cached rows in; the maxima then meet across row lanes in smem.
//   pass 2: the cached rows from smem, the rest read again (mostly from L2), codes stored 8 at a
//   time.
// Two passes are inherent (a group's scale needs all its rows first). The shared-memory row cache
// is also what caps CTAs per SM (Plan::ctas_per_sm): few CTAs in flight keep the re-read rows in L2.
// With the cache filled asynchronously, a CTA has its whole cache in flight (2 CTAs x ~105 KB per
// SM by default) where loads through registers held U rows (32 KB per CTA).
//
//   shared memory: [ cache: tile_r rows x W inputs ][ red: warps x W maxima ][ mult: W ][ flag: W ]
//                  [ parts: K x W maxima ][ bar: a transaction barrier ]  (with a cluster)
//
// With a cluster of K CTAs (JaggedPlan::cluster, sm_90+), the K CTAs of one (group, W columns) split
// the group's rows into K contiguous parts; each runs both passes over its part, and between them
// every CTA sends its partial column maxima into the others' shared memory (st.async, DSMEM),
// counted by each receiver's transaction barrier (mx_mbar_*):
//
//   group rows  [ part 0 | part 1 | part 2 | part 3 ]   CTA q: pass 1 over part q -> m[W]
//                                                        m[W] -> parts[q][W] of every CTA
//                                                        wait for its K x W; max over parts[]
//                                                        pass 2 over part q (rank 0 stores scales)
// Each CTA then caches a K-th of the group, so K times more CTAs fit an SM: pass-1 loads of some
// overlap pass-2 stores of others.
//
// `whole`: the rows kernel's across form (RowsPlan::columns), the same two passes with the whole
// axis as the one group (rows 0 .. n_r) and grid row g the index of the other axes, row-major.
//
// `entry`: the kernel's first line (its name, launch bounds and cluster).
void emit_jagged_vector_body(Ctx& x, const JaggedPlan& jp, bool whole, const std::string& entry) {
  const Plan& pl = x.plan;
  const NodePtr& sn = x.v.scales[0];
  const int ar = pl.ax_r, ac = pl.ax_c;
  const int k = lead_tensor_input(x.p);
  const DType dt = x.p.inputs()[size_t(k)].dtype;
  const bool f32 = dt == DType::f32;
  const int W = jp.cols_per_cta, TC = W / 8, RL = pl.threads / TC, U = jp.rows_in_flight, NW = f32 ? 8 : 4, CR = jp.cached_rows;
  const int TCW = TC * NW / 4;  // 16-byte chunks per cached row
  const int NWARP = pl.threads / 32;
  const int CU = jp.cached_rows_per_step;
  const std::string ix = fmt::format("ix{}", ar);
  const int K = jp.cluster;
  // A cluster fixed by the kernel, or chosen at launch (JaggedPlan::cluster_at_launch: always a
  // cluster launch, its size read from %cluster_nctarank).
  const bool at_launch = K > 1 && jp.cluster_at_launch;
  const std::string KS = at_launch ? "K_" : std::to_string(K);  // the cluster size, a C expression
  x.out += entry;
  x.out += "  extern __shared__ float4 mx_smem4[];\n";
  x.out += fmt::format("  mx_v16* const cache = reinterpret_cast<mx_v16*>(mx_smem4);  // [{}][{}]: the group's first rows\n", CR,
                       TC * NW / 4);
  x.out += fmt::format("  mx_u32* const red = reinterpret_cast<mx_u32*>(cache + {});  // [{}][{}]: column maxima per warp\n",
                       CR * TC * NW / 4, NWARP, W);
  x.out += fmt::format("  float* const s_mult = reinterpret_cast<float*>(red + {});  // [{}]\n", NWARP * W, W);
  x.out += fmt::format("  mx_u32* const s_flag = reinterpret_cast<mx_u32*>(s_mult + {});  // [{}]\n", W, W);
  if (K > 1) {
    x.out += fmt::format(
        "  mx_u32* const s_parts = s_flag + {};  // [{}][{}]: the cluster's CTAs' column maxima, sent by each\n", W, K,
        W);
    x.out +=
        fmt::format("  mx_u64* const s_bar = reinterpret_cast<mx_u64*>(s_parts + {});  // counts their bytes\n", K * W);
    // Every CTA's barrier initialised before any CTA sends to it: arrive now, wait before sending.
    x.out +=
        "  if (threadIdx.x == 0) {\n    mx_mbar_init(s_bar, 1);\n    mx_mbar_init_fence();\n  }\n  mx_cluster_arrive_relaxed();\n";
  }
  // The CTA's column tile, and (with a cluster) its rank = its part of the group's rows.
  if (at_launch) x.out += fmt::format("  const unsigned K_ = mx_cluster_size();  // CTAs per cluster, at most {}\n", K);
  x.out += K > 1 ? fmt::format("  const unsigned bx = blockIdx.x / {0}, q = blockIdx.x % {0};  // q: the rank in the cluster\n", KS)
                 : "  const unsigned bx = blockIdx.x;\n";
  if (!whole) x.out += fmt::format("  const int* const ends = static_cast<const int*>(P.in[{}]);\n", x.p.input_index(block_of(sn).offsets));
  x.out += fmt::format("  const mx_i64 G = P.tiles_r, g = blockIdx.y, n_r = P.shape[{}], n_c = P.shape[{}];\n", ar, ac);
  if (whole) {
    x.out += "  mx_i64 row_s = 0, row_e = n_r;  // the whole axis: one group\n";
    std::vector<int> batch;
    for (int a = 0; a < pl.rank; ++a)
      if (a != ar && a != ac) batch.push_back(a);
    if (!batch.empty()) x.out += "  mx_i64 rest_ = g;  // the other axes' indices\n";
    for (auto it = batch.rbegin(); it != batch.rend(); ++it)
      x.out += fmt::format("  const mx_i64 ix{0} = rest_ % P.shape[{0}];\n  rest_ /= P.shape[{0}];\n", *it);
  } else {
    // Offsets are trusted on the GPU (no host round trip to validate them): clamped into range.
    x.out += "  mx_i64 row_s = g == 0 ? 0 : mx_i64(ends[g - 1]), row_e = g < G ? mx_i64(ends[g]) : n_r;\n";
    x.out += "  row_s = row_s < 0 ? 0 : (row_s > n_r ? n_r : row_s);\n";
    x.out += "  row_e = row_e < row_s ? row_s : (row_e > n_r ? n_r : row_e);\n";
  }
  if (K > 1) {
    // Parts of a multiple of 16 rows: column-major runs stay whole across the parts' borders.
    x.out += fmt::format("  {{  // this CTA's part of the rows\n    const mx_i64 ch = ((row_e - row_s + {}) / {} + 15) & ~mx_i64(15);\n",
                         at_launch ? "K_ - 1" : std::to_string(K - 1), KS);
    x.out += "    const mx_i64 s_ = row_s + q * ch < row_e ? row_s + q * ch : row_e;\n";
    x.out += "    row_e = s_ + ch < row_e ? s_ + ch : row_e;\n    row_s = s_;\n  }\n";
  }
  x.out += fmt::format("  const int tc = threadIdx.x % {0}, rl = threadIdx.x / {0};\n", TC);
  x.out += fmt::format("  const mx_i64 c0 = mx_i64(bx) * {} + tc * 8;  // this thread's columns c0 .. c0+7 (axis {})\n", W, ac);
  x.out += "  const bool cols_full = c0 + 8 <= n_c;\n";
  const char* et = f32 ? "float" : "mx_u16";
  x.out += fmt::format("  const {0}* const src = static_cast<const {0}*>(P.in[{1}]) + {2};\n", et, k, plus_batch(x, "c0", "in", k));
  x.out += fmt::format("  const mx_i64 in_sr = P.in_stride[{}][{}];\n", k, ar);
  // Row `row`'s words from its NW / 4 16-byte chunks, `chunk(h)` a C expression of chunk h
  // (cache or memory), at indent `in`.
  auto chunk_words = [&](const std::string& row, const std::function<std::string(int)>& chunk, const std::string& in) {
    std::string l;
    for (int h = 0; h < NW / 4; ++h)
      l += fmt::format("{0}{{ const mx_v16 v = {1}; w[{2}][{3}] = v.x; w[{2}][{4}] = v.y; w[{2}][{5}] = v.z; w[{2}][{6}] = v.w; }}\n", in,
                       chunk(h), row, 4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3);
    return l;
  };
  auto cache_chunk = [&](const std::string& ix_) {
    return [&, ix_](int h) { return fmt::format("cache[{}]", plus(fmt::format("({} - row_s) * {} + {}", ix_, TCW, times("tc", NW / 4)), h)); };
  };
  auto memory_chunk = [&](int h) { return fmt::format("mx_ld16({})", plus("p", 4 * h)); };
  // Row u's words zeroed, then filled element by element from p where `cond` holds (columns
  // past n_c stay +0), at 8-space indent.
  auto tail_words = [&](const std::string& cond) {
    std::string l = fmt::format("#pragma unroll\n        for (int e = 0; e < {}; ++e) w[u][e] = 0u;\n", NW);
    l += fmt::format("        if ({}) for (int e = 0; e < 8; ++e) if (c0 + e < n_c) ", cond);
    return l + (f32 ? "w[u][e] = mx_bits(p[e]);\n" : "w[u][e >> 1] |= mx_u32(p[e]) << (16 * (e & 1));\n");
  };
  // U rows of 8 columns into w[u][] (zeros outside), all issued before any is used (`hot`: the
  // rows loop unrolled); rows below tile_r come from the cache in pass 2 (`cached`; pass 1 filled
  // it with cp.async).
  auto loads = [&](bool cached, bool hot) {
    std::string l = fmt::format("    mx_u32 w[{}][{}];\n{}    for (int u = 0; u < {}; ++u) {{\n", U, NW, rows_pragma(hot), U);
    l += fmt::format("      const mx_i64 {} = r + u * {};\n      const {}* const p = src + {} * in_sr;\n", ix, RL, et, ix);
    if (cached) l += fmt::format("      if ({} - row_s < {}) {{\n", ix, CR) + chunk_words("u", cache_chunk(ix), "        ") + "      } else ";
    else l += "      ";
    l += fmt::format("if ({} < row_e && cols_full) {{\n", ix) + chunk_words("u", memory_chunk, "        ");
    return l + "      } else {\n" + tail_words(ix + " < row_e") + "      }\n    }\n";
  };
  // Row ix (in scope, `u` its slot) into w[u][] (6-space indent): from the cache below row_c,
  // else from memory; zeros outside the group [row_s, row_e) and past the last column.
  auto loads_row = [&]() {
    std::string l = "      const bool in_g = ix >= row_s && ix < row_e;\n";
    l += fmt::format("      const {}* const p = src + ix * in_sr;\n      if (in_g && ix < row_c) {{\n", et);
    l += chunk_words("u", cache_chunk("ix"), "        ") + "      } else if (in_g && cols_full) {\n" + chunk_words("u", memory_chunk, "        ");
    return l + "      } else {\n" + tail_words("in_g") + "      }\n";
  };
  // The element values of row u into x<k>[8], then val[8] (the root, unguarded: register leaves);
  // rows from `end` on are skipped.
  ExprEmitter em([&](const NodePtr& n) { return leaf_expr(x, n); }, "t");
  std::string eval;
  const std::string v = em.emit(x.v.roots[0], eval, "        ");
  // U rows of 8 columns into w[u][] from the stepped pointer p (row r; row u at p + u * step),
  // the thread's columns all inside (cols_full); rows from row_e on read as zeros.
  auto loads_fast = [&](const std::string& in) {
    std::string l = fmt::format("{0}mx_u32 w[{1}][{2}];\n#pragma unroll\n{0}for (int u = 0; u < {1}; ++u) {{\n", in, U, NW);
    l += fmt::format("{}  if (r + u * {} < row_e) {{\n", in, RL);
    for (int h = 0; h < NW / 4; ++h)
      l += fmt::format("{0}    {{ const mx_v16 v = mx_ld16({1}); w[u][{2}] = v.x; w[u][{3}] = v.y; w[u][{4}] = v.z; w[u][{5}] = v.w; }}\n",
                       in, plus("p + u * step", 4 * h), 4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3);
    l += fmt::format("{0}  }} else {{\n#pragma unroll\n{0}    for (int e = 0; e < {1}; ++e) w[u][e] = 0u;\n{0}  }}\n{0}}}\n", in, NW);
    return l;
  };
  // Row u's values (words w[u][], u in scope) at indent `in`.
  auto row_values = [&](const std::string& in) {
    std::string l = fmt::format("{}float x{}[8];\n", in, k);
    if (f32) l += fmt::format("#pragma unroll\n{}for (int e = 0; e < 8; ++e) x{}[e] = mx_float(w[u][e]);\n", in, k);
    else l += fmt::format("{}{}(mx_v16{{w[u][0], w[u][1], w[u][2], w[u][3]}}, x{});\n", in, unpack_fn(dt), k);
    // eval is indented for `in` = 6 spaces.
    const std::string ev = in.size() == 6 ? eval : indent_lines(eval, std::string(in.size() - 6, ' '), true);
    l += fmt::format(
        "{0}float val[8];\n#pragma unroll\n{0}for (int e = 0; e < 8; ++e) {{\n{3}{1}{0}  val[e] = {2};\n{0}}}\n", in,
        ev, v, uses(ev + v, "c") ? in + "  const mx_i64 c = c0 + e;\n" : "");
    return l;
  };
  auto unpack = [&](const std::string& end) {
    return fmt::format("      const mx_i64 {} = r + u * {};\n      if ({} >= {}) continue;\n", ix, RL, ix, end) + row_values("      ");
  };
  // Row words w[0][] from the cache chunks at mx_v16 pointer `ptr`.
  auto cache_words = [&](const std::string& ptr, const std::string& in) {
    return chunk_words("0", [&](int h) { return fmt::format("{}[{}]", ptr, h); }, in);
  };
  // A bare bf16/f16 input: the column maxima two at a time from the words, pm[j] for columns
  // 2j, 2j+1 (|x| words; NaN-propagating), widened into m[8] after pass 1. The subnormal flush,
  // if any, then applies to the maxima (flushing is monotone: the same result).
  const int pk = packed_amax_input(x, 0);
  const char* pmax = packed_max_fn(x, k);
  // Folds val[8] into the maxima m[8] (6-space indent).
  auto fold_values = [&] {
    std::string l = "#pragma unroll\n      for (int e = 0; e < 8; ++e) {\n        mx_u32 a = mx_bits(val[e]) & 0x7fffffffu;\n";
    if (x.v.scale_flush[0]) l += "        if (a < 0x00800000u) a = 0u;\n";
    if (const std::string drop = amax_drop_nan(*sn, "a"); !drop.empty()) l += "        " + drop + "\n";
    return l + "        m[e] = a > m[e] ? a : m[e];\n      }\n";
  };
  // Folds the values of the U rows in w[][] (rows from `end` on skipped) into the maxima m[8]
  // (pm[4] where packed).
  auto amax_of = [&](const std::string& end, bool hot) {
    std::string l = fmt::format("{}    for (int u = 0; u < {}; ++u) {{\n", rows_pragma(hot), U);
    if (pk >= 0)
      return l + fmt::format("      if (r + u * {} >= {}) continue;\n#pragma unroll\n      for (int j = 0; j < 4; ++j) pm[j] = {}(pm[j], w[u][j] & 0x7fff7fffu);\n    }}\n",
                             RL, end, pmax);
    return l + unpack(end) + fold_values() + "    }\n";
  };

  // Pass 1, inside `if (g < G)` (so indented once more): (a) this thread's cached rows straight
  // into its cache chunks, (b) the other rows through registers while those copies are in flight,
  // (c) the cached rows' maxima read back from the chunks (a thread's own copies: no barrier).
  std::string p1;
  const int esize = f32 ? 4 : 2, epc = 16 / esize;  // bytes per element, elements per 16-byte chunk
  p1 += "  // (a) Every cached row of this thread in flight at once, without registers: 16-byte\n"
        "  // cp.async copies into the cache slots pass 2 reads. Columns past n_c are zero-filled (the\n"
        "  // +0 bits the loads below leave); a copy of 0 bytes reads nothing (its source: the base).\n";
  p1 += "  const mx_i64 nc = n_c - c0;  // this thread's columns inside the tensor (8 or more: all)\n";
  for (int h = 0; h < NW / 4; ++h)
    p1 += fmt::format("  const unsigned nb{} = nc >= {} ? 16u : nc > {} ? unsigned({}) * {}u : 0u;  // bytes of chunk {} (columns c0+{}..c0+{})\n", h,
                      (h + 1) * epc, h * epc, h ? fmt::format("nc - {}", h * epc) : "nc", esize, h, h * epc, (h + 1) * epc - 1);
  p1 += fmt::format("  const {0}* const base = static_cast<const {0}*>(P.in[{1}]);\n", et, k);
  // This row lane's cached rows, i < n_cached (an int count; pointers stepped, no 64-bit index
  // products per row).
  p1 += fmt::format("  {{\n    const {}* p = src + (row_s + rl) * in_sr;\n    mx_v16* d = cache + rl * {} + {};\n", et, TCW, times("tc", NW / 4));
  p1 += fmt::format("    for (int i = 0; i < n_cached; ++i, p += {} * in_sr, d += {}) {{\n", RL, RL * TCW);
  for (int h = 0; h < NW / 4; ++h) p1 += fmt::format("      mx_cp_async16({}, nb{} ? {} : base, nb{});\n", plus("d", h), h, plus("p", 4 * h), h);
  p1 += "    }\n  }\n  mx_cp_async_commit();\n";
  p1 += fmt::format("  // (b) The rows past the cache (from this row lane's first at or after row_s + {}) through\n"
                    "  // registers, {} per thread in flight while the copies land.\n", CR, U);
  p1 += fmt::format("  const mx_i64 r1 = row_s + rl + ({} - rl) / {} * {};\n", CR + RL - 1, RL, RL);
  p1 += fmt::format("  if (cols_full) {{\n    const {}* p = src + r1 * in_sr;\n    const mx_i64 step = {} * in_sr;\n", et, RL);
  p1 += fmt::format("    for (mx_i64 r = r1; r < row_e; r += {}, p += {} * step) {{\n", RL * U, U);
  p1 += indent_lines(loads_fast("    ") + amax_of("row_e", true), "  ", true) + "    }\n  } else {  // the last column tile\n";
  p1 += fmt::format("    for (mx_i64 r = r1; r < row_e; r += {}) {{\n", RL * U);
  p1 += indent_lines(loads(false, false) + amax_of("row_e", false), "  ", true) + "    }\n  }\n";
  p1 += "  // (c) The cached rows, once this thread's copies have landed.\n  mx_cp_async_wait<0>();\n";
  p1 += fmt::format("  {{\n    const mx_v16* d = cache + rl * {} + {};\n#pragma unroll {}\n", TCW, times("tc", NW / 4), CU);
  p1 += fmt::format("    for (int i = 0; i < n_cached; ++i, d += {}) {{\n", RL * TCW);
  p1 += fmt::format("      mx_u32 w[1][{}];\n", NW) + cache_words("d", "      ");
  if (pk >= 0) {
    p1 += fmt::format("#pragma unroll\n      for (int j = 0; j < 4; ++j) pm[j] = {}(pm[j], w[0][j] & 0x7fff7fffu);\n", pmax);
  } else {
    std::string body = row_values("      ") + fold_values();
    insert_used(body, 0, {{ix, fmt::format("      const mx_i64 {} = row_s + rl + mx_i64(i) * {};\n", ix, RL)}});
    p1 += "      const int u = 0;\n" + body;
  }
  p1 += "    }\n  }\n";

  x.out += "  // Pass 1: column maxima of the group's rows (none for the rows past the last end).\n";
  x.out += fmt::format("  const mx_i64 row_c = row_e - row_s < {0} ? row_e : row_s + {0};  // cached rows: row_s .. row_c-1\n", CR);
  x.out += fmt::format("  const int n_cached = int((row_c - row_s - rl + {}) / {});  // of them this row lane's: row_s + rl + i * {}\n", RL - 1, RL, RL);
  x.out += "  mx_u32 m[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};\n";
  if (pk >= 0) x.out += "  mx_u32 pm[4] = {0u, 0u, 0u, 0u};  // |x| maxima of column pairs (2j, 2j+1)\n";
  x.out += "  if (g < G) {\n" + indent_lines(p1, "  ", true) + "  }\n";
  if (pk >= 0) {
    x.out += "#pragma unroll\n  for (int j = 0; j < 4; ++j) {\n";
    x.out += fmt::format("    m[2 * j] = {};\n    m[2 * j + 1] = {};\n", widen_half(x, pk, "pm[j]", 0), widen_half(x, pk, "pm[j]", 1));
    if (x.v.scale_flush[0])
      x.out += "    m[2 * j] = m[2 * j] < 0x00800000u ? 0u : m[2 * j];\n    m[2 * j + 1] = m[2 * j + 1] < 0x00800000u ? 0u : m[2 * j + 1];\n";
    x.out += "  }\n";
  }
  // The row lanes of a warp (lanes TC apart) combine by shuffles; then one row of maxima per warp
  // meets in shared memory.
  for (int xo = TC; xo < 32; xo *= 2)
    x.out += fmt::format("#pragma unroll\n  for (int e = 0; e < 8; ++e) m[e] = mx_umax(m[e], __shfl_xor_sync(0xffffffffu, m[e], {}));\n", xo);
  x.out += fmt::format("  if ((threadIdx.x & 31u) < {}u) {{\n#pragma unroll\n    for (int e = 0; e < 8; ++e) red[(threadIdx.x >> 5) * {} + tc * 8 + e] = m[e];\n  }}\n  __syncthreads();\n",
                       TC, W);
  if (K > 1)
    x.out += fmt::format(
        "  if (threadIdx.x == 0) mx_mbar_expect(s_bar, {} * {}u);  // the cluster's maxima, 4 bytes each\n  mx_cluster_wait();\n",
        KS, 4 * W);
  // A thread a column: a loop where the columns outnumber the threads.
  const std::string per_column = W <= pl.threads ? fmt::format("  if (const int cw = threadIdx.x; cw < {}) {{", W)
                                                 : fmt::format("  for (int cw = threadIdx.x; cw < {}; cw += {}) {{", W, pl.threads);
  x.out += per_column + "  // one column each\n    mx_u32 m = 0u;\n";
  x.out += fmt::format("    for (int i = 0; i < {}; ++i) {{ const mx_u32 o_ = red[i * {} + cw]; m = o_ > m ? o_ : m; }}\n", NWARP, W);
  if (K > 1) {
    // This CTA's maxima into parts[q] of every CTA of the cluster (its own included); then the K
    // parts, once this CTA's barrier has counted their bytes.
    x.out += fmt::format(
        "{}    for (unsigned j = 0; j < {}; ++j) mx_st_async_u32(s_parts + q * {} + cw, j, m, s_bar);\n  }}\n",
        at_launch ? "" : "#pragma unroll\n", at_launch ? KS : KS + "u", W);
    x.out += "  mx_mbar_wait_cluster(s_bar, 0);\n";
    x.out += per_column + "\n    mx_u32 m = 0u;\n";
    x.out += fmt::format(
        "{}    for (unsigned j = 0; j < {}; ++j) {{ const mx_u32 o_ = s_parts[j * {} + cw]; m = o_ > m ? o_ : m; }}\n",
        at_launch ? "" : "#pragma unroll\n", at_launch ? KS : KS + "u", W);
  }
  x.out += scale_from_amax(sn, "    ");
  x.out += "    if (g == G) flag = 1u;  // rows past the last end: codes 0, no scale\n";
  x.out += fmt::format("    const mx_i64 c = mx_i64(bx) * {} + cw;\n", W);
  store_group_scales(x, K > 1 ? "q == 0 && g < G && c < n_c" : "g < G && c < n_c", "    ", whole);
  x.out += "    s_mult[cw] = mult;\n    s_flag[cw] = flag;\n  }\n";
  x.out += "  __syncthreads();\n";
  // This thread's 8 multipliers, and its flags as per-word masks (codes kept / zero or NaN fill).
  // (Codes column-major within 64 registers read them row by row instead: emit_pass2_along_rows.)
  if (!(jagged_codes_along_rows(x.p, pl) && tight_pass2(pl)))
    x.out += "  float mult0[8];\n#pragma unroll\n  for (int e = 0; e < 8; ++e) mult0[e] = s_mult[tc * 8 + e];\n";
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::elems) continue;
    const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
    x.out += "  mx_u32 keep0[2], fill0[2];\n#pragma unroll\n  for (int w = 0; w < 2; ++w) {\n    keep0[w] = 0u; fill0[w] = 0u;\n";
    x.out += "#pragma unroll\n    for (int j = 0; j < 4; ++j) {\n      const mx_u32 f = s_flag[tc * 8 + w * 4 + j];\n";
    x.out += fmt::format("      keep0[w] |= (f == 0u ? 255u : 0u) << (8 * j);\n      fill0[w] |= (f == 2u ? {}u : 0u) << (8 * j);\n    }}\n  }}\n",
                         nan_code(q->elem));
    break;  // one quantize (the plan's rule for jagged groups); 8-bit codes (FP4 needs fixed blocks)
  }
  std::vector<int> code_outs;
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (x.p.outputs()[size_t(o)].kind == OutputKind::elems) code_outs.push_back(o);
  if (jagged_codes_along_rows(x.p, pl)) {
    emit_pass2_along_rows(x, jp, code_outs.at(0), whole, loads_row, row_values);
    x.out += "}\n";
    return;
  }
  // Pass 2. (a) Where the thread's 8 codes of a row are one aligned 8-byte store (one code
  // output, all 8 columns inside): the cached rows, then the others (re-read from global memory),
  // from stepped pointers. (b) Otherwise the general loop, every row.
  x.out += "  // Pass 2: the same rows again, scaled and encoded.\n  mx_i64 r2 = row_s + rl;  // (b)'s first row\n";
  // With (a), (b) runs only for the last column tile and unaligned outputs: its rows loops roll.
  const bool fast_path = code_outs.size() == 1 && !x.v.quantizes[size_t(x.v.output_index[size_t(code_outs[0])])]->elem.packed();
  if (fast_path) {
    const int o = code_outs[0];
    const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
    // val[8]'s codes as one aligned 8-byte store at `ptr`.
    auto encode_store = [&](const std::string& ptr, const std::string& in) {
      emit_packed_codes(x, q, 0, "val", 8, [&](int h) { return x.linear_index("", fmt::format("(c0 + e + {})", h)); }, in, true);
      x.out += fmt::format("{}*reinterpret_cast<uint2*>({}) = make_uint2(wd[0], wd[1]);\n", in, ptr);
    };
    x.out += fmt::format("  {{  // (a)\n    const mx_i64 os_r = P.out_stride[{}][{}];\n", o, ar);
    x.out += fmt::format("    mx_u8* ob = static_cast<mx_u8*>(P.out[{}]) + {};\n", o,
                         batch_offset(x, "out", o).empty() ? fmt::format("(row_s + rl) * os_r + c0 * P.out_stride[{}][{}]", o, ac)
                                                           : plus_batch(x, fmt::format("(row_s + rl) * os_r + c0 * P.out_stride[{}][{}]", o, ac), "out", o));
    x.out += fmt::format("    if (cols_full && P.out_stride[{}][{}] == 1 && ((reinterpret_cast<mx_u64>(ob) | mx_u64(os_r)) & 7u) == 0) {{\n", o, ac);
    x.out += fmt::format("      const mx_v16* d = cache + rl * {} + {};\n#pragma unroll {}\n", TCW, times("tc", NW / 4), CU);
    x.out += fmt::format("      for (int i = 0; i < n_cached; ++i, d += {}, ob += {} * os_r) {{\n", RL * TCW, RL);
    x.out += fmt::format("        mx_u32 w[1][{}];\n", NW) + cache_words("d", "        ");
    x.out += "        const int u = 0;\n";
    const size_t row_at = x.out.size();
    x.out += row_values("        ");
    encode_store("ob", "        ");
    insert_used(x.out, row_at, {{ix, fmt::format("        const mx_i64 {} = row_s + rl + mx_i64(i) * {};\n", ix, RL)}});
    x.out += "      }\n";
    x.out += fmt::format("      if (n_cached > 0) r2 += mx_i64(n_cached) * {};\n", RL);
    // The uncached rows (ob is at row r2 now), U at a time.
    x.out += fmt::format("      const {}* p = src + r2 * in_sr;\n      const mx_i64 step = {} * in_sr, ostep = {} * os_r;\n", et, RL, RL);
    x.out += fmt::format("      for (mx_i64 r = r2; r < row_e; r += {}, p += {} * step, ob += {} * ostep) {{\n", RL * U, U, U);
    x.out += loads_fast("        ");
    x.out += fmt::format("#pragma unroll\n        for (int u = 0; u < {}; ++u) {{\n", U) + indent_lines(unpack("row_e"), "    ", true);
    encode_store("ob + u * ostep", "          ");
    x.out += "        }\n      }\n";
    x.out += "      r2 = row_e;\n    }\n  }\n";
  }
  x.out += fmt::format("  for (mx_i64 r = r2; r < row_e; r += {}) {{\n", RL * U) + loads(true, !fast_path);
  x.out += fmt::format("{}    for (int u = 0; u < {}; ++u) {{\n", rows_pragma(!fast_path), U) + unpack("row_e");
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::elems) continue;
    const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
    x.out += fmt::format("      {{  // output '{}' ({})\n", out.name, q->elem.str());
    emit_packed_codes(x, q, 0, "val", 8, [&](int h) { return x.linear_index("", fmt::format("(c0 + e + {})", h)); },
                      "        ", true);
    x.out += fmt::format("        mx_u8* const ob = static_cast<mx_u8*>(P.out[{}]) + ({});\n", o, x.out_offset(o, "", "c0"));
    emit_store_codes(x, q, 8, fmt::format("cols_full && P.out_stride[{}][{}] == 1", o, ac), "c0 + e < n_c", "        ");
    x.out += "      }\n";
  }
  x.out += "    }\n  }\n";
  x.out += "}\n";
}

// The vector kernel; with JaggedPlan::plain (and ::small), two (three) kernels of one module, which
// the launch chooses between by the groups' mean size (Plan::launch):
//
//   NAME           one CTA a (group, W columns), plain's CTAs an SM   grid.x = tiles_c
//   NAME_cluster   a cluster of K CTAs a (group, W columns)            grid.x = tiles_c x K
//   NAME_small     (column-major codes, JaggedPlan::small) 128 threads, more CTAs an SM, a smaller cache
//   NAME_large     (column-major codes, no cluster) fewer CTAs an SM, a larger row cache
//
// Each has its cluster compiled in (a size read at run time cost small groups 4.7%;
// docs/perf-log.md#jagged-cluster-at-launch) and its own row cache.
void emit_jagged_vector(Ctx& x, const JaggedPlan& jp, bool whole) {
  auto entry = [](const Plan& pl, const JaggedPlan& j, const std::string& name) {
    const bool fixed = j.cluster > 1 && !j.cluster_at_launch;
    const std::string cdims = fixed ? fmt::format("__cluster_dims__({}, 1, 1) ", j.cluster) : "";
    return fmt::format("extern \"C\" __global__ void {}__launch_bounds__({}, {}) {}(const MxParams P) {{\n", cdims,
                       pl.threads, pl.ctas_per_sm, name);
  };
  if (!jp.plain) return emit_jagged_vector_body(x, jp, whole, entry(x.plan, jp, x.plan.kernel_name));
  // A kernel beside the plan's own: its plan with the SideKernel's fields.
  auto beside = [&](const SideKernel& b, const std::string& name) {
    JaggedPlan j = jp;
    j.cluster = 1;
    j.cached_rows = b.cached_rows;
    j.cached_rows_per_step = b.cached_rows_per_step;
    j.rows_in_flight = b.rows_in_flight;
    j.run_rows = b.run_rows;
    j.plain.reset();
    j.small.reset();
    Plan pp = x.plan;
    pp.ctas_per_sm = b.ctas_per_sm;
    pp.smem_bytes = b.smem_bytes;
    pp.threads = b.threads;
    pp.kernel = j;
    return emit_under(x, pp, x.direct, [&](Ctx& y) { emit_jagged_vector_body(y, j, whole, entry(pp, j, name)); });
  };
  const std::vector<std::string> names = x.plan.entry_names();
  x.out += beside(*jp.plain, names.at(0)) + "\n";
  if (jp.small) x.out += beside(*jp.small, names.at(2)) + "\n";
  JaggedPlan own = jp;
  own.plain.reset();
  own.small.reset();
  emit_jagged_vector_body(x, own, whole, entry(x.plan, own, names.at(1)));
}

}  // namespace

void emit_jagged_kernel(Ctx& x) {
  if (x.plan.jagged().vector) emit_jagged_vector(x, x.plan.jagged(), false);
  else emit_jagged_scalar(x);
}

void emit_whole_columns_kernel(Ctx& x) {
  const RowsPlan& r = x.plan.rows();
  const Plan cp = rows_columns_axes(x.plan, r.across_axis);
  x.out += emit_under(x, cp, true, [&](Ctx& y) { emit_jagged_vector(y, *r.columns, true); });
}

}  // namespace mxjit::detail
