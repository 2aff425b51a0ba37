// The GPU generator on hostile pipelines: rank-1 domains, blocks far longer than a tile. Each
// either compiles with NVRTC for sm_90a and sm_100a or is refused with a UsageError when the
// kernel is generated, never a crash or an NVRTC error.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "dsl/text.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE("hostile: rank-1 casts compile for every block size, format and input type" * doctest::test_suite("slow")) {
  // The direct kernel (blocks of 8..256 along the one axis) once took the row axes' last element
  // of an empty list; the tiled one takes the other sizes.
  std::vector<test::CompileVariant> vs;
  const ElemFormat formats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};
  int k = 0;
  for (int64_t block : {2, 4, 8, 16, 32, 64, 256, 512})
    for (DType dt : {DType::bf16, DType::f32}) {
      const ElemFormat f = formats[size_t(k++) % 6];
      auto x = input("x", dt, rank(1));
      auto s = e8m0_scale(amax(blocks(x, 0, block)), f, ScaleRule::rceil);
      const Pipeline p = pipeline({output("q", cast(f, x / s)), output("s", s), output("a", amax(x))});
      vs.push_back({fmt::format("rank 1, {} blocks of {} to {}", dtype_name(dt), block, f.str()), p, default_stride_class(p)});
    }
  for (const char* spec : {"f32[1] -> mxfp8.e4m3", "bf16[1] -> mxfp4.e2m1 even", "f16[1] -> nvfp4 torchao",
                           "bf16[1] -> fp8.e5m2 blocks(0,128)"}) {
    const Pipeline p = parse_pipeline(spec);
    vs.push_back({spec, p, default_stride_class(p)});
  }
  CHECK(test::compile_variants(vs) == 2 * int(vs.size()));
}

TEST_CASE("hostile: blocks that cannot fit a GPU tile are a UsageError when the kernel is generated") {
  const Target t = Target::parse("sm_90a");
  const std::vector<std::string> specs = {
      "bf16[2] -> mxfp8.e4m3 blocks(1,65536)",                 // fits no tile of 200 KiB
      "bf16[2] -> mxfp8.e4m3 blocks(1,2147483648)",            // 2^31: narrowed to int, once negative
      "bf16[2] -> mxfp8.e4m3 blocks(1,4294967296)",            // 2^32: narrowed to 0
      "bf16[2] -> mxfp8.e4m3 blocks(1,1099511627776)",         // 2^40, the DSL's limit
      "bf16[2] -> mxfp8.e4m3 blocks(0,1099511627776)",         // along the tile's rows
      "f32[2] -> mxint8 blocks(0,1,2147483648x2)",             // 2-D
      "bf16[1] -> mxfp8.e4m3 blocks(0,4294967296)",            // rank 1
      "bf16[3] -> mxfp8.e4m3 blocks(0,1073741824) ; mxfp8.e4m3 blocks(2,32)",
  };
  for (const std::string& spec : specs) {
    CAPTURE(spec);
    const Pipeline p = parse_pipeline(spec);
    std::string msg;
    try {
      generate(p, t, default_stride_class(p));
    } catch (const UsageError& e) {
      msg = e.what();
    }
    CHECK(msg.find("GPU generator: blocks of ") != std::string::npos);
    CHECK(msg.find("do not fit one tile of 51200 FP32 values in shared memory") != std::string::npos);
  }
}

TEST_CASE("scales without their codes: the tile covers the scales' block axis (found by the generator fuzzer on an H100)") {
  // A pipeline that outputs only the FP32 scales of blocks along axis 0 of a rank-3 tensor once
  // tiled axes 1 and 2 (the block axis became a batch axis: one-element blocks, scales written
  // past their tensor). Every block axis, codes' or scales', is a tile axis.
  const Target t = Target::parse("sm_90a");
  for (int axis : {0, 1}) {
    CAPTURE(axis);
    auto x = input("x", DType::f32, rank(3));
    auto s = f32_scale(amax(blocks(x * 0.5, axis, 32)), e5m2);
    const Pipeline p = pipeline({output("s", s)});
    const Plan plan = make_plan(p, t, default_stride_class(p));
    CHECK((plan.ax_r == axis || plan.ax_c == axis));
    CHECK(std::find(plan.batch_axes.begin(), plan.batch_axes.end(), axis) == plan.batch_axes.end());
  }
  auto x = input("x", DType::bf16, rank(3));
  auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  const Pipeline p = pipeline({output("s", s)});
  CHECK(make_plan(p, t, default_stride_class(p)).ax_r == 0);
  std::vector<test::CompileVariant> vs{{"scales only, blocks along axis 0", p, default_stride_class(p)}};
  CHECK(test::compile_variants(vs) > 0);
}
