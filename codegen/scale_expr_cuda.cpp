#include "codegen/scale_expr_cuda.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "codegen/emit_common.hpp"
#include "codegen/emit_expr.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

/// One lowering of scale-expression trees into SSA temporaries (`g<N>`, FP32; `c<N>`, bool):
/// every distinct subexpression once, in the order the reference evaluates them.
class ScaleLowering {
 public:
  explicit ScaleLowering(std::string indent) : ind_(std::move(indent)) {}

  /// The name under which amax_var / stored_var are read (declared by the caller).
  void bind(Op var, std::string name) { vars_[var] = std::move(name); }
  /// The C expression of value node `n` (a temporary, a variable or a literal).
  std::string value(const NodePtr& n);
  /// The C expression (bool) of condition node `n`.
  std::string cond(const NodePtr& n);
  /// Declares FP32 variable `name` = `rhs`, dropped by prune() where nothing reads it.
  void declare(const std::string& name, const std::string& rhs) {
    names_.push_back({name, body.size()});
    body += fmt::format("{}const float {} = {};\n", ind_, name, rhs);
  }
  /// Drops the declarations (temporaries and declare()'s) that no later statement reads, last
  /// first, so that a kernel declares only what it reads.
  void prune();
  /// The statements emitted so far; callers only append to it (prune() erases by offset).
  std::string body;

 private:
  std::string temp(const NodePtr& n, const char* type, const std::string& rhs);
  struct Declared {
    std::string name;
    size_t at;  // the offset of its line in body
  };
  std::vector<Declared> names_;  // declared, in order
  std::string ind_;
  std::map<Op, std::string> vars_;
  std::map<std::string, std::string> done_;  // canonical text -> temporary
  int next_ = 0;
};

std::string ScaleLowering::temp(const NodePtr& n, const char* type, const std::string& rhs) {
  const std::string name = fmt::format("{}{}", type[0] == 'b' ? 'c' : 'g', next_++);
  names_.push_back({name, body.size()});
  body += fmt::format("{}const {} {} = {};\n", ind_, type, name, rhs);
  done_[canonical(n)] = name;
  return name;
}

void ScaleLowering::prune() {
  // Last first: erasing a line leaves the offsets of the lines before it valid.
  for (auto it = names_.rbegin(); it != names_.rend(); ++it) {
    const size_t end = body.find('\n', it->at) + 1;
    if (!uses(body, it->name, end)) body.erase(it->at, end - it->at);
  }
}

std::string ScaleLowering::value(const NodePtr& n) {
  switch (n->op) {
    case Op::constant: return float_literal(n->value);
    case Op::amax_var: case Op::stored_var: {
      const auto it = vars_.find(n->op);
      if (it == vars_.end())
        throw Error(fmt::format("mxjit internal: '{}' read where the GPU scale has no such variable", op_name(n->op)));
      return it->second;
    }
    default: break;
  }
  if (const auto it = done_.find(canonical(n)); it != done_.end()) return it->second;
  auto a = [&](size_t i) { return value(n->args.at(i)); };
  // Each operation rounds once, as the reference's mx_math.cuh functions do on the host: the
  // intrinsics keep NVRTC from contracting a * b + c into an FMA, whatever its flags.
  auto call2 = [&](const char* f) {
    const std::string x = a(0), y = a(1);
    return fmt::format("{}({}, {})", f, x, y);
  };
  std::string rhs;
  switch (n->op) {
    case Op::add: rhs = call2("__fadd_rn"); break;
    case Op::sub: rhs = call2("__fsub_rn"); break;
    case Op::mul: rhs = call2("__fmul_rn"); break;
    case Op::div: rhs = call2("__fdiv_rn"); break;
    case Op::max: rhs = call2("mx_fmax_nan"); break;
    case Op::min: rhs = call2("mx_fmin_nan"); break;
    case Op::fmax: rhs = call2("mx_fmax_num"); break;
    case Op::fmin: rhs = call2("mx_fmin_num"); break;
    case Op::neg: rhs = fmt::format("(-{})", a(0)); break;
    case Op::abs: rhs = fmt::format("mx_fabs({})", a(0)); break;
    case Op::floor_log2: rhs = fmt::format("mx_floor_log2_value({}, {})", a(0), n->bits); break;
    case Op::ceil_log2: rhs = fmt::format("mx_ceil_log2_value({})", a(0)); break;
    case Op::exp2: rhs = fmt::format("mx_exp2_floor({})", a(0)); break;
    case Op::pow2_floor: rhs = fmt::format("mx_pow2_floor({})", a(0)); break;
    case Op::pow2_ceil: rhs = fmt::format("mx_pow2_ceil({})", a(0)); break;
    case Op::select: {
      // Both sides evaluated, as a select (the expressions have no side effects).
      const std::string c = cond(n->args.at(0)), x = a(1), y = a(2);
      rhs = fmt::format("{} ? {} : {}", c, x, y);
      break;
    }
    default:
      throw Error(fmt::format("mxjit internal: '{}' is not a scale-expression value the GPU generator lowers", op_name(n->op)));
  }
  return temp(n, "float", rhs);
}

std::string ScaleLowering::cond(const NodePtr& n) {
  if (n->op == Op::never) return "false";
  if (const auto it = done_.find(canonical(n)); it != done_.end()) return it->second;
  auto v = [&](size_t i) { return value(n->args.at(i)); };
  auto c = [&](size_t i) { return cond(n->args.at(i)); };
  auto both = [&](auto f, const char* op) {
    const std::string x = f(0), y = f(1);
    return fmt::format("{} {} {}", x, op, y);
  };
  std::string rhs;
  switch (n->op) {
    case Op::isnan: rhs = fmt::format("mx_isnan({})", v(0)); break;
    case Op::isinf: rhs = fmt::format("(mx_as_uint({}) & 0x7fffffffu) == 0x7f800000u", v(0)); break;
    // IEEE comparisons: false with a NaN operand, on both sides.
    case Op::eq: rhs = both(v, "=="); break;
    case Op::lt: rhs = both(v, "<"); break;
    case Op::le: rhs = both(v, "<="); break;
    case Op::lor: rhs = both(c, "||"); break;
    case Op::land: rhs = both(c, "&&"); break;
    case Op::lnot: rhs = fmt::format("!{}", c(0)); break;
    default:
      throw Error(fmt::format("mxjit internal: '{}' is not a scale-expression condition the GPU generator lowers", op_name(n->op)));
  }
  return temp(n, "bool", rhs);
}

}  // namespace

bool generic_scale(const Node& scale) { return scale.op == Op::scale && scale.recipe == ScaleRecipe::generic; }

std::string generic_scale_from_amax(const Node& sn, const std::string& indent, bool stored, bool coded) {
  if (tensor_amax_of(sn))
    throw Error("mxjit internal: a generic scale reading tamax_var() reached the GPU generator");
  std::string o = scale_var_decls(sn, stored, coded, coded);
  o += fmt::format("{{  // {}\n", scale_definition(sn));
  ScaleLowering L("  ");
  L.bind(Op::amax_var, "sa");
  L.body = "  const float sa = mx_float(m);\n";
  const std::string st = L.value(sn.args.at(kScaleStored));
  // The stored bits and the value read back (stored_var), as reference::encode_scale /
  // decode_scale: E8M0 the exponent field, E4M3 RNE with saturation (NaN 0x7F), bf16 RNE of the
  // canonical NaN.
  switch (sn.scale_format) {
    case ScaleFormat::e8m0:
      L.body += fmt::format("  byte = mx_e8m0_field({});\n", st);
      L.declare("sv", "mx_e8m0_decode(byte)");
      break;
    case ScaleFormat::e4m3:
      L.body += fmt::format("  byte = mx_e4m3_rne({});\n", st);
      L.declare("sv", "mx_decode<4, 3, 1, false>(byte)");
      break;
    case ScaleFormat::bf16:
      L.declare("sv", fmt::format("mx_bf16_to_f32(mx_f32_to_bf16_rne(mx_isnan({0}) ? mx_qnan() : {0}))", st));
      break;
    case ScaleFormat::f32: L.declare("sv", st); break;
  }
  if (!byte_scale(sn) && stored) L.body += "  sval = sv;\n";
  L.bind(Op::stored_var, "sv");
  // 1 / an E8M0 value is exact without a division (mx_e8m0_recip).
  const NodePtr& fn = sn.args.at(kScaleFactor);
  const bool recip = sn.scale_format == ScaleFormat::e8m0 && fn->op == Op::div && fn->args.at(0)->op == Op::constant &&
                     fn->args.at(0)->value == 1.0 && fn->args.at(1)->op == Op::stored_var;
  if (coded) {  // the factor and the block mode, which only the codes read
    const std::string f = recip ? "mx_e8m0_recip(byte)" : L.value(fn);
    const std::string nan = L.cond(sn.args.at(kScaleNanIf)), zero = L.cond(sn.args.at(kScaleZeroIf));
    L.body += fmt::format("  mult = {};\n", f);
    if (nan != "false" || zero != "false") L.body += fmt::format("  flag = {} ? 2u : ({} ? 1u : 0u);\n", nan, zero);
  }
  L.prune();
  o += L.body + "}\n";
  return indent_lines(o, indent);
}

std::string generic_scale_element(const Node& sn, const std::string& x, const std::string& mult) {
  return generic_scale_clamp(sn,
                             fmt::format("{}({}, {})", sn.apply == Apply::divide ? "__fdiv_rn" : "__fmul_rn", x, mult));
}

// A clamp bound that is neither NaN nor +-0 as FP32 (one min/max instruction: mx_fmin_num_c).
static bool plain_bound(double b) { return float(b) != 0.0f && b == b; }

std::string generic_scale_clamp(const Node& sn, const std::string& y) {
  const std::string lo = float_literal(sn.clamp_lo), hi = float_literal(sn.clamp_hi);
  const std::string c = plain_bound(sn.clamp_lo) && plain_bound(sn.clamp_hi) ? "_c" : "";
  switch (sn.clamp) {
    case Clamp::none: break;
    case Clamp::propagate_nan: return fmt::format("mx_fmin_nan{3}(mx_fmax_nan{3}({0}, {1}), {2})", y, lo, hi, c);
    case Clamp::ignore_nan: return fmt::format("mx_fmin_num{3}(mx_fmax_num{3}({0}, {1}), {2})", y, lo, hi, c);
    case Clamp::ignore_nan_hi: return fmt::format("mx_fmax_num{3}(mx_fmin_num{3}({0}, {1}), {2})", y, hi, lo, c);
  }
  return y;
}

bool divide_bracketable(const Node& sn) {
  return sn.apply == Apply::divide &&
         (sn.clamp == Clamp::none || (plain_bound(sn.clamp_lo) && plain_bound(sn.clamp_hi)));
}

std::string bracket_end(const Node& sn, double elem_max, const std::string& y, int side) {
  if (sn.clamp == Clamp::none) return y;
  // Bounds beyond the format's largest value change no finite value's saturated code.
  const bool binds = float(sn.clamp_lo) > float(-elem_max) || float(sn.clamp_hi) < float(elem_max);
  if (binds) return generic_scale_clamp(sn, y);
  if (sn.clamp == Clamp::propagate_nan || side == 1) return y;
  return fmt::format("mx_fmax_num_c({}, {})", y, float_literal(-elem_max));
}

std::string amax_drop_nan(const Node& sn, const std::string& u) {
  if (sn.amax_nan != AmaxNan::ignore) return "";
  return fmt::format("if ({0} > 0x7f800000u) {0} = 0u; ", u);
}

}  // namespace mxjit::detail
