// E8M0 scale rules: worked examples (derived by hand in the comments), RCEIL boundaries, special
// blocks under both NaN policies, custom expressions, FP32 scales.
#include <doctest/doctest.h>

#include <bit>
#include <climits>
#include <cstdint>
#include <cmath>
#include <limits>

#include "dsl/errors.hpp"
#include "reference_test_util.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/scale_rules.hpp"

using namespace mxjit;
using namespace mxjit::reference;
using mxjit::test::quantize_1d;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};
constexpr NanPolicy kPolicies[] = {NanPolicy::nan_block, NanPolicy::satfinite};
}  // namespace

TEST_CASE("scale rules: amax 500 in E4M3 (docs/design.md §4 worked example)") {
  // FLOOR: floor(log2 500) = 8, minus emax 8 -> 2^0 (byte 127); 500 clips to 448 (0x7E).
  auto f = quantize_1d({500.0f, 1.0f}, e4m3, ScaleRule::floor);
  CHECK(f.scales[0] == 127);
  CHECK(f.codes[0] == 0x7E);
  CHECK(f.codes[1] == 0x38);  // 1.0 = exponent field 7, mantissa 0
  // RCEIL: 500 * fp32(1/448) = 1.116 -> ceil(log2) = 1 -> byte 128; 500/2 = 250 lies between 240
  // and 256 (spacing 16), past the midpoint 248 -> 256 = 0x78 (exponent field 15, mantissa 0).
  auto r = quantize_1d({500.0f, 1.0f}, e4m3, ScaleRule::rceil);
  CHECK(r.scales[0] == 128);
  CHECK(r.codes[0] == 0x78);
  CHECK(r.codes[1] == 0x30);  // 0.5
}

TEST_CASE("scale rules: amax 300 and 150 in E4M3, all four rules") {
  // 300 = 1.171875 * 2^8.
  //  FLOOR: 8 - 8 = 0 -> 127; element 300 between 288 and 320 (mid 304) -> 288 = 1.125*2^8 = 0x79.
  //  RCEIL: 300/448 = 0.67 -> ceil(log2) = 0 -> 127.
  //  CEIL:  ceil(log2 300) = 9, minus floor(log2 448) = 8 -> 1 -> 128; element 150 -> 144 or 160
  //         (spacing 16, mid 152) -> 144 = 1.125*2^7 = 0x71.
  //  EVEN:  1.171875 * 8 = 9.375 -> 9 -> 1.125 * 2^8 = 288 -> floor 8 -> 0 -> 127.
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e4m3, 300.0f) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, 300.0f) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::ceil, NanPolicy::nan_block, e4m3, 300.0f) == 128);
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, 300.0f) == 127);
  CHECK(quantize_1d({300.0f}, e4m3, ScaleRule::floor).codes[0] == 0x79);
  CHECK(quantize_1d({300.0f}, e4m3, ScaleRule::ceil).codes[0] == 0x71);
  // 150 = 1.171875 * 2^7.
  //  FLOOR: 7 - 8 = -1 -> 126; element 300 -> 288 = 0x79.
  //  RCEIL: 150/448 = 0.335 -> ceil(log2) = -1 -> 126.
  //  CEIL:  8 - 8 = 0 -> 127; element 150 -> 144 = 0x71.
  //  EVEN:  9.375 -> 9 -> 144 -> floor 7 -> -1 -> 126.
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e4m3, 150.0f) == 126);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, 150.0f) == 126);
  CHECK(e8m0_scale_byte(ScaleRule::ceil, NanPolicy::nan_block, e4m3, 150.0f) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, 150.0f) == 126);
  CHECK(quantize_1d({150.0f}, e4m3, ScaleRule::floor).codes[0] == 0x79);
  // EVEN carries into the next binade: 496 = 1.9375 * 2^8 -> 15.5 -> 16 (even) -> 2^9 -> 1 -> 128;
  // 480 = 1.875 * 2^8 -> 15 exactly -> 127.
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, 496.0f) == 128);
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, 480.0f) == 127);
  // FP4 (emax 2, max 6): amax 6 -> FLOOR 2 - 2 = 0 (127); RCEIL 6 * fp32(1/6) = 1 -> 127;
  // amax 7 -> FLOOR 127 (7 clips to 6), RCEIL 7/6 -> 1 -> 128.
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e2m1, 6.0f) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e2m1, 6.0f) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e2m1, 7.0f) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e2m1, 7.0f) == 128);
}

TEST_CASE("scale rules: RCEIL byte boundaries of the product amax * fp32(1/max)") {
  // Find an amax whose FP32 product with fp32(1/max_normal) is exactly `v`, then check the byte.
  auto amax_for = [](ElemFormat f, float v) {
    const float inv = 1.0f / float(f.max_normal());
    float a = float(double(v) * f.max_normal());
    for (int i = 0; i < 64 && a * inv != v; ++i) a = std::nextafter(a, a * inv < v ? kInf : 0.0f);
    REQUIRE(a * inv == v);
    return a;
  };
  const float one_up = std::nextafter(1.0f, 2.0f);
  const float p127 = std::ldexp(1.0f, 127), p127_up = std::nextafter(p127, kInf);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, amax_for(e4m3, std::ldexp(1.0f, -127))) == 0);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, amax_for(e4m3, 1.0f)) == 127);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, amax_for(e4m3, one_up)) == 128);
  // 2^127 * 448 overflows FP32: INT8 (max 127/64) reaches the top of the range.
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, int8, amax_for(int8, p127)) == 254);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, int8, amax_for(int8, p127_up)) == 254);  // 2^128 clamps
  CHECK(e8m0_rule_exponent(ScaleRule::rceil, int8, amax_for(int8, p127_up)) == 128);
  // the product underflows to 0: byte 0; the least subnormal amax
  CHECK(e8m0_rule_exponent(ScaleRule::rceil, e4m3, std::ldexp(1.0f, -149)) == INT_MIN);
  CHECK(e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, std::ldexp(1.0f, -149)) == 0);
  // FLOOR / CEIL at the ends: FLT_MAX -> floor 127 - 8 = 119 (246); 2^-149 -> clamps to 0
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e4m3, std::numeric_limits<float>::max()) == 246);
  CHECK(e8m0_scale_byte(ScaleRule::ceil, NanPolicy::nan_block, e4m3, std::numeric_limits<float>::max()) == 247);
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e4m3, std::ldexp(1.0f, -149)) == 0);
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, int8, std::ldexp(1.0f, -127)) == 0);
  CHECK(e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, int8, std::ldexp(1.0f, -126)) == 1);
}

TEST_CASE("scale rules: special blocks under both NaN policies and every rule") {
  for (ScaleRule rule : kRules) {
    for (NanPolicy policy : kPolicies) {
      CAPTURE(int(rule));
      CAPTURE(int(policy));
      // zeros (of both signs): byte 0, every element +0
      auto z = quantize_1d({0.0f, -0.0f, 0.0f, -0.0f}, e4m3, rule, policy);
      CHECK(z.scales[0] == 0);
      for (int i = 0; i < 4; ++i) CHECK(z.codes[size_t(i)] == 0x00);
      // NaN: 0xFF, elements NaN (E4M3) or 0 (FP4)
      auto n = quantize_1d({1.0f, kNaN, -2.0f, kInf}, e4m3, rule, policy);
      CHECK(n.scales[0] == 0xFF);
      for (int i = 0; i < 4; ++i) CHECK(n.codes[size_t(i)] == 0x7F);
      auto n4 = quantize_1d({1.0f, kNaN, -2.0f, 3.0f}, e2m1, rule, policy);
      CHECK(n4.scales[0] == 0xFF);
      CHECK(n4.codes[0] == 0x00);
      CHECK(n4.codes[1] == 0x00);
      // Inf: 0xFF under nan_block, 0xFE under satfinite with Inf -> max and the rest tiny
      auto inf = quantize_1d({1.0f, -kInf, 448.0f, 0.0f}, e4m3, rule, policy);
      if (policy == NanPolicy::nan_block) {
        CHECK(inf.scales[0] == 0xFF);
        for (int i = 0; i < 4; ++i) CHECK(inf.codes[size_t(i)] == 0x7F);
      } else {
        CHECK(inf.scales[0] == 0xFE);
        CHECK(inf.codes[0] == 0x00);  // 1 * 2^-127 rounds to 0
        CHECK(inf.codes[1] == 0xFE);  // -Inf -> -448
        CHECK(inf.codes[2] == 0x00);
        CHECK(inf.codes[3] == 0x00);
      }
      // +-max: amax 448 -> FLOOR/EVEN/RCEIL/CEIL all 127 (448/448 = 1; ceil(log2 448) = 9 - 8 = 1
      // for CEIL -> 128)
      auto m = quantize_1d({448.0f, -448.0f}, e4m3, rule, policy);
      CHECK(m.scales[0] == (rule == ScaleRule::ceil ? 128 : 127));
      CHECK(m.codes[0] == (rule == ScaleRule::ceil ? 0x76 : 0x7E));  // 224 = 1.75 * 2^7
      CHECK(m.codes[1] == (rule == ScaleRule::ceil ? 0xF6 : 0xFE));
      // one huge value among tiny ones: 1e30 = 1.578 * 2^99. FLOOR, EVEN (1.578*8 = 12.6 -> 13, no
      // carry) and RCEIL (log2(1e30/448) = 90.85 -> 91) give e = 91 (byte 218): the element is
      // 1.578 * 2^8 = 403.9, between 384 and 416 (mid 400) -> 416 = 1.625 * 2^8 = 0x7D. CEIL gives
      // 100 - 8 = 92: 201.9 between 192 and 208 (mid 200) -> 208 = 0x75. Tiny values -> +-0.
      auto h = quantize_1d({1e-30f, 1e30f, -1e-30f, 3.0f}, e4m3, rule, policy);
      CHECK(h.codes[0] == 0x00);
      CHECK(h.codes[1] == (rule == ScaleRule::ceil ? 0x75 : 0x7D));
      CHECK(h.codes[2] == 0x80);
      CHECK(h.codes[3] == 0x00);
      CHECK(h.scales[0] == (rule == ScaleRule::ceil ? 219 : 218));
    }
  }
}

TEST_CASE("scale rules: subnormal inputs, kept and flushed") {
  // bf16 0x0001 = 2^-133: FLOOR e = -133 - 8 -> clamps to byte 0; element 2^-133 * 2^127 = 2^-6
  // = E4M3's smallest normal (0x08).
  auto b = quantize_1d({std::ldexp(1.0f, -133)}, e4m3, ScaleRule::floor);
  CHECK(b.scales[0] == 0);
  CHECK(b.codes[0] == 0x08);
  // FP32 2^-149: byte 0, element 2^-22 -> below half of 2^-9 -> +0
  auto f = quantize_1d({std::ldexp(1.0f, -149), std::ldexp(1.0f, -130)}, e4m3, ScaleRule::floor);
  CHECK(f.scales[0] == 0);
  CHECK(f.codes[0] == 0x00);
  CHECK(f.codes[1] == 0x20);  // 2^-130 * 2^127 = 2^-3: exponent field -3 + 7 = 4 -> 0x20
  // flushed: the block becomes a zero block
  auto z = quantize_1d({std::ldexp(1.0f, -149), -std::ldexp(1.0f, -130)}, e4m3, ScaleRule::floor,
                       NanPolicy::nan_block, 32, true);
  CHECK(z.scales[0] == 0);
  CHECK(z.codes[0] == 0x00);
  CHECK(z.codes[1] == 0x00);
  // flushed subnormals next to a normal value become zeros of their sign
  auto m = quantize_1d({-std::ldexp(1.0f, -130), 1.0f}, e4m3, ScaleRule::floor, NanPolicy::nan_block, 32, true);
  CHECK(m.scales[0] == 127 - 8);
  CHECK(m.codes[0] == 0x80);
}

TEST_CASE("scale rules: custom expressions") {
  // floor_log2(amax) - 8 + 1 is FLOOR + 1 for E4M3
  auto x = input("x", DType::f32, rank(1));
  auto a = amax(blocks(x, 0, 4));
  auto s = e8m0_scale(a, e4m3, floor_log2(amax_var()) - 8.0 + 1.0);
  auto sf = e8m0_scale(a, e4m3, ScaleRule::floor);
  auto p = pipeline({output("s", s), output("sf", sf)});
  std::vector<float> v = {500, 1, 2, 3, 0.1f, 0.2f, 0, 0, 1e-20f, 1, 1, 1, 0, 0, 0, 0, 3e5f, 1, 2, 3};
  auto outs = test::run_reference(p, {test::f32_view(v, {20})}, {20});
  for (int b = 0; b < 5; ++b) {
    if (b == 3) {
      CHECK(outs[0].u8()[b] == 0);  // zero block
      continue;
    }
    CHECK(outs[0].u8()[b] == outs[1].u8()[b] + 1);
  }
  // NaN result -> 0xFF; fractional results round toward -Inf; clamping
  CHECK(e8m0_byte_from_exponent(kNaN) == 0xFF);
  CHECK(e8m0_byte_from_exponent(-0.5f) == 126);
  CHECK(e8m0_byte_from_exponent(0.5f) == 127);
  CHECK(e8m0_byte_from_exponent(1e9f) == 254);
  CHECK(e8m0_byte_from_exponent(-kInf) == 0);
  CHECK(e8m0_custom_byte(s.node()->args[1], NanPolicy::satfinite, kInf) == 0xFE);
  CHECK(e8m0_custom_byte(s.node()->args[1], NanPolicy::nan_block, 0.0f) == 0);
  // RCEIL written as an expression equals the built-in RCEIL
  auto rc = ceil_log2(amax_var() * (1.0 / 448));
  for (float am : {500.0f, 448.0f, 1.0f, 3e-30f, 1e30f, 0.75f})
    CHECK(e8m0_custom_byte(rc.node(), NanPolicy::nan_block, am) ==
          e8m0_scale_byte(ScaleRule::rceil, NanPolicy::nan_block, e4m3, am));
  CHECK_THROWS_AS(e8m0_scale_byte(ScaleRule::custom, NanPolicy::nan_block, e4m3, 1.0f), UsageError);
}

TEST_CASE("scale rules: the evaluator's floor_log2 and ceil_log2 equal frexp's, specials as documented") {
  // The one evaluator computes log2 from the bit pattern; floor_log2/ceil_log2 above use frexp.
  const Expr fl = floor_log2(amax_var()), cl = ceil_log2(amax_var());
  int64_t checked = 0, bad = 0;
  for (uint64_t u = 1; u < 0x7F800000u; u += (u < 0x01000000u ? 1 : 997)) {  // every subnormal, then strided
    const float a = std::bit_cast<float>(uint32_t(u));
    const float f = eval_scale_expression(fl.node(), a), c = eval_scale_expression(cl.node(), a);
    if ((f != float(floor_log2(a)) || c != float(ceil_log2(a))) && ++bad <= 5)
      FAIL_CHECK(std::hexfloat << a << ": floor " << f << " ceil " << c);
    ++checked;
  }
  CHECK(bad == 0);
  for (const Expr& e : {fl, cl}) {
    CHECK(eval_scale_expression(e.node(), 0.0f) == -kInf);
    CHECK(eval_scale_expression(e.node(), -0.0f) == -kInf);
    CHECK(eval_scale_expression(e.node(), kInf) == kInf);
    CHECK(std::isnan(eval_scale_expression(e.node(), -kInf)));
    CHECK(std::isnan(eval_scale_expression(e.node(), -1.0f)));
    CHECK(std::isnan(eval_scale_expression(e.node(), kNaN)));
  }
  // Ops outside a custom exponent's set are refused by name, before any evaluation.
  CHECK_THROWS_WITH_AS(eval_scale_expression(exp2(fl).node(), 1.0f), doctest::Contains("'exp2'"), UsageError);
  CHECK_THROWS_AS(eval_scale_expression((fl + tamax_var()).node(), 1.0f), UsageError);
  MESSAGE("log2 evaluations compared: " << checked);
}

TEST_CASE("scale rules: FP32 scales") {
  // r = fp32(448 / max(amax, 1e-12)), stored 1/r
  const F32Scale s = f32_block_scale(e4m3, 224.0f);
  CHECK(s.multiplier == 2.0f);
  CHECK(s.stored == 0.5f);
  const F32Scale z = f32_block_scale(e4m3, 0.0f);
  CHECK(z.multiplier == 448.0f / 1e-12f);
  CHECK(std::isnan(f32_block_scale(e4m3, kNaN).multiplier));
  CHECK(f32_block_scale(e4m3, kInf).multiplier == 0.0f);
}

TEST_CASE("scale rules: EVEN's rounding carry out of the largest binade") {
  // amax = (2 - 2^-4) * 2^127 rounds (3 mantissa bits, E4M3) to 2^128: 128 - 8 = 120, byte 247,
  // as the kernels' mx_scale_even gives (the reference once took floor(log2) of FP32 Inf here).
  const float a = std::ldexp(1.9375f, 127);
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, a) == 247);
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e4m3, std::nextafter(a, 0.0f)) == 246);
  CHECK(e8m0_scale_byte(ScaleRule::even, NanPolicy::nan_block, e2m1, std::numeric_limits<float>::max()) == 253);  // 128 - 2
}
