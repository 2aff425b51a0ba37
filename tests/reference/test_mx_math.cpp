// mx_math.cuh: the shared FP32 transcendentals against double, bit helpers, Philox known answers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backends/reference/numerics.hpp"
#include "templates/mx_math.cuh"

namespace {

/// |f - exact| in units of the FP32 ulp at `exact` (2^-149 below the normal range).
double ulp_error(float f, double exact) {
  if (std::isnan(exact)) return std::isnan(f) ? 0 : 1e30;
  if (std::isinf(exact) || std::fabs(exact) > double(std::numeric_limits<float>::max())) {
    const double lim = double(std::numeric_limits<float>::max());
    if (std::isinf(f) && (f > 0) == (exact > 0)) return 0;
    return std::fabs(exact) > lim * (1 + 0x1p-25) ? 1e30 : std::fabs(double(f) - exact) / 0x1p104;
  }
  const double a = std::fabs(exact);
  const double ulp = a < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(a) - 23);
  return std::fabs(double(f) - exact) / ulp;
}

struct Sweep {
  double max_ulp = 0;  ///< the largest error divided by the allowance (allowance 1 = 1 ulp)
  float worst = 0;
};

using Allowance = std::function<double(float)>;

/// Every 257th FP32 bit pattern (both signs) with lo <= x <= hi, plus a dense walk near 0.
Sweep sweep(const std::function<float(float)>& f, const std::function<double(double)>& exact, const Allowance& scale) {
  Sweep s;
  auto check = [&](float x) {
    const double e = ulp_error(f(x), exact(double(x))) / scale(x);
    if (e > s.max_ulp) {
      s.max_ulp = e;
      s.worst = x;
    }
  };
  for (uint64_t u = 0; u < 0x100000000ull; u += 257) {
    float x;
    const uint32_t bits = uint32_t(u);
    std::memcpy(&x, &bits, 4);
    check(x);
  }
  for (int i = -20000; i <= 20000; ++i) check(float(i) / 1024.0f);
  return s;
}

double sigmoid_d(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
double gelu_tanh_d(double x) {
  const double z = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return x * sigmoid_d(z);
}
double gelu_erf_d(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

TEST_CASE("mx_math: transcendentals within 4 ulp of double over a sweep of every 257th FP32" *
          doctest::test_suite("slow")) {
  struct Fn {
    const char* name;
    std::function<float(float)> f;
    std::function<double(double)> d;
    Allowance allowance;  // in units of 4 ulp
  };
  const Allowance flat = [](float) { return 1.0; };
  // gelu_tanh: 2u = x (k1 + k2 x^2) is computed in FP32 from FP32 constants, and
  // sigmoid(2u) has condition number |2u| for 2u << 0: the error there is inherent to any FP32
  // evaluation of the formula; allowed 4 ulp + 3 |2u| ulp (measured: about 2.4 |2u|).
  const Allowance gelu_tanh_allowance = [](float x) {
    const double z = 2 * std::sqrt(2 / M_PI) * (double(x) + 0.044715 * double(x) * x * x);
    return z < 0 ? 1.0 + 0.75 * std::fabs(z) : 1.0;
  };
  const Fn fns[] = {
      {"exp", mx_exp, [](double x) { return std::exp(x); }, flat},
      {"tanh", mx_tanh, [](double x) { return std::tanh(x); }, flat},
      {"erf", mx_erf, [](double x) { return std::erf(x); }, flat},
      {"sigmoid", mx_sigmoid, sigmoid_d, flat},
      {"silu", mx_silu, [](double x) { return x * sigmoid_d(x); }, flat},
      {"gelu_erf", mx_gelu_erf, gelu_erf_d, flat},
      {"gelu_tanh", mx_gelu_tanh, gelu_tanh_d, gelu_tanh_allowance},
  };
  for (const Fn& fn : fns) {
    const Sweep s = sweep(fn.f, fn.d, [&](float x) { return 4.0 * fn.allowance(x); });
    MESSAGE(fn.name << ": max error " << 4 * s.max_ulp << " (ulp, as a share of 4 ulp x allowance) at x = " << s.worst);
    CHECK_MESSAGE(s.max_ulp <= 1.0, fn.name << " at x = " << s.worst);
  }
  // gelu_tanh for x >= 0, where sigmoid(2u) is well conditioned: 4 ulp flat.
  const Sweep g = sweep([](float x) { return x >= 0 ? mx_gelu_tanh(x) : 0.0f; },
                        [](double x) { return x >= 0 ? gelu_tanh_d(x) : 0.0; }, flat);
  MESSAGE("gelu_tanh (x >= 0): max " << g.max_ulp << " ulp at x = " << g.worst);
  CHECK(g.max_ulp <= 4.0);
}

TEST_CASE("mx_math: special values") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(mx_exp(-inf) == 0.0f);
  CHECK(mx_exp(inf) == inf);
  CHECK(mx_exp(0.0f) == 1.0f);
  CHECK(std::isnan(mx_exp(nan)));
  CHECK(mx_tanh(inf) == 1.0f);
  CHECK(mx_tanh(-inf) == -1.0f);
  CHECK(std::signbit(mx_tanh(-0.0f)));
  CHECK(mx_erf(-inf) == -1.0f);
  CHECK(std::signbit(mx_erf(-0.0f)));
  CHECK(mx_sigmoid(-inf) == 0.0f);
  CHECK(mx_sigmoid(inf) == 1.0f);
  CHECK(mx_silu(inf) == inf);
  CHECK(mx_gelu_tanh(inf) == inf);
  CHECK(mx_gelu_erf(inf) == inf);
  CHECK(mx_gelu_erf(-inf) == 0.0f);
  CHECK(mx_gelu_tanh(-inf) == 0.0f);
  CHECK(mx_silu(-inf) == 0.0f);
  CHECK(mx_relu(-0.0f) == 0.0f);
  CHECK(!std::signbit(mx_relu(-0.0f)));
  CHECK(std::isnan(mx_relu(nan)));
  CHECK(!std::signbit(mx_fmax_nan(-0.0f, 0.0f)));
  CHECK(!std::signbit(mx_fmax_nan(0.0f, -0.0f)));
  CHECK(std::signbit(mx_fmin_nan(0.0f, -0.0f)));
  for (float f : {nan, 1.0f, -2.0f, 0.0f, -0.0f, inf}) {
    CHECK(std::isnan(mx_fmax_nan(f, nan)));
    CHECK(std::isnan(mx_fmin_nan(nan, f)));
  }
  for (int n : {-160, -150, -149, -140, -127, -126, 0, 100, 127, 128, 200}) {
    for (float p : {1.0f, 1.5f, 1.75f, 0.75f, 3.0f}) {
      const double want = std::ldexp(double(p), n);
      CHECK(mx_ldexp(p, n) == float(want));  // double -> float rounds once (RNE)
    }
  }
}

TEST_CASE("mx_math: power-of-two rounding and E8M0 reciprocals against first principles") {
  // mx_pow2_ceil / mx_pow2_floor against frexp/ldexp in double: the nearest power of two at or
  // above / below |x| with x's sign (above 2^127: Inf); +-0 and +-Inf stay, NaN becomes the
  // canonical NaN. Every subnormal, every exponent with the edge significands, and a stride of
  // the rest (the result depends on the exponent and on whether the significand is zero).
  std::vector<uint32_t> bits;
  for (uint32_t m = 0; m < 0x800000u; ++m) bits.insert(bits.end(), {m, m | 0x80000000u});
  for (uint32_t e = 0; e < 512; ++e)
    for (uint32_t m : {0u, 1u, 2u, 0x400000u, 0x400001u, 0x7ffffeu, 0x7fffffu}) bits.push_back(((e & 0xffu) << 23) | ((e >> 8) << 31) | m);
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) bits.push_back(uint32_t(b));
  int64_t bad_ceil = 0, bad_floor = 0;
  for (uint32_t b : bits) {
    const float x = mx_as_float(b);
    float want_c = x, want_f = x;
    if (std::isnan(x)) want_c = want_f = mx_qnan();
    else if (x != 0 && !std::isinf(x)) {
      int e = 0;
      const double m = std::frexp(std::fabs(double(x)), &e);  // |x| = m 2^e, m in [0.5, 1)
      const double lo = std::ldexp(1.0, e - 1), hi = m == 0.5 ? lo : std::ldexp(1.0, e);
      want_f = float(std::copysign(lo, double(x)));
      want_c = float(std::copysign(hi, double(x)));  // 2^128 -> Inf
    }
    bad_ceil += mx_as_uint(mx_pow2_ceil(x)) != mx_as_uint(want_c);
    bad_floor += mx_as_uint(mx_pow2_floor(x)) != mx_as_uint(want_f);
  }
  CHECK(bad_ceil == 0);
  CHECK(bad_floor == 0);
  // mx_e8m0_recip: bit for bit the IEEE quotient 1 / mx_e8m0_decode(byte) (NaN for 0xFF).
  for (unsigned byte = 0; byte < 256; ++byte) {
    CAPTURE(byte);
    const float want = 1.0f / mx_e8m0_decode(byte);
    if (byte == 255) CHECK(mx_as_uint(mx_e8m0_recip(byte)) == 0x7fc00000u);
    else CHECK(mx_as_uint(mx_e8m0_recip(byte)) == mx_as_uint(want));
  }
}

TEST_CASE("mx_math: Philox4x32-10 known answers (Random123 kat_vectors)") {
  const unsigned ctr0[4] = {0, 0, 0, 0}, key0[2] = {0, 0};
  unsigned out[4];
  mx_philox4x32_10(ctr0, key0, out);
  CHECK(out[0] == 0x6627e8d5u);
  CHECK(out[1] == 0xe169c58du);
  CHECK(out[2] == 0xbc57ac4cu);
  CHECK(out[3] == 0x9b00dbd8u);
  const unsigned ctr1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, key1[2] = {0xffffffffu, 0xffffffffu};
  mx_philox4x32_10(ctr1, key1, out);
  CHECK(out[0] == 0x408f276du);
  CHECK(out[1] == 0x41c83b0eu);
  CHECK(out[2] == 0xa20bc7c6u);
  CHECK(out[3] == 0x6d5451fdu);
  const unsigned ctr2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  const unsigned key2[2] = {0xa4093822u, 0x299f31d0u};
  mx_philox4x32_10(ctr2, key2, out);
  CHECK(out[0] == 0xd16cfe09u);
  CHECK(out[1] == 0x94fdccebu);
  CHECK(out[2] == 0x5001e420u);
  CHECK(out[3] == 0x24126ea1u);
}

namespace {

/// |x| rounded to a binary format with `mbits` stored mantissa bits and smallest normal exponent
/// `emin` (nearest even, subnormals, 2^(emax+1) and beyond are Inf), sign kept: first principles in
/// double, where |x| / quantum is exact and std::nearbyint rounds to even.
float round_format(float x, int mbits, int emin, int emax) {
  if (std::isnan(x) || std::isinf(x)) return x;
  const double a = std::fabs(double(x));
  const int e = a == 0 ? emin : std::max(std::ilogb(a), emin);
  const double q = std::ldexp(1.0, e - mbits);
  double v = std::nearbyint(a / q) * q;
  if (v >= std::ldexp(1.0, emax + 1)) v = std::numeric_limits<double>::infinity();
  return float(std::copysign(v, double(x)));
}

}  // namespace

TEST_CASE("mx_math: round_to bf16 and f16 (mx_round_bf16, mx_round_f16) against first principles") {
  std::vector<uint32_t> bits;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 997) bits.push_back(uint32_t(u));
  // Every bf16 tie, and its neighbours, in every binade and sign; f16 ties in its range.
  for (uint32_t hi = 0; hi <= 0xFFFFu; ++hi)
    for (uint32_t lo : {0x7FFFu, 0x8000u, 0x8001u}) bits.push_back(hi << 16 | lo);
  for (uint32_t top = 0; top < (1u << 13); ++top)  // exponents of f16 subnormals to Inf, both signs
    for (uint32_t lo : {0x0FFFu, 0x1000u, 0x1001u, 0x0u}) {
      const uint32_t e = 0x33000000u + (top << 19);  // 2^-25 and up, 8 mantissa steps a binade
      bits.push_back(e | lo);
      bits.push_back(0x80000000u | e | lo);
    }
  for (uint32_t s : {0x7F7F8000u, 0x7F7FFFFFu, 0x477FEFFFu, 0x477FF000u, 0x33000000u, 0x33000001u, 0x7F800000u, 0xFF800000u,
                     0x7FC00000u, 0xFFBFFFFFu, 0x00000001u, 0x80000000u})
    bits.push_back(s);
  size_t bad_bf16 = 0, bad_f16 = 0;
  for (uint32_t u : bits) {
    float x;
    std::memcpy(&x, &u, 4);
    const float b = mx_round_bf16(x), h = mx_round_f16(x);
    const float wb = round_format(x, 7, -126, 127), wh = round_format(x, 10, -14, 15);
    auto same = [](float a, float w) { return std::isnan(w) ? std::isnan(a) : std::memcmp(&a, &w, 4) == 0; };
    if (!same(b, wb) && ++bad_bf16 < 5) MESSAGE("bf16 of " << x << ": " << b << ", want " << wb);
    if (!same(h, wh) && ++bad_f16 < 5) MESSAGE("f16 of " << x << ": " << h << ", want " << wh);
  }
  CHECK(bad_bf16 == 0);
  CHECK(bad_f16 == 0);
  MESSAGE(bits.size() << " FP32 values");
}
