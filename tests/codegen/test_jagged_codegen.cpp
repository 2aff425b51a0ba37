// Jagged token groups (per-group scales from a device offsets array) in generated code, without a
// GPU: which jagged kernel each input order gets, the schedules it accepts, and that every variant
// the GPU tests run compiles with NVRTC for sm_90a and sm_100a.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "runtime/compile.hpp"
#include "runtime/tuner.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

/// A cast of x (or of a prologue of it) with one scale per column per group of rows (group_axis
/// 0) or per row per group of columns (1).
Pipeline jagged(DType dt, ElemFormat f, bool f32_scales, int group_axis = 0, Layout codes = layout::row_major(),
                bool prologue = false, Round rnd = Round::nearest_even) {
  auto x = input("x", dt, rank(2));
  Expr v = prologue ? gelu(x * 0.75, Gelu::tanh) : Expr(x);
  Scale s = f32_scales ? f32_scale(amax(groups(v, group_axis, offsets("offs"))), f)
                       : e8m0_scale(amax(groups(v, group_axis, offsets("offs"))), f, ScaleRule::rceil);
  CastOptions o;
  o.seed = 3;
  return pipeline({output("q", cast(f, v / s, rnd, Saturate::finite, o), codes), output("s", s)});
}

/// x with unit stride along `unit` (16-byte aligned), offsets contiguous.
StrideClass order(int unit) { return StrideClass{{unit, 0}, {true, false}}; }

}  // namespace

TEST_CASE("jagged groups: the vector kernel for 16-byte loads along the scale's columns, the scalar one otherwise") {
  const Target t = Target::parse("sm_90a");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    const GeneratedKernel k = generate(jagged(dt, e4m3, true), t, order(1));
    CAPTURE(dtype_name(dt));
    CHECK(k.plan.kind == KernelKind::jagged);
    CHECK(k.plan.jagged().vector);
    CHECK(k.plan.jagged().cols_per_cta == 64);
    // Shared memory caps CTAs per SM at ctas_per_sm (2): 3 CTAs and their reserved 1 KiB overflow 228 KiB.
    // A 2-byte input has two kernels, a CTA a group and a 2-CTA cluster (JaggedPlan::plain).
    const bool two = dt != DType::f32;
    CHECK(k.plan.jagged().cluster == (two ? 2 : 1));
    CHECK(k.plan.jagged().plain.has_value() == two);
    CHECK(k.plan.ctas_per_sm == 2);
    CHECK(k.plan.jagged().rows_in_flight == 8);
    CHECK(3 * (k.plan.smem_bytes + 1024) > 233472);
    CHECK(2 * (k.plan.smem_bytes + 1024) <= 233472);
    // The rest of the shared memory caches the group's first rows: 879 bf16 rows of 64 columns
    // ((233472 / 2 - 1024 - (8 + 2 + 2) x 64 maxima x 4 bytes - 16 for the barrier) / 128), 442 f32.
    CHECK(k.plan.jagged().cached_rows == (dt == DType::f32 ? 442 : 879));
    CHECK(k.source.find("cache[") != std::string::npos);
    CHECK(k.source.find("mx_ld16") != std::string::npos);
    CHECK(k.source.find("Pass 2") != std::string::npos);
    CHECK(k.source.find("__cluster_dims__") == (two ? k.source.find("__cluster_dims__(2, 1, 1) ") : std::string::npos));
    // A cluster of 4 CTAs (a tuning, sm_90+) splits each group's rows: 4 CTAs per SM by default,
    // 4 rows in flight (8 spill at 64 registers; 1 of f32, where 2 spill; 3 of f16), 419 bf16 rows cached by
    // each (x 4 CTAs).
    const Schedule c4{.cluster = 4};
    const GeneratedKernel kc = generate(jagged(dt, e4m3, true), t, order(1), c4);
    CHECK(kc.plan.jagged().cluster == 4);
    CHECK(kc.plan.ctas_per_sm == 4);
    CHECK(kc.plan.jagged().rows_in_flight == (dt == DType::f32 ? 1 : dt == DType::f16 ? 3 : 4));
    CHECK(5 * (kc.plan.smem_bytes + 1024) > 233472);
    CHECK(4 * (kc.plan.smem_bytes + 1024) <= 233472);
    // (233472 / 4 - 1024 - (8 + 2 + 4) x 64 maxima x 4 bytes - 16 for the barrier) / 128 bytes a row (256 of f32)
    CHECK(kc.plan.jagged().cached_rows == (dt == DType::f32 ? 209 : 419));
    CHECK(kc.source.find("__cluster_dims__(4, 1, 1)") != std::string::npos);
    CHECK(kc.source.find("mx_st_async_u32") != std::string::npos);
    CHECK(kc.source.find("mx_mbar_wait_cluster(s_bar, 0)") != std::string::npos);
    CHECK(test::spill_bytes(jagged(dt, e4m3, true), order(1)) == 0);
    CHECK(test::spill_bytes(jagged(dt, e4m3, true), order(1), c4) == 0);
  }
  // Input unit-stride along the groups (a column-major input, or groups along the columns of a
  // row-major one): the scalar kernel with a warp per column, lanes on consecutive rows.
  for (const auto& [pipe, unit] : {std::pair{jagged(DType::bf16, e4m3, true), 0}, std::pair{jagged(DType::bf16, e4m3, true, 1), 1}}) {
    const GeneratedKernel k = generate(pipe, t, order(unit));
    CHECK(!k.plan.jagged().vector);
    CHECK(k.plan.jagged().lanes);
    CHECK(k.plan.jagged().cols_per_cta == 8);
    CHECK(k.source.find("__shfl_xor_sync") != std::string::npos);
    CHECK(k.source.find("g < G && lane == 0") != std::string::npos);
  }
  CHECK(!generate(jagged(DType::bf16, e4m3, true, 1, layout::col_major()), t, order(0)).plan.jagged().lanes);
  // Codes column-major (the weight gradient's operand): the vector kernel, its second pass 8 rows
  // of a column at a time, transposed in registers into aligned 8-byte runs.
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    CAPTURE(dtype_name(dt));
    const Pipeline cm = jagged(dt, e4m3, true, 0, layout::col_major());
    const GeneratedKernel k = generate(cm, t, order(1));
    CHECK(k.plan.jagged().vector);
    // 32 columns per CTA, runs of 8 rows: a warp's stores of one column meet in 64 bytes. 2-byte
    // inputs get three kernels chosen at launch: 3 CTAs an SM ((233472 / 3 - 1024 - (8 + 2) x 32 x 4)
    // / 64 = 1180 cached rows), for larger groups 2 (1788), and for smaller ones 6 CTAs of 128
    // threads ((233472 / 6 - 1024 - (4 + 2) x 32 x 4) / 64 = 580 rows, runs of 4); FP32 inputs, a
    // prologue, stochastic rounding or a schedule's CTA shape: the 2-CTA kernel alone.
    CHECK(k.plan.jagged().cols_per_cta == 32);
    CHECK(k.plan.jagged().run_rows == 8);
    CHECK(k.plan.ctas_per_sm == 2);
    CHECK(k.plan.jagged().cached_rows == 1788 / (dt == DType::f32 ? 2 : 1));
    CHECK(k.plan.jagged().cluster == 1);
    REQUIRE(k.plan.jagged().plain.has_value() == (dt != DType::f32));
    if (dt != DType::f32) {
      CHECK(k.plan.jagged().plain->ctas_per_sm == 3);
      CHECK(k.plan.jagged().plain->cached_rows == 1180);
      CHECK(k.plan.entry_names().at(1) == k.plan.kernel_name + "_large");
      CHECK(k.source.find("__launch_bounds__(256, 3) " + k.plan.kernel_name + "(const MxParams P)") !=
            std::string::npos);
      CHECK(k.source.find("__launch_bounds__(256, 2) " + k.plan.kernel_name + "_large(const MxParams P)") !=
            std::string::npos);
      CHECK(k.source.find("__cluster_dims__") == std::string::npos);
      // The launch: the plain kernel up to a mean of 1180 rows a group, its own shared memory.
      CHECK(k.plan.launch({16640, 5120}, 16).entry == 0);
      CHECK(k.plan.launch({16640, 5120}, 16).smem_bytes == k.plan.jagged().plain->smem_bytes);
      CHECK(k.plan.launch({16640, 5120}, 8).entry == 1);
      CHECK(k.plan.launch({16640, 5120}, 8).smem_bytes < 0);  // the plan's own
      CHECK(k.plan.launch({16640, 5120}, 8).grid[0] == 160u);
      // The small groups' kernel: where the mean fits its 580 rows (64 groups of 256 rows, the
      // E=64 step's), its own threads and shared memory; the same grid.
      const std::optional<SideKernel>& sm = k.plan.jagged().small;
      REQUIRE(sm.has_value());
      CHECK(sm->threads == 128);
      CHECK(sm->ctas_per_sm == 6);
      CHECK(sm->cached_rows == 580);
      CHECK(sm->run_rows == 4);
      CHECK(sm->smem_bytes == 768 + 580 * 64);
      CHECK(k.plan.entry_names().size() == 3);
      CHECK(k.plan.entry_names().at(2) == k.plan.kernel_name + "_small");
      CHECK(k.source.find("__launch_bounds__(128, 6) " + k.plan.kernel_name + "_small(const MxParams P)") !=
            std::string::npos);
      CHECK(k.plan.str().find("a kernel of 128 threads: ctas_per_sm=6 smem=37888 cached_rows=580") !=
            std::string::npos);
      for (const std::array<int64_t, 3>& c : {std::array<int64_t, 3>{16384, 64, 2},
                                              {64 * 580, 64, 2},
                                              {64 * 580 + 1, 64, 0},
                                              {580, 0, 2},
                                              {581, 0, 0},
                                              {16640, 16, 0},
                                              {16384, 4, 1}}) {
        CAPTURE(c[0]);
        CAPTURE(c[1]);
        const Launch l = k.plan.launch({c[0], 5120}, c[1]);
        CHECK(l.entry == int(c[2]));
        CHECK(l.threads == (c[2] == 2 ? 128 : -1));
        CHECK(l.smem_bytes == (c[2] == 2 ? sm->smem_bytes : c[2] == 0 ? k.plan.jagged().plain->smem_bytes : -1));
        CHECK(l.grid[0] == 160u);
      }
      // Runs asked for: no small groups' kernel (its runs are 4).
      CHECK(!generate(cm, t, order(1), Schedule{.rows_per_thread = 8}).plan.jagged().small);
    }
    CHECK(!generate(jagged(dt, e4m3, true, 0, layout::col_major(), true), t, order(1)).plan.jagged().plain);
    CHECK(!generate(jagged(dt, e4m3, true, 0, layout::col_major(), false, Round::stochastic), t, order(1))
               .plan.jagged()
               .plain);
    CHECK(!generate(cm, t, order(1), Schedule{.ctas_per_sm = 3}).plan.jagged().plain);
    CHECK(k.source.find("Pass 2 (codes column-major)") != std::string::npos);
    CHECK(k.source.find("mx_transpose4x4(cw[4 * h][k], cw[4 * h + 1][k], cw[4 * h + 2][k], cw[4 * h + 3][k])") !=
          std::string::npos);
    CHECK(k.source.find("*reinterpret_cast<uint2*>(ob) = make_uint2(run[e][0], run[e][1]);") != std::string::npos);
    CHECK(test::spill_bytes(cm, order(1)) == 0);
    const Schedule r16{.tile_cols = 64, .rows_per_thread = 16};
    CHECK(generate(cm, t, order(1), r16).source.find("mx_st16(ob, mx_v16{run[e][0], run[e][1], run[e][2], run[e][3]});") != std::string::npos);
    CHECK(test::spill_bytes(cm, order(1), r16) == 0);
    // Within 64 registers (a cluster's 4 CTAs per SM) runs of 4 rows; FP32 inputs spill there
    // (40 bytes with CUDA 13's ptxas), a tuning the tuner measures rather than a default.
    if (dt != DType::f32) CHECK(test::spill_bytes(cm, order(1), Schedule{.cluster = 4}) == 0);
    CHECK(generate(cm, t, order(1), Schedule{.cluster = 4}).source.find("*reinterpret_cast<mx_u32*>(ob) = run[e][0];") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true, 0, layout::col_major()), t, order(1), Schedule{.rows_per_thread = 12}),
                       doctest::Contains("rows_per_thread 12 of the jagged kernel's column-major codes must be 4, 8 or 16"), UsageError);
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true), t, order(1), Schedule{.rows_per_thread = 8}),
                       doctest::Contains("rows_per_thread 8 applies to the jagged kernel's column-major codes only"), UsageError);
  // Two code outputs, one of them column-major: scalar (the column-major pass stores one).
  {
    auto x = input("x", DType::bf16, rank(2));
    Scale s = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3);
    const Pipeline two = pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("r", cast(e4m3, x / s)), output("s", s)});
    CHECK(!generate(two, t, order(1)).plan.jagged().vector);
  }
  CHECK(!generate(jagged(DType::bf16, e4m3, true, 1), t, order(1)).plan.jagged().vector);
  CHECK(generate(jagged(DType::bf16, e4m3, true, 1, layout::col_major()), t, order(0)).plan.jagged().vector);
  // FP4 codes cannot pack pairs across jagged groups: refused when the pipeline is built.
  CHECK_THROWS_WITH_AS(jagged(DType::bf16, e2m1, false, 0, layout::col_major()),
                       doctest::Contains("FP4 codes need fixed blocks"), UsageError);
  // Schedules: columns per CTA, threads, rows in flight, CTAs per SM; bad values name the rule.
  const Schedule tu{.tile_cols = 128, .threads = 512, .ctas_per_sm = 1, .rows_in_flight = 4};
  const Plan pl = generate(jagged(DType::bf16, e4m3, true), t, order(1), tu).plan;
  CHECK(pl.jagged().cols_per_cta == 128);
  CHECK(pl.threads == 512);
  CHECK(pl.jagged().rows_in_flight == 4);
  CHECK(pl.smem_bytes > 233472 / 2 - 1024);
  CHECK_THROWS_WITH_AS(
      generate(jagged(DType::bf16, e4m3, true), t, order(1), Schedule{.threads = 1024, .ctas_per_sm = 4}),
      doctest::Contains("ctas_per_sm 4 of the jagged kernel must be at most 32, and at most 2048 threads an SM"),
      UsageError);
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true), t, order(1), Schedule{.tile_cols = 96}),
                       doctest::Contains("tile_cols 96 of the jagged kernel must be 32, 64, 128 or 256"), UsageError);
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true), t, order(1), Schedule{.rows_in_flight = 17}),
                       doctest::Contains("rows_in_flight 17 (1..16)"), UsageError);
  Schedule bad{.cluster = 3};
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true), t, order(1), bad),
                       doctest::Contains("cluster 3 of the jagged kernel must be 1, 2, 4, 8 or 16"), UsageError);
  bad.cluster = 2;
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true), Target::parse("sm_89"), order(1), bad),
                       doctest::Contains("cluster 2 needs thread-block clusters (sm_90 or later; target sm_89)"), UsageError);
  // Jagged groups fix their cluster in the kernel (__cluster_dims__): at most the portable 8.
  bad.cluster = 16;
  CHECK_THROWS_WITH_AS(generate(jagged(DType::bf16, e4m3, true), t, order(1), bad),
                       doctest::Contains("a cluster of more than 8 CTAs applies to whole axes only"), UsageError);
}

TEST_CASE(
    "jagged groups, column-major codes: a warp's runs of a column fill whole 32-byte sectors wherever the group starts") {
  const Target t = Target::parse("sm_90a");
  const Pipeline cm = jagged(DType::bf16, e4m3, true, 0, layout::col_major());
  // Runs of 8 (the default), 4 (4 CTAs an SM), 16 (64 columns: 8 threads a row), 128 threads, a cluster.
  for (const Schedule& s : {Schedule{}, Schedule{.ctas_per_sm = 4}, Schedule{.tile_cols = 64, .rows_per_thread = 16},
                            Schedule{.threads = 128}, Schedule{.cluster = 2}}) {
    CAPTURE(s.str());
    const GeneratedKernel k = generate(cm, t, order(1), s);
    const int R = k.plan.jagged().run_rows, TC = k.plan.jagged().cols_per_cta / 8, RL = k.plan.threads / TC;
    // The pass-2 loop as generated: r = (row_s & ~mask) + R * rl, stepping R * RL rows.
    const std::string head = "for (mx_i64 r = (row_s & ~mx_i64(";
    const size_t at = k.source.find(head);
    REQUIRE(at != std::string::npos);
    const int mask = std::stoi(k.source.substr(at + head.size()));
    CHECK(k.source.find(fmt::format("(row_s & ~mx_i64({})) + {} * rl; r < row_e; r += {})", mask, R, R * RL)) !=
          std::string::npos);
    // Every group start 0..255 and lengths 1..300: each row of the group in exactly one lane's run
    // (rows outside are masked), and a warp's lanes' runs of one column meet in whole sectors
    // (bytes = rows: a column-major column is unit-stride, its start a multiple of 32).
    int bad_cover = 0, bad_sector = 0;
    for (int64_t row_s = 0; row_s < 256; row_s += 3)
      for (int64_t len : {1, 16, 63, 300}) {
        const int64_t row_e = row_s + len;
        std::vector<int> seen(size_t(len), 0);
        for (int rl = 0; rl < RL; ++rl)
          for (int64_t r = (row_s & ~int64_t(mask)) + R * rl; r < row_e; r += R * RL)
            for (int u = 0; u < R; ++u)
              if (r + u >= row_s && r + u < row_e) ++seen[size_t(r + u - row_s)];
        bad_cover += int(std::count_if(seen.begin(), seen.end(), [](int n) { return n != 1; }));
        for (int w = 0; w < RL * TC / 32; ++w) {  // the warp's first lane's run starts its span
          const int64_t first = (row_s & ~int64_t(mask)) + R * (w * 32 / TC);
          bad_sector += first % 32 != 0;
        }
      }
    CHECK(bad_cover == 0);
    CHECK(bad_sector == 0);
  }
}

TEST_CASE("jagged groups: two kernels, a cluster for large groups and a CTA for small ones, chosen at launch") {
  const Target t = Target::parse("sm_90a");
  const Pipeline p = jagged(DType::bf16, e4m3, true);
  const GeneratedKernel k = generate(p, t, order(1));
  const JaggedPlan& j = k.plan.jagged();
  REQUIRE(j.plain.has_value());
  // The cluster kernel: 2 CTAs an SM, 8 rows in flight, 879 cached rows each.
  CHECK(j.cluster == 2);
  CHECK(k.plan.ctas_per_sm == 2);
  CHECK(j.rows_in_flight == 8);
  CHECK(j.cached_rows == 879);
  // The plain kernel: 4 CTAs an SM (64 registers), 4 rows in flight, 2 cached rows a step, and
  // (233472 / 4 - 1024 - (8 + 2) x 64 maxima x 4 bytes) / 128 = 428 cached rows.
  CHECK(j.plain->ctas_per_sm == 4);
  CHECK(j.plain->rows_in_flight == 4);
  CHECK(j.plain->cached_rows_per_step == 2);
  CHECK(j.plain->cached_rows == 428);
  CHECK(j.plain->smem_bytes == 2560 + 428 * 128);
  // Each kernel has its cluster and its row cache compiled in; the launch chooses the entry.
  const std::vector<std::string> entries = k.plan.entry_names();
  REQUIRE(entries.size() == 2);
  CHECK(!j.small);  // row-major codes: no small groups' kernel
  CHECK(entries[0] == k.plan.kernel_name);
  CHECK(entries[1] == k.plan.kernel_name + "_cluster");
  const size_t plain_at =
      k.source.find("extern \"C\" __global__ void __launch_bounds__(256, 4) " + entries[0] + "(const MxParams P) {");
  const size_t cluster_at =
      k.source.find("extern \"C\" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256, 2) " + entries[1] +
                    "(const MxParams P) {");
  REQUIRE(plain_at != std::string::npos);
  REQUIRE(cluster_at != std::string::npos);
  CHECK(plain_at < cluster_at);
  CHECK(k.source.find("mx_cluster_", plain_at) > cluster_at);  // the plain kernel: no cluster code
  CHECK(k.source.find("row_e - row_s < 428 ? row_e : row_s + 428", plain_at) < cluster_at);
  CHECK(k.source.find("row_e - row_s < 879 ? row_e : row_s + 879", cluster_at) != std::string::npos);
  CHECK(k.source.find("mx_cluster_size()") == std::string::npos);
  CHECK(k.source.find("q = blockIdx.x % 2;") != std::string::npos);
  CHECK(k.plan.str().find("a plain kernel: ctas_per_sm=4 smem=57344 cached_rows=428") != std::string::npos);
  // The launch: the cluster where the groups' mean size passes the plain kernel's cache (428 rows).
  const int64_t cr = j.plain->cached_rows, tiles_c = (7168 + 63) / 64;
  for (const std::array<int64_t, 3>& c : {std::array<int64_t, 3>{16384, 16, 2},
                                       {16384, 64, 0},
                                       {16 * cr, 16, 0},
                                       {16 * cr + 1, 16, 2},
                                       {cr, 0, 0},
                                       {cr + 1, 0, 2},
                                       {cr + 1, 1, 2}}) {
    const int64_t rows = c[0], groups = c[1], cluster = c[2];
    CAPTURE(rows);
    CAPTURE(groups);
    const Launch l = k.plan.launch({rows, 7168}, groups);
    CHECK(l.entry == (cluster ? 1 : 0));
    CHECK(l.smem_bytes == (cluster ? -1 : j.plain->smem_bytes));
    CHECK(l.cluster == 0u);  // fixed by __cluster_dims__
    CHECK(l.grid[0] == unsigned(tiles_c * (cluster ? 2 : 1)));
    CHECK(l.grid[1] == unsigned(groups + 1));
    CHECK(l.tiles_c == tiles_c);
  }
  // A schedule's cluster is fixed (one kernel, __cluster_dims__); so is cluster=1 (no cluster).
  const GeneratedKernel k2 = generate(p, t, order(1), Schedule{.cluster = 2});
  CHECK(!k2.plan.jagged().plain);
  CHECK(k2.plan.ctas_per_sm == 4);
  CHECK(k2.source.find("__cluster_dims__(2, 1, 1)") != std::string::npos);
  CHECK(k2.plan.launch({16384, 7168}, 64).cluster == 0);
  CHECK(k2.plan.launch({16384, 7168}, 64).grid[0] == unsigned(2 * tiles_c));
  CHECK(k2.plan.launch({16384, 7168}, 64).smem_bytes == -1);
  const GeneratedKernel k1 = generate(p, t, order(1), Schedule{.cluster = 1});
  CHECK(!k1.plan.jagged().plain);
  CHECK(k1.plan.jagged().cluster == 1);
  CHECK(k1.plan.jagged().cached_rows == 884);
  CHECK(k1.plan.entry_names().size() == 1);
  CHECK(k1.source.find("_cluster(") == std::string::npos);
  CHECK(k1.plan.launch({16384, 7168}, 16).grid[0] == unsigned(tiles_c));
  // A schedule's CTAs per SM (and its other fields) hold for both kernels.
  const GeneratedKernel kt = generate(p, t, order(1), Schedule{.tile_cols = 128, .ctas_per_sm = 1});
  REQUIRE(kt.plan.jagged().plain.has_value());
  CHECK(kt.plan.ctas_per_sm == 1);
  CHECK(kt.plan.jagged().plain->ctas_per_sm == 1);
  CHECK(kt.plan.jagged().cols_per_cta == 128);
  // One kernel where there are no clusters (sm_89) and for FP32 inputs; column-major codes' two
  // kernels have no cluster (the column-major case above).
  CHECK(!generate(p, Target::parse("sm_89"), order(1)).plan.jagged().plain);
  CHECK(!generate(jagged(DType::f32, e4m3, true), t, order(1)).plan.jagged().plain);
  CHECK(generate(jagged(DType::bf16, e4m3, true, 0, layout::col_major()), t, order(1)).plan.jagged().cluster == 1);
  CHECK(generate(jagged(DType::f16, e5m2, false), Target::parse("sm_100a"), order(1)).plan.jagged().plain.has_value());
  // A prologue or stochastic rounding keeps the plain kernel at 2 CTAs an SM (at 4, 64 registers, f16
  // with GELU spills 28 bytes, stochastic rounding 104: the next case compiles them).
  const Pipeline gelu = jagged(DType::f16, e5m2, false, 0, layout::row_major(), true);
  const Pipeline sr = jagged(DType::bf16, e4m3, false, 0, layout::row_major(), false, Round::stochastic);
  CHECK(generate(gelu, t, order(1)).plan.jagged().plain->ctas_per_sm == 2);
  CHECK(generate(sr, t, order(1)).plan.jagged().plain->ctas_per_sm == 2);
  CHECK(generate(jagged(DType::f16, e5m2, false), t, order(1)).plan.jagged().plain->ctas_per_sm == 4);
  // The tuner measures both: the default's two kernels, and one kernel at 1-4 CTAs an SM for each
  // tile width and rows in flight (cluster=1), beside the fixed clusters.
  int two_kernels = 0, one_cta = 0;
  std::set<std::pair<int, int>> widths_ctas;
  for (const Schedule& s : schedule_candidates(p, t, order(1))) {
    const Plan pl = make_plan(p, t, order(1), s);
    if (pl.jagged().plain) ++two_kernels;
    if (!pl.jagged().plain && pl.jagged().cluster == 1) {
      ++one_cta;
      widths_ctas.insert({pl.jagged().cols_per_cta, pl.ctas_per_sm});
    }
  }
  CHECK(two_kernels == 1);
  CHECK(one_cta >= 24);
  CHECK(widths_ctas.size() == 12);
}

TEST_CASE("jagged groups: neither of the two kernels spills, and both compile for sm_90a and sm_100a" *
          doctest::test_suite("slow")) {
  const Target t = Target::parse("sm_90a");
  const Pipeline p = jagged(DType::bf16, e4m3, true);
  const Pipeline gelu = jagged(DType::f16, e5m2, false, 0, layout::row_major(), true);
  const Pipeline sr = jagged(DType::bf16, e4m3, false, 0, layout::row_major(), false, Round::stochastic);
  // ptxas reports each kernel of the module.
  for (const Pipeline& q : {p, gelu, sr, jagged(DType::f16, e5m2, false)}) {
    CompileOptions o;
    o.resource_usage = true;
    const CompiledKernel ck = compile(q, t, order(1), o);
    int reports = 0;
    for (size_t at = ck.log.find("bytes spill stores"); at != std::string::npos;
         at = ck.log.find("bytes spill stores", at + 1)) {
      ++reports;
      CHECK(ck.log.compare(ck.log.rfind(',', at) + 1, 2, " 0") == 0);
    }
    CHECK_MESSAGE(reports == 2, ck.log);
  }
  CHECK(test::compile_variants({{"bf16 e4m3 two kernels", p, order(1)}}) == 2);
}

TEST_CASE("jagged groups, vector kernel: the row cache is filled with cp.async; every candidate schedule compiles" *
          doctest::test_suite("slow")) {
  const Target t = Target::parse("sm_90a");
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    CAPTURE(dtype_name(dt));
    const std::string src = generate(jagged(dt, e4m3, true), t, order(1)).source;
    // The kernel, or the plain one of two (2-byte inputs: JaggedPlan::plain).
    const size_t begin = src.find("extern \"C\" __global__"), end = src.find("_cluster(const MxParams P) {");
    const std::string kernel = src.substr(begin, end == std::string::npos ? end : end - begin);
    // Pass 1 copies each cached row of a thread with one 16-byte cp.async (two of f32: 8 columns
    // of 4 bytes), cut to the columns inside the tensor (zero-filled past n_c), then waits for
    // its own copies before reading them back: no barrier.
    size_t copies = 0;
    for (size_t at = kernel.find("mx_cp_async16("); at != std::string::npos; at = kernel.find("mx_cp_async16(", at + 1)) ++copies;
    CHECK(copies == (dt == DType::f32 ? 2u : 1u));
    CHECK(kernel.find("mx_cp_async_commit();") < kernel.find("mx_cp_async_wait<0>();"));
    CHECK(kernel.find("mx_cp_async_wait<0>();") < kernel.find("__syncthreads()"));
    CHECK(kernel.find(dt == DType::f32 ? "nc > 4 ? unsigned(nc - 4) * 4u : 0u" : "nc > 0 ? unsigned(nc) * 2u : 0u") != std::string::npos);
  }
  // Every schedule the tuner tries on a jagged cast compiles for sm_90a and sm_100a.
  std::vector<test::CompileVariant> vs;
  for (DType dt : {DType::bf16, DType::f32}) {
    const Pipeline p = jagged(dt, e4m3, true);
    for (const Schedule& s : schedule_candidates(p, t, order(1)))
      vs.push_back({fmt::format("{} {}", dtype_name(dt), s.str()), p, order(1), s});
  }
  const int compiled = test::compile_variants(vs);
  MESSAGE("compiled " << compiled << " jagged candidate schedules");
}

TEST_CASE("jagged groups: every variant compiles for sm_90a and sm_100a" * doctest::test_suite("slow")) {
  std::vector<test::CompileVariant> vs;
  for (ElemFormat f : {e4m3, e5m2, e2m3, e3m2, int8})
    for (int unit : {1, 0})
      vs.push_back({fmt::format("bf16 {} unit axis {}", f.str(), unit), jagged(DType::bf16, f, f == e4m3, 0), order(unit)});
  for (DType dt : {DType::f16, DType::f32})
    for (int unit : {1, 0})
      vs.push_back({fmt::format("{} unit axis {}", dtype_name(dt), unit), jagged(dt, e4m3, false, 0), order(unit)});
  vs.push_back({"prologue", jagged(DType::bf16, e4m3, false, 0, layout::row_major(), true), order(1)});
  vs.push_back({"stochastic rounding", jagged(DType::bf16, e4m3, false, 0, layout::row_major(), false, Round::stochastic), order(1)});
  vs.push_back({"groups along columns", jagged(DType::bf16, e4m3, true, 1), order(1)});
  vs.push_back({"lanes along the rows, stochastic rounding, prologue",
                jagged(DType::f16, e5m2, false, 1, layout::row_major(), true, Round::stochastic), order(1)});
  vs.push_back({"groups along columns, col-major", jagged(DType::bf16, e4m3, true, 1, layout::col_major()), order(0)});
  vs.push_back({"col-major codes", jagged(DType::bf16, e4m3, true, 0, layout::col_major()), order(1)});
  vs.push_back({"col-major codes, f32 e5m2", jagged(DType::f32, e5m2, false, 0, layout::col_major()), order(1)});
  vs.push_back({"col-major codes, prologue", jagged(DType::bf16, e4m3, false, 0, layout::col_major(), true), order(1)});
  vs.push_back({"col-major codes, stochastic rounding",
                jagged(DType::bf16, e4m3, false, 0, layout::col_major(), false, Round::stochastic), order(1)});
  vs.push_back({"col-major codes, int8", jagged(DType::f16, int8, false, 0, layout::col_major()), order(1)});
  vs.push_back({"col-major codes, cluster 2", jagged(DType::bf16, e4m3, true, 0, layout::col_major()), order(1), Schedule{.cluster = 2}});
  for (int r : {4, 16})
    vs.push_back({fmt::format("col-major codes, runs of {}", r), jagged(DType::bf16, e4m3, true, 0, layout::col_major()), order(1),
                  Schedule{.rows_per_thread = r}});
  for (int k : {2, 4, 8}) {  // clusters (sm_100a has them too)
    vs.push_back({fmt::format("cluster {}", k), jagged(DType::f32, e5m2, false, 0), order(1), Schedule{.cluster = k}});
  }
  const int compiled = test::compile_variants(vs);
  MESSAGE("compiled " << compiled << " jagged-group kernels");
}

TEST_CASE("jagged groups: FP32 scales storing the multiplier rounded to a power of two compile for sm_90a and sm_100a") {
  for (const char* arch : {"sm_90a", "sm_100a"})
    for (int unit : {0, 1}) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3, F32ScaleOptions{true, true});
      Pipeline p = pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("s", s)});
      CAPTURE(arch);
      CAPTURE(unit);
      const GeneratedKernel k = generate(p, Target::parse(arch), order(unit));
      CHECK(k.source.find("0xff800000u") != std::string::npos);  // the round-down
      CHECK(k.source.find("1.0f / mult") == std::string::npos);  // r itself is stored
      const CompiledKernel ck = compile(p, Target::parse(arch), order(unit));  // NVRTC (or the disk cache)
      CHECK_FALSE(ck.cubin.empty());
    }
}
