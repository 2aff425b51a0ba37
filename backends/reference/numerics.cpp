#include "backends/reference/numerics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "templates/mx_math.cuh"

namespace mxjit::reference {
namespace {

/// The non-negative finite magnitudes of a format in ascending order, with their codes.
struct Grid {
  std::vector<double> mags;
  std::vector<uint8_t> codes;
};

int format_key(const ElemFormat& f) {
  return ((f.ebits * 8 + f.mbits) * 4 + int(f.specials)) * 2 + (f.is_int ? 1 : 0);
}

Grid build_grid(const ElemFormat& f) {
  Grid g;
  if (f.is_int) {
    for (int k = 0; k <= 127; ++k) {
      g.mags.push_back(std::ldexp(double(k), -f.mbits));
      g.codes.push_back(uint8_t(k));
    }
    return g;
  }
  const int positive_codes = 1 << (f.bits() - 1);
  for (int c = 0; c < positive_codes; ++c) {
    double v = decode(f, uint8_t(c));
    if (std::isnan(v) || std::isinf(v)) continue;  // codes are monotonic in value
    g.mags.push_back(v);
    g.codes.push_back(uint8_t(c));
  }
  return g;
}

const Grid& grid_of(const ElemFormat& f) {
  static std::mutex mutex;
  static std::map<int, Grid> grids;  // nodes are stable: references stay valid
  std::lock_guard<std::mutex> lock(mutex);
  auto it = grids.find(format_key(f));
  if (it == grids.end()) it = grids.emplace(format_key(f), build_grid(f)).first;
  return it->second;
}

/// Applies the sign to a magnitude code: the sign bit for FP formats, two's complement for INT8.
uint8_t with_sign(const ElemFormat& f, uint8_t mag_code, bool negative) {
  if (!negative) return mag_code;
  if (f.is_int) return uint8_t(-int(mag_code));
  return uint8_t(mag_code | (1u << (f.bits() - 1)));
}

/// Index of the largest grid magnitude <= a (a finite, 0 <= a < max).
size_t floor_index(const Grid& g, double a) {
  auto it = std::upper_bound(g.mags.begin(), g.mags.end(), a);
  return size_t(it - g.mags.begin()) - 1;
}

}  // namespace

double decode(ElemFormat f, uint8_t code) {
  if (f.is_int) return std::ldexp(double(int8_t(code)), -f.mbits);
  const int bits = f.bits();
  code = uint8_t(code & ((1u << bits) - 1u));
  const bool negative = (code >> (bits - 1)) & 1u;
  const int e = (code >> f.mbits) & ((1 << f.ebits) - 1);
  const int m = code & ((1 << f.mbits) - 1);
  const int top = (1 << f.ebits) - 1;
  double v;
  if (f.specials == Specials::fn && e == top && m == (1 << f.mbits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (f.specials == Specials::ieee && e == top) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(double(m), f.emin() - f.mbits);  // subnormal: m * 2^(emin - mbits)
  } else {
    v = std::ldexp(double((1 << f.mbits) + m), e - f.bias() - f.mbits);
  }
  return negative ? -v : v;
}

uint8_t nan_code(ElemFormat f) { return f.has_nan() ? uint8_t(0x7F) : uint8_t(0x00); }

uint8_t max_code(ElemFormat f) { return grid_of(f).codes.back(); }

uint8_t encode_rne(ElemFormat f, float v) {
  if (std::isnan(v)) return nan_code(f);
  const Grid& g = grid_of(f);
  const bool negative = std::signbit(v);
  const double a = std::fabs(double(v));
  if (a >= g.mags.back()) return with_sign(f, g.codes.back(), negative);  // saturate (Inf too)
  const size_t i = floor_index(g, a);
  if (g.mags[i] == a) return with_sign(f, g.codes[i], negative);
  const double mid = (g.mags[i] + g.mags[i + 1]) / 2;  // exact: grid values have few bits
  size_t pick;
  if (a < mid) pick = i;
  else if (a > mid) pick = i + 1;
  else pick = (g.codes[i] & 1u) == 0 ? i : i + 1;  // tie: the even code
  return with_sign(f, g.codes[pick], negative);
}

uint8_t encode_rne(ElemFormat f, float v, Saturate sat) {
  if (sat == Saturate::finite || std::isnan(v) || !f.has_nan() || f.is_int) return encode_rne(f, v);
  const Grid& g = grid_of(f);
  const double top = g.mags.back();
  const double step = std::ldexp(1.0, f.emax() - f.mbits);  // the grid spacing of the top binade
  const double a = std::fabs(double(v)), mid = top + step / 2;
  // Beyond the midpoint to the next (absent) grid value, or on it when the even code is that value.
  if (a > mid || (a == mid && (g.codes.back() & 1u))) {
    const uint8_t sign = std::signbit(v) ? uint8_t(1u << (f.bits() - 1)) : uint8_t(0);
    const int top_field = (1 << f.ebits) - 1;
    return f.specials == Specials::ieee ? uint8_t((top_field << f.mbits) | sign) : uint8_t(nan_code(f) | sign);
  }
  return encode_rne(f, v);
}

uint8_t encode_sr(ElemFormat f, float v, uint32_t r) {
  if (std::isnan(v)) return nan_code(f);
  const Grid& g = grid_of(f);
  const bool negative = std::signbit(v);
  const double a = std::fabs(double(v));
  if (a >= g.mags.back()) return with_sign(f, g.codes.back(), negative);
  const size_t i = floor_index(g, a);
  const double lo = g.mags[i], hi = g.mags[i + 1];
  // a - lo is exact (both are multiples of a's ulp) and hi - lo is a power of two: frac is exact.
  const double frac = (a - lo) / (hi - lo);
  const uint64_t threshold = uint64_t(std::floor(std::ldexp(frac, 32)));
  const size_t pick = uint64_t(r) < threshold ? i + 1 : i;
  return with_sign(f, g.codes[pick], negative);
}

float e8m0_value(uint8_t byte) {
  if (byte == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return float(std::ldexp(1.0, int(byte) - 127));
}

float e8m0_multiplier(uint8_t byte) { return float(std::ldexp(1.0, 127 - int(byte))); }

uint8_t e4m3_encode_rne(float v) { return encode_rne(e4m3, v); }

float e4m3_decode(uint8_t code) { return float(decode(e4m3, code)); }

float bf16_to_f32(uint16_t bits) { return mx_bf16_to_f32(bits); }
float f16_to_f32(uint16_t bits) { return mx_f16_to_f32(bits); }
uint16_t f32_to_bf16_rne(float v) { return mx_f32_to_bf16_rne(v); }
uint16_t f32_to_f16_rne(float v) { return mx_f32_to_f16_rne(v); }

uint32_t sr_random(uint64_t seed, uint64_t offset, uint64_t index) {
  const unsigned ctr[4] = {unsigned(index), unsigned(index >> 32), unsigned(offset), unsigned(offset >> 32)};
  const unsigned key[2] = {unsigned(seed), unsigned(seed >> 32)};
  unsigned out[4];
  mx_philox4x32_10(ctr, key, out);
  return out[0];
}

}  // namespace mxjit::reference
