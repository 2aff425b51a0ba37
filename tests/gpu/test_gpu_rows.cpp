// The rows kernel (whole-axis blocks) on the GPU against the CPU reference byte for byte:
// rowwise and colwise FP32 scales (torchao's Float8 rowwise recipe, with and without its power-of-
// two multiplier) and E8M0 rules, lines shorter than a warp's registers, as long as a CTA's, and
// longer (read again for their codes), 3-D tensors with the middle or last axis whole, transposed
// codes, strided and unaligned inputs, several CTA shapes. Random then adversarial values (zeros,
// subnormals, +-Inf, NaN, maxima, ties), an all-zero line and a NaN line; outputs poisoned.
// Skips without a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "codegen/plan.hpp"
#include "dsl/peer_recipes.hpp"
#include "gpu/check.hpp"

using namespace mxjit;
using mxjit::detail::kShortWholeAxis;
using namespace mxjit::test;

namespace {

/// Runs `p` (input "x" of `dt`, domain `shape`, strides `strides` or compact) with random and
/// adversarial values, line 0 all zeros and one element of the last line NaN; returns bad bytes.
int64_t check(const Kernel& k, DType dt, const std::vector<int64_t>& shape, const std::string& label,
              const std::vector<int64_t>& strides = {}) {
  int64_t bad = 0;
  for (bool adversarial : {false, true}) {
    std::vector<HostTensor> in;
    in.emplace_back(dt, shape, strides);
    fill_random(in.back(), 0x7015 + shape.back() * 3 + int64_t(shape.size()), adversarial);
    bad += check_against_reference(k, in, fmt::format("{} [{}]{}", label, fmt::join(shape, ","), adversarial ? " adversarial" : ""));
  }
  return bad;
}

ScaleDef bf16_scales(ScaleDef d) {
  d.format = ScaleFormat::bf16;
  return d;
}

Pipeline rowwise(DType dt, int r, int axis, F32ScaleOptions o = {}, Layout q_layout = layout::row_major()) {
  auto x = input("x", dt, rank(r));
  auto s = f32_scale(amax(blocks(x, axis, kWholeAxis)), e4m3, o);
  return pipeline({output("q", cast(e4m3, x / s), q_layout), output("s", s)});
}

}  // namespace

TEST_CASE("rows kernel on the GPU: rowwise FP32 scales, lines short, CTA-long and longer (read twice)") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (DType dt : {DType::bf16, DType::f32})
    for (F32ScaleOptions o : {F32ScaleOptions{}, F32ScaleOptions{true, true}}) {
      const Kernel k = jit(rowwise(dt, 2, 1, o));
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 300}, {7, 5120}, {64, 8192}, {3, 9000}, {33, 1}, {130, 257}})
        bad += check(k, dt, shape, fmt::format("rowwise {} pow2={}", dtype_name(dt), o.pow2));
    }
  CHECK(bad == 0);
}

TEST_CASE("rows kernel on the GPU: colwise, 3-D per-(e, n) columns, transposed codes, strided inputs") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  bad += check(jit(rowwise(DType::bf16, 2, 0)), DType::bf16, {300, 40}, "colwise of a row-major input");
  bad += check(jit(rowwise(DType::bf16, 2, 1)), DType::bf16, {40, 300}, "rowwise of a column-major input", {1, 40});
  bad += check(jit(rowwise(DType::bf16, 2, 1)), DType::bf16, {9, 301}, "rowwise, odd row stride", {303, 1});
  // torchao's 3-D expert weights B_t (E, K, N) column-major per expert (memory (E, N, K)): K whole.
  bad += check(jit(rowwise(DType::bf16, 3, 1, {true, true}, layout::permuted({0, 2, 1}))), DType::bf16, {3, 640, 24},
               "3-D colwise over K, codes per-expert column-major", {640 * 24, 1, 640});
  // B (E, N, K) rowwise over N from B_t's memory: N whole, codes transposed.
  bad += check(jit(rowwise(DType::bf16, 3, 2, {true, true}, layout::permuted({0, 2, 1}))), DType::bf16, {2, 96, 520},
               "3-D rowwise over the last axis, transposed codes");
  bad += check(jit(rowwise(DType::f32, 1, 0)), DType::f32, {4099}, "rank 1");
  CHECK(bad == 0);
}

TEST_CASE("rows kernel on the GPU: E8M0 rules, FP4 and FP6 codes, a product prologue, CTA shapes") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::even})
    for (ElemFormat f : {e4m3, e5m2, e2m3, e2m1}) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = e8m0_scale(amax(blocks(x, 1, kWholeAxis)), f, rule);
      const Pipeline p = pipeline({output("q", cast(f, x / s)), output("s", s)});
      bad += check(jit(p), DType::bf16, {17, 1000}, fmt::format("{} {}", f.str(), int(rule)));
    }
  {
    auto x = input("x", DType::bf16, rank(2));
    auto y = input("y", DType::bf16, rank(2));
    auto v = x * y;
    auto s = f32_scale(amax(blocks(v, 1, kWholeAxis)), e4m3);
    const Kernel k = jit(pipeline({output("q", cast(e4m3, v / s)), output("s", s)}));
    for (bool adversarial : {false, true}) {
      std::vector<HostTensor> in;
      in.emplace_back(DType::bf16, std::vector<int64_t>{12, 2100});
      in.emplace_back(DType::bf16, std::vector<int64_t>{12, 2100});
      fill_random(in[0], 11, adversarial);
      fill_random(in[1], 12, false);
      bad += check_against_reference(k, in, fmt::format("product prologue{}", adversarial ? " adversarial" : ""));
    }
  }
  for (const char* tu : {"tune(threads=32, chunks_per_thread=1)", "tune(threads=64, chunks_per_thread=2)",
                         "tune(threads=1024, chunks_per_thread=8, ctas_per_sm=1)"}) {
    const Kernel k = jit(rowwise(DType::bf16, 2, 1), current_target(), Schedule::parse(tu));
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 300}, {9, 5120}, {2, 70000}})
      bad += check(k, DType::bf16, shape, tu);
  }
  CHECK(bad == 0);
}

TEST_CASE("rows kernel on the GPU: the peers' scale definitions per whole row and column, Saturate::none") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  const std::pair<const char*, ScaleDef> defs[] = {
      {"vllm", recipes::vllm_group(e4m3, false)},          {"vllm ue8m0", recipes::vllm_group(e4m3, true)},
      {"sglang", recipes::sglang_group(e4m3, false)},      {"te pow2", recipes::transformer_engine(e4m3, true)},
      {"te", recipes::transformer_engine(e4m3, false)},    {"torchao blockwise", recipes::torchao_blockwise(e4m3)},
      {"deepgemm ue8m0", recipes::deepgemm(e4m3, true)}, {"te bf16 scales", bf16_scales(recipes::transformer_engine(e4m3, false))}};
  for (const auto& [name, def] : defs)
    for (int axis : {1, 0}) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = scale(amax(blocks(x, axis, kWholeAxis)), e4m3, def);
      const Saturate sat = std::string(name).starts_with("deepgemm") ? Saturate::none : Saturate::finite;
      const Pipeline p = pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, sat)), output("s", s)});
      bad += check(jit(p), DType::bf16, {70, 900}, fmt::format("{} along axis {}", name, axis));
    }
  CHECK(bad == 0);
}

TEST_CASE("rows kernel on the GPU: lines of no element (their scales are a zero block's), no lines, and both") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (int axis : {1, 0})
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 0}, {0, 7}, {0, 0}}) {
      const Kernel k = jit(rowwise(DType::bf16, 2, axis));
      std::vector<HostTensor> in;
      in.emplace_back(DType::bf16, shape);
      bad += check_against_reference(k, in, fmt::format("whole axis {} of [{}]", axis, fmt::join(shape, ",")), shape);
    }
  CHECK(bad == 0);
}

TEST_CASE("rows kernel on the GPU: the across form on 16-byte columns (colwise, torchao's transposed 3-D rowwise), tunings") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  const bool clusters = current_target().sm() >= 90;
  // 2-D colwise of a row-major input: the whole axis split over a cluster's CTAs (parts of 16-row
  // multiples, some empty), lines past a thread's 8 (77 of a padded row), one tile of lines.
  std::vector<std::string> tunings = {"tune()", "tune(ctas_per_sm=2)", "tune(tile_cols=128, threads=512, ctas_per_sm=1)",
                                      "tune(rows_in_flight=2, ctas_per_sm=8, tile_cols=32)"};
  if (clusters) tunings.insert(tunings.end(), {"tune(cluster=2)", "tune(cluster=8, tile_cols=32)"});
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const std::string& tu : tunings) {
      if (dt != DType::bf16 && tu != "tune()" && tu != "tune(ctas_per_sm=2)") continue;
      for (bool cm : {false, true}) {
        const Kernel k = jit(rowwise(dt, 2, 0, {true, true}, cm ? layout::col_major() : layout::row_major()), current_target(),
                             Schedule::parse(tu));
        const std::string l = fmt::format("colwise {} {}{}", dtype_name(dt), tu, cm ? " col-major codes" : "");
        bad += check(k, dt, {1100, 96}, l);
        bad += check(k, dt, {3001, 77}, l, {80, 1});
        bad += check(k, dt, {7, 520}, l);
        bad += check(k, dt, {1, 64}, l);
        bad += check(k, dt, {12000, 64}, l);  // the launch's cluster at its largest (8 parts)
      }
    }
  // 3-D, K whole, N unit-stride (one scale per (e, n)): codes along N, or along K (pass 2 in runs
  // of 8, 4 or 16 positions transposed in registers); the E axis on grid y. (A schedule applies
  // exactly to contiguous inputs, so these take the tunings.)
  for (DType dt : {DType::bf16, DType::f32})
    for (const std::string tu : {"tune()", "tune(tile_cols=64, rows_per_thread=16)", "tune(rows_per_thread=4, ctas_per_sm=4)", "tune(cluster=4)"}) {
      if (!clusters && tu == "tune(cluster=4)") continue;
      for (bool along_k : {false, true}) {
        if (!along_k && tu.find("rows_per_thread") != std::string::npos) continue;
        const Kernel k = jit(rowwise(dt, 3, 1, {true, true}, along_k ? layout::permuted({0, 2, 1}) : layout::row_major()), current_target(),
                             Schedule::parse(tu));
        const std::string l = fmt::format("3-D colwise over K {} {}{}", dtype_name(dt), tu, along_k ? " codes along K" : "");
        bad += check(k, dt, {3, 1000, 96}, l);
        bad += check(k, dt, {2, 523, 77}, l, {523 * 80, 80, 1});
        bad += check(k, dt, {1, 17, 40}, l);
        bad += check(k, dt, {2, 5000, 40}, l);  // clusters of 4 to 16 chosen at launch
        bad += check(k, dt, {1, 9001, 72}, l);  // 16 parts of 576 rows, the last one short
        // Codes along K in 8-byte runs where K's stride allows: parts past the row cache (cluster=4)
        // mix cached runs with re-read ones; 40 lines leave a thread of the tile columnless.
        bad += check(k, dt, {1, 9000, 72}, l);
        bad += check(k, dt, {2, 4096, 40}, l);
      }
    }
  // torchao's B_t (E, K, N) with K unit-stride (memory (E, N, K)), one scale per (e, k) over N,
  // codes along N (the transposed rowwise of the MoE backward).
  for (DType dt : {DType::bf16, DType::f32}) {
    const Kernel k = jit(rowwise(dt, 3, 2, {true, true}));
    const std::string l = fmt::format("3-D transposed rowwise {}", dtype_name(dt));
    bad += check(k, dt, {3, 96, 1000}, l, {96 * 1000, 1, 96});
    bad += check(k, dt, {2, 77, 523}, l, {80 * 523, 1, 80});
    bad += check(k, dt, {1, 40, 17}, l, {40 * 17, 1, 40});
    // Short whole axes (at most kShortWholeAxis): the short schedule (128 threads, 8 CTAs per SM).
    bad += check(k, dt, {8, 520, 128}, l, {520 * 128, 1, 520});
    bad += check(k, dt, {2, 96, kShortWholeAxis}, l, {96 * kShortWholeAxis, 1, 96});
    bad += check(k, dt, {3, 40, kShortWholeAxis - 1}, l, {40 * (kShortWholeAxis - 1), 1, 40});
    bad += check(k, dt, {2, 72, kShortWholeAxis + 1}, l, {72 * (kShortWholeAxis + 1), 1, 72});
  }
  for (int64_t n : {int64_t(129), kShortWholeAxis})
    bad += check(jit(rowwise(DType::bf16, 2, 0, {true, true})), DType::bf16, {n, 600}, fmt::format("colwise, a short whole axis of {}", n));
  // An E8M0 rule per whole column.
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 0, kWholeAxis)), e4m3, ScaleRule::rceil);
  bad += check(jit(pipeline({output("q", cast(e4m3, x / s)), output("s", s)})), DType::bf16, {700, 136}, "colwise E8M0 rceil");
  CHECK(bad == 0);
}
