// The schedule as a value: its text form round-trips, bad text names the field at fault, the
// positional form of generator 23 is refused by name, and make_plan refuses a field that does
// not apply to the kernel that runs (exact) or drops it (lenient: another stride class of the
// same Kernel); every kind's defaults and rules come from separate functions.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "runtime/bindings.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE("schedule text: named fields round-trip in any order; defaults print as tune()") {
  const Schedule s{.kernel = KernelKind::columns, .ctas_per_sm = 4, .rows_per_thread = 8, .stages = 2};
  CHECK(s.str() == "tune(kernel=columns, ctas_per_sm=4, rows_per_thread=8, stages=2)");
  CHECK(Schedule::parse(s.str()) == s);
  CHECK(Schedule::parse(" tune( stages=2,rows_per_thread = 8 , kernel=columns, ctas_per_sm=4 ) ") == s);
  CHECK(Schedule{}.str() == "tune()");
  CHECK(Schedule::parse("tune()").is_default());
  const Schedule t{.kernel = KernelKind::tiled, .tile_rows = 32, .tile_cols = 128, .hoist_loads = 0};
  CHECK(t.str() == "tune(kernel=tiled, tile_rows=32, tile_cols=128, hoist_loads=0)");
  CHECK(Schedule::parse(t.str()) == t);
  const Schedule j{.tile_cols = 64, .threads = 128, .rows_in_flight = 4, .cluster = 8};
  CHECK(Schedule::parse(j.str()) == j);
  CHECK(Schedule::parse("tune(chunks_per_thread=2)").chunks_per_thread == 2);
}

TEST_CASE("schedule text: bad text names the field or value at fault") {
  const std::pair<const char*, const char*> bad[] = {
      {"tune(0,64,0,6,-1,0,4,0,8,3)", "positional form of generator 23"},
      {"tune(1,2,3)", "positional form"},
      {"tune(stages=2", "not of the form tune(...)"},
      {"nonsense", "not of the form tune(...)"},
      {"tune(stages)", "'stages' is not field=value"},
      {"tune(unroll=4)", "unknown field 'unroll'"},
      {"tune(stages=2, stages=3)", "field 'stages' given twice"},
      {"tune(stages=two)", "stages=two is not a non-negative integer"},
      {"tune(stages=-1)", "stages=-1 is not a non-negative integer"},
      {"tune(hoist_loads=2)", "hoist_loads=2 is not 0 or 1"},
      {"tune(kernel=fast)", "kernel 'fast' is none of automatic, direct, tiled, columns, jagged"},
  };
  for (const auto& [bad_text, why] : bad) {
    const auto& text = bad_text;  // CAPTURE takes no structured binding before clang 16
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(Schedule::parse(text), doctest::Contains(why), UsageError);
  }
}

TEST_CASE("make_plan: a field the kernel that runs does not take is refused by name; lenient plans drop it") {
  const Target t = Target::parse("sm_90a");
  const Pipeline d0 = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)");
  const Pipeline d1 = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major");
  const StrideClass sc = default_stride_class(d0);
  CHECK(make_plan(d0, t, sc).kind == KernelKind::direct);
  CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.stages = 2}),
                       doctest::Contains("stages does not apply to the direct kernel, which runs this cast"), UsageError);
  CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.tile_rows = 32}), doctest::Contains("kernel=tiled takes every tile field"),
                       UsageError);
  CHECK(make_plan(d0, t, sc, Schedule{.stages = 2}, Fit::lenient).schedule.stages == 2);  // asked, not applied
  CHECK(make_plan(d0, t, sc, Schedule{.stages = 2}, Fit::lenient).kind == KernelKind::direct);
  // kernel= picks the kind; one that cannot run the cast is refused (exact) or falls back (lenient).
  const Plan tiled = make_plan(d0, t, sc, Schedule{.kernel = KernelKind::tiled, .tile_rows = 32});
  CHECK(tiled.kind == KernelKind::tiled);
  CHECK(tiled.tiled().tile_rows == 32);
  CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.kernel = KernelKind::columns}),
                       doctest::Contains("the columns kernel does not apply to this cast"), UsageError);
  CHECK(make_plan(d0, t, sc, Schedule{.kernel = KernelKind::columns}, Fit::lenient).kind == KernelKind::direct);
  CHECK_THROWS_WITH_AS(make_plan(d1, t, default_stride_class(d1), Schedule{.kernel = KernelKind::direct}),
                       doctest::Contains("the direct kernel does not apply to this cast"), UsageError);
  CHECK_THROWS_AS(make_plan(d1, t, default_stride_class(d1), Schedule{.kernel = KernelKind::jagged}), UsageError);
  // The direct kernel's threads: a multiple of 32 in 32..1024; ctas_per_sm at most 32.
  for (int th : {16, 48, 2048}) {
    const std::string want = fmt::format("threads {} of the direct kernel must be a multiple of 32", th);
    CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.threads = th}), doctest::Contains(want.c_str()), UsageError);
  }
  CHECK(make_plan(d0, t, sc, Schedule{.threads = 64}).threads == 64);
  CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.ctas_per_sm = 33}),
                       doctest::Contains("ctas_per_sm 33 of the direct kernel"), UsageError);
  // The tiled kernel's too (its maxima reduce by warp shuffles), and its CTAs fit an SM.
  for (int th : {16, 48, 2048}) {
    const std::string want = fmt::format("threads {} of the tiled kernel must be a multiple of 32 in 32..1024", th);
    CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.kernel = KernelKind::tiled, .threads = th}),
                         doctest::Contains(want.c_str()), UsageError);
  }
  CHECK(make_plan(d0, t, sc, Schedule{.kernel = KernelKind::tiled, .threads = 512, .ctas_per_sm = 4}).threads == 512);
  CHECK_THROWS_WITH_AS(
      make_plan(d0, t, sc, Schedule{.kernel = KernelKind::tiled, .threads = 512, .ctas_per_sm = 5}),
      doctest::Contains("ctas_per_sm 5 of the tiled kernel must be at most 32, and at most 2048 threads an SM"),
      UsageError);
  CHECK_THROWS_WITH_AS(make_plan(d0, t, sc, Schedule{.kernel = KernelKind::tiled, .threads = 32, .ctas_per_sm = 33}),
                       doctest::Contains("ctas_per_sm 33 of the tiled kernel"), UsageError);
  // CTAs an SM come from the target: 2048 threads on sm_90a, 1536 on sm_89 and sm_120a, whose
  // SMs also hold fewer CTAs (24 on sm_89); the default schedules fit every target.
  CHECK(make_plan(d0, t, sc, Schedule{.ctas_per_sm = 8}).ctas_per_sm == 8);  // 8 x 256 threads
  CHECK_THROWS_WITH_AS(
      make_plan(d0, t, sc, Schedule{.ctas_per_sm = 9}),
      doctest::Contains("ctas_per_sm 9 of the direct kernel must be at most 32, and at most 2048 threads an "
                        "SM (256 threads a CTA on sm_90a)"),
      UsageError);
  const Target ada = Target::parse("sm_89"), rtx = Target::parse("sm_120a");
  CHECK((ada.max_threads_per_sm() == 1536 && ada.max_ctas_per_sm() == 24 && rtx.max_threads_per_sm() == 1536));
  CHECK((t.max_threads_per_sm() == 2048 && Target::parse("sm_100a").max_threads_per_sm() == 2048));
  CHECK(make_plan(d0, ada, sc, Schedule{.ctas_per_sm = 6}).ctas_per_sm == 6);
  CHECK_THROWS_WITH_AS(make_plan(d0, ada, sc, Schedule{.ctas_per_sm = 8}),
                       doctest::Contains("at most 24, and at most 1536 threads an SM (256 threads a CTA on sm_89)"),
                       UsageError);
  CHECK_THROWS_WITH_AS(make_plan(d0, ada, sc, Schedule{.threads = 32, .ctas_per_sm = 25}),
                       doctest::Contains("ctas_per_sm 25 of the direct kernel must be at most 24"), UsageError);
  CHECK_THROWS_WITH_AS(
      make_plan(d0, rtx, sc, Schedule{.kernel = KernelKind::tiled, .threads = 512, .ctas_per_sm = 4}),
      doctest::Contains("ctas_per_sm 4 of the tiled kernel must be at most 32, and at most 1536 threads"), UsageError);
  for (const Target& small : {ada, rtx}) CHECK(make_plan(d0, small, sc).ctas_per_sm == 8);  // a register cap, not asked
  // The columns kernel takes rows_per_thread, stages and ctas_per_sm, not threads.
  CHECK(make_plan(d1, t, default_stride_class(d1), Schedule{.rows_per_thread = 8, .stages = 2}).columns().stages == 2);
  CHECK_THROWS_WITH_AS(make_plan(d1, t, default_stride_class(d1), Schedule{.threads = 512}),
                       doctest::Contains("threads does not apply to the columns kernel"), UsageError);
  // An unaligned dim1 input runs the tiled kernel: the columns-only stages drop out when lenient,
  // rows_per_thread applies to both.
  StrideClass unaligned = default_stride_class(d1);
  unaligned.aligned[0] = false;
  const Plan l = make_plan(d1, t, unaligned, Schedule{.rows_per_thread = 8, .stages = 2}, Fit::lenient);
  CHECK(l.kind == KernelKind::tiled);
  CHECK(l.tiled().rows_per_store == 8);
}

TEST_CASE("plan limits come from the target: shared memory per SM and per CTA") {
  CHECK(Target::parse("sm_90a").smem_per_sm() == 233472);
  CHECK(Target::parse("sm_100a").smem_per_cta() == 227 * 1024);
  CHECK(Target::parse("sm_89").smem_per_sm() == 100 * 1024);
  CHECK(Target::parse("sm_80").smem_per_sm() == 164 * 1024);
  // The jagged kernel's row cache fills what the SM leaves: less on sm_89 than on sm_90a (884 rows
  // there for one kernel a group; the default's cluster kernel keeps 5 rows' worth for its maxima).
  const Pipeline jg = parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs)");
  const StrideClass sc{{1, 0}, {true, false}};
  const Plan h = make_plan(jg, Target::parse("sm_90a"), sc, Schedule{.cluster = 1}),
             a = make_plan(jg, Target::parse("sm_89"), sc);
  CHECK(h.jagged().cached_rows == 884);
  CHECK(make_plan(jg, Target::parse("sm_90a"), sc).jagged().cached_rows == 879);
  CHECK(a.jagged().cached_rows < h.jagged().cached_rows);
  CHECK(2 * (a.smem_bytes + 1024) <= 100 * 1024);
}

TEST_CASE("the plan owns the launch: grid, tile counts, parameter layout, pre-pass") {
  const Target t = Target::parse("sm_90a");
  const Pipeline d0 = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4");
  const Plan p = make_plan(d0, t, default_stride_class(d0));
  // Direct: 4 lanes per 32-block, block columns padded to 4, rows to 128, 4 rows per thread.
  const Launch l = p.launch({300, 1000}, 0);
  CHECK(l.tiles_c == 32 * 4);  // 1000 columns: 32 blocks (a multiple of 4 already), 4 lanes each
  CHECK(l.tiles_r == 384);
  CHECK(l.grid[0] == unsigned((l.tiles_c + 255) / 256));
  CHECK(l.grid[1] == 96);
  CHECK_THROWS_WITH_AS(p.launch({3, int64_t(1) << 31}, 0), doctest::Contains("exceeds 2^31 - 1"), UsageError);
  CHECK(p.params.words() == 1 + 2 + 2 + 2 + 4 + 4 + 3);
  CHECK(!p.prepass);
  // NVFP4: the tensor amax is a planned pre-pass over the cast's input, into 4 workspace bytes.
  const Pipeline nv = parse_pipeline("bf16[2] -> nvfp4 te");
  const Plan n = make_plan(nv, t, default_stride_class(nv));
  REQUIRE(n.prepass);
  CHECK(n.prepass->workspace_bytes == 4);
  CHECK(n.prepass->inputs == std::vector<int>{0});
  CHECK(n.prepass->pipeline.outputs().at(0).kind == OutputKind::amax);
  // The columns kernel's pipelined form is persistent; a jagged launch has a CTA row per group + 1.
  const Pipeline d1 = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major");
  CHECK(make_plan(d1, t, default_stride_class(d1), Schedule{.stages = 2}).launch({1024, 1024}, 0).persistent);
  const Pipeline jg = parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs)");
  const Launch lj = make_plan(jg, t, StrideClass{{1, 0}, {true, false}}).launch({1000, 640}, 7);
  CHECK((lj.grid[0] == 10 && lj.grid[1] == 8 && lj.tiles_r == 7));
}

TEST_CASE("contiguous_stride_class: rows of whole 16-byte vectors are aligned, as a launch of contiguous tensors decides") {
  const Pipeline p = parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs)");
  auto aligned = [&](std::vector<int64_t> shape) -> bool { return contiguous_stride_class(p, shape).aligned[0]; };
  CHECK(aligned({16640, 5120}));
  CHECK_FALSE(aligned({16640, 5118}));
  CHECK(aligned({1, 5118}));  // one row: its stride is never used
  CHECK(contiguous_stride_class(p, {16640, 5118}).str() == "sc(1,0)");
  CHECK(contiguous_stride_class(p, {16640, 5120}) == default_stride_class(p));
  const Pipeline p3 = parse_pipeline("f32[3] -> mxfp8.e4m3 rceil blocks(2,32)");
  CHECK_FALSE(contiguous_stride_class(p3, {4, 3, 6}).aligned[0]);  // 24-byte rows
  CHECK_FALSE(contiguous_stride_class(p3, {4, 1, 6}).aligned[0]);   // one row a batch, batches 24 bytes apart
  CHECK(contiguous_stride_class(p3, {4, 1, 8}).aligned[0]);         // 32 bytes apart
  CHECK(contiguous_stride_class(p3, {1, 1, 6}).aligned[0]);         // a single row
}

TEST_CASE("contiguous_stride_class: the class a launch of contiguous tensors derives, shape by shape") {
  // check_bindings on 16-byte aligned row-major host tensors, trailing axes of extent 1 included.
  const Pipeline p = parse_pipeline("f32[3] -> mxfp8.e4m3 rceil blocks(2,32)");
  const std::vector<std::vector<int64_t>> shapes = {{4, 3, 6}, {4, 1, 6}, {4, 1, 8}, {1, 1, 6}, {5, 7, 1}, {3, 1, 1}, {2, 64, 32}};
  for (const std::vector<int64_t>& shape : shapes) {
    CAPTURE(shape);
    std::vector<float> x(size_t(shape[0] * shape[1] * shape[2]) + 4);
    float* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(x.data()) + 15) & ~uintptr_t(15));
    const TensorView in = TensorView::contiguous(base, DType::f32, shape);
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<TensorView> outs;
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      const OutputGeometry g = output_geometry(p, int(o), shape);
      bufs.emplace_back(size_t(g.storage_bytes) + 16);
      outs.push_back(TensorView::strided(bufs.back().data(), p.outputs()[o].dtype, g.view_shape, g.view_strides));
    }
    const Binding b = check_bindings(p, std::span<const TensorView>(&in, 1), outs, DeviceKind::cpu);
    const StrideClass sc = contiguous_stride_class(p, shape);
    CHECK(sc.unit_axis[0] == b.unit_axis[0]);
    CHECK(sc.aligned[0] == b.aligned[0]);
  }
}
