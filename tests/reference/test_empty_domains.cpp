// Empty domains on the reference (issue 36): any extent 0 costs O(1) whatever the other extents
// (once: a coordinate table per axis, gigabytes for (0, 10^9), a length_error for (0, 2^62)), and
// the scales of jagged groups over an empty axis are those of zero blocks.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <limits>
#include <vector>

#include "dsl/text.hpp"
#include "reference_test_util.hpp"

using namespace mxjit;

TEST_CASE("empty domains: every output empty, no work, whatever the other extents") {
  const int64_t huge = int64_t(1) << 62, top = std::numeric_limits<int64_t>::max();
  const Pipeline p = parse_pipeline("f32[3] -> mxint8 ; mxfp4.e2m1 blocks(1,32) q:perm(0,2,1) s:blocked8x4 amax");
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
           {0, huge, huge}, {huge, huge, 0}, {top, 0, top}, {0, 1000000000, 64}, {4, 64, 0}}) {
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    CAPTURE(shape[2]);
    std::vector<float> none(1);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<test::HostOutput> outs =
        test::run_reference(p, {TensorView::contiguous(none.data(), DType::f32, shape)}, shape);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
    for (size_t o = 0; o < outs.size(); ++o) CHECK(outs[o].bytes.size() == (o + 1 == outs.size() ? 4u : 0u));
    CHECK(outs.back().f32()[0] == 0.0f);  // the amax of no element
  }
}

TEST_CASE("empty domains: jagged groups over zero rows have zero-block scales") {
  for (const char* spec : {"bf16[2] -> fp8.e4m3 groups(0,offs)", "bf16[2] -> mxfp8.e4m3 rceil groups(0,offs)"}) {
    CAPTURE(spec);
    const Pipeline p = parse_pipeline(spec);
    std::vector<uint16_t> none(1);
    std::vector<int32_t> ends = {0, 0, 0};
    const std::vector<test::HostOutput> outs =
        test::run_reference(p, {TensorView::contiguous(none.data(), DType::bf16, {0, 96}),
                                TensorView::contiguous(ends.data(), DType::i32, {3})},
                            {0, 96}, 3);
    REQUIRE(outs[1].geometry.view_shape == std::vector<int64_t>{3, 96});
    if (outs[1].dtype == DType::f32) {
      // FP32 scale of amax 0: r = fp32(448 / max(0, 1e-12)), stored 1 / r (docs/numerics.md).
      const float r = 448.0f / 1e-12f;
      for (int i = 0; i < 3 * 96; ++i) CHECK(outs[1].f32()[i] == 1.0f / r);
    } else {
      for (int i = 0; i < 3 * 96; ++i) CHECK(outs[1].u8()[i] == 0);
    }
  }
}

TEST_CASE("empty domains: prologues with scalars (found by the generator fuzzer)") {
  // x * 1e-30 over an empty domain: the scalar's one value once made a one-element result, read
  // from the empty tensor's values (a segfault).
  auto x = input("x", DType::f16, rank(3));
  const Expr v = x * 1e-30;
  auto s = e8m0_scale(amax(blocks(v, 1, 2)), e3m2, ScaleRule::floor);
  const Pipeline p = pipeline({output("q", cast(e3m2, v / s)), output("s", s), output("v", max(v, Expr(2.0)) + 1.0, DType::f32)});
  std::vector<uint16_t> none(1);
  const std::vector<test::HostOutput> outs =
      test::run_reference(p, {TensorView::contiguous(none.data(), DType::f16, {0, 64, 64})}, {0, 64, 64});
  for (const test::HostOutput& o : outs) CHECK(o.bytes.empty());
}
