// Generic scale definitions on the GPU (codegen/scale_expr_cuda.hpp), every byte against the
// reference with poisoned outputs: each peer recipe of dsl/peer_recipes.hpp (DeepGEMM, vLLM,
// SGLang, Transformer Engine, torchao) for E4M3 and E5M2, with and without power-of-two scales
// (also stored as E8M0), in 1x128 groups, 128x1 groups and 128x128 tiles, through every kernel
// kind that takes them, on random data and on blocks made adversarial one by one: all zero, a
// NaN, all NaN, NaN beside -0, +-Inf, amax below the recipe's floor, amax exactly 448 * 2^k, subnormals, magnitudes
// across 40 binades; shapes with tails that are not a multiple of 128, 3-D batches, and jagged
// groups of rows (MoE token groups) in the vector and scalar jagged kernels. Skips
// (one line per test) without a GPU.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "codegen/emit.hpp"
#include "gpu/check.hpp"
#include "runtime/compile.hpp"
#include "support/peer_casts.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

using Shape = PeerShape;

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void put(HostTensor& t, int64_t i, float f) {
  if (t.v.dtype == DType::f32) return void(std::memcpy(t.bytes.data() + 4 * i, &f, 4));
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t h = uint16_t(u >> 16);  // exact for the values below (bf16-representable)
  std::memcpy(t.bytes.data() + 2 * i, &h, 2);
}

/// Fills a contiguous rank-2/3 tensor so that its (br x bc) blocks (per batch) are each one kind:
/// all zero, one NaN, +Inf, -Inf, amax below every peer's floor, amax exactly 448 * 2^k,
/// subnormals only, all NaN, NaN in every other column beside -0, or random magnitudes scaled by
/// 2^-20 .. 2^19.
void fill_blocks(HostTensor& t, int64_t br, int64_t bc, uint64_t seed) {
  const auto& sh = t.v.shape;
  const int64_t R = sh[sh.size() - 2], C = sh.back(), B = t.v.numel() / std::max<int64_t>(R * C, 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t i = (b * R + r) * C + c;
        const uint64_t key = mix(seed ^ uint64_t((b * 1000003 + r / br) * 1000003 + c / bc));
        const bool first = r % br == 0 && c % bc == 0;  // the block's first element exists in any tail
        const uint64_t h = mix(key ^ uint64_t(i));
        const float m = 1.0f + float(h % 1000) / 1000.0f, sg = (h >> 20) & 1 ? -1.0f : 1.0f;
        const int k = int((key >> 8) % 20) - 10;
        float f = 0;
        switch (key % 11) {
          case 0: f = 0; break;
          case 1: f = first ? NAN : sg * m; break;
          case 2: f = first ? INFINITY : sg * m; break;
          case 3: f = first ? -INFINITY : sg * m * 1024.0f; break;
          case 4: f = sg * m * std::ldexp(1.0f, -44 - int(h % 8)); break;  // amax ~1e-13: under every floor
          case 5: f = first ? sg * std::ldexp(448.0f, k) : sg * std::ldexp(m, k + 7); break;  // |x| < 448 * 2^k
          case 6: f = sg * std::ldexp(m, -133 + int(h % 6)); break;  // subnormal
          case 7: f = first ? std::ldexp(0.875f, 128) * sg : sg * m; break;  // near FLT_MAX
          case 8: f = NAN; break;  // every element NaN (NaN-skipping amaxes see none)
          case 9: f = c % 2 == 0 ? NAN : (c % 4 == 1 ? -0.0f : sg * m); break;  // NaN lanes beside -0 and values
          default: f = sg * std::ldexp(m, int((key >> 16) % 40) - 20); break;
        }
        put(t, i, f);
      }
}

int64_t run(const Pipeline& p, const Schedule& s, DType dt, std::vector<int64_t> shape, int64_t br, int64_t bc, uint64_t seed,
            bool structured, const std::string& label) {
  std::vector<HostTensor> in;
  in.emplace_back(dt, shape);
  if (structured) fill_blocks(in.back(), br, bc, seed);
  else fill_random(in.back(), seed, true);
  return check_against_reference(jit(p, current_target(), s), in,
                                 fmt::format("{} [{}]{}", label, fmt::join(shape, ","), structured ? " blocks" : " random"));
}

}  // namespace

TEST_CASE("generic scales gpu: every peer recipe, E4M3 and E5M2, 1x128 / 128x1 / 128x128, random and adversarial blocks") {
  MXJIT_REQUIRE_GPU();
  int n = 0;
  std::vector<Pipeline> all;
  for (ElemFormat elem : {e4m3, e5m2})
    for (const PeerDef& d : peer_defs(elem))
      for (Shape shape : {Shape::dim0, Shape::dim1, Shape::tiles})
        for (int r : {2, 3}) all.push_back(peer_cast(d, elem, shape, DType::bf16, r));
  warmup(all, current_target());
  for (ElemFormat elem : {e4m3, e5m2})
    for (const PeerDef& d : peer_defs(elem))
      for (Shape shape : {Shape::dim0, Shape::dim1, Shape::tiles}) {
        const int64_t br = shape == Shape::dim0 ? 1 : 128, bc = shape == Shape::dim1 ? 1 : 128;
        const std::string label = fmt::format("{} {} {}", d.name, elem.str(), shape_name(shape));
        // The kernel the planner picks, and the tiled kernel for every shape.
        for (KernelKind kind : {KernelKind::automatic, KernelKind::tiled}) {
          Schedule s;
          s.kernel = kind;
          const Pipeline p2 = peer_cast(d, elem, shape, DType::bf16, 2);
          const std::string l = label + (kind == KernelKind::tiled ? " tiled" : "");
          CHECK(run(p2, s, DType::bf16, {256, 384}, br, bc, 1 + n, false, l) == 0);
          CHECK(run(p2, s, DType::bf16, {256, 384}, br, bc, 2 + n, true, l) == 0);
          CHECK(run(p2, s, DType::bf16, {130, 200}, br, bc, 3 + n, true, l) == 0);
          CHECK(run(peer_cast(d, elem, shape, DType::bf16, 3), s, DType::bf16, {3, 130, 200}, br, bc, 4 + n, true, l) == 0);
        }
        // FP32 inputs (FP32 subnormals, amaxes that are no bf16).
        CHECK(run(peer_cast(d, elem, shape, DType::f32, 2), {}, DType::f32, {130, 264}, br, bc, 5 + n, true, label + " f32") == 0);
        ++n;
      }
  MESSAGE("peer casts checked: " << n);
}

TEST_CASE("generic scales gpu: non-saturating casts past the overflow bound (chunks with and without it)") {
  MXJIT_REQUIRE_GPU();
  // The scale max(amax, 1e-4) / M maps a block's amax to M = 480 (E4M3: past 464, so NaN) or
  // 63488 (E5M2: past 61440, so Inf): the chunk holding the amax takes the non-saturating pairs,
  // the others (no |y| past the bound) the bare satfinite cvt (mx_fp8_no_overflow).
  int n = 0;
  for (ElemFormat elem : {e4m3, e5m2}) {
    const double m = elem == e4m3 ? 480.0 : 63488.0;
    PeerDef d{fmt::format("nosat amax -> {}", m), {}, Saturate::none};
    d.def.stored = max(amax_var(), 1e-4) * double(1.0f / float(m));
    for (Shape shape : {Shape::dim0, Shape::dim1, Shape::tiles})
      for (KernelKind kind : {KernelKind::automatic, KernelKind::tiled}) {
        const int64_t br = shape == Shape::dim0 ? 1 : 128, bc = shape == Shape::dim1 ? 1 : 128;
        Schedule sc;
        sc.kernel = kind;
        const std::string l =
            fmt::format("{} {} {}{}", d.name, elem.str(), shape_name(shape), kind == KernelKind::tiled ? " tiled" : "");
        CHECK(run(peer_cast(d, elem, shape, DType::bf16, 2), sc, DType::bf16, {256, 384}, br, bc, 31 + n, false, l) ==
              0);
        CHECK(run(peer_cast(d, elem, shape, DType::bf16, 2), sc, DType::bf16, {130, 200}, br, bc, 32 + n, true, l) ==
              0);
        CHECK(run(peer_cast(d, elem, shape, DType::bf16, 3), sc, DType::bf16, {3, 130, 200}, br, bc, 33 + n, true, l) ==
              0);
        CHECK(run(peer_cast(d, elem, shape, DType::f32, 2), sc, DType::f32, {130, 264}, br, bc, 34 + n, true,
                  l + " f32") == 0);
        ++n;
      }
  }
  MESSAGE(n << " non-saturating casts");
}

TEST_CASE("generic scales gpu: one scale a lane (reduce-scattered amaxes), every block size, lanes above and below rows") {
  MXJIT_REQUIRE_GPU();
  // DirectPlan::scatter_scales for definitions that flag no block: G = block / 8 lanes, U rows a
  // thread; U % G == 0 (each lane owns U / G rows) or G % U == 0 (G / U lanes share a row, the
  // first stores it). A flagged definition beside it takes the all-reduce form.
  std::vector<PeerDef> defs;
  for (const PeerDef& d : peer_defs(e4m3)) defs.push_back(d);
  PeerDef flagged{"deepgemm, zero_if amax < 1e-6", recipes::deepgemm(e4m3, false), Saturate::none};
  flagged.def.zero_if = amax_var() < 1e-6;
  defs.push_back(flagged);
  PeerDef e8{"deepgemm ue8m0 as e8m0", recipes::deepgemm(e4m3, true), Saturate::none};
  e8.def.format = ScaleFormat::e8m0;
  defs.push_back(e8);
  int n = 0, gathered = 0;
  for (const PeerDef& d : defs)
    for (int64_t b : {16, 32, 64, 128, 256})
      for (int u : {0, 1, 8}) {
        Schedule sched;
        sched.chunks_per_thread = u;
        for (const Layout& sl : {layout::col_major(), layout::mn_major_tma_packed()}) {
          if (sl == layout::mn_major_tma_packed() && d.def.format != ScaleFormat::e8m0) continue;
          auto x = input("x", DType::bf16, rank(3));
          auto sc = scale(amax(blocks(x, 2, b)), e4m3, d.def);
          const Pipeline p = pipeline({output("q", cast(e4m3, x / sc, Round::nearest_even, d.sat)), output("s", sc, sl)});
          const detail::Plan plan = detail::make_plan(p, current_target(), detail::default_stride_class(p), sched);
          REQUIRE(plan.kind == KernelKind::direct);
          gathered += plan.direct().scatter_scales[0];
          const std::string label = fmt::format("{} blocks {} chunks_per_thread {} {}", d.name, b, u, sl.str());
          CHECK(run(p, sched, DType::bf16, {2, 67, 3 * b + 40}, 1, b, 11 + n, true, label) == 0);
          CHECK(run(p, sched, DType::bf16, {1, 130, 4 * b}, 1, b, 12 + n, false, label) == 0);
          ++n;
        }
      }
  MESSAGE(n << " casts, " << gathered << " with one scale a lane");
  CHECK(gathered > 0);
  CHECK(gathered < n);
}

TEST_CASE("generic scales gpu: the peers' scale layouts (MN-major TMA-aligned FP32, packed UE8M0, GEMM_READY 2D)") {
  MXJIT_REQUIRE_GPU();
  const PeerDef dg{"deepgemm", recipes::deepgemm(e4m3, false), Saturate::none};
  PeerDef dg8{"deepgemm ue8m0 as e8m0", recipes::deepgemm(e4m3, true), Saturate::none};
  dg8.def.format = ScaleFormat::e8m0;
  PeerDef vl8{"vllm ue8m0 as e8m0", recipes::vllm_group(e4m3, true)};
  vl8.def.format = ScaleFormat::e8m0;
  const PeerDef te{"te pow2", recipes::transformer_engine(e4m3, true)};
  struct Case {
    PeerDef d;
    Shape shape;
    Layout l;
  };
  const std::vector<Case> cases = {{dg, Shape::dim0, layout::mn_major_tma()},
                                   {dg8, Shape::dim0, layout::mn_major_tma_packed()},
                                   {vl8, Shape::dim0, layout::mn_major_tma_packed()},
                                   {te, Shape::tiles, layout::gemm_ready_2d()},
                                   {te, Shape::tiles, layout::gemm_ready_2d_t()}};
  for (const Case& c : cases)
    for (std::vector<int64_t> shape : {std::vector<int64_t>{256, 512}, {131, 600}, {5, 136}, {3, 130, 1000}}) {
      const int64_t br = c.shape == Shape::dim0 ? 1 : 128, bc = 128;
      const Pipeline p = peer_cast(c.d, e4m3, c.shape, DType::bf16, int(shape.size()), c.l);
      const std::string label = fmt::format("{} {}", c.d.name, c.l.str());
      CHECK(run(p, {}, DType::bf16, shape, br, bc, 7, true, label) == 0);
      CHECK(run(p, {}, DType::bf16, shape, br, bc, 8, false, label) == 0);
    }
}

TEST_CASE("generic scales gpu: 2-D blocks on the direct kernel (one CTA a block), shapes, block sizes, schedules") {
  MXJIT_REQUIRE_GPU();
  auto tiles = [](int64_t br, int64_t bc, DType dt, int r, const ScaleDef& def, Saturate sat, Layout sl = layout::linear(),
                  Layout ql = layout::row_major()) {
    auto x = input("x", dt, rank(r));
    auto s = scale(amax(blocks(x, {r - 2, r - 1}, {br, bc})), e4m3, def);
    return pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, sat), ql), output("s", s, sl)});
  };
  struct Case {
    std::string name;
    Pipeline p;
    int64_t br, bc;
    DType dt;
    Schedule s = {};
  };
  Schedule s4;
  s4.chunks_per_thread = 4;
  auto xe = input("x", DType::bf16, rank(2));
  auto e = e8m0_scale(amax(blocks(xe, {0, 1}, {64, 64})), e4m3, ScaleRule::rceil);
  // Transformer Engine's 1D quantizer in both usages: 1x128 and 128x1 blocks of one 128x128 tile.
  // With 32-row column blocks the tile is 32x128: 64 threads, each taking two columns' scales.
  auto dual = [](DType dt, const ScaleDef& d, ElemFormat elem, int64_t column_rows = 128) {
    auto x = input("x", dt, rank(2));
    auto sr = scale(amax(blocks(x, 1, 128)), elem, d);
    auto sc = scale(amax(blocks(x, 0, column_rows)), elem, d);
    return pipeline({output("q", cast(elem, x / sr)), output("s", sr, layout::mn_major_tma()),
                     output("q_t", cast(elem, x / sc), layout::col_major()), output("s_t", sc, layout::mn_major_tma())});
  };
  // The same per expert of a rank-3 input, its scales E8M0 (stored as bytes).
  ScaleDef ue8m0 = recipes::deepgemm(e4m3, true);
  ue8m0.format = ScaleFormat::e8m0;
  auto x3 = input("x", DType::bf16, rank(3));
  auto sr3 = scale(amax(blocks(x3, 2, 128)), e4m3, ue8m0);
  auto sc3 = scale(amax(blocks(x3, 1, 128)), e4m3, ue8m0);
  const Pipeline dual3 =
      pipeline({output("q", cast(e4m3, x3 / sr3)), output("s", sr3),
                output("q_t", cast(e4m3, x3 / sc3), layout::expert_col_major()), output("s_t", sc3)});
  auto xt = input("x", DType::bf16, rank(2));
  auto st = scale(amax(blocks(xt, {0, 1}, {128, 128})), e4m3, recipes::transformer_engine(e4m3, true));
  const std::vector<Case> cases = {
      {"deepgemm 128x128", tiles(128, 128, DType::bf16, 2, recipes::deepgemm(e4m3, false), Saturate::none), 128, 128,
       DType::bf16},
      {"torchao 128x128", tiles(128, 128, DType::bf16, 2, recipes::torchao_blockwise(e4m3), Saturate::finite), 128, 128,
       DType::bf16},
      {"vllm 128x128 f16", tiles(128, 128, DType::f16, 2, recipes::vllm_group(e4m3, false), Saturate::finite), 128, 128,
       DType::f16},
      {"te pow2 64x64", tiles(64, 64, DType::bf16, 2, recipes::transformer_engine(e4m3, true), Saturate::finite), 64,
       64, DType::bf16},
      {"sglang 128x32 rank 3", tiles(128, 32, DType::bf16, 3, recipes::sglang_group(e4m3, false), Saturate::finite),
       128, 32, DType::bf16},
      {"deepgemm 256x128", tiles(256, 128, DType::bf16, 2, recipes::deepgemm(e4m3, false), Saturate::none), 256, 128,
       DType::bf16},
      {"deepgemm 128x128 4 rows a thread",
       tiles(128, 128, DType::bf16, 2, recipes::deepgemm(e4m3, false), Saturate::none), 128, 128, DType::bf16, s4},
      {"te 128x128 gemm_ready_2d",
       tiles(128, 128, DType::bf16, 2, recipes::transformer_engine(e4m3, true), Saturate::finite,
             layout::gemm_ready_2d()),
       128, 128, DType::bf16},
      {"e8m0 rceil 64x64", pipeline({output("q", cast(e4m3, xe / e)), output("s", e)}), 64, 64, DType::bf16},
      // Codes transposed through the shared tile.
      {"torchao weight_quant_rhs col-major",
       tiles(128, 128, DType::bf16, 2, recipes::torchao_blockwise(e4m3), Saturate::finite, layout::col_major(),
             layout::col_major()),
       128, 128, DType::bf16},
      {"vllm 64x64 f16 col-major",
       tiles(64, 64, DType::f16, 2, recipes::vllm_group(e4m3, false), Saturate::finite, layout::linear(),
             layout::col_major()),
       64, 64, DType::f16},
      {"deepgemm 128x128 expert_col_major",
       tiles(128, 128, DType::bf16, 3, recipes::deepgemm(e4m3, false), Saturate::none, layout::linear(),
             layout::expert_col_major()),
       128, 128, DType::bf16},
      {"te both usages",
       pipeline({output("q", cast(e4m3, xt / st)), output("s", st, layout::gemm_ready_2d()),
                 output("q_t", cast(e4m3, xt / st), layout::col_major()),
                 output("s_t", st, layout::gemm_ready_2d_t())}),
       128, 128, DType::bf16},
      {"te 1d dual", dual(DType::bf16, recipes::transformer_engine(e4m3, true), e4m3), 128, 128, DType::bf16},
      {"te 1d dual, 32-row column blocks", dual(DType::bf16, recipes::transformer_engine(e4m3, true), e4m3, 32), 32,
       128, DType::bf16},
      {"vllm 1d dual f16 e5m2", dual(DType::f16, recipes::vllm_group(e5m2, false), e5m2), 128, 128, DType::f16},
      {"deepgemm ue8m0 1d dual rank 3", dual3, 128, 128, DType::bf16},
  };
  int n = 0;
  for (const Case& c : cases) {
    REQUIRE_MESSAGE(detail::generate(c.p, current_target(), detail::default_stride_class(c.p), c.s).plan.direct().block_rows == c.br, c.name);
    const bool r3 = c.p.rank() == 3;
    for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 1}, {127, 129}, {300, 1000}, {1024, 2048}}) {
      if (r3) shape.insert(shape.begin(), 3);
      CHECK(run(c.p, c.s, c.dt, shape, c.br, c.bc, 11 + n, true, c.name) == 0);
      CHECK(run(c.p, c.s, c.dt, shape, c.br, c.bc, 12 + n, false, c.name) == 0);
      ++n;
    }
  }
  // A column-major input: its row-major codes leave transposed (the unit-stride axis is axis 0).
  const Pipeline dg = tiles(128, 128, DType::bf16, 2, recipes::deepgemm(e4m3, false), Saturate::none);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{127, 129}, {300, 1000}, {1024, 2048}}) {
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, shape, std::vector<int64_t>{1, shape[0]});
    fill_random(in.back(), 21 + n, true);
    CHECK(check_against_reference(jit(dg, current_target()), in, fmt::format("deepgemm 128x128 column-major input [{}]", fmt::join(shape, ","))) == 0);
    ++n;
  }
  MESSAGE("2-D direct casts checked: " << n);
}

TEST_CASE("generic scales gpu: jagged groups (MoE token groups), vector and scalar kernels, every peer") {
  MXJIT_REQUIRE_GPU();
  const std::vector<std::vector<int32_t>> group_ends = {{0, 1, 32, 65, 1065, 1100}, {300, 300, 300, 700}};
  int cases = 0;
  for (ElemFormat elem : {e4m3, e5m2})
    for (const PeerDef& d : peer_defs(elem)) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = scale(amax(groups(x, 0, offsets("offs"))), elem, d.def);
      const Pipeline p = pipeline({output("q", cast(elem, x / s, Round::nearest_even, d.sat)), output("s", s)});
      for (const auto& ends : group_ends)
        for (bool colmajor : {false, true}) {  // the vector kernel, then the scalar one
          const int64_t rows = 1100, cols = 96;
          std::vector<HostTensor> in;
          in.emplace_back(DType::bf16, std::vector<int64_t>{rows, cols}, colmajor ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{});
          fill_random(in.back(), uint64_t(cases + 60), cases % 2 == 0);
          in.emplace_back(DType::i32, std::vector<int64_t>{int64_t(ends.size())});
          std::memcpy(in.back().bytes.data(), ends.data(), ends.size() * 4);
          CHECK(check_against_reference(jit(p), in, d.name + " " + elem.str() + " groups", {rows, cols}, int64_t(ends.size())) == 0);
          ++cases;
        }
    }
  MESSAGE("jagged generic cases: " << cases);
}

TEST_CASE("generic scales gpu: SGLang's fused SiLU-and-mul (round_to bf16) in 1x128 groups; round_to f16 in 128x1 groups") {
  MXJIT_REQUIRE_GPU();
  // gate and up are the two halves of one [T, 2H] row (row stride 2H), as the fused kernel reads them;
  // T(silu(gate)) * up kept in bf16 before the amax, SGLang's v1 scale, MN-major TMA-aligned scales.
  int cases = 0;
  for (auto [t, h] : {std::array<int64_t, 2>{64, 256}, {300, 1000}, {513, 2048}}) {
    auto gate = input("gate", DType::bf16, rank(2));
    auto up = input("up", DType::bf16, rank(2));
    auto v = round_to(round_to(silu(gate), DType::bf16) * up, DType::bf16);
    auto s = scale(amax(blocks(v, 1, 128)), e4m3, recipes::sglang_group(e4m3, false));
    const Pipeline p = pipeline({output("q", cast(e4m3, v / s, Round::nearest_even, Saturate::finite)), output("s", s, layout::mn_major_tma())});
    std::vector<HostTensor> in;
    for (int k = 0; k < 2; ++k) {
      in.emplace_back(DType::bf16, std::vector<int64_t>{t, h}, std::vector<int64_t>{2 * h, 1});
      fill_random(in.back(), uint64_t(70 + cases * 2 + k), true);
    }
    CHECK(check_against_reference(jit(p), in, fmt::format("sglang silu-and-mul [{}, {}]", t, h)) == 0);
    ++cases;
    // FP32 values rounded to f16 (overflow to Inf, subnormals) before a per-column cast.
    auto x = input("x", DType::f32, rank(2));
    auto w = round_to(x * 4096.0, DType::f16);
    auto sc = scale(amax(blocks(w, 0, 128)), e5m2, recipes::vllm_group(e5m2, false));
    const Pipeline pc = pipeline({output("q", cast(e5m2, w / sc, Round::nearest_even, Saturate::finite)), output("s", sc)});
    std::vector<HostTensor> xin;
    xin.emplace_back(DType::f32, std::vector<int64_t>{t, h});
    fill_random(xin.back(), uint64_t(90 + cases), true);
    CHECK(check_against_reference(jit(pc), xin, fmt::format("round_to f16, 128x1 [{}, {}]", t, h)) == 0);
    ++cases;
  }
  MESSAGE("round_to cases: " << cases);
}
