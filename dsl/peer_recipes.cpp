#include "dsl/peer_recipes.hpp"

#include <limits>

namespace mxjit::recipes {
namespace {

constexpr double kTop = 0x1p127;

/// The element format's largest normal and its FP32 reciprocal, as the peers' constants.
double top_of(ElemFormat elem) { return double(float(elem.max_normal())); }
double rcp_of(ElemFormat elem) { return double(1.0f / float(elem.max_normal())); }

}  // namespace

ScaleDef deepgemm(ElemFormat elem, bool ue8m0) {
  Expr s = max(amax_var(), 1e-4) * rcp_of(elem);
  // ceil_to_ue8m0: exponent + (mantissa != 0), clamped to [1, 254]; NaN and Inf reach 254.
  if (ue8m0) s = where(isnan(s) || isinf(s), kTop, pow2_ceil(s));
  ScaleDef d;
  d.stored = s;
  return d;
}

ScaleDef vllm_group(ElemFormat elem, bool ue8m0, double eps) {
  Expr s = fmax(amax_var(), eps) / top_of(elem);
  if (ue8m0) s = pow2_ceil(fmax(s, 1e-10));
  ScaleDef d;
  d.stored = s;
  d.factor = stored_var();
  d.apply = Apply::divide;
  d.clamp = Clamp::ignore_nan;
  d.clamp_lo = -top_of(elem);
  d.clamp_hi = top_of(elem);
  d.amax_nan = AmaxNan::ignore;
  return d;
}

ScaleDef sglang_group(ElemFormat elem, bool ue8m0) {
  const Expr a = fmax(amax_var(), 1e-10);
  ScaleDef d;
  d.amax_nan = AmaxNan::ignore;
  if (ue8m0) {
    // From the amax, not stored_var(): stored as E8M0, an infinite scale reads back as NaN (0xFF),
    // while SGLang's elements take its fast_pow2(-128), -Inf.
    const Expr s = pow2_ceil(a * rcp_of(elem));
    d.stored = s;
    d.factor = where(isinf(s), -std::numeric_limits<double>::infinity(), 1.0 / s);
  } else {
    d.stored = a * rcp_of(elem);
    d.factor = top_of(elem) / a;
  }
  return d;
}

ScaleDef transformer_engine(ElemFormat elem, bool pow2, double eps, double input_max) {
  const Expr a = max(amax_var(), eps);
  const Expr r = top_of(elem) / a;
  Expr q = where(isinf(r), double(float(input_max)), r);
  if (pow2) q = pow2_floor(q);
  q = where(isinf(a) || a == 0.0 || isnan(a), 1.0, q);
  ScaleDef d;
  d.stored = 1.0 / q;
  d.factor = q;
  d.amax_nan = AmaxNan::ignore;
  return d;
}

ScaleDef torchao_blockwise(ElemFormat elem) {
  // fp32(max / fp64(a)) is RN(max / a): double rounding of a quotient of floats through double is
  // innocuous (53 >= 2 * 24 + 2).
  const Expr q = top_of(elem) / max(amax_var(), 1e-12);
  ScaleDef d;
  d.stored = 1.0 / q;
  d.factor = q;
  d.clamp = Clamp::ignore_nan_hi;  // tl.clamp: a NaN product becomes +max (measured on an H100)
  d.clamp_lo = -top_of(elem);
  d.clamp_hi = top_of(elem);
  d.amax_nan = AmaxNan::ignore;
  return d;
}

}  // namespace mxjit::recipes
