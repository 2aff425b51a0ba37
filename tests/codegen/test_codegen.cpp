// Code generation without a GPU: every variant, format and rule compiles with NVRTC for sm_90a
// and sm_100a; the sm_100a code uses the hardware FP4/FP6/E8M0 conversions and sm_90a does not;
// generated source is self-contained, stable and carries its banner.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <future>
#include <tuple>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/emit_common.hpp"
#include "dsl/errors.hpp"
#include "dsl/recipes.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

const ElemFormat kFormats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};
const ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};

Pipeline cast2d(int axis, ElemFormat f, ScaleRule rule, Layout q, Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = e8m0_scale(amax(blocks(x, axis, 32)), f, rule);
  return pipeline({output("q", cast(f, x / sc), q), output("s", sc, s)});
}

// Every variant the generator must produce (issue: dim0, dim1, 3-D, dim0+dim1, strides, tails).
std::vector<std::pair<std::string, Pipeline>> variants() {
  std::vector<std::pair<std::string, Pipeline>> v;
  for (ElemFormat f : kFormats)
    for (ScaleRule r : kRules) {
      v.emplace_back("dim0 " + f.str(), cast2d(1, f, r, layout::row_major(), layout::linear()));
      v.emplace_back("dim1 " + f.str(), cast2d(0, f, r, layout::col_major(), layout::blocked_128x4()));
    }
  auto x3 = input("x", DType::bf16, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, 1, 32)), e4m3, ScaleRule::rceil);
  v.emplace_back("3-D expert", pipeline({output("q", cast(e4m3, x3 / s3), layout::expert_col_major()),
                                          output("s", s3, layout::blocked_128x4())}));
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  v.emplace_back("dim0+dim1", pipeline({output("q0", cast(e4m3, x / s0)), output("s0", s0),
                                         output("q1", cast(e4m3, x / s1), layout::col_major()), output("s1", s1)}));
  // With blocked scales, sm_90+ copies the staged codes out in bulk.
  v.emplace_back("dim0+dim1 blocked", pipeline({output("q0", cast(e4m3, x / s0)), output("s0", s0, layout::blocked_128x4()),
                                                 output("q1", cast(e4m3, x / s1), layout::col_major()),
                                                 output("s1", s1, layout::blocked_128x4())}));
  // The peers' strided scale layouts (padded: the launcher zeroes the buffer first).
  auto f0 = f32_scale(amax(blocks(x, 1, 128)), e4m3);
  v.emplace_back("dim0 mn_major_tma fp32", pipeline({output("q", cast(e4m3, x / f0)), output("s", f0, layout::mn_major_tma())}));
  v.emplace_back("dim1 mn_major_tma e8m0", pipeline({output("q", cast(e4m3, x / s1), layout::col_major()),
                                                     output("s", s1, layout::mn_major_tma())}));
  auto t = f32_scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3);
  v.emplace_back("gemm_ready_2d", pipeline({output("q", cast(e4m3, x / t)), output("r", t, layout::gemm_ready_2d()),
                                            output("c", t, layout::gemm_ready_2d_t())}));
  // Layouts stored through the offset function (codegen/layout_cuda.hpp): packed words, split axes.
  v.emplace_back("packed ue8m0 + split", pipeline({output("q", cast(e4m3, x / s0)), output("sp", s0, layout::mn_major_tma_packed()),
                                                   output("ss", s0, layout::modes({layout::rest, layout::rows / 16, layout::cols,
                                                                                   layout::rows % 16}).align(layout::cols, 3))}));
  return v;
}

}  // namespace

// Checks that generated source `src` contains every one of `parts`.
void check_contains(const std::string& src, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    const std::string text = part;
    CAPTURE(text);
    CHECK(src.find(part) != std::string::npos);
  }
}

// The generated source of variants()'s entry `name` for `t` (default stride class).
std::string variant_source(const std::string& name, const Target& t) {
  for (const auto& [n, p] : variants())
    if (n == name) return generate(p, t, default_stride_class(p)).source;
  FAIL("no variant " << name);
  return {};
}

TEST_CASE("every variant x format x rule compiles for sm_90a and sm_100a" * doctest::test_suite("slow")) {
  auto vs = variants();
  std::vector<StrideClass> classes;
  int compiled = 0;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    Target t = Target::parse(arch);
    std::vector<std::future<std::string>> jobs;
    for (auto& v : vs) {  // lambdas capture no structured bindings before clang 16
      const std::string& name = v.first;
      const Pipeline& p = v.second;
      StrideClass sc = default_stride_class(p);
      jobs.push_back(std::async(std::launch::async, [&, sc] {
        CompiledKernel k = compile(p, t, sc);
        return k.cubin.size() > 4 && k.cubin.compare(0, 4, "\x7f" "ELF") == 0 ? std::string() : name;
      }));
    }
    for (auto& j : jobs) {
      std::string failed = j.get();
      CHECK_MESSAGE(failed.empty(), "no cubin for " << failed << " on " << arch);
      ++compiled;
    }
  }
  MESSAGE("compiled " << compiled << " kernels");
}

TEST_CASE("packed and split layouts: the direct and tiled kernels store them by the offset function; padded ones are zeroed first") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 128)), e4m3, ScaleRule::ceil);
  const Pipeline packed = pipeline({output("q", cast(e4m3, x / s)), output("sp", s, layout::mn_major_tma_packed())});
  const Target t = Target::parse("sm_90a");
  const Plan pp = make_plan(packed, t, default_stride_class(packed));
  CHECK(pp.kind == KernelKind::direct);
  CHECK(pp.zero_outputs == std::vector<int>{1});
  // The offset: word (c/4)*A + r, byte c%4, A = roundup(R, 4), from the definition; the direct
  // kernel's block column is C, the tiled kernel's gc.
  Schedule tiled;
  tiled.kernel = KernelKind::tiled;
  for (const auto& [sched, col_name] : {std::pair{Schedule{}, "C"}, std::pair{tiled, "gc"}}) {
    const char* col = col_name;  // CAPTURE takes no structured binding before clang 16
    CAPTURE(col);
    const std::string src = generate(packed, t, default_stride_class(packed), sched).source;
    CHECK(src.find(fmt::format("mx_i64((mx_u64({}) % 4u))", col)) != std::string::npos);
    CHECK(src.find("((mx_u64(P.out_shape[1][0]) + 3u) / 4u * 4u)") != std::string::npos);
  }
  const Pipeline mn = pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma()), output("b", s, layout::blocked_128x4())});
  const Plan pl = make_plan(mn, Target::parse("sm_90a"), default_stride_class(mn));
  CHECK(pl.zero_outputs == std::vector<int>{1});  // the kernels write real scales only; blocked writes its padding
  // Grouped layouts other than grouped_blocked128x4 run on the CPU.
  const Pipeline g = pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma().groups("offs", 0))});
  CHECK_THROWS_WITH_AS(make_plan(g, Target::parse("sm_90a"), default_stride_class(g)), doctest::Contains("output 's'"), UsageError);
}

TEST_CASE("other stride classes compile: column-major, unaligned, no unit stride") {
  Pipeline p = cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear());
  for (const char* arch : {"sm_90a", "sm_100a"})
    for (StrideClass sc : {StrideClass{{0}, {true}}, StrideClass{{1}, {false}}, StrideClass{{-1}, {false}}}) {
      CompiledKernel k = compile(p, Target::parse(arch), sc);
      CHECK(!k.cubin.empty());
    }
}

TEST_CASE("sm_100a uses hardware FP4/FP6/E8M0 conversions, sm_90a software") {
  for (ElemFormat f : {e2m1, e2m3, e3m2}) {
    Pipeline p = cast2d(1, f, ScaleRule::rceil, layout::row_major(), layout::linear());
    CompileOptions o;
    o.want_ptx = true;
    std::string hw = f == e2m1 ? "cvt.rn.satfinite.e2m1x2.f32" : (f == e2m3 ? "cvt.rn.satfinite.e2m3x2.f32" : "cvt.rn.satfinite.e3m2x2.f32");
    CompiledKernel b = compile(p, Target::parse("sm_100a"), default_stride_class(p), o);
    CompiledKernel h = compile(p, Target::parse("sm_90a"), default_stride_class(p), o);
    CHECK(b.ptx.find(hw) != std::string::npos);
    CHECK(b.ptx.find("cvt.rp.satfinite.ue8m0x2.f32") != std::string::npos);
    CHECK(h.ptx.find(hw) == std::string::npos);
    CHECK(h.ptx.find("ue8m0x2") == std::string::npos);
  }
  Pipeline p8 = cast2d(1, e4m3, ScaleRule::floor, layout::row_major(), layout::linear());
  CompileOptions o;
  o.want_ptx = true;
  CHECK(compile(p8, Target::parse("sm_90a"), default_stride_class(p8), o).ptx.find("cvt.rn.satfinite.e4m3x2.f32") !=
        std::string::npos);
}

TEST_CASE("software encodes: pair emulations or mx_encode_rne for nearest even, mx_encode_sw for stochastic rounding") {
  auto x = input("x", DType::bf16, rank(2));
  // Nearest-even on sm_90a: FP4 by FMA, FP6 through the FP8 cvt, INT8 by the FP32 adder; sm_80 has
  // no FP8 cvt, so FP6 goes back to mx_encode_rne there (FP4's and INT8's versions need none).
  // E8M0 scales overwrite NaN blocks, so the forms without NaN tests (_finite) serve them. FP4
  // of a bare bf16 input on sm_90a: from its loaded words by bf16x2 arithmetic.
  const std::vector<std::tuple<ElemFormat, const char*, const char*>> want = {
      {e2m1, "mx_e2m1x8_bf16_finite(", "mx_e2m1x2_fma_finite("},
      {e2m3, "mx_e2m3x2_via_e4m3_finite(", "= mx_encode_rne<"},
      {e3m2, "mx_e3m2x2_via_e5m2_finite(", "= mx_encode_rne<"},
      {int8, "mx_int8x2_finite(", "mx_int8x2_finite("}};
  for (const auto& [f, sm90, sm80] : want) {
    const std::string format = f.str();  // CAPTURE takes no structured binding before clang 16
    CAPTURE(format);
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), f, ScaleRule::floor);
    const Pipeline rne = pipeline({output("q", cast(f, x / s)), output("s", s)});
    const Pipeline sr = pipeline({output("q", cast(f, x / s, Round::stochastic)), output("s", s)});
    // "= mx_encode_" and "fn(" are calls in the kernel body (convert.cuh only defines them).
    const std::string a = generate(rne, Target::parse("sm_90a"), default_stride_class(rne)).source;
    const std::string a80 = generate(rne, Target::parse("sm_80"), default_stride_class(rne)).source;
    const std::string b = generate(sr, Target::parse("sm_90a"), default_stride_class(sr)).source;
    const std::string body = a.substr(a.find("__global__")), body80 = a80.substr(a80.find("__global__"));
    CHECK(body.find(sm90) != std::string::npos);
    CHECK(body80.find(sm80) != std::string::npos);
    CHECK(a.find("= mx_encode_sw<") == std::string::npos);
    CHECK(b.find("= mx_encode_sw<") != std::string::npos);
    CHECK(b.find("= mx_encode_rne<") == std::string::npos);
  }
  // NVFP4's E4M3 scales flag no NaN block: eight codes at once where the multiplier is finite
  // (a block with a NaN or an infinity has a NaN one), signs from the input's words (from the
  // values for an expression root), else pairs that test for NaN. The multiplier of each scale byte comes from
  // a per-CTA table, filled before a barrier by the operations the blocks computed before.
  auto s4 = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  const Pipeline nv = pipeline({output("q", cast(e2m1, x / s4)), output("s", s4)});
  const std::string src = generate(nv, Target::parse("sm_90a"), default_stride_class(nv)).source;
  const std::string body = src.substr(src.find("__global__"));
  const size_t guard = body.find("if (mx_bits(mult0) < 0x7f800000u)");
  CHECK(guard != std::string::npos);
  CHECK(body.find("wd[0] = mx_e2m1x8_f32_finite(y, mx_e2m1_signs8_bf16(r0_[u][0].x,") > guard);
  CHECK(body.find("mx_e2m1x2_fma(") > guard);
  CHECK(body.find("mx_e2m1x2_fma_finite(") == std::string::npos);
  CHECK(body.find("ysum") == std::string::npos);
  const size_t table = body.find("__shared__ float mx_mult0[256];"), sync = body.find("__syncthreads();");
  CHECK(table < sync);
  CHECK(body.find("mx_mult0[i] = den == 0.0f ? 0.0f : 1.0f / den;") < sync);
  CHECK(body.find("1.0f / den", sync) == std::string::npos);  // no division per block
  CHECK(body.find("mult = mx_mult0[byte];") > sync);
  auto v = x * x;
  auto sv = nvfp4_scale(amax(blocks(v, 1, 16)), Nvfp4Convention::torchao);
  const Pipeline nvv = pipeline({output("q", cast(e2m1, v / sv)), output("s", sv)});
  const std::string srcv = generate(nvv, Target::parse("sm_90a"), default_stride_class(nvv)).source;
  const std::string bodyv = srcv.substr(srcv.find("__global__"));
  CHECK(bodyv.find("mx_e2m1x8_f32_finite(y, mx_e2m1_signs8_f32(y))") != std::string::npos);
  CHECK(bodyv.find("mx_mult0[i] = mx_per_tensor_inv / mx_decode<4, 3, 1, false>(mx_u32(i));") < bodyv.find("__syncthreads();"));
  CHECK(bodyv.find("mult = mx_mult0[byte];") != std::string::npos);
  // torchao's clamp to [-6, 6] only in the NaN fallback (E2M1's encode saturates at 6 itself).
  CHECK(bodyv.find("mx_fmin_nan_c(mx_fmax_nan_c(y[e], -6.0f), 6.0f)") > bodyv.find("if (mx_bits(mult0) < 0x7f800000u)"));
  CHECK(bodyv.find("y_ = mx_fmin_nan(") == std::string::npos);
  const std::string src100 = generate(nv, Target::parse("sm_100a"), default_stride_class(nv)).source;
  CHECK(src100.substr(src100.find("__global__")).find("mx_e2m1x8_f32_finite(") == std::string::npos);  // the FP4 cvt
  CHECK(src100.substr(src100.find("__global__")).find("mult = mx_mult0[byte];") != std::string::npos);
}

// emit_direct.cpp's scatter_scale: software-encoded casts (ALU-bound on sm_90) compute each E8M0
// scale on one lane of its block and fetch it by a shuffle; FP8 through the hardware cvt keeps
// one scale per lane, and so do expression roots (their amax needs the values, not loaded words).
TEST_CASE("direct kernel: one lane per block row computes a software-encoded cast's E8M0 scale") {
  auto body = [](const Pipeline& p, const char* arch) {
    const std::string src = generate(p, Target::parse(arch), default_stride_class(p)).source;
    return src.substr(src.find("__global__"));
  };
  const std::string fetch = "__shfl_sync(0xffffffffu, own0[0], (lane & ~3) | ((u % 4) >= 2 ? 2 : 0) | ((u % 2) >= 1 ? 1 : 0))";
  for (ElemFormat f : {e2m1, e2m3, e3m2, int8, e4m3, e5m2}) {
    CAPTURE(f.str());
    const bool hw = f == e4m3 || f == e5m2;
    for (Layout l : {layout::linear(), layout::blocked_128x4()}) {
      const Pipeline p = cast2d(1, f, ScaleRule::floor, layout::row_major(), l);
      CHECK(make_plan(p, Target::parse("sm_90a"), default_stride_class(p)).direct().lanes_per_block == 4);
      CHECK((body(p, "sm_90a").find(fetch) != std::string::npos) == !hw);
      CHECK(body(p, "sm_80").find(fetch) != std::string::npos);  // no FP8 cvt: software everywhere
      // Linear scales leave from the owner lane, inside the scale loop, not per row from the
      // block's first lane; blocked scales keep their gathered words.
      const bool owner = !hw && !detail::is_blocked(l);
      CHECK((body(p, "sm_90a").find("from their owner lane") != std::string::npos) == owner);
      CHECK((body(p, "sm_90a").find("(threadIdx.x % 4) == 0 && cc < n_c") != std::string::npos) == (hw && !detail::is_blocked(l)));
    }
  }
  auto x = input("x", DType::bf16, rank(2));
  auto v = x * x;
  auto s = e8m0_scale(amax(blocks(v, 1, 32)), e2m1, ScaleRule::floor);
  const Pipeline sq = pipeline({output("q", cast(e2m1, v / s)), output("s", s)});
  CHECK(body(sq, "sm_90a").find("own0[") == std::string::npos);
}

TEST_CASE("generated source: self-contained, banner, stable") {
  Pipeline p = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4());
  GeneratedKernel a = generate(p, Target::parse("sm_90a"), default_stride_class(p));
  GeneratedKernel b = generate(p, Target::parse("sm_90a"), default_stride_class(p));
  CHECK(a.source == b.source);
  // Self-contained but for mxjit's own headers, included by name (NVRTC gets their text).
  size_t includes = 0;
  for (size_t at = a.source.find("#include"); at != std::string::npos; at = a.source.find("#include", at + 1), ++includes) {
    const std::string line = a.source.substr(at, a.source.find('\n', at) - at);
    bool ours = false;
    for (const std::string& h : a.headers) ours = ours || line == "#include \"" + h + "\"";
    CHECK_MESSAGE(ours, line);
  }
  CHECK(includes == a.headers.size());
  CHECK(a.headers == std::vector<std::string>{"mx_math.cuh", "prelude.cuh", "convert.cuh"});
  CHECK(a.source.find("mxjit generated kernel") != std::string::npos);
  CHECK(a.source.find(p.hash().hex()) != std::string::npos);
  CHECK(a.source.find("extern \"C\" __global__") != std::string::npos);
  CHECK(a.source.find("mx_cvt_e4m3x2") != std::string::npos);
  CHECK(a.plan.ax_c == 1);
  CHECK(a.plan.ax_r == 0);
  GeneratedKernel c = generate(p, Target::parse("sm_100a"), default_stride_class(p));
  CHECK(c.kernel_name != a.kernel_name);
}

TEST_CASE("what the GPU generator does not run yet is a UsageError, not an NVRTC error") {
  auto x = input("x", DType::bf16, rank(2));
  auto sg = e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::rceil);
  Pipeline pg = pipeline({output("q", cast(e4m3, x / sg)), output("s", sg), output("a", amax(x))});
  CHECK_THROWS_AS(generate(pg, Target::parse("sm_90a"), default_stride_class(pg)), UsageError);  // amax beside groups
  Pipeline pj = pipeline({output("q", cast(e4m3, x / sg)), output("s", sg)});
  CHECK(generate(pj, Target::parse("sm_90a"), default_stride_class(pj)).plan.kind == KernelKind::jagged);
  CastOptions flush;
  flush.flush_subnormals = true;
  auto sn = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  Pipeline pn = pipeline({output("q", cast(e2m1, x / sn, Round::nearest_even, Saturate::finite, flush)), output("s", sn)});
  CHECK_THROWS_AS(generate(pn, Target::parse("sm_90a"), default_stride_class(pn)), UsageError);
  // Whole rows run on the rows kernel (generic scale definitions: test_generic_scales.cpp).
  auto gpu_refuses = [](const Pipeline& p, const char* part) {
    try {
      generate(p, Target::parse("sm_90a"), default_stride_class(p));
      FAIL_CHECK("generated: " << p.str());
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  auto sw = f32_scale(amax(blocks(x, 1, kWholeAxis)), e4m3);
  CHECK(generate(pipeline({output("q", cast(e4m3, x / sw)), output("s", sw)}), Target::parse("sm_90a"), default_stride_class(pj))
            .plan.kind == KernelKind::rows);
  // A whole tensor runs on the direct kernel after a tensor-amax pre-pass (test_tensorwise_codegen.cpp),
  // not beside a scale of other blocks.
  auto st = f32_scale(amax(blocks(x, {0, 1}, {kWholeAxis, kWholeAxis})), e4m3);
  const Pipeline pt = pipeline({output("q", cast(e4m3, x / st)), output("s", st)});
  CHECK(generate(pt, Target::parse("sm_90a"), default_stride_class(pt)).plan.direct().tensorwise);
  gpu_refuses(pipeline({output("q", cast(e4m3, x / st)), output("s", st), output("s1", sw)}),
              "when every scale is tensorwise");
}

TEST_CASE("NVFP4 (both conventions, dim0 and dim1) compiles for sm_90a and sm_100a") {
  for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao})
    for (int axis : {0, 1}) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = nvfp4_scale(amax(blocks(x, axis, 16)), c);
      Pipeline p = pipeline({output("q", cast(e2m1, x / s), axis ? layout::row_major() : layout::col_major()),
                             output("s", s, layout::blocked_128x4())});
      for (const char* arch : {"sm_90a", "sm_100a"}) {
        CompiledKernel k = compile(p, Target::parse(arch), default_stride_class(p));
        CHECK(k.source.find("mx_tamax") != std::string::npos);
        CHECK(!k.cubin.empty());
      }
    }
}

TEST_CASE("Target parsing") {
  CHECK(Target::parse("sm_90a").sm() == 90);
  CHECK(Target::parse("sm_100a").hw_fp4_fp6());
  CHECK_FALSE(Target::parse("sm_100").hw_fp4_fp6());
  CHECK_FALSE(Target::parse("sm_90a").hw_fp4_fp6());
  CHECK_THROWS_AS(Target::parse("gfx90a"), UsageError);
  CHECK_THROWS_AS(Target::parse("sm_75"), UsageError);
}

// Golden sources: tests/codegen/test_golden.cpp compares the generated text of fixed specs x
// arches with readable files under tests/codegen/golden/ (the two pipelines pinned here by hash
// before, dim0 e4m3 blocked on sm_90a and dim1 e2m1 on sm_100a, among them).

TEST_CASE("a pipeline that outputs scales without codes gets shared memory for its scales") {
  // Regression: the tiled plan sized the tile and its per-block arrays from the quantizes only, so
  // a scales-only pipeline (column-major input, blocks along the strided axis) wrote past its
  // shared memory on the GPU.
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  const Pipeline scales_only = pipeline({output("s", s)});
  const Pipeline with_codes = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  const StrideClass col_major{{0}, {true}};  // axis 0 unit-stride: blocks run across the loads
  const Target t = Target::parse("sm_90a");
  const Schedule tiled{.kernel = KernelKind::tiled};
  const Plan a = make_plan(scales_only, t, col_major, tiled), b = make_plan(with_codes, t, col_major, tiled);
  CHECK(a.kind == KernelKind::tiled);
  CHECK(a.tiled().tile_rows == b.tiled().tile_rows);
  CHECK(a.tiled().tile_cols == b.tiled().tile_cols);
  CHECK(a.smem_bytes == b.smem_bytes);
  CHECK(a.smem_bytes > a.tiled().tile_rows * a.tiled().row_stride * 4);
}

// ptxas spill reports for the benchmark's casts on sm_90a: a register spill moves traffic to local
// memory and cost up to 1.6x on an H200 (a 4-row direct kernel reading unaligned rows; the fused
// dim0+dim1 kernel after a change that raised its spills from 136 to 376 bytes).
TEST_CASE("the benchmark's casts compile for sm_90a within their register budgets") {
  using test::spill_bytes;
  const Pipeline d0 = cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4());
  StrideClass unaligned = default_stride_class(d0);
  unaligned.aligned[0] = false;
  CHECK(spill_bytes(d0, default_stride_class(d0)) == 0);
  CHECK(spill_bytes(d0, unaligned) == 0);  // element loads: 2 rows per thread, not 4
  const Pipeline d1 = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4());
  CHECK(spill_bytes(d1, default_stride_class(d1)) == 0);
  // Software-encoded plain casts (sm_90: mx_encode_rne) run 4 chunks per thread at <= 40 registers.
  for (ElemFormat f : {e2m1, e2m3, e3m2, int8}) {
    CAPTURE(f.str());
    const Pipeline sw = cast2d(1, f, ScaleRule::floor, layout::row_major(), layout::blocked_128x4());
    CHECK(make_plan(sw, Target::parse("sm_90a"), default_stride_class(sw)).direct().chunks_per_thread == 4);
    CHECK(spill_bytes(sw, default_stride_class(sw)) == 0);
  }
  for (const auto& [variant, p] : variants()) {
    const std::string& name = variant;  // CAPTURE takes no structured binding before clang 16
    CAPTURE(name);
    if (name == "3-D expert") CHECK(spill_bytes(p, default_stride_class(p)) == 0);
    // Two scales of 8 x 8 values each at 64 registers (4 CTAs per SM): the unrolled tail path
    // spilled 16-20 bytes; rolled, nothing spills (136 bytes at 16 rows cost 1.4x).
    if (name == "dim0+dim1") CHECK(spill_bytes(p, default_stride_class(p)) == 0);
  }
}

// The columns kernel's warp shapes (emit_columns.cpp): a warp covers 128 rows x 32 columns with
// 16 rows per thread; with a row-wise scale too (dim0+dim1), 8 rows per thread, 4 lanes along
// the rows where the codes are staged (a row's 32-column block is 4 lanes of one warp; 4 warps
// stacked), else 8 (warps stacked in pairs).
TEST_CASE("columns kernel plans: dim1 and dim0+dim1 warp shapes, tunings") {
  const Target t = Target::parse("sm_90a");
  const Pipeline d1 = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear());
  const Plan a = make_plan(d1, t, default_stride_class(d1));
  CHECK(a.kind == KernelKind::columns);
  CHECK((a.columns().rows_per_thread == 16 && a.columns().tile_rows == 128 && a.columns().tile_cols == 256 && a.ctas_per_sm == 2));
  CHECK(columns_lanes_r(16, false, false) == 8);
  CHECK(columns_lanes_r(8, false, false) == 16);
  CHECK(columns_lanes_r(8, true, false) == 8);
  CHECK(columns_lanes_r(8, true, true) == 4);
  const Plan b = make_plan(d1, t, default_stride_class(d1), Schedule{.rows_per_thread = 8});
  CHECK((b.columns().rows_per_thread == 8 && b.columns().tile_rows == 128 && b.columns().tile_cols == 128));  // 16 lanes x 8 rows: one warp covers 128 rows
  for (const auto& [name, p] : variants()) {
    if (name != "dim0+dim1") continue;
    const Plan f = make_plan(p, t, default_stride_class(p));
    CHECK(f.kind == KernelKind::columns);
    CHECK((f.columns().rows_per_thread == 8 && f.columns().tile_rows == 128 && f.columns().tile_cols == 128 && f.ctas_per_sm == 4));
    const Schedule sixteen{.ctas_per_sm = 2, .rows_per_thread = 16};
    const Plan g = make_plan(p, t, default_stride_class(p), sixteen);
    CHECK((g.columns().rows_per_thread == 16 && g.columns().tile_cols == 256 && g.ctas_per_sm == 2));
    // The codes are staged in shared memory, lines in order and padded, and copied out as whole
    // lines (the one-path-per-CTA barrier and the bf16x2 maxima: test_properties.cpp).
    CHECK((f.columns().codes_staged && f.columns().lines_padded));
    // Warp shapes: 4 lanes along the rows with staged codes in the one-tile form (loads of whole
    // lines); 8 in the pipelined form and at 16 rows per thread (8 x 16 rows: a warp covers 128).
    CHECK(f.columns().lanes_along_rows == 4);
    CHECK(g.columns().lanes_along_rows == 8);
    const Schedule ring{.ctas_per_sm = 2, .stages = 2};
    const Plan h = make_plan(p, t, default_stride_class(p), ring);
    CHECK((h.columns().rows_per_thread == 8 && h.columns().tile_rows == 128 && h.columns().tile_cols == 128 && h.columns().stages == 2));
    CHECK(h.columns().lanes_along_rows == 8);
  }
  // Unstaged dim0+dim1 codes (FP4: 4-bit codes leave from the registers) keep 8 lanes.
  const Pipeline fp4 = parse_pipeline("bf16[2] -> mxfp4.e2m1 floor blocks(1,32); mxfp4.e2m1 floor blocks(0,32) q:col_major");
  const Plan f4 = make_plan(fp4, t, default_stride_class(fp4));
  CHECK(!f4.columns().codes_staged);
  CHECK(f4.columns().lanes_along_rows == 8);
}

// The columns kernel's pipelined form (Plan::stages >= 2, a tuning): persistent CTAs over a
// shared-memory ring filled by bulk copies. Its ring sizes the dynamic shared memory and caps
// CTAs per SM; a ring too large for the CTAs asked for is refused by name, and so is a target
// without bulk copies; every stage count compiles for both arches without spills, for dim1,
// dim0+dim1 and 3-D per-expert casts.
TEST_CASE("columns kernel pipelined: ring size, CTAs per SM, refusal, compiles without spills" *
          doctest::test_suite("slow")) {
  const Target t = Target::parse("sm_90a");
  for (const auto& [variant, p] : variants()) {
    const std::string& name = variant;  // CAPTURE takes no structured binding before clang 16
    if (name != "dim0+dim1" && name != "3-D expert") continue;
    CAPTURE(name);
    const bool fused = name == "dim0+dim1";
    const Plan base = make_plan(p, t, default_stride_class(p));
    CHECK(base.kind == KernelKind::columns);
    CHECK(base.columns().stages == 1);
    CHECK(base.smem_bytes == 0);
    for (int stages : {2, 3}) {
      const Schedule tu{.rows_per_thread = 8, .stages = stages};
      const Plan pl = make_plan(p, t, default_stride_class(p), tu);
      CHECK(pl.columns().stages == stages);
      // 128 rows of tile_cols bf16 and 16 bytes per 8 rows
      CHECK(columns_slot_bytes(pl.columns()) == 128 * pl.columns().tile_cols * 2 + 16 * 16);
      CHECK(pl.smem_bytes == stages * columns_slot_bytes(pl.columns()));
      // 228 KiB per SM over ring + staged scales (4 KiB) + staged codes (32 KiB, fused) + 1 KiB:
      // fused 103936 / 136960 bytes per CTA, 3-D 71168 / 104192.
      CHECK(pl.ctas_per_sm == (fused ? (stages == 2 ? 2 : 1) : (stages == 2 ? 3 : 2)));
      CHECK(make_plan(p, t, default_stride_class(p), tu).str() == pl.str());  // the plan's text is stable
      const std::string src = generate(p, t, default_stride_class(p), tu).source;
      // Persistent CTAs (the loop's text is the schedule's shape: no PTX trace names it).
      CHECK(src.find("for (unsigned tile = blockIdx.x; tile < n_tiles; tile += gridDim.x, ++it)") != std::string::npos);
      CHECK((src.find("q0_tile[") != std::string::npos) == fused);  // codes staged in the fused cast
      for (const char* arch : {"sm_90a", "sm_100a"}) {
        CAPTURE(arch);
        CompileOptions o;
        o.schedule = tu;
        o.want_ptx = true;
        const CompiledKernel k = compile(p, Target::parse(arch), default_stride_class(p), o);
        CHECK(!k.cubin.empty());
        // The ring: bulk copies completing on mbarriers, waited on by phase parity.
        CHECK(k.ptx.find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") != std::string::npos);
        CHECK(k.ptx.find("mbarrier.try_wait.parity") != std::string::npos);
      }
      CHECK(test::spill_bytes(p, default_stride_class(p), tu) == 0);
    }
    const Schedule too_many{.ctas_per_sm = 2, .rows_per_thread = 16, .stages = 2};  // 2 x 128 KiB rings
    CHECK_THROWS_WITH_AS(make_plan(p, t, default_stride_class(p), too_many),
                         doctest::Contains("2 CTAs per SM with a 131328-byte ring (2 stages)"), UsageError);
    CHECK_THROWS_WITH_AS(make_plan(p, t, default_stride_class(p), Schedule{.stages = 5}), doctest::Contains("stages 5 must be 1..4"),
                         UsageError);
    const Schedule old_arch{.stages = 2};
    CHECK_THROWS_WITH_AS(make_plan(p, Target::parse("sm_80"), default_stride_class(p), old_arch),
                         doctest::Contains("stages 2 needs sm_90 or newer (bulk copies); the target is sm_80"), UsageError);
  }
}

// The tiled kernel at 8 rows per thread stores whole column chunks by 8 bytes (test_properties.cpp);
// a rows-per-thread it has no chunking for is refused by name.
TEST_CASE("tiled kernel: rows per thread 8 plans the tiled kernel for unaligned rows; bad values are refused") {
  const Pipeline d1 = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear());
  StrideClass unaligned = default_stride_class(d1);
  unaligned.aligned[0] = false;
  Schedule t{.rows_per_thread = 8};
  const Target sm90 = Target::parse("sm_90a");
  CHECK(make_plan(d1, sm90, unaligned, t).kind == KernelKind::tiled);
  t.rows_per_thread = 12;
  CHECK_THROWS_WITH_AS(make_plan(d1, sm90, unaligned, t), doctest::Contains("rows_per_thread 12 must be 8, 16 or 32"), UsageError);
}

// Tiles' staged scales: whole tiles store 4 neighbouring byte scales per thread (one 4-byte
// store, indices from compile-time extents), or a whole 128 x 4 atom per warp, the outputs'
// words on different threads; partial tiles, FP32 scales and grouped layouts keep the one-byte
// loop.
TEST_CASE("tile scales: whole tiles store 4-byte words, outputs on rotated threads") {
  const Target t = Target::parse("sm_90a");
  check_contains(variant_source("dim0+dim1", t),
                 {"if (whole && nsr == 128 && nsc == 4 && P.out_stride[1][1] == 1) {  // a whole tile: 4 scales per thread",
                  "for (int k = (int(threadIdx.x) + 128) % 256; k < 128; k += 256) {",
                  "} else\n    for (int k = threadIdx.x; k < nsr * nsc; k += blockDim.x) {"});
  // Blocked 128 x 4 scales of tiles that cover whole atoms: an atom (512 bytes) per warp, 16
  // bytes per lane; MN-major dim1 (tiles of 256 columns: two atoms, threads 0-63) gathers the 4
  // block rows of columns t, t + 32, t + 64, t + 96 of its atom.
  const Pipeline d1 = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4());
  const std::string d1_src = generate(d1, t, default_stride_class(d1)).source;
  check_contains(d1_src, {"if (whole && nsr == 4 && nsc == 256 && (reinterpret_cast<mx_u64>(P.out[1]) & 15u) == 0) {  // whole 128 x 4 atoms",
                          "for (int k = int(threadIdx.x); k < 64; k += 256) {",
                          "for (int e = 0; e < 16; ++e) w[e / 4] |= mx_u32(s0_info[(ir + e % 4) * 256 + ic + e / 4 * 32 + t] & 0xffu) << (8 * (e % 4));",
                          "*reinterpret_cast<uint4*>(static_cast<mx_u8*>(P.out[1]) + (mx_blocked_offset32<128, 4>(unsigned(gc), unsigned(gr), Cp)) + t * 16)"});
  CHECK(d1_src.find("// a whole tile: 4 scales per thread") == std::string::npos);  // misaligned: the byte loop
}

// The columns kernel's fast path computes one scale per lane: a reduce-scatter over the block's
// lanes (xors 8, 4 for the row-wise scale of dim0+dim1, whose warps have 4 lanes along the rows;
// 2, 1 for its column-wise one; 1 for dim1 at 16 rows per thread), then each row's or column's
// scale from its owner by one shuffle.
// The tail path keeps every lane's own reduction.
TEST_CASE("columns kernel: one scale per lane on the fast path") {
  const Target t = Target::parse("sm_90a");
  check_contains(variant_source("dim0+dim1", t),
                 {"const int lane = threadIdx.x & 31, rg = lane % 4, cl = lane / 4, warp = threadIdx.x >> 5;",
                  "// Scales 0: one per lane (reduce-scatter over the block's lanes, xors 8, 4).",
                  "// Scales 1: one per lane (reduce-scatter over the block's lanes, xors 2, 1).",
                  "const int tb0 = ((lane & 8) ? 4 : 0) + ((lane & 4) ? 2 : 0);",
                  "const mx_u32 w_ = __shfl_sync(0xffffffffu, own0[r % 2], (lane & ~12) | ((r % 8) >= 4 ? 8 : 0) | ((r % 4) >= 2 ? 4 : 0));",
                  "if ((cl % 4) == 0 && r0 + r < n_r && c0 < n_c) {",  // the tail path's row-wise scale: a block's first lane
                  "own1[i] = flag ? flag : mx_bits(mult);",
                  "// Scales 0: blocks of 32 along axis 1 (4 lanes), row by row."});  // the tail path
  const Pipeline d1 = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear());
  check_contains(generate(d1, t, default_stride_class(d1)).source, {"xors 1).", "mx_u32 own0[4];"});
}

// dim0+dim1's staged code lines (the one-tile form): in order, padded between lines; with blocked
// scales on sm_90+, whole tiles leave as one bulk copy per line (the writers fence for the async
// proxy before the barrier, the issuers wait for the reads before the CTA ends); otherwise, and
// before sm_90, the threads copy the lines out 16 or 8 bytes a lane. The pipelined form keeps
// its swizzled chunks.
TEST_CASE("dim0+dim1: padded staged lines, bulk copy-out with blocked scales on sm_90+") {
  const std::string pad = "(((L >> 3) & 3) * 32 + (L >> 5) * 96)";
  const std::string blocked = variant_source("dim0+dim1 blocked", Target::parse("sm_90a"));
  check_contains(blocked, {"mx_bulk_fence();  // the staged codes, for the bulk copies after the barrier\n  __syncthreads();",
                           "if (L >= 0 && L < 128) mx_bulk_store(static_cast<mx_u8*>(P.out[0]) + ((r0 + L) * P.out_stride[0][0] + c0 * P.out_stride[0][1]), &q0_tile[L * 128 + (((L >> 3) & 3) * 32 + (L >> 5) * 96)], 128);",
                           "const int L = int(threadIdx.x) - 128;",
                           "mx_bulk_store(static_cast<mx_u8*>(P.out[2]) + (r0 * P.out_stride[2][0] + (c0 + L) * P.out_stride[2][1]), &q2_tile[L * 128 + (((L >> 3) & 3) * 32 + (L >> 5) * 96)], 128);",
                           "mx_bulk_commit();", "mx_bulk_wait_read();  // the bulk copies have read the staged codes"});
  CHECK(blocked.find("*reinterpret_cast<uint4*>(d0)") == std::string::npos);  // 8-byte-aligned outputs: the uint2 copy remains
  CHECK(blocked.find("*reinterpret_cast<uint2*>(d0) = *reinterpret_cast<const uint2*>(&q0_tile[L * 128 + " + pad + " + j * 8]);") !=
        std::string::npos);
  // Without bulk copies (linear scales, or before sm_90) the lines leave 16 bytes a lane from the
  // same padded line (no bulk copy, 16-byte stores: test_properties.cpp).
  for (const std::string& src : {variant_source("dim0+dim1", Target::parse("sm_90a")), variant_source("dim0+dim1 blocked", Target::parse("sm_89"))})
    CHECK(src.find("*reinterpret_cast<uint4*>(d0) = *reinterpret_cast<const uint4*>(&q0_tile[L * 128 + " + pad + " + j * 16]);") != std::string::npos);
  for (const auto& [name, p] : variants()) {
    if (name != "dim0+dim1 blocked") continue;
    const Schedule ring{.ctas_per_sm = 2, .stages = 2};
    const ColumnsPlan piped = make_plan(p, Target::parse("sm_90a"), default_stride_class(p), ring).columns();
    CHECK(piped.codes_staged);
    CHECK(!piped.lines_padded);  // swizzled chunks
    CHECK(!piped.bulk_copy_out);
  }
}

TEST_CASE("columns and direct kernels: warps without a flagged block take a branch without flag tests") {
  const Target t = Target::parse("sm_90a");
  // Each scale's loop comes twice under a warp vote over its owners' words: the first branch
  // takes the multiplier as it travels (flag 0), the second tests for zero and NaN blocks.
  const std::string fused = variant_source("dim0+dim1", t);
  check_contains(fused, {"if (__all_sync(0xffffffffu, own0[0] > 2u && own0[1] > 2u)) {  // no flagged block in the warp",
                         "if (__all_sync(0xffffffffu, own1[0] > 2u && own1[1] > 2u)) {  // no flagged block in the warp",
                         "const mx_u32 flag0 = 0u;", "const mx_u32 flag1 = 0u;", "const mx_u32 flag0 = w_ < 3u ? w_ : 0u;",
                         "const mx_u32 flag1 = w_ < 3u ? w_ : 0u;",
                         // Staged codes: a per-thread base plus 128 bytes per line (the swizzle reads the first line).
                         "&q0_tile[(lane_r0 + r) * 128 + (((lane_r0 >> 3) & 3) * 32 + (lane_r0 >> 5) * 96) + ((lane_c0 >> 3) << 3)]",
                         "&q2_tile[(lane_c0 + c) * 128 + (((lane_c0 >> 3) & 3) * 32 + (lane_c0 >> 5) * 96) + ((lane_r0 >> 3) << 3)]"});
  CHECK(fused.find("r0 - t_r0 + r) >> 3") == std::string::npos);
  const Pipeline d1 = cast2d(0, e2m1, ScaleRule::floor, layout::col_major(), layout::linear());
  check_contains(generate(d1, t, default_stride_class(d1)).source,
                 {"if (__all_sync(0xffffffffu, own0[0] > 2u && own0[1] > 2u && own0[2] > 2u && own0[3] > 2u)) {"});
  // The direct kernel's split (phase 2 twice where the scale is reduce-scattered): the warp vote in
  // PTX, test_properties.cpp.
}

TEST_CASE("generated code declares only what it reads: uses and insert_used") {
  CHECK(uses("a = ix0 + 1;", "ix0"));
  CHECK(uses("ix0", "ix0"));
  CHECK_FALSE(uses("a = ix01 + mix0 + ix0_[u];", "ix0"));
  CHECK_FALSE(uses("ix0 = 1; b = 2;", "ix0", 4));  // only from the offset on
  std::string code = "{\n  y = full ? r : 0;\n}\n";
  insert_used(code, 2, {{"r", "  const int r = 0;\n"}, {"full", "  const bool full = true;\n"}, {"c", "  const int c = 0;\n"}});
  CHECK(code == "{\n  const int r = 0;\n  const bool full = true;\n  y = full ? r : 0;\n}\n");
  // A name in a comment is not a use.
  CHECK_FALSE(uses("a = 1;  // whole tiles\n", "whole"));
  CHECK(uses("// whole tiles\nif (whole) a = 1;\n", "whole"));
}

TEST_CASE("defer_decls: declarations kept where the finished kernel reads them, in place") {
  const Pipeline p = cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear());
  const Target t = Target::parse("sm_90a");
  const detail::StrideClass sc = default_stride_class(p);
  const detail::Plan plan = detail::make_plan(p, t, sc);
  Ctx c{p, t, sc, plan, collect_values(p), {}, 8};
  c.out = "{\n";
  defer_decls(c, {{"a", "  const int a = 1;\n"}, {"b", "  const int b = a;\n"}});
  c.out += "  int z = 0;\n";
  defer_decls(c, {{"d", "  const int d = 2;\n"}, {"e", "  const int e = b;\n"}});
  c.out += "  z = e;  // d\n";
  c.out.insert(2, "  int first = 0;\n");  // inserted before a marker: the marker still holds its place
  c.out += "}\n";
  finish_decls(c);
  // e reads b, b reads a; d is only in a comment.
  CHECK(
      c.out ==
      "{\n  int first = 0;\n  const int a = 1;\n  const int b = a;\n  int z = 0;\n  const int e = b;\n  z = e;  // d\n}\n");
  CHECK(c.deferred.empty());
}
