#pragma once
/// \file The blockwise / per-token-group FP8 recipes of other libraries as scale definitions:
/// each is the peer's exact FP32 op sequence (docs/research: blockwise_fp8_peers.md §0, §9.1),
/// so the reference and the CPU backend give the peer's bytes. A definition says the scale; the
/// block shape (1x128 groups, 128x128 tiles) and the scale layout are the caller's, and so is the
/// cast's saturation where a peer's differs (DeepGEMM casts with torch's `.to()`: Saturate::none).
///
///     peer                      amax NaN   stored scale s                 element
///     DeepGEMM (torch on GPU)   propagate  RN(max(a,1e-4) * RN(1/max))    x * RN(1/s), torch .to()
///                                          ue8m0: exponent-bit ceil, NaN/Inf -> 2^127
///     vLLM CUDA                 ignore     RN(fmax(a,eps) / max)          fminf(fmaxf(x / s))
///                                          ue8m0: pow2_ceil(fmax(s, 1e-10))
///     SGLang sgl-kernel v1      ignore     RN(fmax(a,1e-10) * RN(1/max))  x * RN(max / a)
///     (precise build)                      ue8m0: pow2_ceil, elements x * 2^-e (Inf: -Inf)
///     Transformer Engine        ignore     1 / q, q = RN(max / a)         x * q
///                                          q = 1 for a 0/Inf/NaN; pow2: q rounded down
///     torchao blockwise         ignore     1 / q, q = RN(max / max(a,1e-12))   clamp(x * q)
///
/// `max` is the element format's largest normal (448 for E4M3, 57344 for E5M2). Every definition
/// stores FP32 values; the power-of-two ones may be stored as E8M0 (set ScaleDef::format).
#include "dsl/dsl.hpp"

namespace mxjit::recipes {

/// DeepGEMM's `per_token_cast_to_fp8` / `per_block_cast_to_fp8` as PyTorch computes them on the
/// GPU (`amax / 448.0` is `amax * RN(1/448)` there), with `ceil_to_ue8m0` when `ue8m0`. Cast
/// with Saturate::none (torch's `.to(float8_e4m3fn)`).
ScaleDef deepgemm(ElemFormat elem, bool ue8m0);
/// vLLM's `per_token_group_quant_fp8` CUDA kernel (`eps` floors the amax; 1e-10 by default).
ScaleDef vllm_group(ElemFormat elem, bool ue8m0, double eps = 1e-10);
/// SGLang's `per_token_group_quant_8bit` v1 CUDA kernel as built for sm_100 (precise division;
/// the sm_90 build divides with fast math). With `ue8m0` an infinite amax gives the kernel's
/// factor -Inf (its `fast_pow2(-128)`): elements saturate with their sign flipped.
ScaleDef sglang_group(ElemFormat elem, bool ue8m0);
/// Transformer Engine's Float8BlockScaling quantizer (1D and 2D alike): `pow2` is
/// `force_pow_2_scales` (the default), `eps` the amax epsilon (0), `input_max` the largest finite
/// value of the input type, which replaces an infinite q (bf16: 0x1.fep127).
ScaleDef transformer_engine(ElemFormat elem, bool pow2, double eps = 0, double input_max = 0x1.fep127);
/// torchao's blockwise FP8 training kernels (`act_quant_lhs`, `weight_quant_rhs`): FP32 scales
/// from a 1e-12 floor, elements clamped to +-max (tl.clamp: NaN becomes -max).
ScaleDef torchao_blockwise(ElemFormat elem);

}  // namespace mxjit::recipes
