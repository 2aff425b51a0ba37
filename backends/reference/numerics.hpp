#pragma once
/// \file Scalar building blocks of the CPU reference: element codes decoded to exact doubles and
/// FP32 values encoded by searching the nearest representable value (docs/design.md §4,
/// docs/numerics.md). Slow but obviously right; used by the executor, its tests and the GPU tests.
#include <cstdint>

#include "dsl/format.hpp"
#include "dsl/ir.hpp"

namespace mxjit::reference {

/// The exact value of `code` in `elem`: NaN for NaN codes, +-Inf for E5M2's Inf codes; INT8
/// codes are two's complement k (so 0x80 decodes to -128/64). Only the low bits() bits are read.
double decode(ElemFormat elem, uint8_t code);

/// The code `elem` stores for NaN: 0x7F for E4M3 and E5M2, 0x00 for formats without NaN.
uint8_t nan_code(ElemFormat elem);

/// The positive code of the largest finite magnitude (0x7E for E4M3, 0x7B for E5M2, 127 for INT8).
uint8_t max_code(ElemFormat elem);

/// Encodes FP32 `v` with round-to-nearest, ties to the code with even LSB, subnormals kept.
/// Finite values beyond the largest magnitude and +-Inf saturate to +-max; NaN -> nan_code();
/// -0 and negative values that round to zero keep the sign bit (INT8 has no -0: 0x00).
uint8_t encode_rne(ElemFormat elem, float v);

/// encode_rne with Saturate::none: values that round beyond +-max (on the grid extended by one
/// step) and +-Inf become NaN with their sign (E4M3: 0x7F / 0xFF) or +-Inf (E5M2), as torch's
/// `.to(float8_*)`; NaN -> nan_code(). Saturate::finite is encode_rne.
uint8_t encode_rne(ElemFormat elem, float v, Saturate sat);

/// Stochastic rounding: with lo <= |v| < hi the neighbouring grid magnitudes, rounds up iff
/// r < floor(2^32 (|v| - lo) / (hi - lo)); exactly representable values never change. Then
/// saturates like encode_rne (also NaN and +-Inf).
uint8_t encode_sr(ElemFormat elem, float v, uint32_t r);

/// The value of an E8M0 scale byte as FP32: 2^(byte - 127) (byte 0 is the subnormal 2^-127),
/// NaN for 0xFF.
float e8m0_value(uint8_t byte);

/// The exact FP32 multiplier 2^(127 - byte) that E8M0 `byte` (0..254) applies to elements.
float e8m0_multiplier(uint8_t byte);

/// E4M3 encode (RNE, saturating to 448, NaN -> 0x7F): the NVFP4 block-scale conversion.
uint8_t e4m3_encode_rne(float v);

/// E4M3 decode as FP32 (exact; NaN for 0x7F / 0xFF).
float e4m3_decode(uint8_t code);

/// bf16 bits -> FP32 (exact).
float bf16_to_f32(uint16_t bits);
/// f16 bits -> FP32 (exact).
float f16_to_f32(uint16_t bits);
/// FP32 -> bf16 bits (RNE; NaN -> 0x7FC0 | sign).
uint16_t f32_to_bf16_rne(float v);
/// FP32 -> f16 bits (RNE with subnormals; NaN -> 0x7E00 | sign; overflow -> Inf).
uint16_t f32_to_f16_rne(float v);

/// Philox4x32-10 output word 0 for the stochastic rounding of domain element `index`:
/// key {seed_lo, seed_hi}, counter {index_lo, index_hi, offset_lo, offset_hi}.
uint32_t sr_random(uint64_t seed, uint64_t offset, uint64_t index);

}  // namespace mxjit::reference
