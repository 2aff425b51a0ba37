// The executor on whole pipelines: strided inputs, output layouts, 2-D blocks, jagged groups,
// the blocked 128x4 scale layout.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "dsl/errors.hpp"
#include "reference_test_util.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/scale_rules.hpp"

using namespace mxjit;
using namespace mxjit::reference;
using test::f32_view;
using test::run_reference;

namespace {

/// Deterministic values spanning many binades, with a few exact zeros.
std::vector<float> make_values(size_t n, uint32_t seed = 1) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const float m = float(s >> 8) / float(1u << 24) * 2.0f - 1.0f;
    v[i] = (s & 0xF) == 0 ? 0.0f : std::ldexp(m, int((s >> 4) % 24) - 12);
  }
  return v;
}

}  // namespace

TEST_CASE("executor: strided and permuted input views equal contiguous copies") {
  const int64_t R = 40, C = 72;
  std::vector<float> a = make_values(size_t(R * C));
  auto x = input("x", DType::f32, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  auto ref = run_reference(p, {f32_view(a, {R, C})}, {R, C});
  // transposed storage: element (r, c) at c*R + r
  std::vector<float> t(a.size());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) t[size_t(c * R + r)] = a[size_t(r * C + c)];
  auto tr = run_reference(p, {TensorView::strided(t.data(), DType::f32, {R, C}, {1, R})}, {R, C});
  // a slice of a wider buffer, every other column, rows padded
  std::vector<float> wide(size_t(R * (2 * C + 3)), 777.0f);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) wide[size_t(r * (2 * C + 3) + 2 * c)] = a[size_t(r * C + c)];
  auto sl = run_reference(p, {TensorView::strided(wide.data(), DType::f32, {R, C}, {2 * C + 3, 2})}, {R, C});
  for (size_t i = 0; i < 2; ++i) {
    CHECK(ref[i].bytes == tr[i].bytes);
    CHECK(ref[i].bytes == sl[i].bytes);
  }
}

TEST_CASE("executor: col_major and expert_col_major outputs are the transposed row-major results") {
  const int64_t R = 64, C = 40;
  std::vector<float> a = make_values(size_t(R * C), 2);
  auto x = input("x", DType::f32, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::floor);
  auto q = cast(e4m3, x / s);
  auto p = pipeline({output("q", q), output("qc", q, layout::col_major()), output("s", s),
                     output("sc", s, layout::col_major())});
  auto o = run_reference(p, {f32_view(a, {R, C})}, {R, C});
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) CHECK(o[1].u8()[c * R + r] == o[0].u8()[r * C + c]);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < C; ++c) CHECK(o[3].u8()[c * 2 + r] == o[2].u8()[r * C + c]);

  // 3-D (E, N, K) cast along dim 1, written per-expert column-major: (e, n, k) at e*N*K + k*N + n
  const int64_t E = 3, N = 64, K = 24;
  std::vector<float> w = make_values(size_t(E * N * K), 3);
  auto x3 = input("w", DType::f32, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, 1, 32)), e4m3, ScaleRule::rceil);
  auto q3 = cast(e4m3, x3 / s3);
  auto p3 = pipeline({output("q", q3), output("qe", q3, layout::expert_col_major())});
  auto o3 = run_reference(p3, {f32_view(w, {E, N, K})}, {E, N, K});
  for (int64_t e = 0; e < E; ++e)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) CHECK(o3[1].u8()[e * N * K + k * N + n] == o3[0].u8()[(e * N + n) * K + k]);

  // FP4 col_major packs along axis 0: the same bytes as row-major FP4 of the transpose
  auto xt = input("xt", DType::f32, rank(2));
  auto st = e8m0_scale(amax(blocks(xt, 1, 32)), e2m1, ScaleRule::floor);
  auto pt = pipeline({output("q", cast(e2m1, xt / st))});
  std::vector<float> at(a.size());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) at[size_t(c * R + r)] = a[size_t(r * C + c)];
  auto ot = run_reference(pt, {f32_view(at, {C, R})}, {C, R});
  auto s4 = e8m0_scale(amax(blocks(x, 0, 32)), e2m1, ScaleRule::floor);
  auto p4 = pipeline({output("q", cast(e2m1, x / s4), layout::col_major())});
  auto o4 = run_reference(p4, {f32_view(a, {R, C})}, {R, C});
  CHECK(o4[0].geometry.packed_axis == 0);
  CHECK(o4[0].bytes == ot[0].bytes);
}

TEST_CASE("executor: 2-D 32x32 blocks share one scale per tile; partial tiles use what is present") {
  const int64_t R = 70, C = 40;
  std::vector<float> a = make_values(size_t(R * C), 4);
  auto x = input("x", DType::f32, rank(2));
  auto s = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
  auto p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  auto o = run_reference(p, {f32_view(a, {R, C})}, {R, C});
  CHECK(o[1].geometry.logical_shape == std::vector<int64_t>{3, 2});
  for (int64_t tr = 0; tr < 3; ++tr)
    for (int64_t tc = 0; tc < 2; ++tc) {
      float m = 0;
      for (int64_t r = tr * 32; r < std::min(R, tr * 32 + 32); ++r)
        for (int64_t c = tc * 32; c < std::min(C, tc * 32 + 32); ++c) m = std::max(m, std::fabs(a[size_t(r * C + c)]));
      const uint8_t byte = o[1].u8()[tr * 2 + tc];
      CHECK(byte == e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e4m3, m));
      for (int64_t r = tr * 32; r < std::min(R, tr * 32 + 32); ++r)
        for (int64_t c = tc * 32; c < std::min(C, tc * 32 + 32); ++c)
          CHECK(o[0].u8()[r * C + c] == encode_rne(e4m3, a[size_t(r * C + c)] * e8m0_multiplier(byte)));
    }
}

TEST_CASE("executor: jagged groups of sizes 0, 1, 31, 33, 1000 (per-group per-column scales)") {
  const int64_t C = 8;
  std::vector<int32_t> ends = {0, 1, 32, 65, 1065};
  const int64_t R = 1065;
  std::vector<float> a = make_values(size_t(R * C), 5);
  auto x = input("x", DType::f32, rank(2));
  auto s = e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::floor);
  auto p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  CHECK(p.inputs().size() == 2);
  auto offs = TensorView::contiguous(ends.data(), DType::i32, {5});
  auto o = run_reference(p, {f32_view(a, {R, C}), offs}, {R, C}, 5);
  CHECK(o[1].geometry.logical_shape == std::vector<int64_t>{5, C});
  int64_t start = 0;
  for (int g = 0; g < 5; ++g) {
    for (int64_t c = 0; c < C; ++c) {
      float m = 0;
      for (int64_t r = start; r < ends[size_t(g)]; ++r) m = std::max(m, std::fabs(a[size_t(r * C + c)]));
      const uint8_t byte = o[1].u8()[g * C + c];
      CHECK(byte == e8m0_scale_byte(ScaleRule::floor, NanPolicy::nan_block, e4m3, m));
      if (g == 0) CHECK(byte == 0);  // the empty group is a zero block
      for (int64_t r = start; r < ends[size_t(g)]; ++r)
        CHECK(o[0].u8()[r * C + c] == (m == 0 ? 0 : encode_rne(e4m3, a[size_t(r * C + c)] * e8m0_multiplier(byte))));
    }
    start = ends[size_t(g)];
  }
  // rows past the last group end belong to no group: their codes are 0
  std::vector<int32_t> short_ends = {0, 1, 32, 65, 1000};
  auto o2 = run_reference(p, {f32_view(a, {R, C}), TensorView::contiguous(short_ends.data(), DType::i32, {5})},
                          {R, C}, 5);
  for (int64_t i = 1000 * C; i < R * C; ++i) CHECK(o2[0].u8()[i] == 0);
  for (int64_t i = 0; i < 65 * C; ++i) CHECK(o2[0].u8()[i] == o[0].u8()[i]);
  // invalid offsets: IndexValuesError (values a GPU kernel trusts), a kind of UsageError
  std::vector<int32_t> bad = {0, 40, 32, 65, 1065};
  CHECK_THROWS_AS(
      run_reference(p, {f32_view(a, {R, C}), TensorView::contiguous(bad.data(), DType::i32, {5})}, {R, C}, 5),
      IndexValuesError);
  std::vector<int32_t> over = {0, 1, 32, 65, 1066};
  CHECK_THROWS_AS(
      run_reference(p, {f32_view(a, {R, C}), TensorView::contiguous(over.data(), DType::i32, {5})}, {R, C}, 5),
      IndexValuesError);
  std::vector<int32_t> neg = {-1, 1, 32, 65, 1065};
  CHECK_THROWS_AS(
      run_reference(p, {f32_view(a, {R, C}), TensorView::contiguous(neg.data(), DType::i32, {5})}, {R, C}, 5),
      IndexValuesError);
}

TEST_CASE("executor: blocked_128x4 scales equal the linear scales placed by the formula, padding 0") {
  for (int64_t batch : {int64_t(1), int64_t(2)}) {
    const int64_t R = 200, C = 96;
    std::vector<float> a = make_values(size_t(batch * R * C), 6);
    const int rk = batch == 1 ? 2 : 3;
    auto x = input("x", DType::f32, rank(rk));
    auto s = e8m0_scale(amax(blocks(x, rk - 1, 32)), e4m3, ScaleRule::rceil);
    auto p = pipeline({output("s", s), output("sb", s, layout::blocked_128x4())});
    std::vector<int64_t> shape = batch == 1 ? std::vector<int64_t>{R, C} : std::vector<int64_t>{batch, R, C};
    auto o = run_reference(p, {f32_view(a, shape)}, shape);
    const int64_t rows = R, cols = C / 32, Rp = 256, Cp = 4;
    REQUIRE(o[1].geometry.storage_bytes == batch * Rp * Cp);
    std::vector<uint8_t> want(size_t(batch * Rp * Cp), 0);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t off =
              b * Rp * Cp + ((r / 128) * (Cp / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
          want[size_t(off)] = o[0].u8()[(b * rows + r) * cols + c];
        }
    CHECK(o[1].bytes == want);
  }
}

TEST_CASE("executor: the peers' scale layouts equal the linear scales placed by their formulas, padding 0") {
  // DeepGEMM SM90 FP32 MN-major TMA-aligned: (b, m, j) -> b*A*sf_k + j*A + m; SM100 packed UE8M0:
  // byte k%4 of word b*A*ceil(sf_k/4) + (k/4)*A + m; A = roundup(mn, 4). Outputs start poisoned.
  for (int64_t batch : {int64_t(1), int64_t(3)}) {
    const int64_t mn = 10, K = 128 * 9;
    std::vector<float> a = make_values(size_t(batch * mn * K), 7);
    const int rk = batch == 1 ? 2 : 3;
    auto x = input("x", DType::f32, rank(rk));
    auto s = e8m0_scale(amax(blocks(x, rk - 1, 128)), e4m3, ScaleRule::ceil);
    auto f = f32_scale(amax(blocks(x, rk - 1, 128)), e4m3);
    auto p = pipeline({output("s", s), output("sp", s, layout::mn_major_tma_packed()), output("f", f),
                       output("fm", f, layout::mn_major_tma())});
    std::vector<int64_t> shape = batch == 1 ? std::vector<int64_t>{mn, K} : std::vector<int64_t>{batch, mn, K};
    auto o = run_reference(p, {f32_view(a, shape)}, shape);
    const int64_t sf_k = 9, A = 12, words = 3;
    REQUIRE(o[1].geometry.storage_bytes == batch * A * words * 4);
    REQUIRE(o[3].geometry.storage_bytes == batch * A * sf_k * 4);
    std::vector<uint8_t> want(size_t(batch * A * words * 4), 0);
    std::vector<float> want_f(size_t(batch * A * sf_k), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t m = 0; m < mn; ++m)
        for (int64_t k = 0; k < sf_k; ++k) {
          want[size_t(4 * (b * A * words + (k / 4) * A + m) + k % 4)] = o[0].u8()[(b * mn + m) * sf_k + k];
          want_f[size_t(b * A * sf_k + k * A + m)] = o[2].f32()[(b * mn + m) * sf_k + k];
        }
    CHECK(o[1].bytes == want);
    CHECK(std::memcmp(o[3].bytes.data(), want_f.data(), want_f.size() * 4) == 0);
  }
}
