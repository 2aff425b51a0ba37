#include "codegen/emit_expr.hpp"

#include <bit>
#include <cstdint>
#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit::detail {

std::string float_literal(double v) {
  return fmt::format("mx_float(0x{:08x}u)", std::bit_cast<uint32_t>(float(v)));
}

std::string ExprEmitter::emit(const NodePtr& n, std::string& body, const std::string& indent) {
  const std::string key = canonical(n);
  if (auto it = done_.find(key); it != done_.end()) return it->second;
  std::string rhs;
  switch (n->op) {
    case Op::input: case Op::vec_input: case Op::dequant: case Op::amax_var: rhs = leaf_(n); break;
    case Op::constant: rhs = float_literal(n->value); break;
    default: {
      std::vector<std::string> a;
      for (const NodePtr& arg : n->args) a.push_back(emit(arg, body, indent));
      switch (n->op) {
        case Op::neg: rhs = fmt::format("(-{})", a[0]); break;
        case Op::abs: rhs = fmt::format("mx_float(mx_bits({}) & 0x7fffffffu)", a[0]); break;
        case Op::relu: rhs = fmt::format("mx_relu({})", a[0]); break;
        case Op::silu: rhs = fmt::format("mx_silu({})", a[0]); break;
        case Op::sigmoid: rhs = fmt::format("mx_sigmoid({})", a[0]); break;
        case Op::gelu_tanh: rhs = fmt::format("mx_gelu_tanh({})", a[0]); break;
        case Op::gelu_erf: rhs = fmt::format("mx_gelu_erf({})", a[0]); break;
        case Op::exp: rhs = fmt::format("mx_exp({})", a[0]); break;
        case Op::round_to: rhs = fmt::format("mx_round_{}({})", n->dtype == DType::bf16 ? "bf16" : "f16", a[0]); break;
        case Op::add: rhs = fmt::format("({} + {})", a[0], a[1]); break;
        case Op::sub: rhs = fmt::format("({} - {})", a[0], a[1]); break;
        case Op::mul: rhs = fmt::format("({} * {})", a[0], a[1]); break;
        case Op::div: rhs = fmt::format("({} / {})", a[0], a[1]); break;
        case Op::max: rhs = fmt::format("mx_fmax_nan({}, {})", a[0], a[1]); break;
        case Op::min: rhs = fmt::format("mx_fmin_nan({}, {})", a[0], a[1]); break;
        case Op::floor_log2: rhs = fmt::format("mx_floor_log2f({})", a[0]); break;
        case Op::ceil_log2: rhs = fmt::format("mx_ceil_log2f({})", a[0]); break;
        default:
          throw Error(fmt::format("mxjit internal: '{}' is not a value expression", op_name(n->op)));
      }
    }
  }
  std::string var = fmt::format("{}{}", prefix_, next_++);
  body += fmt::format("{}const float {} = {};\n", indent, var, rhs);
  done_[key] = var;
  return var;
}

}  // namespace mxjit::detail
