// Structural properties of generated kernels, read from what NVRTC made of them (PTX and ptxas's
// resource report) rather than pinned as source text: no register spills, 16-byte vector loads
// and stores where the kernel's design says so, no CTA barrier in the direct kernel, bulk copies
// where the plan chose them. The exact text is the goldens' business (test_golden.cpp).
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "codegen/emit.hpp"
#include "codegen/emit_common.hpp"
#include "dsl/dsl.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

struct Built {
  std::string ptx, log;
  Plan plan;
  int spill_stores = -1;
};

// PTX and the ptxas report of `spec` on `arch` (one NVRTC compile), for stride class `sc`
// (default_stride_class when empty).
Built build(const Pipeline& p, const char* arch = "sm_90a", const Schedule& s = {},
            const std::optional<StrideClass>& sc = {}) {
  CompileOptions o;
  o.want_ptx = true;
  o.resource_usage = true;
  o.schedule = s;
  const CompiledKernel k = compile(p, Target::parse(arch), sc ? *sc : default_stride_class(p), o);
  Built b{k.ptx, k.log, k.plan};
  const size_t at = k.log.find("bytes spill stores");
  REQUIRE_MESSAGE(at != std::string::npos, "no ptxas report in: " << k.log);
  size_t from = k.log.rfind(',', at);
  from = from == std::string::npos ? 0 : from + 1;
  b.spill_stores = std::stoi(k.log.substr(from, at - from));
  return b;
}

Built build(const std::string& spec, const char* arch = "sm_90a", const Schedule& s = {},
            const std::optional<StrideClass>& sc = {}) {
  return build(parse_pipeline(spec), arch, s, sc);
}

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

int count(const std::string& text, const char* what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("direct kernel: 16-byte loads and stores, no CTA barrier, no spills") {
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    CAPTURE(arch);
    const Built b = build("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4", arch);
    CHECK(b.plan.kind == KernelKind::direct);
    CHECK(b.spill_stores == 0);
    CHECK(has(b.ptx, "ld.global.nc.v4.u32"));  // mx_ld16: 16 bytes of input per load
    CHECK(has(b.ptx, "st.global.v4.u32"));     // whole 16-byte lines of 128x4 scale atoms
    CHECK(has(b.ptx, "st.global.v2"));         // 8 codes per 8-byte store
    CHECK(!has(b.ptx, "bar.sync"));
    CHECK(!has(b.ptx, "barrier.sync"));
  }
  // Software-encoded MXFP4 on sm_90a: its codes leave 4 bytes a lane; still no barrier or spill.
  const Built f4 = build("bf16[2] -> mxfp4.e2m1 floor blocks(1,32)");
  CHECK(f4.spill_stores == 0);
  CHECK(!has(f4.ptx, "bar.sync"));
  CHECK(has(f4.ptx, "ld.global.nc.v4.u32"));
}

TEST_CASE("direct kernel: warps without a flagged block take their own phase 2 where scales are reduce-scattered") {
  // The software encoders (FP4, FP6, INT8 on sm_90a) reduce-scatter the scales, and a warp vote over
  // the owners' words picks a phase 2 without flag tests; FP8's hardware cvt needs no split.
  for (const char* f : {"mxfp4.e2m1", "mxfp6.e2m3", "mxint8", "mxfp8.e4m3"}) {
    CAPTURE(f);
    const Built b = build(std::string("bf16[2] -> ") + f + " floor blocks(1,32)");
    CHECK(b.plan.kind == KernelKind::direct);
    CHECK(has(b.ptx, "vote.sync.all.pred") == (std::string(f) != "mxfp8.e4m3"));
    CHECK(b.spill_stores == 0);
  }
}

TEST_CASE("columns kernel: the tail path keeps its loops rolled; the fast path's registers stay, no spills") {
  std::string code = "a\n#pragma unroll\nfor\n#pragma unroll 4\nb\n#pragma unroll\nc\n#pragma unroll\n";
  keep_rolled(code, code.find('b'));
  CHECK(code == "a\n#pragma unroll\nfor\n#pragma unroll 4\nb\n#pragma unroll 1\nc\n#pragma unroll 1\n");
  for (const char* spec : {"bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major",
                           "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) ; mxfp8.e4m3 rceil blocks(0,32) q:col_major"}) {
    CAPTURE(spec);
    const Pipeline p = parse_pipeline(spec);
    const std::string src = generate(p, Target::parse("sm_90a"), default_stride_class(p)).source;
    // The body's loops after the fast path's `} else {` are rolled, none before it.
    const size_t tail = src.find("\n  } else {\n");
    REQUIRE(tail != std::string::npos);
    CHECK(src.find("#pragma unroll 1\n") > tail);
    CHECK(src.find("#pragma unroll 1\n", tail) != std::string::npos);
    const Built b = build(spec);
    CHECK(b.plan.kind == KernelKind::columns);
    CHECK(b.spill_stores == 0);
  }
}

TEST_CASE("jagged kernel: rows loops roll on the last column tile and behind the 8-byte path; hot loops stay, no spills") {
  // One row-major code output: pass 2's 8-byte path takes whole, aligned tiles, so its general
  // loop runs only for the rest (as pass 1's loop for the last column tile does): both roll.
  for (const char* spec : {"bf16[2] -> fp8.e4m3 groups(0,offs)", "f32[2] -> fp8.e5m2 groups(0,offs)",
                           "bf16[2] -> fp8.e4m3 blocks(0,whole)"}) {
    CAPTURE(spec);
    const Pipeline p = parse_pipeline(spec);
    const GeneratedKernel k = generate(p, Target::parse("sm_90a"), default_stride_class(p));
    CHECK((k.plan.kind == KernelKind::rows || k.plan.jagged().vector));  // rows: its across form, this kernel
    const std::string& src = k.source;
    const size_t edge = src.find("} else {  // the last column tile");
    const size_t general = src.find("  for (mx_i64 r = r2; r < row_e;");
    REQUIRE(edge != std::string::npos);
    REQUIRE(general != std::string::npos);
    CHECK(src.find("#pragma unroll 1\n") > edge);            // pass 1's hot loops unrolled,
    CHECK(src.find("#pragma unroll 1\n", edge) < general);   // its last column tile's rolled
    CHECK(src.find("#pragma unroll 1\n", general) != std::string::npos);
    CHECK(build(spec).spill_stores == 0);
  }
  // Two code outputs: no 8-byte path, so the general loop is the hot one and stays unrolled.
  auto x = input("x", DType::bf16, rank(2));
  const Scale s = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3);
  const Pipeline two = pipeline({output("q", cast(e4m3, x / s)), output("r", cast(e4m3, x / s), layout::row_major()), output("s", s)});
  const GeneratedKernel k = generate(two, Target::parse("sm_90a"), default_stride_class(two));
  REQUIRE(k.plan.jagged().vector);
  const size_t general = k.source.find("  for (mx_i64 r = r2; r < row_e;");
  REQUIRE(general != std::string::npos);
  // (Up to the cluster kernel where the module holds two: JaggedPlan::plain.)
  CHECK(k.source.find("#pragma unroll 1\n", general) >= k.source.find("_cluster(const MxParams P) {"));
}

TEST_CASE("columns kernel: 16-byte loads of 256-byte L2 blocks, 16-byte column stores, no spills") {
  const Built d1 = build("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4");
  CHECK(d1.plan.kind == KernelKind::columns);
  CHECK(d1.spill_stores == 0);
  CHECK(has(d1.ptx, "ld.global.nc.L2::256B.v4.u32"));
  CHECK(has(d1.ptx, "st.global.v4.u32"));  // a column's 16 codes, and whole scale atoms
  // dim0+dim1 with blocked scales on sm_90a: the staged lines leave as bulk copies (the plan's
  // bulk_copy_out), no spills (the tail path's 16-20 bytes went with its rolled loops).
  const Built f = build("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4 ; mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4");
  CHECK(f.plan.columns().bulk_copy_out);
  CHECK(has(f.ptx, "cp.async.bulk.global.shared::cta.bulk_group"));
  CHECK(has(f.ptx, "bar.red.and.pred"));  // one path per CTA: whole tiles or the tails (__syncthreads_and)
  CHECK(has(f.ptx, "max.NaN.bf16x2"));    // two bf16 maxima per instruction, NaN kept
  CHECK(f.spill_stores == 0);
  // The pipelined form: bulk copies into the ring, mbarrier waits, no spills.
  const Built r = build("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major", "sm_90a", Schedule{.stages = 2});
  CHECK(has(r.ptx, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"));
  CHECK(has(r.ptx, "mbarrier.try_wait.parity"));
  CHECK(r.spill_stores == 0);
}

TEST_CASE("columns kernel, dim0+dim1 without bulk copies: 256-byte L2 loads, a barrier, 16-byte line copy-out") {
  // Linear scales on sm_90a, blocked ones before sm_90: the staged code lines leave 16 bytes a
  // lane after the tile's barrier, no bulk copy or async-proxy fence.
  const std::string linear = "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) ; mxfp8.e4m3 rceil blocks(0,32) q:col_major";
  const std::string blocked =
      "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4 ; mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4";
  for (const auto& [spec_text, arch_name] : {std::pair{linear, "sm_90a"}, std::pair{blocked, "sm_89"}}) {
    const std::string& spec = spec_text;  // CAPTURE takes no structured binding before clang 16
    const char* arch = arch_name;
    CAPTURE(spec);
    CAPTURE(arch);
    const Built b = build(spec, arch);
    CHECK(b.plan.kind == KernelKind::columns);
    CHECK(!b.plan.columns().bulk_copy_out);
    CHECK(has(b.ptx, "ld.global.nc.L2::256B.v4.u32"));
    CHECK((has(b.ptx, "bar.sync") || has(b.ptx, "barrier.sync")));
    CHECK(has(b.ptx, "st.global.v4.u32"));
    CHECK(!has(b.ptx, "cp.async.bulk"));
    CHECK(!has(b.ptx, "fence.proxy.async"));
  }
}

// Regression: a schedule's 8 rows per thread (meant for the columns kernel) also reaches the tiled
// kernel, which runs the cast where the input's rows are not 16-byte aligned; its whole column
// chunks of 8 codes had no store at all for aligned chunks (the 16-byte loop ran zero times).
TEST_CASE("tiled kernel, 8 rows per thread: whole column chunks of codes leave by 8-byte stores") {
  const std::string d1 = "bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major";
  StrideClass unaligned = default_stride_class(parse_pipeline(d1));
  unaligned.aligned[0] = false;
  const Built t = build(d1, "sm_90a", Schedule{.rows_per_thread = 8}, unaligned);
  CHECK(t.plan.kind == KernelKind::tiled);
  CHECK(has(t.ptx, "st.global.v2.u32"));
  CHECK(t.spill_stores == 0);
}

// Rows that are not 16-byte aligned (e.g. 5118 bf16 columns) take the scalar jagged kernel, whose
// element loads move 64 bytes a warp: each pass loads rows_in_flight rows before using one.
TEST_CASE("jagged kernel, scalar form: rows_in_flight loads per pass, no spills; a bad count is refused") {
  const std::string spec = "f32[2] -> fp8.e4m3 groups(0,offs)";
  StrideClass unaligned = default_stride_class(parse_pipeline(spec));
  unaligned.aligned[0] = false;
  auto loads = [](const std::string& ptx) {
    size_t n = 0;
    for (size_t at = ptx.find("ld.global."); at != std::string::npos; at = ptx.find("ld.global.", at + 1))
      n += ptx.compare(at, 13, "ld.global.f32") == 0 || ptx.compare(at, 13, "ld.global.u32") == 0 || ptx.compare(at, 13, "ld.global.b32") == 0;
    return n;
  };
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    CAPTURE(arch);
    const Built d = build(spec, arch, {}, unaligned);
    REQUIRE_FALSE(d.plan.jagged().vector);
    CHECK(d.plan.jagged().rows_in_flight == 16);
    CHECK(d.spill_stores == 0);
    CHECK(loads(d.ptx) == 2 * 16);  // one unrolled chunk of R loads a pass
    const Built w = build(spec, arch, Schedule{.rows_in_flight = 8}, unaligned);
    CHECK(w.plan.jagged().rows_in_flight == 8);
    CHECK(w.spill_stores == 0);
    CHECK(loads(w.ptx) == 2 * 8);
  }
  CHECK_THROWS_WITH_AS(make_plan(parse_pipeline(spec), Target::parse("sm_90a"), unaligned, Schedule{.rows_in_flight = 17}),
                       doctest::Contains("rows_in_flight 17 of the jagged kernel must be 1..16"), UsageError);
  CHECK_THROWS_WITH_AS(make_plan(parse_pipeline(spec), Target::parse("sm_90a"), unaligned, Schedule{.tile_cols = 64}),
                       doctest::Contains("tile_cols does not apply to the jagged (scalar) kernel"), UsageError);
}

TEST_CASE("tiled and jagged kernels: shared-memory tiles behind barriers, asynchronous row copies") {
  const Built t = build("bf16[2] -> mxfp8.e4m3 floor blocks(0,1,32x32)");
  CHECK(t.plan.kind == KernelKind::tiled);
  CHECK((has(t.ptx, "bar.sync") || has(t.ptx, "barrier.sync")));
  CHECK(has(t.ptx, "ld.global.nc.v4.u32"));
  CHECK(t.spill_stores == 0);
  const Pipeline jg = parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs)");
  CompileOptions o;
  o.want_ptx = true;
  const CompiledKernel j = compile(jg, Target::parse("sm_90a"), StrideClass{{1, 0}, {true, false}}, o);
  CHECK(j.plan.jagged().vector);
  CHECK(has(j.ptx, "cp.async.cg.shared.global"));  // the row cache
  CHECK(has(j.ptx, "cp.async.wait_group 0"));
}

TEST_CASE("column-major runs: the jagged kernel's and the rows kernel's across form's codes leave as 8-byte column runs") {
  // Per-group colwise with column-major codes: byte transposes (prmt) in registers, one 8-byte
  // store per column run, the row cache filled asynchronously, no spills.
  const Built j = build("bf16[2] -> fp8.e4m3 groups(0,offs) q:col_major");
  CHECK(j.plan.jagged().vector);
  CHECK(j.plan.jagged().run_rows == 8);
  CHECK(has(j.ptx, "prmt.b32"));
  CHECK(has(j.ptx, "st.global.v2.u32"));
  CHECK(has(j.ptx, "cp.async.cg.shared.global"));
  CHECK(j.spill_stores == 0);
  // Per-group rowwise (groups along the unit-stride axis): a warp per column, its maximum by
  // shuffles, no shared memory, no barrier.
  const Built l = build("bf16[2] -> fp8.e4m3 groups(1,offs)");
  CHECK(l.plan.jagged().lanes);
  CHECK(has(l.ptx, "shfl.sync.bfly.b32"));
  CHECK(!has(l.ptx, "bar.sync"));
  CHECK(!has(l.ptx, "barrier.sync"));
  CHECK(l.spill_stores == 0);
  // Whole columns of a row-major input: the across form on columns, a cluster of up to 16 CTAs
  // whose column maxima meet through distributed shared memory; codes of 8 lines per 8-byte store.
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    CAPTURE(arch);
    const Built c = build("bf16[2] -> fp8.e4m3 blocks(0,whole)", arch);
    REQUIRE(c.plan.rows().columns);
    CHECK(c.plan.rows().columns->cluster == 16);
    // The partial maxima are sent (st.async) and counted on each receiver's transaction barrier;
    // the one cluster barrier (before any send: every barrier initialised) is relaxed, as a
    // release arrive waits for the thread's outstanding memory operations (MEMBAR.ALL.GPU).
    CHECK(has(c.ptx, "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32"));
    CHECK(has(c.ptx, "mbarrier.try_wait.parity.acquire.cluster"));
    CHECK(has(c.ptx, "barrier.cluster.arrive.relaxed"));
    CHECK(!has(c.ptx, "barrier.cluster.arrive.release"));
    CHECK(!has(c.ptx, "ld.shared::cluster"));
    CHECK(has(c.ptx, "st.global.v2.u32"));
    CHECK(c.spill_stores == 0);
  }
}

TEST_CASE("bracketed division: the bracket's reciprocal is one rcp.approx.ftz a chunk, no subnormal rescale") {
  // vLLM's per_token_group_quant: x / RN(max(amax, 1e-10) / 448) per element, bracketed
  // (mx_div_bracket). Where `miss` is 0, d and 1 / d are normal, so the non-ftz rcp's rescaling
  // (two compares, two selects, two multiplies a chunk) changes nothing.
  const Built b = build(
      "bf16[2] -> fp8.e4m3 scale(stored=div(fmax(amax,1e-10),448), factor=stored, apply=divide, "
      "clamp=ignore_nan(-448,448), amax_nan=ignore) blocks(1,128)");
  CHECK(b.plan.kind == KernelKind::direct);
  CHECK(b.spill_stores == 0);
  int ftz = 0;
  for (size_t at = b.ptx.find("rcp.approx.ftz.f32"); at != std::string::npos;
       at = b.ptx.find("rcp.approx.ftz.f32", at + 1))
    ++ftz;
  CHECK(ftz == b.plan.direct().chunks_per_thread);
  CHECK(!has(b.ptx, "rcp.approx.f32"));
  CHECK(has(b.ptx, "div.rn.f32"));  // the chunks that miss divide
}

TEST_CASE("direct kernel, 2-D blocks with column blocks: each column's scale once a CTA, by one thread; no spills") {
  // Transformer Engine's 1D quantizer in both usages (1x128 and 128x1 blocks of one 128x128 tile):
  // a lane's row scale and one column's scale a thread, each two divisions (448 / amax and the
  // stored reciprocal); every thread computing its 8 columns' scales made 16 of them.
  auto x = input("x", DType::bf16, rank(2));
  const ScaleDef d = recipes::transformer_engine(e4m3, true);
  auto sr = scale(amax(blocks(x, 1, 128)), e4m3, d);
  auto sc = scale(amax(blocks(x, 0, 128)), e4m3, d);
  const Pipeline dual = pipeline({output("q", cast(e4m3, x / sr)), output("s", sr),
                                  output("q_t", cast(e4m3, x / sc), layout::col_major()), output("s_t", sc)});
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const std::string target = arch;
    CAPTURE(target);
    const Built te = build(dual, arch);
    REQUIRE(te.plan.kind == KernelKind::direct);
    CHECK(te.plan.direct().block_rows == 128);
    CHECK(count(te.ptx, "div.rn.f32") == 4);
    CHECK(count(te.ptx, "bar.sync") == 3);  // the column maxima, the column scales, the transposed tile
    CHECK(te.spill_stores == 0);
  }
}
