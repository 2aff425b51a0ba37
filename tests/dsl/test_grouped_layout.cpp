// Grouped blocked layouts (per-group 128x4 scales for grouped GEMMs) and layout inverses:
// every index against the definition written out in dsl/layout.hpp, random group ends with
// empty groups, inverses, padding, text form and pipeline binding.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/layout.hpp"
#include "dsl/pipeline.hpp"
#include "dsl/text.hpp"

using namespace mxjit;

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// The 128x4 atom formula of docs/design.md §5 for a matrix with `cp` padded columns.
int64_t atom128(int64_t r, int64_t c, int64_t cp) {
  return ((r / 128) * (cp / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

/// Random non-decreasing ends over `extent` with `g` groups: some empty, the last == extent
/// unless `short_tail` (then rows past the last end are in no group).
std::vector<int64_t> random_ends(std::mt19937_64& rng, int64_t extent, int g, bool short_tail) {
  std::vector<int64_t> e(static_cast<size_t>(g), 0);
  for (int64_t& v : e) v = extent == 0 ? 0 : int64_t(rng() % uint64_t(extent + 1));
  if (rng() % 3 == 0 && g > 1) e[size_t(rng() % uint64_t(g))] = 0;  // empty leading groups
  std::sort(e.begin(), e.end());
  if (g > 2) e[1] = e[0];  // an empty group in the middle
  if (!short_tail) e.back() = extent;
  return e;
}

/// Expected offset of (r, c) by the definition in dsl/layout.hpp, written independently:
/// groups walked one by one, each a complete blocked tensor at its padded start.
int64_t expected_offset(bool by_rows, const std::vector<int64_t>& ends, int64_t rows, int64_t cols, int64_t r,
                        int64_t c) {
  const int64_t rp = round_up(rows, 128), cp = round_up(cols, 4);
  int64_t start = 0, padded = 0;
  for (int64_t end : ends) {
    const int64_t n = end - start;
    const int64_t i = by_rows ? r : c;
    if (i >= start && i < end) {
      if (by_rows) return padded * cp + atom128(r - start, c, cp);
      return padded * rp + atom128(r, c - start, round_up(n, 4));
    }
    padded += round_up(n, by_rows ? 128 : 4);
    start = end;
  }
  return -1;
}

/// Checks a grouped layout over every index of [rows, cols] with `ends` (scale units).
void check_grouped(bool by_rows, int64_t rows, int64_t cols, const std::vector<int64_t>& ends) {
  const Layout l = Layout::grouped_blocked_128x4("offs", by_rows ? 0 : 1);
  const std::vector<int64_t> shape = {rows, cols};
  const BoundLayout bl = l.bind(2, 0, 1);
  const int64_t storage = bl.size_bound(shape, int64_t(ends.size()));
  const int64_t g = int64_t(ends.size());
  REQUIRE(storage == (by_rows ? (round_up(rows, 128) + 128 * g) * round_up(cols, 4)
                              : round_up(rows, 128) * (round_up(cols, 4) + 4 * g)));
  std::vector<int> hits(size_t(storage), 0);
  int64_t mismatches = 0, out_of_range = 0, inverse_bad = 0, stored = 0;
  const int64_t last = ends.empty() ? 0 : ends.back();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const std::vector<int64_t> idx = {r, c};
      const int64_t off = bl.offset(idx, shape, ends);
      if (off != expected_offset(by_rows, ends, rows, cols, r, c)) ++mismatches;
      if ((by_rows ? r : c) >= last) {
        if (off != -1) ++mismatches;
        continue;
      }
      ++stored;
      if (off < 0 || off >= storage) { ++out_of_range; continue; }
      ++hits[size_t(off)];
      auto back = bl.index_at(off, shape, ends);
      if (!back || *back != idx) ++inverse_bad;
    }
  CHECK(mismatches == 0);
  CHECK(out_of_range == 0);
  CHECK(inverse_bad == 0);
  // Injective, and every other position is padding (index_at says so).
  int64_t twice = 0, padding_bad = 0;
  for (int64_t o = 0; o < storage; ++o) {
    if (hits[size_t(o)] > 1) ++twice;
    if (hits[size_t(o)] == 0 && bl.index_at(o, shape, ends)) ++padding_bad;
  }
  CHECK(twice == 0);
  CHECK(padding_bad == 0);
  // Each non-empty group's first scale sits at its padded start: 128-row or 4-column aligned.
  int64_t start = 0, padded = 0;
  for (int64_t end : ends) {
    if (end > start) {
      const std::vector<int64_t> first = by_rows ? std::vector<int64_t>{start, 0} : std::vector<int64_t>{0, start};
      const int64_t off = bl.offset(first, shape, ends);
      CHECK(off == padded * (by_rows ? round_up(cols, 4) : round_up(rows, 128)));
      CHECK(padded % (by_rows ? 128 : 4) == 0);
    }
    padded += round_up(end - start, by_rows ? 128 : 4);
    start = end;
  }
  CHECK(padded * (by_rows ? round_up(cols, 4) : round_up(rows, 128)) <= storage);
}

}  // namespace

TEST_CASE("grouped_blocked_128x4 by rows: every index, random ends with empty groups, any group count") {
  std::mt19937_64 rng(11);
  for (int64_t rows : {int64_t(0), int64_t(1), int64_t(31), int64_t(33), int64_t(130), int64_t(1030)})
    for (int64_t cols : {int64_t(1), int64_t(3), int64_t(4), int64_t(7)})
      for (int g : {1, 2, 3, 5, 7, 16, 33}) {
        INFO("rows " << rows << " cols " << cols << " groups " << g);
        check_grouped(true, rows, cols, random_ends(rng, rows, g, false));
        check_grouped(true, rows, cols, random_ends(rng, rows, g, true));
      }
}

TEST_CASE("grouped_blocked_128x4 by columns: every index, random ends with empty groups") {
  std::mt19937_64 rng(12);
  for (int64_t rows : {int64_t(1), int64_t(33), int64_t(129)})
    for (int64_t cols : {int64_t(0), int64_t(1), int64_t(5), int64_t(9), int64_t(40)})
      for (int g : {1, 2, 3, 6, 11}) {
        INFO("rows " << rows << " cols " << cols << " groups " << g);
        check_grouped(false, rows, cols, random_ends(rng, cols, g, false));
        check_grouped(false, rows, cols, random_ends(rng, cols, g, true));
      }
}

TEST_CASE("grouped layouts: the diagram's example (130 rows, an empty group, 5 rows)") {
  const std::vector<int64_t> ends = {130, 130, 135};
  const BoundLayout l = layout::grouped_blocked_128x4(offsets("offs"), 0).bind(2, 0, 1);
  const std::vector<int64_t> shape = {135, 4};
  CHECK(l.offset(std::vector<int64_t>{0, 0}, shape, ends) == 0);
  CHECK(l.offset(std::vector<int64_t>{129, 3}, shape, ends) == atom128(129, 3, 4));
  CHECK(l.offset(std::vector<int64_t>{130, 0}, shape, ends) == 256 * 4);  // P_2 = 256 rows
  CHECK(l.offset(std::vector<int64_t>{134, 2}, shape, ends) == 256 * 4 + atom128(4, 2, 4));
}

TEST_CASE("layout inverses: index_at(offset(i)) == i for every layout, padding is nullopt") {
  const std::vector<Layout> layouts = {Layout::row_major(), Layout::col_major(), Layout::expert_col_major(),
                                       Layout::permuted({1, 2, 0}), Layout::blocked_128x4(), Layout::blocked_8x4()};
  const std::vector<int64_t> shape = {3, 130, 7};
  for (const Layout& l : layouts) {
    INFO(l.str());
    const BoundLayout bl = l.uses_roles() ? l.bind(3, 1, 2) : l.bind(3);
    const int64_t storage = bl.size(shape);
    std::vector<int> hit(size_t(storage), 0);
    int64_t bad = 0;
    for (int64_t a = 0; a < shape[0]; ++a)
      for (int64_t b = 0; b < shape[1]; ++b)
        for (int64_t c = 0; c < shape[2]; ++c) {
          const std::vector<int64_t> idx = {a, b, c};
          const int64_t off = bl.offset(idx, shape);
          REQUIRE(off >= 0);
          REQUIRE(off < storage);
          ++hit[size_t(off)];
          auto back = bl.index_at(off, shape);
          if (!back || *back != idx) ++bad;
        }
    CHECK(bad == 0);
    int64_t padding_bad = 0;
    for (int64_t o = 0; o < storage; ++o)
      if ((hit[size_t(o)] == 0) != !bl.index_at(o, shape)) ++padding_bad;
    CHECK(padding_bad == 0);
    CHECK_FALSE(bl.index_at(storage, shape));
    CHECK_FALSE(bl.index_at(-1, shape));
  }
}

TEST_CASE("grouped layouts are values: printed, parsed, compared, hashed") {
  const Layout a = layout::grouped_blocked_128x4(offsets("offs"), 0);
  CHECK(a.str() == "grouped_blocked128x4(0,offs)");
  CHECK(Layout::parse(a.str()) == a);
  CHECK(detail::is_blocked(a));
  CHECK(a.grouped());
  CHECK(a.group_offsets() == "offs");
  CHECK(a.group_axis() == 0);
  CHECK(a != Layout::blocked_128x4());
  CHECK(a != layout::grouped_blocked_128x4(offsets("offs"), 1));
  CHECK(a != layout::grouped_blocked_128x4(offsets("ends"), 0));
  CHECK_FALSE(Layout::blocked_128x4().grouped());
  CHECK_THROWS_AS(Layout::parse("grouped_blocked128x4"), UsageError);
  CHECK_THROWS_AS(Layout::parse("grouped_blocked128x4(x,offs)"), UsageError);
  CHECK_THROWS_AS(Layout::parse("grouped_blocked128x4(0,of-fs)"), UsageError);
  CHECK_THROWS_AS(Layout::grouped_blocked_128x4("", 0), UsageError);
  CHECK_THROWS_AS(Layout::grouped_blocked_128x4("offs", -1), UsageError);
}

TEST_CASE("pipelines with a grouped scale layout take the offsets input and hash it") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto q = cast(e4m3, x / s);
  auto p = pipeline({output("q", q), output("s", s, layout::grouped_blocked_128x4(offsets("offs"), 0))});
  REQUIRE(p.inputs().size() == 2);
  CHECK(p.inputs()[1].name == "offs");
  CHECK(p.inputs()[1].kind == InputDecl::Kind::offsets);
  CHECK(p.inputs()[1].dtype == DType::i32);
  CHECK(p.inputs()[1].axis == 0);
  auto plain = pipeline({output("q", q), output("s", s, layout::blocked_128x4())});
  auto other = pipeline({output("q", q), output("s", s, layout::grouped_blocked_128x4(offsets("ends"), 0))});
  CHECK(p.hash() != plain.hash());
  CHECK(p.hash() != other.hash());
  // The short text form spells it and round-trips.
  auto t = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:grouped_blocked128x4(0,offs)");
  CHECK(t.hash() == p.hash());
  CHECK(to_text(p) == "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(1,32) q:row_major s:grouped_blocked128x4(0,offs)");
  // Geometry: the host-side upper bound, no offsets read.
  const std::vector<int64_t> shape = {1000, 96};
  OutputGeometry g = output_geometry(p, 1, shape, 7);
  CHECK(g.logical_shape == std::vector<int64_t>{1000, 3});
  CHECK(g.storage_bytes == (1024 + 128 * 7) * 4);
  // Columns groups (weight-gradient casts): blocks along axis 0, the groups split axis 0 too.
  auto s0 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::floor);
  auto pk = pipeline({output("s", s0, layout::grouped_blocked_128x4(offsets("offs"), 0))});
  OutputGeometry gk = output_geometry(pk, 0, shape, 5);
  CHECK(gk.logical_shape == std::vector<int64_t>{32, 96});
  CHECK(gk.col_axis == 0);
  CHECK(gk.storage_bytes == 128 * (32 + 4 * 5));
}

TEST_CASE("grouped layout misuse is a UsageError naming the rule") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  const Layout g0 = layout::grouped_blocked_128x4(offsets("offs"), 0);
  // elements and FP32 scales take no scale layout
  CHECK_THROWS_AS(output("q", cast(e4m3, x / s), g0), UsageError);
  CHECK_THROWS_AS(output("s", f32_scale(amax(blocks(x, 1, 32)), e4m3), g0), UsageError);
  // the group axis must exist
  CHECK_THROWS_AS(pipeline({output("s", s, layout::grouped_blocked_128x4(offsets("offs"), 2))}), UsageError);
  // rank 2 only
  auto x3 = input("x", DType::bf16, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, 2, 32)), e4m3, ScaleRule::rceil);
  CHECK_THROWS_AS(pipeline({output("s", s3, g0)}), UsageError);
  // the offsets name may not serve as another role (jagged groups along another axis)
  auto sj = f32_scale(amax(groups(x, 1, offsets("offs"))), e4m3);
  CHECK_THROWS_AS(pipeline({output("s", s, g0), output("sj", sj)}), UsageError);
  // nor name an output
  CHECK_THROWS_AS(pipeline({output("offs", s, g0)}), UsageError);
  // jagged blocks have no blocked layout
  auto sj0 = e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::floor);
  CHECK_THROWS_AS(pipeline({output("s", sj0, g0)}), UsageError);
  // straddling group ends on a blocked axis
  std::vector<int32_t> ends = {32, 40, 64};
  CHECK_THROWS_AS(scale_group_ends("offs", ends, 32, 70), IndexValuesError);
  std::vector<int32_t> fine = {32, 64, 70};
  CHECK(scale_group_ends("offs", fine, 32, 70) == std::vector<int64_t>{1, 2, 3});
  CHECK_THROWS_WITH_AS(scale_group_ends("offs", ends, 32, 70), doctest::Contains("offsets 'offs'"), UsageError);
}
