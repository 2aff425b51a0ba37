// Scale definitions no library recipe names (ScaleRecipe::generic: every peer recipe of
// dsl/peer_recipes.hpp) in the CUDA generator, without a GPU: each peer x {E4M3, E5M2} x {UE8M0
// on / off; stored as FP32, E8M0, bf16, E4M3} x {1x128 dim0, 128x1 dim1, 128x128 tiles} compiles
// with NVRTC for sm_90a and sm_100a, in every kernel kind (direct, columns, tiled, jagged) and the
// peers' scale layouts; the generated scale arithmetic is the __f*_rn intrinsics (no FMA
// contraction), the amax drops NaN where the definition says, the library recipes keep their
// device functions, and what still runs on the CPU only is a UsageError naming why.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/recipes.hpp"
#include "support/compile_variants.hpp"
#include "support/peer_casts.hpp"

using namespace mxjit;
using namespace mxjit::detail;
using mxjit::test::CompileVariant;

namespace {

using test::PeerDef;
using test::peer_cast;
using Shape = test::PeerShape;

std::string source_of(const Pipeline& p, const Schedule& s = {}, const char* arch = "sm_90a") {
  return generate(p, Target::parse(arch), default_stride_class(p), s).source;
}

}  // namespace

TEST_CASE("generic scales: every peer x E4M3/E5M2 x UE8M0 x 1x128 / 128x1 / 128x128 compiles for sm_90a and sm_100a" *
          doctest::test_suite("slow")) {
  std::vector<CompileVariant> vs;
  for (ElemFormat elem : {e4m3, e5m2})
    for (const PeerDef& d : test::peer_defs(elem))
      for (Shape shape : {Shape::dim0, Shape::dim1, Shape::tiles}) {
        const Pipeline p = peer_cast(d, elem, shape);
        vs.push_back({fmt::format("{} {} {}", d.name, elem.str(), test::shape_name(shape)), p, default_stride_class(p)});
      }
  CHECK(mxjit::test::compile_variants(vs) == 2 * int(vs.size()));
  MESSAGE("peer casts compiled: " << vs.size() << " per arch");
}

TEST_CASE("generic scales: each kernel kind takes them (direct, columns, tiled), in the peers' scale layouts") {
  const PeerDef dg{"deepgemm", recipes::deepgemm(e4m3, false), Saturate::none};
  const PeerDef vl{"vllm ue8m0", recipes::vllm_group(e4m3, true)};
  PeerDef vl8 = vl;
  vl8.def.format = ScaleFormat::e8m0;
  auto kind = [](const Pipeline& p, KernelKind k = KernelKind::automatic) {
    Schedule s;
    s.kernel = k;
    return generate(p, Target::parse("sm_90a"), default_stride_class(p), s).plan.kind;
  };
  CHECK(kind(peer_cast(dg, e4m3, Shape::dim0)) == KernelKind::direct);
  CHECK(kind(peer_cast(dg, e4m3, Shape::dim1)) == KernelKind::columns);
  CHECK(kind(peer_cast(dg, e4m3, Shape::tiles)) == KernelKind::direct);  // 2-D blocks, one CTA each
  CHECK(kind(peer_cast(dg, e4m3, Shape::tiles), KernelKind::tiled) == KernelKind::tiled);
  CHECK(kind(peer_cast(dg, e4m3, Shape::dim0), KernelKind::tiled) == KernelKind::tiled);
  CHECK(kind(peer_cast(dg, e4m3, Shape::dim1), KernelKind::tiled) == KernelKind::tiled);
  std::vector<CompileVariant> vs;
  auto add = [&](const std::string& name, const Pipeline& p, KernelKind k = KernelKind::automatic) {
    Schedule s;
    s.kernel = k;
    vs.push_back({name, p, default_stride_class(p), s});
  };
  add("deepgemm 1x128 tiled", peer_cast(dg, e4m3, Shape::dim0), KernelKind::tiled);
  add("deepgemm 128x1 tiled", peer_cast(dg, e4m3, Shape::dim1), KernelKind::tiled);
  // DeepGEMM's SM90 FP32 MN-major TMA-aligned scales, SM100 packed UE8M0, TE's GEMM_READY 2D.
  add("deepgemm mn_major_tma", peer_cast(dg, e4m3, Shape::dim0, DType::bf16, 2, layout::mn_major_tma()));
  add("vllm ue8m0 as e8m0 packed", peer_cast(vl8, e4m3, Shape::dim0, DType::bf16, 2, layout::mn_major_tma_packed()));
  add("te 2d gemm_ready", peer_cast({"te", recipes::transformer_engine(e4m3, true)}, e4m3, Shape::tiles, DType::bf16, 2, layout::gemm_ready_2d()));
  add("te 2d gemm_ready_t", peer_cast({"te", recipes::transformer_engine(e4m3, true)}, e4m3, Shape::tiles, DType::bf16, 2, layout::gemm_ready_2d_t()));
  // The same layouts over 3-D batches (tests/gpu/test_generic_scales_gpu.cpp runs them).
  add("deepgemm mn_major_tma 3-D", peer_cast(dg, e4m3, Shape::dim0, DType::bf16, 3, layout::mn_major_tma()));
  add("vllm packed 3-D", peer_cast(vl8, e4m3, Shape::dim0, DType::bf16, 3, layout::mn_major_tma_packed()));
  add("te gemm_ready 3-D", peer_cast({"te", recipes::transformer_engine(e4m3, true)}, e4m3, Shape::tiles, DType::bf16, 3, layout::gemm_ready_2d()));
  add("te gemm_ready_t 3-D", peer_cast({"te", recipes::transformer_engine(e4m3, true)}, e4m3, Shape::tiles, DType::bf16, 3, layout::gemm_ready_2d_t()));
  add("deepgemm 3-D 1x128", peer_cast(dg, e4m3, Shape::dim0, DType::bf16, 3, layout::linear()));
  add("deepgemm 3-D 128x128", peer_cast(dg, e4m3, Shape::tiles, DType::bf16, 3, layout::linear()));
  // Jagged groups (MoE token groups): the vector kernel (rows contiguous) and the scalar one.
  auto x = input("x", DType::bf16, rank(2));
  const std::vector<PeerDef> all = test::peer_defs(e4m3);
  for (const PeerDef& d : {dg, vl, vl8, all[all.size() - 2], all.back()}) {  // the last two: bf16 and E4M3 storage
    auto s = scale(amax(groups(x, 0, offsets("offs"))), e4m3, d.def);
    const Pipeline p = pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, d.sat)), output("s", s)});
    const StrideClass rows{{1, 0}, {true, false}}, cols{{0, 0}, {true, false}};
    CHECK(generate(p, Target::parse("sm_90a"), rows).plan.jagged().vector);
    CHECK(!generate(p, Target::parse("sm_90a"), cols).plan.jagged().vector);
    vs.push_back({d.name + " jagged vector", p, rows});
    vs.push_back({d.name + " jagged scalar", p, cols});
  }
  // SGLang's fused SiLU-and-mul (round_to bf16 twice) in 1x128 groups; round_to f16 in 128x1 groups
  // (tests/gpu/test_generic_scales_gpu.cpp runs both).
  auto gate = input("gate", DType::bf16, rank(2));
  auto up = input("up", DType::bf16, rank(2));
  auto sv = round_to(round_to(silu(gate), DType::bf16) * up, DType::bf16);
  auto ss = scale(amax(blocks(sv, 1, 128)), e4m3, recipes::sglang_group(e4m3, false));
  add("sglang silu-and-mul", pipeline({output("q", cast(e4m3, sv / ss, Round::nearest_even, Saturate::finite)),
                                       output("s", ss, layout::mn_major_tma())}));
  auto xf = input("x", DType::f32, rank(2));
  auto w = round_to(xf * 4096.0, DType::f16);
  auto sc = scale(amax(blocks(w, 0, 128)), e5m2, recipes::vllm_group(e5m2, false));
  add("round_to f16 128x1", pipeline({output("q", cast(e5m2, w / sc, Round::nearest_even, Saturate::finite)), output("s", sc)}));
  CHECK(generate(vs.back().p, Target::parse("sm_90a"), vs.back().sc).source.find("mx_round_f16(") != std::string::npos);
  CHECK(mxjit::test::compile_variants(vs) == 2 * int(vs.size()));
}

TEST_CASE("generic scales: dividing casts run in CTAs of 128 threads, 12 a SM; multiplying ones in 256") {
  const Target t = Target::parse("sm_90a");
  auto plan_of = [&](const PeerDef& d, const Schedule& s = {}) {
    const Pipeline p = peer_cast(d, e4m3, Shape::dim0);
    return make_plan(p, t, default_stride_class(p), s);
  };
  const PeerDef vllm{"vllm", recipes::vllm_group(e4m3, false)};
  const Plan v = plan_of(vllm);
  CHECK(v.kind == KernelKind::direct);
  CHECK(v.threads == 128);
  CHECK(v.ctas_per_sm == 12);
  const Plan g = plan_of({"deepgemm", recipes::deepgemm(e4m3, false), Saturate::none});
  CHECK(g.threads == 256);
  CHECK(g.ctas_per_sm == 6);  // one scale a lane: <= 40 registers
  // A schedule's threads keep the old pairing (6 CTAs of 256 for a dividing cast).
  Schedule s;
  s.threads = 256;
  const Plan v256 = plan_of(vllm, s);
  CHECK(v256.threads == 256);
  CHECK(v256.ctas_per_sm == 6);
  CHECK(source_of(peer_cast(vllm, e4m3, Shape::dim0)).find("__launch_bounds__(128, 12)") != std::string::npos);
}

TEST_CASE("generic scales: exact FP32 intrinsics, the definition's amax, clamp and saturation in the source") {
  const Pipeline dg = peer_cast({"deepgemm", recipes::deepgemm(e4m3, false), Saturate::none}, e4m3, Shape::dim0);
  const std::string s = source_of(dg);
  // max(amax, 1e-4) * fp32(1/448), then 1 / s as the factor: each one rounding, no FMA.
  CHECK(s.find("const float g0 = mx_fmax_nan(sa, mx_float(0x38d1b717u));") != std::string::npos);
  CHECK(s.find("const float g1 = __fmul_rn(g0, mx_float(0x3b124925u));") != std::string::npos);
  CHECK(s.find("__fdiv_rn(mx_float(0x3f800000u), sv)") != std::string::npos);
  CHECK(s.find("__fmul_rn(x") == std::string::npos);  // elements pass through emit_packed_codes: y_
  CHECK(s.find("y_ = __fmul_rn(y_, mult0)") != std::string::npos);
  // Saturate::none: the cvt, then overflow to NaN; the amax keeps NaN (no drop).
  CHECK(s.find("mx_cvt_e4m3x2_nosat") != std::string::npos);
  // ... only in chunks with a lane past the bound: the others take the bare satfinite cvt.
  CHECK(s.find("if (mx_fp8_no_overflow<false>(y)) {\n") != std::string::npos);
  CHECK(s.find("pr0 = mx_cvt_e4m3x2(y[0], y[1]);") != std::string::npos);
  CHECK(s.find("0x7f800000u) a = 0u") == std::string::npos);
  // vLLM: the amax drops NaN, elements divide, then fminf(fmaxf(., -448), 448).
  const std::string v = source_of(peer_cast({"vllm", recipes::vllm_group(e4m3, false)}, e4m3, Shape::dim0));
  CHECK(v.find("mx_drop_nan2(mx_max_bf16x2_num(mx_max_bf16x2_num(r0_[u][0].x & 0x7fff7fffu, r0_[u][0].y & 0x7fff7fffu)") !=
        std::string::npos);  // packed NaN-skipping maxima, then NaN-only lanes dropped once
  CHECK(v.find("mx_max_bf16x2(") == std::string::npos);
  CHECK(s.find("mx_drop_nan2") == std::string::npos);
  const std::string vc = source_of(peer_cast({"vllm", recipes::vllm_group(e4m3, false)}, e4m3, Shape::dim1));
  CHECK(vc.find("if (a > 0x7f800000u) a = 0u;") != std::string::npos);  // element by element (columns kernel)
  // The clamp to +-448 (constant, nonzero bounds): one fminf / fmaxf each.
  CHECK(v.find("mx_fmin_num_c(mx_fmax_num_c(__fdiv_rn(y_, mult0), mx_float(0xc3e00000u)), mx_float(0x43e00000u))") != std::string::npos);
  CHECK(v.find("mx_cvt_e4m3x2(") != std::string::npos);
  CHECK(v.find("_nosat") == std::string::npos);
  // The division only where the bracket's ends differ (mx_div_bracket); the clamp to +-448 binds
  // no finite value, so only the lower end makes a NaN -448 (then the ends differ).
  CHECK(v.find("const MxDivBracket dv = mx_div_bracket(mult0);") != std::string::npos);
  CHECK(v.find("pr0 = mx_cvt_e4m3x2(mx_fmax_num_c(__fmul_rn(v0[0], dv.rl), mx_float(0xc3e00000u)), "
               "mx_fmax_num_c(__fmul_rn(v0[1], dv.rl), mx_float(0xc3e00000u)));") != std::string::npos);
  CHECK(v.find("miss |= pr0 ^ mx_cvt_e4m3x2(__fmul_rn(v0[0], dv.rh), __fmul_rn(v0[1], dv.rh));") != std::string::npos);
  CHECK(v.find("if (miss) {") < v.find("__fdiv_rn(y_, mult0)"));
  // A clamp that binds: the whole clamp on both ends. No clamp: the products alone.
  PeerDef b{"vllm clamp 300", recipes::vllm_group(e4m3, false)};
  b.def.clamp_lo = -300, b.def.clamp_hi = 300;
  const std::string vb = source_of(peer_cast(b, e4m3, Shape::dim0));
  CHECK(
      vb.find("mx_fmin_num_c(mx_fmax_num_c(__fmul_rn(v0[0], dv.rh), mx_float(0xc3960000u)), mx_float(0x43960000u))") !=
      std::string::npos);
  b.def.clamp = Clamp::none;
  CHECK(source_of(peer_cast(b, e4m3, Shape::dim0))
            .find("pr0 = mx_cvt_e4m3x2(__fmul_rn(v0[0], dv.rl), __fmul_rn(v0[1], dv.rl));") != std::string::npos);
  // The columns kernel: a thread's values of one column share its factor, so they bracket too.
  CHECK(vc.find("const MxDivBracket dv = mx_div_bracket(mult0);") != std::string::npos);
  // Saturate::none (overflow to NaN: not monotone) divides every value.
  PeerDef ns{"vllm nosat", recipes::vllm_group(e4m3, false), Saturate::none};
  CHECK(source_of(peer_cast(ns, e4m3, Shape::dim0)).find("mx_div_bracket(mult") == std::string::npos);
  // A bound of +-0 keeps the signed-zero-exact helpers (fminf may pick either zero).
  PeerDef z{"vllm clamp at 0", recipes::vllm_group(e4m3, false)};
  z.def.clamp_lo = 0;
  const std::string vz = source_of(peer_cast(z, e4m3, Shape::dim0));
  CHECK(vz.find("mx_fmin_num(mx_fmax_num(__fdiv_rn(y_, mult0), mx_float(0x00000000u)), mx_float(0x43e00000u))") != std::string::npos);
  CHECK(vz.find("_num_c(") == std::string::npos);
  // The tiled kernel: the same, on its shared-memory multipliers.
  Schedule tiled;
  tiled.kernel = KernelKind::tiled;
  const std::string t = source_of(peer_cast({"vllm", recipes::vllm_group(e4m3, false)}, e4m3, Shape::tiles), tiled);
  CHECK(t.find("if (u > 0x7f800000u) u = 0u;") != std::string::npos);
  CHECK(t.find("__fdiv_rn(x0, s0_mult[lb0])") != std::string::npos);
  // No plain + - * / on floats in a generic scale's statements: only the intrinsics.
  for (const std::string& src : {s, v, t}) {
    const size_t from = src.find("const float sa = mx_float(m);");
    REQUIRE(from != std::string::npos);
    size_t to = from;  // the scale block's closing brace: the first line that is only "}"
    while ((to = src.find('\n', to) + 1) != 0 && src.find_first_not_of(' ', to) != src.find("}\n", to)) {
    }
    const std::string block = src.substr(from, to - from);
    for (const char* op : {" + ", " - ", " * ", " / "}) CHECK_MESSAGE(block.find(op) == std::string::npos, op << " in " << block);
    CHECK(block.find("__f") != std::string::npos);
  }
  // Software encoders (no FP8 cvt before sm_89) keep Saturate::none too.
  const std::string sw = source_of(dg, {}, "sm_80");
  CHECK(sw.find("mx_fp8_nosat<false>(") != std::string::npos);
}

TEST_CASE("generic scales: the library recipes keep their tuned device functions") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  const std::string src = source_of(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}));
  CHECK(src.find("mx_scale_rceil(") != std::string::npos);
  CHECK(src.find("const float sa = mx_float(m);") == std::string::npos);
  auto f = f32_scale(amax(blocks(x, 1, 128)), e4m3);
  const std::string fs = source_of(pipeline({output("q", cast(e4m3, x / f)), output("s", f)}));
  CHECK(fs.find("const float sa = mx_float(m);") == std::string::npos);
}

TEST_CASE("generic scales: what still runs on the CPU only is a UsageError naming why") {
  auto x = input("x", DType::bf16, rank(2));
  auto gpu_refuses = [](const Pipeline& p, const char* part) {
    try {
      generate(p, Target::parse("sm_90a"), default_stride_class(p));
      FAIL_CHECK("generated: " << p.str());
    } catch (const UsageError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
  };
  // A two-level definition (tamax_var) other than NVFP4's library recipe.
  ScaleDef two = recipes::vllm_group(e4m3, false);
  two.stored = amax_var() / tamax_var();
  auto st = scale(amax(blocks(x, 1, 128)), e4m3, two);
  gpu_refuses(pipeline({output("q", cast(e4m3, x / st)), output("s", st)}), "reads tamax_var()");
  // Whole-axis blocks run on the rows kernel, with any definition; a whole tensor on the direct
  // kernel after a tensor-amax pre-pass (test_tensorwise_codegen.cpp), but not beside NVFP4.
  auto sw = scale(amax(blocks(x, 1, kWholeAxis)), e4m3, recipes::vllm_group(e4m3, false));
  CHECK(generate(pipeline({output("q", cast(e4m3, x / sw)), output("s", sw)}), Target::parse("sm_90a"),
                 default_stride_class(pipeline({output("q", cast(e4m3, x / sw)), output("s", sw)})))
            .plan.kind == KernelKind::rows);
  auto stw = scale(amax(blocks(x, {0, 1}, {kWholeAxis, kWholeAxis})), e4m3, recipes::vllm_group(e4m3, false));
  const Pipeline ptw = pipeline({output("q", cast(e4m3, x / stw)), output("s", stw)});
  const Plan tw = generate(ptw, Target::parse("sm_90a"), default_stride_class(ptw)).plan;
  CHECK(tw.kind == KernelKind::direct);
  CHECK(tw.direct().tensorwise);
  CHECK(tw.prepass.has_value());
  auto s4 = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  gpu_refuses(pipeline({output("q", cast(e4m3, x / stw)), output("s", stw), output("q4", cast(e2m1, x / s4)),
                        output("s4", s4)}),
              "when every scale is tensorwise");
}

TEST_CASE("generic scales: every pipeline and schedule of the GPU tests generates (no refusal there)") {
  // tests/gpu/test_generic_scales_gpu.cpp: the planner's kernel and the tiled one, rank 2 and 3,
  // bf16 and f32 inputs, for every peer and shape.
  int n = 0;
  for (const char* arch : {"sm_90a", "sm_100a"})
    for (ElemFormat elem : {e4m3, e5m2})
      for (const PeerDef& d : test::peer_defs(elem))
        for (Shape shape : {Shape::dim0, Shape::dim1, Shape::tiles})
          for (KernelKind kind : {KernelKind::automatic, KernelKind::tiled})
            for (DType dt : {DType::bf16, DType::f32})
              for (int r : {2, 3}) {
                Schedule s;
                s.kernel = kind;
                const Pipeline p = peer_cast(d, elem, shape, dt, r);
                CHECK_NOTHROW(generate(p, Target::parse(arch), default_stride_class(p), s));
                ++n;
              }
  CHECK(n == 2 * 2 * int(test::peer_defs(e4m3).size()) * 3 * 2 * 2 * 2);
}

TEST_CASE("generic scales: the peers' casts compile for sm_90a without register spills" * doctest::test_suite("slow")) {
  int n = 0;
  for (const PeerDef& d : test::peer_defs(e4m3))
    for (Shape shape : {Shape::dim0, Shape::dim1, Shape::tiles}) {
      const Pipeline p = peer_cast(d, e4m3, shape);
      CHECK_MESSAGE(test::spill_bytes(p, default_stride_class(p)) == 0, (d.name + " " + test::shape_name(shape)));
      ++n;
    }
  CHECK(n == 3 * int(test::peer_defs(e4m3).size()));
}
