// Masked rows on the LLVM CPU backend: bit-exact with the reference, whichever tile axis the
// masked axis becomes (tile rows, tile columns for a column-major input, a batch axis).
#include <doctest/doctest.h>

#include "dsl/errors.hpp"
#include "llvm/cpu_check.hpp"
#include "reference/reference_test_util.hpp"
#include "support/masked_rows.hpp"

using namespace mxjit;
using namespace mxjit::test;

TEST_CASE("cpu masked rows: SGLang's masked casts equal the reference, random and adversarial") {
  MXJIT_REQUIRE_CPU_BACKEND();
  for (MaskCase& c : mask_cases()) {
    CAPTURE(c.name);
    const Pipeline p = pipeline(c.outs, c.mask);
    const cpu::CpuKernel k = cpu::cpu_jit(p);
    for (bool adversarial : {false, true}) {
      std::vector<HostTensor> in;
      in.push_back(random_input(p.inputs()[0].dtype, c.domain, 11 + adversarial, adversarial));
      in.push_back(counts_tensor(mask_counts(c.domain[size_t(c.mask.by)], c.domain[size_t(c.mask.axis)])));
      CHECK(check_cpu(k, in, c.name, c.domain) == 0);
    }
  }
}

TEST_CASE("cpu masked rows: a column-major input (the masked axis along the tile columns) and a batch axis") {
  MXJIT_REQUIRE_CPU_BACKEND();
  // x [E, T, K] stored K-major inside each expert: T is the unit-stride axis.
  const std::vector<int64_t> domain = {4, 45, 256};
  const Pipeline p = pipeline(sglang_masked_cast(DType::bf16, layout::mn_major_tma(), false, 3, 32), mask(1, 0, "m"));
  std::vector<HostTensor> in;
  in.push_back(random_input(DType::bf16, domain, 5, true, {45 * 256, 1, 45}));
  in.push_back(counts_tensor(mask_counts(4, 45)));
  CHECK(check_cpu(cpu::cpu_jit(p), in, "column-major", domain) == 0);
  // [E, A, T, K] masked along A: a batch axis of the tiles.
  const std::vector<int64_t> d4 = {3, 7, 9, 64};
  const Pipeline p4 = pipeline(sglang_masked_cast(DType::f32, layout::linear(), false, 4, 32), mask(1, 0, "m"));
  std::vector<HostTensor> in4;
  in4.push_back(random_input(DType::f32, d4, 6, true));
  in4.push_back(counts_tensor({7, 0, 4}));
  CHECK(check_cpu(cpu::cpu_jit(p4), in4, "batch axis", d4) == 0);
  // Counts outside [0, extent] are refused as on the reference.
  HostTensor x = random_input(DType::f32, d4, 6, false), n = counts_tensor({7, 8, 4});
  std::vector<HostOutput> out(p4.outputs().size());
  std::vector<TensorView> views;
  for (size_t o = 0; o < out.size(); ++o) {
    out[o].geometry = output_geometry(p4, int(o), d4);
    out[o].dtype = p4.outputs()[o].dtype;
    out[o].bytes.assign(size_t(out[o].geometry.storage_bytes), 0);
    views.push_back(out[o].view());
  }
  const std::vector<TensorView> ins = {x.v, n.v};
  CHECK_THROWS_WITH_AS(cpu::cpu_jit(p4)(ins, views, 1), doctest::Contains("count [1] = 8 is outside [0, 7]"), UsageError);
}
