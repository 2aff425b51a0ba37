#include "dsl/ir.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mxjit {

const char* op_name(Op op) {
  switch (op) {
    case Op::input: return "input";
    case Op::vec_input: return "vec";
    case Op::constant: return "const";
    case Op::neg: return "neg";
    case Op::abs: return "abs";
    case Op::relu: return "relu";
    case Op::silu: return "silu";
    case Op::gelu_tanh: return "gelu_tanh";
    case Op::gelu_erf: return "gelu_erf";
    case Op::exp: return "exp";
    case Op::sigmoid: return "sigmoid";
    case Op::round_to: return "round_to";
    case Op::add: return "add";
    case Op::sub: return "sub";
    case Op::mul: return "mul";
    case Op::div: return "div";
    case Op::max: return "max";
    case Op::min: return "min";
    case Op::dequant: return "dequant";
    case Op::blocks: return "blocks";
    case Op::block_amax: return "amax";
    case Op::tensor_amax: return "tensor_amax";
    case Op::scale: return "scale";
    case Op::quantize: return "quantize";
    case Op::amax_var: return "amax_var";
    case Op::floor_log2: return "floor_log2";
    case Op::ceil_log2: return "ceil_log2";
    case Op::tamax_var: return "tamax_var";
    case Op::stored_var: return "stored_var";
    case Op::fmax: return "fmax";
    case Op::fmin: return "fmin";
    case Op::exp2: return "exp2";
    case Op::pow2_floor: return "pow2_floor";
    case Op::pow2_ceil: return "pow2_ceil";
    case Op::select: return "select";
    case Op::isnan: return "isnan";
    case Op::isinf: return "isinf";
    case Op::eq: return "eq";
    case Op::lt: return "lt";
    case Op::le: return "le";
    case Op::lor: return "or";
    case Op::land: return "and";
    case Op::lnot: return "not";
    case Op::never: return "never";
  }
  return "?";
}

bool commutative(Op op) {
  switch (op) {
    case Op::add: case Op::mul: case Op::max: case Op::min: case Op::fmax: case Op::fmin: case Op::eq:
    case Op::lor: case Op::land:
      return true;
    default: return false;
  }
}

bool is_condition(Op op) {
  switch (op) {
    case Op::isnan: case Op::isinf: case Op::eq: case Op::lt: case Op::le: case Op::lor: case Op::land:
    case Op::lnot: case Op::never:
      return true;
    default: return false;
  }
}

const NodePtr& tensor_amax_of(const Node& scale) {
  static const NodePtr kNone;
  return scale.op == Op::scale && scale.args.size() > kScaleTamax ? scale.args[kScaleTamax] : kNone;
}

int64_t BlockSpec::size_along(int axis) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis) return sizes[i];
  return 1;
}

bool BlockSpec::blocks_axis(int axis) const { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }

bool BlockSpec::whole() const {
  for (int64_t s : sizes)
    if (s == kWholeAxis) return true;
  return false;
}

bool BlockSpec::whole_tensor(int rank) const {
  if (jagged() || int(axes.size()) != rank) return false;
  for (int64_t s : sizes)
    if (s != kWholeAxis) return false;
  return true;
}

std::string BlockSpec::str() const {
  auto size = [](int64_t s) { return s == kWholeAxis ? std::string("whole") : std::to_string(s); };
  if (jagged()) return fmt::format("groups({},{})", axes.at(0), offsets);
  if (axes.size() == 1) return fmt::format("blocks({},{})", axes[0], size(sizes[0]));
  return fmt::format("blocks({},{},{}x{})", axes[0], axes[1], size(sizes[0]), size(sizes[1]));
}

const char* rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::floor: return "floor";
    case ScaleRule::rceil: return "rceil";
    case ScaleRule::ceil: return "ceil";
    case ScaleRule::even: return "even";
    case ScaleRule::custom: return "custom";
  }
  return "?";
}

namespace {

const char* policy_name(NanPolicy p) { return p == NanPolicy::nan_block ? "nan_block" : "satfinite"; }

std::string clamp_text(const Node& n) {
  if (n.clamp == Clamp::none) return "";
  return fmt::format(" clamp{}({:a},{:a})", n.clamp == Clamp::ignore_nan ? "_fmax" : n.clamp == Clamp::ignore_nan_hi ? "_fmin" : "", float(n.clamp_lo),
                     float(n.clamp_hi));
}

// The attributes and arguments of a scale node as the library forms print them (kept from before
// scales were expressions, so that those pipelines keep their hashes).
std::string library_scale(const Node& n) {
  std::string s = fmt::format("scale[{} {} {} {}", scale_format_name(n.scale_format), n.elem.str(),
                              n.recipe == ScaleRecipe::e8m0_exponent ? "custom" : rule_name(n.rule),
                              policy_name(n.policy));
  if (n.scale_format == ScaleFormat::e4m3) s += n.convention == Nvfp4Convention::te ? " te" : " torchao";
  if (n.pow2) s += " pow2";
  if (n.store_multiplier) s += " multiplier";
  s += "](" + canonical(n.args[kScaleAmax]);
  if (n.recipe == ScaleRecipe::e8m0_exponent) s += ", " + canonical(n.exponent);
  if (n.recipe == ScaleRecipe::nvfp4) s += ", " + canonical(tensor_amax_of(n));
  return s + ")";
}

}  // namespace

std::string scale_definition(const Node& n) {
  std::string s = fmt::format("scale[{} {}", scale_format_name(n.scale_format), n.elem.str());
  if (n.amax_nan == AmaxNan::ignore) s += " amax_fmax";
  if (n.apply == Apply::divide) s += " divide";
  s += clamp_text(n) + "](";
  for (size_t i = kScaleStored; i <= kScaleNanIf; ++i) s += (i == kScaleStored ? "" : ", ") + canonical(n.args.at(i));
  return s + ")";
}

std::string canonical(const NodePtr& n) {
  if (n->op == Op::scale) {
    if (n->recipe != ScaleRecipe::generic) return library_scale(*n);
    std::string s = scale_definition(*n);
    s.pop_back();  // the amax nodes follow the definition's arguments
    s += ", " + canonical(n->args[kScaleAmax]);
    if (const NodePtr& t = tensor_amax_of(*n)) s += ", " + canonical(t);
    return s + ")";
  }
  std::string attrs;
  switch (n->op) {
    case Op::input: attrs = fmt::format("{} {} r{}", n->name, dtype_name(n->dtype), n->rank); break;
    case Op::vec_input: attrs = fmt::format("{} {} axis{} r{}", n->name, dtype_name(n->dtype), n->axis, n->rank); break;
    case Op::constant: attrs = fmt::format("{:a}", float(n->value)); break;
    case Op::blocks: attrs = n->block.str(); break;
    case Op::dequant:
      attrs = fmt::format("{} {} {}", n->elem.str(), scale_format_name(n->scale_format), n->block.str());
      break;
    case Op::quantize:
      attrs = n->elem.str();
      if (n->round == Round::stochastic) attrs += fmt::format(" sr({},{})", n->seed, n->offset);
      if (n->flush_subnormals) attrs += " flush";
      if (n->saturate == Saturate::none) attrs += " nosat";  // printed only when set: earlier hashes stay
      break;
    case Op::floor_log2:
      if (n->bits >= 0) attrs = fmt::format("{}", n->bits);
      break;
    case Op::round_to: attrs = dtype_name(n->dtype); break;
    case Op::tensor_amax:
      if (n->amax_nan == AmaxNan::ignore) attrs = "amax_fmax";  // printed only when set: earlier hashes stay
      break;
    default: break;
  }
  std::vector<std::string> args;
  for (const NodePtr& a : n->args) args.push_back(canonical(a));
  if (commutative(n->op)) std::sort(args.begin(), args.end());
  std::string s = op_name(n->op);
  if (!attrs.empty()) s += "[" + attrs + "]";
  if (!args.empty()) s += fmt::format("({})", fmt::join(args, ", "));
  return s;
}

}  // namespace mxjit
