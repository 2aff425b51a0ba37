#include "backends/reference/scale_expr.hpp"

#include <bit>
#include <cmath>
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "backends/reference/numerics.hpp"
#include "templates/mx_math.cuh"

namespace mxjit::reference {

float eval_scale_value(const NodePtr& n, const ScaleVars& v) {
  auto arg = [&](size_t i) { return eval_scale_value(n->args.at(i), v); };
  switch (n->op) {
    case Op::amax_var: return v.amax;
    case Op::tamax_var: return v.tamax;
    case Op::stored_var: return v.stored;
    case Op::constant: return float(n->value);
    case Op::add: return mx_fadd(arg(0), arg(1));
    case Op::sub: return mx_fsub(arg(0), arg(1));
    case Op::mul: return mx_fmul(arg(0), arg(1));
    case Op::div: return mx_fdiv(arg(0), arg(1));
    case Op::max: return mx_fmax_nan(arg(0), arg(1));
    case Op::min: return mx_fmin_nan(arg(0), arg(1));
    case Op::fmax: return mx_fmax_num(arg(0), arg(1));
    case Op::fmin: return mx_fmin_num(arg(0), arg(1));
    case Op::neg: return -arg(0);
    case Op::abs: return mx_fabs(arg(0));
    case Op::floor_log2: return mx_floor_log2_value(arg(0), n->bits);
    case Op::ceil_log2: return mx_ceil_log2_value(arg(0));
    case Op::exp2: return mx_exp2_floor(arg(0));
    case Op::pow2_floor: return mx_pow2_floor(arg(0));
    case Op::pow2_ceil: return mx_pow2_ceil(arg(0));
    case Op::select: return eval_scale_cond(n->args.at(0), v) ? arg(1) : arg(2);
    default: break;
  }
  throw UsageError(fmt::format("scale expression: '{}' is not a scale-expression value", op_name(n->op)));
}

bool eval_scale_cond(const NodePtr& n, const ScaleVars& v) {
  auto val = [&](size_t i) { return eval_scale_value(n->args.at(i), v); };
  auto cond = [&](size_t i) { return eval_scale_cond(n->args.at(i), v); };
  switch (n->op) {
    case Op::isnan: return mx_isnan(val(0));
    case Op::isinf: return (mx_as_uint(val(0)) & 0x7FFFFFFFu) == 0x7F800000u;
    case Op::eq: return val(0) == val(1);
    case Op::lt: return val(0) < val(1);
    case Op::le: return val(0) <= val(1);
    case Op::lor: return cond(0) || cond(1);
    case Op::land: return cond(0) && cond(1);
    case Op::lnot: return !cond(0);
    case Op::never: return false;
    default: break;
  }
  throw UsageError(fmt::format("scale expression: '{}' is not a condition", op_name(n->op)));
}

uint32_t encode_scale(ScaleFormat f, float s) {
  switch (f) {
    case ScaleFormat::e8m0: return mx_e8m0_field(s);
    case ScaleFormat::e4m3: return e4m3_encode_rne(s);
    case ScaleFormat::bf16: return mx_f32_to_bf16_rne(mx_isnan(s) ? mx_qnan() : s);
    case ScaleFormat::f32: break;
  }
  return std::bit_cast<uint32_t>(s);
}

float decode_scale(ScaleFormat f, uint32_t bits) {
  switch (f) {
    case ScaleFormat::e8m0: return mx_e8m0_decode(bits);
    case ScaleFormat::e4m3: return e4m3_decode(uint8_t(bits));
    case ScaleFormat::bf16: return mx_bf16_to_f32(uint16_t(bits));
    case ScaleFormat::f32: break;
  }
  return std::bit_cast<float>(bits);
}

BlockScale block_scale(const Node& sn, float amax, float tamax) {
  BlockScale b;
  ScaleVars v{amax, tamax, 0.0f};
  b.stored = eval_scale_value(sn.args.at(kScaleStored), v);
  b.bits = encode_scale(sn.scale_format, b.stored);
  v.stored = decode_scale(sn.scale_format, b.bits);
  b.factor = eval_scale_value(sn.args.at(kScaleFactor), v);
  if (eval_scale_cond(sn.args.at(kScaleNanIf), v)) b.mode = BlockMode::nan;
  else if (eval_scale_cond(sn.args.at(kScaleZeroIf), v)) b.mode = BlockMode::zero;
  return b;
}

float scale_element(const Node& sn, float x, float factor) {
  float y = sn.apply == Apply::divide ? mx_fdiv(x, factor) : mx_fmul(x, factor);
  const float lo = float(sn.clamp_lo), hi = float(sn.clamp_hi);
  switch (sn.clamp) {
    case Clamp::none: break;
    case Clamp::propagate_nan: y = mx_fmin_nan(mx_fmax_nan(y, lo), hi); break;
    case Clamp::ignore_nan: y = mx_fmin_num(mx_fmax_num(y, lo), hi); break;
    case Clamp::ignore_nan_hi: y = mx_fmax_num(mx_fmin_num(y, hi), lo); break;
  }
  return y;
}

}  // namespace mxjit::reference
