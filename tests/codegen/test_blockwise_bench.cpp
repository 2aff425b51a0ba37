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
      // Packed scale words: the tiled kernel; 1x128 groups, 128x128 tiles (codes row-major or
      // transposed) and the dual 1D cast (1x128 and 128x1 blocks of one 128x128 tile): the direct kernel.
      const bool tiled = c.name.find("packed") != std::string::npos;
      CHECK_MESSAGE(kind == (tiled ? KernelKind::tiled : KernelKind::direct), c.name << " on " << arch);
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
}
