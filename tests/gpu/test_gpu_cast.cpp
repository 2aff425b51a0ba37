// GPU bit-exactness: every generated variant against the CPU reference, every byte, poisoned
// outputs, random and adversarial inputs. Skips (one line per test) without a GPU.
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cmath>
#include <fmt/format.h>

#include "codegen/plan.hpp"
#include "gpu/check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

const ElemFormat kFormats[] = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};
const ScaleRule kRules[] = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};

// A single cast of x along `axis` with elements in `elems_layout` and scales in `scales_layout`.
Pipeline single_cast(DType dt, int rank_, int axis, ElemFormat f, ScaleRule rule, Layout elems_layout,
                     Layout scales_layout, NanPolicy policy = NanPolicy::nan_block, int64_t block = 32) {
  auto x = input("x", dt, rank(rank_));
  auto s = e8m0_scale(amax(blocks(x, axis, block)), f, rule, policy);
  return pipeline({output("q", cast(f, x / s), elems_layout), output("s", s, scales_layout)});
}

int64_t run_case(const Pipeline& p, std::vector<int64_t> shape, uint64_t seed, bool adversarial,
                 std::vector<int64_t> strides = {}, DType dt = DType::bf16, const Schedule& schedule = {},
                 size_t out_shift = 0) {
  Kernel k = jit(p, current_target(), schedule);
  std::vector<HostTensor> in;
  in.emplace_back(dt, shape, strides);
  fill_random(in.back(), seed, adversarial);
  return check_against_reference(k, in,
                                 fmt::format("{} shape [{}] {} shift {}", p.outputs()[0].node->elem.str(), fmt::join(shape, ","),
                                             schedule.str(), out_shift),
                                 {}, 0, nullptr, out_shift);
}

// dim0 and dim1 casts of one bf16 matrix from one read: row-wise RCEIL scales and codes, and
// column-wise scales (rule `rule1`) with column-major codes; both scales in layout `s`.
Pipeline dim0_dim1(ScaleRule rule1, Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, rule1);
  return pipeline({output("q0", cast(e4m3, x / s0)), output("s0", s0, s), output("q1", cast(e4m3, x / s1), layout::col_major()),
                   output("s1", s1, s)});
}

// A bf16 matrix of 32 x 32 squares, each one kind of block for both a row-wise and a
// column-wise 32-block: all +0, +0 and -0 mixed, subnormals only, normal values with one Inf,
// with one NaN, or plain normal values; then the cast against the reference.
int64_t run_block_kinds(const Pipeline& p, int64_t rows, int64_t cols, uint64_t seed) {
  Kernel k = jit(p, current_target());
  std::vector<HostTensor> in;
  in.emplace_back(DType::bf16, std::vector<int64_t>{rows, cols});
  fill_random(in.back(), seed, false);
  auto* h = reinterpret_cast<uint16_t*>(in.back().bytes.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint16_t& v = h[r * cols + c];
      switch (((r / 32) * 7 + (c / 32) * 3 + int64_t(seed)) % 6) {
        case 0: v = 0; break;
        case 1: v = uint16_t((r + c) % 2 ? 0x8000 : 0); break;
        case 2: v = uint16_t(((r * cols + c) % 2 ? 0x8000 : 0) | (1 + (r + 3 * c) % 127)); break;
        case 3: if (r % 32 == 5 && c % 32 == 9) v = 0xff80; break;   // -Inf
        case 4: if (r % 32 == 17 && c % 32 == 2) v = 0x7fc1; break;  // NaN
        default: break;
      }
    }
  return check_against_reference(k, in, fmt::format("block kinds [{},{}] seed {}", rows, cols, seed));
}

// A bf16 tensor of `shape` (rank 2 or 3, last two axes rows x columns) of random normal values
// in which only the 32 x 32 squares at `flagged` (square row, square column; batch 0) hold a
// flagged block kind (all +-0, one NaN, one -Inf, subnormals only, in turn), so that most warps
// of the columns kernel see no flagged block (their clean path) and a few do, in one launch.
int64_t run_sparse_flags(const Pipeline& p, const std::vector<int64_t>& shape, const std::vector<std::pair<int64_t, int64_t>>& flagged,
                         uint64_t seed, const Schedule& schedule = {}) {
  Kernel k = jit(p, current_target(), schedule);
  std::vector<HostTensor> in;
  in.emplace_back(DType::bf16, shape);
  fill_random(in.back(), seed, false);
  auto* h = reinterpret_cast<uint16_t*>(in.back().bytes.data());
  const int64_t cols = shape.back();
  int kind = 0;
  for (auto [sr, sc] : flagged) {
    for (int64_t r = sr * 32; r < sr * 32 + 32; ++r)
      for (int64_t c = sc * 32; c < sc * 32 + 32; ++c) {
        uint16_t& v = h[r * cols + c];
        switch (kind % 4) {
          case 0: v = (r + c) % 3 ? 0x8000 : 0; break;
          case 1: if (r % 32 == 7 && c % 32 == 30) v = 0x7fc1; break;   // NaN
          case 2: if (r % 32 == 31 && c % 32 == 0) v = 0xff80; break;   // -Inf
          default: v = uint16_t(((r + c) % 2 ? 0x8000 : 0) | (1 + (r * 5 + c) % 127)); break;  // subnormals only
        }
      }
    ++kind;
  }
  return check_against_reference(k, in, fmt::format("sparse flags [{}] {} squares seed {}", fmt::join(shape, ","), flagged.size(), seed));
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("every format and rule, dim0 and dim1, linear and blocked scales") {
  MXJIT_REQUIRE_GPU();
  int cases = 0;
  for (ElemFormat f : kFormats)
    for (ScaleRule rule : kRules) {
      // dim0: blocks along the contiguous axis, row-major codes.
      CHECK(run_case(single_cast(DType::bf16, 2, 1, f, rule, layout::row_major(), layout::linear()), {96, 160}, 1, true) == 0);
      // dim1: blocks along axis 0, codes written column-major directly, MN-major blocked scales.
      CHECK(run_case(single_cast(DType::bf16, 2, 0, f, rule, layout::col_major(), layout::blocked_128x4()), {160, 96}, 2, true) == 0);
      CHECK(run_case(single_cast(DType::bf16, 2, 1, f, rule, layout::row_major(), layout::blocked_128x4()), {200, 256}, 3, false) == 0);
      cases += 3;
    }
  MESSAGE("format x rule cases: " << cases);
}

TEST_CASE("both NaN policies on adversarial blocks") {
  MXJIT_REQUIRE_GPU();
  for (NanPolicy pol : {NanPolicy::nan_block, NanPolicy::satfinite})
    for (ElemFormat f : {e4m3, e5m2, e2m1, e2m3, e3m2}) {
      // dim0 (direct kernel) and dim1 (columns kernel): the FP4/FP6 pair forms without NaN
      // tests rely on these NaN blocks being overwritten.
      CHECK(run_case(single_cast(DType::bf16, 2, 1, f, ScaleRule::rceil, layout::row_major(), layout::linear(), pol),
                     {64, 256}, 11, true) == 0);
      CHECK(run_case(single_cast(DType::bf16, 2, 0, f, ScaleRule::floor, layout::col_major(), layout::linear(), pol),
                     {256, 64}, 12, true) == 0);
    }
}

TEST_CASE("fifty shapes with tails, dim0 and dim1") {
  MXJIT_REQUIRE_GPU();
  Pipeline d0 = single_cast(DType::bf16, 2, 1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4());
  Pipeline d1 = single_cast(DType::bf16, 2, 0, e4m3, ScaleRule::floor, layout::col_major(), layout::linear());
  int shapes = 0;
  const int64_t rows[] = {1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 300};
  const int64_t cols[] = {32, 64, 96, 130, 200, 256, 520};
  for (int64_t r : rows)
    for (int64_t c : cols) {
      if ((r * c) % 3 != 0 && shapes > 60) continue;
      CHECK(run_case(d0, {r, c}, uint64_t(r * 1000 + c), (r + c) % 2 == 0) == 0);
      CHECK(run_case(d1, {c, r}, uint64_t(r * 7 + c), (r + c) % 2 == 1) == 0);
      shapes += 2;
    }
  MESSAGE("shapes checked: " << shapes);
}

TEST_CASE("3-D expert weights cast along N, written per-expert column-major, E = 1..64") {
  MXJIT_REQUIRE_GPU();
  auto x = input("x", DType::bf16, rank(3));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, x / s), layout::expert_col_major()),
                         output("s", s, layout::blocked_128x4())});
  for (int64_t e : {1, 2, 4, 7, 16, 64})
    CHECK(run_case(p, {e, 96, 160}, uint64_t(e), e % 2 == 0) == 0);
  CHECK(run_case(p, {3, 70, 130}, 5, true) == 0);
}

TEST_CASE("software-encoded casts: linear scales stored by their owner lane, rank 2 and 3, row and column tails") {
  MXJIT_REQUIRE_GPU();
  // The direct kernel's reduce-scattered scales (FP4/FP6/INT8 on sm_90, every format on sm_80):
  // lane j of a block stores row j's byte, also where its own chunk lies past the end of a partial
  // last block (200 and 136 columns: one chunk of 8 in the last block); rows past the end (97 and
  // 3 x 70 rows) must store nothing (the GPU output is poisoned).
  uint64_t seed = 71;
  for (ElemFormat f : {e2m1, e2m3, e3m2, int8}) {
    CHECK(run_case(single_cast(DType::bf16, 3, 2, f, ScaleRule::floor, layout::row_major(), layout::linear()), {3, 70, 130}, ++seed, true) == 0);
    CHECK(run_case(single_cast(DType::bf16, 3, 2, f, ScaleRule::floor, layout::row_major(), layout::linear()), {3, 70, 136}, ++seed, true) == 0);
    CHECK(run_case(single_cast(DType::bf16, 2, 1, f, ScaleRule::rceil, layout::row_major(), layout::linear()), {97, 200}, ++seed, false) == 0);
  }
}

TEST_CASE("blocked scale padding (written by the kernels: the direct kernel's grid covers it, the columns kernel's last tiles): batched, both atoms, rows and columns") {
  MXJIT_REQUIRE_GPU();
  // Rows and scale columns that are and are not whole atoms, batched (3-D, direct kernel) and the
  // columns kernel's MN-major scales; every padding byte must read 0 (the GPU output is poisoned).
  int n = 0;
  for (const Layout& sl : {layout::blocked_128x4(), layout::blocked_8x4()})
    for (auto sh : std::vector<std::vector<int64_t>>{{3, 70, 100}, {2, 130, 224}, {2, 128, 128}, {1, 9, 520}}) {
      CHECK(run_case(single_cast(DType::bf16, 3, 2, e4m3, ScaleRule::rceil, layout::row_major(), sl), sh, uint64_t(n), n % 2 == 0) == 0);
      ++n;
    }
  for (auto sh : std::vector<std::vector<int64_t>>{{100, 70}, {224, 130}, {128, 128}})
    CHECK(run_case(single_cast(DType::bf16, 2, 0, e4m3, ScaleRule::floor, layout::col_major(), layout::blocked_128x4()), sh,
                   uint64_t(++n), true) == 0);
  // The columns kernel writes its tiles' padding itself: with blocks of 64 and 128 rows, the last
  // row tile covers more padded scale columns (4 per atom) than it has blocks.
  for (int64_t blk : {64, 128})
    for (auto sh : std::vector<std::vector<int64_t>>{{300, 70}, {640, 260}, {129, 8}}) {
      ++n;  // the seed and the adversarial choice from one value (not ++n beside n in one call)
      CHECK(run_case(single_cast(DType::bf16, 2, 0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4(),
                                 NanPolicy::nan_block, blk),
                     sh, uint64_t(n), n % 2 == 0) == 0);
    }
  MESSAGE("padded blocked cases: " << n);
}

TEST_CASE("direct kernel, blocked scales 4 bytes at a time: 1..16 lanes per block, 1..8 rows per thread, padding, unaligned outputs") {
  MXJIT_REQUIRE_GPU();
  // Blocks of 8..128 elements are 1..16 lanes (16: the byte path); unroll 1..8 rows per thread is
  // 1..2 gathering rounds; shapes cut rows and block columns short of whole atoms; 3-D batches;
  // outputs 1 byte past alignment take the byte stores. The GPU outputs are poisoned.
  int n = 0;
  for (int64_t blk : {8, 16, 32, 64, 128})
    for (int unroll : {1, 2, 4, 8})
      for (const Layout& sl : {layout::blocked_128x4(), layout::blocked_8x4()}) {
        const Schedule t{.chunks_per_thread = unroll};
        const std::vector<int64_t> sh = n % 3 == 2 ? std::vector<int64_t>{3, 70, 9 * blk} : std::vector<int64_t>{int64_t(130 + n), 5 * blk + 8};
        CHECK(run_case(single_cast(DType::bf16, int(sh.size()), int(sh.size()) - 1, n % 2 ? e4m3 : e2m1, ScaleRule::rceil,
                                   layout::row_major(), sl, NanPolicy::nan_block, blk),
                       sh, uint64_t(n), n % 2 == 0, {}, DType::bf16, t, n % 4 == 3 ? 1 : 0) == 0);
        ++n;
      }
  MESSAGE("direct blocked cases: " << n);
}

TEST_CASE("dim0 and dim1 from one read of the input") {
  MXJIT_REQUIRE_GPU();
  const Pipeline p = dim0_dim1(ScaleRule::rceil, layout::blocked_128x4());
  for (auto sh : std::vector<std::vector<int64_t>>{{256, 256}, {130, 96}, {64, 520}, {33, 32}})
    CHECK(run_case(p, sh, uint64_t(sh[0]), true) == 0);
  // The columns kernel's other warp shape (8 rows per thread: warps stacked in pairs along the
  // rows) and register caps, on tiles that are whole, cut in rows, in columns and in both.
  int n = 0;
  for (auto [rows, mb] : {std::pair{8, 2}, std::pair{8, 3}, std::pair{16, 1}, std::pair{16, 3}}) {
    const Schedule t{.ctas_per_sm = mb, .rows_per_thread = rows};
    Kernel k = jit(p, current_target(), t);
    for (auto sh : std::vector<std::vector<int64_t>>{{256, 256}, {200, 136}, {64, 520}, {33, 32}, {300, 1000}}) {
      std::vector<HostTensor> in;
      in.emplace_back(DType::bf16, sh);
      fill_random(in.back(), uint64_t(sh[1] + n), n % 2 == 0);
      CHECK(check_against_reference(k, in, fmt::format("dim0+dim1 {} [{}]", t.str(), fmt::join(sh, ","))) == 0);
      ++n;
    }
  }
  MESSAGE("dim0+dim1 tuned cases: " << n);
}

TEST_CASE("columns kernel: warps without flagged blocks beside warps with them, in one launch") {
  MXJIT_REQUIRE_GPU();
  // The columns kernel's fast path takes a branch without flag tests when no block of the warp
  // is flagged (scales_clean). Here a few squares are flagged and the rest are not, so both
  // branches run in one launch: dim0+dim1 (both scale directions), dim1 and 3-D per-expert.
  const std::vector<std::pair<int64_t, int64_t>> few = {{0, 0}, {1, 5}, {6, 2}, {3, 7}, {9, 9}, {4, 4}, {7, 11}, {2, 14}};
  int n = 0;
  for (const Layout& sl : {layout::linear(), layout::blocked_128x4()}) {
    for (ScaleRule rule : {ScaleRule::rceil, ScaleRule::floor}) {
      CHECK(run_sparse_flags(dim0_dim1(rule, sl), {384, 512}, few, uint64_t(n++)) == 0);
      CHECK(run_sparse_flags(single_cast(DType::bf16, 2, 0, e4m3, rule, layout::col_major(), sl), {384, 512}, few, uint64_t(n++)) == 0);
      CHECK(run_sparse_flags(single_cast(DType::bf16, 2, 0, e2m1, rule, layout::col_major(), sl), {384, 512}, few, uint64_t(n++)) == 0);
    }
    auto x3 = input("x", DType::bf16, rank(3));
    auto s3 = e8m0_scale(amax(blocks(x3, 1, 32)), e4m3, ScaleRule::rceil);
    CHECK(run_sparse_flags(pipeline({output("q", cast(e4m3, x3 / s3), layout::expert_col_major()), output("s", s3, sl)}), {2, 384, 512},
                           few, uint64_t(n++)) == 0);
  }
  MESSAGE("sparse-flag cases: " << n);
}

TEST_CASE("whole tiles store their scales 4 bytes at a time; one scale per lane; direct rows of 640 and 260 slots") {
  MXJIT_REQUIRE_GPU();
  // Tiles staged in shared memory write whole tiles' scales as 4-byte words (outputs on rotated
  // threads) and partial tiles byte by byte: shapes with both, linear scales whose rows are not
  // 4-byte multiples (520 columns: 17 blocks per row, so words fall unaligned and take the byte
  // fallback), outputs 1 byte past alignment (and 8: dim0+dim1 then copies its staged codes out
  // 8 bytes per lane), MN-major blocked, 3-D batches, and a tuning whose
  // tile has 8 rows per thread.
  int n = 0;
  const std::vector<std::vector<int64_t>> shapes = {{256, 256}, {640, 520}, {300, 1000}, {129, 384}};
  for (const Layout& sl : {layout::linear(), layout::blocked_128x4()}) {
    const Pipeline fused = dim0_dim1(ScaleRule::rceil, sl);
    const Pipeline dim1 = single_cast(DType::bf16, 2, 0, e4m3, ScaleRule::floor, layout::col_major(), sl);
    for (const auto& sh : shapes)
      for (size_t shift : {size_t(0), size_t(1), size_t(8)}) {  // 8: whole tiles' codes copied out 8 bytes a lane, not 16
        CHECK(run_case(fused, sh, uint64_t(n), n % 2 == 0, {}, DType::bf16, {}, shift) == 0);
        CHECK(run_case(dim1, sh, uint64_t(n + 1), n % 2 == 1, {}, DType::bf16, {}, shift) == 0);
        n += 2;
      }
    auto x3 = input("x", DType::bf16, rank(3));
    auto s3 = e8m0_scale(amax(blocks(x3, 1, 32)), e4m3, ScaleRule::rceil);
    const Pipeline expert = pipeline({output("q", cast(e4m3, x3 / s3), layout::expert_col_major()), output("s", s3, sl)});
    CHECK(run_case(expert, {3, 256, 512}, uint64_t(n++), true) == 0);
    CHECK(run_case(expert, {2, 300, 520}, uint64_t(n++), false, {}, DType::bf16, {}, 1) == 0);
    const Schedule t{.rows_per_thread = 8};
    CHECK(run_case(fused, {640, 520}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(dim1, {640, 520}, uint64_t(n++), true, {}, DType::bf16, t, 1) == 0);
  }
  // One scale per lane on the columns kernel's fast path (reduce-scatter, owners' scales fetched
  // by shuffle): every rule and both NaN policies on adversarial blocks (zero, NaN, Inf, max),
  // dim1 (2 lanes per block) and dim0+dim1 (4 lanes each way), whole tiles and tails.
  for (ScaleRule rule : kRules)
    for (NanPolicy pol : {NanPolicy::nan_block, NanPolicy::satfinite})
      for (ElemFormat f : {e4m3, e5m2, e2m1}) {
        CHECK(run_case(single_cast(DType::bf16, 2, 0, f, rule, layout::col_major(), layout::linear(), pol), {512, 256}, uint64_t(n),
                       true) == 0);
        ++n;
      }
  for (ScaleRule rule : kRules)
    for (NanPolicy pol : {NanPolicy::nan_block, NanPolicy::satfinite}) {
      CHECK(run_block_kinds(single_cast(DType::bf16, 2, 0, e4m3, rule, layout::col_major(), layout::linear(), pol), 512, 320,
                            uint64_t(n)) == 0);
      CHECK(run_block_kinds(single_cast(DType::bf16, 2, 1, e5m2, rule, layout::row_major(), layout::linear(), pol), 256, 320,
                            uint64_t(n + 1)) == 0);
      n += 2;
    }
  for (ScaleRule rule : kRules) {
    CHECK(run_block_kinds(dim0_dim1(rule, layout::linear()), 384, 320, uint64_t(n)) == 0);
    CHECK(run_block_kinds(dim0_dim1(rule, layout::blocked_128x4()), 256, 256, uint64_t(n + 1)) == 0);
    CHECK(run_case(dim0_dim1(rule, layout::linear()), {256, 384}, uint64_t(n), true) == 0);
    CHECK(run_case(dim0_dim1(rule, layout::blocked_128x4()), {384, 256}, uint64_t(n + 1), n % 2 == 0) == 0);
    n += 2;
  }
  // Direct kernels on rows of 640 slots (5120 columns) and 260 (2080), whose last CTA of 256
  // threads is half or nearly all padding lanes: every chunk slot and blocked padding byte.
  for (const Layout& sl : {layout::linear(), layout::blocked_128x4(), layout::blocked_8x4()})
    for (auto sh : std::vector<std::vector<int64_t>>{{70, 5120}, {9, 2080}, {2, 33, 5120}}) {
      CHECK(run_case(single_cast(DType::bf16, int(sh.size()), int(sh.size()) - 1, e4m3, ScaleRule::rceil, layout::row_major(), sl),
                     sh, uint64_t(n), n % 2 == 0, {}, DType::bf16, {}, n % 3 == 2 ? 1 : 0) == 0);
      ++n;
    }
  MESSAGE("tile-scale word, scale-per-lane and direct-row cases: " << n);
}

TEST_CASE("columns kernel pipelined: persistent CTAs over a ring of bulk copies, 2 and 3 tiles") {
  MXJIT_REQUIRE_GPU();
  // Persistent CTAs (as many as fit the GPU) walk the tiles: shapes with more tiles than CTAs
  // (1300 x 5200: 451 tiles of 128 x 128; 16384 x 1024: 1024 tiles) give CTAs several tiles,
  // ring slots, barrier phases and staged-scale buffers in turn; tail tiles (rows, columns,
  // both) are not copied and load from global memory between copied ones; outputs 1 byte past
  // alignment take the guarded path inside the loop; 3-D batches decode per tile.
  const Pipeline fused_blocked = dim0_dim1(ScaleRule::floor, layout::blocked_128x4());
  const Pipeline fused_linear = dim0_dim1(ScaleRule::floor, layout::linear());
  const Pipeline dim1 = single_cast(DType::bf16, 2, 0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4());
  auto x3 = input("x", DType::bf16, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, 1, 32)), e5m2, ScaleRule::floor);
  const Pipeline expert = pipeline({output("q", cast(e5m2, x3 / s3), layout::expert_col_major()), output("s", s3, layout::blocked_128x4())});
  int n = 0;
  for (int stages : {2, 3}) {
    Schedule t{.stages = stages};  // ctas_per_sm unset: as many as the ring and the staged codes fit
    for (auto sh : std::vector<std::vector<int64_t>>{{1300, 5200}, {16384, 1024}, {256, 256}, {33, 32}, {200, 136}, {64, 520}}) {
      CHECK(run_case(fused_blocked, sh, uint64_t(n), n % 2 == 0, {}, DType::bf16, t, n % 3 == 2 ? 1 : 0) == 0);
      ++n;
      CHECK(run_case(fused_linear, sh, uint64_t(n), n % 2 == 0, {}, DType::bf16, t) == 0);
      ++n;
    }
    t.rows_per_thread = 8;
    t.ctas_per_sm = 2;
    CHECK(run_case(dim1, {1300, 5200}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(dim1, {300, 70}, uint64_t(n++), false, {}, DType::bf16, t, 1) == 0);
    CHECK(run_case(expert, {5, 300, 260}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(expert, {2, 1300, 2600}, uint64_t(n++), false, {}, DType::bf16, t) == 0);
  }
  {  // The same casts one tile per CTA, 8 and 16 rows per thread. Rows of 260 bf16 (520 bytes)
     // are not 16-byte aligned, so these shapes run the tiled kernel under the same tuning: with
     // 8 rows per thread its whole aligned column chunks once got no store at all (found here).
    Schedule t{.rows_per_thread = 8, .stages = 1};
    CHECK(run_case(expert, {5, 300, 260}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(expert, {5, 300, 260}, uint64_t(n++), false, {}, DType::bf16, t) == 0);
    CHECK(run_case(dim1, {300, 260}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(expert, {1, 300, 260}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(expert, {5, 256, 256}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    t.rows_per_thread = 16;
    CHECK(run_case(expert, {5, 300, 260}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
  }
  {  // 16 rows per thread: a 64 KiB tile per stage, one CTA per SM
    const Schedule t{.ctas_per_sm = 1, .rows_per_thread = 16, .stages = 2};
    CHECK(run_case(dim1, {1300, 5200}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(fused_blocked, {300, 1000}, uint64_t(n++), true, {}, DType::bf16, t) == 0);
    CHECK(run_case(single_cast(DType::f16, 2, 0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear()), {520, 72},
                   uint64_t(n++), true, {}, DType::f16, t) == 0);
  }
  MESSAGE("pipelined columns cases: " << n);
}

TEST_CASE("strided inputs: column-major, sliced, permuted 3-D; fp32 and fp16 inputs") {
  MXJIT_REQUIRE_GPU();
  Pipeline d0 = single_cast(DType::bf16, 2, 1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear());
  Pipeline d1 = single_cast(DType::bf16, 2, 0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear());
  CHECK(run_case(d0, {96, 128}, 1, true, {1, 96}) == 0);      // column-major input
  CHECK(run_case(d1, {96, 128}, 2, true, {1, 96}) == 0);
  CHECK(run_case(d0, {64, 96}, 3, true, {200, 1}) == 0);      // sliced rows (aligned)
  CHECK(run_case(d0, {64, 96}, 4, true, {101, 1}) == 0);      // sliced rows (unaligned)
  CHECK(run_case(d1, {70, 66}, 5, true, {3, 300}) == 0);      // no unit stride at all
  auto x3 = input("x", DType::bf16, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, 1, 32)), e4m3, ScaleRule::floor);
  Pipeline p3 = pipeline({output("q", cast(e4m3, x3 / s3), layout::expert_col_major()), output("s", s3)});
  CHECK(run_case(p3, {4, 64, 96}, 6, true, {64, 1, 256}) == 0);  // (E,N,K) with N contiguous
  CHECK(run_case(single_cast(DType::f32, 2, 1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()), {64, 128}, 7, true, {}, DType::f32) == 0);
  CHECK(run_case(single_cast(DType::f16, 2, 0, e5m2, ScaleRule::floor, layout::col_major(), layout::linear()), {64, 128}, 8, true, {}, DType::f16) == 0);
}

TEST_CASE("stochastic rounding, flush, custom rule, FP32 scales, 2-D blocks, block sizes") {
  MXJIT_REQUIRE_GPU();
  auto x = input("x", DType::bf16, rank(2));
  {
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), e2m1, ScaleRule::floor);
    CastOptions o;
    o.seed = 1234;
    o.offset = 7;
    o.flush_subnormals = true;
    Pipeline p = pipeline({output("q", cast(e2m1, x / s, Round::stochastic, Saturate::finite, o)), output("s", s)});
    CHECK(run_case(p, {64, 256}, 21, true) == 0);
    auto s8 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
    Pipeline p8 = pipeline({output("q", cast(e4m3, x / s8, Round::stochastic, Saturate::finite, o)), output("s", s8)});
    CHECK(run_case(p8, {64, 256}, 22, true) == 0);
  }
  {
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ceil_log2(amax_var() * (1.0 / 448)) + 1.0);
    Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
    CHECK(run_case(p, {64, 256}, 23, true) == 0);
  }
  {
    auto s = f32_scale(amax(blocks(x, 0, 32)), e4m3);
    Pipeline p = pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("s", s)});
    CHECK(run_case(p, {96, 64}, 24, true) == 0);
  }
  {
    auto s = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
    Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("q_t", cast(e4m3, x / s), layout::col_major()),
                           output("s", s)});
    CHECK(run_case(p, {96, 160}, 25, true) == 0);
  }
  for (int64_t b : {16, 64, 128}) {
    CHECK(run_case(single_cast(DType::bf16, 2, 1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear(),
                               NanPolicy::nan_block, b), {64, 384}, uint64_t(b), true) == 0);
  }
}

TEST_CASE("fused prologues, amax output, dequantize") {
  MXJIT_REQUIRE_GPU();
  auto a = input("a", DType::bf16, rank(2));
  auto b = input("b", DType::bf16, rank(2));
  auto v = swiglu(a, b);
  auto s = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, v / s)), output("s", s), output("amax", amax(v))});
  Kernel k = jit(p);
  std::vector<HostTensor> in;
  in.emplace_back(DType::bf16, std::vector<int64_t>{64, 256});
  in.emplace_back(DType::bf16, std::vector<int64_t>{64, 256});
  fill_random(in[0], 31, false);
  fill_random(in[1], 32, false);
  CHECK(check_against_reference(k, in, "swiglu") == 0);

  auto x = input("x", DType::bf16, rank(2));
  auto g = gelu(x * vec("w", DType::f32, 1, rank(2)), Gelu::erf);
  auto sg = e8m0_scale(amax(blocks(g, 1, 32)), e4m3, ScaleRule::floor);
  Pipeline pg = pipeline({output("q", cast(e4m3, g / sg)), output("s", sg), output("y", relu(g) - 1.0, DType::bf16)});
  std::vector<HostTensor> in2;
  in2.emplace_back(DType::bf16, std::vector<int64_t>{64, 128});
  in2.emplace_back(DType::f32, std::vector<int64_t>{128});
  fill_random(in2[0], 33, true);
  fill_random(in2[1], 34, false);
  CHECK(check_against_reference(jit(pg), in2, "gelu*w") == 0);

  for (ElemFormat f : {e4m3, e2m1}) {
    Expr d = dequantize("q", "s", f, ScaleFormat::e8m0, rank(2), 1, 32);
    Pipeline pd = pipeline({output("y", d, DType::bf16), output("y32", d, DType::f32, layout::col_major())});
    std::vector<HostTensor> in3;
    in3.emplace_back(DType::u8, std::vector<int64_t>{64, f.packed() ? 64 : 128});
    in3.emplace_back(DType::u8, std::vector<int64_t>{64, 4});
    for (auto& t : in3) { std::mt19937 r(7); for (auto& byte : t.bytes) byte = uint8_t(r()); }
    for (size_t i = 0; i < in3[1].bytes.size(); ++i) in3[1].bytes[i] = uint8_t(100 + i % 60);
    CHECK(check_against_reference(jit(pd), in3, "dequant " + f.str(), {64, 128}) == 0);
  }
}

TEST_CASE("NVFP4: both conventions, dim0 and dim1, blocked scales, tensor amax on the GPU") {
  MXJIT_REQUIRE_GPU();
  for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao})
    for (int axis : {0, 1}) {
      auto x = input("x", DType::bf16, rank(2));
      auto s = nvfp4_scale(amax(blocks(x, axis, 16)), c);
      Pipeline p = pipeline({output("q", cast(e2m1, x / s), axis ? layout::row_major() : layout::col_major()),
                             output("s", s, layout::blocked_128x4()), output("amax", amax(x))});
      CHECK(run_case(p, {96, 160}, 41 + uint64_t(axis), true) == 0);
      CHECK(run_case(p, {130, 224}, 43 + uint64_t(axis), false) == 0);
      // All zeros: the per-tensor amax is 0 (each convention's zero rule).
      Kernel k = jit(p);
      std::vector<HostTensor> in;
      in.emplace_back(DType::bf16, std::vector<int64_t>{64, 64});
      CHECK(check_against_reference(k, in, "nvfp4 zeros") == 0);
    }
  // dim0 with linear scales (the direct kernel's eight-codes-at-once path and its NaN fallback):
  // blocks of zeros, signed zeros, subnormals only, an Inf, a NaN; and a tensor of subnormals and
  // zeros only, whose tiny tensor amax makes some blocks' multipliers overflow to Inf (y = 0 * Inf).
  for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    auto x = input("x", DType::bf16, rank(2));
    auto s = nvfp4_scale(amax(blocks(x, 1, 16)), c);
    Pipeline p = pipeline({output("q", cast(e2m1, x / s)), output("s", s)});
    for (uint64_t seed = 0; seed < 6; ++seed) CHECK(run_block_kinds(p, 128, 192, seed) == 0);
    Kernel k = jit(p);
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, std::vector<int64_t>{64, 96});
    auto* h = reinterpret_cast<uint16_t*>(in.back().bytes.data());
    for (int64_t i = 0; i < 64 * 96; ++i) h[i] = uint16_t((i % 3 ? 0x8000 : 0) | (i % 5 == 0 ? 0 : 1 + (i * 37) % 3));
    CHECK(check_against_reference(k, in, "nvfp4 subnormals and zeros") == 0);
  }
  // torchao's block ratio (a / 6) / per_tensor rounded to E4M3 where it is hardest: FP32 blocks
  // whose amax puts the exact ratio on, and 1..6 ulps either side of, every E4M3 midpoint from
  // 2^-6 to 248, under tensor amaxes with full mantissas; dim0 (direct kernel) and dim1 (tiled).
  // (A kernel that multiplied by 1 / (6 per_tensor) instead of dividing twice failed here.)
  for (int axis : {1, 0}) {
    auto x = input("x", DType::f32, rank(2));
    auto s = nvfp4_scale(amax(blocks(x, axis, 16)), Nvfp4Convention::torchao);
    Pipeline p = pipeline({output("q", cast(e2m1, x / s), axis ? layout::row_major() : layout::col_major()), output("s", s)});
    Kernel k = jit(p);
    for (float t : {1234.5678f, 0.0123456f, 7.7777e9f}) {
      const std::vector<int64_t> shape = axis ? std::vector<int64_t>{112, 208} : std::vector<int64_t>{208, 112};
      std::vector<HostTensor> in;
      in.emplace_back(DType::f32, shape);
      auto* v = reinterpret_cast<float*>(in.back().bytes.data());
      const int64_t blocks = 112 * 13;
      int64_t b = 0;
      for (int e = -6; e <= 7; ++e)
        for (uint32_t m = 1; m < 16; m += 2)
          for (int d = -6; d <= 6; ++d, ++b) {
            const float mid = std::ldexp(1.0f + float(m) / 16.0f, e) * 6.0f * (t / 2688.0f);
            const float a = std::bit_cast<float>(uint32_t(int64_t(std::bit_cast<uint32_t>(mid)) + d));
            for (int64_t j = 0; j < 16; ++j) {
              // Block b: 16 consecutive elements along the block axis; its amax a (sign alternating).
              const int64_t along = (b % 13) * 16 + j, other = b / 13;
              const float val = j == 5 ? (b % 2 ? -a : a) : a * float(j) / 17.0f;
              v[axis ? other * 208 + along : along * 112 + other] = val;
            }
          }
      REQUIRE(b == blocks);
      v[0] = t;  // the tensor amax (block 0's amax is below it)
      CHECK(check_against_reference(k, in, fmt::format("nvfp4 torchao ratios at E4M3 midpoints, tensor amax {}, axis {}", t, axis)) == 0);
    }
  }
}

TEST_CASE("user-defined element formats; dequantize of every format into any layout") {
  MXJIT_REQUIRE_GPU();
  for (ElemFormat f : {fp_format(3, 4), fp_format(2, 2), fp_format(4, 1), fp_format(1, 2)}) {
    CHECK(run_case(single_cast(DType::bf16, 2, 1, f, ScaleRule::rceil, layout::row_major(), layout::linear()), {64, 128}, 51, true) == 0);
    CHECK(run_case(single_cast(DType::bf16, 2, 0, f, ScaleRule::floor, layout::col_major(), layout::blocked_128x4()), {64, 96}, 52, true) == 0);
  }
  for (ElemFormat f : kFormats)
    for (ScaleFormat sf : {ScaleFormat::e8m0, ScaleFormat::f32}) {
      Expr d = dequantize("q", "s", f, sf, rank(2), 1, 32);
      Pipeline pd = pipeline({output("y", d, DType::bf16), output("yc", d, DType::f32, layout::col_major()),
                              output("yh", d, DType::f16)});
      std::vector<HostTensor> in;
      in.emplace_back(DType::u8, std::vector<int64_t>{64, f.packed() ? 64 : 128});
      in.emplace_back(sf == ScaleFormat::f32 ? DType::f32 : DType::u8, std::vector<int64_t>{64, 4});
      std::mt19937 r(9);
      const unsigned mask = f.bits() >= 8 ? 0xffu : (f.packed() ? 0xffu : (1u << f.bits()) - 1u);
      for (auto& byte : in[0].bytes) byte = uint8_t(r() & mask);
      if (sf == ScaleFormat::f32) fill_random(in[1], 10, false);
      else for (size_t i = 0; i < in[1].bytes.size(); ++i) in[1].bytes[i] = uint8_t(100 + i % 60);
      CHECK(check_against_reference(jit(pd), in, "dequant " + f.str(), {64, 128}) == 0);
    }
}

TEST_CASE("dequantize in the direct kernel, 8 codes and one scale per chunk: formats, scale formats, blocks, tails, 3-D, strided codes") {
  MXJIT_REQUIRE_GPU();
  // Row-major outputs only (the direct kernel). Codes are random bytes (every code, NaNs
  // included); E8M0 scales include 0, 254 and 255 (NaN), FP32 scales are random and adversarial.
  int n = 0;
  for (ElemFormat f : kFormats)
    for (ScaleFormat sf : {ScaleFormat::e8m0, ScaleFormat::f32, ScaleFormat::e4m3})
      for (int64_t blk : {16, 32, 64}) {
        if (sf == ScaleFormat::e4m3 && f != e2m1) continue;
        const bool three = n % 3 == 1, tail = n % 2 == 1;
        const int64_t cols = f.packed() ? (tail ? 4 * blk + 10 : 4 * blk) : (tail ? 4 * blk + 13 : 4 * blk);
        const std::vector<int64_t> shape = three ? std::vector<int64_t>{3, 17, cols} : std::vector<int64_t>{37, cols};
        Expr d = dequantize("q", "s", f, sf, rank(int(shape.size())), int(shape.size()) - 1, blk);
        Pipeline pd = pipeline({output("y", d, DType::bf16), output("y32", d, DType::f32), output("yh", d, DType::f16)});
        std::vector<int64_t> cshape = shape, sshape = shape, cstrides;
        if (f.packed()) cshape.back() /= 2;
        sshape.back() = (cols + blk - 1) / blk;
        if (n % 4 == 3) {  // codes rows 1 byte apart from 16-byte alignment: the element-load path
          cstrides.assign(cshape.size(), 1);
          for (int a = int(cshape.size()) - 2; a >= 0; --a) cstrides[size_t(a)] = cstrides[size_t(a) + 1] * (cshape[size_t(a) + 1] + (a == int(cshape.size()) - 2));
        }
        std::vector<HostTensor> in;
        in.emplace_back(DType::u8, cshape, cstrides);
        in.emplace_back(sf == ScaleFormat::f32 ? DType::f32 : DType::u8, sshape);
        std::mt19937 r(uint32_t(100 + n));
        const unsigned mask = f.packed() || f.bits() >= 8 ? 0xffu : (1u << f.bits()) - 1u;
        for (auto& byte : in[0].bytes) byte = uint8_t(r() & mask);
        if (sf == ScaleFormat::f32) fill_random(in[1], uint64_t(n), true);
        else {
          const uint8_t special[] = {0, 254, 255, 127};
          for (size_t i = 0; i < in[1].bytes.size(); ++i)
            in[1].bytes[i] = i % 7 == 3 ? special[(i / 7) % 4] : uint8_t(sf == ScaleFormat::e4m3 ? r() % 0x7f : 100 + r() % 60);
        }
        CHECK(check_against_reference(jit(pd), in, fmt::format("dequant {} blk {} [{}]", f.str(), blk, fmt::join(shape, ",")), shape) == 0);
        ++n;
      }
  MESSAGE("direct dequant cases: " << n);
}

TEST_CASE("jagged MoE token groups: per-group per-column scales, any group sizes, any strides") {
  MXJIT_REQUIRE_GPU();
  auto x = input("x", DType::bf16, rank(2));
  auto sf = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3);
  Pipeline pf = pipeline({output("q", cast(e4m3, x / sf)), output("s", sf)});
  auto se = e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::rceil);
  Pipeline pe = pipeline({output("q", cast(e4m3, x / se), layout::col_major()), output("s", se)});
  auto sk = e8m0_scale(amax(groups(x, 1, offsets("offs"))), e2m3, ScaleRule::floor, NanPolicy::satfinite);
  Pipeline pk = pipeline({output("q", cast(e2m3, x / sk)), output("s", sk)});
  // torchao's per-group form: the multiplier itself, rounded down to a power of two.
  auto sm = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3, F32ScaleOptions{true, true});
  Pipeline pm = pipeline({output("q", cast(e4m3, x / sm), layout::col_major()), output("s", sm)});
  std::vector<std::vector<int32_t>> group_ends = {
      {0, 1, 32, 65, 1065, 1100},  // sizes 0, 1, 31, 33, 1000, 35
      {1100},                       // one group
      {300, 300, 300, 700},         // empty groups in the middle; rows 700.. belong to no group
      {5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 1100}};
  // Many small groups: 63 and 64 of growing sizes, tied in pairs (1, 1, 2, 2, ...) and in fours,
  // the last ending at row 1100 (a group's rows mostly in other row lanes' cache slots).
  for (int n : {63, 64}) {
    std::vector<int32_t> e;
    for (int g = 0, acc = 0; g < n; ++g) e.push_back(g + 1 == n ? 1100 : (acc += 1 + g / (n == 63 ? 2 : 4)));
    group_ends.push_back(e);
  }
  int cases = 0;
  for (const Pipeline* p : {&pf, &pe, &pk, &pm})
    for (const auto& ends : group_ends)
      for (bool colmajor : {false, true}) {
        const int64_t rows = p == &pk ? 96 : 1100, cols = p == &pk ? 1100 : 96;
        std::vector<HostTensor> in;
        in.emplace_back(DType::bf16, std::vector<int64_t>{rows, cols},
                        colmajor ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{});
        fill_random(in.back(), uint64_t(cases + 60), cases % 2 == 0);
        in.emplace_back(DType::i32, std::vector<int64_t>{int64_t(ends.size())});
        std::memcpy(in.back().bytes.data(), ends.data(), ends.size() * 4);
        CHECK(check_against_reference(jit(*p), in, "groups", {rows, cols}, int64_t(ends.size())) == 0);
        ++cases;
      }
  MESSAGE("jagged group cases: " << cases);
}

TEST_CASE("jagged groups, vector kernel: input types, formats, prologue, column tails, tunings") {
  MXJIT_REQUIRE_GPU();
  // Row-major input, codes along the rows: the 16-byte-load kernel (two passes per CTA).
  // Codes row-major, or column-major (the second pass in runs of 8 rows of a column).
  auto make = [](DType dt, ElemFormat f, int kind, bool cm) {
    auto x = input("x", dt, rank(2));
    Expr v = kind == 3 ? gelu(x * 0.75, Gelu::tanh) : Expr(x);
    Scale s = kind == 0 ? f32_scale(amax(groups(v, 0, offsets("offs"))), f)
                       : e8m0_scale(amax(groups(v, 0, offsets("offs"))), f, kind == 2 ? ScaleRule::floor : ScaleRule::rceil);
    CastOptions o;
    o.seed = 7;
    o.flush_subnormals = kind == 4;  // the group maxima (two 16-bit lanes at a time) flushed
    const Round rnd = kind == 2 ? Round::stochastic : Round::nearest_even;
    return pipeline({output("q", cast(f, v / s, rnd, Saturate::finite, o), cm ? layout::col_major() : layout::row_major()), output("s", s)});
  };
  struct Case { DType dt; ElemFormat f; int kind; };
  const Case cases[] = {{DType::bf16, e4m3, 0}, {DType::f16, e4m3, 1}, {DType::f32, e5m2, 0},
                        {DType::bf16, e2m3, 1}, {DType::bf16, int8, 1}, {DType::bf16, e4m3, 2}, {DType::bf16, e4m3, 3},
                        {DType::bf16, e4m3, 4}, {DType::f16, e5m2, 4}};
  const std::vector<std::vector<int32_t>> group_ends = {{0, 1, 32, 65, 1065, 1100}, {300, 300, 300, 700},
                                                        {5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 1100}};
  // Columns and row stride (0: contiguous). Contiguous 77-column rows are not 16-byte aligned: the
  // scalar kernel. Rows padded to 8 elements keep the vector kernel with a thread's last chunk cut
  // (77: 5 columns, 10 bf16 bytes of cp.async, or 16 + 4 f32; 67: 3 columns, 6 bytes or 12 + 0),
  // whole threads (96 at 64 per CTA) and a one-thread tile (520) past the last column.
  const std::vector<std::array<int64_t, 2>> widths = {{96, 0}, {77, 0}, {520, 0}, {77, 80}, {67, 72}};
  const bool clusters = current_target().sm() >= 90;
  int n = 0;
  for (size_t ci = 0; ci < 2 * std::size(cases); ++ci) {
    // Column-major codes from ci = |cases| on: 1104 rows (a column's runs 8-byte aligned; 1100
    // rows, odd columns' runs start 4 bytes off: stored byte by byte).
    const bool cm = ci >= std::size(cases);
    const Case& c = cases[ci % std::size(cases)];
    const Pipeline p = make(c.dt, c.f, c.kind, cm);
    std::vector<Schedule> tunings(1);
    auto tune = [&](int w, int th, int u, int mb, int k) {
      if (k > 1 && !clusters) return;
      tunings.push_back(Schedule{.tile_cols = w, .threads = th, .ctas_per_sm = mb, .rows_in_flight = u, .cluster = k});
    };
    // Columns per CTA x threads x rows in flight x CTAs per SM (which sizes the row cache: from
    // ~100 rows at 8 CTAs/SM to ~870 at 1, so groups of 1000 rows take both second-pass paths)
    // x CTAs per group (a cluster, sm_90+): with 2, a CTA's part of a 1000-row group overflows
    // its 418-row cache; 4 is the cluster's own default tuning.
    if (ci % std::size(cases) == 0)
      for (auto [w, th, u, mb, k] : {std::array{128, 512, 3, 1, 0}, std::array{256, 64, 1, 1, 0}, std::array{32, 256, 5, 8, 2},
                                     std::array{64, 256, 0, 0, 4}, std::array{64, 128, 4, 4, 8}})
        tune(w, th, u, mb, k);
    if (cm && ci % std::size(cases) == 0) {  // column-major runs of 16 and 4 rows, 64 columns per CTA
      tunings.push_back(Schedule{.tile_cols = 64, .rows_per_thread = 16});
      tunings.push_back(Schedule{.tile_cols = 64, .rows_per_thread = 4});
    }
    // f16 and f32 (other cp.async byte counts; two chunks a row of f32): a smaller cache (4
    // CTAs/SM: 428 f16 rows, 214 f32), clusters of 2 (8 CTAs/SM: 418 / 209 rows a CTA) and of 4
    // at the cluster's default CTAs/SM and unroll with 128 columns (202 / 101 rows a CTA): the
    // 250- and 500-row parts of the 1000-row group run past each CTA's cache.
    if (c.dt != DType::bf16 && !cm) {
      tune(64, 256, 0, 4, 0);
      tune(32, 256, 2, 8, 2);
      tune(128, 256, 0, 0, 4);
    }
    for (const Schedule& t : tunings) {
      Kernel k = jit(p, current_target(), t);
      for (const auto& ends : group_ends)
        for (auto [cols, stride] : widths) {
          const int64_t rows = cm && n % 2 == 0 ? 1104 : 1100;
          std::vector<HostTensor> in;
          in.emplace_back(c.dt, std::vector<int64_t>{rows, cols}, stride ? std::vector<int64_t>{stride, 1} : std::vector<int64_t>{});
          fill_random(in.back(), uint64_t(n + 300), n % 3 == 1);
          if (c.kind == 4) {
            // Rows 32..64 subnormal or zero (either sign): the 33-row group of the first ends holds
            // columns whose maximum is subnormal, flushed to a zero block.
            const int64_t pitch = stride ? stride : cols;
            for (int64_t r = 32; r < 65; ++r)
              for (int64_t col = 0; col < cols; ++col) {
                const uint16_t mag = uint16_t((r * 131 + col * 17) % (c.dt == DType::f16 ? 0x400 : 0x80));
                const uint16_t h = uint16_t(mag | ((r + col) % 3 == 0 ? 0x8000u : 0u));
                std::memcpy(in.back().bytes.data() + 2 * (r * pitch + col), &h, 2);
              }
          }
          in.emplace_back(DType::i32, std::vector<int64_t>{int64_t(ends.size())});
          std::memcpy(in.back().bytes.data(), ends.data(), ends.size() * 4);
          CHECK(check_against_reference(k, in, fmt::format("vector groups {} {} kind {} {} cols {} stride {} rows {}{}", dtype_name(c.dt),
                                                           c.f.str(), c.kind, t.str(), cols, stride, rows, cm ? " col-major codes" : ""),
                                        {rows, cols}, int64_t(ends.size())) == 0);
          ++n;
        }
    }
  }
  MESSAGE("vector jagged group cases: " << n);
}

TEST_CASE(
    "jagged groups, kernels chosen at launch by the groups' mean size: a cluster or fewer CTAs an SM for large groups, "
    "smaller CTAs for small ones") {
  MXJIT_REQUIRE_GPU();
  // A 2-byte input: the default module holds two kernels (JaggedPlan::plain); the launch takes the
  // second (row-major codes: a 2-CTA cluster; column-major codes: 2 CTAs an SM where the plain
  // kernel runs 3) where the groups' mean size passes the plain kernel's row cache. Column-major
  // codes add a third (JaggedPlan::small: CTAs of 128 threads) where the mean fits its cache.
  // Column-major codes with stochastic rounding: one kernel.
  auto make = [](DType dt, bool e8m0, Round rnd, bool cm) {
    auto x = input("x", dt, rank(2));
    Scale s = e8m0 ? e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::rceil)
                   : f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3);
    CastOptions o;
    o.seed = 11;
    return pipeline(
        {output("q", cast(e4m3, x / s, rnd, Saturate::finite, o), cm ? layout::col_major() : layout::row_major()),
         output("s", s)});
  };
  const int64_t rows = 4000;
  std::vector<std::vector<int32_t>> group_ends = {
      {0, 1800, 1800, 3500},                       // empty groups first and in the middle, rows 3500.. in no group
      {4000},                                      // one group
      {1, 3999},                                   // a 1-row group beside a 3998-row one (parts of 2000 and 1998)
      {10, 20, 30, 40, 50, 60, 70, 80, 90, 4000},  // mean 400: the plain (small) kernel, its last group past its cache
      {700, 1400, 2100, 2800, 3500, 4000}};        // mean 667: the plain kernel, past the small one's cache
  {
    std::vector<int32_t> e;  // 64 groups of 62 or 63 rows: the plain (small) kernel
    for (int g = 1; g <= 64; ++g) e.push_back(int32_t(g * rows / 64));
    group_ends.push_back(e);
  }
  {
    std::vector<int32_t> e;  // 16 groups of 250 rows, starting mid-sector: the plain (small) kernel
    for (int g = 1; g <= 16; ++g) e.push_back(int32_t(g * 250 - (g < 16 ? 3 : 0)));
    group_ends.push_back(e);
  }
  int n = 0, clustered = 0, plain = 0, small = 0;
  for (bool cm : {false, true})
    for (DType dt : {DType::bf16, DType::f16})
      for (bool e8m0 : {false, true})
        for (Round rnd : {Round::nearest_even, Round::stochastic}) {
          if (cm && e8m0) continue;
          const Pipeline p = make(dt, e8m0, rnd, cm);
          const Kernel k = jit(p);
          const detail::Plan pl = detail::make_plan(p, current_target(), detail::StrideClass{{1, 0}, {true, false}});
          const bool two = pl.jagged().plain.has_value();  // sm_90+
          CHECK(two == (current_target().max_cluster() >= 2 && !(cm && rnd == Round::stochastic)));
          for (auto [cols, stride] : {std::array<int64_t, 2>{96, 0}, {77, 80}, {520, 0}}) {
            for (const auto& ends : group_ends) {
              const int entry = pl.launch({rows, cols}, int64_t(ends.size())).entry;
              const bool cluster = entry == 1;
              const int64_t G = int64_t(ends.size());
              if (two) CHECK(cluster == (rows > G * pl.jagged().plain->cached_rows));
              CHECK(pl.jagged().small.has_value() == (two && cm));
              if (pl.jagged().small) CHECK((entry == 2) == (rows <= G * pl.jagged().small->cached_rows));
              (cluster ? clustered : entry == 2 ? small : plain) += 1;
              std::vector<HostTensor> in;
              in.emplace_back(dt, std::vector<int64_t>{rows, cols},
                              stride ? std::vector<int64_t>{stride, 1} : std::vector<int64_t>{});
              fill_random(in.back(), uint64_t(n + 900), n % 3 == 1);
              in.emplace_back(DType::i32, std::vector<int64_t>{int64_t(ends.size())});
              std::memcpy(in.back().bytes.data(), ends.data(), ends.size() * 4);
              CHECK(check_against_reference(
                        k, in,
                        fmt::format("two kernels {} {} {} {} cols {} stride {} groups {} ({})",
                                    cm ? "col-major" : "row-major", dtype_name(dt), e8m0 ? "e8m0" : "f32",
                                    rnd == Round::stochastic ? "stochastic" : "nearest", cols, stride, ends.size(),
                                    cluster      ? "second kernel"
                                    : entry == 2 ? "small groups' kernel"
                                                 : "plain"),
                        {rows, cols}, int64_t(ends.size())) == 0);
              ++n;
            }
          }
        }
  CHECK(plain > 0);
  if (current_target().max_cluster() >= 2) CHECK(clustered > 0);
  if (current_target().max_cluster() >= 2) CHECK(small > 0);
  MESSAGE("several-kernel jagged cases: " << n << " (" << clustered << " second kernel, " << small
                                          << " small groups' kernel, " << plain << " plain)");
}

TEST_CASE("jagged groups along the unit-stride axis: a warp per row, rows in flight, formats, prologue, strides") {
  MXJIT_REQUIRE_GPU();
  // Per-group rowwise scales of row-major inputs (groups along the rows' unit-stride axis): a warp per
  // row, its lanes on consecutive elements, 1, 4 (the default) or 16 of them in flight a lane, so that
  // groups end inside a lane's chunk; rows contiguous or padded, codes row-major or column-major.
  auto make = [](DType dt, ElemFormat f, int kind, bool cm) {
    auto x = input("x", dt, rank(2));
    Expr v = kind == 1 ? gelu(x * 0.75, Gelu::tanh) : Expr(x);
    Scale s = kind == 2 ? e8m0_scale(amax(groups(v, 1, offsets("offs"))), f, ScaleRule::rceil)
                        : f32_scale(amax(groups(v, 1, offsets("offs"))), f, F32ScaleOptions{kind == 0, kind == 0});
    CastOptions o;
    o.seed = 11;
    o.flush_subnormals = kind == 3;
    return pipeline({output("q", cast(f, v / s, kind == 2 ? Round::stochastic : Round::nearest_even, Saturate::finite, o),
                            cm ? layout::col_major() : layout::row_major()),
                     output("s", s)});
  };
  const std::vector<std::vector<int32_t>> group_ends = {{0, 1, 7, 9, 16, 300, 1000, 1100}, {300, 300, 300, 700}, {1100},
                                                        {3, 517, 519, 520, 777, 1041, 1100}};
  int n = 0;
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (int kind = 0; kind < 4; ++kind)
      for (bool cm : {false, true}) {
        if (cm && kind != 0) continue;
        const Pipeline p = make(dt, kind == 3 ? e5m2 : e4m3, kind, cm);
        for (const Schedule& t : {Schedule{}, Schedule{.rows_in_flight = 1}, Schedule{.rows_in_flight = 16}}) {
          if (kind != 0 && !t.is_default()) continue;
          Kernel k = jit(p, current_target(), t);
          for (auto [len, stride] : {std::array<int64_t, 2>{1104, 0}, {1100, 0}, {1100, 1101}, {1100, 1104}})
            for (const auto& ends : group_ends) {
              const int64_t rows = 37;
              std::vector<HostTensor> in;
              in.emplace_back(dt, std::vector<int64_t>{rows, len}, stride ? std::vector<int64_t>{stride, 1} : std::vector<int64_t>{});
              fill_random(in.back(), uint64_t(n + 900), n % 3 == 1);
              in.emplace_back(DType::i32, std::vector<int64_t>{int64_t(ends.size())});
              std::memcpy(in.back().bytes.data(), ends.data(), ends.size() * 4);
              const std::string label = fmt::format("lanes {} kind {} {} len {} stride {} ends {}{}", dtype_name(dt), kind, t.str(), len,
                                                    stride, ends.size(), cm ? " col-major codes" : "");
              CHECK(check_against_reference(k, in, label, {rows, len}, int64_t(ends.size())) == 0);
              ++n;
            }
        }
      }
  MESSAGE("lane cases: " << n);
}

}  // TEST_SUITE
