#include "backends/llvm/helpers.hpp"

#include <cmath>
#include <cstring>

#include "templates/mx_math.cuh"

namespace mxjit::cpu::detail {
namespace {

/// A format word unpacked.
struct Fmt {
  int ebits, mbits, spec;
  bool is_int;
  explicit Fmt(uint32_t w)
      : ebits(int(w & 15u)), mbits(int((w >> 4) & 15u)), spec(int((w >> 8) & 15u)), is_int(((w >> 12) & 1u) != 0) {}
  int bits() const { return is_int ? 8 : 1 + ebits + mbits; }
  int bias() const { return is_int ? 0 : (1 << (ebits - 1)) - 1; }
};

/// mx_encode_sw of templates/convert.cuh with the format as run-time values (SR only here).
uint32_t encode_sw(float v, const Fmt& f, bool sr, uint32_t rnd) {
  uint32_t u = mx_as_uint(v);
  const uint32_t sign = u >> 31;
  u &= 0x7fffffffu;
  const int bits = f.bits();
  if (u > 0x7f800000u) return f.spec == 0 ? 0u : (1u << (bits - 1)) - 1u;
  const int bias = f.bias(), emin = 1 - bias;
  const uint32_t max_field = f.is_int ? 0u : (f.spec == 2 ? (1u << f.ebits) - 2u : (1u << f.ebits) - 1u);
  const uint32_t max_mant = f.is_int ? 127u : (f.spec == 1 ? (1u << f.mbits) - 2u : (1u << f.mbits) - 1u);
  const uint32_t max_code = f.is_int ? 127u : ((max_field << f.mbits) | max_mant);
  uint32_t mag;
  if (u == 0x7f800000u) {
    mag = max_code;
  } else {
    const int e = u >= 0x00800000u ? int(u >> 23) - 127 : -126;
    const uint64_t m = u >= 0x00800000u ? ((u & 0x7fffffu) | 0x800000u) : u;
    const int te = f.is_int ? 0 : (e > emin ? e : emin);
    const int q = f.is_int ? -f.mbits : te - f.mbits;
    const int d = q - (e - 23);
    uint64_t k;
    if (d <= 0) {
      k = d < -40 ? (1ull << 40) : (m << (-d));
    } else if (d >= 64) {
      k = 0;
    } else {
      k = m >> d;
      const uint64_t rem = m & ((1ull << d) - 1ull);
      if (sr) {
        const uint64_t frac32 = d <= 32 ? (rem << (32 - d)) : (rem >> (d - 32));
        if (uint64_t(rnd) < frac32) k += 1;
      } else {
        const uint64_t half = 1ull << (d - 1);
        if (rem > half || (rem == half && (k & 1ull))) k += 1;
      }
    }
    if (f.is_int) {
      mag = k > 127ull ? 127u : uint32_t(k);
      return sign && mag ? (256u - mag) & 0xffu : mag;
    }
    if (k < (1ull << f.mbits)) {
      mag = uint32_t(k);
    } else {
      int field = te + bias;
      if (k >= (2ull << f.mbits)) {
        k >>= 1;
        field += 1;
      }
      const uint32_t mant = uint32_t(k - (1ull << f.mbits));
      if (field > int(max_field) || (field == int(max_field) && mant > max_mant)) mag = max_code;
      else mag = (uint32_t(field) << f.mbits) | mant;
    }
  }
  if (f.is_int) return sign && mag ? (256u - mag) & 0xffu : mag;
  return (sign << (bits - 1)) | mag;
}

/// The exact value of a code (convert.cuh's mx_decode_sw, run-time format).
float decode(uint32_t c, const Fmt& f) {
  if (f.is_int) return mx_fmul(float(int(int8_t(uint8_t(c)))), 1.0f / float(1 << f.mbits));
  const int bits = f.bits();
  c &= (1u << bits) - 1u;
  const uint32_t sign = (c >> (bits - 1)) & 1u, field = (c >> f.mbits) & ((1u << f.ebits) - 1u);
  const uint32_t mant = c & ((1u << f.mbits) - 1u), top = (1u << f.ebits) - 1u;
  float r;
  if (f.spec == 1 && field == top && mant == (1u << f.mbits) - 1u) return mx_qnan();
  if (f.spec == 2 && field == top) r = mant ? mx_qnan() : mx_as_float(0x7f800000u);
  else if (field == 0) r = mx_fmul(float(mant), mx_pow2(1 - f.bias() - f.mbits));
  else r = mx_fmul(float((1u << f.mbits) + mant), mx_pow2(int(field) - f.bias() - f.mbits));
  return sign ? -r : r;
}

/// E4M3 values of all 256 codes (NVFP4 block scales are decoded once per block).
struct E4m3Table {
  float v[256];
  E4m3Table() {
    for (uint32_t c = 0; c < 256; ++c) v[c] = decode(c, Fmt(format_word(e4m3)));
  }
};

float e4m3_value(uint32_t code) {
  static const E4m3Table table;
  return table.v[code & 0xffu];
}

}  // namespace

uint32_t format_word(const ElemFormat& f) {
  const uint32_t spec = f.specials == Specials::none ? 0u : (f.specials == Specials::fn ? 1u : 2u);
  return uint32_t(f.ebits) | uint32_t(f.mbits) << 4 | spec << 8 | uint32_t(f.is_int ? 1 : 0) << 12;
}

const std::vector<HelperSymbol>& helper_symbols() {
  static const std::vector<HelperSymbol> table = {
      {"mxcpu_floor_log2", reinterpret_cast<void*>(&mxcpu_floor_log2)},
      {"mxcpu_ceil_log2", reinterpret_cast<void*>(&mxcpu_ceil_log2)},
      {"mxcpu_exp2", reinterpret_cast<void*>(&mxcpu_exp2)},
      {"mxcpu_pow2_floor", reinterpret_cast<void*>(&mxcpu_pow2_floor)},
      {"mxcpu_pow2_ceil", reinterpret_cast<void*>(&mxcpu_pow2_ceil)},
      {"mxcpu_fmax_num", reinterpret_cast<void*>(&mxcpu_fmax_num)},
      {"mxcpu_fmin_num", reinterpret_cast<void*>(&mxcpu_fmin_num)},
      {"mxcpu_e8m0_decode", reinterpret_cast<void*>(&mxcpu_e8m0_decode)},
      {"mxcpu_encode_nosat", reinterpret_cast<void*>(&mxcpu_encode_nosat)},
      {"mxcpu_encode_sr", reinterpret_cast<void*>(&mxcpu_encode_sr)},
      {"mxcpu_exp", reinterpret_cast<void*>(&mxcpu_exp)},
      {"mxcpu_sigmoid", reinterpret_cast<void*>(&mxcpu_sigmoid)},
      {"mxcpu_round_bf16", reinterpret_cast<void*>(&mxcpu_round_bf16)},
      {"mxcpu_round_f16", reinterpret_cast<void*>(&mxcpu_round_f16)},
      {"mxcpu_silu", reinterpret_cast<void*>(&mxcpu_silu)},
      {"mxcpu_gelu_tanh", reinterpret_cast<void*>(&mxcpu_gelu_tanh)},
      {"mxcpu_gelu_erf", reinterpret_cast<void*>(&mxcpu_gelu_erf)},
      {"mxcpu_f32_to_f16", reinterpret_cast<void*>(&mxcpu_f32_to_f16)},
      {"mxcpu_dequant", reinterpret_cast<void*>(&mxcpu_dequant)},
  };
  return table;
}

}  // namespace mxjit::cpu::detail

using mxjit::cpu::detail::Fmt;

extern "C" {

float mxcpu_floor_log2(float x, int32_t mbits) { return mx_floor_log2_value(x, mbits); }
float mxcpu_ceil_log2(float x) { return mx_ceil_log2_value(x); }
float mxcpu_exp2(float e) { return mx_exp2_floor(e); }
float mxcpu_pow2_floor(float x) { return mx_pow2_floor(x); }
float mxcpu_pow2_ceil(float x) { return mx_pow2_ceil(x); }
float mxcpu_fmax_num(float a, float b) { return mx_fmax_num(a, b); }
float mxcpu_fmin_num(float a, float b) { return mx_fmin_num(a, b); }
float mxcpu_e8m0_decode(uint32_t byte) { return mx_e8m0_decode(byte & 0xffu); }

uint32_t mxcpu_encode_nosat(float y, uint32_t fmt) {
  const Fmt f(fmt);
  const uint32_t code = mxjit::cpu::detail::encode_sw(y, f, false, 0);
  if (mx_isnan(y) || f.spec == 0 || f.is_int) return code;
  // The largest magnitude's code, its value and the midpoint to the next (absent) grid value.
  const uint32_t top = (1u << f.ebits) - 1u, max_field = f.spec == 2 ? top - 1u : top;
  const uint32_t max_mant = f.spec == 1 ? (1u << f.mbits) - 2u : (1u << f.mbits) - 1u;
  const uint32_t max_code = (max_field << f.mbits) | max_mant;
  const float max = mxjit::cpu::detail::decode(max_code, f);
  const float mid = mx_fadd(max, mx_pow2(int(max_field) - f.bias() - f.mbits - 1));
  const float a = mx_fabs(y);
  if (!(a > mid || (a == mid && (max_code & 1u)))) return code;
  const uint32_t sign = (mx_as_uint(y) >> 31) << (f.bits() - 1);
  return sign | (f.spec == 2 ? top << f.mbits : (1u << (f.bits() - 1)) - 1u);
}

uint32_t mxcpu_encode_sr(float y, uint32_t fmt, uint64_t seed, uint64_t offset, uint64_t index) {
  const unsigned ctr[4] = {unsigned(index), unsigned(index >> 32), unsigned(offset), unsigned(offset >> 32)};
  const unsigned key[2] = {unsigned(seed), unsigned(seed >> 32)};
  unsigned out[4];
  mx_philox4x32_10(ctr, key, out);
  return mxjit::cpu::detail::encode_sw(y, Fmt(fmt), true, out[0]);
}

float mxcpu_exp(float x) { return mx_exp(x); }
float mxcpu_sigmoid(float x) { return mx_sigmoid(x); }
float mxcpu_round_bf16(float x) { return mx_round_bf16(x); }
float mxcpu_round_f16(float x) { return mx_round_f16(x); }
float mxcpu_silu(float x) { return mx_silu(x); }
float mxcpu_gelu_tanh(float x) { return mx_gelu_tanh(x); }
float mxcpu_gelu_erf(float x) { return mx_gelu_erf(x); }

uint32_t mxcpu_f32_to_f16(float x) { return mx_f32_to_f16_rne(mx_isnan(x) ? mx_qnan() : x); }

float mxcpu_dequant(uint32_t code, uint32_t fmt, uint32_t scale_bits, uint32_t scale_format) {
  using namespace mxjit::cpu::detail;
  float s;
  switch (scale_format) {
    case 0: s = scale_bits == 255u ? mx_qnan() : (scale_bits == 0u ? mx_as_float(0x00400000u) : mx_as_float(scale_bits << 23)); break;
    case 1: s = e4m3_value(scale_bits); break;
    default: s = mx_as_float(scale_bits); break;
  }
  return mx_fmul(decode(code, Fmt(fmt)), s);
}

}  // extern "C"
