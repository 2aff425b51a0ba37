// warmup() / compile_all: a job's kernels compiled on several threads at once, through the disk
// cache, so that the later compiles of the same kernels are disk hits; one refused pipeline does
// not stop the others, and its error comes back after they ended.
#include <doctest/doctest.h>

#include <cstdlib>

#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"
#include "runtime/kernel.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE("warmup compiles every kernel a job needs on several threads; the first error comes back after all ran") {
  const Target t = Target::parse("sm_100a");
  // Casts no other test compiles for sm_100a (fresh keys), one of them NVFP4 (its pre-pass too).
  const std::vector<Pipeline> ps = {parse_pipeline("bf16[2] -> mxfp6.e3m2 even satfinite blocks(1,64) s:blocked8x4"),
                                    parse_pipeline("f16[2] -> mxfp8.e5m2 ceil blocks(0,16) q:col_major"),
                                    parse_pipeline("f16[2] -> nvfp4 torchao blocks(1,16) s:blocked128x4")};
  warmup(ps, t, 3);
  for (const Pipeline& p : ps) {
    CAPTURE(to_text(p));
    const CompiledKernel k = compile(p, t, default_stride_class(p));
    CHECK(!k.cubin.empty());
    if (std::getenv("MXJIT_CACHE") == nullptr) CHECK(k.from_disk);
  }
  // compile_all keeps the order of its items.
  std::vector<WarmupItem> items;
  for (const Pipeline& p : ps) items.push_back({p, default_stride_class(p)});
  const std::vector<CompiledKernel> ks = compile_all(items, t, 2);
  REQUIRE(ks.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(ks[i].plan.kernel_name == compile(ps[i], t, default_stride_class(ps[i])).plan.kernel_name);
  // A pipeline the GPU generator refuses: UsageError, after the others compiled.
  const Pipeline refused = parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs) amax");
  items.insert(items.begin(), {refused, default_stride_class(refused)});
  CHECK_THROWS_AS(compile_all(items, t, 2), UsageError);
}
