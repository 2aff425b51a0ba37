// The columns kernel: dim1 (and 3-D per-expert, and dim0+dim1 fused) casts of a 2-byte input.
// Each thread holds rows_per_thread (16 or 8) rows x 8 columns in registers (16-byte loads along ax_c); a
// scale block of B rows along ax_r is B / rows_per_thread neighbouring lanes (amax by shuffles), and every
// column's codes leave as one 16- or 8-byte store along ax_r. Lanes of a warp are arranged so
// that one store instruction writes whole lines of each column (columns_lanes_r in plan.hpp):
//
//   lane = cl * LR + rg        rg: row group (0..LR-1)     cl: 8-column group
//
//   16 rows per thread, LR = 8:                8 rows, LR = 4 (dim0+dim1 with staged codes: a
//            cols c0..c0+7   c0+8.. ...        row's 32-column block is 4 lanes cl = 4m..4m+3 of
//   rows  0-15   lane 0      lane 8            one rg; shuffles 4, 8)
//   rows 16-31   lane 1      lane 9             rows 0-7    lane 0   lane 4  ...  lane 28
//   ...                                         ...                               a warp: 32 x 64,
//   rows 112-127 lane 7      lane 15            rows 24-31  lane 3   lane 7  ...  lane 31
//   (a warp: 128 rows x 32 columns;             (4 warps stacked, 2 side by side; a load: 4
//    8 warps side by side)                       whole 128-byte lines; unstaged codes: LR = 8,
//                                                a warp 64 x 32)
//
// Column-wise output: lanes 0..7 store rows 0..127 (0..63) of one column = one (half) 128-byte
// line per column (whole lines: docs/perf-log.md#columns-column-stores).
//
// Two paths: warps whose tiles are whole and whose code stores are aligned (the fast path: no
// guards, output pointers stepped by their strides) and the rest (tails, guarded loads and
// stores). A bare 16-bit input's block maxima come from its words two lanes per instruction
// (max.NaN.bf16x2 / f16x2); on the fast path each lane then computes only its share of a block's
// scales (emit_scatter_scales). Scales are staged in shared memory and written by the CTA after
// its codes, 4 neighbouring bytes per thread in whole tiles, blocked padding included; so are a
// dim0+dim1 cast's codes on whole tiles (codes_staged: then the CTA, not the warp, picks the path).
//
// Pipelined form (ColumnsPlan::stages S >= 2, a schedule, sm_90+): persistent CTAs, as many as the GPU
// holds, walk the tiles blockIdx.x, + gridDim.x, ...; the CTA keeps its next S - 1 whole tiles
// in flight as bulk copies (the TMA engine, a copy per 256- or 512-byte row) into a ring of S
// slots in shared memory, each slot's mbarrier counting the bytes landed. Threads read their
// rows back from the slot (a padded layout, columns_slot_bytes in plan.hpp); tail tiles are
// not copied and load from global memory as in the one-tile form:
//
//   ring slot:   0        1        0        1          (S = 2)
//   tile:       t0       t1       t2       t3   ...     copy t(i+1), wait for t(i), work on t(i)
//                \ copy   \ copy   \ copy
//                 work t0  work t1  work t2
//
// The barrier before the staged scales' write-out also frees the slot for the copies issued at
// the next tile's start; the staged scales alternate between two buffers by tile; staged
// dim0+dim1 codes take a second barrier per tile. Not the default: measured slower
// (docs/perf-log.md#columns-pipelined).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "codegen/plan_rules.hpp"
#include "codegen/scale_expr_cuda.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

constexpr int kCols = 8;  // columns per thread (16 bytes of a 2-byte input); rows per thread: ColumnsPlan::rows_per_thread

// The columns plan of the kernel being written.
const ColumnsPlan& cols(const Ctx& x) { return x.plan.columns(); }

// True when scale s has a scales output (of FP32 or bf16 scales with `f32`): its values go through
// shared memory (s<s>_info: E8M0/E4M3 bytes; s<s>_val: FP32 or bf16 scales as FP32).
bool scale_staged(const Ctx& x, int s, bool f32 = false) {
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind == OutputKind::scales && x.v.output_index[size_t(o)] == s &&
        (!f32 || out.dtype == DType::f32 || out.dtype == DType::bf16))
      return true;
  }
  return false;
}

// The values of root `root` for `n` elements of a row or column into arr[0..n) (loop variable
// `var`, 0 out of range). Register-only expressions are computed unguarded and masked on the
// The values of root `root` for `n` elements of a row or column into arr[0..n) (loop variable
// `var`, 0 out of range). Register-only expressions are computed unguarded and masked on the
// tail path only; expressions that load (vec inputs, dequant) are guarded per element. On the
// fast path (`fast`: the warp's tiles are whole) nothing is masked or guarded.
void emit_values(Ctx& x, int root, const std::string& arr, const std::string& var, int n, const std::string& ind, bool fast,
                 bool byte_perm = false) {
  std::string body;
  ExprEmitter em([&](const NodePtr& nd) -> std::string {
    if (nd->op == Op::input) {
      const InputDecl& d = x.p.inputs()[size_t(x.p.input_index(nd->name))];
      const int k = x.p.input_index(nd->name);
      // The same lanes through a byte permute: with both a row-wise and a column-wise scale, the
      // compiler would otherwise share the row pass's unpacked values with the column pass and
      // keep all of them live in between (110 registers instead of 80 at 8 rows per thread).
      if (byte_perm) {
        if (d.dtype == DType::bf16) return fmt::format("mx_float(__byte_perm(w{0}[r][c >> 1], 0u, (c & 1) ? 0x3244 : 0x1044))", k);
        return fmt::format("mx_f16_to_f32(mx_u16(__byte_perm(w{0}[r][c >> 1], 0u, (c & 1) ? 0x4432 : 0x4410)))", k);
      }
      if (d.dtype == DType::bf16) return fmt::format("mx_float((c & 1) ? (w{0}[r][c >> 1] & 0xffff0000u) : (w{0}[r][c >> 1] << 16))", k);
      return fmt::format("mx_f16_to_f32(mx_u16((c & 1) ? (w{0}[r][c >> 1] >> 16) : (w{0}[r][c >> 1] & 0xffffu)))", k);
    }
    return leaf_expr(x, nd);
  }, "t");
  const NodePtr& rn = x.v.roots[size_t(root)];
  std::string v = em.emit(rn, body, ind + "  ");
  const std::string in = "r0 + r < n_r && c0 + c < n_c";
  x.out += fmt::format("{}float {}[{}];\n#pragma unroll\n{}for (int {} = 0; {} < {}; ++{}) {{\n", ind, arr, n, ind, var, var, n, var);
  if (fast || register_leaves(rn)) {
    x.out += fmt::format("{}{}  {}[{}] = {};\n{}}}\n", body, ind, arr, var, v, ind);
    // A bare input needs no mask: the loads leave +0 bits out of range. Only with one scale: in
    // the fused dim0+dim1 kernel the unmasked values raised ptxas's spills from 136 to 376 bytes.
    if (!fast && (rn->op != Op::input || x.v.scales.size() > 1))
      x.out += fmt::format("{}if (!(rows_full && cols_full)) {{\n#pragma unroll\n{}  for (int {} = 0; {} < {}; ++{}) if (!({})) {}[{}] = 0.0f;\n{}}}\n",
                           ind, ind, var, var, n, var, in, arr, var, ind);
  } else {
    x.out += fmt::format("{}  if (!((rows_full && cols_full) || ({}))) {{ {}[{}] = 0.0f; continue; }}\n{}{}  {}[{}] = {};\n{}}}\n", ind, in,
                         arr, var, body, ind, arr, var, v, ind);
  }
}

// m = the block's max |x| bits over this thread's elements, combined across the block's lanes
// (xors), then scale s from it: byte<s>, flag<s>, mult<s>, sval<s>. `packed_m`, when given, is
// the thread's max already (a packed-lane expression); else it is taken over arr[0..n).
void emit_amax_of(Ctx& x, int s, const std::string& arr, int n, const std::vector<int>& xors, const std::string& ind,
                  const std::string& packed_m = "") {
  const bool flush = x.v.scale_flush[size_t(s)];
  if (!packed_m.empty()) {
    // The flush of the maximum is the maximum of the flushed values (flushing is monotonic).
    x.out += fmt::format("{}mx_u32 m = {};\n", ind, packed_m);
    if (flush) x.out += fmt::format("{}if (m < 0x00800000u) m = 0u;\n", ind);
  } else {
    x.out += fmt::format("{0}mx_u32 m = 0u;\n#pragma unroll\n{0}for (int e = 0; e < {1}; ++e) {{ mx_u32 a = mx_bits({2}[e]) & 0x7fffffffu; {3}{4}m = a > m ? a : m; }}\n",
                         ind, n, arr, flush ? "if (a < 0x00800000u) a = 0u; " : "", amax_drop_nan(*x.v.scales[size_t(s)], "a"));
  }
  for (int o : xors) x.out += fmt::format("{}{{ const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, m, {}); m = o_ > m ? o_ : m; }}\n", ind, o);
  const bool stored = scale_stored(x, s), coded = scale_coded(x, s);
  x.out += scale_from_amax(x.v.scales[size_t(s)], ind, "", stored, coded);
  x.out += scale_slot_decls(x, s, stored, coded, ind) + scale_slot_copy(x, s, stored, coded, ind);
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

// The code output o of quantize q: along ax_r (column-wise codes) or ax_c, and its store bytes.
struct CodeOut {
  int o;
  bool along_r;
  int bytes;
};
std::vector<CodeOut> code_outputs(const Ctx& x) {
  std::vector<CodeOut> r;
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    if (x.p.outputs()[size_t(o)].kind != OutputKind::elems) continue;
    const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
    const bool along_r = block_of(q).axes[0] == x.plan.ax_r;
    const int n = along_r ? cols(x).rows_per_thread : kCols;
    r.push_back({o, along_r, q->elem.packed() ? n / 2 : n});
  }
  return r;
}

// True (a C expression) when every code output's stores of `bytes` bytes (0: its own store
// width) are aligned (stores_aligned, joined by &&); "true" without code outputs.
std::string codes_aligned(const Ctx& x, int bytes = 0) {
  std::string all;
  for (const CodeOut& co : code_outputs(x))
    all += (all.empty() ? "" : " && ") + stores_aligned(x, co.o, co.along_r ? x.plan.ax_r : x.plan.ax_c, bytes ? bytes : co.bytes);
  return all.empty() ? "true" : all;
}

// dim0+dim1 (a row-wise scale, 8 rows per thread, 128 x 128 tiles, 8-byte code stores): each
// whole tile's codes are staged in shared memory and leave as whole 128-byte lines, a row (or a
// column) per half-warp. Stored straight from the registers, a warp's store wrote 8 rows x 32
// bytes (4 columns x 64 bytes): twice the L2 write requests (docs/perf-log.md#columns-staged-codes).
//
//   q<o>_tile: 128 lines (rows of row-wise codes, columns of column-wise codes) of 128 bytes.
//   An 8-byte store is served a half-warp at a time, so the 16 lanes of a half-warp must fall
//   on all 16 8-byte positions of a bank row; a quarter-warp reading one line's 16-byte chunks
//   covers a bank row whatever the layout.
//
//     one-tile form, 4 lanes along the rows (a half-warp: 4 row groups x 4 column groups):
//     lines in order, padded so that a bulk copy takes a line whole (kColumnsLinePad = 384
//     bytes per tile: pad(127) = 3 * 32 + 3 * 96); the pad puts lines 8 apart (the lines of one warp store) 32 bytes apart on the banks
//
//       pad(L) = ((L >> 3) & 3) * 32 + (L >> 5) * 96     (line_pad; it only grows with L)
//       line L at L * 128 + pad(L):  | 128 bytes, in order |
//
//       row-wise codes   a half-warp: rows 8g + r, g = 0..3, 32 bytes each: banks +0, +32, +64, +96
//       column-wise      a half-warp: lines 8k + c, k = 0..3 (4..7), 32 bytes each: the same
//
//     pipelined form, 8 lanes along the rows (8 row groups x 2 column groups): chunk k of
//     line L at k ^ swz(L)
//       row-wise codes   swz(L) = ((L >> 3) & 7) << 1   8 rows x 16 bytes
//       column-wise      swz(L) = ((L >> 3) & 1) << 3   2 columns x 64 bytes
bool codes_staged(const Ctx& x) { return cols(x).codes_staged; }

// The one-tile form (4 lanes along the rows) keeps each line's 128 bytes in order and pads
// between lines instead (line_pad), so that a bulk copy can take a line as it is.
bool lines_padded(const Ctx& x) { return cols(x).lines_padded; }

// The pipelined form's swizzle: chunk k of line L at k ^ swz(L).
std::string code_swizzle(bool along_r, const std::string& line) {
  return along_r ? fmt::format("((({} >> 3) & 1) << 3)", line) : fmt::format("((({} >> 3) & 7) << 1)", line);
}

// Bytes before line L beyond L * 128 in the one-tile form (a multiple of 16, growing with L).
std::string line_pad(const std::string& line) { return fmt::format("((({0} >> 3) & 3) * 32 + ({0} >> 5) * 96)", line); }

// The consumers of scale s: its scales outputs (staged) and the codes of its quantizes.
void emit_scale_consumers(Ctx& x, int s, bool along_r, const std::string& stage_index, const std::string& ind,
               const std::string& scale_cond, const std::string& arr, bool fast, bool stage = true) {
  if (stage && scale_staged(x, s)) {
    // Into shared memory; the CTA writes the tile's scales at the end (emit_tile_scales).
    x.out += fmt::format("{}if ({}) {{\n", ind, scale_cond);
    x.out += fmt::format("{}  const int lb = {};\n", ind, stage_index);
    x.out += scale_staged(x, s, true) ? fmt::format("{0}  s{1}_val[lb] = sval{1};\n{0}}}\n", ind, s)
                                      : fmt::format("{0}  s{1}_info[lb] = byte{1};\n{0}}}\n", ind, s);
  }
  for (const CodeOut& co : code_outputs(x)) {
    const int o = co.o;
    const int qi = x.v.output_index[size_t(o)];
    if (x.v.quantize_scale[size_t(qi)] != s) continue;
    const NodePtr& q = x.v.quantizes[size_t(qi)];
    const int n = along_r ? cols(x).rows_per_thread : kCols;
    x.out += fmt::format("{}{{  // output '{}' ({})\n", ind, x.p.outputs()[size_t(o)].name, q->elem.str());
    emit_packed_codes(x, q, s, arr, n, [&](int h) {
      const std::string e = fmt::format("(e + {})", h);
      return along_r ? x.linear_index(e, "c") : x.linear_index("r", e);
    }, ind + "  ");
    const int packed = q->elem.packed() ? (along_r ? x.plan.ax_r : x.plan.ax_c) : -1;
    if (fast && codes_staged(x)) {  // into the tile's staged codes (line, 8-byte chunk)
      // The swizzle reads the thread's first line (lane_c0 or lane_r0, a multiple of 8): the
      // loop's 8 lines share it, so the address is a per-thread base plus 128 per line (written
      // with r0 - t_r0 + r, the swizzle took 5 instructions per store).
      const std::string first = along_r ? "lane_c0" : "lane_r0", line = fmt::format("({} + {})", first, along_r ? "c" : "r"),
                        chunk = along_r ? "(lane_r0 >> 3)" : "(lane_c0 >> 3)";
      if (lines_padded(x))
        x.out += fmt::format("{0}  *reinterpret_cast<uint2*>(&q{1}_tile[{2} * 128 + {3} + ({4} << 3)]) = make_uint2(wd[0], wd[1]);\n", ind, o,
                             line, line_pad(first), chunk);
      else
        x.out += fmt::format("{0}  *reinterpret_cast<uint2*>(&q{1}_tile[{2} * 128 + (({3} ^ {4}) << 3)]) = make_uint2(wd[0], wd[1]);\n", ind, o,
                             line, chunk, code_swizzle(along_r, first));
    } else if (fast) {  // whole and aligned (the fast path's condition); ob<o>_ steps along the loop
      x.out += fmt::format("{}  mx_u8* const ob = ob{}_;\n", ind, o);
      emit_store_codes(x, q, n, "true", "true", ind + "  ", true);
      x.out += fmt::format("{}  ob{}_ += os{};\n", ind, o, o);
    } else {
      x.out += fmt::format("{}  mx_u8* const ob = static_cast<mx_u8*>(P.out[{}]) + ({});\n", ind, o, x.out_offset(o, "r", "c", packed));
      if (along_r)
        emit_store_codes(x, q, n, "rows_full && c0 + c < n_c && " + stores_aligned(x, o, x.plan.ax_r, co.bytes),
                         "r0 + e < n_r && c0 + c < n_c", ind + "  ", true);
      else
        emit_store_codes(x, q, n, "cols_full && r0 + r < n_r && " + stores_aligned(x, o, x.plan.ax_c, co.bytes),
                         "r0 + r < n_r && c0 + e < n_c", ind + "  ", true);
    }
    x.out += ind + "}\n";
  }
}

// Whether scale s takes one scale per lane on the fast path (ColumnsPlan::scatter_scales;
// emit_scatter_scales in emit_common.cpp): 16 scale computations per thread become 4 at 8
// items, 4 lanes.
bool scatter(const Ctx& x, int s) { return cols(x).scatter_scales[size_t(s)]; }

// Loads (rows_per_thread rows of 16 bytes, all issued before any is used), then every scale and its uses.
// `fast`: the warp's tiles are whole and every code store aligned, so nothing is guarded.
// `along_c`: a scale runs along ax_c too (dim0+dim1); `lanes_r`: columns_lanes_r of the plan.
void emit_body(Ctx& x, bool fast, bool along_c, int lanes_r, const std::string& ind) {
  const Plan& pl = x.plan;
  const int kRows = cols(x).rows_per_thread;
  for (size_t k = 0; k < x.p.inputs().size(); ++k) {
    if (x.p.inputs()[k].kind != InputDecl::Kind::tensor) continue;
    x.out += fmt::format("{}mx_u32 w{}[{}][4];\n", ind, k, kRows);
    if (cols(x).stages > 1 && fast) {
      // Pipelined, a whole tile: its rows have landed in the ring slot (this thread's row r at
      // slot + r * row bytes).
      x.out += fmt::format("#pragma unroll\n{0}for (int r = 0; r < {1}; ++r) {{\n{0}  const uint4 v = *reinterpret_cast<const uint4*>(slot + r * {2});\n",
                           ind, kRows, columns_row_bytes(cols(x)));
      x.out += fmt::format("{0}  w{1}[r][0] = v.x; w{1}[r][1] = v.y; w{1}[r][2] = v.z; w{1}[r][3] = v.w;\n{0}}}\n", ind, k);
      continue;
    }
    if (fast) {
      // One base pointer; rows step by the row stride (no per-row 64-bit index products).
      x.out += fmt::format("{}{{\n{}  const mx_u16* const p = static_cast<const mx_u16*>(P.in[{}]) + ({});\n", ind, ind, k,
                           x.in_offset(int(k), "0", "0"));
      x.out += fmt::format("{0}  const mx_i64 rs = P.in_stride[{1}][{2}];\n#pragma unroll\n{0}  for (int r = 0; r < {3}; ++r) {{\n", ind, k,
                           pl.ax_r, kRows);
      x.out += fmt::format("{0}    const mx_v16 v = mx_ld16_l2(p + r * rs);\n{0}    w{1}[r][0] = v.x; w{1}[r][1] = v.y; w{1}[r][2] = v.z; w{1}[r][3] = v.w;\n{0}  }}\n{0}}}\n",
                           ind, k);
      continue;
    }
    x.out += fmt::format("#pragma unroll\n{}for (int r = 0; r < {}; ++r) {{\n", ind, kRows);
    x.out += fmt::format("{}  const int c = 0;\n", ind);
    x.out += fmt::format("{}  const mx_u16* const p = static_cast<const mx_u16*>(P.in[{}]) + ({});\n", ind, k, x.in_offset(int(k), "r", "c"));
    x.out += fmt::format("{0}  if (cols_full && r0 + r < n_r) {{\n{0}    const mx_v16 v = mx_ld16_l2(p);\n{0}    w{1}[r][0] = v.x; w{1}[r][1] = v.y; w{1}[r][2] = v.z; w{1}[r][3] = v.w;\n",
                         ind, k);
    x.out += fmt::format("{}  }} else {{\n", ind);
    x.out += fmt::format("{}    for (int e = 0; e < 4; ++e) w{}[r][e] = 0u;\n", ind, k);
    x.out += fmt::format("{}    if (r0 + r < n_r) for (int e = 0; e < {}; ++e) if (c0 + e < n_c) w{}[r][e >> 1] |= mx_u32(p[e]) << (16 * (e & 1));\n",
                         ind, kCols, k);
    x.out += fmt::format("{}  }}\n{}}}\n", ind, ind);
  }
  // K groups: warp 0 finds the tile's scale columns' groups while its loads are in flight.
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (const int n = grouped_cols_table(x, o)) {
      const Output& out = x.p.outputs()[size_t(o)];
      const int k = x.p.input_index(out.layout.group_offsets());
      const BlockSpec& b = block_of(x.v.scales[size_t(x.v.output_index[size_t(o)])]);
      const int64_t br = b.size_along(pl.ax_r), bc = b.size_along(pl.ax_c);
      const auto [ra, ca] = blocked_axes(b, pl.rank);
      // Then the padding this tile owns (kernel_writes_padding: no memset), both before the barrier.
      x.out += fmt::format(
          "{0}if (warp == 0) {{\n"
          "{0}  mx_grouped_cols_table(mx_gt{1}, {2}, static_cast<const int*>(P.in[{3}]), P.in_stride[{3}][0], "
          "P.in_extent[{3}], {4}, P.shape[{5}], t_r0 / {4});\n"
          "{0}  mx_grouped_cols_pad(static_cast<mx_u8*>(P.out[{1}]), mx_gt{1}, {2}, t_r0 / {4}, {6}, {7}, P.out_shape[{1}][{8}], "
          "P.out_shape[{1}][{9}], P.in_extent[{3}]);\n"
          "{0}}}\n",
          ind, o, n, k, br, pl.ax_r, bc == 1 ? std::string("t_c0") : fmt::format("t_c0 / {}", bc),
          pl.tile().second / bc, ra, ca);
    }
  const std::string in2 = ind + "  ", in3 = ind + "    ";
  // A bare 16-bit input (its words are +0 out of range): every block amax two elements at a time
  // from the loaded words, all in one pass before any scale is used (the |x| words then die; a
  // pass per scale would keep them live from the first to the second):
  //   pm<s>[j] column pair j (columns 2j, 2j+1): halves of word j over the thread's rows
  //   pr<s>[r] row r: both halves of its 4 words
  std::vector<int> pk(x.v.scales.size(), -1);
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    pk[size_t(s)] = packed_amax_input(x, s);
    if (pk[size_t(s)] < 0) continue;
    const int k = pk[size_t(s)];
    const char* pmax = packed_max_fn(x, k);
    if (block_of(x.v.scales[size_t(s)]).axes[0] == pl.ax_r) {
      x.out += fmt::format("{0}mx_u32 pm{1}[4];\n#pragma unroll\n{0}for (int j = 0; j < 4; ++j) {{\n{0}  pm{1}[j] = w{2}[0][j] & 0x7fff7fffu;\n", ind, s, k);
      x.out += fmt::format("#pragma unroll\n{0}  for (int r = 1; r < {1}; ++r) pm{2}[j] = {3}(pm{2}[j], w{4}[r][j] & 0x7fff7fffu);\n{0}}}\n", ind,
                           kRows, s, pmax, k);
    } else {
      x.out += fmt::format("{0}mx_u32 pr{1}[{2}];\n#pragma unroll\n{0}for (int r = 0; r < {2}; ++r)\n", ind, s, kRows);
      const std::string w = fmt::format("w{}[r]", k);
      x.out += fmt::format("{0}  pr{1}[r] = {2};\n", ind, s, packed_abs_max4(x, k, w + "[0]", w + "[1]", w + "[2]", w + "[3]"));
    }
  }
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    const BlockSpec& b = block_of(x.v.scales[size_t(s)]);
    const int root = x.v.scale_root[size_t(s)];
    const bool coded = scale_coded(x, s);  // else only the scales: no values, no gathered multipliers
    const int64_t bs = b.sizes[0];
    // Fast path: each code output's pointer at the thread's first row and column, stepped by its
    // stride along the loop (no per-store 64-bit index products).
    for (const CodeOut& co : code_outputs(x)) {
      if (!fast || codes_staged(x) || x.v.quantize_scale[size_t(x.v.output_index[size_t(co.o)])] != s) continue;
      const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(co.o)])];
      const int packed = q->elem.packed() ? (co.along_r ? pl.ax_r : pl.ax_c) : -1;
      x.out += fmt::format("{}mx_u8* ob{}_ = static_cast<mx_u8*>(P.out[{}]) + ({});\n", ind, co.o, co.o, x.out_offset(co.o, "0", "0", packed));
      x.out += fmt::format("{}const mx_i64 os{} = P.out_stride[{}][{}];\n", ind, co.o, co.o, co.along_r ? pl.ax_c : pl.ax_r);
    }
    if (b.axes[0] == pl.ax_r) {
      const int lanes = int(bs / kRows);
      std::vector<int> xors;
      for (int l = lanes / 2; l >= 1; l /= 2) xors.push_back(l);
      // c is a compile-time constant after unrolling: one half of the pair's word.
      const int k = pk[size_t(s)];
      auto col_m = [&](const std::string& c) {
        return fmt::format("({0} & 1) ? {1} : {2}", c, widen_half(x, k, fmt::format("pm{}[{} >> 1]", s, c), 1),
                           widen_half(x, k, fmt::format("pm{}[{} >> 1]", s, c), 0));
      };
      // This block's scale in the tile: block row (rows from the tile's origin) / bs, column c.
      const ItemExpr col_stage = [&](const std::string& c) {
        return fmt::format("((r0 - t_r0) / {}) * {} + (c0 - t_c0) + {}", bs, cols(x).tile_cols, c);
      };
      const bool dist = fast && scatter(x, s);
      if (dist) emit_scatter_scales(x, s, kCols, xors, col_m, scale_staged(x, s) ? col_stage : nullptr, ind, coded);
      else x.out += fmt::format("{}// Scales {}: blocks of {} along axis {} ({} lanes), column by column.\n", ind, s, bs, pl.ax_r, lanes);
      emit_clean_split(x, dist && coded ? scales_clean(s, kCols, xors) : "", ind, [&](bool clean) {
        if (dist && !coded) return;  // the owners stored the scales, and no codes need them
        x.out += fmt::format("#pragma unroll\n{}for (int c = 0; c < {}; ++c) {{\n", ind, kCols);
        if (coded || k < 0) emit_values(x, root, "col", "r", kRows, in2, fast, along_c);
        x.out += in2 + "{\n";
        if (dist) emit_gather_scale(x, s, kCols, xors, "c", in3, std::to_string(s), clean);
        else emit_amax_of(x, s, "col", kRows, xors, in3, k >= 0 ? col_m("c") : "");
        const size_t at = x.out.size();
        emit_scale_consumers(x, s, true, col_stage("c"), in3,
                  fast ? fmt::format("(rg % {}) == 0", lanes) : fmt::format("(rg % {}) == 0 && r0 < n_r && c0 + c < n_c", lanes), "col",
                  fast, !dist);
        insert_used(x.out, at, {{"r", in3 + "const int r = 0;\n"}});
        x.out += in2 + "}\n" + ind + "}\n";
      });
    } else {
      const int k = pk[size_t(s)];
      auto row_m = [&](const std::string& r) { return widen_half(x, k, fmt::format("pr{}[{}]", s, r), -1); };
      const ItemExpr row_stage = [&](const std::string& r) {
        return fmt::format("(r0 - t_r0 + {}) * {} + (c0 - t_c0) / {}", r, cols(x).tile_cols / bs, bs);
      };
      const std::vector<int> xors = {2 * lanes_r, lanes_r};
      const bool dist = fast && scatter(x, s);
      if (dist) emit_scatter_scales(x, s, kRows, xors, row_m, scale_staged(x, s) ? row_stage : nullptr, ind, coded);
      else x.out += fmt::format("{}// Scales {}: blocks of {} along axis {} (4 lanes), row by row.\n", ind, s, bs, pl.ax_c);
      emit_clean_split(x, dist && coded ? scales_clean(s, kRows, xors) : "", ind, [&](bool clean) {
        if (dist && !coded) return;  // the owners stored the scales, and no codes need them
        x.out += fmt::format("#pragma unroll\n{}for (int r = 0; r < {}; ++r) {{\n", ind, kRows);
        if (coded || k < 0) emit_values(x, root, "row", "c", kCols, in2, fast);
        x.out += in2 + "{\n";
        if (dist) emit_gather_scale(x, s, kRows, xors, "r", in3, std::to_string(s), clean);
        else emit_amax_of(x, s, "row", kCols, {lanes_r, 2 * lanes_r}, in3, k >= 0 ? row_m("r") : "");
        // The block's first lane: cl spans 32 / lanes_r column groups, a block bs / kCols of them.
        const std::string first = 32 / lanes_r <= bs / kCols ? std::string("cl == 0") : fmt::format("(cl % {}) == 0", bs / kCols);
        const size_t at = x.out.size();
        emit_scale_consumers(x, s, false, row_stage("r"), in3, fast ? first : first + " && r0 + r < n_r && c0 < n_c",
                  "row", fast, !dist);
        insert_used(x.out, at, {{"c", in3 + "const int c = 0;\n"}});
        x.out += in2 + "}\n" + ind + "}\n";
      });
    }
  }
}

}  // namespace

// Declares this thread's tile coordinates for tile index `t` (a C expression): tr, tc, the
// batch indices bi<a>, the thread's first row r0 and column c0, and the tile's origin t_r0, t_c0.
// Needs lane_r0 / lane_c0 (the thread's offsets inside a tile).
std::string tile_coords(const Ctx& x, const std::string& t, const std::string& ind) {
  const Plan& pl = x.plan;
  std::string o = fmt::format("{}unsigned t_ = {};\n", ind, t);
  if (cols(x).rowwise_scale) {
    // Column tiles run fastest: a row-wise scale gives each tile 4 bytes of every row of linear
    // scales, so the 8 tiles sharing a 32-byte sector are neighbours in launch order
    // (docs/perf-log.md#columns-tile-order; clusters of neighbouring tiles measured slower).
    o += fmt::format("{0}const int tc = int(t_ % unsigned(P.tiles_c)); t_ /= unsigned(P.tiles_c);\n"
                     "{0}const int tr = int(t_ % unsigned(P.tiles_r)); t_ /= unsigned(P.tiles_r);\n", ind);
  } else {
    // Row tiles run fastest over the grid: neighbouring CTAs complete each column's lines together.
    o += fmt::format("{0}const int tr = int(t_ % unsigned(P.tiles_r)); t_ /= unsigned(P.tiles_r);\n"
                     "{0}const int tc = int(t_ % unsigned(P.tiles_c)); t_ /= unsigned(P.tiles_c);\n", ind);
  }
  for (auto it = pl.batch_axes.rbegin(); it != pl.batch_axes.rend(); ++it)
    o += fmt::format("{0}const mx_i64 bi{1} = t_ % unsigned(P.shape[{1}]); t_ /= unsigned(P.shape[{1}]);\n", ind, *it);
  o += fmt::format("{0}const int t_r0 = tr * {1}, t_c0 = tc * {2};  // the tile's origin\n", ind, cols(x).tile_rows, cols(x).tile_cols);
  o += fmt::format(
      "{0}const int r0 = t_r0 + lane_r0, c0 = t_c0 + lane_c0;  // this thread's rows r0 .. r0+{1}, columns c0 .. c0+7\n",
      ind, cols(x).rows_per_thread - 1);
  return o;
}

// The fast path's condition for a tile at (t_r0, t_c0), the same for every thread of the CTA:
// the tile is whole and every code store aligned.
std::string whole_tile(const Ctx& x) {
  return fmt::format("t_r0 + {} <= n_r && t_c0 + {} <= n_c && {}", cols(x).tile_rows, cols(x).tile_cols, codes_aligned(x));
}

// Pipelined kernel: the lambdas `whole(t_r0, t_c0)` (whole_tile) and `issue(t, j)`, which every
// thread calls to start the bulk copies of tile t into ring slot j: thread 0 arrives on full[j]
// expecting the tile's bytes (none when the tile is not whole: the tail path loads it from
// global memory, and the phase completes at once), and the first R lanes of each warp copy a
// row each (R = tile_r / warps) to its padded place (columns_slot_bytes). A bulk copy takes
// uniform operands, so a warp issues its lanes' copies one after another: the rows are spread over
// the warps (docs/perf-log.md#columns-pipelined).
void emit_issue(Ctx& x) {
  const Plan& pl = x.plan;
  const int k = lead_tensor_input(x.p);
  const int rb = columns_row_bytes(cols(x)), per_warp = cols(x).tile_rows / (pl.threads / 32);
  x.out += fmt::format("  auto whole = [&](int t_r0, int t_c0) {{ return {}; }};\n", whole_tile(x));
  x.out += "  auto issue = [&](unsigned t, int j) {\n";
  x.out += tile_coords(x, "t", "    ");
  x.out += fmt::format("    const bool ok = whole(t_r0, t_c0);\n    if (threadIdx.x == 0) mx_mbar_expect(&full[j], ok ? {}u : 0u);\n",
                       cols(x).tile_rows * rb);
  x.out += fmt::format("    if (!ok || lane >= {}) return;\n    const int i = warp * {} + lane;  // the row\n", per_warp, per_warp);
  x.out += fmt::format("    const mx_u8* const src = reinterpret_cast<const mx_u8*>(static_cast<const mx_u16*>(P.in[{}]) + ({}));\n", k,
                       x.in_offset(k, "i - lane_r0", "-lane_c0"));
  x.out += fmt::format("    mx_bulk_load(ring + j * {} + i * {} + 16 * (i / {}), src, {}u, &full[j]);\n", columns_slot_bytes(cols(x)), rb,
                       cols(x).rows_per_thread, rb);
  x.out += "  };\n";
}

void emit_columns_kernel(Ctx& x) {
  const Plan& pl = x.plan;
  const bool along_c = cols(x).rowwise_scale;
  const int kRows = cols(x).rows_per_thread, lanes_r = cols(x).lanes_along_rows, warps_r = cols(x).tile_rows / (lanes_r * kRows);
  const bool pipe = cols(x).stages > 1;
  const int S = cols(x).stages;
  x.out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const MxParams P) {{\n", pl.threads, pl.ctas_per_sm,
                       pl.kernel_name);
  // 32-bit indices (a 64-bit division is a long subroutine; 64-bit compares are two
  // instructions): the launcher checks that every extent and the tile count fit in 31 bits.
  x.out += fmt::format("  const int lane = threadIdx.x & 31, rg = lane % {0}, cl = lane / {0}, warp = threadIdx.x >> 5;\n", lanes_r);
  // Warps side by side along ax_c, or (warps_r > 1) stacked in pairs or more along ax_r.
  std::string wr_term, wc = "warp";
  if (warps_r > 1) {
    x.out += fmt::format("  const int wr = warp % {0}, wc = warp / {0};  // {0} warps along axis {1}\n", warps_r, pl.ax_r);
    wr_term = fmt::format("wr * {} + ", lanes_r * kRows);
    wc = "wc";
  }
  x.out += fmt::format("  const int lane_r0 = {}rg * {}, lane_c0 = {} * {} + cl * {};  // the thread's offsets in a tile (axes {}, {})\n",
                       wr_term, kRows, wc, 32 / lanes_r * kCols, kCols, pl.ax_r, pl.ax_c);
  x.out += fmt::format("  const int n_r = int(P.shape[{}]), n_c = int(P.shape[{}]);\n", pl.ax_r, pl.ax_c);
  // Scales are staged per tile and written by the whole CTA at the end: a thread's own scales
  // are one byte in each of several 32-byte sectors (8 sectors per warp store for row-wise
  // scales), which loaded the L2 with partial writes as numerous as the codes' sectors.
  // Pipelined: two buffers, alternating by tile, so that one barrier per tile suffices.
  std::vector<std::pair<std::string, std::string>> staged;  // (name, element type)
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    if (!scale_staged(x, s)) continue;
    const BlockSpec& b = block_of(x.v.scales[size_t(s)]);
    const int nb = int((cols(x).tile_rows / b.size_along(pl.ax_r)) * (cols(x).tile_cols / b.size_along(pl.ax_c)));
    const bool f = scale_staged(x, s, true);
    const std::string name = (f ? "s" + std::to_string(s) + "_val" : "s" + std::to_string(s) + "_info"),
                      type = f ? "float" : "mx_u8";
    if (pipe) x.out += fmt::format("  __shared__ {} {}_buf[2][{}];\n", type, name, nb);
    else x.out += fmt::format("  __shared__ {} {}[{}];\n", type, name, nb);
    staged.emplace_back(name, type);
  }
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (const int n = grouped_cols_table(x, o))
      x.out += fmt::format(
          "  __shared__ MxGroupCursor mx_gt{}[{}];  // output '{}': the groups of the tile's scale columns, then Q_G\n",
          o, n + 1, x.p.outputs()[size_t(o)].name);
  const bool stage_codes = codes_staged(x);
  if (stage_codes)
    for (const CodeOut& co : code_outputs(x))
      x.out += fmt::format("  __shared__ __align__(16) mx_u8 q{}_tile[128 * 128{}];\n", co.o,
                           lines_padded(x) ? fmt::format(" + {}", kColumnsLinePad) : std::string());
  std::string ind = "  ";
  if (pipe) {
    const int slot_bytes = columns_slot_bytes(cols(x));
    x.out += fmt::format("  extern __shared__ __align__(128) mx_u8 ring[];  // [{}][{}]: tiles in flight (columns_slot_bytes)\n", S, slot_bytes);
    x.out += fmt::format("  __shared__ __align__(8) mx_u64 full[{}];  // per slot: its copies have landed (phase: the slot's use count & 1)\n", S);
    std::string n_tiles = "unsigned(P.tiles_r) * unsigned(P.tiles_c)";
    for (int a : pl.batch_axes) n_tiles += fmt::format(" * unsigned(P.shape[{}])", a);
    x.out += fmt::format("  const unsigned n_tiles = {};\n", n_tiles);
    x.out += fmt::format("  if (threadIdx.x == 0) {{\n    for (int j = 0; j < {}; ++j) mx_mbar_init(&full[j], 1);\n    mx_mbar_init_fence();\n  }}\n  __syncthreads();\n", S);
    emit_issue(x);
    x.out += fmt::format("  // Persistent CTAs: tiles blockIdx.x, + gridDim.x, ...; the next {} of them in flight.\n", S - 1);
    x.out += fmt::format("  for (int j = 0; j < {}; ++j)\n    if (blockIdx.x + j * gridDim.x < n_tiles) issue(blockIdx.x + j * gridDim.x, j);\n", S - 1);
    x.out += "  unsigned it = 0;  // this CTA's tile count: ring slot it % stages, staged scales it & 1\n";
    x.out += "  for (unsigned tile = blockIdx.x; tile < n_tiles; tile += gridDim.x, ++it) {\n";
    x.out += fmt::format("    if (tile + {0}u * gridDim.x < n_tiles) issue(tile + {0}u * gridDim.x, (it + {0}) % {1});\n", S - 1, S);
    for (const auto& [name, type] : staged) x.out += fmt::format("    {0}* const {1} = {1}_buf[it & 1];\n", type, name);
    ind = "    ";
    x.out += tile_coords(x, "tile", ind);
    x.out += fmt::format("    const bool fast = whole(t_r0, t_c0);\n    mx_mbar_wait(&full[it % {0}], (it / {0}) & 1);\n", S);
    x.out += fmt::format("    const mx_u8* const slot = ring + (it % {}) * {} + lane_r0 * {} + 16 * (lane_r0 / {}) + lane_c0 * 2;  // this thread's first row\n",
                         S, slot_bytes, columns_row_bytes(cols(x)), kRows);
  } else {
    x.out += tile_coords(x, "blockIdx.x", ind);
  }
  defer_decls(x, {{"rows_full", fmt::format("{}const bool rows_full = r0 + {} <= n_r;\n", ind, kRows)},
                  {"cols_full", fmt::format("{}const bool cols_full = c0 + {} <= n_c;\n", ind, kCols)}});
  // The fast path: every thread of the warp has whole tiles and every code store is aligned
  // (warp-uniform: both paths shuffle across the warp).
  const std::string fast = "rows_full && cols_full && " + codes_aligned(x);
  // Staged codes: the CTA takes one path (the copy-out below needs every warp's codes; a
  // CTA-uniform test without the barrier was no faster: docs/perf-log.md#columns-cta-path).
  // Pipelined: `fast` is whole(t_r0, t_c0), declared above (CTA-uniform).
  if (pipe) x.out += ind + "if (fast) {\n";
  else if (stage_codes) x.out += fmt::format("{}const bool fast = __syncthreads_and({});\n{}if (fast) {{\n", ind, fast, ind);
  else x.out += fmt::format("{}if (__all_sync(0xffffffffu, {})) {{\n", ind, fast);
  emit_body(x, true, along_c, lanes_r, ind + "  ");
  x.out += ind + "} else {\n";
  // The tail path (edge tiles, unaligned outputs) runs rarely: its loops stay rolled.
  const size_t tail = x.out.size();
  emit_body(x, false, along_c, lanes_r, ind + "  ");
  keep_rolled(x.out, tail);
  x.out += ind + "}\n";
  // Pipelined: this barrier also frees the tile's ring slot for the copies issued next.
  if (pipe && staged.empty() && !stage_codes) x.out += ind + "__syncthreads();\n";
  // sm_90+ with blocked scales: whole tiles' staged lines leave as bulk copies (ColumnsPlan::
  // bulk_copy_out; slower with linear scales: docs/perf-log.md#columns-bulk-copy-out).
  const bool bulk = cols(x).bulk_copy_out;
  if (bulk && int(code_outputs(x).size()) * 128 > pl.threads)
    throw Error(fmt::format("mxjit internal: {} code outputs need {} threads for their bulk copies; the plan has {}",
                            code_outputs(x).size(), code_outputs(x).size() * 128, pl.threads));
  if (!staged.empty() || stage_codes) {
    if (bulk) x.out += ind + "mx_bulk_fence();  // the staged codes, for the bulk copies after the barrier\n";
    x.out += ind + "__syncthreads();\n" + ind + "{\n";
    x.out += fmt::format("{0}  const int r0 = t_r0, c0 = t_c0, nr = n_r - r0 < {1} ? n_r - r0 : {1}, nc = n_c - c0 < {2} ? n_c - c0 : {2};\n",
                         ind, cols(x).tile_rows, cols(x).tile_cols);
    if (stage_codes) {
      // A line is 128 / B lanes' B-byte chunks (B = 16 where every code output is 16-byte
      // aligned, else 8): the CTA copies 256 / (128 / B) lines at a time, lines L0, L0 + that, ...
      // The swizzles are even, so a 16-byte chunk (8-byte chunks 2m, 2m + 1) stays whole.
      // 16-byte chunks halve the copy-out's instructions.
      auto copy_out = [&](int B, const std::string& in2) {
        const int lanes = 128 / B, lines = pl.threads / lanes;
        const char* type = B == 16 ? "uint4" : "uint2";
        x.out += fmt::format("{0}const int j = threadIdx.x & {1}, L0 = threadIdx.x / {2};\n", in2, lanes - 1, lanes);
        for (const CodeOut& co : code_outputs(x)) {
          const std::string along = fmt::format("(j * {})", B), r = co.along_r ? along : "L0", c = co.along_r ? "L0" : along;
          x.out += fmt::format("{0}mx_u8* d{1} = static_cast<mx_u8*>(P.out[{1}]) + ({2});\n{0}const mx_i64 step{1} = {3} * P.out_stride[{1}][{4}];\n",
                               in2, co.o, x.out_offset(co.o, r, c), lines, co.along_r ? pl.ax_c : pl.ax_r);
        }
        x.out += fmt::format("#pragma unroll\n{0}for (int i = 0; i < {1}; ++i) {{\n{0}  const int L = i * {2} + L0;\n", in2, 128 / lines, lines);
        for (const CodeOut& co : code_outputs(x)) {
          const std::string at = lines_padded(x) ? fmt::format("L * 128 + {} + j * {}", line_pad("L"), B)
                                                 : fmt::format("L * 128 + (((j * {}) ^ {}) << 3)", B / 8, code_swizzle(co.along_r, "L"));
          x.out += fmt::format("{0}  *reinterpret_cast<{1}*>(d{2}) = *reinterpret_cast<const {1}*>(&q{2}_tile[{3}]);\n{0}  d{2} += step{2};\n",
                               in2, type, co.o, at);
        }
        x.out += in2 + "}\n";
      };
      x.out += fmt::format("{0}  if (fast && {1}) {{\n", ind, codes_aligned(x, 16));
      if (bulk) {
        // One bulk copy per line (the TMA engine reads the shared bytes): output k's 128 lines
        // from threads 128k .. 128k + 127, spread over the warps (a copy takes uniform operands:
        // docs/perf-log.md#columns-bulk-copy-out).
        int k = 0;
        for (const CodeOut& co : code_outputs(x)) {
          const std::string r = co.along_r ? "0" : "L", c = co.along_r ? "L" : "0";
          x.out += fmt::format("{0}    {{\n{0}      const int L = int(threadIdx.x) - {1};\n", ind, 128 * k++);
          x.out += fmt::format("{0}      if (L >= 0 && L < 128) mx_bulk_store(static_cast<mx_u8*>(P.out[{1}]) + ({2}), &q{1}_tile[L * 128 + {3}], 128);\n{0}    }}\n",
                               ind, co.o, x.out_offset(co.o, r, c), line_pad("L"));
        }
        x.out += ind + "    mx_bulk_commit();\n";
      } else {
        copy_out(16, ind + "    ");
      }
      x.out += fmt::format("{0}  }} else if (fast) {{\n", ind);
      copy_out(8, ind + "    ");
      x.out += ind + "  }\n";
    }
    for (int o = 0; o < int(x.p.outputs().size()); ++o)
      if (x.p.outputs()[size_t(o)].kind == OutputKind::scales) emit_tile_scales(x, o);
    if (bulk) x.out += ind + "  mx_bulk_wait_read();  // the bulk copies have read the staged codes\n";
    x.out += ind + "}\n";
  }
  // Staged codes: the next tile's body must not overwrite them before they are copied out.
  if (pipe && stage_codes) x.out += ind + "__syncthreads();\n";
  if (pipe) x.out += "  }\n";
  x.out += "}\n";
}

}  // namespace mxjit::detail
