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
  }
  return "?";
}

bool commutative(Op op) { return op == Op::add || op == Op::mul || op == Op::max || op == Op::min; }

int64_t BlockSpec::size_along(int axis) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis) return sizes[i];
  return 1;
}

bool BlockSpec::blocks_axis(int axis) const { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }

std::string BlockSpec::str() const {
  if (jagged()) return fmt::format("groups({},{})", axes.at(0), offsets);
  if (axes.size() == 1) return fmt::format("blocks({},{})", axes[0], sizes[0]);
  return fmt::format("blocks({},{},{}x{})", axes[0], axes[1], sizes[0], sizes[1]);
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

std::string canonical(const NodePtr& n) {
  std::string attrs;
  switch (n->op) {
    case Op::input: attrs = fmt::format("{} {} r{}", n->name, dtype_name(n->dtype), n->rank); break;
    case Op::vec_input: attrs = fmt::format("{} {} axis{} r{}", n->name, dtype_name(n->dtype), n->axis, n->rank); break;
    case Op::constant: attrs = fmt::format("{:a}", float(n->value)); break;
    case Op::blocks: attrs = n->block.str(); break;
    case Op::dequant:
      attrs = fmt::format("{} {} {}", n->elem.str(), scale_format_name(n->scale_format), n->block.str());
      break;
    case Op::scale:
      attrs = fmt::format("{} {} {} {}", scale_format_name(n->scale_format), n->elem.str(), rule_name(n->rule),
                          n->policy == NanPolicy::nan_block ? "nan_block" : "satfinite");
      if (n->scale_format == ScaleFormat::e4m3)
        attrs += n->convention == Nvfp4Convention::te ? " te" : " torchao";
      if (n->pow2) attrs += " pow2";  // printed only when set: earlier pipelines keep their hashes
      if (n->store_multiplier) attrs += " multiplier";
      break;
    case Op::quantize:
      attrs = n->elem.str();
      if (n->round == Round::stochastic) attrs += fmt::format(" sr({},{})", n->seed, n->offset);
      if (n->flush_subnormals) attrs += " flush";
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
