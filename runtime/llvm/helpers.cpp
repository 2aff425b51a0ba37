#include "runtime/llvm/helpers.hpp"

#include <climits>
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

/// floor(log2(a)) of a positive finite FP32 bit pattern, subnormals included (convert.cuh).
int floor_log2_bits(uint32_t a) {
  if (a == 0) return INT_MIN / 2;
  return a >= 0x00800000u ? int(a >> 23) - 127 : (31 - __builtin_clz(a)) - 149;
}

int ceil_log2_bits(uint32_t a) {
  const int e = floor_log2_bits(a);
  const bool pow2 = a >= 0x00800000u ? (a & 0x7fffffu) == 0 : (a & (a - 1)) == 0;
  return pow2 ? e : e + 1;
}

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
      {"mxcpu_custom_byte", reinterpret_cast<void*>(&mxcpu_custom_byte)},
      {"mxcpu_floor_log2f", reinterpret_cast<void*>(&mxcpu_floor_log2f)},
      {"mxcpu_ceil_log2f", reinterpret_cast<void*>(&mxcpu_ceil_log2f)},
      {"mxcpu_encode_sr", reinterpret_cast<void*>(&mxcpu_encode_sr)},
      {"mxcpu_exp", reinterpret_cast<void*>(&mxcpu_exp)},
      {"mxcpu_sigmoid", reinterpret_cast<void*>(&mxcpu_sigmoid)},
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

uint32_t mxcpu_custom_byte(float e) {
  if (std::isnan(e)) return 255u;
  if (e <= -127.0f) return 0u;
  if (e >= 127.0f) return 254u;
  int i = int(e);  // truncates toward zero; step down for negative non-integers
  if (float(i) > e) i -= 1;
  return uint32_t(i + 127);
}

float mxcpu_floor_log2f(float x) {
  if (std::isnan(x) || x < 0) return mx_qnan();
  if (x == 0) return -INFINITY;
  if (std::isinf(x)) return x;
  return float(mxjit::cpu::detail::floor_log2_bits(mx_as_uint(x)));
}

float mxcpu_ceil_log2f(float x) {
  if (std::isnan(x) || x < 0) return mx_qnan();
  if (x == 0) return -INFINITY;
  if (std::isinf(x)) return x;
  return float(mxjit::cpu::detail::ceil_log2_bits(mx_as_uint(x)));
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
