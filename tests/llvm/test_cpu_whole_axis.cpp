// CPU backend: blocks along a whole axis (rowwise, colwise, tensorwise, a whole axis beside a
// power-of-two block, torchao's 3-D MoE variants) are bit-identical with the reference for every
// scale definition, on random and adversarial inputs, extents that are not powers of two, one
// thread and all of them, with the outputs poisoned (cpu_check.hpp).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu_check.hpp"
#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/recipes.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

/// The scale definitions the whole-axis cases run: the library's FP32 recipe (torchao's Float8
/// rowwise / tensorwise), an E8M0 rule, and every peer recipe (both amax NaN policies).
std::vector<std::pair<std::string, ScaleDef>> definitions() {
  std::vector<std::pair<std::string, ScaleDef>> d;
  d.emplace_back("f32_multiplier", recipes::f32_multiplier(e4m3, {}));
  d.emplace_back("f32_multiplier pow2 stored r", recipes::f32_multiplier(e4m3, {.store_multiplier = true, .pow2 = true}));
  d.emplace_back("e8m0 rceil satfinite", recipes::e8m0(e4m3, ScaleRule::rceil, NanPolicy::satfinite));
  d.emplace_back("deepgemm", recipes::deepgemm(e4m3, false));
  d.emplace_back("deepgemm ue8m0", recipes::deepgemm(e4m3, true));
  d.emplace_back("vllm", recipes::vllm_group(e4m3, false));
  d.emplace_back("vllm ue8m0", recipes::vllm_group(e4m3, true));
  d.emplace_back("sglang", recipes::sglang_group(e4m3, false));
  d.emplace_back("sglang ue8m0", recipes::sglang_group(e4m3, true));
  d.emplace_back("te pow2", recipes::transformer_engine(e4m3, true));
  d.emplace_back("torchao blockwise e5m2", recipes::torchao_blockwise(e5m2));
  ScaleDef bf16 = recipes::transformer_engine(e4m3, false);
  bf16.format = ScaleFormat::bf16;
  d.emplace_back("te bf16 stored", bf16);
  ScaleDef keep = recipes::vllm_group(e4m3, false);  // the same sequence with a NaN-propagating amax
  keep.amax_nan = AmaxNan::propagate;
  keep.clamp = Clamp::propagate_nan;
  d.emplace_back("vllm propagate", keep);
  return d;
}

/// Writes adversarial rows / columns into a row-major f32 tensor of `shape` (last axis fastest):
/// an all-zero line, a NaN line, a line with one NaN, +-Inf, a 1e30 outlier, subnormals.
void plant(HostTensor& t, const std::vector<int64_t>& shape) {
  auto* v = reinterpret_cast<float*>(t.bytes.data());
  const int64_t n = shape.back(), lines = int64_t(t.bytes.size() - 64) / 4 / n;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < n; ++c) {
    if (lines > 0) v[c] = 0.0f;                                        // all-zero line
    if (lines > 1) v[n + c] = nan;                                     // all-NaN line
    if (lines > 4) v[4 * n + c] = std::ldexp(float(c % 7 + 1), -140);  // subnormals only
  }
  if (lines > 2) v[2 * n + n / 2] = nan;
  if (lines > 3) {
    v[3 * n] = inf;
    v[3 * n + n - 1] = -inf;
  }
  if (lines > 5) v[5 * n + n / 3] = 1e30f;
  if (lines > 6) v[6 * n + 1] = -1e30f;
}

/// Runs scale `def` over `spec` blocks of an f32 / bf16 input of `shape` against the reference:
/// random inputs, adversarial ones and the planted lines, with one thread and every thread.
int64_t run(const ScaleDef& def, const std::string& label, std::vector<int64_t> shape, std::vector<int> axes,
            std::vector<int64_t> sizes, DType dt = DType::f32, ElemFormat f = e4m3) {
  auto x = input("x", dt, rank(int(shape.size())));
  const Blocks b = axes.size() == 1 ? blocks(x, axes[0], sizes[0]) : blocks(x, {axes[0], axes[1]}, {sizes[0], sizes[1]});
  const Scale s = scale(amax(b), f, def);
  const Pipeline p = pipeline({output("q", cast(f, x / s, Round::nearest_even, Saturate::finite)), output("s", s)});
  const cpu::CpuKernel k = cpu::cpu_jit(p);
  int64_t bad = 0;
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::vector<HostTensor> in;
    in.push_back(random_input(dt, shape, seed, seed != 1));
    if (seed == 3 && dt == DType::f32) plant(in[0], shape);
    for (int threads : {1, 0})
      bad += check_cpu(k, in, fmt::format("{} {} [{}] seed {} threads {}", label, b.node()->block.str(),
                                          fmt::join(shape, "x"), seed, threads), {}, 0, threads);
  }
  return bad;
}

}  // namespace

TEST_SUITE("llvm") {

TEST_CASE("whole-axis blocks: rowwise, colwise, tensorwise and beside 128 on 2-D tensors, every definition") {
  MXJIT_REQUIRE_CPU_BACKEND();
  for (const auto& [name, def] : definitions()) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 300}, std::vector<int64_t>{7, 5120}}) {
      CHECK(run(def, name, shape, {1}, {kWholeAxis}) == 0);                          // rowwise
      CHECK(run(def, name, shape, {0}, {kWholeAxis}) == 0);                          // colwise
      CHECK(run(def, name, shape, {0, 1}, {kWholeAxis, kWholeAxis}) == 0);           // tensorwise
      CHECK(run(def, name, shape, {0, 1}, {kWholeAxis, 128}) == 0);                  // all rows x 128
    }
  }
}

TEST_CASE("whole-axis blocks: bf16 inputs, E5M2, a power-of-two block on the rows beside a whole row") {
  MXJIT_REQUIRE_CPU_BACKEND();
  const ScaleDef def = recipes::f32_multiplier(e5m2, {});
  CHECK(run(def, "bf16", {300, 5}, {1}, {kWholeAxis}, DType::bf16, e5m2) == 0);
  CHECK(run(def, "bf16", {300, 5}, {0}, {kWholeAxis}, DType::bf16, e5m2) == 0);
  CHECK(run(def, "32 x whole", {100, 77}, {0, 1}, {32, kWholeAxis}, DType::bf16, e5m2) == 0);
  CHECK(run(def, "whole x 16", {1000, 77}, {0, 1}, {kWholeAxis, 16}) == 0);
  // Taller than a tile along the whole axis, wider than a tile along the other.
  CHECK(run(def, "tall", {2100, 3}, {0}, {kWholeAxis}) == 0);
  CHECK(run(def, "wide", {3, 9000}, {1}, {kWholeAxis}) == 0);
  CHECK(run(def, "1-D", {12345}, {0}, {kWholeAxis}) == 0);
}

TEST_CASE("whole-axis blocks: 3-D (E, K, N) MoE weights, torchao's colwise and rowwise 3-D casts") {
  MXJIT_REQUIRE_CPU_BACKEND();
  const std::vector<int64_t> shape{3, 17, 129};
  for (const auto& [name, def] : definitions()) {
    CHECK(run(def, name, shape, {1}, {kWholeAxis}) == 0);  // whole K per (e, n): triton_fp8_colwise_3d_scale_and_cast
    CHECK(run(def, name, shape, {2}, {kWholeAxis}) == 0);  // whole N per (e, k)
  }
  const ScaleDef def = recipes::f32_multiplier(e4m3, {.store_multiplier = true, .pow2 = true});
  CHECK(run(def, "per expert", shape, {1, 2}, {kWholeAxis, kWholeAxis}) == 0);
  CHECK(run(def, "whole E", shape, {0}, {kWholeAxis}) == 0);
  CHECK(run(def, "whole E x K", shape, {0, 1}, {kWholeAxis, kWholeAxis}) == 0);
  CHECK(run(def, "whole E x 32 N", shape, {0, 2}, {kWholeAxis, 32}) == 0);
  CHECK(run(def, "whole K, bf16", {4, 300, 64}, {1}, {kWholeAxis}, DType::bf16) == 0);
}

TEST_CASE("whole-axis blocks: strided inputs, two instances, transposed codes, empty tensors") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::f32, rank(2));
  const Scale rows = f32_scale(amax(blocks(x, 1, kWholeAxis)), e4m3);
  const Scale cols = f32_scale(amax(blocks(x, 0, kWholeAxis)), e4m3, {.store_multiplier = true});
  // Rowwise and columnwise data from one read (torchao's dual cast), the colwise codes transposed.
  const Pipeline p = pipeline({output("qr", cast(e4m3, x / rows)), output("sr", rows),
                               output("qc", cast(e4m3, x / cols), layout::col_major()), output("sc", cols)});
  const cpu::CpuKernel k = cpu::cpu_jit(p);
  for (uint64_t seed : {4u, 5u}) {
    std::vector<HostTensor> in;
    in.push_back(random_input(DType::f32, {33, 301}, seed, true));
    CHECK(check_cpu(k, in, "dual") == 0);
    // A column-major input: the unit-stride axis is the rows.
    std::vector<HostTensor> t;
    t.push_back(random_input(DType::f32, {301, 33}, seed, true, {1, 301}));
    CHECK(check_cpu(k, t, "column-major input") == 0);
  }
  for (std::vector<int64_t> shape : {std::vector<int64_t>{0, 5}, std::vector<int64_t>{5, 0}}) {
    std::vector<HostTensor> in;
    in.push_back(random_input(DType::f32, shape, 1, true));
    CHECK(check_cpu(k, in, "empty") == 0);
  }
}

TEST_CASE("whole-axis blocks beside NVFP4's tensor amax, flushed and stochastic casts, E8M0, transposed scales") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  const Scale nv = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::torchao);
  const Scale rows = f32_scale(amax(blocks(x, 1, kWholeAxis)), e4m3);
  const Scale cols = scale(amax(blocks(x, 0, kWholeAxis)), e5m2, recipes::e8m0(e5m2, ScaleRule::rceil, NanPolicy::satfinite));
  const Pipeline p = pipeline(
      {output("q", cast(e2m1, x / nv)), output("s", nv),
       output("q1", cast(e4m3, x / rows, Round::stochastic, Saturate::finite, {7, 3, true})), output("s1", rows),
       output("q2", cast(e5m2, x / cols)), output("s2", cols, layout::col_major()), output("amax", amax(x))});
  const cpu::CpuKernel k = cpu::cpu_jit(p);
  for (uint64_t seed : {8u, 9u}) {
    std::vector<HostTensor> in;
    in.push_back(random_input(DType::bf16, {70, 96}, seed, true));
    CHECK(check_cpu(k, in, "nvfp4 + whole") == 0);
    CHECK(check_cpu(k, in, "nvfp4 + whole, one thread", {}, 0, 1) == 0);
  }
}

TEST_CASE("whole-axis blocks next to jagged groups are refused by name") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::bf16, rank(2));
  auto s = f32_scale(amax(blocks(x, 1, kWholeAxis)), e4m3);
  auto g = e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::rceil);
  const Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s), output("qg", cast(e4m3, x / g)),
                               output("sg", g)});
  CHECK_THROWS_WITH_AS(cpu::cpu_jit(p), doctest::Contains("whole-axis blocks next to jagged groups"), UsageError);
}

}  // TEST_SUITE

TEST_CASE("tensor amax outputs with NaN kept or skipped (the tensorwise pre-pass's rules)") {
  MXJIT_REQUIRE_CPU_BACKEND();
  auto x = input("x", DType::f32, rank(2));
  for (AmaxNan nan : {AmaxNan::propagate, AmaxNan::ignore}) {
    const cpu::CpuKernel k = cpu::cpu_jit(pipeline({output("a", amax(x, nan)), output("b", amax(x * 2.0, nan))}));
    for (uint64_t seed : {6u, 7u}) {
      std::vector<HostTensor> in;
      in.push_back(random_input(DType::f32, {37, 301}, seed, true));
      plant(in.back(), {37, 301});  // NaN, +-Inf, zeros, subnormals
      CHECK(check_cpu(k, in, nan == AmaxNan::ignore ? "amax skipping NaN" : "amax keeping NaN") == 0);
    }
  }
}
