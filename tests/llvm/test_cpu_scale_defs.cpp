// CPU backend bit-exactness for scale definitions that are no library recipe (dsl/dsl.hpp
// ScaleDef): the backend interprets them as the reference does, on adversarial data.
#include <doctest/doctest.h>

#include "bench/blockwise.hpp"
#include "dsl/errors.hpp"
#include "llvm/cpu_check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

int64_t run_def(const ScaleDef& def, ElemFormat f, int axis, int64_t block, Saturate sat = Saturate::finite,
                std::vector<int64_t> shape = {96, 160}) {
  auto x = input("x", DType::bf16, rank(2));
  const Scale s = scale(amax(blocks(x, axis, block)), f, def);
  const Pipeline p = pipeline({output("q", cast(f, x / s, Round::nearest_even, sat)), output("s", s)});
  cpu::CpuKernel k = cpu::cpu_jit(p);
  int64_t bad = 0;
  for (uint64_t seed : {1u, 2u}) {
    std::vector<HostTensor> in;
    in.push_back(random_input(DType::bf16, shape, seed, true));
    bad += check_cpu(k, in, scale_definition(*s.node()));
  }
  return bad;
}

}  // namespace

TEST_SUITE("llvm") {

TEST_CASE("scale definitions: NaN-skipping amax, division, both clamps, bf16 and E8M0 storage, Saturate::none") {
  MXJIT_REQUIRE_CPU_BACKEND();
  ScaleDef vllm;  // amax from fmaxf, s = max(amax, eps) / 448, elements fminf(fmaxf(x / s, -448), 448)
  vllm.stored = fmax(amax_var(), 1e-10) / 448.0;
  vllm.factor = stored_var();
  vllm.apply = Apply::divide;
  vllm.clamp = Clamp::ignore_nan;
  vllm.clamp_lo = -448;
  vllm.clamp_hi = 448;
  vllm.amax_nan = AmaxNan::ignore;
  CHECK(run_def(vllm, e4m3, 1, 128) == 0);
  CHECK(run_def(vllm, e4m3, 0, 32) == 0);
  ScaleDef keep = vllm;
  keep.clamp = Clamp::propagate_nan;
  keep.amax_nan = AmaxNan::propagate;
  CHECK(run_def(keep, e4m3, 1, 64) == 0);

  ScaleDef te;  // q = 448 / amax (1 for 0, Inf, NaN), rounded down to a power of two; stores 1 / q
  const Expr a = amax_var();
  const Expr q = where(isinf(a) || isnan(a) || a == 0.0, 1.0, pow2_floor(448.0 / a));
  te.stored = 1.0 / q;
  te.factor = q;
  te.amax_nan = AmaxNan::ignore;
  CHECK(run_def(te, e4m3, 1, 128) == 0);
  te.format = ScaleFormat::bf16;
  CHECK(run_def(te, e4m3, 1, 32) == 0);

  ScaleDef ue8m0;  // DeepGEMM: s = pow2_ceil(max(amax, 1e-4) * fp32(1/448)) as E8M0, elements x * (1 / s)
  ue8m0.format = ScaleFormat::e8m0;
  ue8m0.stored = pow2_ceil(max(amax_var(), 1e-4) * double(1.0f / 448.0f));
  ue8m0.zero_if = amax_var() < 1e-30;
  ue8m0.nan_if = isnan(stored_var());
  CHECK(run_def(ue8m0, e4m3, 1, 32) == 0);
  CHECK(run_def(ue8m0, e5m2, 0, 32) == 0);

  ScaleDef unscaled;  // torch's .to(float8_e4m3fn) of x * (448 / amax): Saturate::none
  unscaled.stored = amax_var() / 600.0;  // elements up to 600: beyond E4M3 (464 and up: NaN)
  CHECK(run_def(unscaled, e4m3, 1, 32, Saturate::none) == 0);
  CHECK(run_def(unscaled, e5m2, 1, 32, Saturate::none) == 0);
}

TEST_CASE("scale definitions: a two-level definition reads the tensor amax") {
  MXJIT_REQUIRE_CPU_BACKEND();
  ScaleDef d;  // a per-tensor FP32 factor times a per-block E4M3 one, as NVFP4 but for FP8 elements
  d.format = ScaleFormat::e4m3;
  d.stored = min(amax_var() / (tamax_var() / 448.0), 448.0);
  d.factor = where(stored_var() == 0.0, 0.0, 448.0 / (stored_var() * (tamax_var() / 448.0)));
  d.amax_nan = AmaxNan::ignore;
  CHECK(run_def(d, e4m3, 1, 32) == 0);
}

TEST_CASE("the blockwise bench rows (bench/blockwise.hpp): every output byte as the reference's, padding included") {
  // The bench checks each row's GPU kernel against the reference on 130x224 before timing it; here the
  // CPU backend on that shape, on 128-multiples and on a 3-row sliver (the 4-aligned MN-major padding).
  MXJIT_REQUIRE_CPU_BACKEND();
  int n = 0;
  for (const bench::BlockwiseCase& c : bench::blockwise_cases()) {
    const Pipeline p = c.make();
    cpu::CpuKernel k = cpu::cpu_jit(p);
    for (std::vector<int64_t> shape : {std::vector<int64_t>{130, 224}, {256, 384}, {3, 520}}) {
      ++n;
      std::vector<HostTensor> in;
      in.push_back(random_input(DType::bf16, shape, uint64_t(n), n % 2 == 0));  // every other one adversarial
      CHECK(check_cpu(k, in, c.name) == 0);
    }
  }
}

}  // TEST_SUITE
