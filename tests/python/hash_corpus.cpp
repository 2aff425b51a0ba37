// Prints "name hash" for pipelines built with the C++ DSL; tests/python/test_dsl.py builds the same
// pipelines with the Python DSL and checks that every hash agrees (the Python builders mirror C++).
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "mxjit/mxjit.hpp"

int main() {
  using namespace mxjit;
  std::vector<std::pair<std::string, Pipeline>> c;
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
    c.emplace_back("dim1_blocked", pipeline({output("q", cast(e4m3, x / s), layout::col_major()),
                                              output("s", s, layout::blocked_128x4())}));
  }
  {
    auto x = input("x", DType::f32, rank(3));
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), e2m1, ScaleRule::floor, NanPolicy::satfinite);
    c.emplace_back("fp4_expert", pipeline({output("q", cast(e2m1, x / s), layout::expert_col_major()),
                                            output("s", s, layout::blocked_8x4())}));
  }
  {
    auto g = input("gate", DType::bf16, rank(2));
    auto u = input("up", DType::bf16, rank(2));
    auto b = vec("bias", DType::f32, 1, rank(2));
    auto v = swiglu(g, u) * 0.5 + b - relu(-g) / 3.0;
    auto s = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::even);
    c.emplace_back("swiglu_prologue", pipeline({output("q", cast(e4m3, v / s)), output("s", s),
                                                output("y", gelu(v, Gelu::erf) + exp(sigmoid(v)) + silu(abs(v)), DType::bf16),
                                                output("amax", amax(v))}));
  }
  {
    auto x = input("x", DType::f16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ceil_log2(amax_var() * (1.0 / 448)) + 1.0);
    auto q = cast(e4m3, x / s, Round::stochastic, Saturate::finite, CastOptions{7, 3, true});
    c.emplace_back("custom_rule_sr", pipeline({output("q", q), output("s", s)}));
  }
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s = nvfp4_scale(amax(blocks(x, {0, 1}, {16, 16})), Nvfp4Convention::torchao);
    c.emplace_back("nvfp4_2d", pipeline({output("q", cast(e2m1, x / s)), output("s", s), output("amax", amax(x))}));
  }
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s = f32_scale(amax(groups(x, 0, offsets("offs"))), e5m2, F32ScaleOptions{true, true});
    auto m = e8m0_scale(amax(blocks(x, 1, 32)), int8, ScaleRule::ceil);
    c.emplace_back("groups_grouped", pipeline({output("q", cast(e5m2, x / s), layout::col_major()), output("s", s),
                                               output("q1", cast(int8, x / m)),
                                               output("s1", m, layout::grouped_blocked_128x4(offsets("offs"), 0))}));
  }
  {
    auto y = dequantize("codes", "scales", e2m1, ScaleFormat::e8m0, rank(2), 1, 32);
    c.emplace_back("dequant_fp4", pipeline({output("y", y, DType::f32, layout::permuted({1, 0}))}));
  }
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), fp_format(3, 3), ScaleRule::rceil);
    auto t = max(min(x, 2.0), -2.0);
    auto s2 = e8m0_scale(amax(blocks(t, 0, 64)), e3m2, ScaleRule::floor);
    c.emplace_back("user_format_two_casts", pipeline({output("q", cast(fp_format(3, 3), x / s)), output("s", s),
                                                      output("q1", cast(e3m2, t / s2)), output("s1", s2)}));
  }
  {
    // Composable layouts (dsl/layout.hpp): peers' scale layouts by name and a general form.
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 1, 128)), e4m3, ScaleRule::ceil);
    auto f = f32_scale(amax(blocks(x, 1, 128)), e4m3);
    auto t = f32_scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3);
    c.emplace_back("layouts_peers", pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma_packed()),
                                              output("q1", cast(e4m3, x / f)), output("s1", f, layout::mn_major_tma()),
                                              output("q2", cast(e4m3, x / t)), output("s2", t, layout::gemm_ready_2d_t()),
                                              output("s3", s, layout::modes({layout::rest, layout::rows / 16, layout::cols,
                                                                             layout::rows % 16}).align(layout::cols, 2))}));
  }
  {
    // Scale definitions (ScaleDef) and whole-axis blocks: the peers' recipes rowwise, colwise,
    // tensorwise and beside 128, the library's definitions, and a user definition with every field.
    auto x = input("x", DType::bf16, rank(2));
    auto dg = scale(amax(blocks(x, 1, 128)), e4m3, recipes::deepgemm(e4m3, true));
    auto vl = scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3, recipes::vllm_group(e4m3, true, 1e-6));
    auto sg = scale(amax(blocks(x, 1, kWholeAxis)), e5m2, recipes::sglang_group(e5m2, true));
    auto te = scale(amax(blocks(x, 0, kWholeAxis)), e4m3, recipes::transformer_engine(e4m3, true, 1e-5, 65504.0));
    auto ta = scale(amax(blocks(x, {0, 1}, {kWholeAxis, kWholeAxis})), e4m3, recipes::torchao_blockwise(e4m3));
    auto rw = scale(amax(blocks(x, 1, kWholeAxis)), e4m3, recipes::f32_multiplier(e4m3, {true, true}));
    auto ex = scale(amax(blocks(x, 1, 32)), e2m1,
                    recipes::e8m0_exponent(floor_log2(amax_var(), 1) - ceil_log2(Expr(6.0)) + exp2(Expr(0.5)),
                                           NanPolicy::satfinite));
    const Expr a = amax_var();
    ScaleDef d;
    d.format = ScaleFormat::bf16;
    d.stored = where(isnan(a) || a == 0.0, 1.0, pow2_floor(fmin(a, 1e30) / 448.0) + pow2_ceil(abs(-a)) * 0.0);
    d.factor = max(min(1.0 / stored_var(), 1e6), fmax(stored_var(), -1.0)) - 0.0;
    d.zero_if = a <= 1e-30 && !(a > 1e38);
    d.nan_if = isinf(a) || a >= 3e38 || a < -1.0;
    d.apply = Apply::divide;
    d.clamp = Clamp::propagate_nan;
    d.clamp_lo = -448;
    d.clamp_hi = 448;
    d.amax_nan = AmaxNan::ignore;
    auto us = scale(amax(blocks(x, {0, 1}, {kWholeAxis, 128})), e4m3, d);
    c.emplace_back("scale_defs_whole",
                   pipeline({output("q", cast(e4m3, x / dg, Round::nearest_even, Saturate::none)), output("s", dg),
                             output("q1", cast(e4m3, x / vl)), output("s1", vl, layout::col_major()),
                             output("q2", cast(e5m2, x / sg)), output("s2", sg),
                             output("q3", cast(e4m3, x / te), layout::col_major()), output("s3", te),
                             output("q4", cast(e4m3, x / ta)), output("s4", ta),
                             output("q5", cast(e4m3, x / rw)), output("s5", rw),
                             output("q6", cast(e2m1, x / ex)), output("s6", ex),
                             output("q7", cast(e4m3, x / us)), output("s7", us)}));
  }
  {
    auto g = input("gate", DType::bf16, rank(2));
    auto u = input("up", DType::bf16, rank(2));
    auto v = round_to(round_to(silu(g), DType::bf16) * u, DType::bf16);
    auto s = scale(amax(blocks(v, 1, 128)), e4m3, recipes::sglang_group(e4m3, false));
    c.emplace_back("sglang_silu_and_mul", pipeline({output("q", cast(e4m3, v / s)), output("s", s),
                                                    output("h", round_to(g, DType::f16), DType::f16)}));
  }
  {
    auto x = input("x", DType::bf16, rank(3));
    auto s = scale(amax(blocks(x, 2, 128)), e4m3, recipes::sglang_group(e4m3, false));
    c.emplace_back("sglang_masked", pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma())},
                                             mask(1, 0, "masked_m")));
  }
  for (const auto& [name, p] : c) std::printf("%s %s\n", name.c_str(), p.hash().hex().c_str());
  return 0;
}
