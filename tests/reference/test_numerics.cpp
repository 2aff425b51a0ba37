// Element codes: decode/encode round trips, ties to even, saturation, stochastic rounding, INT8,
// bf16/f16 conversions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/reference/numerics.hpp"

using namespace mxjit;
using namespace mxjit::reference;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("numerics: every FP8 code round-trips (NaN -> canonical 0x7F, E5M2 Inf -> +-max)") {
  for (ElemFormat f : {e4m3, e5m2}) {
    int nan_codes = 0, inf_codes = 0;
    for (int c = 0; c < 256; ++c) {
      const double v = decode(f, uint8_t(c));
      const uint8_t back = encode_rne(f, float(v));
      if (std::isnan(v)) {
        ++nan_codes;
        CHECK(back == 0x7F);
      } else if (std::isinf(v)) {
        ++inf_codes;
        CHECK(back == (v > 0 ? 0x7B : 0xFB));
      } else {
        CHECK_MESSAGE(back == c, f.str() << " code " << c);
        CHECK(double(float(v)) == v);  // every value is an exact FP32
      }
    }
    CHECK(nan_codes == (f == e4m3 ? 2 : 6));
    CHECK(inf_codes == (f == e4m3 ? 0 : 2));
  }
  CHECK(decode(e4m3, 0x7E) == 448);
  CHECK(decode(e4m3, 0x01) == std::ldexp(1.0, -9));
  CHECK(decode(e5m2, 0x7B) == 57344);
  CHECK(decode(e5m2, 0x01) == std::ldexp(1.0, -16));
  CHECK(max_code(e4m3) == 0x7E);
  CHECK(max_code(e5m2) == 0x7B);
}

TEST_CASE("numerics: every FP6 / FP4 code and user format round-trips") {
  for (ElemFormat f : {e2m3, e3m2, e2m1, fp_format(3, 3), fp_format(1, 2), fp_format(4, 2)}) {
    for (int c = 0; c < (1 << f.bits()); ++c) {
      const double v = decode(f, uint8_t(c));
      REQUIRE(std::isfinite(v));
      CHECK_MESSAGE(encode_rne(f, float(v)) == c, f.str() << " code " << c);
    }
  }
  CHECK(decode(e2m3, 0x1F) == 7.5);
  CHECK(decode(e3m2, 0x1F) == 28);
  CHECK(decode(e2m1, 0x7) == 6);
  CHECK(decode(e2m1, 0x1) == 0.5);
  CHECK(decode(e2m3, 0x01) == 0.125);
  CHECK(decode(e3m2, 0x01) == 0.0625);
}

TEST_CASE("numerics: FP4 ties go to the even code") {
  // grid 0 0.5 1 1.5 2 3 4 6 = codes 0..7; the midpoints and where they must land
  const struct { float v; uint8_t code; } ties[] = {
      {0.25f, 0x0}, {0.75f, 0x2}, {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4}, {3.5f, 0x6}, {5.0f, 0x6}};
  for (auto t : ties) {
    CHECK_MESSAGE(encode_rne(e2m1, t.v) == t.code, t.v);
    CHECK_MESSAGE(encode_rne(e2m1, -t.v) == (t.code | 0x8), -t.v);
  }
  // just above a tie rounds up, just below rounds down
  CHECK(encode_rne(e2m1, std::nextafter(0.25f, 1.0f)) == 0x1);
  CHECK(encode_rne(e2m1, std::nextafter(0.75f, 0.0f)) == 0x1);
  CHECK(encode_rne(e2m1, std::nextafter(5.0f, 9.0f)) == 0x7);
  CHECK(encode_rne(e2m1, std::nextafter(5.0f, 0.0f)) == 0x6);
}

TEST_CASE("numerics: saturation, NaN, signed zero") {
  CHECK(encode_rne(e4m3, 448.0f) == 0x7E);
  CHECK(encode_rne(e4m3, 464.0f) == 0x7E);  // the midpoint to the would-be 480 saturates
  CHECK(encode_rne(e4m3, 1e30f) == 0x7E);
  CHECK(encode_rne(e4m3, -kInf) == 0xFE);
  CHECK(encode_rne(e4m3, kNaN) == 0x7F);
  CHECK(encode_rne(e4m3, -kNaN) == 0x7F);
  CHECK(encode_rne(e5m2, kInf) == 0x7B);
  CHECK(encode_rne(e5m2, 61440.0f) == 0x7B);  // would round to Inf: saturates
  CHECK(encode_rne(e5m2, kNaN) == 0x7F);
  CHECK(encode_rne(e2m1, kNaN) == 0x00);
  CHECK(encode_rne(e2m3, -kInf) == 0x3F);
  CHECK(encode_rne(e4m3, -0.0f) == 0x80);
  CHECK(encode_rne(e4m3, -1e-10f) == 0x80);   // rounds to zero, keeps the sign
  CHECK(encode_rne(e2m1, -0.0f) == 0x08);
  CHECK(encode_rne(e4m3, std::ldexp(1.0f, -10)) == 0x00);  // half the least subnormal: tie to even 0
  CHECK(encode_rne(e4m3, std::ldexp(3.0f, -10)) == 0x02);  // 1.5 * 2^-9: tie between codes 1 and 2
  CHECK(encode_rne(e4m3, std::ldexp(3.0f, -11)) == 0x01);  // 0.75 * 2^-9 -> code 1
}

TEST_CASE("numerics: MXINT8") {
  // k = RNE(v * 64) clamped to [-127, 127], two's complement
  CHECK(encode_rne(int8, 1.0f) == 64);
  CHECK(encode_rne(int8, -1.0f) == uint8_t(-64));
  CHECK(encode_rne(int8, 1.5f / 64) == 2);    // 1.5 -> 2 (even)
  CHECK(encode_rne(int8, 2.5f / 64) == 2);    // 2.5 -> 2 (even)
  CHECK(encode_rne(int8, -2.5f / 64) == uint8_t(-2));
  CHECK(encode_rne(int8, 1.984375f) == 127);  // 127/64
  CHECK(encode_rne(int8, 1.9921875f) == 127); // 127.5 -> saturates to 127
  CHECK(encode_rne(int8, -5.0f) == uint8_t(-127));
  CHECK(encode_rne(int8, -0.0f) == 0);
  CHECK(encode_rne(int8, kNaN) == 0);
  CHECK(decode(int8, 0x81) == -127.0 / 64);
  CHECK(decode(int8, 0x80) == -2.0);
  for (int k = -127; k <= 127; ++k) CHECK(encode_rne(int8, float(decode(int8, uint8_t(k)))) == uint8_t(k));
}

TEST_CASE("numerics: stochastic rounding") {
  // exact values never move
  for (uint32_t r : {0u, 1u, 0x80000000u, 0xFFFFFFFFu}) {
    CHECK(encode_sr(e2m1, 1.5f, r) == 0x3);
    CHECK(encode_sr(e4m3, 448.0f, r) == 0x7E);
    CHECK(encode_sr(e2m1, -0.0f, r) == 0x8);
  }
  // 1.25 is a quarter of the way from 1 to 1.5: up iff r < 2^30
  CHECK(encode_sr(e2m1, 1.125f, 0x3FFFFFFFu) == 0x3);
  CHECK(encode_sr(e2m1, 1.125f, 0x40000000u) == 0x2);
  CHECK(encode_sr(e2m1, -1.125f, 0u) == 0xB);
  CHECK(encode_sr(e2m1, 7.0f, 0u) == 0x7);  // beyond max: saturates
  CHECK(encode_sr(e4m3, kNaN, 0u) == 0x7F);
  CHECK(encode_sr(int8, 0.5f / 64, 0x7FFFFFFFu) == 1);
  CHECK(encode_sr(int8, 0.5f / 64, 0x80000000u) == 0);
  // same (seed, offset) -> same bits; other seed -> other bits; unbiased on average
  CHECK(sr_random(1, 2, 3) == sr_random(1, 2, 3));
  CHECK(sr_random(1, 2, 3) != sr_random(2, 2, 3));
  CHECK(sr_random(1, 2, 3) != sr_random(1, 3, 3));
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) sum += decode(e2m1, encode_sr(e2m1, 2.3f, sr_random(7, 0, uint64_t(i))));
  CHECK(std::fabs(sum / n - 2.3) < 0.01);
}

TEST_CASE("numerics: E8M0 and E4M3 scale values") {
  CHECK(e8m0_value(127) == 1.0f);
  CHECK(e8m0_value(0) == std::ldexp(1.0f, -127));
  CHECK(e8m0_value(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(e8m0_value(0xFF)));
  CHECK(e8m0_multiplier(0) == std::ldexp(1.0f, 127));
  CHECK(e8m0_multiplier(254) == std::ldexp(1.0f, -127));
  CHECK(e4m3_encode_rne(std::ldexp(1.0f, -6)) == 0x08);
  CHECK(e4m3_decode(0x7E) == 448.0f);
  CHECK(std::isnan(e4m3_decode(0xFF)));
}

TEST_CASE("numerics: bf16 / f16 conversions against a nearest-value search") {
  auto bits = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; };
  CHECK(f32_to_bf16_rne(kNaN) == 0x7FC0);
  CHECK(f32_to_bf16_rne(-kNaN) == 0xFFC0);
  CHECK(f32_to_f16_rne(kNaN) == 0x7E00);
  CHECK(f32_to_f16_rne(65504.0f) == 0x7BFF);
  CHECK(f32_to_f16_rne(65519.0f) == 0x7BFF);
  CHECK(f32_to_f16_rne(65520.0f) == 0x7C00);
  CHECK(f32_to_bf16_rne(std::numeric_limits<float>::max()) == 0x7F80);
  // every bf16 and f16 pattern decodes exactly and re-encodes to itself
  for (uint32_t h = 0; h < 65536; ++h) {
    const float b = bf16_to_f32(uint16_t(h)), f = f16_to_f32(uint16_t(h));
    if (!std::isnan(b)) CHECK(f32_to_bf16_rne(b) == h);
    if (!std::isnan(f)) CHECK(f32_to_f16_rne(f) == h);
    if (!std::isnan(b)) CHECK(bits(b) == (h << 16));
  }
  // f16 rounding: midpoints between consecutive f16 values go to the even one, others nearest
  for (uint32_t h = 0; h < 0x7BFF; h += 7) {
    const double lo = f16_to_f32(uint16_t(h)), hi = f16_to_f32(uint16_t(h + 1));
    const float mid = float((lo + hi) / 2);  // exact in FP32
    CHECK(f32_to_f16_rne(mid) == ((h & 1) ? h + 1 : h));
    CHECK(f32_to_f16_rne(std::nextafter(mid, 0.0f)) == h);
    CHECK(f32_to_f16_rne(std::nextafter(mid, 1e9f)) == h + 1);
  }
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f32_to_f16_rne(std::ldexp(1.0f, -25)) == 0x0000);               // tie to even (0)
  CHECK(f32_to_f16_rne(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(f32_to_f16_rne(-std::ldexp(3.0f, -25)) == 0x8002);             // 1.5 ulp: tie to even 2
}
