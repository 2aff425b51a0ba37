// The grouped kernel: jagged groups along ax_r (MoE token groups from a device offsets array,
// no host synchronisation). One CTA per (group, 256 columns); each thread owns one column:
// pass 1 reads the group's rows for the column amax, pass 2 reads them again and writes codes.
// A last "group" G covers the rows past the final end (their codes are 0, as in the reference).
//
//   rows  0 .. e0     | group 0: one scale per column  -> s[0, c]
//         e0 .. e1    | group 1                         -> s[1, c]
//         ...         | (empty groups are zero blocks)
//         e[G-1] .. N | no group: codes 0
#include <fmt/format.h>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {

void emit_grouped_kernel(Ctx& x) {
  const Plan& pl = x.plan;
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
  x.out += fmt::format("  const mx_i64 c = mx_i64(blockIdx.x) * {} + threadIdx.x;\n  if (c >= P.shape[{}]) return;\n", pl.threads, ac);
  // Value of the element at row ix<ar>, column c.
  std::string body;
  for (size_t k = 0; k < x.p.inputs().size(); ++k)
    if (x.p.inputs()[k].kind == InputDecl::tensor)
      body += fmt::format("    float x{0}[1];\n    x{0}[0] = {1}(P.in[{0}], {2});\n", k, load_fn(x.p.inputs()[k].dtype),
                          x.in_offset(int(k), "", "c"));
  ExprEmitter em([&](const NodePtr& n) { return leaf_expr(x, n); }, "t");
  std::string eval = body;
  std::string v = em.emit(x.v.roots[0], eval, "    ");
  // leaf_expr names the preloaded element x<k>[e]; e is 0 here.
  eval = "    const int e = 0;\n" + eval;
  x.out += "  mx_u32 m = 0u;\n";
  x.out += fmt::format("  for (mx_i64 ix{0} = row_s; ix{0} < row_e; ++ix{0}) {{\n", ar);
  x.out += eval + fmt::format("    mx_u32 a = mx_bits({}) & 0x7fffffffu;\n", v);
  if (x.v.scale_flush[0]) x.out += "    if (a < 0x00800000u) a = 0u;\n";
  x.out += "    m = a > m ? a : m;\n  }\n";
  x.out += scale_from_amax(sn, "  ");
  x.out += "  if (g == G) flag = 1u;  // rows past the last end: codes 0, no scale\n";
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::scales) continue;
    const bool f32 = out.dtype == DType::f32;
    x.out += fmt::format("  if (g < G) static_cast<{}*>(P.out[{}])[g * P.out_stride[{}][{}] + c * P.out_stride[{}][{}]] = {};\n",
                         f32 ? "float" : "mx_u8", o, o, ar, o, ac,
                         f32 ? "(sval != sval ? mx_float(0x7fc00000u) : sval)" : "mx_u8(byte)");
  }
  for (int o = 0; o < int(x.p.outputs().size()); ++o) {
    const Output& out = x.p.outputs()[size_t(o)];
    if (out.kind != OutputKind::elems) continue;
    const NodePtr& q = x.v.quantizes[size_t(x.v.output_index[size_t(o)])];
    x.out += fmt::format("  for (mx_i64 ix{0} = row_s; ix{0} < row_e; ++ix{0}) {{\n", ar);
    x.out += eval;
    x.out += fmt::format("    float y = {};\n", v);
    if (q->flush_subnormals) x.out += "    if ((mx_bits(y) & 0x7fffffffu) < 0x00800000u) y = mx_float(mx_bits(y) & 0x80000000u);\n";
    x.out += "    y = y * mult;\n";
    std::string rnd = "0u";
    if (q->round == Round::stochastic) {
      x.out += fmt::format("    const mx_u32 rnd = mx_philox_word0(mx_u64({}), {}ull, {}ull);\n", x.linear_index("", "c"), q->offset,
                           q->seed);
      rnd = "rnd";
    }
    // One value at a time: a hardware pair conversion with a zero partner (FP8 only, byte-sized).
    const char* pair = hw_pair_fn(x, q);
    if (pair && (q->elem == e4m3 || q->elem == e5m2)) x.out += fmt::format("    mx_u32 k = {}(y, 0.0f) & 0xffu;\n", pair);
    else x.out += fmt::format("    mx_u32 k = {};\n", encode_call(x, q, "y", rnd));
    x.out += fmt::format("    if (flag) k = flag == 1u ? 0u : {}u;\n", nan_code(q->elem));
    x.out += fmt::format("    static_cast<mx_u8*>(P.out[{}])[ix{} * P.out_stride[{}][{}] + c * P.out_stride[{}][{}]] = mx_u8(k);\n  }}\n",
                         o, ar, o, ar, o, ac);
  }
  x.out += "}\n";
}

}  // namespace mxjit::detail
