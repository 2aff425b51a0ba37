#pragma once
/// \file Scale definitions (dsl/dsl.hpp ScaleDef) evaluated for one block, in FP32 with one
/// rounding per operation: the reference's reading of every recipe (docs/numerics.md).
#include <cstdint>

#include "dsl/ir.hpp"

namespace mxjit::reference {

/// What a block's elements become.
enum class BlockMode : uint8_t {
  scaled,  ///< fp32(v * factor) or fp32(v / factor), clamped, then encoded
  zero,    ///< every element is +0 (the scale's zero_if holds)
  nan,     ///< every element is the format's NaN code (0x00 without NaN): nan_if holds
};

/// The variables of a scale expression.
struct ScaleVars {
  float amax = 0;    ///< amax_var: the block's amax
  float tamax = 0;   ///< tamax_var: the tensor amax (two-level scales)
  float stored = 0;  ///< stored_var: the stored scale read back (factor and conditions)
};

/// Evaluates value expression `n` (amax_var, constants, + - * /, max, min, fmax, fmin, ...).
/// Throws UsageError on a node that is not a scale-expression value.
float eval_scale_value(const NodePtr& n, const ScaleVars& v);
/// Evaluates condition `n` (isnan, isinf, ==, <, <=, ||, &&, !, never).
bool eval_scale_cond(const NodePtr& n, const ScaleVars& v);

/// The bits scale format `f` stores for value s: the E8M0 exponent field of |s|, the E4M3 code
/// (RNE, saturating, NaN -> 0x7F), bf16 bits (RNE, NaN -> 0x7FC0) or the FP32 bits.
uint32_t encode_scale(ScaleFormat f, float s);
/// The value of stored scale bits read back (E8M0 0xFF and E4M3 0x7F: NaN).
float decode_scale(ScaleFormat f, uint32_t bits);

/// One block's scale.
struct BlockScale {
  float stored = 0;    ///< the stored expression's FP32 value (before `format` rounds it)
  uint32_t bits = 0;   ///< what the scale output holds: encode_scale(format, stored)
  float factor = 0;    ///< what the elements are multiplied (or divided) by
  BlockMode mode = BlockMode::scaled;
};
/// The scale of a block with amax `amax` (taken as the scale's AmaxNan says) in a tensor with
/// amax `tamax` under scale node `sn` (Op::scale).
BlockScale block_scale(const Node& sn, float amax, float tamax);

/// Element value `x` scaled by its block's `factor` under `sn`: fp32(x * factor) or fp32(x / factor),
/// then the scale's clamp. (The cast rounds it.)
float scale_element(const Node& sn, float x, float factor);

}  // namespace mxjit::reference
