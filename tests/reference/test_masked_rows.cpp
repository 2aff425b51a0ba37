// Masked rows on the reference: a masked run writes what the unmasked run writes at real rows and
// leaves every masked position alone; counts outside [0, extent] are refused by name.
#include <doctest/doctest.h>

#include <string>

#include "dsl/errors.hpp"
#include "reference/reference_test_util.hpp"
#include "support/masked_rows.hpp"
#include "support/tensors.hpp"

using namespace mxjit;
using namespace mxjit::test;

TEST_CASE("masked rows: the reference writes the unmasked run's bytes at real rows and nothing at masked ones") {
  for (MaskCase& c : mask_cases()) {
    CAPTURE(c.name);
    const Pipeline plain = pipeline(c.outs);
    const Pipeline p = pipeline(c.outs, c.mask);
    for (bool adversarial : {false, true}) {
      HostTensor x(p.inputs()[0].dtype, c.domain);
      fill_random(x, 7 + adversarial, adversarial);
      const std::vector<int32_t> counts = mask_counts(c.domain[size_t(c.mask.by)], c.domain[size_t(c.mask.axis)]);
      HostTensor n = counts_tensor(counts);
      const std::vector<HostOutput> a = run_reference(plain, {x.v}, c.domain);
      const std::vector<HostOutput> b = run_reference(p, {x.v, n.v}, c.domain);
      for (size_t o = 0; o < p.outputs().size(); ++o) {
        CAPTURE(p.outputs()[o].name);
        const std::vector<uint8_t> want = masked_expectation(p, o, c.domain, counts, a[o].bytes, 0xCD);
        CHECK(want != a[o].bytes);  // some position is masked, so the mask shows
        CHECK(b[o].bytes == want);
      }
    }
  }
}

TEST_CASE("masked rows: counts outside [0, extent], of the wrong length or type are refused by name") {
  const std::vector<int64_t> domain = {4, 9, 256};
  const Pipeline p = pipeline(sglang_masked_cast(DType::bf16, layout::linear()), mask(1, 0, "masked_m"));
  HostTensor x(DType::bf16, domain);
  fill_random(x, 3, false);
  // Values of the counts (a device array a GPU kernel clamps) are an IndexValuesError, the input's
  // dtype or shape a plain UsageError.
  const auto message = [&](const HostTensor& n) {
    try {
      run_reference(p, {x.v, n.v}, domain);
    } catch (const IndexValuesError& e) {
      return "values: " + std::string(e.what());
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    FAIL_CHECK("expected UsageError");
    return std::string();
  };
  CHECK(message(counts_tensor({9, 0, -1, 3})).find("values: counts 'masked_m': count [2] = -1 is outside [0, 9]") == 0);
  CHECK(message(counts_tensor({9, 10, 1, 3})).find("values: counts 'masked_m': count [1] = 10 is outside [0, 9]") == 0);
  CHECK(message(counts_tensor({9, 0, 1})).find("input 'masked_m'") == 0);
  HostTensor f(DType::f32, {4});
  CHECK(message(f).find("input 'masked_m': dtype must be i32") != std::string::npos);
  CHECK_NOTHROW(run_reference(p, {x.v, counts_tensor({9, 0, 9, 0}).v}, domain));
}
