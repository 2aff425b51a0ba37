#pragma once
/// \file Pieces shared by the kernel emitters (tiled, direct, columns, grouped): the emitter context, the
/// banner and parameter block, leaf loads, scale computation and element encoding calls.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/values.hpp"

namespace mxjit::detail {

// Everything the emitter needs to know about the kernel being written.
/// One declaration that generated code may not need: the name it declares and its statement.
struct Decl {
  std::string name, statement;
};

struct Ctx {
  const Pipeline& p;
  const Target& target;
  const StrideClass& sc;
  const Plan& plan;
  ValueSet v;
  std::string out;
  int vec = 8;  // elements per 16-byte load of the lead input
  int scale_words = 0;  // 4-byte tile-scale stores handed out so far (emit_tile_scales rotates threads by it)
  std::vector<std::vector<Decl>> deferred;  // defer_decls' lists, by marker number

  // C expression of the domain index along `axis` for tile-local row `r` and column `c`.
  bool direct = false;  // direct (register) kernels name indices ix<axis>, the column `c`
  std::string idx(int axis, const std::string& r, const std::string& c) const {
    if (direct) return axis == plan.ax_c ? c : fmt::format("ix{}", axis);
    if (axis == plan.ax_c) return c == "0" ? "c0" : fmt::format("(c0 + {})", c);
    if (axis == plan.ax_r) return r == "0" ? "r0" : fmt::format("(r0 + {})", r);
    return fmt::format("bi{}", axis);
  }
  // Offset of output o at (r, c): sum of index * stride; the FP4 packed axis (if any) is halved.
  std::string out_offset(int o, const std::string& r, const std::string& c, int packed_axis = -1) const {
    std::string s;
    for (int a = 0; a < plan.rank; ++a) {
      std::string i = idx(a, r, c);
      if (a == packed_axis) i = fmt::format("({} >> 1)", i);
      s += fmt::format("{}{} * P.out_stride[{}][{}]", s.empty() ? "" : " + ", i, o, a);
    }
    return s;
  }
  // Row-major linear index of the domain element at (r, c): the Philox counter of stochastic rounding.
  std::string linear_index(const std::string& r, const std::string& c) const {
    std::string lin = "0";
    for (int a = 0; a < plan.rank; ++a) lin = fmt::format("({}) * P.shape[{}] + {}", lin, a, idx(a, r, c));
    return lin;
  }
  // Offset of input k at (r, c): sum of index * stride (the unit axis is a literal 1).
  std::string in_offset(int k, const std::string& r, const std::string& c, int packed_axis = -1, int64_t div = 1) const {
    std::string s;
    for (int a = 0; a < plan.rank; ++a) {
      std::string i = idx(a, r, c);
      if (a == packed_axis && div > 1) i = fmt::format("({} / {})", i, div);
      const bool unit = k < int(sc.unit_axis.size()) && sc.unit_axis[k] == a;
      s += fmt::format("{}{}", s.empty() ? "" : " + ", unit ? i : fmt::format("{} * P.in_stride[{}][{}]", i, k, a));
    }
    return s.empty() ? "0" : s;
  }
};


/// Arithmetic on C expressions with constants, folded where the constant makes it an identity, so
/// that kernels carry no dead code (`* 1`, `/ 1`, `% 1`, `+ 0`, `(x + 1 - 1) / 1`). `e` must be a
/// primary or parenthesised expression where the result is used inside another operator's operand.
std::string times(const std::string& e, int64_t k);      ///< e * k ("0" for k = 0, e for k = 1)
std::string over(const std::string& e, int64_t k);       ///< e / k (e for k = 1)
std::string modulo(const std::string& e, int64_t k);     ///< e % k ("0" for k = 1)
std::string ceil_over(const std::string& e, int64_t k);  ///< (e + k - 1) / k (e for k = 1)
std::string plus(const std::string& e, int64_t k);       ///< e + k (e for k = 0)

/// Turns every `#pragma unroll` line of `code` from offset `from` on into `#pragma unroll 1`: a
/// cold path (a kernel's tail tiles) keeps its loops rolled, which roughly halves the columns
/// kernel's code and its NVVM + ptxas time; the hot path's registers are unchanged (its register
/// arrays indexed in rolled loops move to the stack frame of the cold path only).
void keep_rolled(std::string& code, size_t from);

/// The pragma before a loop over the rows a thread holds in flight: unrolled on a hot path (its
/// row arrays stay in registers), rolled (`#pragma unroll 1`) on a path that runs rarely (a
/// group's last column tile, unaligned outputs), where one copy of the body is enough: the jagged
/// kernel's NVVM + ptxas time. Only these outer loops roll; inner loops over a thread's 8 columns
/// keep indexing the kernel's per-column arrays (maxima, multipliers) by constants.
inline const char* rows_pragma(bool hot) { return hot ? "#pragma unroll\n" : "#pragma unroll 1\n"; }

/// `text` with every line prefixed by `indent`; with `skip_directives`, preprocessor lines
/// (`#pragma unroll`) and empty lines are left as they are, as the emitters write them.
std::string indent_lines(const std::string& text, const std::string& indent, bool skip_directives = false);
/// The scalar load function for a stored type ("mx_ld_bf16", ...).
const char* load_fn(DType t);
/// The prelude function unpacking one 16-byte word of type t to floats ("mx_unpack_bf16x8", ...).
const char* unpack_fn(DType t);
/// Statements (prefixed by `indent`) filling `mx_v16 dst` with the raw bits of the 16-byte chunk of
/// input k whose first element is at column `first`, from element loads: element e is
/// P.in[k][offset] where `ok` holds (both C expressions of `c` = first + e), +0 bits elsewhere.
/// The tail path of a vector load: kernels keep raw words and unpack them where the values are
/// used, so that no load waits on an earlier one (unroll loads in flight).
std::string raw_chunk_tail(DType t, int k, const std::string& dst, const std::string& first, const std::string& ok,
                           const std::string& offset, const std::string& indent);
/// The FP32 value of a dequantize scale stored in format f, read from input k at `offset`.
std::string dequant_scale_value(ScaleFormat f, int k, const std::string& offset);
/// Template arguments of mx_encode_sw / mx_encode_rne / mx_decode for a format.
std::string format_args(const ElemFormat& f);
/// The banner (kernel name, generator, target, stride class, the pipeline's text form and hash,
/// the schedule and the plan), the target's feature macros and the #includes of kernel_headers.
void emit_banner(Ctx& x);
/// The templates/ headers a kernel of `p` includes, in order (mx_grouped.cuh only where an output
/// has a grouped scale layout).
std::vector<std::string> kernel_headers(const Pipeline& p);
/// The MxParams struct.
void emit_params(Ctx& x);
/// The C expression of an input-like leaf at element (r, c) (tensor inputs are preloaded x<k>[e]).
std::string leaf_expr(const Ctx& x, const NodePtr& n);
/// Statements turning `m` (max |x| bits) into flag, mult and byte or sval (byte_scale) for scale
/// node `sn` (any other than the library recipes: generic_scale_from_amax,
/// codegen/scale_expr_cuda.hpp). With `mult_table` (an NVFP4 scale whose kernel declared
/// emit_tamax's tables), the multiplier is read from that per-CTA table instead of being computed
/// per block. Without `stored` (no output stores this scale) an fp32/bf16 scale's sval is not
/// computed; without `coded` (no codes are cast with it) neither is an E8M0 scale's multiplier.
std::string scale_from_amax(const NodePtr& sn, const std::string& indent, const std::string& mult_table = {}, bool stored = true,
                            bool coded = true);
/// True where scale `sn` is stored as a byte (E8M0, E4M3): scale_from_amax gives it `byte`; the
/// others (fp32, bf16) get `sval` instead, so that a kernel declares only what it stores.
bool byte_scale(const Node& sn);
/// scale_from_amax's declarations: flag (where `flag`), mult (where `mult`), and byte or (where
/// `stored`) sval (byte_scale).
std::string scale_var_decls(const Node& sn, bool stored = true, bool mult = true, bool flag = true);
/// True where `code` (from offset `from`) uses `name` as an identifier, outside `//` comments.
bool uses(const std::string& code, const std::string& name, size_t from = 0);
/// Inserts into `code` at `at`, in order, the statements of those `decls` whose name the code
/// after `at`, or a kept statement after it in `decls`, uses as an identifier: a kernel declares
/// only what it reads (NVRTC warns on the rest, and every compile test checks that it does not).
void insert_used(std::string& code, size_t at, const std::vector<Decl>& decls);
/// Places `decls` at the current end of `x.out`, to be kept by finish_decls only where the finished
/// kernel reads them (insert_used): for declarations whose readers are emitted later, in code
/// that other declarations may still be inserted before (a marker, not an offset, holds the place).
void defer_decls(Ctx& x, std::vector<Decl> decls);
/// Resolves every defer_decls marker of `x.out`, last first (a kept statement may read an
/// earlier list's name).
void finish_decls(Ctx& x);
/// Emits a kernel under another plan, in a Ctx of its own whose declarations it finishes, and
/// returns its text: a module's second kernel (the token groups' plain kernel), or the across form,
/// whose body the jagged emitter writes under relabelled axes.
template <class Body>
std::string emit_under(const Ctx& x, const Plan& plan, bool direct, Body&& body) {
  Ctx y{x.p, x.target, x.sc, plan, x.v, {}, x.vec};
  y.direct = direct;
  body(y);
  finish_decls(y);
  return std::move(y.out);
}
/// True where a scales output stores scale s (someone reads its byte<s> or sval<s>).
bool scale_stored(const Ctx& x, int s);
/// True where a codes output is cast with scale s (someone reads its mult<s> and flag<s>).
bool scale_coded(const Ctx& x, int s);
/// The copies of scale_from_amax's results that a kernel keeps for scale s: flag<s> and mult<s>
/// where coded, byte<s> or sval<s> (byte_scale) where stored. Declarations with `arr` after each
/// name (e.g. "[8]"), each line prefixed by `ind`.
std::string scale_slot_decls(const Ctx& x, int s, bool stored, bool coded, const std::string& ind, const std::string& arr = "");
/// The assignments to those copies (their names followed by `idx`, e.g. "[e]") from scale_from_amax's
/// variables, or from `byte` / `sval` where given; one line prefixed by `ind`.
std::string scale_slot_copy(const Ctx& x, int s, bool stored, bool coded, const std::string& ind, const std::string& idx = "",
                            const std::string& byte = "byte", const std::string& sval = "sval");
/// The C expression of the value scale output `out` stores, from the variables byte<suffix> /
/// sval<suffix> that scale_from_amax's results were copied to: the E8M0/E4M3 byte, or the FP32
/// scale (bf16: its RNE bits) with every NaN stored as the canonical quiet NaN.
std::string stored_scale(const Output& out, const std::string& suffix);
/// The C type one scale of a scales output of element type `t` is stored as: float (FP32),
/// mx_u16 (bf16 bits) or mx_u8 (E8M0 / E4M3 bytes).
const char* scale_ctype(DType t);
/// Declares mx_tamax (the NVFP4 pre-pass tensor amax) when a scale needs it, and those of the
/// two conventions' per-tensor factors the finished kernel reads (defer_decls). With `tables`,
/// also fills, per CTA, mult_table(s) for each NVFP4 scale s: the multiplier of every E4M3 scale
/// byte, by the very operations scale_from_amax would run per block (so bit-identical), behind
/// a __syncthreads: emit it where every thread of the CTA arrives.
void emit_tamax(Ctx& x, bool tables = false);
/// The name of scale s's per-CTA multiplier table (see emit_tamax).
std::string mult_table(int s);
/// True when an output of `p` has a grouped scale layout (Layout::grouped_blocked_128x4): its
/// kernel then includes mx_grouped.cuh and carries MxParams::in_extent.
bool has_grouped_layout(const Pipeline& p);
/// Statements (each line prefixed by `indent`) storing the byte scale `val` of output `o`, whose
/// layout is grouped_blocked_128x4, at scale index `s_r` along the tile axis ax_r and `s_c`
/// along ax_c, through the byte pointer `ptr` (default: the output's own P.out[o]). The offset
/// comes from the prelude's mx_grouped_blocked_offset, which reads the group ends from the
/// layout's offsets input on the device; scales outside the scale tensor or past the last group
/// end are not stored. Padding is not written here: the launcher zeroes the whole output first
/// (Plan::zero_outputs), or the kernel writes it (kernel_writes_padding: the direct kernel at its
/// end; the columns kernel with a K-group table here, past the groups by the grid).
/// `cursor`: an MxGroupCursor the caller declared where its scales' loop starts (the group found
/// last; the walk runs only for a scale outside it). `placed`: a variable holding the scale row's
/// padded row (grouped_rows_place), for layouts grouped by rows with one scale per row: then no
/// walk over the groups per scale.
std::string grouped_scale_store(const Ctx& x, int o, const std::string& s_r, const std::string& s_c,
                                const std::string& val, const std::string& indent, const std::string& cursor,
                                const std::string& ptr = "", const std::string& placed = "");

/// The declaration of `cursor`, the MxGroupCursor grouped_scale_store reads, as a line at `indent`.
std::string group_cursor_decl(const std::string& cursor, const std::string& indent);

/// True when output o's layout is grouped by rows with one scale per domain row along the tile's
/// row axis: then the warp can find each scale row's padded row once (grouped_rows_place) instead
/// of walking the groups per scale.
bool grouped_one_per_row(const Ctx& x, int o);
/// The line declaring `var`, the padded row of scale row `row` of output o (grouped by rows with
/// one scale per domain row along the tile's row axis), found by the whole warp together
/// (mx_grouped_rows_place): emitted where every lane runs it. Empty unless grouped_one_per_row.
std::string grouped_rows_place(const Ctx& x, int o, const std::string& row, const std::string& var);
/// Writes the scales of output `o` for the CTA's tile from shared memory (s<i>_info: the byte in
/// the low 8 bits; s<i>_val: the FP32 scale; index (scale row in tile) * (tile_c / block cols) +
/// scale column), consecutive threads on neighbouring bytes of the scale tensor. The last tile
/// along an axis also writes the zero padding of a blocked layout. Expects tr, tc, the tile's
/// origin r0, c0 and valid extents nr, nc, and bi<a> of batch axes, in scope.
void emit_tile_scales(Ctx& x, int o);
/// The whole jagged (jagged groups of rows) kernel body.
void emit_jagged_kernel(Ctx& x);
/// The whole columns kernel body (dim1 / per-expert / fused casts of a 2-byte input, registers only).
void emit_columns_kernel(Ctx& x);
/// The whole rows kernel body (whole-axis blocks: a line's amax before its codes).
void emit_rows_kernel(Ctx& x);
/// The rows kernel's across form on 16-byte columns (RowsPlan::columns): the jagged vector
/// kernel with the whole axis as its one group (emit_jagged.cpp).
void emit_whole_columns_kernel(Ctx& x);
/// grouped_cols_table (plan_rules.hpp) of this kernel's plan.
int grouped_cols_table(const Ctx& x, int o);
/// The whole direct (register, no shared memory) kernel body.
void emit_direct_kernel(Ctx& x);
/// The pair conversion ("mx_cvt_e4m3x2", ...) for quantize node `q` on this target: hardware
/// cvt, or an exact emulation built on FP8 cvt / FMA for FP4 and FP6 without one (sm_89, sm_90);
/// nullptr where the software encoder runs (INT8, stochastic rounding, FP6 before sm_89). With
/// Saturate::none: the FP8 cvt followed by the overflow-to-NaN/Inf fix (mx_cvt_e4m3x2_nosat).
const char* hw_pair_fn(const Ctx& x, const NodePtr& q);
/// hw_pair_fn on `target`.
const char* hw_pair_fn(const Target& target, const NodePtr& q);
/// hw_pair_fn on `target` as if `q` saturated as `saturate` says: the saturating cvt that a
/// non-saturating cast takes for chunks with no lane past the overflow bound (emit_packed_codes).
const char* hw_pair_fn(const Target& target, const NodePtr& q, Saturate saturate);
/// The code a NaN block's elements get: the format's NaN (S=0, all ones) or 0 without one.
int nan_code(const ElemFormat& f);
/// The codes of src[0..n) (values; scaled here by scale s's multiplier with q's flush and the
/// NVFP4 torchao clamp) packed into `mx_u32 wd[]` (bytes, or nibbles for FP4, lowest element in
/// the lowest bits) with scale s's block flag applied to whole words (zero block: 0; NaN block:
/// the NaN code everywhere). `lin(0)` is the C expression of element e's row-major linear index
/// (the Philox counter; only used for stochastic rounding). With `per_column`, every element has
/// its own scale: multipliers `mult<s>[e]`, and the flags come as per-word masks `keep<s>[w]`
/// (0xff.. where codes stand) and `fill<s>[w]` (the zero or NaN codes of flagged elements).
/// `signs8`, given where the plan chose eight at once (DirectPlan::eight_at_once: 8 E2M1 codes
/// under an NVFP4 scale without the FP4 cvt): the C expression of the inputs' sign bits at 4e + 3
/// (see mx_e2m1x8_f32_finite); the eight-at-once path then serves finite multipliers.
void emit_packed_codes(Ctx& x, const NodePtr& q, int s, const std::string& src, int n,
                       const std::function<std::string(int)>& lin, const std::string& ind, bool per_column = false,
                       const std::string& signs8 = {});
/// The tensor input whose words the block amax of scale s can read two elements at a time
/// (max.NaN.bf16x2 / f16x2 on |x| words: the scale's root is that bare bf16/f16 input and its
/// amax keeps NaN, or ignores it where the caller drops NaN lanes, `drop_nan`), or -1.
int packed_amax_input(const Ctx& x, int s, bool drop_nan = false);
/// C expression: the FP32 bits of 16-bit lane `half` (0 low, 1 high; < 0: the larger of both) of
/// the packed |x| word `pw` of input k.
std::string widen_half(const Ctx& x, int k, const std::string& pw, int half);
/// A C expression of an item index (itself a C expression).
using ItemExpr = std::function<std::string(const std::string&)>;
/// One E8M0 scale per lane instead of one per block on every lane (the columns and direct
/// kernels' fast paths). The L lanes of a block hold the same K items' partial maxima (K rows or
/// columns per thread); a reduce-scatter leaves each lane K / L complete maxima (a round per xor
/// in `xors`, largest first: keep one half, send the other), the lane turns those into scales,
/// and emit_gather_scale fetches each item's scale from its owner with one shuffle. For K = 8,
/// L = 4 (xors 16, 8):
///
///   lane (bits 16, 8)   00        01        10        11
///   owns items          0, 1      2, 3      4, 5      6, 7      (its bits select the halves)
///
/// What travels is one word, own<s>[i]: the multiplier's FP32 bits, or the flag (1 zero block,
/// 2 NaN block; a multiplier's bits are >= 0x00400000). Emitted before the items' loop, at `ind`
/// (declares d<s>, tb<s> (the lane's first item) and, where `gathered` (emit_gather_scale reads
/// them later), own<s>; needs `lane`). `item_m(t)`: item
/// t's maximum as FP32 bits; `stage(t)`, when given: its index in the tile's staged scales
/// s<s>_info, which the owner fills; `store(ind)`, when given: statements at `ind` in the lane's
/// loop over its items (item tb<s> + i, with its `byte` and `flag` in scope) that store the scale
/// from its owner.
void emit_scatter_scales(Ctx& x, int s, int items, const std::vector<int>& xors, const ItemExpr& item_m, const ItemExpr& stage,
                         const std::string& ind, bool gathered, const std::function<std::string(const std::string&)>& store = nullptr);
/// After emit_scatter_scales (same items, xors): the lanes that hold the same items, as the OR of
/// the xors past its halvings (those all-reduce); 0 where every lane owns distinct items. The
/// item's first owner is the lane with (lane & mask) == 0.
int scatter_shared_lanes(int items, const std::vector<int>& xors);
/// In the loop over items (variable `var`, a constant after unrolling): this item's scale word
/// from its owner lane as `w_`, and its flag and multiplier as flag<suffix> and mult<suffix>.
/// `clean`: the caller knows that no block of the warp is flagged (scales_clean), so the flag is
/// the constant 0 and the flag handling folds away.
void emit_gather_scale(Ctx& x, int s, int items, const std::vector<int>& xors, const std::string& var, const std::string& ind,
                       const std::string& suffix, bool clean = false);
/// C expression, after emit_scatter_scales (same s, items, xors), the same on every lane: no
/// lane of the warp owns a flagged block of scale s (zero or NaN), so every multiplier is real.
std::string scales_clean(int s, int items, const std::vector<int>& xors);
/// Emits `body(clean)` (statements at `ind`) twice, under `if (clean_cond)` with clean = true and
/// in its else with clean = false; once with clean = false where `clean_cond` is empty. With
/// clean_cond a warp vote (scales_clean), the common case of no zero or NaN block runs without
/// the per-item flag tests and selects (7 instructions per row of 8 FP8 codes on sm_90a).
void emit_clean_split(Ctx& x, const std::string& clean_cond, const std::string& ind, const std::function<void(bool)>& body);
/// The NaN-propagating packed max of input k's 16-bit type: "mx_max_bf16x2" or "mx_max_f16x2".
const char* packed_max_fn(const Ctx& x, int k);
/// C expression: the packed max of the |x| words w0..w3 of input k (two lanes per instruction);
/// with `drop_nan`, NaN lanes count as +0 (mx_drop_nan2: an amax that ignores NaN).
std::string packed_abs_max4(const Ctx& x, int k, const std::string& w0, const std::string& w1, const std::string& w2,
                            const std::string& w3, bool drop_nan = false);
/// Stores wd[] (from emit_packed_codes, n codes) at byte pointer `ob`: one vector store when
/// `full` and aligned, else code by code where `in_e` (a C condition on element e) holds. With
/// `full_aligned`, the caller's `full` already implies an aligned `ob` (no per-store check).
void emit_store_codes(Ctx& x, const NodePtr& q, int n, const std::string& full, const std::string& in_e,
                      const std::string& ind, bool full_aligned = false);
/// The software encoder call for quantize node `q` on value `val`: mx_encode_rne (wrapped in
/// mx_fp8_nosat with Saturate::none), or mx_encode_sw with random bits `rnd` for stochastic
/// rounding.
std::string encode_call(const Ctx& x, const NodePtr& q, const std::string& val, const std::string& rnd);

}  // namespace mxjit::detail
