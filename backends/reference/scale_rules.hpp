#pragma once
/// \file Block scales from first principles: the E8M0 rules (FLOOR, RCEIL, CEIL, EVEN, custom
/// expressions), FP32 scales and the two NVFP4 conventions (docs/design.md §4, docs/numerics.md).
#include <cstdint>

#include "dsl/ir.hpp"

namespace mxjit::reference {

/// floor(log2(a)) of a finite positive FP32 (subnormals included), exactly.
int floor_log2(float a);
/// ceil(log2(a)) of a finite positive FP32, exactly.
int ceil_log2(float a);

/// The E8M0 byte for amax NaN (0xFF), Inf (0xFF under nan_block, 0xFE under satfinite) or 0
/// (0x00, the zero block); -1 when amax is finite and non-zero and a rule decides.
int e8m0_special_byte(NanPolicy policy, float amax);

/// The E8M0 scale byte of a block with max magnitude `amax` (>= 0 or NaN) for elements of `elem`
/// under a built-in rule. Throws UsageError for ScaleRule::custom (use e8m0_custom_byte).
uint8_t e8m0_scale_byte(ScaleRule rule, NanPolicy policy, ElemFormat elem, float amax);

/// The unbiased exponent e (before clamping) that a built-in rule gives a finite positive amax.
/// RCEIL returns INT32_MIN when amax * (1/max_normal) underflows to 0 (byte 0).
int e8m0_rule_exponent(ScaleRule rule, ElemFormat elem, float amax);

/// Evaluates a custom scale expression (amax_var, constants, + - * /, max, min, neg, abs,
/// floor_log2, ceil_log2) in FP32 for a block amax, by eval_scale_value (scale_expr.hpp), the
/// reference's one evaluator. Throws UsageError on any other node, before evaluating.
float eval_scale_expression(const NodePtr& expr, float amax);

/// The byte of an unbiased exponent value from a custom rule: NaN -> 0xFF; otherwise
/// clamp(floor(e) + 127, 0, 254) (so -Inf -> 0, +Inf -> 254).
uint8_t e8m0_byte_from_exponent(float e);

/// The E8M0 byte under a custom expression: special cases as e8m0_special_byte, then the
/// expression of amax through e8m0_byte_from_exponent.
uint8_t e8m0_custom_byte(const NodePtr& expr, NanPolicy policy, float amax);

/// An FP32 block scale: elements are multiplied by `multiplier`; `stored` is the scale output.
struct F32Scale {
  float multiplier;  ///< r = fp32(fp32(max_normal) / max(amax, 1e-12f)), with pow2: its exponent bits only
  float stored;      ///< fp32(1 / r), or r with store_multiplier
};
/// The FP32 scale of a block (max() propagates NaN); `pow2` rounds r down to a power of two,
/// `store_multiplier` stores r instead of 1 / r.
F32Scale f32_block_scale(ElemFormat elem, float amax, bool pow2 = false, bool store_multiplier = false);

/// One NVFP4 block: its E4M3 scale byte and the FP32 multiplier applied to its elements.
struct Nvfp4Block {
  uint8_t scale;     ///< E4M3 code of the block scale
  float multiplier;  ///< elements are encoded from fp32(v * multiplier)
  bool zero;         ///< true: all elements are +0 (torchao with tensor amax 0)
};
/// TE's per-tensor encode scale: 1 when t == 0, fp32(2688 / t), FLT_MAX if that overflows.
float nvfp4_te_s_enc(float tensor_amax);
/// The NVFP4 scale of a block with amax `a` in a tensor with amax `t` under `convention`.
Nvfp4Block nvfp4_block(Nvfp4Convention convention, float a, float t);

}  // namespace mxjit::reference
