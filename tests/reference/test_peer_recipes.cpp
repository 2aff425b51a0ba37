// The peers' FP8 recipes (dsl/peer_recipes.hpp) against step-by-step FP32 implementations of
// each peer's source written here independently (blockwise_fp8_peers.md §1-§5): every bf16 amax
// for the scales, bf16 elements under a sweep of amaxes, and the special groups the research note
// measured on an H100 (§6D).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "dsl/peer_recipes.hpp"
#include "reference/reference_test_util.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/scale_expr.hpp"

using namespace mxjit;
using namespace mxjit::reference;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

/// The exponent-bit ceil of a positive float (DeepGEMM / vLLM register kernel / SGLang), unclamped.
uint32_t ceil_exponent_field(float s) {
  const uint32_t b = bits_of(s);
  return ((b >> 23) & 0xFFu) + ((b & 0x7FFFFFu) != 0);
}

/// One peer, step by step: its stored scale and the FP32 value each element is cast from.
struct Peer {
  const char* name;
  ScaleDef def;
  bool nan_amax;  ///< the peer's amax propagates NaN
  Saturate sat;
  float (*stored)(float amax);
  float (*element)(float amax, float x);
};

// DeepGEMM: sf = clamp(amax, 1e-4) / 448.0 on the GPU = amax * fp32(1/448); x * (1.0 / sf).
float dg_sf(float a) { return (std::isnan(a) ? a : std::max(a, 1e-4f)) * (1.0f / 448.0f); }
float dg_ue8m0(float a) {
  uint32_t e = ceil_exponent_field(dg_sf(a));
  e = e < 1 ? 1 : e > 254 ? 254 : e;
  return from_bits(e << 23);
}
// vLLM: y_s = fmaxf(eps, amax) / 448; q = fminf(fmaxf(x / y_s, -448), 448).
float vl_ys(float a) { return fmaxf(1e-10f, a) / 448.0f; }
float vl_ue8m0(float a) {
  const float s = fmaxf(std::fabs(vl_ys(a)), 1e-10f);
  return std::isinf(s) ? s : from_bits(ceil_exponent_field(s) << 23);
}
float vl_clamp(float v) { return fminf(fmaxf(v, -448.0f), 448.0f); }
// SGLang v1: scale_inv = amax * (1/448), scale = 448 / amax; UE8M0: e = log2 ceil, 2^-e and 2^e.
float sg_scale_inv(float a) { return fmaxf(a, 1e-10f) * (1.0f / 448.0f); }
int sg_e(float a) { return int(ceil_exponent_field(sg_scale_inv(a))) - 127; }
float sg_pow2(int e) { return from_bits(uint32_t((e + 127) << 23)); }  // fast_pow2, as the kernel
// Transformer Engine: q = 448 / amax (1 for 0, Inf, NaN; bf16 max for Inf quotients), pow2 mask.
float te_q(float a, bool pow2) {
  if (std::isinf(a) || a == 0.f || std::isnan(a)) return 1.0f;
  float q = 448.0f / a;
  if (std::isinf(q)) q = from_bits(0x7F7F0000u);
  if (pow2) q = from_bits(bits_of(q) & 0xFF800000u);
  return q;
}
float te_inv(float q) { return float(1.0 / double(q)); }
// torchao: q = fp32(448 / fp64(max(amax, 1e-12))), stored div_rn(1, q), clamp(x * q, +-448).
float ta_q(float a) { return float(448.0 / double(std::max(a, 1e-12f))); }
// Triton's tl.clamp as torchao's kernels compile it: min first, so a NaN product becomes +448.
float ta_clamp(float v) { return fmaxf(fminf(v, 448.0f), -448.0f); }

std::vector<Peer> peers() {
  return {
      {"deepgemm", recipes::deepgemm(e4m3, false), true, Saturate::none, dg_sf,
       [](float a, float x) { return x * (1.0f / dg_sf(a)); }},
      {"deepgemm ue8m0", recipes::deepgemm(e4m3, true), true, Saturate::none, dg_ue8m0,
       [](float a, float x) { return x * (1.0f / dg_ue8m0(a)); }},
      {"vllm", recipes::vllm_group(e4m3, false), false, Saturate::finite, vl_ys,
       [](float a, float x) { return vl_clamp(x / vl_ys(a)); }},
      {"vllm ue8m0", recipes::vllm_group(e4m3, true), false, Saturate::finite, vl_ue8m0,
       [](float a, float x) { return vl_clamp(x / vl_ue8m0(a)); }},
      {"sglang", recipes::sglang_group(e4m3, false), false, Saturate::finite, sg_scale_inv,
       [](float a, float x) { return x * (448.0f / fmaxf(a, 1e-10f)); }},
      {"sglang ue8m0", recipes::sglang_group(e4m3, true), false, Saturate::finite,
       [](float a) { return sg_pow2(sg_e(a)); }, [](float a, float x) { return x * sg_pow2(-sg_e(a)); }},
      {"te", recipes::transformer_engine(e4m3, false), false, Saturate::finite,
       [](float a) { return te_inv(te_q(a, false)); }, [](float a, float x) { return x * te_q(a, false); }},
      {"te pow2", recipes::transformer_engine(e4m3, true), false, Saturate::finite,
       [](float a) { return te_inv(te_q(a, true)); }, [](float a, float x) { return x * te_q(a, true); }},
      {"torchao", recipes::torchao_blockwise(e4m3), false, Saturate::finite, [](float a) { return 1.0f / ta_q(a); },
       [](float a, float x) { return ta_clamp(x * ta_q(a)); }},
  };
}

Node node_of(const Peer& p) {
  auto x = input("x", DType::bf16, rank(2));
  return *scale(amax(blocks(x, 1, 128)), e4m3, p.def).node();
}

}  // namespace

TEST_CASE("peer recipes: the stored scale and factor of every bf16 amax") {
  for (const Peer& p : peers()) {
    const Node sn = node_of(p);
    CHECK(sn.recipe == ScaleRecipe::generic);
    CHECK(sn.amax_nan == (p.nan_amax ? AmaxNan::propagate : AmaxNan::ignore));
    int bad = 0, n = 0;
    for (uint32_t u = 0; u <= 0x7F81u; ++u) {
      const float a = u == 0x7F81u ? kNaN : from_bits(u << 16);
      if (std::isnan(a) && !p.nan_amax) continue;  // the amax never is NaN
      const BlockScale b = block_scale(sn, a, 0.0f);
      ++n;
      // The factor times 1 is what a 1.0 element becomes (division by it for vLLM).
      if (!same(b.stored, p.stored(a)) || !same(scale_element(sn, 1.0f, b.factor), p.element(a, 1.0f)))
        if (++bad <= 3) FAIL_CHECK(p.name << " amax " << std::hexfloat << a << ": " << b.stored << " want " << p.stored(a));
    }
    CHECK(bad == 0);
    CHECK(n > 32000);
  }
}

TEST_CASE("peer recipes: elements under a sweep of bf16 amaxes") {
  std::mt19937 rng(34);
  int64_t checked = 0;
  for (const Peer& p : peers()) {
    const Node sn = node_of(p);
    int bad = 0;
    for (uint32_t u = 0x3580u; u < 0x4980u; u += 11) {  // amax in [2^-20, 2^20)
      const float a = from_bits(u << 16);
      const BlockScale b = block_scale(sn, a, 0.0f);
      for (int i = 0; i < 300; ++i) {
        // bf16 x with |x| <= amax: the block's largest element and everything below it
        float x = i == 0 ? a : from_bits(uint32_t(rng() % (u + 1)) << 16);
        if (rng() & 1) x = -x;
        const uint8_t got = encode_rne(e4m3, scale_element(sn, x, b.factor), p.sat);
        const uint8_t want = encode_rne(e4m3, p.element(a, x), p.sat);
        ++checked;
        if (got != want && ++bad <= 3)
          FAIL_CHECK(p.name << " amax " << std::hexfloat << a << " x " << x << ": " << int(got) << " want " << int(want));
      }
    }
    CHECK(bad == 0);
  }
  MESSAGE("peer elements compared: " << checked);
}

TEST_CASE("peer recipes: the special groups measured on an H100 (research note §6D)") {
  auto x = input("x", DType::f32, rank(1));
  // Groups of 4: all zero; one NaN; one +Inf.
  std::vector<float> v = {0, 0, 0, 0, kNaN, 1.0f, -2.0f, 3.0f, kInf, 1.0f, -3.5f, 0.5f};
  auto run = [&](const Peer& p) {
    const Scale s = scale(amax(blocks(x, 0, 4)), e4m3, p.def);
    return test::run_reference(pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, p.sat)), output("s", s)}),
                               {test::f32_view(v, {12})}, {12});
  };
  const std::vector<Peer> all = peers();
  auto by = [&](const char* name) {
    for (const Peer& p : all)
      if (std::string(p.name) == name) return p;
    FAIL("no peer " << name);
    return all[0];
  };
  auto sbits = [](const std::vector<test::HostOutput>& o, int g) { return bits_of(o[1].f32()[g]); };
  auto code = [](const std::vector<test::HostOutput>& o, int i) { return int(o[0].u8()[i]); };

  auto dg = run(by("deepgemm"));
  CHECK(sbits(dg, 0) == 0x346FACADu);  // 1e-4 / 448 = 2.232e-7
  CHECK(std::isnan(dg[1].f32()[1]));
  for (int i = 4; i < 8; ++i) CHECK(code(dg, i) == 0x7F);  // the whole NaN group is NaN
  CHECK(std::isinf(dg[1].f32()[2]));
  CHECK((code(dg, 8) == 0x7F && code(dg, 9) == 0x00 && code(dg, 10) == 0x80));
  auto dgu = run(by("deepgemm ue8m0"));
  CHECK(sbits(dgu, 0) == 0x34800000u);  // 2^-22
  CHECK(sbits(dgu, 1) == 0x7F000000u);  // 2^127: NaN's exponent 256 clamped to 254
  CHECK((code(dgu, 4) == 0x7F && code(dgu, 5) == 0x00 && code(dgu, 6) == 0x80));
  CHECK((code(dgu, 8) == 0x7F && code(dgu, 10) == 0x80));  // Inf * 2^-127 is Inf: torch's .to() gives NaN

  auto vl = run(by("vllm"));
  CHECK(sbits(vl, 0) == 0x2A7B5123u);  // 1e-10 / 448, IEEE
  CHECK(same(vl[1].f32()[1], 3.0f / 448.0f));  // NaN skipped by the amax
  CHECK(code(vl, 4) == 0xFE);  // NaN -> fmaxf(NaN, -448) = -448
  CHECK((code(vl, 8) == 0xFE && code(vl, 9) == 0x00 && code(vl, 10) == 0x80));
  CHECK(sbits(run(by("vllm ue8m0")), 0) == 0x2F000000u);  // 2^-33

  auto sg = run(by("sglang"));
  CHECK(sbits(sg, 0) == 0x2A7B5124u);  // 1e-10 * fp32(1/448)
  CHECK(code(sg, 4) == 0x7F);
  CHECK((code(sg, 8) == 0x7F && code(sg, 9) == 0x00 && code(sg, 10) == 0x80));
  auto sgu = run(by("sglang ue8m0"));
  CHECK(sbits(sgu, 0) == 0x2A800000u);  // 2^-42
  CHECK(std::isinf(sgu[1].f32()[2]));
  CHECK((code(sgu, 9) == 0xFE && code(sgu, 10) == 0x7E && code(sgu, 11) == 0xFE));  // the sign flips

  auto te = run(by("te pow2"));
  CHECK(te[1].f32()[0] == 1.0f);
  CHECK(code(te, 4) == 0x7F);
  CHECK(te[1].f32()[2] == 1.0f);  // the +Inf group is cast unscaled
  CHECK((code(te, 8) == 0x7E && code(te, 9) == 0x38 && code(te, 10) == encode_rne(e4m3, -3.5f)));

  // The peers that measured equal on a realistic tensor (§6C): TE with FP32 scales and torchao.
  std::mt19937 rng(6);
  const Node te32 = node_of(by("te")), ta = node_of(by("torchao"));
  for (int i = 0; i < 20000; ++i) {
    const float a = from_bits(0x30000000u + rng() % 0x20000000u);
    const BlockScale b1 = block_scale(te32, a, 0), b2 = block_scale(ta, a, 0);
    if (!same(b1.stored, b2.stored)) {
      FAIL_CHECK("te vs torchao amax " << std::hexfloat << a);
      break;
    }
  }
}
