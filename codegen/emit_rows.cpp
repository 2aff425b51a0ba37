// The rows kernel: whole-axis blocks (rowwise, colwise: one scale per line along the whole axis
// ax_c, whatever its extent). A line is every element sharing the indices of the other axes; it
// belongs to wpl warps (RowsPlan). A line of at most wpl * 32 * U * 8 elements (a span) stays in
// registers while its amax is reduced (warp shuffles, then shared memory across its warps), so it
// is read once; a longer line is read span by span for its amax, then again for its codes.
//
//   line (n_c elements), wpl = 2 warps, U = 2 chunks of 8:
//     chunk u of thread t: columns (u * 64 + t) * 8 .. + 8     (consecutive threads, consecutive 16 bytes)
//     n_c <= 1024: one span, held | n_c > 1024: spans [0, 1024), [1024, 2048), ... read twice
//
// Where the lead input's unit-stride axis is another one, lanes run across lines instead
// (emit_across_kernel, RowsPlan::across_axis).
//
// Codes are element-exact with the other kernels: the same value expressions, scale
// functions (scale_from_amax) and encoders (emit_packed_codes).
#include <fmt/format.h>

#include <functional>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

std::vector<int> other_axes(const Plan& pl) {
  std::vector<int> a;
  for (int i = 0; i < pl.rank; ++i)
    if (i != pl.ax_c) a.push_back(i);
  return a;
}

bool vec_input(const Ctx& x, int k) { return x.sc.vector_along(size_t(k), x.plan.ax_c); }
int vec_words(DType t) { return t == DType::f32 ? 2 : 1; }

std::vector<int> tensor_inputs(const Ctx& x) {
  std::vector<int> t;
  for (size_t k = 0; k < x.p.inputs().size(); ++k)
    if (x.p.inputs()[k].kind == InputDecl::Kind::tensor) t.push_back(int(k));
  return t;
}

// Loads of chunk u (columns cc .. cc+7 of this thread's line) of every tensor input into the
// span's arrays (emit_span_arrays): raw 16-byte words where the input is unit-stride along ax_c
// and aligned, floats otherwise; +0 past the line's end and on lines past the last.
void emit_loads(Ctx& x, const std::string& ind) {
  const Plan& pl = x.plan;
  for (int k : tensor_inputs(x)) {
    const InputDecl& in = x.p.inputs()[size_t(k)];
    std::string base;
    for (int ax : other_axes(pl)) base += fmt::format("{}ix{} * P.in_stride[{}][{}]", base.empty() ? "" : " + ", ax, k, ax);
    if (base.empty()) base = "0";
    x.out += fmt::format("{}{{\n{}  const mx_i64 base = {};\n", ind, ind, base);
    if (!vec_input(x, k)) {
      x.out += fmt::format(
          "{0}  for (int e = 0; e < 8; ++e) {{ const int c = cc + e; x{1}_[u][e] = (okl && c < n_c) ? {2}(P.in[{1}], base + mx_i64(c) * P.in_stride[{1}][{3}]) : 0.0f; }}\n{0}}}\n",
          ind, k, load_fn(in.dtype), pl.ax_c);
      continue;
    }
    const int nw = vec_words(in.dtype);
    x.out += ind + "  if (okl && cc + 8 <= n_c) {\n";
    for (int i = 0; i < nw; ++i)
      x.out += fmt::format("{}    r{}_[u][{}] = mx_ld16(static_cast<const char*>(P.in[{}]) + (base + cc) * {}{});\n",
                           ind, k, i, k, dtype_size(in.dtype), i ? " + 16" : "");
    x.out += ind + "  } else {\n";
    for (int i = 0; i < nw; ++i)
      x.out += raw_chunk_tail(in.dtype, k, fmt::format("r{}_[u][{}]", k, i), i ? "cc + 4" : "cc", "okl && c < n_c",
                              "base + c", ind + "    ");
    x.out += ind + "  }\n" + ind + "}\n";
  }
}

// Whether every leaf under the roots is a tensor input (held in registers, +0 past the line).
bool register_leaves_only(const NodePtr& n) {
  if (n->op == Op::vec_input || n->op == Op::dequant) return false;
  for (const NodePtr& a : n->args)
    if (!register_leaves_only(a)) return false;
  return true;
}
bool register_roots(const Ctx& x) {
  for (const NodePtr& r : x.v.roots)
    if (!register_leaves_only(r)) return false;
  return true;
}
// Whether every root is a tensor input itself (its +0 loads past the line need no mask).
bool bare_roots(const Ctx& x) {
  for (const NodePtr& r : x.v.roots)
    if (r->op != Op::input || x.p.inputs()[size_t(x.p.input_index(r->name))].kind != InputDecl::Kind::tensor) return false;
  return true;
}

// Scale s's amax from the raw words of a bare 16-bit input, two lanes per instruction (emit_accumulate).
bool packed_accumulate(const Ctx& x, int s) {
  const int k = packed_amax_input(x, s);
  return k >= 0 && vec_input(x, k) && x.v.scales[size_t(s)]->amax_nan == AmaxNan::propagate;
}

// The roots each phase reads as values: phase 1 those of the scales not accumulated from raw
// words, phase 2 those the codes are cast from.
std::vector<bool> amax_roots(const Ctx& x) {
  std::vector<bool> need(x.v.roots.size(), false);
  for (int s = 0; s < int(x.v.scales.size()); ++s)
    if (!packed_accumulate(x, s)) need[size_t(x.v.scale_root[size_t(s)])] = true;
  return need;
}
std::vector<bool> coded_roots(const Ctx& x) {
  std::vector<bool> need(x.v.roots.size(), false);
  for (int s : x.v.quantize_scale) need[size_t(x.v.scale_root[size_t(s)])] = true;
  return need;
}

// The values of the roots in `need` of chunk u as v<r>[8] (+0 outside the line), from the span's
// registers; nothing where no root is needed.
void emit_values(Ctx& x, const std::string& ind, const std::vector<bool>& need) {
  if (std::find(need.begin(), need.end(), true) == need.end()) return;
  for (int k : tensor_inputs(x)) {
    const InputDecl& in = x.p.inputs()[size_t(k)];
    x.out += fmt::format("{}float x{}[8];\n", ind, k);
    if (!vec_input(x, k)) x.out += fmt::format("{0}for (int e = 0; e < 8; ++e) x{1}[e] = x{1}_[u][e];\n", ind, k);
    else
      for (int i = 0; i < vec_words(in.dtype); ++i)
        x.out +=
            fmt::format("{}{}(r{}_[u][{}], {});\n", ind, unpack_fn(in.dtype), k, i, plus(fmt::format("x{}", k), 4 * i));
  }
  std::string body;
  ExprEmitter em([&](const NodePtr& n) { return leaf_expr(x, n); }, "t");
  std::string zero;
  for (size_t r = 0; r < x.v.roots.size(); ++r) {
    if (!need[r]) continue;
    const std::string var = em.emit(x.v.roots[r], body, ind + "  ");
    body += fmt::format("{}  v{}[e] = {};\n", ind, r, var);
    x.out += fmt::format("{}float v{}[8];\n", ind, r);
    zero += fmt::format("v{}[e] = 0.0f; ", r);
  }
  if (register_roots(x)) {
    // Every leaf a register (+0 past the line): all 8 values without branches, then the ones past
    // the line masked unless the roots are the inputs themselves.
    x.out += fmt::format("{0}#pragma unroll\n{0}for (int e = 0; e < 8; ++e) {{\n", ind) +
             (uses(body, "c") ? fmt::format("{}  const int c = cc + e;\n", ind) : "") + body + ind + "}\n";
    if (!bare_roots(x))
      x.out += fmt::format("{0}if (!(okl && cc + 8 <= n_c))\n{0}  for (int e = 0; e < 8; ++e) if (!(okl && cc + e < n_c)) {{ {1}}}\n", ind, zero);
    return;
  }
  x.out += fmt::format("{0}#pragma unroll\n{0}for (int e = 0; e < 8; ++e) {{\n{0}  const int c = cc + e;\n", ind);
  x.out += fmt::format("{0}  if (!(okl && c < n_c)) {{ {1}continue; }}\n", ind, zero) + body + ind + "}\n";
}

// Scale s's running amax m<s> (FP32 bits of max |v|) over chunk u's values: NaN kept (its bits
// exceed +Inf's) or skipped as the scale's AmaxNan says; flushed values count as zero. Where the
// root is a bare 16-bit input read by vectors and NaN propagates, from the span's raw words two
// lanes per instruction (max.NaN on |x|; flushing commutes with the maximum).
void emit_accumulate(Ctx& x, const std::string& ind) {
  for (size_t s = 0; s < x.v.scales.size(); ++s) {
    const NodePtr& sn = x.v.scales[s];
    const int k = packed_amax_input(x, int(s));
    if (packed_accumulate(x, int(s))) {
      const std::string w = fmt::format("r{}_[u][0]", k);
      x.out += fmt::format("{}{{\n{}  const mx_u32 pw = {};\n", ind, ind, packed_abs_max4(x, k, w + ".x", w + ".y", w + ".z", w + ".w"));
      x.out += fmt::format("{}  mx_u32 a = {};\n", ind, widen_half(x, k, "pw", -1));
      if (x.v.scale_flush[s]) x.out += ind + "  if (a < 0x00800000u) a = 0u;\n";
      x.out += fmt::format("{0}  m{1} = a > m{1} ? a : m{1};\n{0}}}\n", ind, s);
      continue;
    }
    std::string a = "mx_u32 a = mx_bits(v{0}[e]) & 0x7fffffffu; ";
    if (x.v.scale_flush[s]) a += "if (a < 0x00800000u) a = 0u; ";
    if (sn->amax_nan == AmaxNan::ignore) a += "if (a > 0x7f800000u) a = 0u; ";
    x.out += fmt::format("{}for (int e = 0; e < 8; ++e) {{ {}m{} = a > m{} ? a : m{}; }}\n", ind,
                         fmt::format(fmt::runtime(a), x.v.scale_root[s]), s, s, s);
  }
}

// Codes of chunk u from v<r>[8] under the line's scales, stored to every codes output.
void emit_codes(Ctx& x, const std::string& ind) {
  const Plan& pl = x.plan;
  for (int o = 0; o < int(x.p.outputs().size()); ++o)
    if (x.p.outputs()[size_t(o)].kind == OutputKind::elems && !pl.rows().strided_codes[size_t(o)]) {
      x.out += ind + "const bool full = okl && cc + 8 <= n_c;\n";
      break;
    }
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::elems) continue;
    const int qi = x.v.output_index[size_t(o)];
    const NodePtr& q = x.v.quantizes[size_t(qi)];
    const int si = x.v.quantize_scale[size_t(qi)];
    const int root = x.v.scale_root[size_t(si)];
    const bool fp4 = q->elem.packed();
    x.out += fmt::format("{}{{  // output '{}' ({})\n", ind, out.name, q->elem.str());
    const std::string in = ind + "  ";
    emit_packed_codes(x, q, si, fmt::format("v{}", root), 8,
                      [&](int h) { return x.linear_index("", fmt::format("(cc + e + {})", h)); }, in);
    std::string base;
    for (int a : other_axes(pl)) base += fmt::format(" + ix{} * P.out_stride[{}][{}]", a, o, a);
    if (pl.rows().strided_codes[size_t(o)]) {
      // ax_c is not the output's innermost axis: code by code at its stride.
      x.out += fmt::format("{}mx_u8* const ob = static_cast<mx_u8*>(P.out[{}]) + (0{});\n", in, o, base);
      x.out += fmt::format("{0}#pragma unroll\n{0}for (int e = 0; e < 8; ++e) if (okl && cc + e < n_c) ob[mx_i64(cc + e) * P.out_stride[{1}][{2}]] = mx_u8(wd[e >> 2] >> (8 * (e & 3)));\n",
                           in, o, pl.ax_c);
    } else {
      x.out += fmt::format("{}mx_u8* const ob = static_cast<mx_u8*>(P.out[{}]) + ({}{});\n", in, o, fp4 ? "(cc >> 1)" : "cc", base);
      emit_store_codes(x, q, 8, "full", "okl && cc + e < n_c", in);
    }
    x.out += ind + "}\n";
  }
}

// The per-thread arrays of one span: the loaded registers (r<k>_ raw words, or x<k>_ floats; a
// chunk's columns are recomputed from u where used).
void emit_span_arrays(Ctx& x, int U) {
  for (int k : tensor_inputs(x)) {
    const InputDecl& in = x.p.inputs()[size_t(k)];
    if (vec_input(x, k)) x.out += fmt::format("  mx_v16 r{}_[{}][{}];\n", k, U, vec_words(in.dtype));
    else
      x.out += fmt::format("  float x{}_[{}][8];\n", k, U);
  }
}

// One span whose chunk u starts at column `first(u)` (a C expression of u): every chunk's loads
// first (U loads in flight per thread), then `use` on each chunk (with its values v<r>[8] and
// column cc in scope).
void emit_span(Ctx& x, int U, const std::string& first, const std::string& ind, const std::vector<bool>& need,
               const std::function<void(const std::string&)>& use) {
  // cc is recomputed from u where used (an array of U columns would hold U registers).
  x.out +=
      fmt::format("{0}#pragma unroll\n{0}for (int u = 0; u < {1}; ++u) {{\n{0}  const int cc = {2};\n", ind, U, first);
  x.out += ind + "  if (!(okl && cc < n_c)) continue;  // past the line's end (or no line): nothing to read\n";
  emit_loads(x, ind + "  ");
  x.out += ind + "}\n";
  x.out +=
      fmt::format("{0}#pragma unroll\n{0}for (int u = 0; u < {1}; ++u) {{\n{0}  const int cc = {2};\n", ind, U, first);
  x.out += ind + "  if (!(okl && cc < n_c)) continue;\n";
  emit_values(x, ind + "  ", need);
  use(ind + "  ");
  x.out += ind + "}\n";
}

// The amax of every scale from all threads of its line: warp shuffles (lanes along the line),
// then the line's warps through shared memory.
void emit_line_reduce(Ctx& x, int S, int T) {
  x.out += fmt::format("  __shared__ mx_u32 red_[{}][{}];\n", S, T / 32);
  x.out += "  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;\n";
  for (int s = 0; s < S; ++s) {
    x.out += fmt::format("  for (int off = 16; off >= 1; off /= 2) {{ const mx_u32 w = __shfl_xor_sync(0xffffffffu, m{0}, off); m{0} = w > m{0} ? w : m{0}; }}\n", s);
    x.out += fmt::format("  if (lane == 0) red_[{}][warp] = m{};\n", s, s);
  }
  x.out += "  if (lt > 32) {\n    __syncthreads();\n    const int first = warp / (lt / 32) * (lt / 32);\n";
  for (int s = 0; s < S; ++s)
    x.out += fmt::format("    for (int i = 0; i < lt / 32; ++i) {{ const mx_u32 w = red_[{0}][first + i]; m{0} = w > m{0} ? w : m{0}; }}\n", s);
  x.out += "  }\n";
}

// Every scale from its amax m<s>: byte<s>, flag<s>, mult<s>, sval<s> (scale_from_amax), then the
// line's scales stored by the threads where `first` holds.
void emit_line_scales(Ctx& x, const std::string& first) {
  const std::vector<int> oa = other_axes(x.plan);
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    const bool stored = scale_stored(x, s), coded = scale_coded(x, s);
    x.out += scale_slot_decls(x, s, stored, coded, "  ") + fmt::format("  {{\n    const mx_u32 m = m{};\n", s);
    x.out += indent_lines(scale_from_amax(x.v.scales[size_t(s)], "", "", stored, coded), "    ");
    x.out += scale_slot_copy(x, s, stored, coded, "    ") + "  }\n";
  }
  x.out += fmt::format("  // The line's scales.\n  if ({}) {{\n", first);
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales) continue;
    const int s = x.v.output_index[size_t(o)];
    std::string off;
    for (int a : oa) off += fmt::format("{}ix{} * P.out_stride[{}][{}]", off.empty() ? "" : " + ", a, o, a);
    if (off.empty()) off = "0";
    x.out += fmt::format("    static_cast<{}*>(P.out[{}])[{}] = {};\n", scale_ctype(out.dtype), o, off, stored_scale(out, std::to_string(s)));
  }
  x.out += "  }\n";
}

// Lanes along the line (the whole axis is the lead input's unit-stride axis, or none is).
void emit_along_kernel(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.rows().chunks_per_thread, T = pl.threads, S = int(x.v.scales.size());
  const std::vector<int> oa = other_axes(pl);
  x.out += "  // Lines: every index but the whole axis's (P.tiles_r of them); wpl warps per line (P.tiles_c).\n";
  x.out += fmt::format("  const int n_c = int(P.shape[{}]);\n  const int lt = int(P.tiles_c) * 32;  // threads per line\n", pl.ax_c);
  x.out += "  const int t = int(threadIdx.x) % lt;\n";
  x.out += fmt::format("  const mx_i64 line = mx_i64(blockIdx.x) * ({} / lt) + int(threadIdx.x) / lt;\n", T);
  x.out += "  const bool okl = line < P.tiles_r;\n";
  if (!oa.empty()) {
    // In 32 bits (the launch refuses 2^31 lines): a 64-bit division is a call whose registers
    // spill the line's chunks (perf-log #rows-past-the-line). The outermost index is what is left.
    x.out += "  unsigned rest_ = okl ? unsigned(line) : 0u;\n";
    for (auto it = oa.rbegin(); it != oa.rend(); ++it)
      x.out += it + 1 == oa.rend()
                   ? fmt::format("  const mx_i64 ix{} = rest_;\n", *it)
                   : fmt::format(
                         "  const mx_i64 ix{0} = rest_ % unsigned(P.shape[{0}]);\n  rest_ /= unsigned(P.shape[{0}]);\n",
                         *it);
  }
  x.out += fmt::format("  const int span = lt * {};  // elements of the line held in registers\n", U * 8);
  x.out += "  const bool held = n_c <= span;  // the line is read once (else twice, span by span)\n";
  emit_span_arrays(x, U);
  for (int s = 0; s < S; ++s) x.out += fmt::format("  mx_u32 m{} = 0u;\n", s);
  x.out += "  // Phase 1: the line's amax; a line that fits stays in registers (raw words).\n  if (held) {\n";
  emit_span(x, U, "(u * lt + t) * 8", "    ", amax_roots(x), [&](const std::string& ind) { emit_accumulate(x, ind); });
  x.out += "  } else {\n    for (int c0 = 0; c0 < n_c; c0 += span) {\n";
  emit_span(x, U, "c0 + (u * lt + t) * 8", "      ", amax_roots(x),
            [&](const std::string& ind) { emit_accumulate(x, ind); });
  x.out += "    }\n  }\n";
  emit_line_reduce(x, S, T);
  emit_line_scales(x, "okl && t == 0");
  x.out += "  // Phase 2: the codes, from the registers (the values again) or from the line read again.\n  if (held) {\n";
  x.out +=
      fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n      const int cc = (u * lt + t) * 8;\n", U);
  x.out += "      if (!(okl && cc < n_c)) continue;\n";
  emit_values(x, "      ", coded_roots(x));
  emit_codes(x, "      ");
  x.out += "    }\n  } else {\n    for (int c0 = 0; c0 < n_c; c0 += span) {\n";
  emit_span(x, U, "c0 + (u * lt + t) * 8", "      ", coded_roots(x),
            [&](const std::string& ind) { emit_codes(x, ind); });
  x.out += "    }\n  }\n}\n";
}

// RowsPlan::across_axis: lane i holds line i of 32 neighbours along that axis; the CTA's warps
// split the whole axis, each warp reading chunk after chunk of 8 elements of its lanes' lines.
//
//   warp j, chunk u of a step:  columns c0 + (u * nw + j) * 8 .. + 8,   c0 = 0, nw * 8 * U, ...
void emit_across_kernel(Ctx& x) {
  const Plan& pl = x.plan;
  const int U = pl.rows().chunks_per_thread, T = pl.threads, S = int(x.v.scales.size()), ua = pl.rows().across_axis;
  std::vector<int> batch;
  for (int a : other_axes(pl))
    if (a != ua) batch.push_back(a);
  x.out += "  // Tiles: P.tiles_c groups of 32 lines along the across axis, times the other axes (P.tiles_r).\n";
  x.out += fmt::format("  const int n_c = int(P.shape[{}]);\n", pl.ax_c);
  x.out += "  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;\n";
  x.out += fmt::format("  const int nw = {};  // warps splitting the whole axis\n", T / 32);
  x.out += "  const mx_i64 tile = blockIdx.x;\n";
  x.out += fmt::format("  const mx_i64 ix{} = tile % P.tiles_c * 32 + lane;\n", ua);
  x.out += fmt::format("  const bool okl = ix{0} < P.shape[{0}];\n", ua);
  if (!batch.empty()) {
    x.out += "  mx_i64 rest_ = tile / P.tiles_c;\n";
    for (auto it = batch.rbegin(); it != batch.rend(); ++it)
      x.out += fmt::format("  const mx_i64 ix{0} = rest_ % P.shape[{0}];\n  rest_ /= P.shape[{0}];\n", *it);
  }
  x.out += fmt::format("  const int step = nw * {};  // columns per step of the CTA\n", 8 * U);
  emit_span_arrays(x, U);
  for (int s = 0; s < S; ++s) x.out += fmt::format("  mx_u32 m{} = 0u;\n", s);
  auto loop = [&](const std::vector<bool>& need, const std::function<void(const std::string&)>& use) {
    x.out += "  for (int c0 = 0; c0 < n_c; c0 += step) {\n";
    emit_span(x, U, "c0 + (u * nw + warp) * 8", "    ", need, use);
    x.out += "  }\n";
  };
  x.out += "  // Phase 1: each lane's amax over its warp's columns, then over the CTA's warps.\n";
  loop(amax_roots(x), [&](const std::string& ind) { emit_accumulate(x, ind); });
  x.out += fmt::format("  __shared__ mx_u32 red_[{}][{}][32];\n", S, T / 32);
  for (int s = 0; s < S; ++s) x.out += fmt::format("  red_[{0}][warp][lane] = m{0};\n", s);
  x.out += "  __syncthreads();\n";
  for (int s = 0; s < S; ++s)
    x.out += fmt::format("  for (int i = 0; i < nw; ++i) {{ const mx_u32 w = red_[{0}][i][lane]; m{0} = w > m{0} ? w : m{0}; }}\n", s);
  emit_line_scales(x, "okl && warp == 0");
  x.out += "  // Phase 2: the lines read again for their codes.\n";
  loop(coded_roots(x), [&](const std::string& ind) { emit_codes(x, ind); });
  x.out += "}\n";
}

}  // namespace

void emit_rows_kernel(Ctx& x) {
  const Plan& pl = x.plan;
  if (pl.rows().columns) return emit_whole_columns_kernel(x);
  x.out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const MxParams P) {{\n", pl.threads, pl.ctas_per_sm,
                       pl.kernel_name);
  if (pl.rows().across_axis >= 0) emit_across_kernel(x);
  else emit_along_kernel(x);
}

}  // namespace mxjit::detail
