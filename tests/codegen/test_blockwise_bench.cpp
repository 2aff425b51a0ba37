// The blockwise FP8 bench rows (bench/blockwise.hpp, issue 34 "Speed") without a GPU: every row's
// pipeline generates for sm_90a and sm_100a (no UsageError: the GPU takes each of them), in the
// kernel kind the planner should pick, and compiles with NVRTC to a cubin. The bench itself checks
// each kernel against the reference on the GPU before timing it.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "bench/blockwise.hpp"
#include "codegen/emit.hpp"
#include "codegen/values.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE(
    "blockwise bench rows: named for --filter blockwise, each pipeline generated and compiled for sm_90a and sm_100a") {
  const std::vector<bench::BlockwiseCase> cases = bench::blockwise_cases();
  std::set<std::string> names;
  std::vector<test::CompileVariant> vs;
  for (const bench::BlockwiseCase& c : cases) {
    CHECK(c.name.rfind("blockwise ", 0) == 0);
    REQUIRE(c.shape.size() == 2);
    const Pipeline p = c.make();
    for (const std::string arch : {"sm_90a", "sm_100a"}) {
      const KernelKind kind = generate(p, Target::parse(arch), default_stride_class(p)).plan.kind;
      // Every row on the direct kernel: 1x128 groups (scales packed four a word included),
      // 128x128 tiles (codes row-major or transposed) and the dual 1D cast (1x128 and 128x1
      // blocks of one 128x128 tile).
      CHECK_MESSAGE(kind == KernelKind::direct, c.name << " on " << arch);
    }
    if (names.insert(c.name).second) vs.push_back({c.name, p, default_stride_class(p)});
  }
  CHECK(cases.size() == 12);
  CHECK(names.size() == 9);
  CHECK(test::compile_variants(vs) == 2 * int(vs.size()));
}

TEST_CASE("blockwise bench rows: the peers' layouts and definitions, output by output") {
  auto find = [](const std::string& name) {
    for (const bench::BlockwiseCase& c : bench::blockwise_cases())
      if (c.name == name) return c.make();
    FAIL("no row " << name);
    return bench::te_2d(false);
  };
  // TE 1D dual: codes row-major and transposed, both scale tensors GEMM_READY (MN-major, 4-aligned).
  const Pipeline dual = find("blockwise te 1d dual rowwise+transposed");
  REQUIRE(dual.outputs().size() == 4);
  CHECK(dual.outputs()[1].layout == layout::mn_major_tma());
  CHECK(dual.outputs()[2].layout == layout::col_major());
  CHECK(dual.outputs()[3].layout == layout::mn_major_tma());
  CHECK(dual.inputs().size() == 1);
  // DeepGEMM SM100: UE8M0 bytes packed four to an int32 word.
  const Pipeline packed = find("blockwise deepgemm sm100 1x128 ue8m0 packed");
  CHECK(packed.outputs()[1].dtype == DType::i32);
  CHECK(packed.outputs()[1].layout == layout::mn_major_tma_packed());
  // torchao: column-major FP32 scales (act_quant_lhs), column-major codes and scales (weight_quant_rhs).
  CHECK(find("blockwise torchao act_quant_lhs 1x128").outputs()[1].layout == layout::col_major());
  const Pipeline w = find("blockwise torchao weight_quant_rhs 128x128");
  CHECK(w.outputs()[0].layout == layout::col_major());
  CHECK(w.outputs()[1].dtype == DType::f32);
  // The TE 2D rows: GEMM_READY 2D, and with both usages its transpose too.
  const Pipeline both = find("blockwise te 2d 128x128 both usages");
  REQUIRE(both.outputs().size() == 4);
  CHECK(both.outputs()[1].layout == layout::gemm_ready_2d());
  CHECK(both.outputs()[3].layout == layout::gemm_ready_2d_t());
  // The kernel's banner: a pipeline without a text form prints its IR, each scale written out once
  // (`let sN`) and named where the outputs use it (the dual cast's two scales: four uses each).
  const std::string src = generate(dual, Target::parse("sm_90a"), default_stride_class(dual)).source;
  const std::string banner = src.substr(0, src.find("// ====", src.find("// pipeline (IR)")));
  REQUIRE(banner.find("// pipeline (IR)") != std::string::npos);
  const ValueSet v = collect_values(dual);
  REQUIRE(v.scales.size() == 2);
  for (const NodePtr& sn : v.scales) {
    const std::string t = canonical(sn);
    CAPTURE(banner);
    const size_t at = banner.find(t);
    REQUIRE(at != std::string::npos);
    CHECK(banner.find(t, at + 1) == std::string::npos);
    const size_t let = banner.rfind("let s", at);  // its one place: a let's line
    CHECK((let != std::string::npos && banner.find('\n', let) > at));
  }
  CHECK(banner.find("let s0 = ") < banner.find("  out "));
  CHECK(banner.find("let s1 = ") < banner.find("  out "));
  CHECK(banner.find("  out s ") != std::string::npos);
}

TEST_CASE("blockwise bench rows: no spills on sm_90a, and the 1x128 casts compute one scale a lane") {
  std::set<std::string> seen;
  for (const bench::BlockwiseCase& c : bench::blockwise_cases()) {
    if (!seen.insert(c.name).second) continue;
    const Pipeline p = c.make();
    CHECK_MESSAGE(test::spill_bytes(p, default_stride_class(p)) == 0, c.name);
  }
  // A scale definition that flags no block (the peers'): the 16 lanes of a 1x128 block
  // reduce-scatter its 4 rows' amaxes (xors 8, 4 halve, 2, 1 all-reduce), each lane computes one
  // row's scale, the first of its 4 owners stores it, and every chunk fetches its multiplier by one
  // shuffle. A definition that flags zero or NaN blocks: every lane computes every row's scale.
  const Target t = Target::parse("sm_90a");
  ScaleDef flagged = recipes::deepgemm(e4m3, false);
  flagged.zero_if = amax_var() < 1e-6;
  for (const auto& [def, owned] : {std::pair{recipes::deepgemm(e4m3, false), true}, std::pair{recipes::torchao_blockwise(e4m3), true},
                                   std::pair{recipes::vllm_group(e4m3, false), true},
                                   std::pair{recipes::transformer_engine(e4m3, true), true}, std::pair{flagged, false}}) {
    const Pipeline p = bench::blockwise_cast(def, Saturate::finite, false, layout::row_major(), layout::col_major());
    CAPTURE(scale_definition(*p.outputs()[1].node));
    const GeneratedKernel g = generate(p, t, default_stride_class(p));
    REQUIRE(g.plan.kind == KernelKind::direct);
    CHECK(g.plan.direct().lanes_per_block == 16);
    CHECK(g.plan.direct().scatter_scales == std::vector<bool>{owned});
    CHECK((g.source.find("reduce-scatter over the block's lanes, xors 8, 4, 2, 1") != std::string::npos) == owned);
    CHECK((g.source.find("if (okr && (lane & 3) == 0)") != std::string::npos) == owned);
    // 40 registers (the gathered form spills at 32): at most the warps of 6 CTAs of 256 threads.
    if (owned) CHECK(g.plan.ctas_per_sm * g.plan.threads <= 6 * 256);
  }
}
