#include "backends/reference/scale_rules.hpp"

#include <bit>
#include <climits>
#include <cstdint>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "dsl/errors.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/scale_expr.hpp"
#include "templates/mx_math.cuh"

namespace mxjit::reference {
namespace {

uint8_t clamp_biased(int64_t e) {
  e += 127;
  return uint8_t(e < 0 ? 0 : (e > 254 ? 254 : e));
}

/// The ops of a custom E8M0 exponent in the first-principles reading: a subset of what
/// eval_scale_value evaluates (no tensor amax, stored scale, conditions or exp2 here).
void require_exponent_ops(const Node& n) {
  switch (n.op) {
    case Op::amax_var: case Op::constant: case Op::add: case Op::sub: case Op::mul: case Op::div:
    case Op::max: case Op::min: case Op::neg: case Op::abs: case Op::floor_log2: case Op::ceil_log2: break;
    default:
      throw UsageError(fmt::format("custom scale expression: '{}' is not allowed in a scale expression (use "
                                   "amax_var(), constants, + - * /, max, min, abs, floor_log2, ceil_log2)",
                                   op_name(n.op)));
  }
  for (const NodePtr& a : n.args) require_exponent_ops(*a);
}

}  // namespace

int floor_log2(float a) {
  int e;
  std::frexp(double(a), &e);  // a = m 2^e, m in [0.5, 1)
  return e - 1;
}

int ceil_log2(float a) {
  int e;
  const double m = std::frexp(double(a), &e);
  return m == 0.5 ? e - 1 : e;
}

int e8m0_special_byte(NanPolicy policy, float amax) {
  if (std::isnan(amax)) return 0xFF;
  if (std::isinf(amax)) return policy == NanPolicy::nan_block ? 0xFF : 0xFE;
  if (amax == 0) return 0x00;
  return -1;
}

int e8m0_rule_exponent(ScaleRule rule, ElemFormat elem, float amax) {
  const double a = std::fabs(double(amax));
  switch (rule) {
    case ScaleRule::floor:
      return floor_log2(float(a)) - elem.emax();
    case ScaleRule::rceil: {
      const float inv = 1.0f / float(elem.max_normal());  // the FP32-rounded reciprocal
      const float v = float(a) * inv;                     // one FP32 multiply
      if (v == 0) return INT_MIN;
      return ceil_log2(v);
    }
    case ScaleRule::ceil:
      return ceil_log2(float(a)) - elem.max_normal_log2();
    case ScaleRule::even: {
      // Round the FP32 significand field to mbits bits (RNE): the quantum is 2^(E - mbits) for a
      // normal a of exponent E, and 2^(-126 - mbits) for subnormals (their significand field
      // sits at exponent -126), exactly as rounding the bit pattern does.
      const int E = a >= 0x1p-126 ? floor_log2(float(a)) : -126;
      const double quantum = std::ldexp(1.0, E - elem.mbits);
      const double rounded = std::nearbyint(a / quantum) * quantum;  // FE_TONEAREST: ties to even
      if (rounded == 0) return INT_MIN;
      // In double: a carry out of the largest binade gives 2^128, which FP32 would make +Inf.
      int e;
      std::frexp(rounded, &e);
      return e - 1 - elem.emax();
    }
    case ScaleRule::custom:
      break;
  }
  throw UsageError("e8m0_scale_byte: ScaleRule::custom needs its expression; use e8m0_custom_byte");
}

uint8_t e8m0_scale_byte(ScaleRule rule, NanPolicy policy, ElemFormat elem, float amax) {
  if (rule == ScaleRule::custom)
    throw UsageError("e8m0_scale_byte(rule=custom): a custom rule needs its expression; use e8m0_custom_byte");
  const int special = e8m0_special_byte(policy, amax);
  if (special >= 0) return uint8_t(special);
  const int e = e8m0_rule_exponent(rule, elem, amax);
  if (e == INT_MIN) return 0;
  return clamp_biased(e);
}

float eval_scale_expression(const NodePtr& n, float amax) {
  require_exponent_ops(*n);
  return eval_scale_value(n, ScaleVars{amax, 0.0f, 0.0f});
}

uint8_t e8m0_byte_from_exponent(float e) {
  if (std::isnan(e)) return 0xFF;
  if (std::isinf(e)) return e < 0 ? 0 : 254;
  const double f = std::floor(double(e));
  if (f < -1000) return 0;
  if (f > 1000) return 254;
  return clamp_biased(int64_t(f));
}

uint8_t e8m0_custom_byte(const NodePtr& expr, NanPolicy policy, float amax) {
  const int special = e8m0_special_byte(policy, amax);
  if (special >= 0) return uint8_t(special);
  return e8m0_byte_from_exponent(eval_scale_expression(expr, amax));
}

F32Scale f32_block_scale(ElemFormat elem, float amax, bool pow2, bool store_multiplier) {
  float r = float(elem.max_normal()) / mx_fmax_nan(amax, 1e-12f);
  // r is +0 (amax Inf), a normal number or NaN: clearing the mantissa of a normal one rounds it down.
  if (pow2 && !std::isnan(r)) r = std::bit_cast<float>(std::bit_cast<uint32_t>(r) & 0xFF800000u);
  return F32Scale{r, store_multiplier ? r : 1.0f / r};
}

float nvfp4_te_s_enc(float t) {
  if (t == 0) return 1.0f;
  const float s = 2688.0f / t;
  return std::isinf(s) ? std::numeric_limits<float>::max() : s;
}

Nvfp4Block nvfp4_block(Nvfp4Convention convention, float a, float t) {
  if (convention == Nvfp4Convention::te) {
    const float s_enc = nvfp4_te_s_enc(t);
    const float s_enc_div6 = s_enc * (1.0f / 6.0f);
    const uint8_t scale = e4m3_encode_rne(a * s_enc_div6);
    const float den = e4m3_decode(scale) * (1.0f / s_enc);
    const float multiplier = den == 0 ? 0.0f : 1.0f / den;
    return Nvfp4Block{scale, multiplier, false};
  }
  const float per_tensor = t / 2688.0f;
  constexpr float kMinScale = 0x1p-6f;  // E4M3's smallest normal
  if (per_tensor == 0) return Nvfp4Block{e4m3_encode_rne(kMinScale), 0.0f, true};
  const float ratio = (a / 6.0f) / per_tensor;
  const uint8_t scale = e4m3_encode_rne(mx_fmin_nan(mx_fmax_nan(ratio, kMinScale), 448.0f));
  const float multiplier = (1.0f / per_tensor) / e4m3_decode(scale);
  return Nvfp4Block{scale, multiplier, false};
}

}  // namespace mxjit::reference
