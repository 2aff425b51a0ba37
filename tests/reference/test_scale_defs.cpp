// Scales as expressions (dsl/dsl.hpp ScaleDef, dsl/recipes.hpp): the library's definitions give
// the bytes, stored values and multipliers of the first-principles rules (scale_rules.hpp, kept as
// an independent oracle), and each part of a definition (the amax's NaN handling, division, the
// clamps, bf16 storage, Saturate::none, zero/NaN blocks) does what it says.
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>

#include "dsl/recipes.hpp"
#include "reference/reference_test_util.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/scale_expr.hpp"
#include "backends/reference/scale_rules.hpp"
#include "templates/mx_math.cuh"

using namespace mxjit;
using namespace mxjit::reference;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
/// Same FP32 bits, or both NaN.
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

/// Block amaxes to sweep: every bf16 magnitude (0 .. +Inf), NaN, every power of two's neighbours
/// and random FP32 patterns (subnormals included).
std::vector<float> amax_sweep() {
  std::vector<float> v;
  for (uint32_t u = 0; u <= 0x7F80u; ++u) v.push_back(from_bits(u << 16));
  v.push_back(kNaN);
  for (uint32_t e = 0; e < 255; ++e)
    for (uint32_t d : {0u, 1u, 0x7FFFFFu}) v.push_back(from_bits((e << 23) | d));
  std::mt19937 rng(34);
  for (int i = 0; i < 20000; ++i) v.push_back(from_bits(static_cast<uint32_t>(rng() % 0x7F800001u)));
  return v;
}

Node scale_node_of(const Scale& s) { return *s.node(); }

}  // namespace

TEST_CASE("scale defs: the library's E8M0 rules equal the first-principles bytes and multipliers") {
  auto x = input("x", DType::f32, rank(1));
  const auto a = amax(blocks(x, 0, 32));
  const std::vector<float> sweep = amax_sweep();
  int64_t checked = 0, bad = 0;
  // User formats without mantissa bits too: EVEN's tie there is the significand's integer bit.
  for (ElemFormat f : {e4m3, e5m2, e2m3, e3m2, e2m1, int8, fp_format(1, 0), fp_format(4, 0), fp_format(5, 0), fp_format(3, 3)})
    for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even})
      for (NanPolicy pol : {NanPolicy::nan_block, NanPolicy::satfinite}) {
        const Node sn = scale_node_of(e8m0_scale(a, f, rule, pol));
        CHECK(sn.recipe == ScaleRecipe::e8m0_rule);
        CHECK(sn.rule == rule);
        CHECK(sn.policy == pol);
        for (float m : sweep) {
          const BlockScale b = block_scale(sn, m, 0.0f);
          const uint8_t want = e8m0_scale_byte(rule, pol, f, m);
          const BlockMode mode = want == 0xFF ? BlockMode::nan : m == 0 ? BlockMode::zero : BlockMode::scaled;
          const bool ok = b.bits == want && b.mode == mode && (mode != BlockMode::scaled || same(b.factor, e8m0_multiplier(want)));
          if (!ok && ++bad <= 5)
            FAIL_CHECK(f.str() << " " << rule_name(rule) << " amax " << std::hexfloat << m << ": byte " << b.bits
                               << " want " << int(want));
          ++checked;
        }
      }
  CHECK(bad == 0);
  MESSAGE("E8M0 rule evaluations compared: " << checked);
}

TEST_CASE("scale defs: custom exponents are 2^floor(e) clamped as before") {
  auto x = input("x", DType::f32, rank(1));
  const auto a = amax(blocks(x, 0, 32));
  const Expr exprs[] = {floor_log2(amax_var()) - 7.0, ceil_log2(amax_var() * 0.3) + 0.5,
                        max(floor_log2(amax_var()), -140.0) - 9.0, min(ceil_log2(amax_var()), 3.0) * 2.0};
  for (const Expr& e : exprs)
    for (NanPolicy pol : {NanPolicy::nan_block, NanPolicy::satfinite}) {
      const Node sn = scale_node_of(e8m0_scale(a, e4m3, e, pol));
      CHECK(sn.recipe == ScaleRecipe::e8m0_exponent);
      CHECK(sn.rule == ScaleRule::custom);
      for (float m : amax_sweep()) {
        const BlockScale b = block_scale(sn, m, 0.0f);
        const uint8_t want = e8m0_custom_byte(e.node(), pol, m);
        if (b.bits != want) {
          FAIL_CHECK(canonical(e.node()) << " amax " << std::hexfloat << m << ": " << b.bits << " want " << int(want));
          break;
        }
      }
    }
}

TEST_CASE("scale defs: the FP32 recipe and NVFP4 equal the first-principles scales") {
  auto x = input("x", DType::f32, rank(1));
  const std::vector<float> sweep = amax_sweep();
  for (ElemFormat f : {e4m3, e5m2})
    for (bool pow2 : {false, true})
      for (bool store : {false, true}) {
        const Node sn = scale_node_of(f32_scale(amax(blocks(x, 0, 32)), f, {store, pow2}));
        CHECK(sn.recipe == ScaleRecipe::f32_multiplier);
        CHECK((sn.pow2 == pow2 && sn.store_multiplier == store));
        int bad = 0;
        for (float m : sweep) {
          const BlockScale b = block_scale(sn, m, 0.0f);
          const F32Scale want = f32_block_scale(f, m, pow2, store);
          if (!(same(b.stored, want.stored) && same(b.factor, want.multiplier) && b.mode == BlockMode::scaled) &&
              ++bad <= 3)
            FAIL_CHECK(f.str() << " pow2 " << pow2 << " amax " << std::hexfloat << m << ": " << b.stored << " / "
                               << b.factor << " want " << want.stored << " / " << want.multiplier);
        }
      }
  std::vector<float> tensor = {0.0f, from_bits(1), 1e-30f, 0.5f, 6.0f, 2688.0f, 3.0e5f, 1e30f, kInf, kNaN};
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i) tensor.push_back(from_bits(static_cast<uint32_t>(rng() % 0x7F800000u)));
  for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    const Node sn = scale_node_of(nvfp4_scale(amax(blocks(x, 0, 16)), c));
    CHECK(sn.recipe == ScaleRecipe::nvfp4);
    CHECK(sn.convention == c);
    int bad = 0;
    for (float t : tensor)
      for (size_t i = 0; i < sweep.size(); i += 7) {
        const float m = sweep[i];
        const BlockScale b = block_scale(sn, m, t);
        const Nvfp4Block want = nvfp4_block(c, m, t);
        const bool ok = b.bits == want.scale && (b.mode == BlockMode::zero) == want.zero &&
                        b.mode != BlockMode::nan && (want.zero || same(b.factor, want.multiplier));
        if (!ok && ++bad <= 3)
          FAIL_CHECK("nvfp4 " << int(c) << " amax " << std::hexfloat << m << " tensor " << t << ": byte " << b.bits
                              << " want " << int(want.scale));
      }
  }
}

TEST_CASE("scale defs: a recipe written out by hand is recognised as the library's") {
  auto x = input("x", DType::bf16, rank(2));
  const auto a = amax(blocks(x, 1, 32));
  ScaleDef d;
  d.format = ScaleFormat::f32;
  const Expr r = 448.0 / max(amax_var(), 1e-12);
  d.stored = 1.0 / r;
  d.factor = r;
  const Scale s = scale(a, e4m3, d);
  CHECK(s.node()->recipe == ScaleRecipe::f32_multiplier);
  CHECK(canonical(s.node()) == canonical(f32_scale(a, e4m3).node()));
  d.factor = 448.0 / max(amax_var(), 1e-10);  // another floor: a definition of its own
  CHECK(scale(a, e4m3, d).node()->recipe == ScaleRecipe::generic);
  CHECK(canonical(scale(a, e4m3, d).node()) != canonical(f32_scale(a, e4m3).node()));
}

TEST_CASE("scale defs: NaN in the amax, division, clamps, bf16 storage and Saturate::none") {
  auto x = input("x", DType::f32, rank(1));
  const auto a = amax(blocks(x, 0, 4));
  // vLLM's per-token-group op sequence: amax from fmaxf (NaN skipped), floor 1e-10, s = amax / 448,
  // elements fminf(fmaxf(x / s, -448), 448) (NaN becomes -448).
  ScaleDef vllm;
  vllm.stored = fmax(amax_var(), 1e-10) / 448.0;
  vllm.factor = stored_var();
  vllm.apply = Apply::divide;
  vllm.clamp = Clamp::ignore_nan;
  vllm.clamp_lo = -448;
  vllm.clamp_hi = 448;
  vllm.amax_nan = AmaxNan::ignore;
  const Scale s = scale(a, e4m3, vllm);
  CHECK(s.node()->recipe == ScaleRecipe::generic);
  std::vector<float> v = {kNaN, 3.5f, -7.0f, 0.1f,  0, 0, 0, 0,  kInf, 1.0f, -2.0f, 0.0f};
  auto outs = test::run_reference(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}), {test::f32_view(v, {12})}, {12});
  const float s0 = 7.0f / 448.0f, s1 = 1e-10f / 448.0f;
  CHECK(same(outs[1].f32()[0], s0));
  CHECK(same(outs[1].f32()[1], s1));
  CHECK(std::isinf(outs[1].f32()[2]));
  CHECK(outs[0].u8()[0] == 0xFE);  // NaN -> fmaxf(NaN, -448) = -448
  CHECK(outs[0].u8()[1] == encode_rne(e4m3, 3.5f / s0));
  CHECK(outs[0].u8()[2] == 0xFE);  // -7 / s0 = -448
  CHECK(outs[0].u8()[3] == encode_rne(e4m3, 0.1f / s0));
  CHECK(outs[0].u8()[4] == 0x00);  // zero group: 0 / tiny
  CHECK(outs[0].u8()[8] == 0xFE);  // Inf / Inf = NaN -> -448
  CHECK(outs[0].u8()[9] == 0x00);  // 1 / Inf = +0
  CHECK(outs[0].u8()[10] == 0x80);

  // The same with NaN propagating into the amax and a NaN-keeping clamp: the NaN group is NaN.
  ScaleDef keep = vllm;
  keep.stored = max(amax_var(), 1e-10) / 448.0;
  keep.amax_nan = AmaxNan::propagate;
  keep.clamp = Clamp::propagate_nan;
  const Scale sk = scale(a, e4m3, keep);
  auto ok = test::run_reference(pipeline({output("q", cast(e4m3, x / sk)), output("s", sk)}), {test::f32_view(v, {12})}, {12});
  CHECK(std::isnan(ok[1].f32()[0]));
  CHECK(ok[0].u8()[1] == 0x7F);  // 3.5 / NaN = NaN; satfinite keeps the NaN code

  // bf16 storage rounds the stored value to nearest even; the elements see the bf16 value read back.
  ScaleDef b16;
  b16.format = ScaleFormat::bf16;
  b16.stored = amax_var() / 448.0;
  const Scale sb = scale(a, e4m3, b16);
  const Pipeline pb = pipeline({output("q", cast(e4m3, x / sb)), output("s", sb)});
  CHECK(pb.outputs()[1].dtype == DType::bf16);
  std::vector<float> w = {1.0f, 2.0f, 3.0f, 300.0f};
  auto ob = test::run_reference(pb, {test::f32_view(w, {4})}, {4});
  uint16_t sbits;
  std::memcpy(&sbits, ob[1].bytes.data(), 2);
  const float stored = 300.0f / 448.0f;
  CHECK(sbits == mx_f32_to_bf16_rne(stored));
  const float back = mx_bf16_to_f32(sbits);
  CHECK(back != stored);  // the test means something: 300/448 is not a bf16
  CHECK(ob[0].u8()[3] == encode_rne(e4m3, 300.0f * (1.0f / back)));

  // Saturate::none: beyond the top binade's midpoint becomes NaN (torch's .to(float8_e4m3fn)).
  const Scale one = scale(a, e4m3, [] {
    ScaleDef d;
    d.stored = Expr(1.0);
    return d;
  }());
  std::vector<float> big = {449.0f, 464.0f, 465.0f, -kInf};
  const Pipeline pn = pipeline({output("q", cast(e4m3, x / one, Round::nearest_even, Saturate::none))});
  auto on = test::run_reference(pn, {test::f32_view(big, {4})}, {4});
  CHECK(on[0].u8()[0] == 0x7E);
  CHECK(on[0].u8()[1] == 0x7E);  // the tie goes to the even code 0x7E (448)
  CHECK(on[0].u8()[2] == 0x7F);
  CHECK(on[0].u8()[3] == 0xFF);
  const Pipeline ps = pipeline({output("q", cast(e4m3, x / one))});
  CHECK(test::run_reference(ps, {test::f32_view(big, {4})}, {4})[0].u8()[2] == 0x7E);
}

TEST_CASE("scale defs: zero and NaN blocks, and stored_var in the factor") {
  auto x = input("x", DType::f32, rank(1));
  ScaleDef d;
  d.format = ScaleFormat::e8m0;
  d.stored = pow2_ceil(amax_var() * double(1.0f / 448.0f));
  d.zero_if = amax_var() < 1e-6;
  d.nan_if = isinf(amax_var());
  const Scale s = scale(amax(blocks(x, 0, 2)), e4m3, d);
  CHECK(s.node()->recipe == ScaleRecipe::generic);
  std::vector<float> v = {1e-7f, -1e-8f, kInf, 1.0f, 300.0f, -1.0f};
  auto o = test::run_reference(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}), {test::f32_view(v, {6})}, {6});
  CHECK(o[0].u8()[0] == 0x00);
  CHECK(o[0].u8()[1] == 0x00);  // zero blocks are +0, whatever the sign
  CHECK(o[0].u8()[2] == 0x7F);
  CHECK(o[0].u8()[3] == 0x7F);
  CHECK(o[1].u8()[1] == 0xFF);  // Inf's exponent field
  CHECK(o[1].u8()[2] == 127);   // 300/448 rounds up to 1
  CHECK(o[0].u8()[4] == encode_rne(e4m3, 300.0f));
}
