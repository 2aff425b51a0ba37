// CPU backend bit-exactness beyond plain casts: stochastic rounding, flush, custom scale rules,
// FP32 scales, NVFP4 (both conventions), fused prologues, values and amax outputs, dequantize,
// jagged groups; and the UsageErrors for what is not lowered or bound wrongly.
#include <doctest/doctest.h>

#include <random>

#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "llvm/cpu_check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

int64_t check1(const Pipeline& p, std::vector<int64_t> shape, uint64_t seed, bool adversarial, DType dt = DType::bf16) {
  std::vector<HostTensor> in;
  in.push_back(random_input(dt, std::move(shape), seed, adversarial));
  return check_cpu(cpu::cpu_jit(p), in, p.str().substr(0, 60));
}

HostTensor offsets_tensor(const std::vector<int32_t>& ends) {
  HostTensor t(DType::i32, {int64_t(ends.size())});
  if (!ends.empty()) std::memcpy(t.bytes.data(), ends.data(), ends.size() * 4);  // (empty: data() may be null)
  return t;
}

HostTensor random_bytes(std::vector<int64_t> shape, uint64_t seed, int lo = 0, int hi = 255) {
  HostTensor t(DType::u8, std::move(shape));
  std::mt19937 r{uint32_t(seed)};
  std::uniform_int_distribution<int> d(lo, hi);
  for (size_t i = 0; i + 64 < t.bytes.size(); ++i) t.bytes[i] = uint8_t(d(r));
  return t;
}

}  // namespace

TEST_SUITE("llvm") {

TEST_CASE("stochastic rounding, flush, custom rule, FP32 scales") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  CastOptions o;
  o.seed = 0x123456789abcull;
  o.offset = 7;
  o.flush_subnormals = true;
  for (ElemFormat f : {e2m1, e4m3, e5m2, e3m2, int8}) {
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), f, ScaleRule::floor);
    CHECK(check1(pipeline({output("q", cast(f, x / s, Round::stochastic, Saturate::finite, o)), output("s", s)}),
                 {64, 256}, 21, true) == 0);
  }
  auto s0 = e8m0_scale(amax(blocks(x, 0, 32)), e2m3, ScaleRule::rceil);
  CHECK(check1(pipeline({output("q", cast(e2m3, x / s0, Round::stochastic, Saturate::finite, o), layout::col_major()),
                         output("s", s0)}), {96, 70}, 22, true) == 0);
  // The same scale used by a flushing and a non-flushing cast: two scale instances.
  auto sf = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  CastOptions fl;
  fl.flush_subnormals = true;
  CHECK(check1(pipeline({output("q", cast(e4m3, x / sf)), output("qf", cast(e4m3, x / sf, Round::nearest_even, Saturate::finite, fl)),
                         output("s", sf)}), {64, 128}, 23, true) == 0);
  auto sc = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ceil_log2(amax_var() * (1.0 / 448)) + 1.0);
  CHECK(check1(pipeline({output("q", cast(e4m3, x / sc)), output("s", sc)}), {64, 256}, 24, true) == 0);
  auto sc2 = e8m0_scale(amax(blocks(x, 0, 32)), e2m1, max(floor_log2(abs(-amax_var())) - 2.0, min(amax_var() / 3.0, -4.0)),
                        NanPolicy::satfinite);
  CHECK(check1(pipeline({output("q", cast(e2m1, x / sc2), layout::col_major()), output("s", sc2, layout::blocked_128x4())}),
               {64, 96}, 25, true) == 0);
  for (ElemFormat f : {e4m3, e5m2}) {
    auto s = f32_scale(amax(blocks(x, 0, 32)), f);
    CHECK(check1(pipeline({output("q", cast(f, x / s), layout::col_major()), output("s", s)}), {96, 64}, 26, true) == 0);
  }
}

TEST_CASE("user formats fp(e,m), rank 4 with two batch axes") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  for (ElemFormat f : {fp_format(3, 3), fp_format(1, 4), fp_format(5, 0), fp_format(2, 0), fp_format(4, 2)})
    for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::even}) {
      auto s = e8m0_scale(amax(blocks(x, 1, 32)), f, rule);
      CHECK(check1(pipeline({output("q", cast(f, x / s)), output("s", s)}), {32, 96}, 91, true) == 0);
    }
  auto x4 = input("x", DType::f32, rank(4));
  auto s4 = e8m0_scale(amax(blocks(x4, 2, 32)), e4m3, ScaleRule::rceil);
  CHECK(check1(pipeline({output("q", cast(e4m3, x4 / s4), layout::permuted({3, 0, 2, 1})), output("s", s4, layout::blocked_128x4())}),
               {2, 3, 40, 64}, 92, true, DType::f32) == 0);
}

TEST_CASE("NVFP4: both conventions, zero / NaN / Inf tensors, 2-D blocks") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  for (Nvfp4Convention conv : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    auto s = nvfp4_scale(amax(blocks(x, 1, 16)), conv);
    Pipeline p = pipeline({output("q", cast(e2m1, x / s)), output("s", s, layout::blocked_128x4()), output("t", amax(x))});
    CHECK(check1(p, {64, 160}, 31, false) == 0);
    CHECK(check1(p, {64, 160}, 32, true) == 0);
    // Zero tensor (torchao: every element +0), and a tensor with one Inf but no NaN.
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, std::vector<int64_t>{32, 64});
    CHECK(check_cpu(cpu::cpu_jit(p), in, "zeros") == 0);
    fill_random(in[0], 33, false);
    reinterpret_cast<uint16_t*>(in[0].bytes.data())[5] = 0x7f80;
    CHECK(check_cpu(cpu::cpu_jit(p), in, "inf") == 0);
    auto s1 = nvfp4_scale(amax(blocks(x, 0, 16)), conv);
    CastOptions o;
    o.flush_subnormals = true;
    CHECK(check1(pipeline({output("q", cast(e2m1, x / s1, Round::nearest_even, Saturate::finite, o), layout::col_major()),
                           output("s", s1)}), {96, 50}, 34, true) == 0);
    auto s2 = nvfp4_scale(amax(blocks(x, {0, 1}, {16, 16})), conv);
    CHECK(check1(pipeline({output("q", cast(e2m1, x / s2)), output("s", s2)}), {48, 80}, 35, true) == 0);
  }
}

TEST_CASE("fused prologues, values and amax outputs") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto a = input("a", DType::bf16, rank(2));
  auto b = input("b", DType::bf16, rank(2));
  auto bias = vec("bias", DType::bf16, 1, rank(2));
  auto v = swiglu(a, b) + bias;
  auto s = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, v / s)), output("s", s), output("amax", amax(v)),
                         output("y", v, DType::bf16), output("yt", v * 0.5, DType::f16, layout::col_major())});
  std::vector<HostTensor> in;
  in.push_back(random_input(DType::bf16, {64, 256}, 41, true));
  in.push_back(random_input(DType::bf16, {64, 256}, 42, true));
  in.push_back(random_input(DType::bf16, {256}, 43, false));
  CHECK(check_cpu(cpu::cpu_jit(p), in, "swiglu") == 0);

  auto x = input("x", DType::f16, rank(2));
  auto w = vec("w", DType::f32, 0, rank(2));
  auto g = gelu(x * w, Gelu::erf) + gelu(x, Gelu::tanh) - exp(-abs(x)) / (sigmoid(x) + 1.0);
  auto sg = e8m0_scale(amax(blocks(g, 1, 32)), e2m1, ScaleRule::floor);
  Pipeline pg = pipeline({output("q", cast(e2m1, g / sg)), output("s", sg), output("r", relu(g) - 1.0, DType::f32),
                          output("m", max(x, silu(x)) * min(x, 2.0), DType::bf16, layout::col_major()), output("t", amax(g))});
  std::vector<HostTensor> in2;
  in2.push_back(random_input(DType::f16, {96, 128}, 44, true));
  in2.push_back(random_input(DType::f32, {96}, 45, true));
  CHECK(check_cpu(cpu::cpu_jit(pg), in2, "gelu*w") == 0);
  CHECK(check_cpu(cpu::cpu_jit(pg), in2, "gelu*w 1 thread", {}, 0, 1) == 0);

  // SGLang's fused SiLU-and-mul: the SiLU and the product kept in the input's type (round_to), then
  // 1x128 groups; also f16 rounding of FP32 values (overflow to Inf, subnormals).
  auto gate = input("gate", DType::bf16, rank(2));
  auto up = input("up", DType::bf16, rank(2));
  auto sv = round_to(round_to(silu(gate), DType::bf16) * up, DType::bf16);
  auto ss = scale(amax(blocks(sv, 1, 128)), e4m3, recipes::sglang_group(e4m3, false));
  auto xf = input("xf", DType::f32, rank(2));
  Pipeline ps = pipeline({output("q", cast(e4m3, sv / ss, Round::nearest_even, Saturate::finite)), output("s", ss),
                          output("h", round_to(xf * 3.0, DType::f16) + round_to(xf, DType::bf16), DType::f32)});
  std::vector<HostTensor> in3;
  in3.push_back(random_input(DType::bf16, {40, 300}, 46, true));
  in3.push_back(random_input(DType::bf16, {40, 300}, 47, true));
  in3.push_back(random_input(DType::f32, {40, 300}, 48, true));
  CHECK(check_cpu(cpu::cpu_jit(ps), in3, "sglang silu-and-mul") == 0);
}

TEST_CASE("dequantize: every format, E8M0 / E4M3 / FP32 scales, FP4 nibbles") {
  MXJIT_REQUIRE_CPU_BACKEND();
  for (ElemFormat f : {e4m3, e5m2, e2m3, e3m2, e2m1, int8}) {
    Expr d = dequantize("q", "s", f, ScaleFormat::e8m0, rank(2), 1, 32);
    Pipeline pd = pipeline({output("y", d, DType::bf16), output("y32", d, DType::f32, layout::col_major()),
                            output("h", d, DType::f16)});
    std::vector<HostTensor> in;
    in.push_back(random_bytes({64, f.packed() ? 48 : 96}, 51));
    in.push_back(random_bytes({64, 3}, 52, 100, 160));
    in[1].bytes[0] = 0xFF;  // a NaN scale
    CHECK(check_cpu(cpu::cpu_jit(pd), in, "dequant " + f.str(), {64, 96}) == 0);
  }
  Expr d4 = dequantize("q", "s", e2m1, ScaleFormat::e4m3, rank(2), 0, 16);
  std::vector<HostTensor> in4;
  in4.push_back(random_bytes({32, 40}, 53));
  in4.push_back(random_bytes({4, 40}, 54));
  CHECK(check_cpu(cpu::cpu_jit(pipeline({output("y", d4, DType::f32)})), in4, "dequant nvfp4", {64, 40}) == 0);
  Expr df = dequantize("q", "s", e4m3, ScaleFormat::f32, rank(2), 1, 32);
  std::vector<HostTensor> inf;
  inf.push_back(random_bytes({16, 64}, 55));
  inf.push_back(random_input(DType::f32, {16, 2}, 56, true));
  auto sd = e8m0_scale(amax(blocks(df, 1, 32)), e2m1, ScaleRule::rceil);  // re-quantize
  CHECK(check_cpu(cpu::cpu_jit(pipeline({output("y", df, DType::bf16), output("q2", cast(e2m1, df / sd)), output("s2", sd)})),
                  inf, "dequant f32 + requantize", {16, 64}) == 0);
}

TEST_CASE("jagged groups: per-group per-column scales, empty groups, rows past the last end") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  auto sg = e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::floor);
  auto sf = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3);
  auto sm = f32_scale(amax(groups(x, 0, offsets("offs"))), e5m2, F32ScaleOptions{true, true});  // torchao's form
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, x / sg), layout::col_major()), output("s", sg),
                         output("qf", cast(e4m3, x / sf)), output("sf", sf),
                         output("qm", cast(e5m2, x / sm), layout::col_major()), output("sm", sm),
                         output("q0", cast(e4m3, x / s0)), output("s0", s0, layout::blocked_128x4())});
  for (const std::vector<int32_t>& ends : std::vector<std::vector<int32_t>>{{10, 10, 75, 100}, {0, 33, 60}, {100}, {0}, {}}) {
    std::vector<HostTensor> in;
    in.push_back(random_input(DType::bf16, {100, 96}, uint64_t(ends.size()), true));
    in.push_back(offsets_tensor(ends));
    CHECK(check_cpu(cpu::cpu_jit(p), in, "groups", {100, 96}, int64_t(ends.size())) == 0);
  }
  // Decreasing group ends: refused with the reference's message.
  std::vector<HostTensor> in;
  in.push_back(random_input(DType::bf16, {64, 40}, 61, true));
  in.push_back(offsets_tensor({30, 20, 64}));
  std::vector<HostTensor> outs;
  std::vector<TensorView> ov;
  for (int o = 0; o < int(p.outputs().size()); ++o) {
    OutputGeometry g = output_geometry(p, o, std::vector<int64_t>{64, 40}, 3);
    outs.emplace_back(p.outputs()[size_t(o)].dtype, g.view_shape, g.view_strides);
  }
  for (auto& h : outs) ov.push_back(h.v);
  std::vector<TensorView> iv{in[0].v, in[1].v};
  CHECK_THROWS_WITH_AS(cpu::cpu_jit(p)(iv, ov), doctest::Contains("offs"), UsageError);
}

TEST_CASE("not lowered or bound wrongly: UsageError naming the problem") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  Pipeline grouped = pipeline({output("s", s, layout::grouped_blocked_128x4(offsets("offs"), 0))});
  CHECK_THROWS_WITH_AS(cpu::cpu_jit(grouped), doctest::Contains("grouped"), UsageError);
  auto x3 = input("x", DType::bf16, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, {0, 1}, {32, 32})), e4m3, ScaleRule::rceil);
  auto s3b = e8m0_scale(amax(blocks(x3, 2, 32)), e4m3, ScaleRule::rceil);
  CHECK_THROWS_WITH_AS(cpu::cpu_jit(pipeline({output("a", s3), output("b", s3b)})), doctest::Contains("block axes"), UsageError);
  Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  cpu::CpuKernel k = cpu::cpu_jit(p);
  HostTensor in(DType::f32, {32, 64}), q(DType::u8, {32, 64}), sc(DType::u8, {32, 2});
  std::vector<TensorView> iv{in.v}, ov{q.v, sc.v};
  CHECK_THROWS_WITH_AS(k(iv, ov), doctest::Contains("input 'x'"), UsageError);  // dtype
  HostTensor in2(DType::bf16, {32, 64}), bad(DType::u8, {32, 3});
  iv = {in2.v};
  ov = {q.v, bad.v};
  CHECK_THROWS_WITH_AS(k(iv, ov), doctest::Contains("output 's'"), UsageError);  // shape
}

}  // TEST_SUITE
