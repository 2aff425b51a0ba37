// grouped_blocked_128x4 scales on the GPU (grouped GEMMs, MoE): every byte of every output
// against the CPU reference, for both group axes of the dim0 cast (blocks along K; token groups
// split the scale rows, K groups the scale columns) and of the dim1 cast (blocks along M; the
// MN-major variant), bf16 and f32 inputs, row- and column-major inputs (so both the direct and
// the tiled kernel write them), E8M0 scales of several formats and NVFP4's E4M3 scales. Group
// sizes 0, 1, 31, 33 and 1000, 17 groups with empty ones in the middle, no groups at all, rows
// past the last end, and ends the device clamps (negative, decreasing, past the extent). Outputs
// are poisoned (reference 0xA5, GPU 0x5A) so an unwritten padding byte is a mismatch, and the
// guard bytes after the GPU's scale buffer must stay untouched. Skips without a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "gpu/check.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

/// The scale recipes the grouped layout is checked with.
enum class Recipe { e4m3_rceil, e2m1_floor, e5m2_satfinite, int8_even, nvfp4_te };

/// Elements per scale along the block axis.
int64_t block_size(Recipe r) { return r == Recipe::nvfp4_te ? 16 : 32; }

/// A cast of x (rank 2) with blocks along `block_axis` (1: dim0, codes row-major; 0: dim1, codes
/// column-major) and its scales in grouped_blocked_128x4 along domain axis `group_axis`, ends in
/// input "offs". `linear_too` adds the same scales as a second, linear output.
Pipeline grouped_cast(DType dt, int block_axis, int group_axis, Recipe r, bool codes = true, bool linear_too = false) {
  auto x = input("x", dt, rank(2));
  const Layout q_layout = block_axis == 1 ? layout::row_major() : layout::col_major();
  const Layout s_layout = layout::grouped_blocked_128x4(offsets("offs"), group_axis);
  auto make = [&](ElemFormat f, Scale s) {
    std::vector<Output> outs;
    if (codes) outs.push_back(output("q", cast(f, x / s), q_layout));
    outs.push_back(output("s", s, s_layout));
    if (linear_too) outs.push_back(output("s_linear", s));
    return pipeline(outs);
  };
  auto blk = blocks(x, block_axis, block_size(r));
  switch (r) {
    case Recipe::e4m3_rceil: return make(e4m3, e8m0_scale(amax(blk), e4m3, ScaleRule::rceil));
    case Recipe::e2m1_floor: return make(e2m1, e8m0_scale(amax(blk), e2m1, ScaleRule::floor));
    case Recipe::e5m2_satfinite: return make(e5m2, e8m0_scale(amax(blk), e5m2, ScaleRule::ceil, NanPolicy::satfinite));
    case Recipe::int8_even: return make(int8, e8m0_scale(amax(blk), int8, ScaleRule::even));
    case Recipe::nvfp4_te: return make(e2m1, nvfp4_scale(amax(blk), Nvfp4Convention::te));
  }
  return make(e4m3, e8m0_scale(amax(blk), e4m3, ScaleRule::rceil));
}

/// Group sizes in scale units along the grouped axis, then `past` scale units that belong to no
/// group. With `tail` > 0 (blocked axes only) the extent is cut `tail` elements short of whole
/// blocks and every end at the full extent becomes the extent (the tail block's group end).
struct Groups {
  const char* name;
  std::vector<int64_t> sizes;
  int64_t past = 0;
  int64_t tail = 0;
};

const std::vector<Groups>& group_sets() {
  static const std::vector<Groups> sets = {
      {"sizes 0,1,31,33,1000 + 7 past the end", {0, 1, 31, 33, 1000}, 7, 0},
      {"17 groups, empty ones in the middle, 40 past the end", {3, 0, 0, 129, 1, 0, 31, 33, 128, 127, 0, 0, 5, 64, 1, 0, 2}, 40, 0},
      {"one group over everything, tail block", {300}, 0, 6},
      {"no groups: nothing stored", {}, 50, 0},
      {"empty groups only, all past the end", {0, 0, 0}, 20, 0},
      {"trailing empty groups at the extent, tail block", {100, 28, 0, 0}, 0, 6},
      // More groups than a warp has lanes: the direct kernel's warp search runs 32 groups at a time.
      {"70 groups (three warp chunks), empty ones across the chunk edges, 9 past the end",
       {5, 0, 17, 1, 33, 0, 0, 2, 64, 9, 3, 0, 1, 12, 40, 0, 7, 31, 0, 0, 2, 5, 128, 1, 0, 6, 0, 3, 11, 0, 0, 0,
        0, 4, 19, 1, 0, 0, 2, 8, 30, 1, 0, 5, 3, 0, 1, 0, 16, 2, 0, 0, 9, 1, 1, 0, 2, 4, 0, 0, 0, 0, 0, 0,
        3, 1, 0, 2, 0, 6},
       9, 0},
  };
  return sets;
}

/// The domain extent along the grouped axis and the int32 group ends (domain units), with
/// `unit` domain elements per scale along that axis.
std::pair<int64_t, std::vector<int32_t>> domain_ends(const Groups& g, int64_t unit) {
  int64_t total = g.past;
  for (int64_t s : g.sizes) total += s;
  const int64_t tail = unit > 1 ? g.tail : 0;
  const int64_t extent = total * unit - tail;
  std::vector<int32_t> ends;
  int64_t e = 0;
  for (int64_t s : g.sizes) {
    e += s;
    ends.push_back(int32_t(std::min(e * unit, extent)));
  }
  return {extent, ends};
}

/// Runs `p` on the GPU with group ends `gpu_ends` and the reference with `ref_ends` (the same,
/// except where a test gives the GPU ends it must clamp), compares every byte of every output,
/// and checks the 64 guard bytes after each GPU output. Returns the number of bad bytes.
int64_t check_grouped(const Pipeline& p, DType dt, std::vector<int64_t> shape, bool col_major_input,
                      const std::vector<int32_t>& ref_ends, const std::vector<int32_t>& gpu_ends, uint64_t seed,
                      bool adversarial, const std::string& label, size_t out_shift = 0) {
  REQUIRE(p.inputs().size() == 2);
  REQUIRE(p.inputs()[1].name == "offs");
  REQUIRE(ref_ends.size() == gpu_ends.size());
  const int64_t G = int64_t(ref_ends.size());
  // Two tensors each (HostTensor views point into their own bytes: built, never copied).
  auto tensors = [&](const std::vector<int32_t>& ends) {
    std::vector<HostTensor> t;
    t.emplace_back(dt, shape, col_major_input ? std::vector<int64_t>{1, shape[0]} : std::vector<int64_t>{});
    fill_random(t.back(), seed, adversarial);
    t.emplace_back(DType::i32, std::vector<int64_t>{G});
    if (G > 0) std::memcpy(t.back().bytes.data(), ends.data(), ends.size() * 4);
    return t;
  };
  std::vector<HostTensor> ref_in = tensors(ref_ends), gpu_in = tensors(gpu_ends);
  return check_against_reference(jit(p), ref_in, label, shape, G, &gpu_in, out_shift);
}

/// One (dim, group axis) combination over every group set, both input dtypes and both input
/// orders, E4M3 codes with RCEIL E8M0 scales. `other` is the extent of the axis not grouped.
int run_combination(int block_axis, int group_axis, int64_t other) {
  const int64_t unit = group_axis == block_axis ? 32 : 1;
  int cases = 0;
  for (const Groups& g : group_sets()) {
    if (g.tail > 0 && unit == 1) continue;  // a tail block exists on blocked axes only
    auto [extent, ends] = domain_ends(g, unit);
    std::vector<int64_t> shape(2);
    shape[size_t(group_axis)] = extent;
    shape[size_t(1 - group_axis)] = other;
    for (DType dt : {DType::bf16, DType::f32})
      for (bool col_major_input : {false, true}) {
        const Pipeline p = grouped_cast(dt, block_axis, group_axis, Recipe::e4m3_rceil);
        const std::string label = fmt::format("dim{} groups along axis {}, {}, {} {} input [{}], ends [{}]", 1 - block_axis,
                                              group_axis, g.name, dtype_name(dt), col_major_input ? "column-major" : "row-major",
                                              fmt::join(shape, ","), fmt::join(ends, ","));
        CHECK_MESSAGE(check_grouped(p, dt, shape, col_major_input, ends, ends, uint64_t(100 + cases), cases % 3 == 0, label) == 0,
                      label);
        ++cases;
      }
  }
  return cases;
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("grouped_blocked_128x4 on the GPU: dim0, token groups along the scale rows") {
  MXJIT_REQUIRE_GPU();
  MESSAGE("cases: " << run_combination(/*block_axis=*/1, /*group_axis=*/0, /*K=*/200));
}

TEST_CASE("grouped_blocked_128x4 on the GPU: dim0, K groups along the scale columns") {
  MXJIT_REQUIRE_GPU();
  MESSAGE("cases: " << run_combination(/*block_axis=*/1, /*group_axis=*/1, /*M=*/45));
}

TEST_CASE("grouped_blocked_128x4 on the GPU: dim1 (MN-major), token groups along the scale columns") {
  MXJIT_REQUIRE_GPU();
  MESSAGE("cases: " << run_combination(/*block_axis=*/0, /*group_axis=*/0, /*K=*/70));
}

TEST_CASE("grouped_blocked_128x4 on the GPU: dim1 (MN-major), K groups along the scale rows") {
  MXJIT_REQUIRE_GPU();
  MESSAGE("cases: " << run_combination(/*block_axis=*/0, /*group_axis=*/1, /*M=*/64));
}

TEST_CASE("grouped_blocked_128x4 on the GPU: other element formats, rules, NaN policies and NVFP4 scales") {
  MXJIT_REQUIRE_GPU();
  const Groups& g = group_sets()[1];  // 17 groups with empty ones
  int cases = 0;
  for (Recipe r : {Recipe::e2m1_floor, Recipe::e5m2_satfinite, Recipe::int8_even, Recipe::nvfp4_te})
    for (int block_axis : {1, 0})
      for (int group_axis : {0, 1})
        for (bool col_major_input : {false, true}) {
          const int64_t unit = group_axis == block_axis ? block_size(r) : 1;
          auto [extent, ends] = domain_ends(g, unit);
          std::vector<int64_t> shape(2);
          shape[size_t(group_axis)] = extent;
          shape[size_t(1 - group_axis)] = 96;
          const DType dt = cases % 2 ? DType::f32 : DType::bf16;
          const Pipeline p = grouped_cast(dt, block_axis, group_axis, r);
          const std::string label = fmt::format("recipe {} dim{} groups along axis {} {} input [{}]", int(r), 1 - block_axis,
                                                group_axis, col_major_input ? "column-major" : "row-major", fmt::join(shape, ","));
          CHECK_MESSAGE(check_grouped(p, dt, shape, col_major_input, ends, ends, uint64_t(500 + cases), true, label) == 0, label);
          ++cases;
        }
  MESSAGE("cases: " << cases);
}

TEST_CASE("grouped_blocked_128x4 on the GPU: scales only, beside linear scales, and dim0 + dim1 from one read") {
  MXJIT_REQUIRE_GPU();
  const std::vector<int32_t> ends = {0, 1, 32, 65, 1065};  // rows: sizes 0, 1, 31, 33, 1000; 35 rows past the end
  for (bool col_major_input : {false, true}) {
    const std::vector<int64_t> shape = {1100, 160};
    CHECK(check_grouped(grouped_cast(DType::bf16, 1, 0, Recipe::e4m3_rceil, /*codes=*/false), DType::bf16, shape,
                        col_major_input, ends, ends, 700, true, "scales only") == 0);
    CHECK(check_grouped(grouped_cast(DType::bf16, 1, 0, Recipe::e4m3_rceil, true, /*linear_too=*/true), DType::bf16, shape,
                        col_major_input, ends, ends, 701, false, "grouped and linear scales") == 0);
  }
  // MoE: token groups along M (multiples of 32) for the dim0 scales (rows) and the dim1 scales
  // (columns) of one cast pair, one offsets input, one read of x (the tiled kernel).
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  const Layout by_tokens = layout::grouped_blocked_128x4(offsets("offs"), 0);
  const Pipeline both = pipeline({output("q0", cast(e4m3, x / s0)), output("s0", s0, by_tokens),
                                  output("q1", cast(e4m3, x / s1), layout::col_major()), output("s1", s1, by_tokens)});
  const std::vector<int32_t> token_ends = {0, 32, 992, 992, 2048, 2080, 2270};  // M = 2270: the last group ends in a tail block
  for (bool col_major_input : {false, true})
    CHECK(check_grouped(both, DType::bf16, {2270, 192}, col_major_input, token_ends, token_ends, 702, true, "dim0 + dim1") == 0);
}

TEST_CASE(
    "grouped_blocked_128x4 on the GPU: token groups' padding written by the direct kernel (any buffer start, grid-stride bands)") {
  MXJIT_REQUIRE_GPU();
  // The direct kernel zeroes the padding rows and columns itself (mx_grouped_rows_pad; no memset):
  // every byte of the poisoned buffer is compared, at buffer starts 1, 2, 4 and 8 bytes past a
  // 16-byte boundary, for K with and without padding columns (C = 7, 8, 129), and for more bands
  // than the grid has warps (one row, 300 groups: each warp walks several bands).
  std::vector<int32_t> many(300);
  for (int h = 0; h < 300; ++h) many[size_t(h)] = h == 150 ? 1 : (h > 150 ? 1 : 0);
  const std::vector<int32_t> ends = {0, 1, 32, 65, 1065};
  int n = 0;
  for (size_t shift : {size_t(0), size_t(1), size_t(2), size_t(4), size_t(8)})
    for (int64_t K : {200, 256, 4128}) {
      const Pipeline p = grouped_cast(DType::bf16, 1, 0, Recipe::e4m3_rceil);
      REQUIRE(detail::make_plan(p, current_target(), detail::default_stride_class(p)).zero_outputs.empty());
      const std::string label = fmt::format("token groups, K {}, buffer start +{}", K, shift);
      CHECK(check_grouped(p, DType::bf16, {1100, K}, false, ends, ends, 900 + n, n % 2 == 0, label, shift) == 0);
      CHECK(check_grouped(p, DType::bf16, {1, K}, false, many, many, 950 + n, false,
                          label + ", 300 groups over one row", shift) == 0);
      ++n;
    }
  MESSAGE("cases: " << n);
}

TEST_CASE(
    "grouped_blocked_128x4 on the GPU: K groups' padding written by the columns kernel (any buffer start, the tail past "
    "the groups)") {
  MXJIT_REQUIRE_GPU();
  // The columns kernel with its K-group table zeroes the padding itself (no memset): a group's last
  // scale column the columns up to its padded width, the last tile the rows up to a multiple of
  // 128, and the whole grid the buffer past the groups (mx_zero_grid). Every byte of the poisoned
  // buffer is compared, at buffer starts 0, 1, 2, 4 and 8 bytes past a 16-byte boundary, for N with
  // and without padding rows, groups of every width modulo 4 (and empty), ends short of the extent
  // (columns stored nowhere), all groups empty (the whole buffer is the tail) and 300 groups.
  const std::vector<int32_t> ends = {0, 32, 96, 1056, 2080, 4000};
  std::vector<int32_t> many(300);
  for (int h = 0; h < 300; ++h) many[size_t(h)] = int32_t(std::min(4128, 32 * (h / 2) + (h % 7 == 0 ? 64 : 0)));
  for (int h = 1; h < 300; ++h) many[size_t(h)] = std::max(many[size_t(h)], many[size_t(h) - 1]);
  const std::vector<int32_t> empty = {0, 0, 0};
  int n = 0;
  for (size_t shift : {size_t(0), size_t(1), size_t(2), size_t(4), size_t(8)})
    for (int64_t N : {70, 256, 1000}) {
      const Pipeline p = grouped_cast(DType::bf16, 0, 0, Recipe::e4m3_rceil);
      const detail::Plan plan = detail::make_plan(p, current_target(), detail::default_stride_class(p));
      REQUIRE(plan.kind == KernelKind::columns);
      REQUIRE(plan.zero_outputs.empty());
      const std::string label = fmt::format("K groups, N {}, buffer start +{}", N, shift);
      CHECK(check_grouped(p, DType::bf16, {4128, N}, false, ends, ends, 1000 + n, n % 2 == 0, label, shift) == 0);
      CHECK(check_grouped(p, DType::bf16, {4128, N}, false, many, many, 1050 + n, false, label + ", 300 groups",
                          shift) == 0);
      CHECK(check_grouped(p, DType::bf16, {4128, N}, false, empty, empty, 1100 + n, false,
                          label + ", every group empty", shift) == 0);
      ++n;
    }
  MESSAGE("cases: " << n);
}

TEST_CASE("grouped_blocked_128x4 on the GPU: ends the device clamps (negative, decreasing, past the extent)") {
  MXJIT_REQUIRE_GPU();
  // The device does not validate the ends (no host synchronisation); it clamps each into
  // [previous end, extent], so it writes what the reference writes for the clamped ends, and
  // nothing outside the buffer.
  const std::vector<int32_t> gpu_rows = {-5, 40, 20, 300, 5000, 100000}, ref_rows = {0, 40, 40, 300, 1100, 1100};
  const std::vector<int32_t> gpu_cols = {-1, 64, 32, 4096, 1 << 30}, ref_cols = {0, 64, 64, 1600, 1600};
  // 40 ends (two warp chunks): negative, a dip across the chunk edge, past the extent.
  std::vector<int32_t> gpu_many, ref_many;
  for (int h = 0; h < 40; ++h) gpu_many.push_back(h == 0 ? -7 : h == 33 ? 100 : h == 38 ? 5000 : 27 * h);
  for (int32_t e : gpu_many) ref_many.push_back(std::clamp(e, ref_many.empty() ? 0 : ref_many.back(), int32_t(1000)));
  for (bool col_major_input : {false, true}) {
    CHECK(check_grouped(grouped_cast(DType::bf16, 1, 0, Recipe::e4m3_rceil), DType::bf16, {1000, 64}, col_major_input,
                        ref_many, gpu_many, 802, false, "40 clamped row ends") == 0);
    CHECK(check_grouped(grouped_cast(DType::bf16, 1, 0, Recipe::e4m3_rceil), DType::bf16, {1100, 96}, col_major_input,
                        ref_rows, gpu_rows, 800, false, "clamped row ends") == 0);
    CHECK(check_grouped(grouped_cast(DType::f32, 1, 1, Recipe::e4m3_rceil), DType::f32, {40, 1600}, col_major_input,
                        ref_cols, gpu_cols, 801, false, "clamped column ends") == 0);
  }
}

}  // TEST_SUITE
