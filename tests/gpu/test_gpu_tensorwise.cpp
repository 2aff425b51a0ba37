// Tensorwise casts (blocks whole on every axis: one scale for the tensor) on the GPU against the
// CPU reference byte for byte, codes and the one scale element: the tensor-amax pre-pass under
// the scale's NaN rule, then the direct kernel's elementwise form. torchao's Float8 tensorwise
// FP32 recipe (with and without the stored multiplier and power-of-two rounding), E8M0 rules and
// every peer definition (NaN-propagating and NaN-ignoring amax), E4M3 and E5M2 codes, flushed
// subnormals; shapes from 1x1 to 2048x5120 and rank 1; transposed, strided and unaligned inputs;
// tensors that are all zero, hold one NaN or infinity, bf16's largest value, subnormals only,
// or have their amax exactly at 448 * 2^k and at the FP32 edges. Outputs poisoned. Skips without
// a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "dsl/peer_recipes.hpp"
#include "gpu/check.hpp"
#include "support/fp32_edges.hpp"
#include "support/peer_casts.hpp"
#include "support/tensorwise_casts.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

/// Writes `f` at logical index `idx` of a bf16 (its bits truncated: exact for bf16 values) or f32 tensor.
void put(HostTensor& t, const std::vector<int64_t>& idx, float f) {
  const int64_t off = t.at(idx);
  REQUIRE(t.v.dtype != DType::f16);
  if (t.v.dtype == DType::f32) {
    std::memcpy(t.bytes.data() + size_t(off) * 4, &f, 4);
  } else {
    const uint16_t b = uint16_t(std::bit_cast<uint32_t>(f) >> 16);
    std::memcpy(t.bytes.data() + size_t(off) * 2, &b, 2);
  }
}

/// Every element (rank 1 or 2) from f(i, j).
void fill_with(HostTensor& t, const std::function<float(int64_t, int64_t)>& f) {
  const std::vector<int64_t>& s = t.v.shape;
  const int64_t rows = s.size() == 1 ? 1 : s[0], cols = s.back();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      put(t, s.size() == 1 ? std::vector<int64_t>{j} : std::vector<int64_t>{i, j}, f(i, j));
}

/// Random values (no NaN or infinity, so that the tensor's scale is a real one), then adversarial
/// ones without specials (zeros, subnormals, 448, ties, 2^100): bad bytes of both runs.
int64_t check_random(const Kernel& k, DType dt, const std::vector<int64_t>& shape, const std::string& label,
                     const std::vector<int64_t>& strides = {}, size_t out_shift = 0, size_t in_shift = 0) {
  int64_t bad = 0;
  for (bool adversarial : {false, true}) {
    std::vector<HostTensor> in;
    for (size_t i = 0; i < k.pipeline().inputs().size(); ++i) {
      in.emplace_back(dt, shape, strides);
      fill_random(in.back(), 0x7e45 + shape.back() * 7 + int64_t(i), adversarial, false);
    }
    bad += check_against_reference(
        k, in, fmt::format("{} [{}]{}", label, fmt::join(shape, ","), adversarial ? " adversarial" : ""), {}, 0,
        nullptr, out_shift, in_shift);
  }
  return bad;
}

/// The special tensors of shape 37x300 of `dt` (bf16 or f32), each run through `k`.
int64_t check_specials(const Kernel& k, DType dt, const std::string& label) {
  const std::vector<int64_t> shape{37, 300};
  std::vector<std::pair<std::string, std::function<void(HostTensor&)>>> cases;
  const auto random = [](HostTensor& t) { fill_random(t, 0x5eed, false, false); };
  cases.push_back({"all zeros", [](HostTensor&) {}});
  cases.push_back({"all -0", [](HostTensor& t) { fill_with(t, [](int64_t, int64_t) { return -0.0f; }); }});
  cases.push_back({"one NaN", [&](HostTensor& t) {
                     random(t);
                     put(t, {5, 17}, NAN);
                   }});
  cases.push_back({"NaN and +Inf", [&](HostTensor& t) {
                     random(t);
                     put(t, {0, 0}, NAN);
                     put(t, {36, 299}, INFINITY);
                   }});
  cases.push_back({"+Inf", [&](HostTensor& t) {
                     random(t);
                     put(t, {36, 299}, INFINITY);
                   }});
  cases.push_back({"-Inf", [&](HostTensor& t) {
                     random(t);
                     put(t, {20, 1}, -INFINITY);
                   }});
  cases.push_back({"bf16 max", [&](HostTensor& t) {
                     random(t);
                     put(t, {3, 4}, -f32_bits(0x7f7f0000));
                   }});
  cases.push_back({"subnormals only", [](HostTensor& t) {
                     fill_with(t, [](int64_t i, int64_t j) {
                       return std::ldexp(1.0f + float((i * 7 + j) % 64) / 64, -130 - int(j % 9)) *
                              ((i + j) % 3 ? 1 : -1);
                     });
                   }});
  cases.push_back(
      {"ties", [](HostTensor& t) {
         const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.5f, 13.0f, 448.0f, 464.0f, 240.0f};
         fill_with(t, [&](int64_t i, int64_t j) { return ties[(i * 300 + j) % 12] * ((i + j) % 2 ? 1 : -1); });
       }});
  for (int e : {-20, -1, 0, 5}) {
    const float a = std::ldexp(448.0f, e);
    cases.push_back({fmt::format("amax 448 * 2^{}", e), [a](HostTensor& t) { fill_edge(t, a, 0xed9e); }});
  }
  for (float a : dt == DType::f32 ? fp32_edge_amaxes() : bf16_edge_amaxes())
    cases.push_back({fmt::format("amax {:a}", a), [a](HostTensor& t) { fill_edge(t, a, 0xed9f); }});
  int64_t bad = 0;
  for (const auto& [name, fill] : cases) {
    std::vector<HostTensor> in;
    in.emplace_back(dt, shape);
    fill(in.back());
    bad += check_against_reference(k, in, fmt::format("{} {}: {}", label, dtype_name(dt), name));
  }
  return bad;
}

}  // namespace

TEST_CASE("tensorwise on the GPU: torchao's FP32 recipe, E4M3 and E5M2, shapes from 1x1 to 2048x5120, rank 1") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (F32ScaleOptions o :
         {F32ScaleOptions{}, F32ScaleOptions{true, false}, F32ScaleOptions{true, true}, F32ScaleOptions{false, true}})
      for (ElemFormat elem : {e4m3, e5m2}) {
        const Kernel k = jit(tensorwise(dt, 2, o, elem));
        const std::string l =
            fmt::format("{} {} multiplier={} pow2={}", dtype_name(dt), elem.str(), o.store_multiplier, o.pow2);
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 1}, {3, 5}, {37, 300}, {4097, 33}, {1, 4099}})
          bad += check_random(k, dt, shape, l);
      }
  for (F32ScaleOptions o : {F32ScaleOptions{}, F32ScaleOptions{true, true}})
    bad += check_random(jit(tensorwise(DType::bf16, 2, o)), DType::bf16, {2048, 5120},
                        fmt::format("large pow2={}", o.pow2));
  bad += check_random(jit(tensorwise(DType::f32, 2)), DType::f32, {2048, 5120}, "large f32");
  for (DType dt : {DType::bf16, DType::f32}) {
    const Kernel k = jit(tensorwise(dt, 1, {true, true}));
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(4099), int64_t(1000003)})
      bad += check_random(k, dt, {n}, fmt::format("rank 1 {}", dtype_name(dt)));
  }
  CHECK(bad == 0);
}

TEST_CASE(
    "tensorwise on the GPU: zeros, NaN, infinities, bf16's largest, subnormals only, amax at 448 * 2^k and the FP32 edges") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  auto cast_of = [](DType dt, auto make_scale, ElemFormat elem, Saturate sat = Saturate::finite, bool flush = false) {
    auto x = input("x", dt, rank(2));
    auto s = make_scale(amax(whole(x)));
    CastOptions co;
    co.flush_subnormals = flush;
    return jit(pipeline({output("q", cast(elem, x / s, Round::nearest_even, sat, co)), output("s", s)}));
  };
  for (DType dt : {DType::bf16, DType::f32}) {
    for (F32ScaleOptions o : {F32ScaleOptions{}, F32ScaleOptions{true, true}})
      for (bool flush : {false, true})
        bad += check_specials(cast_of(
                                  dt, [&](Amax a) { return f32_scale(a, e4m3, o); }, e4m3, Saturate::finite, flush),
                              dt, fmt::format("f32 pow2={} flush={}", o.pow2, flush));
    bad += check_specials(cast_of(
                              dt, [&](Amax a) { return f32_scale(a, e5m2); }, e5m2),
                          dt, "f32 e5m2");
    for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::even})
      for (NanPolicy policy : {NanPolicy::nan_block, NanPolicy::satfinite})
        bad += check_specials(cast_of(
                                  dt, [&](Amax a) { return e8m0_scale(a, e4m3, rule, policy); }, e4m3),
                              dt, fmt::format("e8m0 {} policy={}", rule_name(rule), int(policy)));
    bad += check_specials(
        cast_of(
            dt, [&](Amax a) { return e8m0_scale(a, e4m3, ScaleRule::floor); }, e4m3, Saturate::finite, true),
        dt, "e8m0 floor flush");
    for (const PeerDef& d : peer_defs(e4m3))
      bad += check_specials(
          cast_of(
              dt, [&](Amax a) { return scale(a, e4m3, d.def); }, e4m3, d.sat),
          dt, fmt::format("{} (amax NaN {})", d.name, d.def.amax_nan == AmaxNan::ignore ? "ignored" : "kept"));
  }
  CHECK(bad == 0);
}

TEST_CASE(
    "tensorwise on the GPU: transposed, strided and unaligned inputs, column-major codes, a prologue, two casts, schedules") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  const Kernel k = jit(tensorwise(DType::bf16, 2, {true, true}));
  bad += check_random(k, DType::bf16, {300, 37}, "column-major input", {1, 300});
  bad += check_random(k, DType::bf16, {4097, 33}, "column-major input", {1, 4097});
  bad += check_random(k, DType::bf16, {9, 301}, "odd row stride", {303, 1});
  // Outputs 4 bytes off 16-byte alignment (the FP32 scale stays aligned to its element).
  bad += check_random(k, DType::bf16, {37, 300}, "unaligned input and outputs", {}, 4, 2);
  bad += check_random(jit(tensorwise(DType::f32, 2, {}, e4m3, layout::col_major())), DType::f32, {37, 300},
                      "column-major codes");
  bad += check_random(jit(tensorwise(DType::bf16, 2, {}, e4m3, layout::col_major())), DType::bf16, {300, 37},
                      "column-major in and codes", {1, 300});
  {
    auto x = input("x", DType::bf16, rank(2));
    auto y = input("y", DType::bf16, rank(2));
    auto v = x * y;
    auto s = f32_scale(amax(whole(v)), e4m3);
    bad += check_random(jit(pipeline({output("q", cast(e4m3, v / s)), output("s", s)})), DType::bf16, {129, 257},
                        "product prologue");
  }
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s4 = f32_scale(amax(whole(x)), e4m3, {true, true});
    auto s5 = f32_scale(amax(whole(x)), e5m2);
    bad += check_random(jit(pipeline({output("q", cast(e4m3, x / s4)), output("s", s4),
                                      output("q1", cast(e5m2, x / s5)), output("s1", s5)})),
                        DType::bf16, {100, 200}, "E4M3 and E5M2 of one pre-pass");
    bad += check_random(
        jit(pipeline({output("q", cast(e4m3, x / s4, Round::stochastic, Saturate::finite, CastOptions{7, 3, false})),
                      output("s", s4)})),
        DType::bf16, {100, 200}, "stochastic rounding");
  }
  {
    // The scale in a padded strided layout (1 x 4 words, zeroed at launch) and a transposed one.
    auto x = input("x", DType::bf16, rank(2));
    auto s = f32_scale(amax(whole(x)), e4m3);
    for (const Layout& l : {Layout::parse("modes(0,1).align(1,4)"), layout::col_major()})
      bad += check_random(jit(pipeline({output("q", cast(e4m3, x / s)), output("s", s, l)})), DType::bf16, {33, 65},
                          "scales " + l.str());
  }
  for (const char* tu :
       {"tune(chunks_per_thread=1, ctas_per_sm=4)", "tune(threads=128, chunks_per_thread=2)", "tune(threads=1024)"}) {
    const Kernel kt = jit(tensorwise(DType::bf16, 2), current_target(), Schedule::parse(tu));
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 1}, {4097, 33}, {64, 8192}})
      bad += check_random(kt, DType::bf16, shape, tu);
  }
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 0}, {0, 7}, {0, 0}}) {
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, shape);
    bad += check_against_reference(k, in, fmt::format("empty [{}]", fmt::join(shape, ",")), shape);
  }
  CHECK(bad == 0);
}

TEST_CASE(
    "tensorwise on the GPU: the pre-pass's tensor amax, NaN kept or skipped, as an output (direct and tiled kernels)") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (DType dt : {DType::bf16, DType::f32})
    for (AmaxNan nan : {AmaxNan::propagate, AmaxNan::ignore}) {
      auto x = input("x", dt, rank(2));
      // Alone (the direct kernel: the pre-pass itself) and beside 32x32 blocks (the tiled kernel).
      auto s = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
      for (const Pipeline& p :
           {pipeline({output("a", amax(x, nan))}),
            pipeline({output("q", cast(e4m3, x / s)), output("s", s), output("a", amax(x, nan))})}) {
        const Kernel k = jit(p);
        const std::string l = fmt::format("amax {} NaN {} ({} outputs)", dtype_name(dt),
                                          nan == AmaxNan::ignore ? "skipped" : "kept", p.outputs().size());
        bad += check_random(k, dt, {4097, 33}, l);
        for (float special : {float(NAN), INFINITY, -0.0f}) {
          std::vector<HostTensor> in;
          in.emplace_back(dt, std::vector<int64_t>{4097, 33});
          fill_random(in.back(), 0xa3a, false, false);
          put(in.back(), {4000, 3}, special);
          bad += check_against_reference(k, in, fmt::format("{} with {}", l, special));
        }
      }
    }
  CHECK(bad == 0);
}
