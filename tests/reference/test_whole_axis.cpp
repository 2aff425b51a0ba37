// Blocks along a whole axis (rowwise, colwise) and over the whole tensor (tensorwise), for
// extents that are not powers of two, against an independent per-row / per-column computation.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "reference/reference_test_util.hpp"
#include "backends/reference/numerics.hpp"

using namespace mxjit;
using namespace mxjit::reference;

namespace {

constexpr int64_t R = 5, C = 300;

/// The FP32 recipe of one block, step by step: r = 448 / max(amax, 1e-12) (NaN kept), codes x * r.
void expect_block(const std::vector<float>& v, const std::vector<int64_t>& members, float stored, const uint8_t* codes) {
  float a = 0;
  bool nan = false;
  for (int64_t i : members) {
    nan = nan || std::isnan(v[size_t(i)]);
    a = std::max(a, std::fabs(v[size_t(i)]));
  }
  if (nan) a = std::numeric_limits<float>::quiet_NaN();
  const float r = 448.0f / (std::isnan(a) ? a : std::max(a, 1e-12f));
  CHECK(std::bit_cast<uint32_t>(stored) == std::bit_cast<uint32_t>(1.0f / r));
  int bad = 0;
  for (int64_t i : members) bad += codes[i] != encode_rne(e4m3, v[size_t(i)] * r);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("whole-axis blocks: rowwise, colwise and tensorwise FP32 scales of a 5x300 tensor") {
  std::vector<float> v(size_t(R * C));
  std::mt19937 rng(34);
  std::normal_distribution<float> d(0.0f, 4.0f);
  for (float& f : v) f = d(rng);
  for (int64_t c = 0; c < C; ++c) v[size_t(2 * C + c)] = 0.0f;  // an all-zero row
  v[size_t(3 * C + 7)] = std::numeric_limits<float>::quiet_NaN();
  v[size_t(4 * C + 299)] = 1e30f;
  auto x = input("x", DType::f32, rank(2));
  auto run = [&](Blocks b) {
    auto s = f32_scale(amax(b), e4m3);
    const Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
    return test::run_reference(p, {test::f32_view(v, {R, C})}, {R, C});
  };

  auto rows = run(blocks(x, 1, kWholeAxis));
  CHECK(rows[1].geometry.logical_shape == std::vector<int64_t>{R, 1});
  for (int64_t r = 0; r < R; ++r) {
    std::vector<int64_t> m;
    for (int64_t c = 0; c < C; ++c) m.push_back(r * C + c);
    expect_block(v, m, rows[1].f32()[r], rows[0].u8());
  }
  auto cols = run(blocks(x, 0, kWholeAxis));
  CHECK(cols[1].geometry.logical_shape == std::vector<int64_t>{1, C});
  for (int64_t c = 0; c < C; ++c) {
    std::vector<int64_t> m;
    for (int64_t r = 0; r < R; ++r) m.push_back(r * C + c);
    expect_block(v, m, cols[1].f32()[c], cols[0].u8());
  }
  // Tensorwise without the NaN: one scale.
  v[size_t(3 * C + 7)] = 1.0f;
  auto all = run(blocks(x, {0, 1}, {kWholeAxis, kWholeAxis}));
  CHECK(all[1].geometry.logical_shape == std::vector<int64_t>{1, 1});
  std::vector<int64_t> m;
  for (int64_t i = 0; i < R * C; ++i) m.push_back(i);
  expect_block(v, m, all[1].f32()[0], all[0].u8());
  // All rows by 128 columns (the last block 44 wide).
  auto mixed = run(blocks(x, {0, 1}, {kWholeAxis, 128}));
  CHECK(mixed[1].geometry.logical_shape == std::vector<int64_t>{1, 3});
  std::vector<int64_t> tail;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 256; c < C; ++c) tail.push_back(r * C + c);
  expect_block(v, tail, mixed[1].f32()[2], mixed[0].u8());
  CHECK(blocks(x, 1, kWholeAxis).node()->block.str() == "blocks(1,whole)");
}

TEST_CASE(
    "tensor amax outputs: NaN kept (amax(x)) or skipped (amax(x, AmaxNan::ignore)), the tensorwise pre-pass's two rules") {
  std::vector<float> v = {1.5f, -3.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, -0.0f, 0.25f};
  auto x = input("x", DType::f32, rank(1));
  auto run = [&](Amax a) {
    return test::run_reference(pipeline({output("a", a)}), {test::f32_view(v, {6})}, {6})[0].f32()[0];
  };
  CHECK(std::isnan(run(amax(x))));
  CHECK(std::isnan(run(amax(x, AmaxNan::propagate))));
  CHECK(std::bit_cast<uint32_t>(run(amax(x, AmaxNan::ignore))) == std::bit_cast<uint32_t>(3.0f));
  v = {-std::numeric_limits<float>::infinity(), 1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f, 0.0f};
  CHECK(run(amax(x, AmaxNan::ignore)) == std::numeric_limits<float>::infinity());
  v = {std::numeric_limits<float>::quiet_NaN(), -0.0f, -0.0f, -0.0f, -0.0f, -0.0f};
  CHECK(std::bit_cast<uint32_t>(run(amax(x, AmaxNan::ignore))) == 0u);  // +0: NaN and -0 only
  // The NaN rule is part of the node (and so of the hash); the propagating form keeps its text.
  CHECK(canonical(amax(x, AmaxNan::ignore).node()) == "tensor_amax[amax_fmax](input[x f32 r1])");
  CHECK(canonical(amax(x, AmaxNan::propagate).node()) == canonical(amax(x).node()));
  CHECK(pipeline({output("a", amax(x))}).hash() != pipeline({output("a", amax(x, AmaxNan::ignore))}).hash());
}
