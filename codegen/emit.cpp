#include "codegen/emit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "codegen/plan_rules.hpp"
#include "codegen/scale_expr_cuda.hpp"
#include "codegen/values.hpp"
#include "dsl/errors.hpp"
#include "templates/templates.hpp"

namespace mxjit::detail {
namespace {

void emit_prologue(Ctx& x) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  x.out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(const MxParams P) {{\n", pl.threads,
                       pl.ctas_per_sm, pl.kernel_name);
  emit_tamax(x);
  x.out += "  extern __shared__ float4 mx_smem4[];\n  float* const mx_smem = reinterpret_cast<float*>(mx_smem4);\n";
  int64_t off = 0;
  const int64_t tile_floats = int64_t(tp.tile_rows) * tp.row_stride;
  for (size_t k = 0; k < x.v.roots.size(); ++k, off += tile_floats)
    x.out += fmt::format("  float* const tile{} = {};\n", k, off ? fmt::format("mx_smem + {}", off) : "mx_smem");
  for (size_t s = 0; s < x.v.scales.size(); ++s) {
    const BlockSpec& b = block_of(x.v.scales[s]);
    int64_t nb = (tp.tile_rows / (pl.ax_r >= 0 ? b.size_along(pl.ax_r) : 1)) * (tp.tile_cols / b.size_along(pl.ax_c));
    x.out += fmt::format("  float* const s{}_mult = mx_smem + {};\n", s, off);
    if (!byte_scale(*x.v.scales[s])) x.out += fmt::format("  float* const s{}_val = mx_smem + {};\n", s, off + nb);
    x.out += fmt::format("  mx_u32* const s{}_info = reinterpret_cast<mx_u32*>(mx_smem + {});\n", s, off + 2 * nb);
    off += 3 * nb;
  }
  // 32-bit decomposition: the launcher keeps the grid (tiles x batch) below 2^31.
  x.out += "  unsigned t = blockIdx.x;\n";
  x.out += "  const mx_i64 tc = t % unsigned(P.tiles_c); t /= unsigned(P.tiles_c);\n";
  // The tile's rows, where the kernel reads them.
  defer_decls(x, {{"tr", "  const mx_i64 tr = t % unsigned(P.tiles_r);\n"},
                  {"r0", fmt::format("  const mx_i64 r0 = {};\n", times("tr", tp.tile_rows))},
                  {"nr", pl.ax_r >= 0
                             ? fmt::format("  const int nr = int(P.shape[{0}] - r0 < {1} ? P.shape[{0}] - r0 : {1});\n",
                                           pl.ax_r, tp.tile_rows)
                             : "  const int nr = 1;\n"}});
  if (!pl.batch_axes.empty()) x.out += "  t /= unsigned(P.tiles_r);\n";
  for (auto it = pl.batch_axes.rbegin(); it != pl.batch_axes.rend(); ++it)
    x.out += fmt::format("  const mx_i64 bi{0} = t % unsigned(P.shape[{0}]); t /= unsigned(P.shape[{0}]);\n", *it);
  x.out += fmt::format("  const mx_i64 c0 = {};\n", times("tc", tp.tile_cols));
  x.out +=
      fmt::format("  const int nc = int(P.shape[{0}] - c0 < {1} ? P.shape[{0}] - c0 : {1});\n", pl.ax_c, tp.tile_cols);
}

// Phase 1: every value tile from the inputs, 16-byte loads along ax_c where the class allows.
void emit_load(Ctx& x) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  const int V = x.vec;
  const int chunks = tp.tile_rows * (tp.tile_cols / V);
  // With a whole number of chunks per thread, every load of the thread is issued before the first
  // value is stored (several 16-byte loads in flight); otherwise one chunk at a time.
  const int iters = tp.hoist_loads && chunks % pl.threads == 0 ? chunks / pl.threads : 1;
  const bool hoist = tp.hoist_loads && chunks % pl.threads == 0;
  x.out += "  // Phase 1: load the tile and evaluate the value expressions into shared memory.\n";
  std::vector<int> tensors;
  for (size_t k = 0; k < x.p.inputs().size(); ++k)
    if (x.p.inputs()[k].kind == InputDecl::Kind::tensor) tensors.push_back(int(k));
  auto vec_ok = [&](int k) {
    const InputDecl& in = x.p.inputs()[size_t(k)];
    return x.sc.vector_along(size_t(k), pl.ax_c) && int(16 / dtype_size(in.dtype)) == V;
  };
  // Vector inputs keep raw 16-byte words until the values are computed (see raw_chunk_tail).
  for (int k : tensors)
    x.out += vec_ok(k) ? fmt::format("  mx_v16 r{}_[{}];\n", k, iters) : fmt::format("  float x{}_[{}][{}];\n", k, iters, V);
  // A stage's loop over the tile's chunks; its indices are declared where the stage reads them.
  std::vector<Decl> indices;
  size_t at = 0;
  auto head = [&](const char* stage) {
    x.out += hoist ? fmt::format("#pragma unroll\n  for (int i = 0; i < {}; ++i) {{  // {}\n", iters, stage)
                   : fmt::format("  for (int it = threadIdx.x; it < {}; it += {}) {{  // {}\n", chunks, pl.threads, stage);
    at = x.out.size();
    indices = {hoist ? Decl{"it", fmt::format("    const int it = threadIdx.x + i * {};\n", pl.threads)} : Decl{"i", "    const int i = 0;\n"},
               {"r", fmt::format("    const int r = it / {};\n", tp.tile_cols / V)},
               {"cv", fmt::format("    const int cv = (it % {}) * {};\n", tp.tile_cols / V, V)},
               {"row_ok", "    const bool row_ok = r < nr;\n"},
               {"full", fmt::format("    const bool full = row_ok && cv + {} <= nc;\n", V)}};
  };
  auto tail = [&] {
    insert_used(x.out, at, indices);
    x.out += "  }\n";
  };
  auto loads = [&] {
    for (int k : tensors) {
      const InputDecl& in = x.p.inputs()[size_t(k)];
      if (vec_ok(k)) {
        x.out += fmt::format("    if (full) {{\n      const int c = cv;\n      r{}_[i] = mx_ld16(static_cast<const char*>(P.in[{}]) + ({}) * {});\n    }} else {{\n",
                             k, k, x.in_offset(k, "r", "c"), dtype_size(in.dtype));
        x.out += raw_chunk_tail(in.dtype, k, fmt::format("r{}_[i]", k), "cv", "row_ok && c < nc", x.in_offset(k, "r", "c"), "      ");
        x.out += "    }\n";
      } else {
        x.out += fmt::format(
            "    {{\n      for (int e = 0; e < {0}; ++e) {{ const int c = cv + e; x{1}_[i][e] = (row_ok && c < nc) ? {2}(P.in[{1}], {3}) : 0.0f; }}\n    }}\n",
            V, k, load_fn(in.dtype), x.in_offset(k, "r", "c"));
      }
    }
  };
  auto compute = [&] {
    for (int k : tensors) {
      x.out += fmt::format("    float x{}[{}];\n", k, V);
      if (vec_ok(k)) x.out += fmt::format("    {}(r{}_[i], x{});\n", unpack_fn(x.p.inputs()[size_t(k)].dtype), k, k);
      else x.out += fmt::format("    for (int e = 0; e < {1}; ++e) x{0}[e] = x{0}_[i][e];\n", k, V);
    }
    x.out += fmt::format("#pragma unroll\n    for (int e = 0; e < {}; ++e) {{\n      const int c = cv + e;\n", V);
    x.out += "      const bool ok = row_ok && c < nc;\n";
    std::string body;
    ExprEmitter em([&](const NodePtr& n) { return leaf_expr(x, n); }, "v");
    for (size_t k = 0; k < x.v.roots.size(); ++k) {
      std::string var = em.emit(x.v.roots[k], body, "      ");
      body += fmt::format("      tile{}[r * {} + c + (c >> 3)] = {};\n", k, tp.row_stride, var);
    }
    // Loads of non-tensor leaves happen only for in-range elements.
    x.out += "      if (!ok) {\n";
    for (size_t k = 0; k < x.v.roots.size(); ++k)
      x.out += fmt::format("        tile{}[r * {} + c + (c >> 3)] = 0.0f;\n", k, tp.row_stride);
    x.out += "        continue;\n      }\n" + body + "    }\n";
  };
  if (hoist) {
    head("issue every load");
    loads();
    tail();
    head("evaluate and store");
    compute();
    tail();
  } else {
    head("load, evaluate, store");
    loads();
    compute();
    tail();
  }
  x.out += "  __syncthreads();\n";
}

std::string tile_at(const TiledPlan& tp, int root, const std::string& r, const std::string& c) {
  return fmt::format("tile{}[({}) * {} + ({}) + (({}) >> 3)]", root, r, tp.row_stride, c, c);
}

// Phase 2: block amax and the scale of every block in the tile. With at least as many blocks as
// threads, a thread per block; with fewer (large blocks: 128x128 tiles, 32x32 ones in a 128x128
// tile), G threads per block (a power of two, lanes of one warp or whole warps), each reducing
// every G-th element, combined by shuffles and, beyond a warp, through shared memory:
//
//   block lb, thread part p of G:  elements k = p, p + G, ... (k = i * bc + j)  -> max over G -> scale
void emit_scales(Ctx& x) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  x.out += "  // Phase 2: block amax (|x| as bits: non-negative floats order like their bits) and scales.\n";
  for (size_t s = 0; s < x.v.scales.size(); ++s) {
    const NodePtr& sn = x.v.scales[s];
    const BlockSpec& b = block_of(sn);
    const int64_t br = pl.ax_r >= 0 ? b.size_along(pl.ax_r) : 1, bc = b.size_along(pl.ax_c);
    const int64_t nbc = tp.tile_cols / bc, nb = (tp.tile_rows / br) * nbc;
    const int root = x.v.scale_root[s];
    int64_t G = 1;
    while (G * 2 * nb <= pl.threads && G * 2 <= br * bc) G *= 2;
    auto fold = [&](const std::string& ind) {
      std::string l = fmt::format("{}mx_u32 u = mx_bits({}) & 0x7fffffffu;\n", ind, tile_at(tp, root, times("rb", br) + " + i", times("cb", bc) + " + j"));
      if (x.v.scale_flush[s]) l += ind + "if (u < 0x00800000u) u = 0u;\n";
      if (const std::string drop = amax_drop_nan(*sn, "u"); !drop.empty()) l += ind + drop + "\n";
      return l + ind + "m = u > m ? u : m;\n";
    };
    auto store = [&](const std::string& ind) {
      x.out += scale_from_amax(sn, ind);
      x.out += byte_scale(*sn) ? fmt::format("{1}s{0}_mult[lb] = mult;\n{1}s{0}_info[lb] = byte | (flag << 8);\n", s, ind)
                               : fmt::format("{1}s{0}_mult[lb] = mult;\n{1}s{0}_val[lb] = sval;\n{1}s{0}_info[lb] = flag << 8;\n", s, ind);
    };
    if (G == 1) {
      x.out += fmt::format("  for (int lb = threadIdx.x; lb < {}; lb += {}) {{\n", nb, pl.threads);
      x.out += fmt::format("    const int rb = {}, cb = {};\n    mx_u32 m = 0u;\n", over("lb", nbc), modulo("lb", nbc));
      // Rotate the start column by the lane so that threads of a warp hit different banks.
      x.out += fmt::format("    for (int i = 0; i < {}; ++i)\n      for (int jj = 0; jj < {}; ++jj) {{\n", br, bc);
      x.out += bc == 1 ? "        const int j = 0;\n" : fmt::format("        const int j = (jj + int(threadIdx.x)) & {};\n", bc - 1);
      x.out += fold("        ") + "      }\n";
      store("    ");
      x.out += "  }\n";
      continue;
    }
    const int64_t iters = (nb * G + pl.threads - 1) / pl.threads;
    x.out += fmt::format("  {{  // {} threads per block\n", G);
    if (G > 32) x.out += fmt::format("    __shared__ mx_u32 amax{}_[{}];  // per warp\n", s, pl.threads / 32);
    x.out += fmt::format("    const int part = int(threadIdx.x) % {};\n", G);
    x.out += fmt::format("    for (int it = 0; it < {}; ++it) {{\n      const int lb = it * {} + int(threadIdx.x) / {};\n", iters, pl.threads / G, G);
    x.out += "      mx_u32 m = 0u;\n";
    x.out += fmt::format("      if (lb < {}) {{\n        const int rb = {}, cb = {};\n", nb, over("lb", nbc), modulo("lb", nbc));
    x.out += fmt::format("        for (int k = part; k < {}; k += {}) {{\n          const int i = {}, j = {};\n", br * bc, G, over("k", bc), modulo("k", bc));
    x.out += fold("          ") + "        }\n      }\n";
    x.out += fmt::format("#pragma unroll\n      for (int off = 1; off < {}; off *= 2) {{ const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, m, off); m = o_ > m ? o_ : m; }}\n",
                         std::min<int64_t>(G, 32));
    if (G > 32) {
      x.out += fmt::format("      if ((threadIdx.x & 31u) == 0u) amax{}_[threadIdx.x / 32] = m;\n      __syncthreads();\n", s);
      x.out += fmt::format("      if (part == 0)\n        for (int w = 1; w < {}; ++w) {{ const mx_u32 o_ = amax{}_[threadIdx.x / 32 + w]; m = o_ > m ? o_ : m; }}\n",
                           G / 32, s);
    }
    x.out += fmt::format("      if (part == 0 && lb < {}) {{\n", nb);
    store("        ");
    x.out += "      }\n";
    if (G > 32 && iters > 1) x.out += "      __syncthreads();  // amax_ read before the next round writes it\n";
    x.out += "    }\n  }\n";
  }
  x.out += "  __syncthreads();\n";
}

// Thread mapping of a chunked write: W consecutive elements along the output's innermost axis.
struct Chunking {
  bool along_c;  // chunk along ax_c (else along ax_r)
  int w;         // elements per chunk
};

// The loop over a tile's chunks; `full` (the whole chunk inside the domain) for code stores.
void emit_chunk_loop_head(Ctx& x, const Chunking& ch, bool with_full) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  if (ch.along_c) {
    x.out += fmt::format("  for (int it = threadIdx.x; it < {}; it += {}) {{\n", tp.tile_rows * (tp.tile_cols / ch.w), pl.threads);
    x.out += fmt::format("    const int r = it / {0}, cw = (it % {0}) * {1};\n", tp.tile_cols / ch.w, ch.w);
    if (with_full) x.out += fmt::format("    const bool full = r < nr && cw + {} <= nc;\n", ch.w);
  } else {
    x.out += fmt::format("  for (int it = threadIdx.x; it < {}; it += {}) {{\n", tp.tile_cols * (tp.tile_rows / ch.w), pl.threads);
    x.out += fmt::format("    const int c = it % {0}, rw = (it / {0}) * {1};\n", tp.tile_cols, ch.w);
    if (with_full) x.out += fmt::format("    const bool full = c < nc && rw + {} <= nr;\n", ch.w);
  }
}

// r and c of element e of the chunk.
std::pair<std::string, std::string> chunk_rc(const Chunking& ch, const std::string& e) {
  const std::string at = e == "0" ? std::string() : " + " + e;
  if (ch.along_c) return {"r", at.empty() ? "cw" : "(cw" + at + ")"};
  return {at.empty() ? "rw" : "(rw" + at + ")", "c"};
}

// Phase 3, a code output: quantized elements, chunk by chunk, packed and stored 16 bytes at a time.
void emit_elems(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  const Output& out = x.p.outputs()[size_t(o)];
  const int qi = x.v.output_index[size_t(o)];
  const NodePtr& q = x.v.quantizes[size_t(qi)];
  const int si = x.v.quantize_scale[size_t(qi)];
  const int root = x.v.scale_root[size_t(si)];
  const BlockSpec& b = block_of(q);
  const int64_t br = pl.ax_r >= 0 ? b.size_along(pl.ax_r) : 1, bc = b.size_along(pl.ax_c);
  const int inner = out.layout.order(pl.rank).back();
  const bool fp4 = q->elem.packed();
  if (inner != pl.ax_c && inner != pl.ax_r)
    throw UsageError(fmt::format("GPU generator: output '{}' is stored with axis {} innermost, which is not one of "
                                 "the tile axes ({}, {})", out.name, inner, pl.ax_r, pl.ax_c));
  // Row-wise: 16 codes (one 16-byte store); column-wise: 32 rows per thread (a full 32-byte
  // sector per column) with consecutive lanes on consecutive columns (conflict-free smem reads).
  Chunking ch{inner == pl.ax_c, fp4 ? 32 : (inner == pl.ax_c ? 16 : tp.rows_per_store)};
  if (!ch.along_c && tp.tile_rows % ch.w != 0) ch.w = 16;
  const int packed_axis = fp4 ? inner : -1;
  const int nan = nan_code(q->elem);
  const char* pair_fn = hw_pair_fn(x, q);
  const bool hw_pair = pair_fn != nullptr;
  x.out += fmt::format("  // Output '{}' ({} codes, innermost axis {}).\n", out.name, q->elem.str(), inner);
  emit_chunk_loop_head(x, ch, true);
  x.out += fmt::format("    mx_u32 code[{}];\n", ch.w);
  x.out += fmt::format("#pragma unroll\n    for (int e = 0; e < {}; e += 2) {{\n", ch.w);
  for (int h = 0; h < 2; ++h) {
    auto [r, c] = chunk_rc(ch, h ? "e + 1" : "e");
    x.out += fmt::format("      const int er{0} = {1}, ec{0} = {2};\n", h, r, c);
    x.out += fmt::format("      float x{} = {};\n", h, tile_at(tp, root, "er" + std::to_string(h), "ec" + std::to_string(h)));
    if (q->flush_subnormals)
      x.out += fmt::format("      if ((mx_bits(x{0}) & 0x7fffffffu) < 0x00800000u) x{0} = mx_float(mx_bits(x{0}) & 0x80000000u);\n", h);
    x.out += fmt::format("      const int lb{0} = {1} + {2};\n", h, times(over("er" + std::to_string(h), br), tp.tile_cols / bc),
                         over("ec" + std::to_string(h), bc));
    x.out += fmt::format("      const mx_u32 flag{0} = s{1}_info[lb{0}] >> 8;\n", h, si);
    const Node& sn = *x.v.scales[size_t(si)];
    if (generic_scale(sn))
      x.out += fmt::format("      float y{} = {};\n", h, generic_scale_element(sn, fmt::format("x{}", h), fmt::format("s{}_mult[lb{}]", si, h)));
    else
      x.out += fmt::format("      float y{0} = x{0} * s{1}_mult[lb{0}];\n", h, si);
    if (nvfp4(*x.v.scales[size_t(si)]) && x.v.scales[size_t(si)]->convention == Nvfp4Convention::torchao)
      x.out += fmt::format("      y{0} = mx_fmin_nan_c(mx_fmax_nan_c(y{0}, -6.0f), 6.0f);\n", h);
    if (q->round == Round::stochastic) {
      // Philox counter: the element's row-major linear index in the domain, then the offset.
      const std::string lin = x.linear_index("er" + std::to_string(h), "ec" + std::to_string(h));
      x.out += fmt::format("      const mx_u32 rnd{} = mx_philox_word0(mx_u64({}), {}ull, {}ull);\n", h, lin, q->offset, q->seed);
    }
  }
  if (hw_pair) {
    x.out += fmt::format("      const mx_u32 pr = {}(y0, y1);\n", pair_fn);
    if (fp4) x.out += "      mx_u32 k0 = pr & 15u, k1 = pr >> 4;\n";
    else x.out += "      mx_u32 k0 = pr & 0xffu, k1 = pr >> 8;\n";
  } else {
    x.out += fmt::format("      mx_u32 k0 = {}, k1 = {};\n", encode_call(x, q, "y0", "rnd0"), encode_call(x, q, "y1", "rnd1"));
  }
  x.out += fmt::format("      if (flag0) k0 = flag0 == 1u ? 0u : {0}u;\n      if (flag1) k1 = flag1 == 1u ? 0u : {0}u;\n", nan);
  x.out += "      code[e] = k0; code[e + 1] = k1;\n    }\n";
  // Pack and store.
  auto [r0e, c0e] = chunk_rc(ch, "0");
  x.out += fmt::format("    mx_u8* const base = static_cast<mx_u8*>(P.out[{}]);\n", o);
  const std::string off = x.out_offset(o, "rs", "cs", packed_axis);
  x.out += "    {\n";
  if (uses(off, "rs")) x.out += fmt::format("      const int rs = {};\n", r0e);
  if (uses(off, "cs")) x.out += fmt::format("      const int cs = {};\n", c0e);
  x.out += fmt::format("      const mx_i64 off = {};\n", off);
  const int nbytes = fp4 ? ch.w / 2 : ch.w, nwords = nbytes / 4;
  x.out += fmt::format("      mx_u32 w[{}];\n", nwords);
  if (fp4)
    x.out += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i) {{ w[i] = 0u;\n#pragma unroll\n        for (int j = 0; j < 8; ++j) w[i] |= code[8 * i + j] << (4 * j); }}\n", nwords);
  else
    x.out += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i) w[i] = (code[4*i] & 0xffu) | ((code[4*i+1] & 0xffu) << 8) | ((code[4*i+2] & 0xffu) << 16) | ((code[4*i+3] & 0xffu) << 24);\n", nwords);
  if (nwords % 4 == 0) {
    x.out += "      if (full && mx_aligned16(base + off)) {\n";
    for (int i = 0; i < nwords / 4; ++i)
      x.out += fmt::format("        mx_st16({0}, mx_v16{{w[{1}], w[{2}], w[{3}], w[{4}]}});\n", plus("base + off", 16 * i), 4 * i, 4 * i + 1,
                           4 * i + 2, 4 * i + 3);
  } else {  // 8 codes (8 rows per thread): one 8-byte store
    x.out += "      if (full && (reinterpret_cast<mx_u64>(base + off) & 7u) == 0) {\n";
    x.out += "        *reinterpret_cast<uint2*>(base + off) = make_uint2(w[0], w[1]);\n";
  }
  x.out += "      } else {\n";
  x.out += fmt::format("        for (int e = 0; e < {}; e += {}) {{\n", ch.w, fp4 ? 2 : 1);
  auto [re, ce] = chunk_rc(ch, "e");
  x.out += fmt::format("          const int rr = {}, cc = {};\n          if (rr < nr && cc < nc) {{\n", re, ce);
  x.out += fmt::format("            const mx_i64 o2 = {};\n", x.out_offset(o, "rr", "cc", packed_axis));
  x.out += fmt::format("            base[o2] = mx_u8({});\n          }}\n        }}\n      }}\n    }}\n  }}\n",
                       fp4 ? "(code[e] & 15u) | ((code[e + 1] & 15u) << 4)" : "code[e]");
}

// Phase 3, a values or amax output: plain values (bf16/f16/f32) and the tensor amax.
void emit_values(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  const Output& out = x.p.outputs()[size_t(o)];
  const int root = x.v.output_index[size_t(o)];
  const int inner = out.layout.order(pl.rank).back();
  Chunking ch{inner != pl.ax_r, 1};
  const char* st = out.dtype == DType::f32 ? "float" : "mx_u16";
  const char* cv = out.dtype == DType::f32 ? "" : out.dtype == DType::bf16 ? "mx_u16(mx_f32_to_bf16_bits" : "mx_u16(mx_f32_to_f16_bits";
  x.out += fmt::format("  // Values '{}'.\n", out.name);
  emit_chunk_loop_head(x, ch, false);
  auto [r, c] = chunk_rc(ch, "0");
  x.out += fmt::format("    const int rr = {}, cc = {};\n    if (rr < nr && cc < nc) {{\n", r, c);
  x.out += fmt::format("      float val = {};\n      if (val != val) val = mx_float(0x7fc00000u);\n", tile_at(tp, root, "rr", "cc"));
  x.out += fmt::format("      static_cast<{}*>(P.out[{}])[{}] = {}(val){};\n    }}\n  }}\n", st, o,
                       x.out_offset(o, "rr", "cc", -1), cv, *cv ? ")" : "");
}

void emit_amax(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const TiledPlan& tp = pl.tiled();
  const int root = x.v.output_index[size_t(o)];
  x.out += fmt::format("  // Tensor amax '{}'.\n  {{\n    mx_u32 m = 0u;\n", x.p.outputs()[size_t(o)].name);
  x.out += fmt::format("    for (int k = threadIdx.x; k < {}; k += {}) {{\n", tp.tile_rows * tp.tile_cols, pl.threads);
  x.out += fmt::format("      const int r = k / {0}, c = k % {0};\n", tp.tile_cols);
  const std::string drop = amax_drop_nan(*x.p.outputs()[size_t(o)].node, "u");  // amax(x, AmaxNan::ignore)
  x.out += fmt::format("      mx_u32 u = mx_bits({}) & 0x7fffffffu;\n{}      m = u > m ? u : m;\n    }}\n",
                       tile_at(tp, root, "r", "c"), drop.empty() ? "" : "      " + drop + "\n");
  x.out += fmt::format("    mx_block_amax_publish(static_cast<mx_u32*>(P.out[{}]), m);\n  }}\n", o);
}

// The scale rule's word in a kernel name: the E8M0 rule, "nvfp4" or "fp32".
std::string rule_word(const NodePtr& sn) {
  if (sn->recipe == ScaleRecipe::nvfp4) return "nvfp4";
  if (sn->recipe == ScaleRecipe::f32_multiplier) return "fp32";
  if (sn->recipe != ScaleRecipe::e8m0_rule) return "custom";
  switch (sn->rule) {
    case ScaleRule::floor: return "floor";
    case ScaleRule::rceil: return "rceil";
    case ScaleRule::ceil: return "ceil";
    case ScaleRule::even: return "even";
    case ScaleRule::custom: break;
  }
  return "custom";
}

}  // namespace

std::string kernel_name(const Pipeline& p, const Plan& plan, const Target& target, const StrideClass& sc) {
  const ValueSet v = collect_values(p);
  std::vector<std::string> words = {"mxjit", kernel_kind_name(plan.kind)};
  // The scale blocks' axes, counted from the innermost (dim0: blocks along the last axis), or
  // "groups" for jagged groups.
  std::string dims;
  for (const NodePtr& sn : v.scales) {
    const BlockSpec& b = block_of(sn);
    std::string d = b.jagged()                ? "groups"
                    : b.whole_tensor(p.rank()) ? "tensorwise"
                    : b.axes.size() == 1      ? fmt::format("dim{}", p.rank() - 1 - b.axes[0])
                                              : "blocks2d";
    if (dims.find(d) == std::string::npos) dims += d;
  }
  words.push_back(dims.empty() ? "values" : dims);
  if (!v.quantizes.empty()) words.push_back(v.quantizes[0]->elem.str());
  if (!v.scales.empty()) words.push_back(rule_word(v.scales[0]));
  for (const InputDecl& in : p.inputs())
    if (in.kind == InputDecl::Kind::tensor || in.kind == InputDecl::Kind::codes) {
      words.emplace_back(dtype_name(in.dtype));
      break;
    }
  // The hash keeps names of different pipelines, targets, stride classes and plans apart.
  words.push_back(hash128(p.hash().hex() + target.arch + sc.str() + plan.str()).hex().substr(0, 8));
  std::string name = fmt::format("{}", fmt::join(words, "_"));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

GeneratedKernel generate(const Pipeline& p, const Target& target, const StrideClass& sc, const Schedule& schedule, Fit fit) {
  return generate(p, target, sc, make_plan(p, target, sc, schedule, fit));
}

GeneratedKernel generate(const Pipeline& p, const Target& target, const StrideClass& sc, Plan plan) {
  plan.kernel_name = kernel_name(p, plan, target, sc);
  Ctx x{p, target, sc, plan, collect_values(p), {}, 8};
  // Vector width: 16 bytes of the lead tensor input.
  if (const int k = lead_tensor_input(p); k >= 0) x.vec = int(16 / dtype_size(p.inputs()[size_t(k)].dtype));
  emit_banner(x);
  emit_params(x);
  switch (plan.kind) {
    case KernelKind::jagged:
      x.direct = true;
      emit_jagged_kernel(x);
      break;
    case KernelKind::columns: emit_columns_kernel(x); break;
    case KernelKind::rows:
      x.direct = true;
      emit_rows_kernel(x);
      break;
    case KernelKind::direct:
      x.direct = true;
      emit_direct_kernel(x);
      break;
    default:
      emit_prologue(x);
      emit_load(x);
      emit_scales(x);
      x.out += "  // Phase 3: the outputs, in order.\n";
      for (int o = 0; o < int(p.outputs().size()); ++o) {
        switch (p.outputs()[size_t(o)].kind) {
          case OutputKind::scales: emit_tile_scales(x, o); break;
          case OutputKind::elems: emit_elems(x, o); break;
          case OutputKind::values: emit_values(x, o); break;
          case OutputKind::amax: emit_amax(x, o); break;
        }
      }
      x.out += "}\n";
  }
  finish_decls(x);
  return GeneratedKernel{std::move(x.out), plan.kernel_name, plan.kernel_name + ".cu", kernel_headers(p), plan};
}

}  // namespace mxjit::detail
