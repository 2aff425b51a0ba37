// The reference writes per-group blocked scales (grouped GEMMs) and the FP8 per-group colwise
// jagged cast: group sizes 0, 1, 31, 33 and 1000+, many group counts, strided inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/pipeline.hpp"
#include "backends/reference/executor.hpp"
#include "backends/reference/numerics.hpp"
#include "support/tensors.hpp"

using namespace mxjit;
using mxjit::test::HostTensor;

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Runs `p` with outputs sized by output_geometry (pre-filled with 0xCD) and returns them.
std::vector<std::vector<uint8_t>> run(const Pipeline& p, std::vector<TensorView> inputs,
                                      const std::vector<int64_t>& shape, int64_t groups) {
  std::vector<std::vector<uint8_t>> bytes(p.outputs().size());
  std::vector<TensorView> views;
  for (size_t o = 0; o < bytes.size(); ++o) {
    const OutputGeometry g = output_geometry(p, int(o), shape, groups);
    bytes[o].assign(size_t(g.storage_bytes), 0xCD);
    views.push_back(TensorView::strided(bytes[o].data(), p.outputs()[o].dtype, g.view_shape, g.view_strides));
  }
  reference::run(p, inputs, views);
  return bytes;
}

/// A random f32 [rows, cols] tensor, optionally a column-major view.
HostTensor random_input(int64_t rows, int64_t cols, uint64_t seed, bool col_major = false) {
  HostTensor t(DType::f32, {rows, cols}, col_major ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{});
  test::fill_random(t, seed, /*adversarial=*/false);
  return t;
}

std::vector<int32_t> ends_of(const std::vector<int64_t>& sizes) {
  std::vector<int32_t> e;
  int32_t acc = 0;
  for (int64_t s : sizes) e.push_back(acc += int32_t(s));
  return e;
}

}  // namespace

TEST_CASE("reference: grouped_blocked_128x4 by rows places the linear scales per group, padding 0") {
  const int64_t K = 200;  // 7 scale columns: a column tail in the 128x4 atom
  const std::vector<std::vector<int64_t>> group_sizes = {
      {0, 1, 31, 33, 1000}, {1000, 0, 0, 5}, {128, 128}, {7}, {0}, {3, 0, 250, 1, 129, 64, 64, 2, 11}};
  for (const auto& sizes : group_sizes) {
    const std::vector<int32_t> ends = ends_of(sizes);
    for (int64_t extra : {int64_t(0), int64_t(9)}) {  // extra: rows past the last end (in no group)
      const int64_t M = ends.back() + extra, G = int64_t(ends.size());
      INFO("groups " << G << " rows " << M << " extra " << extra);
      HostTensor x = random_input(M, K, uint64_t(M * 7 + G));
      auto xi = input("x", DType::f32, rank(2));
      auto s = e8m0_scale(amax(blocks(xi, 1, 32)), e4m3, ScaleRule::rceil);
      auto p = pipeline({output("s", s), output("sg", s, layout::grouped_blocked_128x4(offsets("offs"), 0))});
      REQUIRE(p.inputs().size() == 2);
      const TensorView offs = TensorView::contiguous(const_cast<int32_t*>(ends.data()), DType::i32, {G});
      auto out = run(p, {x.v, offs}, {M, K}, G);
      const int64_t C = 7, Cp = 8;
      REQUIRE(int64_t(out[1].size()) == (round_up(M, 128) + 128 * G) * Cp);
      std::vector<uint8_t> want(out[1].size(), 0);
      int64_t start = 0, padded = 0;
      for (int32_t end : ends) {
        for (int64_t r = start; r < end; ++r)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t pr = padded + (r - start);
            const int64_t off = ((pr / 128) * (Cp / 4) + c / 4) * 512 + (pr % 32) * 16 + ((pr % 128) / 32) * 4 + c % 4;
            want[size_t(off)] = out[0][size_t(r * C + c)];
          }
        padded += round_up(end - start, 128);
        start = end;
      }
      CHECK(out[1] == want);
    }
  }
}

TEST_CASE("reference: grouped_blocked_128x4 by columns (K groups) places each group contiguously") {
  // x [T, N] cast along T (blocks(x, 0, 32)): scales [T/32, N]; rows = N, columns = T blocks.
  const int64_t N = 130;
  const std::vector<std::vector<int64_t>> group_sizes = {{32, 0, 64, 320}, {0, 0, 32}, {96, 32, 32, 32, 32, 45}};
  for (const auto& sizes : group_sizes) {
    const std::vector<int32_t> ends = ends_of(sizes);
    const int64_t T = ends.back(), G = int64_t(ends.size());
    INFO("groups " << G << " T " << T);
    HostTensor x = random_input(T, N, uint64_t(T + G), /*col_major=*/true);
    auto xi = input("x", DType::f32, rank(2));
    auto s = e8m0_scale(amax(blocks(xi, 0, 32)), e4m3, ScaleRule::floor);
    auto p = pipeline({output("s", s), output("sg", s, layout::grouped_blocked_128x4(offsets("offs"), 0))});
    const TensorView offs = TensorView::contiguous(const_cast<int32_t*>(ends.data()), DType::i32, {G});
    auto out = run(p, {x.v, offs}, {T, N}, G);
    const int64_t Cs = (T + 31) / 32, Rp = round_up(N, 128);
    REQUIRE(int64_t(out[1].size()) == Rp * (round_up(Cs, 4) + 4 * G));
    std::vector<uint8_t> want(out[1].size(), 0);
    int64_t start = 0, padded = 0;
    for (int32_t end_elems : ends) {
      const int64_t end = (end_elems + 31) / 32, n = end - start, cg = round_up(n, 4);
      for (int64_t r = 0; r < N; ++r)
        for (int64_t k = 0; k < n; ++k) {
          const int64_t off =
              padded * Rp + ((r / 128) * (cg / 4) + k / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + k % 4;
          want[size_t(off)] = out[0][size_t((start + k) * N + r)];
        }
      padded += cg;
      start = end;
    }
    CHECK(out[1] == want);
  }
  // An end inside a block would put one block in two groups.
  std::vector<int32_t> bad = {32, 40, 64};
  HostTensor x = random_input(64, 4, 3);
  auto xi = input("x", DType::f32, rank(2));
  auto s = e8m0_scale(amax(blocks(xi, 0, 32)), e4m3, ScaleRule::floor);
  auto p = pipeline({output("sg", s, layout::grouped_blocked_128x4(offsets("offs"), 0))});
  CHECK_THROWS_WITH_AS(run(p, {x.v, TensorView::contiguous(bad.data(), DType::i32, {3})}, {64, 4}, 3),
                       doctest::Contains("straddle"), UsageError);
}

TEST_CASE("reference: FP8 per-group colwise scales (jagged groups) of sizes 0, 1, 31, 33, 1000+, strided inputs") {
  const std::vector<std::vector<int64_t>> group_sizes = {
      {0, 1, 31, 33, 1003}, {1}, {0, 0, 0, 7}, {1000, 1000}, {31, 33, 0, 1, 64, 5, 5, 5, 5, 5, 5, 17, 0, 2}};
  const int64_t C = 9;
  for (const auto& sizes : group_sizes) {
    const std::vector<int32_t> ends = ends_of(sizes);
    const int64_t G = int64_t(ends.size()), M = ends.back();
    INFO("groups " << G << " rows " << M);
    auto xi = input("x", DType::f32, rank(2));
    auto s = f32_scale(amax(groups(xi, 0, offsets("offs"))), e4m3);
    auto q = cast(e4m3, xi / s);
    auto p = pipeline({output("q", q), output("s", s)});
    const TensorView offs = TensorView::contiguous(const_cast<int32_t*>(ends.data()), DType::i32, {G});
    HostTensor rm = random_input(M, C, uint64_t(G * 31 + M));
    HostTensor cm(DType::f32, {M, C}, {1, std::max<int64_t>(M, 1)});  // the same values, column-major
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < C; ++c)
        reinterpret_cast<float*>(cm.bytes.data())[cm.at({r, c})] = reinterpret_cast<float*>(rm.bytes.data())[rm.at({r, c})];
    auto a = run(p, {rm.v, offs}, {M, C}, G);
    auto b = run(p, {cm.v, offs}, {M, C}, G);
    CHECK(a == b);  // strides never change a byte
    const float* scales = reinterpret_cast<const float*>(a[1].data());
    int64_t start = 0, bad_scale = 0, bad_code = 0;
    for (int64_t g = 0; g < G; ++g) {
      for (int64_t c = 0; c < C; ++c) {
        float m = 0;
        for (int64_t r = start; r < ends[size_t(g)]; ++r)
          m = std::max(m, std::fabs(reinterpret_cast<float*>(rm.bytes.data())[rm.at({r, c})]));
        const float mult = 448.0f / std::max(m, 1e-12f);
        if (scales[g * C + c] != 1.0f / mult) ++bad_scale;
        for (int64_t r = start; r < ends[size_t(g)]; ++r) {
          const float v = reinterpret_cast<float*>(rm.bytes.data())[rm.at({r, c})];
          if (a[0][size_t(r * C + c)] != reference::encode_rne(e4m3, v * mult)) ++bad_code;
        }
      }
      start = ends[size_t(g)];
    }
    CHECK(bad_scale == 0);
    CHECK(bad_code == 0);
    // Each group alone (its rows as a tensor of one group) gives the same bytes.
    start = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t n = ends[size_t(g)] - start;
      std::vector<int32_t> one = {int32_t(n)};
      TensorView slice = TensorView::strided(rm.bytes.data() + start * C * 4, DType::f32, {n, C}, {C, 1});
      auto o = run(p, {slice, TensorView::contiguous(one.data(), DType::i32, {1})}, {n, C}, 1);
      CHECK(std::equal(o[0].begin(), o[0].end(), a[0].begin() + start * C));
      CHECK(std::equal(o[1].begin(), o[1].end(), a[1].begin() + g * C * 4));
      start = ends[size_t(g)];
    }
  }
}

TEST_CASE("reference: FP32 scales storing the multiplier, rounded down to a power of two (torchao's per-group form)") {
  const std::vector<int32_t> ends = {0, 7, 40, 40, 133};
  const int64_t G = int64_t(ends.size()), M = ends.back(), C = 11;
  const TensorView offs = TensorView::contiguous(const_cast<int32_t*>(ends.data()), DType::i32, {G});
  HostTensor x = random_input(M, C, 77);
  float* xv = reinterpret_cast<float*>(x.bytes.data());
  for (int64_t r = 0; r < 7; ++r) xv[x.at({r, 0})] = 0;  // column 0 of group 1 all zero: r = 448 / 1e-12
  xv[x.at({50, 1})] = INFINITY;  // amax Inf: r = 0 (codes NaN * 0 ... encoded from x * 0)
  xv[x.at({60, 2})] = NAN;
  xv[x.at({70, 3})] = 448.0f * 3 * 8192;  // above the random values: r = 2^-13 / 3, pow2: 2^-15
  auto xi = input("x", DType::f32, rank(2));
  for (bool pow2 : {false, true})
    for (bool mult : {false, true}) {
      CAPTURE(pow2);
      CAPTURE(mult);
      auto s = f32_scale(amax(groups(xi, 0, offsets("offs"))), e4m3, F32ScaleOptions{mult, pow2});
      auto p = pipeline({output("q", cast(e4m3, xi / s)), output("s", s)});
      // The options are part of the IR (and so of the hash); the defaults print as before.
      CHECK((p.str().find("multiplier") != std::string::npos) == mult);
      CHECK((p.str().find("pow2") != std::string::npos) == pow2);
      auto a = run(p, {x.v, offs}, {M, C}, G);
      const float* scales = reinterpret_cast<const float*>(a[1].data());
      int64_t start = 0, bad_scale = 0, bad_code = 0;
      for (int64_t g = 0; g < G; ++g) {
        for (int64_t c = 0; c < C; ++c) {
          float m = 0;
          for (int64_t r = start; r < ends[size_t(g)]; ++r) m = std::isnan(m) ? m : std::max(m, std::fabs(xv[x.at({r, c})]));
          for (int64_t r = start; r < ends[size_t(g)]; ++r)
            if (std::isnan(xv[x.at({r, c})])) m = NAN;
          float r_ = 448.0f / (std::isnan(m) ? m : std::max(m, 1e-12f));
          if (pow2 && !std::isnan(r_)) r_ = r_ == 0 ? 0.0f : float(std::exp2(std::floor(std::log2(double(r_)))));
          const float want = mult ? r_ : 1.0f / r_;
          const float got = scales[g * C + c];
          if (!(got == want || (std::isnan(got) && std::isnan(want)))) ++bad_scale;
          for (int64_t r = start; r < ends[size_t(g)]; ++r)
            if (a[0][size_t(r * C + c)] != reference::encode_rne(e4m3, xv[x.at({r, c})] * r_)) ++bad_code;
        }
        start = ends[size_t(g)];
      }
      CHECK(bad_scale == 0);
      CHECK(bad_code == 0);
      if (pow2 && mult) {
        CHECK(scales[1 * C + 0] == std::exp2(48.0f));  // floor(log2(448e12)) = 48
        CHECK(scales[4 * C + 3] == std::exp2(-15.0f));
        CHECK(scales[4 * C + 1] == 0.0f);
      }
    }
}
