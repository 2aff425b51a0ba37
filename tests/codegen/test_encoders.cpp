// templates/convert.cuh's element encoders compiled on the host: the branch-free RNE encoder
// (mx_encode_rne) against the reference software encoder (mx_encode_sw without stochastic
// rounding) for every format, over all FP32 patterns of the exponents where rounding happens and
// a set of mantissas of every other exponent (NaN, Inf, zero and FP32 subnormals among them); a
// sample of them also against the CPU reference's grid search (what the GPU tests check against).
// The decoder (mx_decode) against mx_decode_sw and the reference, every code.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsl/format.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/scale_rules.hpp"
#include "templates/mx_math.cuh"

// Host shims for what the generated kernels get from prelude.cuh and the CUDA builtins; every
// hardware-conversion block of convert.cuh stays compiled out.
#define MX_D inline
#define MXJIT_HW_UE8M0 0
#define MXJIT_HW_FP4FP6 0
#define MXJIT_HW_FP8 0
#define MXJIT_HW_BF16X2 0
namespace mxjit_host_convert {
typedef unsigned char mx_u8;
typedef unsigned short mx_u16;
typedef unsigned int mx_u32;
typedef unsigned long long mx_u64;
typedef long long mx_i64;
inline mx_u32 mx_bits(float f) { return mx_as_uint(f); }
inline float mx_float(mx_u32 u) { return mx_as_float(u); }
inline int __clz(mx_u32 x) { return x ? __builtin_clz(x) : 32; }
#include "templates/convert.cuh"
}  // namespace mxjit_host_convert
#undef MX_D
#undef MXJIT_HW_UE8M0
#undef MXJIT_HW_FP4FP6
#undef MXJIT_HW_FP8
#undef MXJIT_HW_BF16X2

namespace {

using mxjit::ElemFormat;
using mxjit_host_convert::mx_encode_rne;
using mxjit_host_convert::mx_encode_sw;

/// Mismatches of one format against mx_encode_sw (sw) and the CPU reference (ref): how many, and
/// the first input with both codes.
struct Diff {
  uint64_t count = 0, checked = 0, ref_count = 0, ref_checked = 0;
  uint32_t input = 0, fast = 0, reference = 0, ref_input = 0, ref_fast = 0, ref_code = 0;
};

/// The encoder under test: mx_encode_rne, or an emulation of a pair conversion (Fast::code).
template <int EB, int MB, int SPEC, bool ISINT>
struct Rne {
  static constexpr bool kNanFree = false;  // NaN inputs are compared too
  static uint32_t code(float v) { return mx_encode_rne<EB, MB, SPEC, ISINT>(v); }
};

/// Every pattern against mx_encode_sw; with `ref`, also against reference::encode_rne.
template <int EB, int MB, int SPEC, bool ISINT, class Fast>
void compare(ElemFormat elem, uint32_t u, bool ref, Diff& d) {
  const float v = mx_as_float(u);
  if (Fast::kNanFree && v != v) return;
  const uint32_t f = Fast::code(v), r = mx_encode_sw<EB, MB, SPEC, ISINT>(v, false, 0u);
  ++d.checked;
  if (f != r && d.count++ == 0) {
    d.input = u;
    d.fast = f;
    d.reference = r;
  }
  if (!ref) return;
  const uint32_t c = mxjit::reference::encode_rne(elem, v);
  ++d.ref_checked;
  if (f != c && d.ref_count++ == 0) {
    d.ref_input = u;
    d.ref_fast = f;
    d.ref_code = c;
  }
}

/// All 2^23 mantissas (both signs) of the biased FP32 exponents from half the smallest
/// subnormal's quantum (exclusive: one below) to past the largest normal; 0, 1, the patterns
/// 2^s and 2^s +- 1 (every half-quantum position) and all-ones for every other exponent, 0 (FP32
/// subnormals) and 255 (Inf, NaNs) included.
/// Every 61st pattern of the full exponents and every listed one goes to the CPU reference too.
template <int EB, int MB, int SPEC, bool ISINT, class Fast>
Diff sweep(ElemFormat elem) {
  constexpr int kBias = ISINT ? 0 : (1 << (EB - 1)) - 1;
  constexpr int kEmin = ISINT ? 0 : 1 - kBias;  // MXINT8: quantum 2^-MB
  constexpr int kMaxField = ISINT ? 0 : (SPEC == 2 ? (1 << EB) - 2 : (1 << EB) - 1);
  constexpr int kEmax = ISINT ? 1 : kMaxField - kBias;  // of the largest finite value (127/64: 1)
  constexpr int lo = 127 + kEmin - MB - 2, hi = 127 + kEmax + 2;
  static_assert(lo > 0 && hi < 255);
  Diff d;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 256; ++e) {
      const uint32_t base = sign | (e << 23);
      if (int(e) >= lo && int(e) <= hi) {
        for (uint32_t m = 0; m < (1u << 23); ++m) compare<EB, MB, SPEC, ISINT, Fast>(elem, base | m, m % 61 == 0, d);
        continue;
      }
      compare<EB, MB, SPEC, ISINT, Fast>(elem, base | 0x7fffffu, true, d);
      compare<EB, MB, SPEC, ISINT, Fast>(elem, base, true, d);
      for (int s = 0; s < 23; ++s)
        for (uint32_t m : {(1u << s) - 1u, 1u << s, (1u << s) + 1u})
          compare<EB, MB, SPEC, ISINT, Fast>(elem, base | (m & 0x7fffffu), true, d);
    }
  return d;
}

template <int EB, int MB, int SPEC, bool ISINT, class Fast = Rne<EB, MB, SPEC, ISINT>>
void check_format(ElemFormat elem, const char* what = "rne") {
  const auto t0 = std::chrono::steady_clock::now();
  const Diff d = sweep<EB, MB, SPEC, ISINT, Fast>(elem);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string name = elem.str() + " " + what;
  MESSAGE(fmt::format("{}: {} inputs against mx_encode_sw, {} mismatches; {} against the CPU reference, {} mismatches; {:.2f} s",
                      name, d.checked, d.count, d.ref_checked, d.ref_count, s));
  INFO(fmt::format("{}: first mismatch at input {:#010x}: rne {:#x}, sw {:#x}", name, d.input, d.fast, d.reference));
  CHECK(d.count == 0);
  INFO(fmt::format("{}: first mismatch at input {:#010x}: rne {:#x}, reference {:#x}", name, d.ref_input, d.ref_fast,
                   d.ref_code));
  CHECK(d.ref_count == 0);
}

}  // namespace

// The exact template arguments codegen/emit_common.cpp's fmt_args gives each format.
TEST_CASE("mx_encode_rne equals mx_encode_sw without stochastic rounding, all six formats" *
          doctest::test_suite("slow")) {
  check_format<4, 3, 1, false>(mxjit::e4m3);
  check_format<5, 2, 2, false>(mxjit::e5m2);
  check_format<2, 3, 0, false>(mxjit::e2m3);
  check_format<3, 2, 0, false>(mxjit::e3m2);
  check_format<2, 1, 0, false>(mxjit::e2m1);
  check_format<1, 6, 0, true>(mxjit::int8);
}

namespace {

using mxjit_host_convert::mx_e2m1x2_fma;
using mxjit_host_convert::mx_e2m3x2_via_e4m3;
using mxjit_host_convert::mx_e3m2x2_via_e5m2;

/// One lane of a pair emulation: `Hi` puts v in the high lane. Two partners (NaN and -Inf, or for
/// the NaN-free forms -Inf and 1.5) must give the same code: a lane leaking into the other shows.
template <uint32_t (*Pair)(float, float), int Bits, bool Hi, bool NanFree = false>
struct Lane {
  static constexpr bool kNanFree = NanFree;
  static uint32_t code(float v) {
    const uint32_t mask = (1u << Bits) - 1u;
    auto lane = [&](uint32_t p) { return Hi ? Pair(mx_as_float(p), v) >> Bits : Pair(v, mx_as_float(p)) & mask; };
    const uint32_t c = lane(NanFree ? 0x3fc00000u : 0x7fc00001u);
    return lane(0xff800000u) == c ? c : 0xdeadu;
  }
};
uint32_t e2m1_pair(float lo, float hi) { return mx_e2m1x2_fma(lo, hi); }
uint32_t e2m3_pair(float lo, float hi) { return mx_e2m3x2_via_e4m3(lo, hi); }
uint32_t e3m2_pair(float lo, float hi) { return mx_e3m2x2_via_e5m2(lo, hi); }
uint32_t e2m1_finite(float lo, float hi) { return mxjit_host_convert::mx_e2m1x2_fma_finite(lo, hi); }
uint32_t e2m3_finite(float lo, float hi) { return mxjit_host_convert::mx_e2m3x2_via_e4m3_finite(lo, hi); }
uint32_t e3m2_finite(float lo, float hi) { return mxjit_host_convert::mx_e3m2x2_via_e5m2_finite(lo, hi); }
uint32_t int8_finite(float lo, float hi) { return mxjit_host_convert::mx_int8x2_finite(lo, hi); }

}  // namespace

// The pair encoders hw_pair_fn picks for FP4/FP6 on sm_89/sm_90 (FMA magic; the FP8 cvt, here its
// software twin, which the GPU tests hold to the hardware) and for MXINT8 everywhere (the FP32
// adder): both lanes, every swept pattern.
TEST_CASE("FP4/FP6/INT8 pair emulations equal mx_encode_sw, both lanes" * doctest::test_suite("slow")) {
  check_format<2, 1, 0, false, Lane<e2m1_pair, 4, false>>(mxjit::e2m1, "fma lo");
  check_format<2, 1, 0, false, Lane<e2m1_pair, 4, true>>(mxjit::e2m1, "fma hi");
  check_format<2, 3, 0, false, Lane<e2m3_pair, 8, false>>(mxjit::e2m3, "via e4m3 lo");
  check_format<2, 3, 0, false, Lane<e2m3_pair, 8, true>>(mxjit::e2m3, "via e4m3 hi");
  check_format<3, 2, 0, false, Lane<e3m2_pair, 8, false>>(mxjit::e3m2, "via e5m2 lo");
  check_format<3, 2, 0, false, Lane<e3m2_pair, 8, true>>(mxjit::e3m2, "via e5m2 hi");
  // The _finite forms (E8M0 scales, whose NaN blocks the kernels overwrite): every non-NaN input.
  check_format<2, 1, 0, false, Lane<e2m1_finite, 4, false, true>>(mxjit::e2m1, "fma finite lo");
  check_format<2, 1, 0, false, Lane<e2m1_finite, 4, true, true>>(mxjit::e2m1, "fma finite hi");
  check_format<2, 3, 0, false, Lane<e2m3_finite, 8, true, true>>(mxjit::e2m3, "via e4m3 finite hi");
  check_format<3, 2, 0, false, Lane<e3m2_finite, 8, false, true>>(mxjit::e3m2, "via e5m2 finite lo");
  check_format<1, 6, 0, true, Lane<int8_finite, 8, false, true>>(mxjit::int8, "magic finite lo");
  check_format<1, 6, 0, true, Lane<int8_finite, 8, true, true>>(mxjit::int8, "magic finite hi");
}

// The MXFP4 encoder of bf16 inputs on sm_90 (bf16x2 arithmetic; here its host twin, which the
// GPU tests hold to the hardware): every non-NaN bf16 value v in each of the eight element
// positions, beside partners that rotate through codes of both signs, times every E8M0
// multiplier, against mx_encode_sw of the FP32 products (what the FP32 path encodes).
TEST_CASE("E2M1 from bf16 words equals mx_encode_sw of the FP32 products, every bf16 and multiplier" *
          doctest::test_suite("slow")) {
  using namespace mxjit_host_convert;
  // 6, -0.5, 0, -3, 1.25, -0 and a negative subnormal, beside v.
  const uint32_t partners[] = {0x40c0u, 0xbf00u, 0x0000u, 0xc040u, 0x3fa0u, 0x8000u, 0x8001u};
  int64_t checked = 0, mismatches = 0;
  uint32_t first_v = 0, first_byte = 0, first_word = 0, first_want = 0;
  for (uint32_t byte = 0; byte <= 254; ++byte) {
    const float mult = mx_e8m0_recip(byte);
    for (uint32_t v = 0; v < 0x10000u; ++v) {
      if ((v & 0x7fffu) > 0x7f80u) continue;  // NaN
      for (uint32_t odd = 0; odd < 2; ++odd) {
        uint32_t e[8], w[4] = {0u, 0u, 0u, 0u}, want = 0;
        for (uint32_t k = 0; k < 8; ++k) {
          e[k] = (k & 1) == odd ? v : partners[(v + k + byte) % 7];
          w[k >> 1] |= e[k] << (16 * (k & 1));
          want |= mx_encode_sw<2, 1, 0, false>(mx_float(e[k] << 16) * mult, false, 0u) << (4 * k);
        }
        const mx_u32 got = mx_e2m1x8_bf16_finite(w[0], w[1], w[2], w[3], mult);
        checked += 8;
        if (got != want && mismatches++ == 0) first_v = v, first_byte = byte, first_word = got, first_want = want;
      }
    }
  }
  MESSAGE(fmt::format("e2m1 from bf16 words: {} codes checked, {} mismatches", checked, mismatches));
  INFO(fmt::format("first mismatch: bf16 {:#06x}, scale byte {}: {:#010x}, want {:#010x}", first_v, first_byte, first_word,
                   first_want));
  CHECK(mismatches == 0);
}

// The NVFP4 encoder of FP32 values (mx_e2m1x8_f32_finite, no NaN among them): every position
// against mx_encode_sw, over E2M1's ties and their neighbours, zeros, subnormals, infinities, the
// largest floats and random values of every exponent where rounding happens; and the sign words
// from bf16 inputs (mx_e2m1_signs8_bf16) against the values' own signs.
TEST_CASE("E2M1 eight at once from FP32 values equals mx_encode_sw; bf16 sign words") {
  using namespace mxjit_host_convert;
  std::vector<float> pool = {0.0f, -0.0f, INFINITY, -INFINITY, 3.4028235e38f, -3.4028235e38f, 1e-45f, -1e-45f, 1.1754942e-38f, 6.0f, 8.0f, 7.0f};
  for (float t : {0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f}) {
    for (float v : {t, std::nextafter(t, 0.0f), std::nextafter(t, 100.0f)}) {
      pool.push_back(v);
      pool.push_back(-v);
    }
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
  };
  for (int i = 0; i < 4000; ++i) {  // exponents 2^-130 .. 2^4 and every sign
    const uint32_t e = uint32_t(next() % 135u), u = (uint32_t(next()) & 0x807fffffu) | (e << 23);
    pool.push_back(mx_float(u));
  }
  int64_t checked = 0, mismatches = 0;
  float first[8] = {};
  auto check = [&](const float* y) {
    uint32_t want = 0;
    for (int e = 0; e < 8; ++e) want |= mx_encode_sw<2, 1, 0, false>(y[e], false, 0u) << (4 * e);
    const uint32_t got = mx_e2m1x8_f32_finite(y, mx_e2m1_signs8_f32(y));
    checked += 8;
    if (got != want && mismatches++ == 0) std::copy(y, y + 8, first);
  };
  for (size_t i = 0; i < pool.size(); ++i)
    for (int k = 0; k < 8; ++k) {  // each value in each position, beside other pool values
      float y[8];
      for (int e = 0; e < 8; ++e) y[e] = e == k ? pool[i] : pool[(i * 7 + size_t(e) * 131 + 1) % pool.size()];
      check(y);
    }
  for (int i = 0; i < 200000; ++i) {
    float y[8];
    for (float& v : y) v = pool[next() % pool.size()];
    check(y);
  }
  MESSAGE(fmt::format("e2m1 eight at once: {} codes checked, {} mismatches", checked, mismatches));
  INFO(fmt::format("first mismatch: {} {} {} {} {} {} {} {}", first[0], first[1], first[2], first[3], first[4], first[5], first[6], first[7]));
  CHECK(mismatches == 0);

  int64_t sign_mismatches = 0;
  for (int i = 0; i < 100000; ++i) {
    uint32_t w[4];
    float y[8];
    for (int j = 0; j < 4; ++j) w[j] = uint32_t(next());
    for (int e = 0; e < 8; ++e) y[e] = mx_float((w[e >> 1] >> (16 * (e & 1))) << 16);
    if (mx_e2m1_signs8_bf16(w[0], w[1], w[2], w[3]) != mx_e2m1_signs8_f32(y)) ++sign_mismatches;
  }
  CHECK(sign_mismatches == 0);
}

TEST_CASE("mx_encode_rne: known codes") {
  // E2M1: ties to even, subnormal 0.5, saturation, -0, NaN -> 0.
  CHECK(mx_encode_rne<2, 1, 0, false>(0.25f) == 0x0u);
  CHECK(mx_encode_rne<2, 1, 0, false>(0.75f) == 0x2u);
  CHECK(mx_encode_rne<2, 1, 0, false>(2.5f) == 0x4u);
  CHECK(mx_encode_rne<2, 1, 0, false>(5.0f) == 0x6u);
  CHECK(mx_encode_rne<2, 1, 0, false>(-1e30f) == 0xfu);
  CHECK(mx_encode_rne<2, 1, 0, false>(-0.0f) == 0x8u);
  CHECK(mx_encode_rne<2, 1, 0, false>(mx_as_float(0xffc00000u)) == 0x0u);
  // E4M3: 464 ties down to 448, Inf saturates with its sign, NaN is 0x7f.
  CHECK(mx_encode_rne<4, 3, 1, false>(464.0f) == 0x7eu);
  CHECK(mx_encode_rne<4, 3, 1, false>(mx_as_float(0xff800000u)) == 0xfeu);
  CHECK(mx_encode_rne<4, 3, 1, false>(mx_as_float(0xff800001u)) == 0x7fu);
  // MXINT8: two's complement, -0 -> 0, +-127 saturation.
  CHECK(mx_encode_rne<1, 6, 0, true>(-1.0f) == 0xc0u);
  CHECK(mx_encode_rne<1, 6, 0, true>(-0.0f) == 0x0u);
  CHECK(mx_encode_rne<1, 6, 0, true>(-3.0f) == 0x81u);
  CHECK(mx_encode_rne<1, 6, 0, true>(3.0f) == 0x7fu);
}

namespace {

/// Every code of one format: mx_decode (shift and one multiply) against mx_decode_sw, bit for bit,
/// and against the CPU reference's exact decode (NaN codes: both NaN).
template <int EB, int MB, int SPEC, bool ISINT>
int decode_mismatches(ElemFormat elem) {
  int bad = 0;
  for (uint32_t c = 0; c < (1u << elem.bits()); ++c) {
    const float f = mxjit_host_convert::mx_decode<EB, MB, SPEC, ISINT>(c);
    const float s = mxjit_host_convert::mx_decode_sw<EB, MB, SPEC, ISINT>(c);
    const double r = mxjit::reference::decode(elem, uint8_t(c));
    const bool same = mx_as_uint(f) == mx_as_uint(s) && (r != r ? f != f : double(f) == r);
    if (!same && bad++ < 4) MESSAGE(fmt::format("{} code {:#x}: decode {:#010x}, sw {:#010x}, reference {}", elem.str(), c, mx_as_uint(f), mx_as_uint(s), r));
  }
  return bad;
}

}  // namespace

TEST_CASE("mx_decode equals mx_decode_sw and the CPU reference for every code of every format") {
  CHECK(decode_mismatches<4, 3, 1, false>(mxjit::e4m3) == 0);
  CHECK(decode_mismatches<5, 2, 2, false>(mxjit::e5m2) == 0);
  CHECK(decode_mismatches<2, 3, 0, false>(mxjit::e2m3) == 0);
  CHECK(decode_mismatches<3, 2, 0, false>(mxjit::e3m2) == 0);
  CHECK(decode_mismatches<2, 1, 0, false>(mxjit::e2m1) == 0);
  CHECK(decode_mismatches<1, 6, 0, true>(mxjit::int8) == 0);
  // User formats (fp_format(e, m)): the widest and narrowest exponents the DSL allows.
  CHECK(decode_mismatches<3, 4, 0, false>(mxjit::fp_format(3, 4)) == 0);
  CHECK(decode_mismatches<1, 2, 0, false>(mxjit::fp_format(1, 2)) == 0);
  CHECK(decode_mismatches<4, 1, 0, false>(mxjit::fp_format(4, 1)) == 0);
}

// The kernels' FLOOR rule (the biased exponent field minus emax, clamped) against the CPU
// reference's for every element format: every bf16 magnitude (the amax of a bf16 block), and for
// each FP32 exponent field, subnormals included, the mantissas 0, 1, 2^s - 1, 2^s and all-ones.
TEST_CASE("mx_scale_floor equals the reference FLOOR byte, every format, bf16 and FP32 amax") {
  using mxjit_host_convert::mx_scale_floor;
  int64_t checked = 0, mismatches = 0;
  for (const ElemFormat& elem : {mxjit::e4m3, mxjit::e5m2, mxjit::e2m3, mxjit::e3m2, mxjit::e2m1, mxjit::int8}) {
    auto check = [&](uint32_t a) {
      const uint32_t want = mxjit::reference::e8m0_scale_byte(mxjit::ScaleRule::floor, mxjit::NanPolicy::nan_block, elem, mx_as_float(a));
      ++checked;
      if (mx_scale_floor(a, elem.emax()) != want && mismatches++ == 0)
        MESSAGE(fmt::format("{}: amax {:#010x}: kernel {}, reference {}", elem.str(), a, mx_scale_floor(a, elem.emax()), want));
    };
    for (uint32_t v = 1; v < 0x7f80u; ++v) check(v << 16);
    for (uint32_t e = 0; e < 255; ++e) {
      check((e << 23) | 0x7fffffu);
      if (e) check(e << 23);
      for (int sh = 0; sh < 23; ++sh)
        for (uint32_t m : {(1u << sh) - 1u, 1u << sh}) if (e || m) check((e << 23) | m);
    }
  }
  MESSAGE(fmt::format("FLOOR: {} amax checked, {} mismatches", checked, mismatches));
  CHECK(mismatches == 0);
}

// emit_direct.cpp's scatter_fetch recovers a block's scale byte from the word its lane shares:
// the flag (1 zero block, 2 NaN block) or the multiplier 2^(127 - byte)'s FP32 bits, which are at
// least 3 and carry 254 - byte in the exponent field (0 for byte 254: the subnormal 2^-127).
TEST_CASE("the E8M0 multiplier's bits give back its byte, and are never a flag") {
  using namespace mxjit_host_convert;
  for (uint32_t byte = 0; byte <= 254; ++byte) {
    CAPTURE(byte);
    const mx_u32 w = mx_bits(mx_e8m0_recip(byte));
    CHECK(w >= 3u);
    CHECK(254u - (w >> 23) == byte);
    CHECK(mx_float(w) * mx_e8m0_decode(byte) == 1.0f);
  }
}

TEST_CASE("Saturate::none: mx_fp8_nosat over the saturating code equals the reference, E4M3 and E5M2") {
  using mxjit_host_convert::mx_fp8_nosat;
  // Every 4099th FP32 pattern, and every pattern within 4096 ulps of the overflow edges (448,
  // 464, 480; 57344, 61440, 65536), of +-Inf and of the NaNs next to it, with both signs.
  std::vector<uint32_t> us;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) us.push_back(uint32_t(u));
  for (float edge : {448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f, 65536.0f, std::numeric_limits<float>::infinity()})
    for (int64_t d = -4096; d <= 4096; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) us.push_back(uint32_t(int64_t(mx_as_uint(edge)) + d) | sign);
  uint64_t bad = 0, overflowed = 0;
  for (uint32_t u : us) {
    const float v = mx_as_float(u);
    const uint32_t e4 = mx_fp8_nosat<false>(v, mx_encode_rne<4, 3, 1, false>(v));
    const uint32_t e5 = mx_fp8_nosat<true>(v, mx_encode_rne<5, 2, 2, false>(v));
    const uint32_t r4 = mxjit::reference::encode_rne(mxjit::e4m3, v, mxjit::Saturate::none);
    const uint32_t r5 = mxjit::reference::encode_rne(mxjit::e5m2, v, mxjit::Saturate::none);
    overflowed += (r4 & 0x7fu) == 0x7fu && !std::isnan(v);
    if (e4 != r4 || e5 != r5) {
      if (bad++ < 5) MESSAGE(fmt::format("0x{:08x}: e4m3 0x{:02x} (reference 0x{:02x}), e5m2 0x{:02x} (reference 0x{:02x})", u, e4, r4, e5, r5));
    }
  }
  CHECK(bad == 0);
  CHECK(overflowed > 1000);  // the overflow branch was exercised
  // torch's cast (research note §1.3): 449 and 464 give 0x7E, 465 and +Inf NaN (0x7F), -Inf 0xFF.
  CHECK(mx_fp8_nosat<false>(464.0f, mx_encode_rne<4, 3, 1, false>(464.0f)) == 0x7Eu);
  CHECK(mx_fp8_nosat<false>(465.0f, mx_encode_rne<4, 3, 1, false>(465.0f)) == 0x7Fu);
  CHECK(mx_fp8_nosat<false>(-std::numeric_limits<float>::infinity(), 0xFEu) == 0xFFu);
  CHECK(mx_fp8_nosat<true>(61440.0f, mx_encode_rne<5, 2, 2, false>(61440.0f)) == 0x7Cu);
}

TEST_CASE("Saturate::none: mx_fp8_no_overflow holds exactly where mx_fp8_nosat changes no lane of a chunk") {
  using mxjit_host_convert::mx_fp8_no_overflow;
  using mxjit_host_convert::mx_fp8_nosat;
  // Chunks of 8 drawn from every pattern within 64 ulps of the overflow edges (E4M3 448, 464,
  // 480; E5M2 57344, 61440, 65536), +-Inf, NaN, 0 and small values: the test is sound (true only
  // where no lane overflows) and exact (false only where one does or every lane is NaN).
  std::vector<float> pool = {0.0f,
                             -0.0f,
                             1.0f,
                             -3.5f,
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};
  for (float edge : {448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f, 65536.0f})
    for (int64_t d = -64; d <= 64; ++d) pool.push_back(mx_as_float(uint32_t(int64_t(mx_as_uint(edge)) + d)));
  std::mt19937_64 rng(7);
  uint64_t bad = 0, fast[2] = {0, 0}, slow[2] = {0, 0};
  for (int it = 0; it < 400000; ++it) {
    float y[8];
    const int spread = it % 3 == 0 ? 8 : 1 + it % 4;  // mostly small values, some chunks of edges only
    for (float& v : y) v = rng() % 8 < uint64_t(spread) ? pool[rng() % pool.size()] : float(rng() % 400) * 0.5f;
    for (int e5 = 0; e5 < 2; ++e5) {
      bool changed = false, all_nan = true;
      for (float v : y) {
        const uint32_t c = e5 ? mx_encode_rne<5, 2, 2, false>(v) : mx_encode_rne<4, 3, 1, false>(v);
        changed |= (e5 ? mx_fp8_nosat<true>(v, c) : mx_fp8_nosat<false>(v, c)) != c;
        all_nan &= std::isnan(v);
      }
      const bool ok = e5 ? mx_fp8_no_overflow<true>(y) : mx_fp8_no_overflow<false>(y);
      bad += ok == (changed || all_nan);
      (ok ? fast : slow)[e5] += 1;
    }
  }
  CHECK(bad == 0);
  for (int e5 = 0; e5 < 2; ++e5) {  // both outcomes for both formats
    CHECK(fast[e5] > 10000);
    CHECK(slow[e5] > 10000);
  }
}

TEST_CASE("mx_drop_nan2: NaN lanes of |x| words become +0, every bf16 and f16 lane in both halves") {
  using mxjit_host_convert::mx_drop_nan2;
  uint64_t bad = 0;
  for (uint32_t a = 0; a < 0x8000u; ++a)
    for (uint32_t b : {0u, 1u, 0x7c00u, 0x7c01u, 0x7f80u, 0x7f81u, 0x7fffu, a}) {
      const uint32_t w = a | (b << 16);
      auto want = [&](uint32_t top) { return (a > top ? 0u : a) | ((b > top ? 0u : b) << 16); };
      bad += mx_drop_nan2(w, 0x007f007fu) != want(0x7f80u);  // bf16: NaN above 0x7f80
      bad += mx_drop_nan2(w, 0x03ff03ffu) != want(0x7c00u);  // f16: NaN above 0x7c00
      const uint32_t sw = b | (a << 16);
      bad += mx_drop_nan2(sw, 0x007f007fu) != ((b > 0x7f80u ? 0u : b) | ((a > 0x7f80u ? 0u : a) << 16));
    }
  CHECK(bad == 0);
}

TEST_CASE(
    "the bracketed division (mx_div_bracket): where both ends give one code it is the code of x / d rounded once" *
    doctest::test_suite("slow")) {
  // The divisors: vLLM's scales RN(max(amax, 1e-10) / 448) for bf16 amax across the range, random
  // FP32 magnitudes of both signs, powers of two, and the edges of the bracket's range of d.
  std::vector<float> ds;
  for (uint32_t a = 0; a < 0x7f80u; a += 101) ds.push_back(std::max(mx_as_float(a << 16), 1e-10f) / 448.0f);
  uint64_t z = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 160; ++i) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    ds.push_back(mx_as_float(uint32_t(z >> 32) & 0xbfffffffu));  // exponents below 2^1 and their negatives
    ds.push_back(mx_as_float((uint32_t(z >> 32) & 0x3fffffffu) + 0x3f000000u));  // larger exponents too
  }
  for (int k = -126; k <= 127; k += 9) ds.push_back(std::ldexp(1.0f, k));
  for (uint32_t u :
       {0x01000000u, 0x01000001u, 0x7cffffffu, 0x00ffffffu, 0x7d000000u, 0x00000001u, 0x7f800000u, 0x7fc00000u})
    ds.push_back(mx_as_float(u));
  struct Case {
    const char* what;
    bool e5m2;
    int clamp;  // 0 none, 1 fminf(fmaxf(., lo), hi) (vLLM's), 2 with NaN kept
    float lo, hi;
  };
  const Case cases[] = {{"e4m3, vLLM's clamp to +-448", false, 1, -448.0f, 448.0f},
                        {"e4m3, a clamp that binds (+-300)", false, 1, -300.0f, 300.0f},
                        {"e4m3, a NaN-keeping clamp that binds", false, 2, -300.0f, 300.0f},
                        {"e4m3, no clamp", false, 0, 0.0f, 0.0f},
                        {"e5m2, clamp to +-57344", true, 1, -57344.0f, 57344.0f}};
  for (const Case& c : cases) {
    const float top = c.e5m2 ? 57344.0f : 448.0f;
    const bool binds = c.clamp && (c.lo > -top || c.hi < top);
    auto code = [&](float v) { return c.e5m2 ? mx_encode_rne<5, 2, 2, false>(v) : mx_encode_rne<4, 3, 1, false>(v); };
    auto clamp = [&](float v) {
      if (c.clamp == 1) return mx_fmin_num_c(mx_fmax_num_c(v, c.lo), c.hi);
      if (c.clamp == 2) return mx_fmin_nan_c(mx_fmax_nan_c(v, c.lo), c.hi);
      return v;
    };
    // What the generated code applies to each end (codegen bracket_end).
    auto end = [&](float v, int side) {
      if (binds) return clamp(v);
      return c.clamp == 1 && side == 0 ? mx_fmax_num_c(v, -top) : v;
    };
    uint64_t pairs = 0, divided = 0, divided_nan = 0, bad = 0;  // pairs with d in the bracket's range
    for (float d : ds) {
      const auto b0 = mx_div_bracket(d);
      // The GPU's r is rcp.approx (within 2 ulp of 1 / d): the ends from r off by -2, 0 and +2 ulp.
      for (int off : {-2, 0, 2}) {
        const float r = mx_as_float(mx_as_uint(1.0f / d) + uint32_t(off));
        const float rl = b0.miss ? 0.0f : r * 0x1.ffffep-1f, rh = b0.miss ? 0.0f : r * 0x1.00001p+0f;
        for (uint32_t h = 0; h < 0x10000u; ++h) {
          const float x = mx_as_float(h << 16);
          const uint32_t want = code(clamp(x / d));
          const uint32_t a = code(end(x * rl, 0)), b = code(end(x * rh, 1));
          if (b0.miss) continue;
          ++pairs;
          if (a != b) {
            ++(x != x ? divided_nan : divided);
            continue;
          }
          if (a != want && bad++ < 5)
            MESSAGE(fmt::format("{}: x 0x{:04x} / d 0x{:08x} (r {:+d} ulp): 0x{:02x}, the division 0x{:02x}", c.what, h,
                                mx_as_uint(d), off, a, want));
        }
      }
    }
    INFO(c.what);
    CHECK(bad == 0);
    // Besides NaN (where the clamp drops it), only values near a rounding boundary divide.
    CHECK(divided < pairs / 1000);
    MESSAGE(fmt::format("{}: {} pairs, {} through the division, and {} NaN", c.what, pairs, divided, divided_nan));
  }
}
