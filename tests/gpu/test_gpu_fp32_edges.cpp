// GPU kernels at the edges of FP32 (issue 36), every byte against the reference with poisoned
// outputs: block maxima at and around FLT_MAX (including blocks the EVEN rule rounds past it), at
// 2^-126 and 2^-149, subnormals, for every rule, element format and scale kind, f32 and bf16
// inputs, in every kernel shape (direct, columns, tiled). Skips (one line per test) without a GPU.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "dsl/text.hpp"
#include "gpu/check.hpp"
#include "support/fp32_edges.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

// The standard formats, then user formats (fp(e,0): EVEN's tie is the integer bit's).
const ElemFormat kFormats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8, fp_format(1, 0), fp_format(4, 0), fp_format(3, 3)};
const ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};

Pipeline single_cast(DType dt, int axis, ElemFormat f, ScaleRule rule, NanPolicy policy) {
  auto x = input("x", dt, rank(2));
  auto s = e8m0_scale(amax(blocks(x, axis, 32)), f, rule, policy);
  return pipeline({output("q", cast(f, x / s), axis == 0 ? layout::col_major() : layout::row_major()),
                   output("s", s, axis == 0 ? layout::blocked_128x4() : layout::linear())});
}

/// Runs `p` on one input of `dt` and `shape` whose blocks have amax `edge` (fill_edge).
int64_t run_edge(const Pipeline& p, DType dt, std::vector<int64_t> shape, float edge, uint64_t seed) {
  std::vector<HostTensor> in;
  in.emplace_back(dt, shape);
  fill_edge(in.back(), edge, seed);
  return check_against_reference(jit(p), in, fmt::format("{} amax {:a} [{}]", p.str().substr(0, 80), edge, fmt::join(shape, ",")));
}

}  // namespace

TEST_CASE("fp32 edges gpu: block maxima at FP32 edges, every rule and format, dim0 (direct) and dim1 (columns, tiled)") {
  MXJIT_REQUIRE_GPU();
  int n = 0;
  for (DType dt : {DType::bf16, DType::f32}) {
    const std::vector<float> edges = dt == DType::f32 ? fp32_edge_amaxes() : bf16_edge_amaxes();
    for (ElemFormat f : kFormats)
      for (ScaleRule r : kRules)
        for (int axis : {1, 0}) {
          const Pipeline p = single_cast(dt, axis, f, r, (n % 2) ? NanPolicy::satfinite : NanPolicy::nan_block);
          for (size_t e = 0; e < edges.size(); ++e) {
            CHECK(run_edge(p, dt, {256, 160}, edges[e], 100 + e) == 0);
            CHECK(run_edge(p, dt, {130, 66}, edges[e], 200 + e) == 0);
          }
          ++n;
        }
  }
  MESSAGE("FP32-edge single casts: " << n);
}

TEST_CASE("fp32 edges gpu: block maxima at FP32 edges, FP32 and NVFP4 scales, 2-D blocks, dim0+dim1 from one read") {
  MXJIT_REQUIRE_GPU();
  int n = 0;
  for (DType dt : {DType::bf16, DType::f32}) {
    const std::vector<float> edges = dt == DType::f32 ? fp32_edge_amaxes() : bf16_edge_amaxes();
    const std::string in = dt == DType::f32 ? "f32[2]" : "bf16[2]";
    for (const char* rest : {" -> fp8.e4m3", " -> fp8.e5m2 blocks(0,32) q:col_major", " -> nvfp4 te", " -> nvfp4 torchao amax",
                             " -> nvfp4 te blocks(0,16) q:col_major s:blocked128x4", " -> mxfp8.e4m3 even blocks(0,1,32x32)",
                             " -> mxint8 even blocks(0,1,32x32)",
                             " -> mxfp8.e4m3 even blocks(1,32) ; mxfp8.e4m3 even blocks(0,32) q:col_major s:blocked128x4",
                             " -> mxfp4.e2m1 even ; mxfp4.e2m1 rceil blocks(0,32) q:col_major"}) {
      const Pipeline p = parse_pipeline(in + rest);
      for (size_t e = 0; e < edges.size(); ++e) CHECK(run_edge(p, dt, {256, 192}, edges[e], 300 + e) == 0);
      ++n;
    }
  }
  MESSAGE("FP32-edge pipelines: " << n);
}

