// Tensorwise casts (blocks whole on every axis: one scale for the tensor): what the planner picks
// (a tensor-amax pre-pass under the scale's NaN rule, then the direct kernel's elementwise form)
// and refuses, the generated source's shape, and every variant compiling with NVRTC for sm_90a
// and sm_100a (no GPU needed; tests/gpu/test_gpu_tensorwise.cpp runs them against the reference).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/plan.hpp"
#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "runtime/tuner.hpp"
#include "support/compile_variants.hpp"
#include "support/tensorwise_casts.hpp"

using namespace mxjit;
using namespace mxjit::detail;
using mxjit::test::tensorwise;
using mxjit::test::whole;

namespace {

StrideClass unit_along(int axis, bool aligned = true) { return StrideClass{{axis}, {aligned}}; }

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("tensorwise: BlockSpec::whole_tensor holds for blocks whole on every axis only") {
  auto x1 = input("x", DType::f32, rank(1));
  auto x2 = input("x", DType::f32, rank(2));
  auto x3 = input("x", DType::f32, rank(3));
  auto spec = [](const Blocks& b) { return b.node()->block; };
  CHECK(spec(whole(x1)).whole_tensor(1));
  CHECK(spec(whole(x2)).whole_tensor(2));
  // Rowwise (one axis whole), 1-D and 2-D power-of-two blocks, jagged groups: not the whole tensor.
  CHECK_FALSE(spec(blocks(x2, 1, kWholeAxis)).whole_tensor(2));
  CHECK_FALSE(spec(blocks(x2, 0, kWholeAxis)).whole_tensor(2));
  CHECK_FALSE(spec(blocks(x1, 0, 32)).whole_tensor(1));
  CHECK_FALSE(spec(blocks(x2, {0, 1}, {128, 128})).whole_tensor(2));
  CHECK_FALSE(spec(blocks(x2, {0, 1}, {kWholeAxis, 128})).whole_tensor(2));
  CHECK_FALSE(spec(groups(x2, 0, offsets("offs"))).whole_tensor(2));
  // Two whole axes of a rank-3 domain leave the third: one block per index of it.
  CHECK_FALSE(spec(blocks(x3, {1, 2}, {kWholeAxis, kWholeAxis})).whole_tensor(3));
}

TEST_CASE("tensorwise: the planner runs a pre-pass for the tensor amax, then the direct kernel elementwise") {
  const Target t = Target::parse("sm_90a");
  const Plan plan = make_plan(tensorwise(DType::bf16, 2), t, unit_along(1));
  CHECK(plan.kind == KernelKind::direct);
  CHECK(plan.direct().tensorwise);
  CHECK(plan.direct().block_cols == 8);
  CHECK(plan.direct().lanes_per_block == 1);
  CHECK(plan.ax_c == 1);
  CHECK(plan.ax_r == 0);
  REQUIRE(plan.prepass.has_value());
  CHECK(plan.prepass->workspace_bytes == 4);
  CHECK(plan.prepass->inputs == std::vector<int>{0});
  CHECK(plan.prepass->pipeline.outputs().size() == 1);
  CHECK(plan.prepass->pipeline.outputs()[0].kind == OutputKind::amax);
  CHECK(plan.str().find("tensorwise=1") != std::string::npos);
  CHECK(plan.str().find("prepass=tensor_amax(4B)") != std::string::npos);
  // The pre-pass keeps NaN as the scale does (the NVFP4 pre-pass's text), or skips it.
  CHECK(canonical(plan.prepass->pipeline.outputs()[0].node).find("amax_fmax") == std::string::npos);
  auto x = input("x", DType::bf16, rank(2));
  auto si = scale(amax(whole(x)), e4m3, recipes::vllm_group(e4m3, false));  // fmaxf's amax
  const Plan pi = make_plan(pipeline({output("q", cast(e4m3, x / si)), output("s", si)}), t, unit_along(1));
  REQUIRE(pi.prepass.has_value());
  CHECK(pi.prepass->pipeline.outputs()[0].node->amax_nan == AmaxNan::ignore);
  CHECK(canonical(pi.prepass->pipeline.outputs()[0].node).find("tensor_amax[amax_fmax]") != std::string::npos);
  // Rank 1: the whole vector is the one block (not the rows kernel's one line).
  const Plan p1 = make_plan(tensorwise(DType::f32, 1), t, unit_along(0));
  CHECK(p1.kind == KernelKind::direct);
  CHECK(p1.direct().tensorwise);
  CHECK(p1.ax_r == -1);
  // A column-major input with row-major codes: chunks along the codes' innermost axis (vector
  // stores), the input read element by element; column-major codes: along the input's.
  const Plan pt = make_plan(tensorwise(DType::bf16, 2), t, unit_along(0));
  CHECK(pt.ax_c == 1);
  CHECK(pt.direct().wide_rows);
  const Plan pc = make_plan(tensorwise(DType::bf16, 2, {}, e4m3, layout::col_major()), t, unit_along(0));
  CHECK(pc.ax_c == 0);
  CHECK(!pc.direct().wide_rows);
  // The grid: slots of 8 elements along ax_c, groups of chunks_per_thread rows.
  const Launch l = plan.launch({2048, 5120}, 0);
  CHECK(l.tiles_c == 640);
  CHECK(l.tiles_r == 2048);
  CHECK(l.grid[0] == 3u);
  CHECK(l.grid[1] == 2048u / unsigned(plan.direct().chunks_per_thread));
  const Launch one = plan.launch({1, 1}, 0);
  CHECK(one.grid[0] * one.grid[1] * one.grid[2] == 1u);
}

TEST_CASE(
    "tensorwise: the kernel computes the scale once per thread from the workspace and stores it from one thread") {
  const Target t = Target::parse("sm_90a");
  const std::string src = generate(tensorwise(DType::bf16, 2, {true, true}), t, unit_along(1)).source;
  CHECK(count(src, "*static_cast<const mx_u32*>(P.aux)") == 1);
  CHECK(count(src, "blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0") == 1);
  CHECK(src.find("__shfl_xor_sync") == std::string::npos);  // no per-block amax
  CHECK(src.find("tensorwise=1") != std::string::npos);     // the banner's plan
  // A flushing cast flushes the pre-pass's word.
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(whole(x)), e4m3, ScaleRule::floor);
  CastOptions flush;
  flush.flush_subnormals = true;
  const std::string fl =
      generate(pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, Saturate::finite, flush)), output("s", s)}),
               t, unit_along(1))
          .source;
  CHECK(fl.find("mx_u32 m = mx_tensor_m;\n    if (m < 0x00800000u) m = 0u;") != std::string::npos);
  // The pre-pass of an amax that ignores NaN drops NaN |x| patterns.
  const Pipeline pre = pipeline({output("tamax", amax(x, AmaxNan::ignore))});
  const std::string ps = generate(pre, t, unit_along(1)).source;
  CHECK(ps.find("if (a > 0x7f800000u) a = 0u; tamax_fmax[0]") != std::string::npos);
  CHECK(ps.find("mx_block_amax_publish(static_cast<mx_u32*>(P.out[0]), tamax_fmax[0])") != std::string::npos);
  // So does the tiled kernel's amax output (beside 32x32 blocks).
  auto s2 = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
  const Pipeline tiled =
      pipeline({output("q", cast(e4m3, x / s2)), output("s", s2), output("a", amax(x, AmaxNan::ignore))});
  const GeneratedKernel tk = generate(tiled, t, unit_along(1));
  CHECK(tk.plan.kind == KernelKind::tiled);
  CHECK(tk.source.find("mx_u32 u = mx_bits(") != std::string::npos);
  CHECK(tk.source.find("      if (u > 0x7f800000u) u = 0u; \n      m = u > m ? u : m;") != std::string::npos);
}

TEST_CASE("tensorwise: the casts the GPU does not run are refused by name") {
  const Target t = Target::parse("sm_90a");
  auto x = input("x", DType::bf16, rank(2));
  auto msg = [&](const Pipeline& p, const Schedule& s = {}) -> std::string {
    try {
      make_plan(p, t, unit_along(1), s);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  auto tw = f32_scale(amax(whole(x)), e4m3);
  auto rows = f32_scale(amax(blocks(x, 1, kWholeAxis)), e4m3);
  auto mx = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw)), output("s", tw), output("q1", cast(e4m3, x / rows))}))
            .find("when every scale is tensorwise (here blocks(1,whole) beside") != std::string::npos);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw)), output("q1", cast(e4m3, x / mx))}))
            .find("when every scale is tensorwise") != std::string::npos);
  // Two pre-passes: another value, another NaN rule.
  auto y = input("y", DType::bf16, rank(2));
  auto twy = f32_scale(amax(whole(y)), e4m3);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw)), output("q1", cast(e4m3, y / twy))}))
            .find("one tensor-amax pre-pass") != std::string::npos);
  auto twi = scale(amax(whole(x)), e4m3, recipes::vllm_group(e4m3, false));
  CHECK(
      msg(pipeline({output("q", cast(e4m3, x / tw)), output("q1", cast(e4m3, x / twi))})).find("under one NaN rule") !=
      std::string::npos);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw)), output("a", amax(x))})).find("output 'a' is an amax") !=
        std::string::npos);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw)), output("v", x * 2.0, DType::f32)}))
            .find("output 'v' is a value tensor") != std::string::npos);
  auto tw8 = e8m0_scale(amax(whole(x)), e4m3, ScaleRule::rceil);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw8)), output("s", tw8, Layout::parse("modes(*,1/4,0,1%4).pack(4)"))}))
            .find("strided layout") != std::string::npos);
  // A padded strided layout: zeroed at launch, the kernel writes the one scale.
  CHECK(make_plan(pipeline({output("q", cast(e4m3, x / tw)), output("s", tw, Layout::parse("modes(0,1).align(1,4)"))}),
                  t, unit_along(1))
            .zero_outputs == std::vector<int>{1});
  auto tw4 = e8m0_scale(amax(whole(x)), e2m1, ScaleRule::floor);
  CHECK(msg(pipeline({output("q", cast(e2m1, x / tw4)), output("s", tw4)})).find("packs two FP4 codes") !=
        std::string::npos);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tw)),
                      output("q1", cast(e5m2, x / f32_scale(amax(whole(x)), e5m2)), layout::col_major())}))
            .find("one innermost axis (output 'q' along axis 1, 'q1' along axis 0)") != std::string::npos);
  // Another kernel asked for: refused exactly, ignored leniently (the tuner's tiled candidates).
  const Pipeline p = tensorwise(DType::bf16, 2);
  CHECK(msg(p, Schedule::parse("tune(kernel=tiled)")).find("tensorwise scales run on the direct kernel") !=
        std::string::npos);
  CHECK(msg(p, Schedule::parse("tune(kernel=rows)")).find("tensorwise scales run on the direct kernel") !=
        std::string::npos);
  CHECK(make_plan(p, t, unit_along(1), Schedule::parse("tune(kernel=tiled)"), Fit::lenient).direct().tensorwise);
  CHECK(make_plan(p, t, unit_along(1), Schedule::parse("tune(chunks_per_thread=2, ctas_per_sm=4)"))
            .direct()
            .chunks_per_thread == 2);
  CHECK(msg(p, Schedule::parse("tune(tile_rows=32)")).find("tile_rows does not apply to the direct kernel") !=
        std::string::npos);
  // Every tuner candidate plans (the tiled ones are dropped).
  for (const Schedule& s : schedule_candidates(p, t, unit_along(1)))
    CHECK(make_plan(p, t, unit_along(1), s).direct().tensorwise);
}

TEST_CASE("tensorwise: every variant compiles for sm_90a and sm_100a" * doctest::test_suite("slow")) {
  std::vector<test::CompileVariant> vs;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (F32ScaleOptions o : {F32ScaleOptions{}, F32ScaleOptions{true, false}, F32ScaleOptions{true, true}}) {
      const std::string n = fmt::format("{} multiplier={} pow2={}", dtype_name(dt), o.store_multiplier, o.pow2);
      vs.push_back({n, tensorwise(dt, 2, o), unit_along(1)});
      vs.push_back({n + ", unaligned", tensorwise(dt, 2, o), unit_along(1, false)});
      vs.push_back({n + ", column-major input", tensorwise(dt, 2, o), unit_along(0)});
    }
  vs.push_back({"e5m2", tensorwise(DType::bf16, 2, {}, e5m2), unit_along(1)});
  vs.push_back({"rank 1", tensorwise(DType::bf16, 1), unit_along(0)});
  vs.push_back({"column-major codes", tensorwise(DType::bf16, 2, {}, e4m3, layout::col_major()), unit_along(0)});
  auto x = input("x", DType::bf16, rank(2));
  for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::even}) {
    auto s = e8m0_scale(amax(whole(x)), e4m3, rule);
    vs.push_back({fmt::format("E8M0 {}", rule_name(rule)), pipeline({output("q", cast(e4m3, x / s)), output("s", s)}),
                  unit_along(1)});
  }
  for (const auto& [name, def] :
       {std::pair{"vllm", recipes::vllm_group(e4m3, true)}, std::pair{"te", recipes::transformer_engine(e4m3, false)},
        std::pair{"deepgemm", recipes::deepgemm(e4m3, true)}, std::pair{"torchao", recipes::torchao_blockwise(e4m3)}}) {
    auto s = scale(amax(whole(x)), e4m3, def);
    const Saturate sat = std::string(name) == "deepgemm" ? Saturate::none : Saturate::finite;
    vs.push_back(
        {name, pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, sat)), output("s", s)}), unit_along(1)});
  }
  CastOptions flush;
  flush.flush_subnormals = true;
  auto sf = f32_scale(amax(whole(x)), e4m3);
  vs.push_back(
      {"flush",
       pipeline({output("q", cast(e4m3, x / sf, Round::nearest_even, Saturate::finite, flush)), output("s", sf)}),
       unit_along(1)});
  vs.push_back(
      {"stochastic", pipeline({output("q", cast(e4m3, x / sf, Round::stochastic)), output("s", sf)}), unit_along(1)});
  vs.push_back({"two code outputs",
                pipeline({output("q", cast(e4m3, x / sf)),
                          output("q1", cast(e5m2, x / f32_scale(amax(whole(x)), e5m2))), output("s", sf)}),
                unit_along(1)});
  vs.push_back({"pre-pass ignoring NaN", pipeline({output("tamax", amax(x, AmaxNan::ignore))}), unit_along(1)});
  auto s32 = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
  vs.push_back({"tiled, amax ignoring NaN",
                pipeline({output("q", cast(e4m3, x / s32)), output("s", s32), output("a", amax(x, AmaxNan::ignore))}),
                unit_along(1)});
  vs.push_back({"tune(chunks_per_thread=1, ctas_per_sm=4)", tensorwise(DType::bf16, 2), unit_along(1),
                Schedule::parse("tune(chunks_per_thread=1, ctas_per_sm=4)")});
  CHECK(test::compile_variants(vs) == 2 * int(vs.size()));
}
