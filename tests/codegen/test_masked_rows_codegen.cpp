// Masked rows in the CUDA generator: SGLang's masked casts run on the direct kernel, whose rows'
// `ok` reads the count; every variant compiles for sm_90a and sm_100a; other kernels refuse a mask.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "support/compile_variants.hpp"
#include "support/masked_rows.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE("masked rows codegen: the direct kernel reads the count of each row's expert, for both arches") {
  std::vector<test::CompileVariant> vs;
  for (test::MaskCase& c : test::mask_cases()) {
    CAPTURE(c.name);
    const Pipeline p = pipeline(c.outs, c.mask);
    const GeneratedKernel g = generate(p, Target::parse("sm_90a"), default_stride_class(p));
    CHECK(g.plan.kind == KernelKind::direct);
    CHECK(g.source.find(fmt::format("// mask({}, {}, 'masked_m')", c.mask.axis, c.mask.by)) != std::string::npos);
    CHECK(g.source.find(fmt::format("static_cast<const int*>(P.in[{}])", p.counts_input())) != std::string::npos);
    // The unmasked cast has none of it.
    CHECK(generate(pipeline(c.outs), Target::parse("sm_90a"), default_stride_class(pipeline(c.outs))).source.find("mask(") ==
          std::string::npos);
    vs.push_back({c.name, p, default_stride_class(p)});
  }
  CHECK(test::compile_variants(vs) == 2 * int(vs.size()));
}

TEST_CASE("masked rows codegen: casts that do not run on the direct kernel refuse a mask by name") {
  const auto refusal = [](const Pipeline& p) {
    try {
      generate(p, Target::parse("sm_90a"), default_stride_class(p));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    FAIL_CHECK("generated: " << p.str());
    return std::string();
  };
  auto x = input("x", DType::bf16, rank(3));
  // Rowwise FP8 (a whole-axis block along the last axis): the rows kernel.
  auto sw = scale(amax(blocks(x, 2, kWholeAxis)), e4m3, recipes::vllm_group(e4m3, false));
  CHECK(refusal(pipeline({output("q", cast(e4m3, x / sw)), output("s", sw)}, mask(1, 0, "m")))
            .find("GPU generator: mask(1, 0, 'm') runs on the direct kernel") != std::string::npos);
  // 32x32 blocks of the last two axes of x [E, T, A, K]: not the direct kernel's 1-D rows.
  auto x4 = input("x", DType::bf16, rank(4));
  auto s = e8m0_scale(amax(blocks(x4, {2, 3}, {32, 32})), e4m3, ScaleRule::rceil);
  const std::string m = refusal(pipeline({output("q", cast(e4m3, x4 / s)), output("s", s)}, mask(1, 0, "m")));
  CHECK(m.find("runs on the direct kernel") != std::string::npos);
  CHECK(m.find("The CPU backends run it") != std::string::npos);
  // Counts per column of a dequantized [16, 4]: one count per chunk row cannot say it (generator
  // fuzzer seed 428, where the kernel read an index it never declared).
  auto codes = dequantize("q", "s", e4m3, ScaleFormat::e8m0, rank(2), 1, 32);
  const std::string d = refusal(pipeline({output("v", codes, DType::bf16)}, mask(0, 1, "cnt")));
  CHECK(d.find("GPU generator: mask(0, 1, 'cnt') runs on the direct kernel") != std::string::npos);
  CHECK(d.find("axis 1 along its chunks' columns") != std::string::npos);
}
