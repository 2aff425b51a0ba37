// The CPU backend at the edges of FP32 (issue 36): block maxima at and around FLT_MAX (including
// blocks the EVEN rule rounds past it), at 2^-126 and 2^-149, subnormals, for every rule, element
// format and scale kind, f32 and bf16 inputs, dim0 and dim1; bit-identical with the reference.
#include <string>
#include <vector>

#include "cpu_check.hpp"
#include "dsl/text.hpp"
#include "support/fp32_edges.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

constexpr ElemFormat kFormats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};
constexpr ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};

/// Every rule of `f`, along both axes (dim1 codes column-major): 8 casts, 16 outputs.
Pipeline every_rule(DType dt, ElemFormat f, NanPolicy policy) {
  auto x = input("x", dt, rank(2));
  std::vector<Output> outs;
  for (ScaleRule r : kRules)
    for (int axis : {1, 0}) {
      auto s = e8m0_scale(amax(blocks(x, axis, 32)), f, r, policy);
      const std::string k = std::to_string(outs.size() / 2);
      outs.push_back(output("q" + k, cast(f, x / s), axis == 0 ? layout::col_major() : layout::row_major()));
      outs.push_back(output("s" + k, s, axis == 0 ? layout::blocked_128x4() : layout::linear()));
    }
  return pipeline(std::move(outs));
}

}  // namespace

TEST_CASE("fp32 edges cpu: block maxima at FP32 edges, every rule, format and scale kind, bit-identical with the reference" *
          doctest::test_suite("slow")) {
  MXJIT_REQUIRE_CPU_BACKEND();
  int runs = 0;
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::vector<float> edges = dt == DType::f32 ? fp32_edge_amaxes() : bf16_edge_amaxes();
    std::vector<Pipeline> ps;
    for (ElemFormat f : kFormats) ps.push_back(every_rule(dt, f, f == e5m2 ? NanPolicy::satfinite : NanPolicy::nan_block));
    // User formats, those without mantissa bits too (EVEN's tie there is the integer bit's).
    for (auto [e, m] : {std::pair{1, 0}, {4, 0}, {5, 0}, {3, 3}, {2, 5}, {5, 2}})
      ps.push_back(every_rule(dt, fp_format(e, m), NanPolicy::nan_block));
    const std::string input = dt == DType::f32 ? "f32[2]" : "bf16[2]";
    for (const char* rest : {" -> fp8.e4m3 ; fp8.e5m2 blocks(0,32) q:col_major ; nvfp4 te ; nvfp4 torchao blocks(0,16) q:col_major amax",
                             " -> mxfp8.e4m3 blocks(0,1,32x32) ; mxfp4.e2m1 even blocks(0,1,16x16) ; mxint8 rceil blocks(0,128)"})
      ps.push_back(parse_pipeline(input + rest));
    for (const Pipeline& p : ps) {
      const cpu::CpuKernel k = cpu::cpu_jit(p);
      for (size_t e = 0; e < edges.size(); ++e)
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{64, 96}, std::vector<int64_t>{70, 34}}) {
          HostTensor x(dt, shape);
          fill_edge(x, edges[e], 1000 + e);
          std::vector<HostTensor> in;
          in.push_back(std::move(x));  // a move keeps the view's buffer
          CHECK(check_cpu(k, in, fmt::format("{} amax {:a} {}x{}", p.str().substr(0, 60), edges[e], shape[0], shape[1])) == 0);
          ++runs;
        }
    }
  }
  CHECK(runs > 300);
}

