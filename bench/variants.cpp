// mxjit_variants: compiles a fixed list of kernel variants (the generator's test variants, the
// benchmark's cases, the schedules the tuner tries) for sm_90a and sm_100a and writes each cubin
// as <dir>/<arch>/<variant>.cubin, or <variant>.refused with the UsageError's text. Needs no GPU.
// scripts/sass_diff.sh disassembles two such folders and compares their instruction streams: a
// generator refactor that claims "behaviour unchanged" shows it there.
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "mxjit/mxjit.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;

namespace {

// A schedule in the words of the variant list (0 / -1: the default).
struct Tune {
  int tile_r = 0, tile_c = 0, threads = 0, min_blocks = 0, hoist = -1, col_w = 0, unroll = 0;
  bool force_tiled = false;
  int cluster = 0, stages = 0;
};

// The schedule of a Tune (written in the words of generator 23's positional tuning, so that the
// list stays the same across the rename): a tile or force_tiled asks for the tiled kernel; unroll
// was the direct kernel's chunks per thread and the jagged kernel's rows in flight. (`jagged`: the
// jagged kernel's words, which the rows kernel's across form on columns takes too.)
Schedule to_schedule(const Tune& t, bool jagged) {
  Schedule s;
  if (t.force_tiled || (!jagged && (t.tile_r || t.tile_c))) s.kernel = KernelKind::tiled;
  s.tile_rows = t.tile_r, s.tile_cols = t.tile_c, s.threads = t.threads, s.ctas_per_sm = t.min_blocks, s.hoist_loads = t.hoist;
  s.rows_per_thread = t.col_w, s.cluster = t.cluster, s.stages = t.stages;
  (jagged ? s.rows_in_flight : s.chunks_per_thread) = t.unroll;
  return s;
}

std::string tune_name(const Tune& t) {
  return fmt::format("tr{}_tc{}_th{}_mb{}_h{}_cw{}_u{}_f{}_k{}_s{}", t.tile_r, t.tile_c, t.threads, t.min_blocks, t.hoist, t.col_w,
                     t.unroll, int(t.force_tiled), t.cluster, t.stages);
}

struct Variant {
  std::string name;
  Pipeline p;
  detail::StrideClass sc;
  Tune tune;
};

Pipeline cast2d(int axis, ElemFormat f, ScaleRule rule, Layout q, Layout s, DType dt = DType::bf16, int64_t block = 32) {
  auto x = input("x", dt, rank(2));
  auto sc = e8m0_scale(amax(blocks(x, axis, block)), f, rule);
  return pipeline({output("q", cast(f, x / sc), q), output("s", sc, s)});
}
Pipeline fused(Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q0", cast(e4m3, x / s0)), output("s0", s0, s), output("q1", cast(e4m3, x / s1), layout::col_major()),
                   output("s1", s1, s)});
}
Pipeline expert(Layout s) {
  auto x = input("x", DType::bf16, rank(3));
  auto sc = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", cast(e4m3, x / sc), layout::expert_col_major()), output("s", sc, s)});
}
Pipeline prologue(const std::string& kind, bool fuse) {
  auto x = input("x", DType::bf16, rank(2));
  Expr v = x;
  if (kind == "swiglu") v = swiglu(x, input("up", DType::bf16, rank(2)));
  else if (kind == "vec") v = x * vec("w", DType::bf16, 1, rank(2));
  else v = gelu(x, Gelu::tanh);
  if (!fuse) return pipeline({output("y", v, DType::bf16)});
  auto sc = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", cast(e4m3, v / sc)), output("s", sc)});
}
Pipeline nvfp4(Nvfp4Convention c, int axis, Layout q, Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = nvfp4_scale(amax(blocks(x, axis, 16)), c);
  return pipeline({output("q", cast(e2m1, x / sc), q), output("s", sc, s)});
}
// The NVFP4 tensor-amax pre-pass the runtime launches before an NVFP4 cast.
Pipeline nvfp4_prepass() {
  auto x = input("x", DType::bf16, rank(2));
  return pipeline({output("tamax", amax(x))});
}
Pipeline jagged(DType dt, ElemFormat f, bool f32_scales, int group_axis = 0, Layout codes = layout::row_major(), bool pro = false,
                Round rnd = Round::nearest_even) {
  auto x = input("x", dt, rank(2));
  Expr v = pro ? gelu(x * 0.75, Gelu::tanh) : Expr(x);
  Scale s = f32_scales ? f32_scale(amax(groups(v, group_axis, offsets("offs"))), f)
                       : e8m0_scale(amax(groups(v, group_axis, offsets("offs"))), f, ScaleRule::rceil);
  CastOptions o;
  o.seed = 3;
  return pipeline({output("q", cast(f, v / s, rnd, Saturate::finite, o), codes), output("s", s)});
}
Pipeline grouped_layout(DType dt, int block_axis, int group_axis, bool nv) {
  auto x = input("x", dt, rank(2));
  const Layout q = block_axis == 1 ? layout::row_major() : layout::col_major();
  const Layout g = layout::grouped_blocked_128x4(offsets("offs"), group_axis);
  if (nv) {
    auto s = nvfp4_scale(amax(blocks(x, block_axis, 16)), Nvfp4Convention::te);
    return pipeline({output("q", cast(e2m1, x / s), q), output("s", s, g)});
  }
  auto s = e8m0_scale(amax(blocks(x, block_axis, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", cast(e4m3, x / s), q), output("s", s, g)});
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  auto add = [&](std::string name, const Pipeline& p, detail::StrideClass sc = {}, Tune t = {}) {
    if (sc.unit_axis.empty()) sc = detail::default_stride_class(p);
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    v.push_back({std::move(name), p, std::move(sc), t});
  };
  // tests/codegen/test_codegen.cpp's variants.
  for (ElemFormat f : {e4m3, e5m2, e2m3, e3m2, e2m1, int8})
    for (ScaleRule r : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even}) {
      const std::string rn = r == ScaleRule::floor ? "floor" : r == ScaleRule::rceil ? "rceil" : r == ScaleRule::ceil ? "ceil" : "even";
      add("dim0_" + f.str() + "_" + rn, cast2d(1, f, r, layout::row_major(), layout::linear()));
      add("dim1_" + f.str() + "_" + rn + "_blocked", cast2d(0, f, r, layout::col_major(), layout::blocked_128x4()));
      if (r == ScaleRule::rceil) add("dim0_" + f.str() + "_" + rn + "_blocked", cast2d(1, f, r, layout::row_major(), layout::blocked_128x4()));
    }
  add("expert3d_blocked", expert(layout::blocked_128x4()));
  add("expert3d_linear", expert(layout::linear()));
  add("fused_linear", fused(layout::linear()));
  add("fused_blocked", fused(layout::blocked_128x4()));
  add("dim1_e4m3_rceil_linear", cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear()));
  add("dim1_e2m1_floor_linear", cast2d(0, e2m1, ScaleRule::floor, layout::col_major(), layout::linear()));
  // Other stride classes.
  const Pipeline d0 = cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear());
  const Pipeline d1 = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear());
  add("dim0_sc_colmajor", d0, {{0}, {true}});
  add("dim0_sc_unaligned", d0, {{1}, {false}});
  add("dim0_sc_nounit", d0, {{-1}, {false}});
  add("dim1_sc_colmajor", d1, {{0}, {true}});
  add("dim1_sc_unaligned", d1, {{1}, {false}});
  for (DType dt : {DType::f16, DType::f32}) {
    add(fmt::format("dim0_{}", dtype_name(dt)), cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear(), dt));
    add(fmt::format("dim1_{}", dtype_name(dt)), cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear(), dt));
  }
  for (int64_t blk : {8, 16, 64, 128}) {
    add(fmt::format("dim0_block{}_blocked", blk), cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4(), DType::bf16, blk));
    add(fmt::format("dim0_block{}_blocked8x4_e2m1", blk), cast2d(1, e2m1, ScaleRule::rceil, layout::row_major(), layout::blocked_8x4(), DType::bf16, blk));
  }
  // The benchmark's other cases.
  for (const char* k : {"swiglu", "vec", "gelu"}) {
    add(std::string("prologue_fused_") + k, prologue(k, true));
    add(std::string("prologue_unfused_") + k, prologue(k, false));
  }
  for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    const std::string cn = c == Nvfp4Convention::te ? "te" : "torchao";
    add("nvfp4_" + cn + "_dim0_blocked", nvfp4(c, 1, layout::row_major(), layout::blocked_128x4()));
    add("nvfp4_" + cn + "_dim1_blocked", nvfp4(c, 0, layout::col_major(), layout::blocked_128x4()));
    add("nvfp4_" + cn + "_dim0_linear", nvfp4(c, 1, layout::row_major(), layout::linear()));
  }
  add("nvfp4_prepass", nvfp4_prepass());
  {
    auto x = input("x", DType::bf16, rank(2));
    auto sc = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
    CastOptions o;
    o.seed = 42;
    add("stochastic_e4m3", pipeline({output("q", cast(e4m3, x / sc, Round::stochastic, Saturate::finite, o)), output("s", sc)}));
    auto s2 = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
    add("blocks2d_both", pipeline({output("q", cast(e4m3, x / s2)), output("q_t", cast(e4m3, x / s2), layout::col_major()),
                                   output("s", s2)}));
    add("amax_values", pipeline({output("y", x * x, DType::f32), output("a", amax(x))}));
  }
  add("dequant_e4m3", pipeline({output("y", dequantize("q", "s", e4m3, ScaleFormat::e8m0, rank(2), 1, 32), DType::bf16)}));
  add("dequant_e2m1", pipeline({output("y", dequantize("q", "s", e2m1, ScaleFormat::e8m0, rank(2), 1, 32), DType::bf16)}));
  // Grouped scale layouts (tests/codegen/test_grouped_codegen.cpp).
  for (int ba : {1, 0})
    for (int ga : {0, 1}) {
      for (DType dt : {DType::bf16, DType::f32})
        for (bool cm : {false, true})
          add(fmt::format("grouped_dim{}_g{}_{}_{}", 1 - ba, ga, dtype_name(dt), cm ? "cm" : "rm"), grouped_layout(dt, ba, ga, false),
              {{cm ? 0 : 1, 0}, {true, false}});
      add(fmt::format("grouped_nvfp4_dim{}_g{}", 1 - ba, ga), grouped_layout(DType::bf16, ba, ga, true), {{1, 0}, {true, false}});
    }
  // Jagged groups (tests/codegen/test_jagged_codegen.cpp).
  auto order = [](int unit) { return detail::StrideClass{{unit, 0}, {true, false}}; };
  for (ElemFormat f : {e4m3, e5m2, e2m3, e3m2, int8})
    for (int unit : {1, 0}) add(fmt::format("jagged_bf16_{}_u{}", f.str(), unit), jagged(DType::bf16, f, f == e4m3), order(unit));
  for (DType dt : {DType::f16, DType::f32})
    for (int unit : {1, 0}) add(fmt::format("jagged_{}_u{}", dtype_name(dt), unit), jagged(dt, e4m3, false), order(unit));
  add("jagged_prologue", jagged(DType::bf16, e4m3, false, 0, layout::row_major(), true), order(1));
  add("jagged_sr", jagged(DType::bf16, e4m3, false, 0, layout::row_major(), false, Round::stochastic), order(1));
  add("jagged_cols", jagged(DType::bf16, e4m3, true, 1), order(1));
  add("jagged_cols_cm", jagged(DType::bf16, e4m3, true, 1, layout::col_major()), order(0));
  add("jagged_cm_codes", jagged(DType::bf16, e4m3, true, 0, layout::col_major()), order(1));
  add("jagged_f32_flush", jagged(DType::f32, e4m3, true), order(1));
  // Whole-axis blocks (the rows kernel; tests/codegen/test_rows_codegen.cpp): lines along the
  // unit-stride axis, lines across it on 16-byte columns (codes along the lines, or along the whole
  // axis: the transposed rowwise's contiguous twin), a lane per line where no axis is unit-stride.
  auto whole = [](DType dt, int r, int axis, Layout q) {
    auto x = input("x", dt, rank(r));
    auto sc = f32_scale(amax(blocks(x, axis, kWholeAxis)), e4m3, {true, true});
    return pipeline({output("q", cast(e4m3, x / sc), q), output("s", sc)});
  };
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    add(fmt::format("rows_along_{}", dtype_name(dt)), whole(dt, 2, 1, layout::row_major()));
    add(fmt::format("rows_across_{}", dtype_name(dt)), whole(dt, 2, 0, layout::row_major()));
    add(fmt::format("rows_across_codes_along_axis_{}", dtype_name(dt)), whole(dt, 3, 1, layout::permuted({0, 2, 1})));
  }
  add("rows_along_3d", whole(DType::bf16, 3, 2, layout::row_major()));
  add("rows_lanes", whole(DType::bf16, 2, 0, layout::row_major()), {{-1}, {false}});
  {
    auto x = input("x", DType::bf16, rank(2));
    auto sc = e8m0_scale(amax(blocks(x, 1, kWholeAxis)), e2m1, ScaleRule::floor);
    add("rows_along_e8m0_e2m1", pipeline({output("q", cast(e2m1, x / sc)), output("s", sc)}));
  }
  // Schedules: a sample of what the tuner tries, and the GPU tests' own.
  auto tiled_set = [&](const std::string& n, const Pipeline& p) {
    for (auto [tr, mb, w] : {std::array{32, 2, 16}, std::array{64, 4, 32}, std::array{64, 3, 16}})
      add(n, p, {}, Tune{.tile_r = tr, .tile_c = 128, .min_blocks = mb, .hoist = 1, .col_w = w, .force_tiled = true});
  };
  const Pipeline d0b = cast2d(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4());
  const Pipeline d0f4 = cast2d(1, e2m1, ScaleRule::floor, layout::row_major(), layout::linear());
  for (const auto& [n, p] : {std::pair{std::string("dim0_e4m3_blocked"), d0b}, std::pair{std::string("dim0_e2m1_linear"), d0f4}})
    for (auto [u, mb] : {std::pair{1, 8}, std::pair{2, 6}, std::pair{8, 4}, std::pair{4, 6}}) add(n, p, {}, Tune{.min_blocks = mb, .unroll = u});
  tiled_set("dim0_e4m3_blocked", d0b);
  const Pipeline d1b = cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4());
  for (const auto& [n, p] : {std::pair{std::string("dim1_blocked"), d1b}, std::pair{std::string("fused_blocked"), fused(layout::blocked_128x4())},
                             std::pair{std::string("expert3d_blocked"), expert(layout::blocked_128x4())}})
    for (auto [rows, mb, st] : {std::array{8, 0, 1}, std::array{16, 3, 1}, std::array{8, 0, 2}, std::array{16, 0, 2}, std::array{8, 2, 3},
                                std::array{16, 2, 2}, std::array{8, 4, 2}})
      add(n, p, {}, Tune{.min_blocks = mb, .col_w = rows, .stages = st});
  tiled_set("fused_blocked", fused(layout::blocked_128x4()));
  add("fused_linear", fused(layout::linear()), {}, Tune{.stages = 2});
  add("dim1_blocked", d1b, {{1}, {false}}, Tune{.col_w = 8});
  add("dim1_f16_linear", cast2d(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear(), DType::f16), {},
      Tune{.min_blocks = 1, .col_w = 16, .stages = 2});
  for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
    const Pipeline p = jagged(dt, e4m3, true);
    const std::string n = fmt::format("jagged_{}", dtype_name(dt));
    for (auto [w, th, u, mb, k] : {std::array{128, 512, 3, 1, 0}, std::array{256, 64, 1, 1, 0}, std::array{32, 256, 5, 8, 2},
                                   std::array{64, 128, 4, 4, 8}, std::array{64, 256, 0, 4, 0}, std::array{32, 256, 2, 8, 2},
                                   std::array{64, 0, 0, 0, 4}, std::array{128, 0, 4, 3, 0}, std::array{128, 0, 8, 2, 2}})
      add(n, p, order(1), Tune{.tile_c = w, .threads = th, .min_blocks = mb, .unroll = u, .cluster = k});
  }
  const Pipeline across_k = whole(DType::bf16, 3, 1, layout::permuted({0, 2, 1}));
  for (auto [w, mb, rows, k] : {std::array{64, 3, 16, 16}, std::array{64, 4, 4, 4}, std::array{32, 0, 0, 8}})
    add("rows_across_codes_along_axis_bf16", across_k, {},
        Tune{.tile_c = w, .min_blocks = mb, .col_w = rows, .cluster = k});
  add("rows_across_bf16", whole(DType::bf16, 2, 0, layout::row_major()), {}, Tune{.min_blocks = 2, .cluster = 4});
  add("rows_along_bf16", whole(DType::bf16, 2, 1, layout::row_major()), {}, Tune{.min_blocks = 5, .unroll = 5});
  for (Variant& x : v)
    if (x.tune.tile_r || x.tune.tile_c || x.tune.threads || x.tune.min_blocks || x.tune.hoist != -1 || x.tune.col_w || x.tune.unroll ||
        x.tune.force_tiled || x.tune.cluster || x.tune.stages)
      x.name += "__" + tune_name(x.tune);
  std::set<std::string> names;
  for (const Variant& x : v)
    if (!names.insert(x.name).second) throw Error("mxjit_variants: two variants named " + x.name);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: mxjit_variants <out dir>  (writes <out>/<arch>/<variant>.cubin or .refused)\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const std::vector<Variant> vs = variants();
  struct Job {
    const Variant* v;
    std::string arch;
  };
  std::vector<Job> jobs;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    fs::create_directories(fs::path(argv[1]) / arch);
    for (const Variant& v : vs) jobs.push_back({&v, arch});
  }
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const Job& j = jobs[i];
      const fs::path base = fs::path(argv[1]) / j.arch / j.v->name;
      try {
        detail::CompileOptions o;
        o.schedule = to_schedule(j.v->tune, j.v->name.starts_with("jagged") || j.v->name.starts_with("rows_across"));
        const detail::CompiledKernel k = detail::compile(j.v->p, Target::parse(j.arch), j.v->sc, o);
        std::ofstream(base.string() + ".cubin", std::ios::binary) << k.cubin;
      } catch (const UsageError& e) {
        std::ofstream(base.string() + ".refused") << e.what() << "\n";
      } catch (const std::exception& e) {
        fmt::print(stderr, "{} {}: {}\n", j.arch, j.v->name, e.what());
        ++failed;
      }
    }
  };
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < n; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  fmt::print("{} variants x 2 arches, {} failed\n", vs.size(), failed.load());
  return failed ? 1 : 0;
}
