// The reference at the edges of FP32 (issue 36): block maxima at and around FLT_MAX (including
// those the EVEN rule rounds past it), at 2^-126 and 2^-149, subnormals, for every E8M0 rule and
// element format, checked against an independent computation from the bit patterns (integer
// rounding of the significand field, a table of every code's value), not against the reference.
#include <doctest/doctest.h>

#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <iterator>
#include <vector>

#include "reference_test_util.hpp"
#include "backends/reference/scale_rules.hpp"
#include "support/fp32_edges.hpp"

using namespace mxjit;
using mxjit::test::quantize_1d;

namespace {

constexpr ElemFormat kFormats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};

/// The standard formats and every user format fp_format(e, m).
std::vector<ElemFormat> all_formats() {
  std::vector<ElemFormat> v(std::begin(kFormats), std::end(kFormats));
  for (int e = 1; e <= 5; ++e)
    for (int m = 0; m <= 5 && 1 + e + m <= 8; ++m) v.push_back(fp_format(e, m));
  return v;
}
constexpr ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

/// floor(log2 u) of the magnitude bits of a finite non-zero FP32.
int ilog2(uint32_t u) {
  const int e = int(u >> 23);
  return e > 0 ? e - 127 : (31 - std::countl_zero(u)) - 149;
}
/// ceil(log2 u): floor, plus one unless the value is a power of two.
int clog2(uint32_t u) {
  const int e = int(u >> 23);
  const bool pow2 = e > 0 ? (u & 0x7fffff) == 0 : std::has_single_bit(u);
  return ilog2(u) + (pow2 ? 0 : 1);
}

/// The unbiased scale exponent a rule gives a finite non-zero amax, from its bits (INT_MIN: byte 0).
int exponent_from_bits(ScaleRule rule, ElemFormat f, float amax) {
  const uint32_t u = bits(amax) & 0x7fffffffu;
  switch (rule) {
    case ScaleRule::floor: return ilog2(u) - f.emax();
    case ScaleRule::ceil: return clog2(u) - f.max_normal_log2();
    case ScaleRule::rceil: {
      const float v = std::fabs(amax) * (1.0f / float(f.max_normal()));  // the rule's one FP32 multiply
      return v == 0 ? INT_MIN : clog2(bits(v));
    }
    case ScaleRule::even: {
      // Round the 23-bit significand field to mbits bits, ties to even, on the integer pattern: a
      // carry runs into the exponent field, and field 255 is then 2^128.
      const int drop = 23 - f.mbits;
      const uint32_t half = 1u << (drop - 1), low = u & ((1u << drop) - 1);
      uint32_t r = u - low;
      // "Even": the significand's last kept bit; with no mantissa bit kept, its integer bit.
      const bool odd = f.mbits > 0 ? ((r >> drop) & 1) != 0 : (r >> 23) != 0;
      if (low > half || (low == half && odd)) r += 1u << drop;
      if (r == 0) return INT_MIN;
      return ((r >> 23) == 255 ? 128 : ilog2(r)) - f.emax();
    }
    default: break;
  }
  return INT_MIN;
}

int byte_from_bits(ScaleRule rule, NanPolicy policy, ElemFormat f, float amax) {
  if (std::isnan(amax)) return 0xFF;
  if (std::isinf(amax)) return policy == NanPolicy::nan_block ? 0xFF : 0xFE;
  if (amax == 0) return 0;
  const int e = exponent_from_bits(rule, f, amax);
  if (e == INT_MIN) return 0;
  return std::clamp(e + 127, 0, 254);
}

/// Every code's value, from the format's definition (NaN for NaN codes, Inf for Inf codes).
double decode(ElemFormat f, uint32_t code) {
  if (f.is_int) return double(int8_t(uint8_t(code))) / 64.0;
  const int sign = int(code >> (f.bits() - 1)) & 1, e = int(code >> f.mbits) & ((1 << f.ebits) - 1);
  const int m = int(code) & ((1 << f.mbits) - 1), top = (1 << f.ebits) - 1;
  if (f.specials == Specials::fn && e == top && m == (1 << f.mbits) - 1) return std::nan("");
  if (f.specials == Specials::ieee && e == top) return m ? std::nan("") : (sign ? -1.0 : 1.0) * INFINITY;
  const double mag = e == 0 ? std::ldexp(double(m), 1 - f.bias() - f.mbits)
                            : std::ldexp(1.0 + double(m) / double(1 << f.mbits), e - f.bias());
  return sign ? -mag : mag;
}

/// The code of a finite scaled element v: nearest finite magnitude (ties to the even code),
/// saturating at the largest, sign bit kept (MXINT8: RNE of v * 64, clamped to +-127).
uint8_t encode_expected(ElemFormat f, float v) {
  if (f.is_int) {
    const double k = std::clamp(std::nearbyint(double(v) * 64.0), -127.0, 127.0);
    return uint8_t(int8_t(k));
  }
  const double a = std::fabs(double(v));
  uint32_t best = 0;
  for (uint32_t c = 1; c < (1u << (f.bits() - 1)); ++c) {
    const double d = decode(f, c);
    if (!std::isfinite(d)) continue;
    const double dc = std::fabs(d - a), db = std::fabs(decode(f, best) - a);
    if (std::isinf(a) ? d > decode(f, best) : dc < db || (dc == db && (c & 1) == 0)) best = c;
  }
  const uint32_t sign = std::signbit(v) ? 1u << (f.bits() - 1) : 0u;
  return uint8_t(best | sign);
}

uint8_t nan_code(ElemFormat f) { return f.has_nan() ? 0x7F : 0x00; }

/// Checks one block against the independent computation: its scale byte and every code.
void check_block(const std::vector<float>& block, ElemFormat f, ScaleRule rule, NanPolicy policy) {
  float amax = 0;
  bool nan = false;
  for (float v : block) {
    nan = nan || std::isnan(v);
    amax = std::max(amax, std::fabs(v));
  }
  if (nan) amax = std::numeric_limits<float>::quiet_NaN();
  const int want_byte = byte_from_bits(rule, policy, f, amax);
  const test::Quantized1d got = quantize_1d(block, f, rule, policy, int64_t(block.size()));
  CAPTURE(f.str());
  CAPTURE(int(rule));
  CAPTURE(amax);
  REQUIRE(int(got.scales[0]) == want_byte);
  for (size_t i = 0; i < block.size(); ++i) {
    uint8_t want;
    if (want_byte == 0xFF) want = nan_code(f);
    else if (amax == 0) want = 0;
    else {
      // v' = fp32(v * 2^(127 - byte)): exact in double, then one rounding to FP32.
      const float scaled = float(std::ldexp(double(block[i]), 127 - want_byte));
      want = std::isnan(block[i]) ? nan_code(f) : encode_expected(f, scaled);
    }
    uint8_t code = got.codes[f.packed() ? i / 2 : i];
    if (f.packed()) code = uint8_t(i % 2 ? code >> 4 : code & 15);
    CAPTURE(i);
    CAPTURE(block[i]);
    CHECK(int(code) == int(want));
  }
}

}  // namespace

TEST_CASE("fp32 edges: a bf16 block holding 0x7f7f rounds past FLT_MAX under EVEN (issue 36)") {
  // 0x7f7f = 1.9921875 * 2^127: its significand rounds up to 2.0 at every width below 7 bits, so
  // the block's EVEN exponent is 128 - emax: E4M3 byte 127 + 120, E2M1 127 + 126, INT8 127 + 128
  // clamped to 254. Elements: 0x7f7f / 2^120 = 255 -> E4M3 256 (0x78).
  std::vector<float> block(32, test::f32_bits(0x7f7f0000));
  CHECK(reference::e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, block[0]) == 247);
  CHECK(reference::e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e2m1, block[0]) == 253);
  CHECK(reference::e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, int8, block[0]) == 254);
  const test::Quantized1d q = quantize_1d(block, e4m3, ScaleRule::even);
  CHECK(q.scales[0] == 247);
  CHECK(q.codes[0] == 0x78);
  // FLT_MAX itself, every format.
  for (ElemFormat f : kFormats)
    CHECK(int(reference::e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, f, std::numeric_limits<float>::max())) ==
          std::min(254, 128 - f.emax() + 127));
}

TEST_CASE("fp32 edges: scale bytes of every rule and format over every binade, against the bit computation") {
  // Every exponent field, with significands at the rounding edges of every mantissa width.
  const uint32_t mants[] = {0x000000, 0x000001, 0x400000, 0x200000, 0x600000, 0x700000, 0x780000, 0x7c0000,
                            0x7e0000, 0x7f0000, 0x7f8000, 0x7fffff, 0x100000, 0x080000, 0x0c0000, 0x3fffff};
  std::mt19937 rng(36);
  std::vector<float> amaxes;
  for (uint32_t e = 0; e < 255; ++e) {
    for (uint32_t m : mants) amaxes.push_back(test::f32_bits(e << 23 | m));
    amaxes.push_back(test::f32_bits(e << 23 | (rng() & 0x7fffff)));
  }
  for (float a : test::fp32_edge_amaxes()) amaxes.push_back(a);
  int checked = 0;
  for (ElemFormat f : all_formats())
    for (ScaleRule rule : kRules)
      for (float a : amaxes) {
        if (a == 0) continue;
        const int want = byte_from_bits(rule, NanPolicy::nan_block, f, a);
        const int got = reference::e8m0_scale_byte(rule, NanPolicy::nan_block, f, a);
        if (got != want) {
          CAPTURE(f.str());
          CAPTURE(int(rule));
          CAPTURE(bits(a));
          CHECK(got == want);
        }
        ++checked;
      }
  CHECK(checked > 400000);
}

TEST_CASE("fp32 edges: whole blocks (scales and codes) of every rule, format and NaN policy") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(0.5f, 1.0f);
  std::uniform_int_distribution<int> shift(0, 30);
  for (ElemFormat f : all_formats())
    for (ScaleRule rule : kRules)
      for (NanPolicy policy : {NanPolicy::nan_block, NanPolicy::satfinite})
        for (float amax : test::fp32_edge_amaxes()) {
          // The amax, its negation, ties and neighbours of it, values down to 2^-30 of it
          // (subnormal and zero where those underflow), +-0.
          std::vector<float> block = {amax, -amax, std::nextafter(amax, 0.0f), amax * 0.75f, -amax * 0.5f, 0.0f, -0.0f,
                                      test::f32_bits(0x00000001), -test::f32_bits(0x007fffff)};
          while (block.size() < 32) block.push_back(amax * mant(rng) * std::ldexp(1.0f, -shift(rng)) * (rng() & 1 ? -1.f : 1.f));
          check_block(block, f, rule, policy);
        }
  // Inf and NaN blocks at the edges too.
  for (ElemFormat f : all_formats())
    for (ScaleRule rule : kRules)
      for (NanPolicy policy : {NanPolicy::nan_block, NanPolicy::satfinite}) {
        std::vector<float> inf_block = {INFINITY, -std::numeric_limits<float>::max(), 1.0f, test::f32_bits(1)};
        check_block(inf_block, f, rule, policy);
        std::vector<float> nan_block = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max()};
        check_block(nan_block, f, rule, policy);
      }
}
