#pragma once
/// \file The library of scale recipes: every built-in rule written in the scale-expression
/// language of ScaleDef (dsl/dsl.hpp), and the recogniser that tells which of them a scale is.
///
/// E8M0 scales are 2^floor(e) of an exponent expression e of the block amax, stored as the
/// exponent field; the MX block policies are conditions around it:
///
///     stored = where(amax == 0, 0, where(<amax NaN or Inf>, NaN, min(exp2(e), 2^127)))
///                                         satfinite: Inf -> 2^127 (byte 0xFE), NaN -> NaN
///     factor = 1 / stored_var                          (exact: 2^(127 - byte))
///     zero_if = amax == 0,  nan_if = isnan(stored_var)
///
/// with e = floor_log2(amax) - emax (FLOOR), ceil_log2(amax) - floor(log2 max) (CEIL),
/// ceil_log2(amax * fp32(1/max)) (RCEIL), floor_log2(amax, mbits) - emax (EVEN) or the user's.
/// A scale built any other way with the same expressions is recognised as the same recipe.
#include "dsl/dsl.hpp"

namespace mxjit::recipes {

/// The unbiased exponent a built-in E8M0 rule gives a block amax `amax_var()` (not ScaleRule::custom).
Expr rule_exponent(ElemFormat elem, ScaleRule rule);
/// The E8M0 scale 2^floor(exponent) (clamped to 2^127; 2^-127 and below store byte 0) under the
/// block policy `policy`: zero blocks, NaN blocks (NaN amax; Inf with nan_block) as docs/design.md §4.
ScaleDef e8m0_exponent(Expr exponent, NanPolicy policy);
/// A built-in E8M0 rule: e8m0_exponent(rule_exponent(elem, rule), policy).
ScaleDef e8m0(ElemFormat elem, ScaleRule rule, NanPolicy policy);
/// The FP8 rowwise / per-group FP32 recipe: r = fp32(max_normal) / max(amax, 1e-12f) (max keeps
/// NaN), with options.pow2 r = pow2_floor(r); stores 1 / r (or r with store_multiplier);
/// elements x * r.
ScaleDef f32_multiplier(ElemFormat elem, F32ScaleOptions options);
/// NVFP4's E4M3 block scale under the FP32 per-tensor scale from tamax_var (docs/numerics.md).
ScaleDef nvfp4(Nvfp4Convention convention);

/// Which library recipe a scale's definition is, with its parameters.
struct Recognised {
  ScaleRecipe recipe = ScaleRecipe::generic;
  ScaleRule rule = ScaleRule::floor;
  NanPolicy policy = NanPolicy::nan_block;
  Nvfp4Convention convention = Nvfp4Convention::te;
  bool pow2 = false;
  bool store_multiplier = false;
  NodePtr exponent;  ///< e8m0_exponent: the exponent expression
};
/// The scale node of `def` for elements of `elem` over `block_amax` (and `tensor_amax`, where the
/// expressions read tamax_var), unvalidated and unrecognised: the one place a ScaleDef becomes IR
/// (missing parts take their defaults; scale() validates and recognises).
NodePtr scale_node(NodePtr block_amax, NodePtr tensor_amax, ElemFormat elem, const ScaleDef& def);

/// Compares the definition of scale node `scale` (scale_definition) with the library's forms for
/// its element and storage formats.
Recognised recognise(const Node& scale);

}  // namespace mxjit::recipes
