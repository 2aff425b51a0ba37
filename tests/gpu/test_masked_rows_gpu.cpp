// Masked rows on the GPU (SGLang's masked_m): every byte against the reference, both starting
// from one poison so that a masked position written by the kernel shows; counts past the extent
// or negative (which the kernel clamps), unaligned buffers, DeepSeek-sized rows. Skips without a GPU.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gpu/check.hpp"
#include "runtime/compile.hpp"
#include "support/masked_rows.hpp"

using namespace mxjit;
using namespace mxjit::test;

TEST_CASE("masked rows gpu: SGLang's masked casts in every scale layout equal the reference, random and adversarial") {
  MXJIT_REQUIRE_GPU();
  for (MaskCase& c : mask_cases()) {
    CAPTURE(c.name);
    const Pipeline p = pipeline(c.outs, c.mask);
    const Kernel k = jit(p, current_target());
    for (bool adversarial : {false, true})
      for (size_t shift : {size_t(0), size_t(4)}) {  // 4: 16-byte loads and stores off
        std::vector<HostTensor> in;
        in.emplace_back(p.inputs()[0].dtype, c.domain);
        fill_random(in[0], 21 + adversarial, adversarial);
        in.push_back(counts_tensor(mask_counts(c.domain[size_t(c.mask.by)], c.domain[size_t(c.mask.axis)])));
        CHECK(check_against_reference(k, in, c.name, c.domain, 0, nullptr, shift, shift) == 0);
      }
  }
}

TEST_CASE("masked rows gpu: counts past the extent or negative are clamped to [0, extent]") {
  MXJIT_REQUIRE_GPU();
  const std::vector<int64_t> domain = {6, 53, 512};
  const Pipeline p = pipeline(sglang_masked_cast(DType::bf16, layout::mn_major_tma()), mask(1, 0, "masked_m"));
  std::vector<HostTensor> in, gpu_in;
  in.emplace_back(DType::bf16, domain);
  fill_random(in[0], 5, true);
  gpu_in.push_back(in[0]);
  gpu_in.back().v.data = gpu_in.back().bytes.data();
  const std::vector<int32_t> raw = {53, 0, 54, -3, 1 << 30, 17};
  std::vector<int32_t> clamped = raw;
  for (int32_t& c : clamped) c = std::clamp<int32_t>(c, 0, 53);
  in.push_back(counts_tensor(clamped));
  gpu_in.push_back(counts_tensor(raw));
  CHECK(check_against_reference(jit(p, current_target()), in, "clamped counts", domain, 0, &gpu_in) == 0);
}

TEST_CASE("masked rows gpu: DeepSeek-sized rows, E8M0 packed and FP32 MN-major scales, mostly masked") {
  MXJIT_REQUIRE_GPU();
  for (bool ue8m0 : {false, true}) {
    const std::vector<int64_t> domain = {8, 384, 7168};
    const Pipeline p = pipeline(
        sglang_masked_cast(DType::bf16, ue8m0 ? layout::mn_major_tma_packed() : layout::mn_major_tma(), ue8m0), mask(1, 0, "masked_m"));
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, domain);
    fill_random(in[0], 9, false);
    in.push_back(counts_tensor({384, 0, 1, 129, 200, 7, 383, 64}));
    CHECK(check_against_reference(jit(p, current_target()), in, fmt::format("[{}] ue8m0 {}", fmt::join(domain, ","), ue8m0), domain) == 0);
  }
}
