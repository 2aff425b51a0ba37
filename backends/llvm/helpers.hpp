#pragma once
/// \file The scalar helpers that JIT-compiled CPU kernels call (extern "C", resolved by name in
/// the JIT): E8M0 scale rules, custom-expression logs, NVFP4 block scales, stochastic rounding,
/// transcendentals, f16 stores and dequantize decoders. Everything hot and simple (loads, amax,
/// multiply, RNE encode, bf16) is inline IR instead (lower_numerics.hpp).
///
/// The integer algorithms follow templates/convert.cuh (what the GPU runs); the transcendentals
/// are templates/mx_math.cuh's own functions. Bit-exactness with the reference is what the
/// tests check.
#include <cstdint>
#include <string>
#include <vector>

#include "dsl/format.hpp"

namespace mxjit::cpu::detail {

/// An element format packed into 32 bits for helper calls: ebits | mbits << 4 | specials << 8 |
/// is_int << 12.
uint32_t format_word(const ElemFormat& f);

/// One helper: its symbol name and address.
struct HelperSymbol {
  std::string name;
  void* address;
};

/// Every helper the lowering may call (registered as absolute symbols in the JIT).
const std::vector<HelperSymbol>& helper_symbols();

}  // namespace mxjit::cpu::detail

extern "C" {
/// Scale-expression primitives: mx_math.cuh's mx_floor_log2_value (mbits < 0: exact),
/// mx_ceil_log2_value, mx_exp2_floor, mx_pow2_floor, mx_pow2_ceil, mx_fmax_num, mx_fmin_num and
/// mx_e8m0_decode.
float mxcpu_floor_log2(float x, int32_t mbits);
float mxcpu_ceil_log2(float x);
float mxcpu_exp2(float e);
float mxcpu_pow2_floor(float x);
float mxcpu_pow2_ceil(float x);
float mxcpu_fmax_num(float a, float b);
float mxcpu_fmin_num(float a, float b);
float mxcpu_e8m0_decode(uint32_t byte);
/// RNE encode of `y` to format word `fmt` with Saturate::none: beyond +-max (on the grid
/// extended by one step) and +-Inf give NaN with y's sign (E5M2: +-Inf); NaN -> the NaN code.
uint32_t mxcpu_encode_nosat(float y, uint32_t fmt);
/// Stochastic rounding of `y` to format word `fmt` with Philox4x32-10 word 0 of
/// (counter {index, offset}, key seed).
uint32_t mxcpu_encode_sr(float y, uint32_t fmt, uint64_t seed, uint64_t offset, uint64_t index);
/// mx_math.cuh's activations.
float mxcpu_exp(float x);
float mxcpu_sigmoid(float x);
float mxcpu_round_bf16(float x);
float mxcpu_round_f16(float x);
float mxcpu_silu(float x);
float mxcpu_gelu_tanh(float x);
float mxcpu_gelu_erf(float x);
/// FP32 -> f16 bits (RNE; NaN -> 0x7E00).
uint32_t mxcpu_f32_to_f16(float x);
/// Decoded element code (format word) times a scale (bits; 0 e8m0, 1 e4m3, 2 f32), in FP32.
float mxcpu_dequant(uint32_t code, uint32_t fmt, uint32_t scale_bits, uint32_t scale_format);
}
