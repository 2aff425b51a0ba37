// The rows kernel (whole-axis blocks: rowwise, colwise, 3-D per-(e, n) columns): what the planner
// picks and refuses, the warps per line, and every variant compiling with NVRTC for sm_90a and
// sm_100a (no GPU needed; tests/gpu/test_gpu_rows.cpp runs them against the reference).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen/emit.hpp"
#include "codegen/plan.hpp"
#include "runtime/tuner.hpp"
#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

/// FP8 codes and FP32 scales of `x` blocked whole along `axis` (torchao's Float8 rowwise recipe).
Pipeline rowwise(DType dt, int r, int axis, F32ScaleOptions o = {}, Layout q_layout = layout::row_major()) {
  auto x = input("x", dt, rank(r));
  auto s = f32_scale(amax(blocks(x, axis, kWholeAxis)), e4m3, o);
  return pipeline({output("q", cast(e4m3, x / s), q_layout), output("s", s)});
}

StrideClass unit_along(int axis, bool aligned = true) { return StrideClass{{axis}, {aligned}}; }

std::string make_generated_source(const Pipeline& p, const Target& t, const StrideClass& sc) { return generate(p, t, sc).source; }

std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("rows kernel: the planner runs whole-axis blocks on it, one line per scale") {
  const Target t = Target::parse("sm_90a");
  const Pipeline p = rowwise(DType::bf16, 2, 1);
  const Plan plan = make_plan(p, t, unit_along(1));
  CHECK(plan.kind == KernelKind::rows);
  CHECK(plan.ax_c == 1);
  CHECK(plan.batch_axes == std::vector<int>{0});
  CHECK(plan.str().find("rows: chunks_per_thread=8") != std::string::npos);
  // Lines of 5120: 4 warps (2 lines per 256-thread CTA, 5 chunks a thread); of 300: one warp.
  const Launch l = plan.launch({16384, 5120}, 0);
  CHECK(l.tiles_r == 16384);
  CHECK(l.tiles_c == 4);
  CHECK(l.grid[0] == 8192u);
  const Launch s = plan.launch({1000, 300}, 0);
  CHECK(s.tiles_c == 1);
  CHECK(s.grid[0] == 125u);  // 8 lines per CTA
  // A 3-D (E, K, N) tensor with K whole: lines are the (e, n) pairs.
  const Plan p3 = make_plan(rowwise(DType::bf16, 3, 1), t, unit_along(2));
  CHECK(p3.launch({4, 5120, 96}, 0).tiles_r == 4);  // the E axis; the (e, n) lines go 32 to a tile
  CHECK(p3.rows().strided_codes == std::vector<bool>{true, false});
  CHECK(p3.rows().across_axis == 2);  // lanes across the (e, n) lines, 32 neighbours along N
  // Lines along a 16-byte-readable axis: the jagged vector kernel's two passes over the whole axis
  // (RowsPlan::columns), 64 lines per CTA, the E axis on grid y.
  // A cluster of up to 16 CTAs splits each tile's whole axis, two CTAs per SM (codes along the
  // lines); the launch takes the fewest CTAs whose parts fit the row cache.
  REQUIRE(p3.rows().columns);
  CHECK(p3.rows().columns->cols_per_cta == 64);
  CHECK(p3.rows().columns->cluster == 16);
  CHECK(p3.rows().columns->cluster_at_launch);
  CHECK(p3.ctas_per_sm == 2);
  const int64_t cached = p3.rows().columns->cached_rows;
  for (int64_t n : {int64_t(1), int64_t(16), int64_t(128), int64_t(512), int64_t(5120), int64_t(8192), int64_t(16640), int64_t(70000)}) {
    CAPTURE(n);
    const Launch ln = p3.launch({4, n, 96}, 0);
    CHECK(ln.tiles_c == 2);
    CHECK(ln.grid[1] == 4u);
    CHECK(ln.grid[0] == 2u * ln.cluster);
    CHECK((ln.cluster == 1 || ln.cluster == 2 || ln.cluster == 4 || ln.cluster == 8 || ln.cluster == 16));
    auto part = [&](int64_t k) { return ((n + k - 1) / k + 15) / 16 * 16; };
    CHECK((part(ln.cluster) <= cached || ln.cluster == 16));   // the parts fit the cache, or the most CTAs
    if (ln.cluster > 1) CHECK(part(ln.cluster / 2) > cached);  // and no fewer CTAs would
  }
  CHECK(p3.launch({4, 512, 96}, 0).cluster == 1u);  // short axes: one CTA per tile
  CHECK(plan.rows().across_axis == -1);
  CHECK(!plan.rows().columns);
  const Plan col = make_plan(rowwise(DType::bf16, 2, 0), t, unit_along(1));
  REQUIRE(col.rows().columns);
  CHECK(col.rows().columns->cluster == 16);
  CHECK(col.launch({16640, 5120}, 0).cluster == 16u);
  CHECK(col.launch({16640, 5120}, 0).grid[0] == 1280u);
  CHECK(col.launch({4000, 5120}, 0).cluster == 8u);  // parts of 500 rows fit 851 cached rows, of 1000 not
  CHECK(col.rows().columns->cached_rows == 851);     // (116736 - 1024 - (8 + 2 + 16) x 64 x 4 - 16) / 128
  CHECK(col.launch({128, 5120}, 0).cluster == 1u);
  // The cluster's size is read at run time; a schedule's cluster is fixed in the kernel.
  const std::string src = make_generated_source(rowwise(DType::bf16, 2, 0), t, unit_along(1));
  CHECK(src.find("__cluster_dims__") == std::string::npos);
  CHECK(src.find("mx_cluster_size()") != std::string::npos);
  const Plan fixed = make_plan(rowwise(DType::bf16, 2, 0), t, unit_along(1), Schedule::parse("tune(cluster=4)"));
  CHECK(!fixed.rows().columns->cluster_at_launch);
  CHECK(fixed.launch({128, 5120}, 0).cluster == 0u);  // a plain launch: the kernel's __cluster_dims__ says 4
  CHECK(plan.launch({16384, 5120}, 0).cluster == 0u);
  CHECK(fixed.launch({128, 5120}, 0).grid[0] == 320u);
  // Without clusters (sm_89): one CTA per tile, 2 per SM.
  CHECK(make_plan(rowwise(DType::bf16, 2, 0), Target::parse("sm_89"), unit_along(1)).rows().columns->cluster == 1);
  // torchao's transposed 3-D rowwise (B_t (E, K, N) K unit-stride, N whole, codes along N): the
  // column-major-codes pass, 64 lines per CTA (128-byte row segments), 3 CTAs per SM, runs of 8
  // positions, clusters of up to 16 (non-portable, opted into at launch).
  const Plan t3 = make_plan(rowwise(DType::bf16, 3, 2), t, unit_along(1));
  REQUIRE(t3.rows().columns);
  CHECK(t3.rows().columns->run_rows == 8);
  CHECK(t3.rows().columns->cluster == 16);
  CHECK(t3.rows().columns->cluster_at_launch);
  CHECK(t3.ctas_per_sm == 3);
  CHECK(t3.rows().columns->cols_per_cta == 64);
  CHECK(t3.rows().columns->cached_rows >= 8192 / 16);  // every row of an 8192-long axis cached
  CHECK(t3.launch({16, 5120, 8192}, 0).cluster == 16u);
  CHECK(t3.launch({16, 5120, 512}, 0).cluster == 1u);
  // A schedule naming some fields keeps them; the defaults fill the rest.
  const Plan t3w = make_plan(rowwise(DType::bf16, 3, 2), t, unit_along(1), Schedule::parse("tune(tile_cols=32)"));
  CHECK(t3w.rows().columns->cols_per_cta == 32);
  CHECK(t3w.rows().columns->run_rows == 8);
  CHECK(t3w.rows().columns->cluster == 16);
  const Plan t3r = make_plan(rowwise(DType::bf16, 3, 2), t, unit_along(1), Schedule::parse("tune(tile_cols=64, rows_per_thread=16)"));
  CHECK(t3r.rows().columns->run_rows == 16);
  CHECK(t3r.rows().columns->cols_per_cta == 64);
  // FP32 lines keep 32 lines per CTA, 2 per SM, clusters of up to 8.
  const Plan t3f = make_plan(rowwise(DType::f32, 3, 2), t, unit_along(1));
  CHECK(t3f.rows().columns->cluster == 8);
  CHECK(t3f.rows().columns->cols_per_cta == 32);
  CHECK(t3f.ctas_per_sm == 2);
  // sm_120 clusters hold 8 CTAs, sm_89 none: the default fits the target, a schedule past it is refused.
  CHECK(make_plan(rowwise(DType::bf16, 3, 2), Target::parse("sm_120a"), unit_along(1)).rows().columns->cluster == 8);
  CHECK(usage_message([&] {
          make_plan(rowwise(DType::bf16, 3, 2), Target::parse("sm_120a"), unit_along(1),
                    Schedule::parse("tune(cluster=16)"));
        }).find("cluster 16 exceeds the 8 CTAs a thread-block cluster holds on sm_120a") != std::string::npos);
  CHECK(usage_message([&] {
          make_plan(rowwise(DType::bf16, 3, 2), Target::parse("sm_89"), unit_along(1),
                    Schedule::parse("tune(cluster=2)"));
        }).find("cluster 2 needs thread-block clusters (sm_90 or later; target sm_89)") != std::string::npos);
  // A schedule's cluster past the portable 8 is chosen at launch too (the launch opts into it).
  const Plan c16 =
      make_plan(rowwise(DType::bf16, 2, 0), t, unit_along(1), Schedule::parse("tune(cluster=16, ctas_per_sm=2)"));
  CHECK(c16.rows().columns->cluster_at_launch);
  CHECK(c16.launch({16384, 5120}, 0).cluster == 16u);
  for (DType dt : {DType::bf16, DType::f32}) {
    CHECK(test::spill_bytes(rowwise(dt, 2, 0), unit_along(1)) == 0);
    CHECK(test::spill_bytes(rowwise(dt, 3, 2), unit_along(1)) == 0);
  }
  // Unaligned lines: lanes across 32 lines, one element at a time.
  CHECK(!make_plan(rowwise(DType::bf16, 2, 0), t, unit_along(1, false)).rows().columns);
  CHECK(usage_message([&] { make_plan(p, t, unit_along(1), Schedule::parse("tune(cluster=2)")); })
            .find("cluster does not apply to the rows kernel, which runs this cast") != std::string::npos);
  CHECK(usage_message([&] { make_plan(rowwise(DType::bf16, 2, 0), t, unit_along(1), Schedule::parse("tune(chunks_per_thread=2)")); })
            .find("chunks_per_thread does not apply to the rows (across, on columns) kernel") != std::string::npos);
  CHECK(make_plan(rowwise(DType::bf16, 2, 0), t, unit_along(1), Schedule::parse("tune(cluster=8, tile_cols=32)")).rows().columns->cluster == 8);
  // The schedule's fields: threads, chunks_per_thread, ctas_per_sm; others are refused by name.
  const Plan tuned = make_plan(p, t, unit_along(1), Schedule::parse("tune(threads=64, chunks_per_thread=2)"));
  CHECK(tuned.threads == 64);
  CHECK(tuned.launch({10, 5120}, 0).tiles_c == 2);
  CHECK(usage_message([&] { make_plan(p, t, unit_along(1), Schedule::parse("tune(tile_rows=32)")); })
            .find("tile_rows does not apply to the rows kernel") != std::string::npos);
  CHECK(usage_message([&] { make_plan(p, t, unit_along(1), Schedule::parse("tune(kernel=direct)")); })
            .find("whole-axis blocks run on the rows kernel") != std::string::npos);
  CHECK(usage_message([&] { make_plan(p, t, unit_along(1), Schedule::parse("tune(threads=96)")); })
            .find("must be a power of two") != std::string::npos);
  // CTAs an SM fit the target's: 1024 threads by the default 4 overfill an SM of 2048.
  CHECK(
      usage_message([&] { make_plan(p, t, unit_along(1), Schedule::parse("tune(threads=1024)")); })
          .find(
              "ctas_per_sm 4 of the rows kernel must be at most 32, and at most 2048 threads an SM (1024 threads a CTA "
              "on sm_90a)") != std::string::npos);
  CHECK(make_plan(p, t, unit_along(1), Schedule::parse("tune(threads=1024, ctas_per_sm=2)")).ctas_per_sm == 2);
  CHECK(usage_message([&] {
          make_plan(p, Target::parse("sm_89"), unit_along(1), Schedule::parse("tune(threads=512)"));
        }).find("at most 1536 threads an SM (512 threads a CTA on sm_89)") != std::string::npos);
  CHECK(usage_message([&] {
          make_plan(p, t, unit_along(1), Schedule::parse("tune(chunks_per_thread=9)"));
        }).find("rows kernel chunks_per_thread 9 must be in 1..8") != std::string::npos);
}

TEST_CASE("rows kernel: a short whole axis takes small CTAs, 8 per SM, where the across form on columns runs it") {
  const Target t = Target::parse("sm_90a");
  const Pipeline t3 = rowwise(DType::bf16, 3, 2);  // torchao's transposed 3-D rowwise: N whole, K unit-stride
  // The shape class says "short" for a whole axis of at most kShortWholeAxis, whatever the size.
  CHECK(shape_class(t3, {64, 5120, 128}) == "mw");
  CHECK(shape_class(t3, {16, 2048, kShortWholeAxis}) == "mw");
  CHECK(shape_class(t3, {16, 2048, kShortWholeAxis + 1}) == "m");
  CHECK(shape_class(t3, {1, 3, 5}) == "sw");
  CHECK(shape_class(t3, {16, 5120, 8192}) == "l");
  CHECK(shape_class(rowwise(DType::bf16, 2, 1), {16384, 200}) == "mw");
  // A cast without whole-axis blocks has no "w".
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  CHECK(shape_class(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}), {4096, 4096}) == "m");
  // Its schedule: 128 threads, 8 CTAs per SM, no cluster, where the across form on columns runs.
  const Schedule sw = short_whole_schedule(t3, t, unit_along(1));
  CHECK(sw.str() == "tune(threads=128, ctas_per_sm=8)");
  const Plan sp = make_plan(t3, t, unit_along(1), sw, Fit::lenient);
  REQUIRE(sp.rows().columns);
  CHECK(sp.threads == 128);
  CHECK(sp.ctas_per_sm == 8);
  CHECK(sp.rows().columns->cluster == 1);
  CHECK(sp.rows().columns->cached_rows >= kShortWholeAxis);  // one CTA holds the whole axis: one read
  // Elsewhere the default: lines along the unit-stride axis (rowwise), or no 16-byte loads.
  CHECK(short_whole_schedule(rowwise(DType::bf16, 2, 1), t, unit_along(1)).is_default());
  CHECK(short_whole_schedule(t3, t, unit_along(1, false)).is_default());
  // The kernel says so (its compile: the slow variants test below).
  CHECK(generate(t3, t, unit_along(1), sw, Fit::lenient).source.find("__launch_bounds__(128, 8)") != std::string::npos);
}

TEST_CASE("rows kernel: warps per line are the fewest that hold the line, at most the CTA's") {
  for (int threads : {32, 64, 128, 256, 512, 1024})
    for (int u = 1; u <= 8; ++u)
      for (int64_t n : {int64_t(1), int64_t(7), int64_t(255), int64_t(256), int64_t(257), int64_t(5120), int64_t(65536),
                        int64_t(1) << 30}) {
        const int64_t w = rows_warps_per_line(n, threads, u);
        CHECK(w >= 1);
        CHECK(w <= threads / 32);
        CHECK((w & (w - 1)) == 0);
        // Either the line fits the warps' registers, or the CTA is all the line's.
        CHECK((w * 256 * u >= n) + (w == threads / 32) >= 1);
        if (w > 1) CHECK((w / 2) * 256 * u < n);
      }
}

TEST_CASE("rows kernel: chunks past a line's end are neither loaded nor coded, lines in 32 bits, no spills") {
  // A 5120-long line fills 5 of a thread's 8 chunks (4 warps a line): the other 3 are skipped, in
  // both phases and in the spans of lines read twice (perf-log #rows-past-the-line).
  const Target t = Target::parse("sm_90a");
  auto count = [](const std::string& src, const std::string& what) {
    size_t n = 0;
    for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
    return n;
  };
  for (DType dt : {DType::bf16, DType::f32}) {
    const std::string src = make_generated_source(rowwise(dt, 3, 2), t, unit_along(2));
    CHECK(src.find("mxjit_rows_") != std::string::npos);
    // Held span: loads, amax, codes; spans read twice: loads and amax, loads and codes.
    CHECK(count(src, "if (!(okl && cc < n_c)) continue;") == 7);
    // The line's indices in 32 bits: no 64-bit division (a call whose registers spilled the chunks).
    CHECK(src.find("unsigned rest_ = okl ? unsigned(line) : 0u;") != std::string::npos);
    CHECK(src.find("const mx_i64 ix1 = rest_ % unsigned(P.shape[1]);") != std::string::npos);
    CHECK(src.find("const mx_i64 ix0 = rest_;") != std::string::npos);
    for (int r : {2, 3}) {
      CHECK(test::spill_bytes(rowwise(dt, r, r - 1), unit_along(r - 1)) == 0);
      CHECK(test::spill_bytes(rowwise(dt, r, 1), unit_along(1)) == 0);  // 3-D: torchao's colwise over K of B_t
    }
  }
  // Every extent below 2^31 but 2^31 lines or more: refused at launch, by name.
  const Plan p = make_plan(rowwise(DType::bf16, 3, 2), t, unit_along(2));
  CHECK(p.launch({65536, 32767, 7}, 0).grid[0] == 65536u * 32767u / 8u);  // a warp a 7-long line, 8 a CTA
  CHECK(usage_message([&] {
          (void)p.launch({65536, 32768, 7}, 0);
        }).find("launch: 2147483648 lines exceed 2^31 - 1 (the rows kernel counts lines in 32 bits)") !=
        std::string::npos);
}

TEST_CASE("rows kernel: whole-axis casts it does not run are refused by name") {
  const Target t = Target::parse("sm_90a");
  auto x = input("x", DType::bf16, rank(2));
  auto msg = [&](const Pipeline& p) { return usage_message([&] { make_plan(p, t, unit_along(1)); }); };
  auto tiles = f32_scale(amax(blocks(x, {0, 1}, {kWholeAxis, 128})), e4m3);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / tiles)), output("s", tiles)})).find("same one axis") != std::string::npos);
  auto rows = f32_scale(amax(blocks(x, 1, kWholeAxis)), e4m3);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / rows)), output("a", amax(x))})).find("output 'a' is an amax") != std::string::npos);
  auto rows8 = e8m0_scale(amax(blocks(x, 1, kWholeAxis)), e4m3, ScaleRule::rceil);
  CHECK(msg(pipeline({output("q", cast(e4m3, x / rows8)), output("s", rows8, layout::blocked_128x4())}))
            .find("strided layout") != std::string::npos);
  // Padded strided scales are zeroed first (the kernel writes the real ones).
  CHECK(make_plan(pipeline({output("q", cast(e4m3, x / rows)), output("s", rows, layout::mn_major_tma())}), t, unit_along(1))
            .zero_outputs == std::vector<int>{1});
}

TEST_CASE("rows kernel: every variant compiles for sm_90a and sm_100a" * doctest::test_suite("slow")) {
  std::vector<test::CompileVariant> vs;
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    vs.push_back({fmt::format("{} rowwise", dtype_name(dt)), rowwise(dt, 2, 1), unit_along(1)});
    vs.push_back({fmt::format("{} rowwise, unaligned", dtype_name(dt)), rowwise(dt, 2, 1), unit_along(1, false)});
    vs.push_back({fmt::format("{} colwise of a row-major input", dtype_name(dt)), rowwise(dt, 2, 0), unit_along(1)});
    vs.push_back({fmt::format("{} colwise, unaligned", dtype_name(dt)), rowwise(dt, 2, 0), unit_along(1, false)});
    vs.push_back({fmt::format("{} 3-D transposed rowwise (N whole, K unit-stride)", dtype_name(dt)), rowwise(dt, 3, 2), unit_along(1)});
  }
  vs.push_back({"colwise, no cluster", rowwise(DType::bf16, 2, 0), unit_along(1), Schedule::parse("tune(ctas_per_sm=2)")});
  // Every schedule the tuner tries, both forms.
  const Target t = Target::parse("sm_90a");
  for (const auto& [name, p] : {std::pair{"colwise", rowwise(DType::bf16, 2, 0)}, std::pair{"rowwise", rowwise(DType::bf16, 2, 1)},
                                std::pair{"colwise, codes along the columns", rowwise(DType::bf16, 2, 0, {}, layout::col_major())}}) {
    const std::vector<Schedule> cands = schedule_candidates(p, t, unit_along(1));
    CHECK(cands.size() > 6);
    for (const Schedule& s : cands) vs.push_back({fmt::format("tuner candidate {} {}", name, s.str()), p, unit_along(1), s});
  }
  vs.push_back({"colwise, column-major codes", rowwise(DType::bf16, 2, 0, {}, layout::col_major()), unit_along(1)});
  vs.push_back({"rowwise pow2 multiplier", rowwise(DType::bf16, 2, 1, {true, true}), unit_along(1)});
  vs.push_back({"3-D, K whole, codes (E, K, N)", rowwise(DType::bf16, 3, 1), unit_along(1)});
  vs.push_back({"3-D, N whole, transposed codes", rowwise(DType::bf16, 3, 2, {}, layout::permuted({0, 2, 1})), unit_along(2)});
  vs.push_back({"rank 1", rowwise(DType::bf16, 1, 0), unit_along(0)});
  {
    auto x = input("x", DType::bf16, rank(2));
    auto y = input("y", DType::bf16, rank(2));
    auto v = x * y;
    auto s = e8m0_scale(amax(blocks(v, 1, kWholeAxis)), e4m3, ScaleRule::rceil);
    auto s4 = e8m0_scale(amax(blocks(v, 1, kWholeAxis)), e2m1, ScaleRule::even);
    vs.push_back({"E8M0 rowwise of a product, FP8 and FP4", pipeline({output("q", cast(e4m3, v / s)), output("s", s),
                                                                         output("q4", cast(e2m1, v / s4)), output("s4", s4)}),
                  StrideClass{{1, 1}, {true, true}}});
  }
  for (const auto& [name, def] : {std::pair{"vllm", recipes::vllm_group(e4m3, true)}, std::pair{"te", recipes::transformer_engine(e4m3, true)},
                                   std::pair{"deepgemm", recipes::deepgemm(e4m3, true)}})
    for (int axis : {1, 0}) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = scale(amax(blocks(x, axis, kWholeAxis)), e4m3, def);
      const Saturate sat = std::string(name) == "deepgemm" ? Saturate::none : Saturate::finite;
      vs.push_back({fmt::format("{} whole along {}", name, axis),
                    pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, sat)), output("s", s)}), unit_along(1)});
    }
  for (const char* tu : {"tune(threads=32, chunks_per_thread=1)", "tune(threads=1024, chunks_per_thread=8, ctas_per_sm=1)"})
    vs.push_back({fmt::format("rowwise {}", tu), rowwise(DType::bf16, 2, 1), unit_along(1), Schedule::parse(tu)});
  CHECK(test::compile_variants(vs) == 2 * int(vs.size()));
}
