// 2-D blocks on the direct kernel (DirectPlan::block_rows; codegen/emit_direct.cpp), without a GPU:
// which casts take it (one block shape over the innermost row axis and the unit-stride axis, a bare
// 16-bit input read by 16-byte loads, linear or strided scales, codes along the unit-stride axis)
// and which stay on the tiled kernel, the launch grid (one CTA a block, partial blocks included,
// batches of a rank-3 input), the schedule's rules, the source's block amax, and NVRTC compiles
// for sm_90a and sm_100a without spills. tests/gpu/test_generic_scales_gpu.cpp runs them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

/// E4M3 codes of a rank-`r` input in br x bc blocks over its last two axes, DeepGEMM's FP32 scale.
Pipeline tiles(int64_t br, int64_t bc, DType dt = DType::bf16, int r = 2, Layout codes = layout::row_major(),
               Layout scales = layout::linear(), ScaleDef def = recipes::deepgemm(e4m3, false)) {
  auto x = input("x", dt, rank(r));
  auto s = scale(amax(blocks(x, {r - 2, r - 1}, {br, bc})), e4m3, def);
  return pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, Saturate::finite), codes), output("s", s, scales)});
}

Plan plan_of(const Pipeline& p, const Schedule& s = {}, StrideClass sc = {}) {
  return generate(p, Target::parse("sm_90a"), sc.unit_axis.empty() ? default_stride_class(p) : sc, s).plan;
}

}  // namespace

TEST_CASE("direct 2-D blocks: the casts that take them, and those the tiled kernel keeps") {
  const Plan p = plan_of(tiles(128, 128));
  REQUIRE(p.kind == KernelKind::direct);
  CHECK(p.direct().block_rows == 128);
  CHECK(p.direct().block_cols == 128);
  CHECK(p.direct().lanes_per_block == 16);
  CHECK(p.direct().chunks_per_thread == 8);
  CHECK(p.threads == 256);
  CHECK(p.ctas_per_sm == 4);
  CHECK(p.str().find("block_rows=128 (one CTA a 2-D block)") != std::string::npos);
  CHECK(p.kernel_name.find("mxjit_direct_blocks2d_") == 0);
  CHECK(plan_of(tiles(64, 64)).direct().block_rows == 64);  // 8 lanes x 8 rows: 64 threads
  CHECK(plan_of(tiles(64, 64)).threads == 64);
  CHECK(plan_of(tiles(128, 32, DType::f16, 3)).kind == KernelKind::direct);
  // 1-D blocks keep block_rows 1.
  auto x = input("x", DType::bf16, rank(2));
  auto s1 = scale(amax(blocks(x, 1, 128)), e4m3, recipes::deepgemm(e4m3, false));
  CHECK(plan_of(pipeline({output("q", cast(e4m3, x / s1)), output("s", s1)})).direct().block_rows == 1);
  // Codes transposed (column-major, or row-major codes of a column-major input): through a shared
  // tile, 8-bit codes only.
  CHECK(plan_of(tiles(128, 128, DType::bf16, 2, layout::col_major())).kind == KernelKind::direct);
  // Transposed codes of 128-row blocks: 5 CTAs an SM (<= 48 registers, no spill).
  CHECK(plan_of(tiles(128, 128, DType::bf16, 2, layout::col_major())).ctas_per_sm == 5);
  CHECK(plan_of(tiles(128, 128, DType::bf16, 2, layout::col_major()), Schedule{.ctas_per_sm = 4}).ctas_per_sm == 4);
  CHECK(plan_of(tiles(64, 64, DType::bf16, 2, layout::col_major())).ctas_per_sm == 16);
  CHECK(test::spill_bytes(tiles(128, 128, DType::bf16, 2, layout::col_major()),
                          default_stride_class(tiles(128, 128, DType::bf16, 2, layout::col_major()))) == 0);
  CHECK(plan_of(tiles(128, 128, DType::bf16, 3, layout::expert_col_major())).kind == KernelKind::direct);
  CHECK(plan_of(tiles(128, 128), {}, StrideClass{{0}, {true}}).kind == KernelKind::direct);
  auto xf = input("x", DType::bf16, rank(2));
  auto ef = e8m0_scale(amax(blocks(xf, {0, 1}, {64, 64})), e2m1, ScaleRule::floor);
  CHECK(plan_of(pipeline({output("q", cast(e2m1, xf / ef), layout::col_major()), output("s", ef)})).kind == KernelKind::tiled);
  CHECK(plan_of(pipeline({output("q", cast(e2m1, xf / ef)), output("s", ef)})).kind == KernelKind::direct);
  // The tiled kernel: FP32 inputs (no packed words), blocks too small or too large for one CTA.
  CHECK(plan_of(tiles(128, 128, DType::f32)).kind == KernelKind::tiled);
  CHECK(plan_of(tiles(32, 32)).kind == KernelKind::tiled);    // 16 threads
  CHECK(plan_of(tiles(256, 128)).threads == 512);              // the most threads: 16 lanes x 32 rows
  CHECK_THROWS_AS(plan_of(tiles(256, 256)), UsageError);  // 1024 threads, and no tiled tile fits
  // A rank-3 input of extents (n, 1, 1) has every stride 1: its unit axis (0) lies outside the
  // blocks, which then take the inner block axis (element loads) instead of being refused.
  const Plan odd = plan_of(tiles(128, 128, DType::bf16, 3), {}, StrideClass{{0}, {true}});
  CHECK(odd.kind == KernelKind::tiled);
  CHECK(odd.ax_c == 2);
  CHECK(odd.ax_r == 1);
  // A schedule may still ask for the tiled kernel.
  Schedule t;
  t.kernel = KernelKind::tiled;
  CHECK(plan_of(tiles(128, 128), t).kind == KernelKind::tiled);
}

TEST_CASE("direct 2-D blocks: one CTA a block, partial blocks and batches in the grid") {
  const Plan p = plan_of(tiles(128, 128));
  Launch l = p.launch({300, 200}, 0);  // 3 block rows (the last of 44), 2 block columns (the last of 72)
  CHECK(l.grid[0] == 2);
  CHECK(l.grid[1] == 3);
  CHECK(l.grid[2] == 1);
  CHECK(l.tiles_r == 3);
  const Plan p3 = plan_of(tiles(128, 128, DType::bf16, 3));
  l = p3.launch({5, 130, 129}, 0);
  CHECK(l.grid[0] == 2);
  CHECK(l.grid[1] == 10);  // 5 batches x 2 block rows
  l = p3.launch({70000, 128, 128}, 0);  // more block rows than grid.y takes: z carries them
  CHECK(uint64_t(l.grid[1]) * l.grid[2] >= 70000);
  CHECK(l.grid[1] <= 65535);
}

TEST_CASE("direct 2-D blocks: the schedule's rows a thread set the threads") {
  Schedule s;
  s.chunks_per_thread = 4;
  const Plan p = plan_of(tiles(128, 128), s);
  CHECK(p.direct().chunks_per_thread == 4);
  CHECK(p.threads == 512);
  s.chunks_per_thread = 3;  // does not divide 128 rows
  CHECK_THROWS_AS(plan_of(tiles(128, 128), s), UsageError);
  s.chunks_per_thread = 2;  // 1024 threads: above kDirect2dMaxThreads, the rule that chose the kernel
  CHECK_THROWS_WITH_AS(plan_of(tiles(128, 128), s), doctest::Contains("32..512 threads"), UsageError);
  Schedule s4;
  s4.chunks_per_thread = 4;  // transposed codes take 8x8 byte transposes
  CHECK_THROWS_WITH_AS(plan_of(tiles(128, 128, DType::bf16, 2, layout::col_major()), s4), doctest::Contains("must be 8"), UsageError);
  Schedule th;
  th.threads = 128;  // 16 lanes x 16 rows a round is 256
  CHECK_THROWS_WITH_AS(plan_of(tiles(128, 128), th), doctest::Contains("must be 256"), UsageError);
}

TEST_CASE("direct 2-D blocks: the source reduces the block once, across the warps, and stores one scale") {
  const std::string src = generate(tiles(128, 128), Target::parse("sm_90a"), default_stride_class(tiles(128, 128))).source;
  const std::string body = src.substr(src.find("__global__"));
  CHECK(body.find("__launch_bounds__(256, 4)") != std::string::npos);
  CHECK(body.find("__shared__ mx_u32 mx_wmax[1][8];") != std::string::npos);
  CHECK(body.find("for (int u = 0; u < 8; ++u) pw = mx_max_bf16x2(pw, ") != std::string::npos);
  CHECK(body.find("__shfl_xor_sync(0xffffffffu, m, 16)") < body.find("__syncthreads();"));
  CHECK(body.find("if (threadIdx.x == 0 && ok[0])") > body.find("__syncthreads();"));
  CHECK(body.find("mx_i64(ix0_[0] / 128) * P.out_stride[1][0]") != std::string::npos);
  // The scale is computed once, before the codes; phase 2 has no amax of its own.
  CHECK(body.find("__syncthreads();") < body.find("// Phase 2: values and codes"));
  CHECK(body.find("__shfl_xor_sync", body.find("// Phase 2")) == std::string::npos);
  // A NaN-skipping amax (torchao's) drops NaN lanes per chunk.
  const std::string ta =
      generate(tiles(128, 128, DType::bf16, 2, layout::row_major(), layout::linear(), recipes::torchao_blockwise(e4m3)),
               Target::parse("sm_90a"), default_stride_class(tiles(128, 128)))
          .source;
  CHECK(ta.find("pw = mx_max_bf16x2(pw, mx_drop_nan2(mx_max_bf16x2_num(") != std::string::npos);
  // Transposed codes: kept by row, transposed by byte permutes, staged in a swizzled shared tile
  // after a second barrier, stored 16 bytes along the rows.
  const Pipeline cm = tiles(128, 128, DType::bf16, 2, layout::col_major());
  const std::string t = generate(cm, Target::parse("sm_90a"), default_stride_class(cm)).source;
  CHECK(t.find("uint2 qt0[8];") != std::string::npos);
  CHECK(t.find("qt0[u] = make_uint2(wd[0], wd[1]);") != std::string::npos);
  CHECK(t.find("__shared__ uint2 mx_t0[128][16];") != std::string::npos);
  CHECK(t.find("mx_t0[lane_c * 8 + 7][rt ^ key] = make_uint2(t10.w, t11.w);") != std::string::npos);
  CHECK(t.find("__syncthreads();", t.find("mx_t0[lane_c")) < t.find("mx_st16(ob, mx_v16{g0.x, g0.y, g1.x, g1.y})"));
  CHECK(t.find("*reinterpret_cast<uint2*>(ob)") == std::string::npos);  // no row-major code store
}

TEST_CASE("direct 2-D blocks: variants compile for sm_90a and sm_100a, no spills at 128x128") {
  std::vector<test::CompileVariant> vs;
  auto add = [&](const std::string& name, const Pipeline& p, Schedule s = {}) { vs.push_back({name, p, default_stride_class(p), s}); };
  add("128x128 bf16", tiles(128, 128));
  add("128x128 f16 rank 3", tiles(128, 128, DType::f16, 3));
  add("64x64 bf16", tiles(64, 64));
  add("128x32 bf16 te pow2", tiles(128, 32, DType::bf16, 2, layout::row_major(), layout::linear(), recipes::transformer_engine(e4m3, true)));
  add("128x128 torchao", tiles(128, 128, DType::bf16, 2, layout::row_major(), layout::linear(), recipes::torchao_blockwise(e4m3)));
  add("128x128 gemm_ready_2d", tiles(128, 128, DType::bf16, 2, layout::row_major(), layout::gemm_ready_2d()));
  Schedule s4;
  s4.chunks_per_thread = 4;
  add("128x128 4 rows a thread", tiles(128, 128), s4);
  add("128x128 col-major codes", tiles(128, 128, DType::bf16, 2, layout::col_major()));
  add("64x64 col-major codes f16", tiles(64, 64, DType::f16, 2, layout::col_major()));
  add("128x128 expert_col_major rank 3", tiles(128, 128, DType::bf16, 3, layout::expert_col_major()));
  auto xb = input("x", DType::bf16, rank(2));
  auto sb = scale(amax(blocks(xb, {0, 1}, {128, 128})), e4m3, recipes::transformer_engine(e4m3, true));
  add("te both usages", pipeline({output("q", cast(e4m3, xb / sb)), output("s", sb, layout::gemm_ready_2d()),
                                  output("q_t", cast(e4m3, xb / sb), layout::col_major()), output("s_t", sb, layout::gemm_ready_2d_t())}));
  auto x = input("x", DType::bf16, rank(2));
  auto e = e8m0_scale(amax(blocks(x, {0, 1}, {64, 64})), e4m3, ScaleRule::rceil);
  add("64x64 e8m0 rceil", pipeline({output("q", cast(e4m3, x / e)), output("s", e)}));
  auto xd = input("x", DType::bf16, rank(2));
  const ScaleDef te = recipes::transformer_engine(e4m3, true);
  auto sr = scale(amax(blocks(xd, 1, 128)), e4m3, te);
  auto sc = scale(amax(blocks(xd, 0, 128)), e4m3, te);
  const Pipeline dual = pipeline({output("q", cast(e4m3, xd / sr)), output("s", sr, layout::mn_major_tma()),
                                  output("q_t", cast(e4m3, xd / sc), layout::col_major()), output("s_t", sc, layout::mn_major_tma())});
  add("te 1d dual", dual);
  for (const auto& v : vs) REQUIRE(plan_of(v.p, v.schedule).kind == KernelKind::direct);
  CHECK(plan_of(dual).direct().block_rows == 128);
  CHECK(plan_of(dual).ctas_per_sm == 3);  // column blocks: 8 multipliers a thread (4 CTAs spill on sm_100a)
  CHECK(test::spill_bytes(dual, default_stride_class(dual)) == 0);
  const std::string ds = generate(dual, Target::parse("sm_90a"), default_stride_class(dual)).source;
  CHECK(ds.find("__shared__ mx_u32 mx_cmax1[8][16][4];") != std::string::npos);
  CHECK(ds.find("keep1[w] |= (f == 0u ? 255u : 0u) << (8 * j);") != std::string::npos);
  CHECK(ds.find("mult1[e]") != std::string::npos);
  // One column a thread computes and stores its scale (the block row from gi), then a barrier.
  CHECK(ds.find("if (const unsigned c_ = threadIdx.x; c_ < 128u) {  // one column a thread") != std::string::npos);
  CHECK(ds.find("if (gi < rows && int(blockIdx.x) * 128 + int(c_) < n_c) {  // scales 's_t'") != std::string::npos);
  CHECK(ds.find("mx_cmult1[lane_c * 8 + e]") != std::string::npos);
  // 32-row column blocks: a 32x128 tile of 64 threads, each taking two columns' scales.
  auto sc32 = scale(amax(blocks(xd, 0, 32)), e4m3, te);
  const Pipeline dual32 = pipeline({output("q", cast(e4m3, xd / sr)), output("s", sr),
                                    output("q_t", cast(e4m3, xd / sc32), layout::col_major()), output("s_t", sc32)});
  add("te 1d dual, 32-row column blocks", dual32);
  REQUIRE(plan_of(dual32).kind == KernelKind::direct);
  CHECK(plan_of(dual32).direct().block_rows == 32);
  CHECK(plan_of(dual32).threads == 64);
  CHECK(generate(dual32, Target::parse("sm_90a"), default_stride_class(dual32))
            .source.find("for (unsigned c_ = threadIdx.x; c_ < 128u; c_ += 64u) {  // one column a thread") !=
        std::string::npos);
  // The row blocks' amaxes: reduce-scattered before phase 2 (8 rows over 16 lanes: one scale a
  // lane, 2 lanes a row, the first stores it); the column blocks' through shared memory.
  CHECK(plan_of(dual).direct().scatter_scales == std::vector<bool>{true, false});
  const size_t rs = ds.find("reduce-scatter over the block's lanes, xors 8, 4, 2, 1");
  REQUIRE(rs != std::string::npos);
  CHECK(rs < ds.find("// Phase 2"));
  CHECK(ds.find("if (okr && (lane & 1) == 0)") != std::string::npos);
  CHECK(test::compile_variants(vs) == 2 * int(vs.size()));
  CHECK(test::spill_bytes(tiles(128, 128), default_stride_class(tiles(128, 128))) == 0);
  CHECK(test::spill_bytes(tiles(128, 128, DType::bf16, 2, layout::row_major(), layout::linear(), recipes::torchao_blockwise(e4m3)),
                          default_stride_class(tiles(128, 128))) == 0);
  CHECK(test::spill_bytes(tiles(128, 128, DType::bf16, 2, layout::col_major()), default_stride_class(tiles(128, 128))) == 0);
}
