#include "codegen/emit_common.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "codegen/emit_expr.hpp"
#include "codegen/layout_cuda.hpp"
#include "codegen/plan_rules.hpp"
#include "codegen/scale_expr_cuda.hpp"
#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "templates/templates.hpp"

namespace mxjit::detail {

std::string times(const std::string& e, int64_t k) { return k == 0 || e == "0" ? "0" : k == 1 ? e : fmt::format("{} * {}", e, k); }
std::string over(const std::string& e, int64_t k) { return k == 1 || e == "0" ? e : fmt::format("{} / {}", e, k); }
std::string modulo(const std::string& e, int64_t k) { return k == 1 || e == "0" ? "0" : fmt::format("{} % {}", e, k); }
std::string ceil_over(const std::string& e, int64_t k) { return k == 1 ? e : fmt::format("({0} + {1} - 1) / {1}", e, k); }
std::string plus(const std::string& e, int64_t k) { return k == 0 ? e : fmt::format("{} + {}", e, k); }

void keep_rolled(std::string& code, size_t from) {
  static constexpr std::string_view kUnroll = "#pragma unroll\n";
  for (size_t at = code.find(kUnroll, from); at != std::string::npos; at = code.find(kUnroll, at + kUnroll.size() + 2))
    code.replace(at, kUnroll.size(), "#pragma unroll 1\n");
}

std::string indent_lines(const std::string& text, const std::string& indent, bool skip_directives) {
  std::string r;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    nl = nl == std::string::npos ? text.size() : nl + 1;
    if (!skip_directives || (text[pos] != '#' && text[pos] != '\n')) r += indent;
    r.append(text, pos, nl - pos);
    pos = nl;
  }
  return r;
}

bool has_grouped_layout(const Pipeline& p) {
  for (const Output& o : p.outputs())
    if (o.layout.grouped()) return true;
  return false;
}

bool grouped_one_per_row(const Ctx& x, int o) { return grouped_one_per_row(x.p, x.v, x.plan, o); }

std::string grouped_rows_place(const Ctx& x, int o, const std::string& row, const std::string& var) {
  if (!grouped_one_per_row(x, o)) return "";
  const Output& out = x.p.outputs().at(size_t(o));
  const int k = x.p.input_index(out.layout.group_offsets()), ga = out.layout.group_axis();
  return fmt::format("const mx_i64 {} = mx_grouped_rows_place(static_cast<const int*>(P.in[{}]), P.in_stride[{}][0], "
                     "P.in_extent[{}], P.shape[{}], {});\n", var, k, k, k, ga, row);
}

int grouped_cols_table(const Ctx& x, int o) { return grouped_cols_table(x.p, x.v, x.plan, o); }

std::string group_cursor_decl(const std::string& cursor, const std::string& indent) {
  return fmt::format("{}MxGroupCursor {};  // the group of the scale placed last\n", indent, cursor);
}

std::string grouped_scale_store(const Ctx& x, int o, const std::string& s_r, const std::string& s_c,
                                const std::string& val, const std::string& indent, const std::string& cursor,
                                const std::string& ptr, const std::string& placed) {
  const Output& out = x.p.outputs().at(size_t(o));
  const NodePtr& sn = x.v.scales.at(size_t(x.v.output_index.at(size_t(o))));
  const auto [ra, ca] = blocked_axes(block_of(sn), x.plan.rank);
  const int ga = out.layout.group_axis(), k = x.p.input_index(out.layout.group_offsets());
  if (!out.layout.grouped() || out.dtype != DType::u8 || k < 0 || (ga != ra && ga != ca) ||
      (ra != x.plan.ax_r && ra != x.plan.ax_c) || (ca != x.plan.ax_r && ca != x.plan.ax_c))
    throw Error(fmt::format("mxjit internal: grouped_scale_store for output '{}' ({})", out.name, out.layout.str()));
  // The scale's (row, column) from its indices along the tile axes.
  const std::string& row = ra == x.plan.ax_r ? s_r : s_c;
  const std::string& col = ca == x.plan.ax_r ? s_r : s_c;
  const char* pad_by = !kernel_writes_padding(x.p, x.v, x.plan, o) ? "at launch"
                       : x.plan.kind == KernelKind::columns        ? "by warp 0 with its table"
                                                                   : "at the kernel's end";
  std::string s = fmt::format("{{  // {}: group ends from input '{}' (device); padding zeroed {}\n", out.layout.str(),
                              out.layout.group_offsets(), pad_by);
  s += fmt::format("  const mx_i64 gs_r = {}, gs_c = {}, gs_nr = P.out_shape[{}][{}], gs_nc = P.out_shape[{}][{}];\n", row,
                   col, o, ra, o, ca);
  s += "  if (gs_r < gs_nr && gs_c < gs_nc) {\n";
  if (!placed.empty() && grouped_one_per_row(x, o))
    s += fmt::format("    const mx_i64 gs_off = {0} >= 0 ? mx_blocked_offset<128, 4>(0, {0}, gs_c, 0, (gs_nc + 3) / 4 * 4) : -1;\n",
                     placed);
  else
    s += fmt::format(
        "    const mx_i64 gs_off = mx_grouped_blocked_offset<{}>({}, static_cast<const int*>(P.in[{}]), "
        "P.in_stride[{}][0], P.in_extent[{}], {}, P.shape[{}], gs_r, gs_c, gs_nr, gs_nc);\n",
        ga == ra ? "true" : "false", cursor, k, k, k, block_of(sn).size_along(ga), ga);
  s += fmt::format("    if (gs_off >= 0) {}[gs_off] = {};\n  }}\n}}\n",
                   ptr.empty() ? fmt::format("static_cast<mx_u8*>(P.out[{}])", o) : ptr, val);
  return indent_lines(s, indent);
}

const char* load_fn(DType t) {
  switch (t) {
    case DType::bf16: return "mx_ld_bf16";
    case DType::f16: return "mx_ld_f16";
    case DType::f32: return "mx_ld_f32";
    default: return "mx_ld_u8";
  }
}

const char* unpack_fn(DType t) {
  return t == DType::bf16 ? "mx_unpack_bf16x8" : t == DType::f16 ? "mx_unpack_f16x8" : "mx_unpack_f32x4";
}

std::string raw_chunk_tail(DType t, int k, const std::string& dst, const std::string& first, const std::string& ok,
                           const std::string& offset, const std::string& indent) {
  std::string s;
  if (t == DType::f32)
    s = fmt::format("{{\n  mx_u32 w[4];\n  for (int e = 0; e < 4; ++e) {{ const int c = {0} + e; w[e] = ({1}) ? static_cast<const mx_u32*>(P.in[{2}])[{3}] : 0u; }}\n",
                    first, ok, k, offset);
  else
    s = fmt::format("{{\n  mx_u32 w[4] = {{0u, 0u, 0u, 0u}};\n  for (int e = 0; e < 8; ++e) {{ const int c = {0} + e; if ({1}) w[e >> 1] |= mx_u32(static_cast<const mx_u16*>(P.in[{2}])[{3}]) << (16 * (e & 1)); }}\n",
                    first, ok, k, offset);
  s += fmt::format("  {} = mx_v16{{w[0], w[1], w[2], w[3]}};\n}}\n", dst);
  return indent_lines(s, indent);
}

std::string format_args(const ElemFormat& f) {
  int spec = f.specials == Specials::none ? 0 : (f.specials == Specials::fn ? 1 : 2);
  return fmt::format("{}, {}, {}, {}", f.is_int ? 1 : f.ebits, f.mbits, spec, f.is_int ? "true" : "false");
}

std::vector<std::string> kernel_headers(const Pipeline& p) {
  std::vector<std::string> h = {"mx_math.cuh", "prelude.cuh", "convert.cuh"};
  if (has_grouped_layout(p)) h.push_back("mx_grouped.cuh");
  return h;
}

namespace {
// The pipeline's IR with each scale written out once (`let s0 = ...`) where outputs share it: a
// dual cast's scale otherwise reads four times, as divisor and as output of each usage.
std::string banner_ir(const Pipeline& p, const ValueSet& v) {
  std::string ir = p.str();
  std::vector<std::string> lets;
  std::vector<std::string> texts;
  for (const NodePtr& sn : v.scales) texts.push_back(canonical(sn));
  // Longest first: a scale's text may hold another's (a tensor amax inside NVFP4's).
  std::vector<size_t> order(texts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return texts[a].size() > texts[b].size(); });
  for (size_t i : order) {
    const std::string& t = texts[i];
    size_t count = 0;
    for (size_t at = ir.find(t); at != std::string::npos; at = ir.find(t, at + t.size())) ++count;
    if (count < 2) continue;
    const std::string name = fmt::format("s{}", i);
    std::string out;
    size_t from = 0;
    for (size_t at = ir.find(t); at != std::string::npos; from = at + t.size(), at = ir.find(t, from))
      out += ir.substr(from, at - from) + name;
    ir = out + ir.substr(from);
    lets.push_back(fmt::format("  let {} = {}\n", name, t));
  }
  std::sort(lets.begin(), lets.end());
  // The lets after the inputs (and mask), before the outputs that use them.
  const size_t outs = ir.find("  out ");
  return outs == std::string::npos ? ir : ir.substr(0, outs) + fmt::format("{}", fmt::join(lets, "")) + ir.substr(outs);
}
}  // namespace

void emit_banner(Ctx& x) {
  x.out += "// ==== mxjit generated kernel ========================================================\n";
  x.out += fmt::format("// {}\n// generator {}  target {}  stride class {}\n", x.plan.kernel_name, kGeneratorVersion, x.target.arch, x.sc.str());
  std::string text;
  try {
    text = to_text(x.p);
  } catch (const UsageError&) {
    // Expressions the text form does not spell (prologues, dequantize): the IR instead.
  }
  if (!text.empty()) x.out += "// pipeline " + text + "\n";
  else
    x.out += "// pipeline (IR)\n" + indent_lines(banner_ir(x.p, x.v), "//   ");
  x.out += fmt::format("// pipeline hash {}\n", x.p.hash().hex());
  x.out += "// plan\n" + indent_lines(x.plan.str() + "\n", "//   ");
  x.out += "// ====================================================================================\n";
  x.out += fmt::format("#define MXJIT_HW_UE8M0 {}\n#define MXJIT_HW_FP4FP6 {}\n#define MXJIT_HW_FP8 {}\n#define MXJIT_HW_BF16X2 {}\n",
                       x.target.hw_fp4_fp6() ? 1 : 0, x.target.hw_fp4_fp6() ? 1 : 0, x.target.hw_fp8() ? 1 : 0,
                       x.target.sm() >= 90 ? 1 : 0);
  // mxjit's own headers (templates/), handed to NVRTC by name with the source.
  for (const std::string& h : kernel_headers(x.p)) x.out += fmt::format("#include \"{}\"\n", h);
  x.out += "\n";
}

void emit_params(Ctx& x) {
  const int r = x.plan.rank;
  x.out += "// Kernel parameters: every field 8 bytes, filled by the launcher in this order (Plan::params).\n";
  x.out += "struct MxParams {\n";
  for (const ParamLayout::Field& f : x.plan.params.fields) {
    switch (f.what) {
      case Param::in: x.out += fmt::format("  const void* in[{}];\n", f.words); break;
      case Param::out: x.out += fmt::format("  void* out[{}];\n", f.words); break;
      case Param::shape: x.out += fmt::format("  mx_i64 shape[{}];\n", f.words); break;
      case Param::in_stride: x.out += fmt::format("  mx_i64 in_stride[{}][{}];\n", f.words / r, r); break;
      case Param::out_stride: x.out += fmt::format("  mx_i64 out_stride[{}][{}];\n", f.words / r, r); break;
      case Param::out_shape: x.out += fmt::format("  mx_i64 out_shape[{}][{}];\n", f.words / r, r); break;
      case Param::tiles_r: x.out += "  mx_i64 tiles_r;\n"; break;
      case Param::tiles_c: x.out += "  mx_i64 tiles_c;\n"; break;
      case Param::aux: x.out += "  const void* aux;  // the workspace: NVFP4's pre-pass tensor amax (FP32), else null\n"; break;
      case Param::in_extent:
        x.out += fmt::format("  mx_i64 in_extent[{}];  // grouped scale layouts: each input's extent along axis 0 (offsets: G)\n", f.words);
        break;
    }
  }
  x.out += "};\n\n";
}

std::string dequant_scale_value(ScaleFormat f, int k, const std::string& offset) {
  switch (f) {
    case ScaleFormat::e8m0: return fmt::format("mx_e8m0_decode(mx_u32(mx_ld_u8(P.in[{}], {})))", k, offset);
    case ScaleFormat::e4m3: return fmt::format("mx_decode<4, 3, 1, false>(mx_u32(mx_ld_u8(P.in[{}], {})))", k, offset);
    case ScaleFormat::f32: break;
    case ScaleFormat::bf16: throw Error("mxjit internal: bf16 scales are not read back (dequantize refuses them)");
  }
  return fmt::format("mx_ld_f32(P.in[{}], {})", k, offset);
}

// Leaf loads inside the phase-1 loop (element column `c`, row `r`; tensor inputs preloaded).
std::string leaf_expr(const Ctx& x, const NodePtr& n) {
  if (n->op == Op::input) {
    int k = x.p.input_index(n->name);
    return fmt::format("x{}[e]", k);
  }
  if (n->op == Op::vec_input) {
    int k = x.p.input_index(n->name);
    return fmt::format("{}(P.in[{}], {} * P.in_stride[{}][0])", load_fn(n->dtype), k, x.idx(n->axis, "r", "c"), k);
  }
  if (n->op == Op::dequant) {
    const int kc = x.p.input_index(n->args[0]->name), ks = x.p.input_index(n->args[1]->name);
    const int ba = n->block.axes[0];
    const int64_t bs = n->block.sizes[0];
    const bool fp4 = n->elem.packed();
    std::string code_off = x.in_offset(kc, "r", "c", fp4 ? ba : -1, 2);
    std::string code = fmt::format("mx_u32(mx_ld_u8(P.in[{}], {}))", kc, code_off);
    if (fp4) code = fmt::format("(({} & 1) ? ({} >> 4) : ({} & 15u))", x.idx(ba, "r", "c"), code, code);
    std::string dv = fmt::format("mx_decode<{}>({})", format_args(n->elem), code);
    std::string s_off = x.in_offset(ks, "r", "c", ba, bs);
    return fmt::format("({} * {})", dv, dequant_scale_value(n->scale_format, ks, s_off));
  }
  throw Error("mxjit internal: unexpected leaf");
}

// NVFP4: the statement `<lhs> <multiplier of E4M3 scale byte `byte`>;` in sn's convention (the
// block's values are multiplied by it before the E2M1 encode).
static std::string nvfp4_mult(const NodePtr& sn, const std::string& byte, const std::string& lhs) {
  if (sn->convention == Nvfp4Convention::te)
    return fmt::format("{{ const float den = mx_decode<4, 3, 1, false>({}) * mx_s_dec; {} den == 0.0f ? 0.0f : 1.0f / den; }}\n", byte, lhs);
  return fmt::format("{} mx_per_tensor_inv / mx_decode<4, 3, 1, false>({});\n", lhs, byte);
}

std::string scale_from_amax(const NodePtr& sn, const std::string& in, const std::string& mult_table, bool stored, bool coded) {
  // Emits code that turns `m` (the block's max |x| as FP32 bits) into byte, flag, mult, sval.
  if (generic_scale(*sn)) return generic_scale_from_amax(*sn, in, stored, coded);
  const ElemFormat& f = sn->elem;
  const bool mult = coded || sn->scale_format == ScaleFormat::f32;  // the FP32 path derives sval from mult
  // An exponent rule's flag only feeds the codes; the built-in rules derive the byte from it.
  const bool exponent = sn->scale_format == ScaleFormat::e8m0 && sn->recipe == ScaleRecipe::e8m0_exponent;
  std::string o = scale_var_decls(*sn, stored, mult, coded || (sn->scale_format == ScaleFormat::e8m0 && !exponent));
  switch (sn->scale_format) {
    case ScaleFormat::e8m0: {
      if (exponent) {
        const auto fl = [&](int v) { return coded ? fmt::format(" flag = {}u;", v) : std::string(); };
        // NaN (and, with nan_block, Inf) blocks: one compare on the common path.
        o += sn->policy == NanPolicy::nan_block ? fmt::format("if (m >= 0x7f800000u) {{ byte = 255u;{} }}\n", fl(2))
                                                : fmt::format("if (m > 0x7f800000u) {{ byte = 255u;{} }}\n"
                                                              "else if (m == 0x7f800000u) {{ byte = 254u; }}\n", fl(2));
        o += fmt::format("else if (m == 0u) {{ byte = 0u;{} }}\nelse {{\n", fl(1));
        ExprEmitter em([](const NodePtr&) { return std::string("mx_float(m)"); }, "se");
        std::string var = em.emit(sn->exponent, o, "  ");
        o += fmt::format("  byte = mx_custom_exponent_byte({});\n{}}}\n", var, coded ? "  if (byte == 255u) flag = 2u;\n" : "");
        if (coded) o += "if (flag == 0u) mult = mx_e8m0_recip(byte);\n";
        break;
      }
      // Built-in rules without branches: the rule runs on every m (its result for m = 0, Inf or
      // NaN is discarded), then selects give zero blocks 0 and NaN (nan_block: also Inf) blocks
      // 255. Branches here split the direct kernel's hot path into several reconverging regions.
      switch (sn->rule) {
        case ScaleRule::floor: o += fmt::format("byte = mx_scale_floor(m, {});\n", f.emax()); break;
        case ScaleRule::ceil: o += fmt::format("byte = mx_scale_ceil(m, {});\n", f.max_normal_log2()); break;
        case ScaleRule::even: o += fmt::format("byte = mx_scale_even(m, {}, {});\n", f.is_int ? 6 : f.mbits, f.emax()); break;
        case ScaleRule::rceil: o += fmt::format("byte = mx_scale_rceil(m, {});\n", float_literal(1.0 / f.max_normal())); break;
        case ScaleRule::custom: break;
      }
      if (sn->policy == NanPolicy::nan_block) {
        o += "flag = m >= 0x7f800000u ? 2u : (m == 0u ? 1u : 0u);\n";
      } else {
        o += "flag = m > 0x7f800000u ? 2u : (m == 0u ? 1u : 0u);\n";
        o += "byte = m == 0x7f800000u ? 254u : byte;\n";
      }
      o += "byte = flag == 2u ? 255u : (flag == 1u ? 0u : byte);\n";
      if (coded) o += "mult = flag == 0u ? mx_e8m0_recip(byte) : 0.0f;\n";
      break;
    }
    case ScaleFormat::f32:
      o += fmt::format("{{\n  const float a = mx_float(m);\n  mult = {} / (a < 1e-12f ? 1e-12f : a);\n",
                       float_literal(f.max_normal()));
      // pow2: r is +0, normal or NaN; clearing a normal r's mantissa rounds it down.
      if (sn->pow2) o += "  if (mult == mult) mult = mx_float(mx_bits(mult) & 0xff800000u);\n";
      o += !stored ? "}\n" : sn->store_multiplier ? "  sval = mult;\n}\n" : "  sval = 1.0f / mult;\n}\n";
      break;
    case ScaleFormat::e4m3:
      // NVFP4 (docs/design.md §4), bit-exact to each convention; mx_tamax is the pre-pass tensor amax.
      // The per-tensor factors come from emit_tamax (once per thread, not per block).
      o += "{\n  const float a = mx_float(m);\n";
      if (sn->convention == Nvfp4Convention::te) {
        o += "  byte = mx_e4m3_rne(a * mx_s_enc6);\n";
        if (coded) o += mult_table.empty() ? "  " + nvfp4_mult(sn, "byte", "mult =") : fmt::format("  mult = {}[byte];\n", mult_table);
      } else {
        o += fmt::format("  if (mx_per_tensor == 0.0f) {{ byte = mx_e4m3_rne(mx_float(0x3c800000u));{} }}\n", coded ? " flag = 1u;" : "");
        o += "  else {\n    const float ratio = (a / 6.0f) / mx_per_tensor;\n";
        o += "    byte = mx_e4m3_rne(mx_fmin_nan(mx_fmax_nan(ratio, mx_float(0x3c800000u)), 448.0f));\n";
        if (coded) o += mult_table.empty() ? "    " + nvfp4_mult(sn, "byte", "mult =") : fmt::format("    mult = {}[byte];\n", mult_table);
        o += "  }\n";
      }
      o += "}\n";
      break;
    case ScaleFormat::bf16: throw Error("mxjit internal: bf16 scales are generic definitions (generic_scale_from_amax)");
  }
  return indent_lines(o, in);
}

bool byte_scale(const Node& sn) { return sn.scale_format == ScaleFormat::e8m0 || sn.scale_format == ScaleFormat::e4m3; }

std::string scale_var_decls(const Node& sn, bool stored, bool mult, bool flag) {
  std::string u, f;
  if (byte_scale(sn)) u = "byte = 0u";
  if (flag) u += u.empty() ? "flag = 0u" : ", flag = 0u";
  if (mult) f = "mult = 0.0f";
  if (!byte_scale(sn) && stored) f += f.empty() ? "sval = 0.0f" : ", sval = 0.0f";
  return (u.empty() ? "" : "mx_u32 " + u + (flag ? ";  // flag: 0 normal, 1 zero block, 2 NaN block\n" : ";\n")) +
         (f.empty() ? "" : "float " + f + ";\n");
}

bool uses(const std::string& code, const std::string& name, size_t from) {
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  const auto in_comment = [&](size_t p) {
    const size_t line = code.rfind('\n', p);
    const size_t slashes = code.find("//", line == std::string::npos ? 0 : line + 1);
    return slashes < p;
  };
  for (size_t p = code.find(name, from); p != std::string::npos; p = code.find(name, p + 1))
    if ((p == 0 || !ident(code[p - 1])) && (p + name.size() == code.size() || !ident(code[p + name.size()])) &&
        !in_comment(p))
      return true;
  return false;
}

void insert_used(std::string& code, size_t at, const std::vector<Decl>& decls) {
  std::string ins;  // the kept statements, last first: a declaration may use those before it
  for (auto d = decls.rbegin(); d != decls.rend(); ++d)
    if (uses(code, d->name, at) || uses(ins, d->name)) ins.insert(0, d->statement);
  code.insert(at, ins);
}

namespace {
std::string defer_marker(size_t k) { return fmt::format("\x01{}\x01", k); }
}  // namespace

void defer_decls(Ctx& x, std::vector<Decl> decls) {
  x.out += defer_marker(x.deferred.size());
  x.deferred.push_back(std::move(decls));
}

void finish_decls(Ctx& x) {
  for (size_t k = x.deferred.size(); k-- > 0;) {
    const std::string m = defer_marker(k);
    const size_t at = x.out.find(m);
    if (at == std::string::npos) throw Error(fmt::format("mxjit internal: declaration marker {} is missing", k));
    x.out.erase(at, m.size());
    insert_used(x.out, at, x.deferred[k]);
  }
  x.deferred.clear();
}

bool scale_stored(const Ctx& x, int s) {
  for (size_t o = 0; o < x.p.outputs().size(); ++o)
    if (x.p.outputs()[o].kind == OutputKind::scales && x.v.output_index[o] == s) return true;
  return false;
}

bool scale_coded(const Ctx& x, int s) {
  return std::find(x.v.quantize_scale.begin(), x.v.quantize_scale.end(), s) != x.v.quantize_scale.end();
}

std::string scale_slot_decls(const Ctx& x, int s, bool stored, bool coded, const std::string& ind, const std::string& arr) {
  const bool b = byte_scale(*x.v.scales[size_t(s)]);
  std::string u, f;
  if (coded) u = fmt::format("flag{}{}", s, arr);
  if (stored && b) u += fmt::format("{}byte{}{}", u.empty() ? "" : ", ", s, arr);
  if (coded) f = fmt::format("mult{}{}", s, arr);
  if (stored && !b) f += fmt::format("{}sval{}{}", f.empty() ? "" : ", ", s, arr);
  return (u.empty() ? "" : fmt::format("{}mx_u32 {};\n", ind, u)) + (f.empty() ? "" : fmt::format("{}float {};\n", ind, f));
}

std::string scale_slot_copy(const Ctx& x, int s, bool stored, bool coded, const std::string& ind, const std::string& idx,
                            const std::string& byte, const std::string& sval) {
  const bool b = byte_scale(*x.v.scales[size_t(s)]);
  std::string o;
  if (coded) o += fmt::format(" flag{0}{1} = flag; mult{0}{1} = mult;", s, idx);
  if (stored) o += b ? fmt::format(" byte{}{} = {};", s, idx, byte) : fmt::format(" sval{}{} = {};", s, idx, sval);
  return o.empty() ? "" : ind + o.substr(1) + "\n";
}

std::string stored_scale(const Output& out, const std::string& suffix) {
  if (out.dtype == DType::f32) return fmt::format("(sval{0} != sval{0} ? mx_float(0x7fc00000u) : sval{0})", suffix);
  if (out.dtype == DType::bf16) return fmt::format("mx_u16(mx_f32_to_bf16_rne(sval{0} != sval{0} ? mx_float(0x7fc00000u) : sval{0}))", suffix);
  return fmt::format("mx_u8(byte{})", suffix);
}

const char* scale_ctype(DType t) { return t == DType::f32 ? "float" : t == DType::bf16 ? "mx_u16" : "mx_u8"; }

const char* hw_pair_fn(const Ctx& x, const NodePtr& q) { return hw_pair_fn(x.target, q); }

const char* hw_pair_fn(const Target& target, const NodePtr& q) { return hw_pair_fn(target, q, q->saturate); }

const char* hw_pair_fn(const Target& target, const NodePtr& q, Saturate saturate) {
  if (q->round != Round::nearest_even) return nullptr;
  if (saturate == Saturate::none) {  // E4M3 / E5M2 only (the DSL's rule): the cvt, then overflow to NaN / Inf
    if (!target.hw_fp8()) return nullptr;
    return q->elem == e4m3 ? "mx_cvt_e4m3x2_nosat" : "mx_cvt_e5m2x2_nosat";
  }
  if (target.hw_fp8() && q->elem == e4m3) return "mx_cvt_e4m3x2";
  if (target.hw_fp8() && q->elem == e5m2) return "mx_cvt_e5m2x2";
  if (target.hw_fp4_fp6() && q->elem == e2m1) return "mx_cvt_e2m1x2";
  if (target.hw_fp4_fp6() && q->elem == e2m3) return "mx_cvt_e2m3x2";
  if (target.hw_fp4_fp6() && q->elem == e3m2) return "mx_cvt_e3m2x2";
  // No FP4/FP6 cvt (sm_89, sm_90): exact emulations, far fewer instructions than mx_encode_rne.
  // Under an E8M0 scale every NaN sits in a NaN block, whose codes the callers overwrite (the
  // codes come from the values the scale's amax saw), so the NaN tests can go.
  const bool e8m0 = mx_e8m0(*q->args[1]);
  if (q->elem == e2m1) return e8m0 ? "mx_e2m1x2_fma_finite" : "mx_e2m1x2_fma";
  if (target.hw_fp8() && q->elem == e2m3) return e8m0 ? "mx_e2m3x2_via_e4m3_finite" : "mx_e2m3x2_via_e4m3";
  if (target.hw_fp8() && q->elem == e3m2) return e8m0 ? "mx_e3m2x2_via_e5m2_finite" : "mx_e3m2x2_via_e5m2";
  if (q->elem == int8 && e8m0) return "mx_int8x2_finite";
  return nullptr;
}

int nan_code(const ElemFormat& f) { return f.has_nan() ? (1 << (f.bits() - 1)) - 1 : 0; }

std::string encode_call(const Ctx&, const NodePtr& q, const std::string& val, const std::string& rnd) {
  if (q->round == Round::stochastic) return fmt::format("mx_encode_sw<{}>({}, true, {})", format_args(q->elem), val, rnd);
  if (q->saturate == Saturate::none)
    return fmt::format("mx_fp8_nosat<{}>({}, mx_encode_rne<{}>({}))", q->elem == e5m2, val, format_args(q->elem), val);
  return fmt::format("mx_encode_rne<{}>({})", format_args(q->elem), val);
}

// Whether scale s is NVFP4's torchao convention, which clamps the scaled values to [-6, 6].
static bool torchao_clamp(const Ctx& x, int s) {
  const NodePtr& sn = x.v.scales[size_t(s)];
  return nvfp4(*sn) && sn->convention == Nvfp4Convention::torchao;
}

// Statements turning `in` (an element value) into `out` (what the encoder takes): q's flush,
// times scale s's multiplier (a generic scale: its multiply or divide and clamp), the NVFP4
// torchao clamp.
static std::string encoder_input(const Ctx& x, const NodePtr& q, int s, const std::string& in, const std::string& out,
                   const std::string& ind, const std::string& mult, bool clamp = true) {
  std::string r = fmt::format("{}float {} = {};\n", ind, out, in);
  if (q->flush_subnormals)
    r += fmt::format("{0}if ((mx_bits({1}) & 0x7fffffffu) < 0x00800000u) {1} = mx_float(mx_bits({1}) & 0x80000000u);\n", ind, out);
  const NodePtr& sn = x.v.scales[size_t(s)];
  if (generic_scale(*sn)) r += fmt::format("{}{} = {};\n", ind, out, generic_scale_element(*sn, out, mult));
  else r += fmt::format("{}{} *= {};\n", ind, out, mult);
  if (clamp && torchao_clamp(x, s)) r += fmt::format("{0}{1} = mx_fmin_nan_c(mx_fmax_nan_c({1}, -6.0f), 6.0f);\n", ind, out);
  return r;
}

// Whether scale s's codes of q take the bracketed division (mx_div_bracket): a generic scale that
// divides by one factor per block, cast by the FP8 cvt with saturation, no subnormal flush.
static bool bracketed_divide(const Ctx& x, const NodePtr& q, int s, bool per_column, const std::string& signs8) {
  const NodePtr& sn = x.v.scales[size_t(s)];
  return !per_column && signs8.empty() && !q->flush_subnormals && q->saturate != Saturate::none && generic_scale(*sn) &&
         divide_bracketable(*sn) && (q->elem == e4m3 || q->elem == e5m2) && x.target.hw_fp8();
}

// The pair codes pr<j> of n values src[e] divided by scale s's multiplier: both ends of the
// bracket (mx_div_bracket) cast; the division, as encoder_input writes it, only for a chunk
// where some value's ends differ.
static void emit_bracketed_divide(Ctx& x, const NodePtr& q, int s, const std::string& src, int n,
                                  const std::string& ind, const char* pair_fn) {
  const Node& sn = *x.v.scales[size_t(s)];
  const double top = q->elem.max_normal();
  auto end = [&](int e, int side) {
    return bracket_end(sn, top, fmt::format("__fmul_rn({}[{}], dv.{})", src, e, side ? "rh" : "rl"), side);
  };
  std::string prs;
  for (int e = 0; e < n; e += 2) prs += fmt::format("{}pr{}", e ? ", " : "", e / 2);
  x.out +=
      fmt::format("{0}mx_u32 {1};\n{0}{{  // x / mult{2} between x * rl and x * rh (mx_div_bracket)\n", ind, prs, s);
  x.out += fmt::format("{0}  const MxDivBracket dv = mx_div_bracket(mult{1});\n{0}  mx_u32 miss = dv.miss;\n", ind, s);
  for (int e = 0; e < n; e += 2) {
    x.out += fmt::format("{}  pr{} = {}({}, {});\n", ind, e / 2, pair_fn, end(e, 0), end(e + 1, 0));
    x.out += fmt::format("{}  miss |= pr{} ^ {}({}, {});\n", ind, e / 2, pair_fn, end(e, 1), end(e + 1, 1));
  }
  x.out += fmt::format(
      "{0}  if (miss) {{\n{0}    float y[{1}];\n#pragma unroll\n{0}    for (int e = 0; e < {1}; ++e) {{\n", ind, n);
  x.out += encoder_input(x, q, s, src + "[e]", "y_", ind + "      ", fmt::format("mult{}", s));
  x.out += fmt::format("{0}      y[e] = y_;\n{0}    }}\n", ind);
  for (int e = 0; e < n; e += 2)
    x.out += fmt::format("{}    pr{} = {}(y[{}], y[{}]);\n", ind, e / 2, pair_fn, e, e + 1);
  x.out += fmt::format("{0}  }}\n{0}}}\n", ind);
}

void emit_packed_codes(Ctx& x, const NodePtr& q, int s, const std::string& src, int n,
                       const std::function<std::string(int)>& lin, const std::string& ind, bool per_column,
                       const std::string& signs8) {
  const bool fp4 = q->elem.packed();
  const int bits = fp4 ? 4 : 8, words = n * bits / 32, per_word = 32 / bits;
  const char* pair_fn = hw_pair_fn(x, q);
  // The multiplier of element `e` (an expression of the loop variable).
  auto mult = [&](const std::string& e) { return per_column ? fmt::format("mult{}[{}]", s, e) : fmt::format("mult{}", s); };
  // Per-element scales: the block flags come as per-word masks (codes kept, fill codes).
  auto apply_masks = [&] {
    for (int w = 0; w < words; ++w) x.out += fmt::format("{0}wd[{1}] = (wd[{1}] & keep{2}[{1}]) | fill{2}[{1}];\n", ind, w, s);
  };
  // The pair codes pr<j> packed into the words.
  auto pack = [&](const std::string& in) {
    for (int w = 0; w < words; ++w) {
      std::string v;
      for (int e = w * per_word; e < (w + 1) * per_word; e += 2)
        v += (v.empty() ? "" : " | ") + ((e % per_word) * bits ? fmt::format("(pr{} << {})", e / 2, (e % per_word) * bits)
                                                                : fmt::format("pr{}", e / 2));
      x.out += fmt::format("{}wd[{}] = {};\n", in, w, v);
    }
  };
  bool eight = false;
  if (pair_fn && bracketed_divide(x, q, s, per_column, signs8)) {
    emit_bracketed_divide(x, q, s, src, n, ind, pair_fn);
  } else if (pair_fn) {
    eight = !signs8.empty();  // the plan's eight_at_once (DirectPlan)
    if (eight && (per_column || n != 8 || std::string(pair_fn) != "mx_e2m1x2_fma"))
      throw Error("mxjit internal: eight E2M1 codes at once need 8 codes of one NVFP4 scale through mx_e2m1x2_fma");
    x.out += fmt::format("{0}float y[{1}];\n#pragma unroll\n{0}for (int e = 0; e < {1}; ++e) {{\n", ind, n);
    x.out += encoder_input(x, q, s, src + "[e]", "y_", ind + "  ", mult("e"), !eight) + fmt::format("{}  y[e] = y_;\n{}}}\n", ind, ind);
    // Eight codes at once where no y is NaN and the multiplier's sign is clear (so y has its
    // input's sign, which signs8 reads): no NaN tests, one shift per pair. Both conventions give
    // a block holding a NaN or an infinity a NaN multiplier: its amax is NaN (then so is the
    // scale byte's multiplier) or infinite, and so is the tensor amax of the same values, which
    // makes TE's s_enc 0 (0 * Inf and 0 * (1 / 0) are NaN) and torchao's ratio Inf / Inf. So a
    // multiplier whose bits lie below +Inf's multiplies finite values only, and a finite value
    // times a finite multiplier is never NaN (an overflow to infinity encodes as 6, as the
    // pairs do). A sum of the eight y tested for NaN, the earlier guard, cost seven adds.
    // torchao's clamp to [-6, 6] is left to the other chunks' pairs: E2M1's encode saturates at 6
    // anyway, so for y not NaN the codes are the clamped values' codes.
    const std::string in = eight ? ind + "  " : ind;
    if (eight) {
      x.out += fmt::format("{0}mx_u32 wd[1];\n{0}if (mx_bits({1}) < 0x7f800000u) {{\n"
                           "{0}  wd[0] = mx_e2m1x8_f32_finite(y, {2});\n{0}}} else {{\n",
                           ind, mult("0"), signs8);
      if (torchao_clamp(x, s)) x.out += fmt::format("{}for (int e = 0; e < 8; ++e) y[e] = mx_fmin_nan_c(mx_fmax_nan_c(y[e], -6.0f), 6.0f);\n", in);
    }
    if (q->saturate == Saturate::none && !eight) {
      // The non-saturating pair differs from the saturating cvt only in lanes past the format's
      // overflow bound, so a chunk with none (the peers' casts: |y| <= max) takes the bare cvt.
      const char* sat_fn = hw_pair_fn(x.target, q, Saturate::finite);
      std::string pr, fast, slow;
      for (int e = 0; e < n; e += 2) {
        pr += fmt::format("{}pr{}", e ? ", " : "", e / 2);
        fast += fmt::format("{}  pr{} = {}(y[{}], y[{}]);\n", in, e / 2, sat_fn, e, e + 1);
        slow += fmt::format("{}  pr{} = {}(y[{}], y[{}]);\n", in, e / 2, pair_fn, e, e + 1);
      }
      x.out += fmt::format("{0}mx_u32 {1};\n{0}if (mx_fp8_no_overflow<{2}>(y)) {{\n{3}{0}}} else {{\n{4}{0}}}\n", in,
                           pr, q->elem == e5m2, fast, slow);
    } else {
      for (int e = 0; e < n; e += 2)
        x.out += fmt::format("{}const mx_u32 pr{} = {}(y[{}], y[{}]);\n", in, e / 2, pair_fn, e, e + 1);
    }
    if (eight) {
      pack(in);
      x.out += ind + "}\n";
    }
  } else {
    // Software encoder: codes pair by pair with the block flag applied per element, then packed.
    // (This exact shape is the one measured bit-exact on sm_90; a variant that packed the
    // encoder's results directly into words miscompared on the H200 and is not used.)
    x.out += fmt::format("{0}mx_u32 code[{1}];\n#pragma unroll\n{0}for (int e = 0; e < {1}; e += 2) {{\n", ind, n);
    for (int h = 0; h < 2; ++h) {
      x.out += encoder_input(x, q, s, fmt::format("{}[e + {}]", src, h), fmt::format("y{}", h), ind + "  ", mult(fmt::format("e + {}", h)));
      if (q->round == Round::stochastic)
        x.out += fmt::format("{}  const mx_u32 rnd{} = mx_philox_word0(mx_u64({}), {}ull, {}ull);\n", ind, h, lin(h), q->offset, q->seed);
    }
    x.out += fmt::format("{}  mx_u32 k0 = {}, k1 = {};\n", ind, encode_call(x, q, "y0", "rnd0"), encode_call(x, q, "y1", "rnd1"));
    if (!per_column)
      x.out += fmt::format("{0}  if (flag{1}) {{ k0 = flag{1} == 1u ? 0u : {2}u; k1 = k0; }}\n", ind, s, nan_code(q->elem));
    x.out += fmt::format("{0}  code[e] = k0; code[e + 1] = k1;\n{0}}}\n", ind);
    x.out += fmt::format("{}mx_u32 wd[{}];\n", ind, words);
    for (int w = 0; w < words; ++w) {
      std::string v;
      for (int j = 0; j < per_word; ++j)
        v += (j ? " | " : "") + (j ? fmt::format("((code[{}] & {}u) << {})", w * per_word + j, (1 << bits) - 1, j * bits)
                                   : fmt::format("(code[{}] & {}u)", w * per_word + j, (1 << bits) - 1));
      x.out += fmt::format("{}wd[{}] = {};\n", ind, w, v);
    }
    if (per_column) apply_masks();
    return;
  }
  if (!eight) {
    x.out += fmt::format("{}mx_u32 wd[{}];\n", ind, words);
    pack(ind);
  }
  if (per_column) {
    apply_masks();
    return;
  }
  const unsigned fill = unsigned(nan_code(q->elem)) * (fp4 ? 0x11111111u : 0x01010101u);
  x.out += fmt::format("{0}if (flag{1}) {{\n{0}  const mx_u32 f_ = flag{1} == 1u ? 0u : {2:#010x}u;\n", ind, s, fill);
  for (int w = 0; w < words; ++w) x.out += fmt::format("{}  wd[{}] = f_;\n", ind, w);
  x.out += ind + "}\n";
}

// The tensor input whose words the block amax of scale s can read two elements at a time (its
// root is that bare bf16/f16 input), or -1.
int packed_amax_input(const Ctx& x, int s, bool drop_nan) {
  if (x.v.scales[size_t(s)]->amax_nan == AmaxNan::ignore && !drop_nan) return -1;  // max.NaN keeps NaN
  return amax_words_input(x.p, x.v, s);
}

// C expression: the FP32 bits of the larger (`half` < 0: of both) 16-bit lane of packed |x| word
// `pw` of input k.
std::string widen_half(const Ctx& x, int k, const std::string& pw, int half) {
  const bool bf16 = x.p.inputs()[size_t(k)].dtype == DType::bf16;
  auto lane = [&](int h) {
    if (bf16) return h ? fmt::format("({} & 0xffff0000u)", pw) : fmt::format("({} << 16)", pw);
    return fmt::format("mx_bits(mx_f16_to_f32(mx_u16({})))", h ? fmt::format("{} >> 16", pw) : fmt::format("{} & 0xffffu", pw));
  };
  if (half >= 0) return lane(half);
  return fmt::format("mx_umax({}, {})", lane(0), lane(1));
}

const char* packed_max_fn(const Ctx& x, int k) {
  return x.p.inputs()[size_t(k)].dtype == DType::f16 ? "mx_max_f16x2" : "mx_max_bf16x2";
}

std::string packed_abs_max4(const Ctx& x, int k, const std::string& w0, const std::string& w1, const std::string& w2,
                            const std::string& w3, bool drop_nan) {
  if (drop_nan) {  // NaN-skipping maxima, then the lanes that saw only NaN dropped to +0
    const bool f16 = x.p.inputs()[size_t(k)].dtype == DType::f16;
    return fmt::format("mx_drop_nan2({0}({0}({1} & 0x7fff7fffu, {2} & 0x7fff7fffu), {0}({3} & 0x7fff7fffu, {4} & 0x7fff7fffu)), {5})",
                       f16 ? "mx_max_f16x2_num" : "mx_max_bf16x2_num", w0, w1, w2, w3, f16 ? "0x03ff03ffu" : "0x007f007fu");
  }
  return fmt::format("{0}({0}({1} & 0x7fff7fffu, {2} & 0x7fff7fffu), {0}({3} & 0x7fff7fffu, {4} & 0x7fff7fffu))", packed_max_fn(x, k), w0,
                     w1, w2, w3);
}

void emit_store_codes(Ctx& x, const NodePtr& q, int n, const std::string& full, const std::string& in_e,
                      const std::string& ind, bool full_aligned) {
  const bool fp4 = q->elem.packed();
  const int bytes = fp4 ? n / 2 : n;
  const std::string check = full_aligned ? std::string()
                            : bytes == 16    ? "mx_aligned16(ob)"
                            : bytes == 8     ? "(reinterpret_cast<mx_u64>(ob) & 7u) == 0"
                                             : "(reinterpret_cast<mx_u64>(ob) & 3u) == 0";
  const std::string cond = full == "true" ? check : check.empty() ? full : full + " && " + check;
  const std::string store = bytes == 16 ? "mx_st16(ob, mx_v16{wd[0], wd[1], wd[2], wd[3]});"
                            : bytes == 8 ? "*reinterpret_cast<uint2*>(ob) = make_uint2(wd[0], wd[1]);"
                                         : "*reinterpret_cast<mx_u32*>(ob) = wd[0];";
  // A whole, aligned chunk (the caller knows: `full` is "true" with full_aligned): the store alone.
  if (cond.empty()) return void(x.out += ind + store + "\n");
  x.out += fmt::format("{}if ({}) {}\n", ind, cond, store);
  const std::string guard = in_e == "true" ? "" : fmt::format("if ({}) ", in_e);
  if (fp4)
    x.out += fmt::format("{}else {{\n#pragma unroll\n{}  for (int e = 0; e < {}; e += 2) {}ob[e >> 1] = mx_u8(wd[e >> 3] >> (4 * (e & 7)));\n{}}}\n",
                         ind, ind, n, guard, ind);
  else
    x.out += fmt::format("{}else {{\n#pragma unroll\n{}  for (int e = 0; e < {}; ++e) {}ob[e] = mx_u8(wd[e >> 2] >> (8 * (e & 3)));\n{}}}\n",
                         ind, ind, n, guard, ind);
}

}  // namespace mxjit::detail

namespace mxjit::detail {

std::string mult_table(int s) { return fmt::format("mx_mult{}", s); }

void emit_tamax(Ctx& x, bool tables) {
  bool any = false, any_table = false;  // any_table: for the scales that codes are cast with
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    any = any || nvfp4(*x.v.scales[size_t(s)]);
    any_table = any_table || (nvfp4(*x.v.scales[size_t(s)]) && scale_coded(x, s));
  }
  if (!any) return;
  // Both conventions' per-tensor factors (docs/design.md §4), as scale_from_amax uses them: TE's
  // encode scale s_enc = 2688 / amax (1 for amax 0, FLT_MAX for an infinite quotient), with
  // s_enc / 6 and 1 / s_enc; torchao's per_tensor = amax / 2688 and its reciprocal.
  x.out += "  const float mx_tamax = *static_cast<const float*>(P.aux);  // NVFP4 tensor amax (pre-pass)\n";
  defer_decls(x, {{"mx_s_enc",
                   "  float mx_s_enc = mx_tamax == 0.0f ? 1.0f : 2688.0f / mx_tamax;\n"
                   "  if (mx_bits(mx_s_enc) == 0x7f800000u) mx_s_enc = mx_float(0x7f7fffffu);\n"},
                  {"mx_s_enc6", fmt::format("  const float mx_s_enc6 = mx_s_enc * {};\n", float_literal(1.0 / 6.0))},
                  {"mx_s_dec", "  const float mx_s_dec = 1.0f / mx_s_enc;\n"},
                  {"mx_per_tensor", "  const float mx_per_tensor = mx_tamax / 2688.0f;\n"},
                  {"mx_per_tensor_inv", "  const float mx_per_tensor_inv = 1.0f / mx_per_tensor;\n"}});
  if (!tables || !any_table) return;
  // The multiplier depends on the block only through its E4M3 byte: 256 values per tensor, where
  // each block computed a decode, a multiply and a correctly rounded division (the issue-bound
  // NVFP4 cast's scale work) before.
  for (int s = 0; s < int(x.v.scales.size()); ++s) {
    const NodePtr& sn = x.v.scales[size_t(s)];
    if (!nvfp4(*sn) || !scale_coded(x, s)) continue;
    x.out += fmt::format("  __shared__ float {}[256];  // scale {}'s multiplier of each E4M3 byte\n", mult_table(s), s);
    x.out += fmt::format("  for (int i = threadIdx.x; i < 256; i += blockDim.x) {}",
                         nvfp4_mult(sn, "mx_u32(i)", mult_table(s) + "[i] ="));
  }
  x.out += "  __syncthreads();\n";
}

}  // namespace mxjit::detail

namespace mxjit::detail {

namespace {
// A tile scale's indices gr, gc (tile row / column sr0, sc0 plus ir, ic), those that `offset` uses.
std::string scale_index_decls(const std::string& offset, const std::string& ind) {
  std::string o;
  if (uses(offset, "gr")) o += ind + "const mx_i64 gr = sr0 + ir;\n";
  if (uses(offset, "gc")) o += ind + "const mx_i64 gc = sc0 + ic;\n";
  return o;
}
}  // namespace

void emit_tile_scales(Ctx& x, int o) {
  const Plan& pl = x.plan;
  const Output& out = x.p.outputs()[size_t(o)];
  const int si = x.v.output_index[size_t(o)];
  const BlockSpec& b = block_of(x.v.scales[size_t(si)]);
  const int64_t br = pl.ax_r >= 0 ? b.size_along(pl.ax_r) : 1, bc = b.size_along(pl.ax_c);
  const bool f32 = out.dtype == DType::f32, bf16 = out.dtype == DType::bf16, wide = f32 || bf16;  // wide: s<i>_val
  x.out += fmt::format("  // Scales '{}' ({}) of the tile, from shared memory.\n  {{\n", out.name, out.layout.str());
  // Scale-index ranges of this tile along the tile axes (small: int); the last tile also covers
  // the padding of a blocked layout.
  x.out += fmt::format("    const mx_i64 sr0 = {}, sc0 = {};\n", over("r0", br), over("c0", bc));
  x.out += fmt::format("    int nsr = {}, nsc = {};\n", ceil_over("nr", br), ceil_over("nc", bc));
  if (pl.ax_r < 0) x.out += "    const mx_i64 ext_r = 1;\n";
  else x.out += fmt::format("    const mx_i64 ext_r = P.out_shape[{}][{}];\n", o, pl.ax_r);
  x.out += fmt::format("    const mx_i64 ext_c = P.out_shape[{}][{}];\n", o, pl.ax_c);
  // A whole tile (checked before the last tiles grow over a blocked layout's padding below).
  const auto [tile_r, tile_c] = pl.tile();
  const int64_t full_r = pl.ax_r >= 0 ? tile_r / br : 1, full_c = tile_c / bc;
  const size_t whole_at = x.out.size();
  int row_axis = -1, col_axis = -1, atom_r = 1, atom_c = 1;
  if (mxjit::detail::is_blocked(out.layout)) {
    auto [ra, ca] = blocked_axes(b, pl.rank);
    row_axis = ra;
    col_axis = ca;
    atom_r = mxjit::detail::blocked_atom(out.layout).first;
    atom_c = mxjit::detail::blocked_atom(out.layout).second;
    if ((ra != pl.ax_r && ra != pl.ax_c) || (ca != pl.ax_r && ca != pl.ax_c))
      throw UsageError(fmt::format("GPU generator: blocked scales '{}' need their row and column axes on the tile axes",
                                   out.name));
    const int pad_r = ra == pl.ax_r ? atom_r : atom_c, pad_c = ra == pl.ax_c ? atom_r : atom_c;
    x.out += fmt::format("    if (tr == P.tiles_r - 1) nsr = int(((ext_r + {0} - 1) / {0}) * {0} - sr0);\n", pad_r);
    x.out += fmt::format("    if (tc == P.tiles_c - 1) nsc = int(((ext_c + {0} - 1) / {0}) * {0} - sc0);\n", pad_c);
  }
  // Consecutive threads take neighbouring bytes of the scale tensor: along its innermost axis
  // (linear) or its column axis (blocked: AC scales of an atom row are contiguous).
  const bool generic = generic_layout(out);  // stored through the layout's offset function
  const int inner = mxjit::detail::is_blocked(out.layout) ? col_axis : generic ? pl.ax_c : out.bound.order().back();
  const bool r_fast = pl.ax_r >= 0 && inner == pl.ax_r;
  // Scale-tensor index along each axis.
  auto sidx = [&](int a) -> std::string {
    if (a == pl.ax_r) return "gr";
    if (a == pl.ax_c) return "gc";
    return fmt::format("bi{}", a);
  };
  // Where scale (gr, gc) goes: an offset from P.out[o] in scale elements.
  std::string offset;
  std::vector<Decl> frame;
  if (mxjit::detail::is_blocked(out.layout)) {
    std::string bexpr = "0";
    for (int a = 0; a < pl.rank; ++a)
      if (a != row_axis && a != col_axis) bexpr = fmt::format("({}) * P.out_shape[{}][{}] + bi{}", bexpr, o, a, a);
    // 32-bit in-batch offsets (the launcher refuses blocked scale tensors of 4 GiB or more).
    if (!out.layout.grouped())  // grouped layouts place their scales by grouped_scale_store
      frame = {{"nR", fmt::format("    const unsigned nR = unsigned(P.out_shape[{}][{}]);\n", o, row_axis)},
               {"Cp", fmt::format("    const unsigned Cp = (unsigned(P.out_shape[{0}][{1}]) + {2} - 1) / {2} * {2};\n",
                                  o, col_axis, atom_c)}};
    const std::string base = bexpr == "0" ? "0" : fmt::format("({}) * mx_i64((nR + {} - 1) / {} * {}) * Cp", bexpr, atom_r, atom_r, atom_r);
    offset = fmt::format("{}mx_blocked_offset32<{}, {}>(unsigned({}), unsigned({}), Cp)", base == "0" ? "" : base + " + ", atom_r, atom_c, sidx(row_axis),
                         sidx(col_axis));
  } else if (generic) {
    std::vector<std::string> index, shape;
    for (int a = 0; a < pl.rank; ++a) {
      index.push_back(sidx(a));
      shape.push_back(fmt::format("P.out_shape[{}][{}]", o, a));
    }
    offset = cuda_offset(out.bound, index, shape);
  } else {
    for (int a = 0; a < pl.rank; ++a) offset += fmt::format("{}{} * P.out_stride[{}][{}]", offset.empty() ? "" : " + ", sidx(a), o, a);
  }
  const size_t frame_at = x.out.size();
  const int64_t lb_row = tile_c / bc;  // scales per tile row in shared memory
  // Whole tiles of byte scales: 4 neighbours along the inner axis per thread, one 4-byte store
  // (their bytes are adjacent: unit stride for linear, one atom row for blocked), and the scale
  // indices from compile-time extents (shifts, not divisions). Other tiles: one byte per thread.
  const int64_t full_inner = r_fast ? full_r : full_c;
  // Whole tiles that cover whole 128 x 4 atoms: each atom is 512 contiguous bytes, written as 32
  // 16-byte stores by one warp (thread t: the scales of rows t, t+32, t+64, t+96, the atom's
  // 16-byte row t; see mx_blocked_offset32). 4-byte stores (below, for other tiles) put 4 bytes
  // in each of 16 sectors per warp instruction: 4 times the L2 sectors of the atom.
  //
  //   atom (512 B):  row t of 16 B = | r=t c0..3 | r=t+32 c0..3 | r=t+64 c0..3 | r=t+96 c0..3 |
  // The loop over a whole tile's `items` store units, started `rot` threads on (k: the unit).
  auto rotated_loop = [&](int64_t items, int64_t rot) {
    return fmt::format("      for (int k = {}; k < {}; k += {}) {{\n",
                       rot ? fmt::format("(int(threadIdx.x) + {}) % {}", pl.threads - rot, pl.threads) : "int(threadIdx.x)", items, pl.threads);
  };
  const int64_t tile_sr = row_axis == pl.ax_r ? full_r : full_c, tile_sc = row_axis == pl.ax_r ? full_c : full_r;
  const bool atoms = !wide && mxjit::detail::is_blocked(out.layout) && !out.layout.grouped() && atom_r == 128 && atom_c == 4 &&
                     tile_sr % 128 == 0 && tile_sc % 4 == 0;
  if (atoms) {
    const int64_t atoms_c = tile_sc / 4, items = tile_sr / 128 * atoms_c * 32, rot = x.scale_words % pl.threads;
    x.scale_words += int(items);
    x.out += fmt::format("    if (whole && nsr == {} && nsc == {} && (reinterpret_cast<mx_u64>(P.out[{}]) & 15u) == 0) {{  // whole 128 x 4 atoms\n",
                         full_r, full_c, o);
    x.out += rotated_loop(items, rot);
    x.out += fmt::format("        const int t = k % 32, sr = {}, sc = {};  // the atom's first scale (row, column)\n",
                         times(over("k / 32", atoms_c), 128), times(modulo("k / 32", atoms_c), 4));
    const bool rows_r = row_axis == pl.ax_r;
    x.out += rows_r ? "        const int ir = sr, ic = sc;\n" : "        const int ir = sc, ic = sr;\n";
    x.out += scale_index_decls(offset, "        ") + "        mx_u32 w[4] = {0u, 0u, 0u, 0u};\n";
    x.out += fmt::format("#pragma unroll\n        for (int e = 0; e < 16; ++e) w[e / 4] |= mx_u32(s{}_info[{}] & 0xffu) << (8 * (e % 4));\n", si,
                         rows_r ? fmt::format("(ir + e / 4 * 32 + t) * {} + ic + e % 4", lb_row)
                                : fmt::format("(ir + e % 4) * {} + ic + e / 4 * 32 + t", lb_row));
    x.out += fmt::format("        *reinterpret_cast<uint4*>(static_cast<mx_u8*>(P.out[{}]) + ({}) + t * 16) = make_uint4(w[0], w[1], w[2], w[3]);\n",
                         o, offset);
    x.out += "      }\n    } else\n";
  }
  if (!atoms && !wide && !out.layout.grouped() && !generic && full_inner % 4 == 0 && (!mxjit::detail::is_blocked(out.layout) || atom_c == 4)) {
    // Whole, and not grown over padding (a tile narrower than the layout's atom could be both).
    std::string cond = fmt::format("whole && nsr == {} && nsc == {}", full_r, full_c);
    if (!mxjit::detail::is_blocked(out.layout)) cond += fmt::format(" && P.out_stride[{}][{}] == 1", o, inner);
    x.out += fmt::format("    if ({}) {{  // a whole tile: 4 scales per thread\n", cond);
    // Each output's words start where the previous output's ended (threads rotated), so that
    // the outputs of a tile are stored by different threads at once.
    const int64_t words = full_r * full_c / 4, rot = x.scale_words % pl.threads;
    x.scale_words += int(words);
    x.out += rotated_loop(words, rot);
    x.out += r_fast ? fmt::format("        const int ir = {}, ic = {};\n", times(modulo("k", full_r / 4), 4), over("k", full_r / 4))
                    : fmt::format("        const int ir = {}, ic = {};\n", over("k", full_c / 4), times(modulo("k", full_c / 4), 4));
    x.out += scale_index_decls(offset, "        ");
    x.out += fmt::format("        const int lb = ir * {} + ic;\n", lb_row);
    x.out += "        mx_u32 w = 0u;\n";
    x.out += fmt::format("        for (int e = 0; e < 4; ++e) w |= mx_u32(s{}_info[lb + {}] & 0xffu) << (8 * e);\n", si,
                         times("e", r_fast ? lb_row : 1));
    x.out += fmt::format("        mx_u8* const p = static_cast<mx_u8*>(P.out[{}]) + ({});\n", o, offset);
    x.out += "        if ((reinterpret_cast<mx_u64>(p) & 3u) == 0) *reinterpret_cast<mx_u32*>(p) = w;\n";
    x.out += "        else for (int e = 0; e < 4; ++e) p[e] = mx_u8(w >> (8 * e));\n";
    x.out += "      }\n    } else\n";
  }
  const bool table = grouped_cols_table(x, o) > 0;
  if (out.layout.grouped() && !table) x.out += group_cursor_decl("gcur", "    ");
  x.out += "    for (int k = threadIdx.x; k < nsr * nsc; k += blockDim.x) {\n";
  x.out += r_fast ? "      const int ir = k % nsr, ic = k / nsr;\n" : "      const int ir = k / nsc, ic = k % nsc;\n";
  x.out += "      const mx_i64 gr = sr0 + ir, gc = sc0 + ic;\n";
  x.out += "      const bool real = gr < ext_r && gc < ext_c;\n";
  x.out += fmt::format("      const int lb = ir * {} + ic;\n", lb_row);
  // NaN canonical (0x7fc00000) like the host, whatever payload the GPU's arithmetic made.
  if (f32) x.out += fmt::format("      const float val = s{0}_val[lb] != s{0}_val[lb] ? mx_float(0x7fc00000u) : s{0}_val[lb];\n", si);
  else if (bf16)
    x.out += fmt::format("      const mx_u16 val = mx_u16(mx_f32_to_bf16_rne(s{0}_val[lb] != s{0}_val[lb] ? mx_float(0x7fc00000u) : s{0}_val[lb]));\n", si);
  else x.out += fmt::format("      const mx_u8 val = real ? mx_u8(s{}_info[lb] & 0xffu) : mx_u8(0);\n", si);
  // The tile's K-block groups from warp 0's table (a walk only past the last end).
  if (table) x.out += fmt::format("      MxGroupCursor gcur = mx_gt{}[ir];\n", o);
  if (out.layout.grouped()) x.out += grouped_scale_store(x, o, "gr", "gc", "val", "      ", "gcur");
  else if (mxjit::detail::is_blocked(out.layout))
    x.out += fmt::format("      static_cast<mx_u8*>(P.out[{}])[{}] = val;\n", o, offset);
  else
    x.out += fmt::format("      if (real) static_cast<{}*>(P.out[{}])[{}] = val;\n", scale_ctype(out.dtype), o, offset);
  x.out += "    }\n  }\n";
  // Declared where this block reads them (each output's block declares its own).
  insert_used(x.out, frame_at, frame);
  insert_used(x.out, whole_at,
              {{"whole", fmt::format("    const bool whole = nsr == {} && nsc == {};\n", full_r, full_c)}});
}

namespace {
// The xors of a reduce-scatter of `items` that halve the items (the first log2(items) of them);
// any after those all-reduce the one item left (more lanes than items).
size_t halvings(int items, const std::vector<int>& xors) {
  size_t h = 0;
  while (h < xors.size() && (items >> (h + 1)) >= 1) ++h;
  return h;
}
}  // namespace

int scatter_shared_lanes(int items, const std::vector<int>& xors) {
  int mask = 0;
  for (size_t j = halvings(items, xors); j < xors.size(); ++j) mask |= xors[j];
  return mask;
}

void emit_scatter_scales(Ctx& x, int s, int items, const std::vector<int>& xors, const ItemExpr& item_m, const ItemExpr& stage,
                         const std::string& ind, bool gathered, const std::function<std::string(const std::string&)>& store) {
  const bool flush = x.v.scale_flush[size_t(s)];
  const size_t h = halvings(items, xors);
  const int own = items >> h;
  x.out += fmt::format("{0}// Scales {1}: one per lane (reduce-scatter over the block's lanes, xors {2}).\n", ind, s, fmt::join(xors, ", "));
  x.out += fmt::format("{0}mx_u32 d{1}[{2}];\n#pragma unroll\n{0}for (int t = 0; t < {2}; ++t) {{\n", ind, s, items);
  x.out += fmt::format("{0}  d{1}[t] = {2};\n", ind, s, item_m("t"));
  if (flush) x.out += fmt::format("{0}  if (d{1}[t] < 0x00800000u) d{1}[t] = 0u;\n", ind, s);
  x.out += ind + "}\n";
  std::string base;  // the lane's first item
  int n = items;
  for (size_t j = 0; j < h; ++j) {
    const int xr = xors[j], half = n / 2;
    x.out += fmt::format("{0}{{\n{0}  const bool hi = (lane & {1}) != 0;\n#pragma unroll\n{0}  for (int i = 0; i < {2}; ++i) {{\n", ind, xr, half);
    x.out += fmt::format("{0}    const mx_u32 keep = hi ? d{1}[i + {2}] : d{1}[i], send = hi ? d{1}[i] : d{1}[i + {2}];\n", ind, s, half);
    x.out += fmt::format("{0}    const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, send, {1});\n{0}    d{2}[i] = o_ > keep ? o_ : keep;\n{0}  }}\n{0}}}\n",
                         ind, xr, s);
    base += fmt::format("{}((lane & {}) ? {} : 0)", base.empty() ? "" : " + ", xr, half);
    n = half;
  }
  for (size_t j = h; j < xors.size(); ++j)  // one item left: the other lanes of the block hold the same row
    x.out += fmt::format("{0}{{ const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, d{1}[0], {2}); d{1}[0] = o_ > d{1}[0] ? o_ : d{1}[0]; }}\n", ind, s,
                         xors[j]);
  if (base.empty()) base = "0";
  const size_t at = x.out.size();  // tb<s>, where the stores below use it
  if (gathered) x.out += fmt::format("{0}mx_u32 own{1}[{2}];\n", ind, s, own);
  x.out += fmt::format("#pragma unroll\n{0}for (int i = 0; i < {1}; ++i) {{\n{0}  const mx_u32 m = d{2}[i];\n", ind, own, s);
  x.out += scale_from_amax(x.v.scales[size_t(s)], ind + "  ", "", true, gathered);
  if (stage)
    x.out += fmt::format("{0}  {{\n{0}    const int t = tb{1} + i;\n{0}    s{1}_info[{2}] = byte;\n{0}  }}\n", ind, s, stage("t"));
  if (store) x.out += store(ind + "  ");
  if (gathered) x.out += fmt::format("{}  own{}[i] = flag ? flag : mx_bits(mult);\n", ind, s);
  x.out += ind + "}\n";
  insert_used(x.out, at, {{fmt::format("tb{}", s), fmt::format("{}const int tb{} = {};\n", ind, s, base)}});
}

void emit_gather_scale(Ctx& x, int s, int items, const std::vector<int>& xors, const std::string& var, const std::string& ind,
                       const std::string& suffix, bool clean) {
  int mask = 0, n = items;
  std::string src;
  for (size_t j = 0; j < halvings(items, xors); ++j) {
    const int xr = xors[j];
    mask |= xr;
    src += fmt::format(" | (({} % {}) >= {} ? {} : 0)", var, n, n / 2, xr);
    n /= 2;
  }
  x.out += fmt::format("{0}const mx_u32 w_ = __shfl_sync(0xffffffffu, own{1}[{2}], (lane & ~{3}){4});\n", ind, s, modulo(var, n), mask, src);
  if (clean) x.out += fmt::format("{0}const mx_u32 flag{1} = 0u;\n{0}const float mult{1} = mx_float(w_);\n", ind, suffix);
  else x.out += fmt::format("{0}const mx_u32 flag{1} = w_ < 3u ? w_ : 0u;\n{0}const float mult{1} = w_ < 3u ? 0.0f : mx_float(w_);\n", ind, suffix);
}

void emit_clean_split(Ctx& x, const std::string& clean_cond, const std::string& ind, const std::function<void(bool)>& body) {
  if (clean_cond.empty()) {
    body(false);
    return;
  }
  std::string outer;
  outer.swap(x.out);
  body(true);
  const std::string clean = std::move(x.out);
  x.out.clear();
  body(false);
  const std::string flagged = std::move(x.out);
  x.out = std::move(outer);
  x.out += fmt::format("{}if ({}) {{  // no flagged block in the warp\n", ind, clean_cond) + indent_lines(clean, "  ", true);
  x.out += ind + "} else {\n" + indent_lines(flagged, "  ", true) + ind + "}\n";
}

std::string scales_clean(int s, int items, const std::vector<int>& xors) {
  std::string all;
  for (int i = 0; i < (items >> halvings(items, xors)); ++i) all += fmt::format("{}own{}[{}] > 2u", i ? " && " : "", s, i);
  return fmt::format("__all_sync(0xffffffffu, {})", all);
}


}  // namespace mxjit::detail
