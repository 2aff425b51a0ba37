// The executor on casts: stochastic rounding, dequantize round trips, MXINT8, NVFP4 (both
// conventions), torchao-compatible vectors, fused prologues, value/amax outputs, misuse.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "dsl/errors.hpp"
#include "reference_test_util.hpp"
#include "backends/reference/numerics.hpp"
#include "templates/mx_math.cuh"

using namespace mxjit;
using namespace mxjit::reference;
using test::f32_view;
using test::quantize_1d;
using test::run_reference;

namespace {
std::vector<float> ramp(size_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * float(i) / float(n - 1);
  return v;
}
}  // namespace

TEST_CASE("executor: stochastic rounding is reproducible from (seed, offset) and unbiased") {
  const int64_t n = 4096;
  std::vector<float> v(size_t(n), 2.3f);
  v[0] = 6.0f;  // amax 6 -> FLOOR byte 127 for FP4: elements unscaled
  auto run_sr = [&](uint64_t seed, uint64_t offset) {
    auto x = input("x", DType::f32, rank(1));
    auto s = e8m0_scale(amax(blocks(x, 0, 4096)), e2m1, ScaleRule::floor);
    CastOptions o;
    o.seed = seed;
    o.offset = offset;
    auto p = pipeline({output("q", cast(e2m1, x / s, Round::stochastic, Saturate::finite, o))});
    return run_reference(p, {f32_view(v, {n})}, {n})[0].bytes;
  };
  const auto a = run_sr(42, 7), b = run_sr(42, 7), c = run_sr(43, 7), d = run_sr(42, 8);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != d);
  double sum = 0;
  for (int64_t i = 1; i < n; ++i) {
    const uint8_t byte = a[size_t(i / 2)];
    const uint8_t code = i % 2 ? uint8_t(byte >> 4) : uint8_t(byte & 0xF);
    CHECK((code == 0x4 || code == 0x5));  // 2 or 3
    sum += decode(e2m1, code);
  }
  CHECK(std::fabs(sum / double(n - 1) - 2.3) < 0.02);
  // element i uses counter {i, 0, offset, 0}: check one element by hand
  const uint32_t r = sr_random(42, 7, 1);
  const uint8_t want = encode_sr(e2m1, 2.3f, r);
  CHECK((a[0] >> 4) == want);
}

TEST_CASE("executor: dequantize(quantize(x)) has bounded relative error") {
  const int64_t R = 16, C = 96;
  std::vector<float> v(size_t(R * C));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i) * 0.37f) * std::ldexp(1.0f, int(i % 11) - 5);
  for (ElemFormat f : {e4m3, e5m2, e2m3, e3m2, e2m1, int8}) {
    CAPTURE(f.str());
    auto x = input("x", DType::f32, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), f, ScaleRule::rceil);
    auto pq = pipeline({output("q", cast(f, x / s)), output("s", s)});
    auto o = run_reference(pq, {f32_view(v, {R, C})}, {R, C});
    auto y = dequantize("q", "s", f, ScaleFormat::e8m0, rank(2), 1, 32);
    auto pd = pipeline({output("y", y, DType::f32)});
    auto codes = o[0].view(), scales = o[1].view();
    auto back = run_reference(pd, {codes, scales}, {R, C});
    // RCEIL never clips: |y - x| <= half an ulp of the element grid, relative 2^-(mbits+1) for
    // normal elements, plus half the smallest subnormal step (times the block scale)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const float x0 = v[size_t(r * C + c)], y0 = back[0].f32()[r * C + c];
        const float scale = e8m0_value(o[1].u8()[r * (C / 32) + c / 32]);
        const double sub = f.is_int ? std::ldexp(1.0, -f.mbits) : std::ldexp(1.0, f.emin() - f.mbits);
        const double bound = std::fabs(x0) * std::ldexp(1.0, -(f.mbits + 1)) + 0.5 * sub * scale;
        CHECK(std::fabs(double(y0) - x0) <= bound * 1.0000001);
      }
  }
}

TEST_CASE("executor: MXINT8 worked example") {
  // amax 1.99: FLOOR floor(log2 1.99) - emax 0 = 0 -> byte 127; k = RNE(v * 64):
  // 1.0 -> 64, -0.5 -> -32 (0xE0), 0.3 -> 19.2 -> 19, 1.99 -> 127.36 -> 127, 0.5/64*3 = 1.5/64 -> 2
  auto q = quantize_1d({1.0f, -0.5f, 0.3f, 1.99f, 1.5f / 64}, int8, ScaleRule::floor);
  CHECK(q.scales[0] == 127);
  CHECK(q.codes[0] == 64);
  CHECK(q.codes[1] == 0xE0);
  CHECK(q.codes[2] == 19);
  CHECK(q.codes[3] == 127);
  CHECK(q.codes[4] == 2);
  // amax 3: FLOOR e = 1 (byte 128): 3/2 * 64 = 96; RCEIL 3 * fp32(64/127) = 1.51 -> 1 -> 128
  auto r = quantize_1d({3.0f, -0.01f}, int8, ScaleRule::rceil);
  CHECK(r.scales[0] == 128);
  CHECK(r.codes[0] == 96);
  CHECK(r.codes[1] == 0);  // -0.005 * 64 = -0.32 -> 0 (no -0 in two's complement)
}

TEST_CASE("executor: NVFP4, Transformer Engine and torchao conventions") {
  // Two 16-element blocks: block 0 amax 6, block 1 amax 0.75; tensor amax t = 6.
  std::vector<float> v(32, 0.0f);
  v[0] = 6.0f; v[1] = 3.0f; v[2] = -1.5f; v[3] = 0.5f; v[4] = -0.0f;
  v[16] = 0.75f; v[17] = 0.25f; v[18] = -0.75f;
  for (Nvfp4Convention conv : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    CAPTURE(int(conv));
    auto x = input("x", DType::f32, rank(1));
    auto s = nvfp4_scale(amax(blocks(x, 0, 16)), conv);
    auto p = pipeline({output("q", cast(e2m1, x / s)), output("s", s), output("t", amax(x))});
    auto o = run_reference(p, {f32_view(v, {32})}, {32});
    // TE: s_enc = 2688/6 = 448; block 0: 6 * fp32(448 * fp32(1/6)) = 448 -> 0x7E; block 1:
    // 0.75 * 74.67 = 56 = 1.75 * 2^5 -> 0x66. torchao: (6/6)/(6/2688) = 448, (0.75/6)/(6/2688) = 56.
    CHECK(o[1].u8()[0] == 0x7E);
    CHECK(o[1].u8()[1] == 0x66);
    // elements: multiplier ~1 (block 0) and ~8 (block 1)
    CHECK(o[0].u8()[0] == (0x7 | (0x5 << 4)));  // 6, 3
    CHECK(o[0].u8()[1] == (0xB | (0x1 << 4)));  // -1.5, 0.5
    CHECK(o[0].u8()[2] == 0x08);                // -0 keeps its sign, +0
    CHECK(o[0].u8()[8] == (0x7 | (0x4 << 4)));  // 6, 2
    CHECK(o[0].u8()[9] == 0xF);                 // -6, +0
    CHECK(o[2].f32()[0] == 6.0f);
  }
  // tensor amax 0: TE s_enc = 1, scales e4m3(0) = 0, elements keep signed zeros;
  // torchao: every scale is e4m3(2^-6) = 0x08 and every element +0
  std::vector<float> z(32, 0.0f);
  z[1] = -0.0f;
  for (Nvfp4Convention conv : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    auto x = input("x", DType::f32, rank(1));
    auto s = nvfp4_scale(amax(blocks(x, 0, 16)), conv);
    auto p = pipeline({output("q", cast(e2m1, x / s)), output("s", s)});
    auto o = run_reference(p, {f32_view(z, {32})}, {32});
    CHECK(o[1].u8()[0] == (conv == Nvfp4Convention::te ? 0x00 : 0x08));
    CHECK(o[0].u8()[0] == (conv == Nvfp4Convention::te ? 0x80 : 0x00));
  }
}

TEST_CASE("executor: torchao to_mx compatibility vectors (hand-derived from its algorithm)") {
  // torchao FLOOR: unbiased scale = ((bits(amax) >> 23) & 0xFF) - 127 - target_max_pow2, with
  // target_max_pow2 = 2 for FP4 and 8 for E4M3; data / 2^scale, saturating RNE cast;
  // FP4 packed with the first element in the low nibble.
  // FP4 block: amax 5.0 -> 2 - 2 = 0 (byte 127); 1.0 -> 0x2, -3.0 -> 0xD, 0.7 -> 0.5 (0x1),
  // 5.0 -> tie between 4 and 6 -> 4 (0x6, even).
  std::vector<float> v(32, 0.0f);
  v[0] = 1.0f; v[1] = -3.0f; v[2] = 0.7f; v[3] = 5.0f;
  auto q = quantize_1d(v, e2m1, ScaleRule::floor);
  CHECK(q.scales[0] == 127);
  CHECK(q.codes[0] == 0xD2);
  CHECK(q.codes[1] == 0x61);
  // E4M3 block: amax 1000 -> 9 - 8 = 1 (byte 128); 1000/2 = 500 -> clamps to 448 (0x7E),
  // 3/2 = 1.5 -> 0x3C, -0.01/2 = -0.005 -> 0.005 * 2^9 = 2.56 -> 3 * 2^-9 (0x83).
  auto e = quantize_1d({1000.0f, 3.0f, -0.01f}, e4m3, ScaleRule::floor);
  CHECK(e.scales[0] == 128);
  CHECK(e.codes[0] == 0x7E);
  CHECK(e.codes[1] == 0x3C);
  CHECK(e.codes[2] == 0x83);
  // torchao RCEIL (to_mx with ScaleCalculationMode.RCEIL) matches cvt.rp: amax 1000 -> 1000 *
  // fp32(1/448) = 2.23 -> 2 (byte 129); 1000/4 = 250 -> 256 (0x78)
  auto r = quantize_1d({1000.0f}, e4m3, ScaleRule::rceil);
  CHECK(r.scales[0] == 129);
  CHECK(r.codes[0] == 0x78);
}

TEST_CASE("executor: fused prologue, value outputs, tensor amax") {
  const int64_t R = 4, C = 32;
  std::vector<float> g = ramp(size_t(R * C), -8.0f, 8.0f), u = ramp(size_t(R * C), 2.0f, -1.0f);
  std::vector<uint16_t> bias(C);
  for (int64_t c = 0; c < C; ++c) bias[size_t(c)] = f32_to_bf16_rne(float(c) * 0.125f);
  auto gate = input("g", DType::f32, rank(2));
  auto up = input("u", DType::f32, rank(2));
  auto b = vec("b", DType::bf16, 1, rank(2));
  auto y = swiglu(gate, up) + b;
  auto s = e8m0_scale(amax(blocks(y, 1, 32)), e4m3, ScaleRule::floor);
  auto p = pipeline({output("q", cast(e4m3, y / s)), output("y", y, DType::bf16), output("a", amax(y)),
                     output("ge", gelu(gate, Gelu::erf) * 2.0, DType::f32)});
  auto bv = TensorView::contiguous(bias.data(), DType::bf16, {C});
  auto o = run_reference(p, {f32_view(g, {R, C}), f32_view(u, {R, C}), bv}, {R, C});
  float m = 0;
  std::vector<float> yv(size_t(R * C));
  for (int64_t i = 0; i < R * C; ++i) {
    const float want = mx_fadd(mx_fmul(mx_silu(g[size_t(i)]), u[size_t(i)]), bf16_to_f32(bias[size_t(i % C)]));
    yv[size_t(i)] = want;
    m = std::max(m, std::fabs(want));
    uint16_t got;
    std::memcpy(&got, o[1].u8() + 2 * i, 2);
    CHECK(got == f32_to_bf16_rne(want));
    CHECK(o[3].f32()[i] == mx_fmul(mx_gelu_erf(g[size_t(i)]), 2.0f));
  }
  CHECK(o[2].f32()[0] == m);
  // the cast sees the same FP32 values
  auto x = input("x", DType::f32, rank(2));
  auto s2 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::floor);
  auto p2 = pipeline({output("q", cast(e4m3, x / s2))});
  CHECK(run_reference(p2, {f32_view(yv, {R, C})}, {R, C})[0].bytes == o[0].bytes);
}

TEST_CASE("executor: NaN in value outputs is the positive canonical NaN; amax NaN/Inf") {
  std::vector<float> v = {1.0f, -std::numeric_limits<float>::quiet_NaN(), 2.0f, -std::numeric_limits<float>::infinity()};
  auto x = input("x", DType::f32, rank(1));
  auto p = pipeline({output("y", x * 1.0, DType::bf16), output("f", x * 1.0, DType::f16), output("a", amax(x))});
  auto o = run_reference(p, {f32_view(v, {4})}, {4});
  uint16_t b, h;
  std::memcpy(&b, o[0].u8() + 2, 2);
  std::memcpy(&h, o[1].u8() + 2, 2);
  CHECK(b == 0x7FC0);
  CHECK(h == 0x7E00);
  uint32_t a;
  std::memcpy(&a, o[2].u8(), 4);
  CHECK(a == 0x7FC00000u);
  std::vector<float> w = {1.0f, -std::numeric_limits<float>::infinity()};
  auto o2 = run_reference(pipeline({output("a", amax(x))}), {f32_view(w, {2})}, {2});
  CHECK(o2[0].f32()[0] == std::numeric_limits<float>::infinity());
}

TEST_CASE("executor: misuse is a UsageError naming the tensor") {
  std::vector<float> v(64, 1.0f);
  auto x = input("x", DType::f32, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::floor);
  auto p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  std::vector<uint8_t> q(64), sc(2);
  auto qv = TensorView::contiguous(q.data(), DType::u8, {2, 32});
  auto sv = TensorView::contiguous(sc.data(), DType::u8, {2, 1});
  auto xv = f32_view(v, {2, 32});
  reference::run(p, std::vector<TensorView>{xv}, std::vector<TensorView>{qv, sv});
  auto expect_error = [&](std::vector<TensorView> ins, std::vector<TensorView> outs, const char* needle) {
    try {
      reference::run(p, ins, outs);
      FAIL("no UsageError for " << needle);
    } catch (const UsageError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  expect_error({}, {qv, sv}, "inputs");
  expect_error({xv}, {qv}, "outputs");
  expect_error({TensorView::contiguous(v.data(), DType::bf16, {2, 32})}, {qv, sv}, "input 'x': dtype");
  expect_error({f32_view(v, {64})}, {qv, sv}, "input 'x'");
  expect_error({xv}, {TensorView::contiguous(q.data(), DType::u8, {32, 2}), sv}, "output 'q': extents");
  expect_error({xv}, {TensorView::strided(q.data(), DType::u8, {2, 32}, {1, 2}), sv}, "output 'q': strides");
  expect_error({xv}, {qv, TensorView::contiguous(nullptr, DType::u8, {2, 1})}, "output 's': data is null");
  expect_error({xv}, {qv, TensorView::contiguous(sc.data(), DType::f32, {2, 1})}, "output 's': dtype");
  expect_error({TensorView::strided(v.data(), DType::f32, {2, 32}, {-32, 1})}, {qv, sv}, "negative");
}
