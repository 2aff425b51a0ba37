// Layout properties over whole index spaces, tails included (docs/design.md §5).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/layout.hpp"

#include "support/indices.hpp"

using namespace mxjit;
using test::for_each_index;

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// A blocked-layout case: shape, the rows and columns axes; all other axes are batch.
struct BlockedCase {
  std::vector<int64_t> shape;
  int row_axis, col_axis;
};

const BlockedCase kBlockedCases[] = {
    {{130, 7}, 0, 1},  {{257, 9}, 0, 1},     {{128, 4}, 0, 1},    {{1, 1}, 0, 1},     {{3, 130, 7}, 1, 2},
    {{7, 130}, 1, 0},  {{5, 3, 9}, 2, 0},    {{2, 33, 5}, 1, 2},  {{2, 2, 40, 3}, 2, 3},
};

/// docs/design.md §5 formula for an atom of `ar` x 4 (128x4: 32 lines of 16 bytes; 8x4: 8 lines of 4).
int64_t design_offset(int64_t ar, int64_t b, int64_t r, int64_t c, int64_t rp, int64_t cp) {
  if (ar == 128)
    return b * rp * cp + ((r / 128) * (cp / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
  return b * rp * cp + ((r / 8) * (cp / 4) + c / 4) * 32 + (r % 8) * 4 + c % 4;
}

void check_blocked(const Layout& l, int64_t ar, int64_t ac) {
  for (const BlockedCase& bc : kBlockedCases) {
    INFO("layout " << l.str() << " shape rank " << bc.shape.size() << " rows axis " << bc.row_axis
                   << " (extent " << bc.shape[bc.row_axis] << ") cols axis " << bc.col_axis << " (extent "
                   << bc.shape[bc.col_axis] << ")");
    const int64_t rows = bc.shape[bc.row_axis], cols = bc.shape[bc.col_axis];
    const int64_t rp = round_up(rows, ar), cp = round_up(cols, ac);
    int64_t batch = 1;
    for (int a = 0; a < int(bc.shape.size()); ++a)
      if (a != bc.row_axis && a != bc.col_axis) batch *= bc.shape[a];
    const BoundLayout bl = l.bind(int(bc.shape.size()), bc.row_axis, bc.col_axis);
    const int64_t storage = bl.size(bc.shape);
    REQUIRE(storage == batch * rp * cp);

    std::vector<int> hits(size_t(storage), 0);
    int64_t mismatches = 0, out_of_range = 0;
    for_each_index(bc.shape, [&](const std::vector<int64_t>& idx) {
      int64_t b = 0;
      for (int a = 0; a < int(idx.size()); ++a)
        if (a != bc.row_axis && a != bc.col_axis) b = b * bc.shape[a] + idx[a];
      const int64_t off = bl.offset(idx, bc.shape);
      if (off != design_offset(ar, b, idx[bc.row_axis], idx[bc.col_axis], rp, cp)) ++mismatches;
      if (off < 0 || off >= storage) ++out_of_range;
      else ++hits[size_t(off)];
    });
    CHECK(mismatches == 0);
    CHECK(out_of_range == 0);
    // Padding positions (rows >= R or columns >= C of each padded batch slice), by the formula.
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < rp; ++r)
        for (int64_t c = 0; c < cp; ++c)
          if (r >= rows || c >= cols) {
            const int64_t off = design_offset(ar, b, r, c, rp, cp);
            if (off >= 0 && off < storage) ++hits[size_t(off)];
            else ++out_of_range;
          }
    CHECK(out_of_range == 0);
    // Elements and padding together cover [0, storage) exactly once: distinct, no holes.
    int64_t bad = 0;
    for (int h : hits) bad += h != 1;
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("layout: blocked_128x4 equals the docs/design.md §5 formula, tails and batches included") {
  check_blocked(Layout::blocked_128x4(), 128, 4);
}

TEST_CASE("layout: blocked_8x4 equals its formula, tails and batches included") {
  check_blocked(Layout::blocked_8x4(), 8, 4);
}

TEST_CASE("layout: blocked_128x4 spot values") {
  const Layout l = Layout::blocked_128x4();
  const std::vector<int64_t> shape = {256, 8};
  const BoundLayout bl = l.bind(2, 0, 1);
  auto off = [&](int64_t r, int64_t c) { return bl.offset(std::vector<int64_t>{r, c}, shape); };
  CHECK(off(0, 0) == 0);
  CHECK(off(0, 3) == 3);
  CHECK(off(32, 0) == 4);    // second 32-row group: next 4 bytes of line 0
  CHECK(off(1, 0) == 16);    // next line
  CHECK(off(0, 4) == 512);   // next atom along columns
  CHECK(off(128, 0) == 1024);  // next atom row: Cp/4 = 2 atoms later
  CHECK(off(127, 3) == 31 * 16 + 3 * 4 + 3);
}

TEST_CASE("layout: permuted layouts are bijections with offset = sum(index * stride)") {
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {4, 6}, {13}, {2, 1, 3, 5}, {130, 7}};
  for (const auto& shape : shapes) {
    const int rank = int(shape.size());
    std::vector<Layout> layouts = {Layout::row_major(), Layout::col_major(), Layout::linear()};
    if (rank >= 2) layouts.push_back(Layout::expert_col_major());
    if (rank == 3) {
      layouts.push_back(Layout::permuted({1, 0, 2}));
      layouts.push_back(Layout::permuted({2, 0, 1}));
      layouts.push_back(Layout::permuted({0, 2, 1}));
    }
    if (rank == 4) layouts.push_back(Layout::permuted({3, 1, 0, 2}));
    for (const Layout& l : layouts) {
      INFO("layout " << l.str() << " rank " << rank);
      const BoundLayout bl = l.bind(rank);
      REQUIRE(bl.strided());
      const std::vector<int64_t> strides = bl.view_strides(shape);
      const int64_t numel = bl.size(shape);
      int64_t expected_numel = 1;
      for (int64_t e : shape) expected_numel *= e;
      REQUIRE(numel == expected_numel);
      // The innermost stored axis has stride 1.
      CHECK(strides[size_t(l.order(rank).back())] == 1);
      std::vector<int> hits(size_t(numel), 0);
      int64_t mismatches = 0, out_of_range = 0;
      for_each_index(shape, [&](const std::vector<int64_t>& idx) {
        const int64_t off = bl.offset(idx, shape);
        int64_t dot = 0;
        for (int a = 0; a < rank; ++a) dot += idx[a] * strides[a];
        if (off != dot) ++mismatches;
        if (off < 0 || off >= numel) ++out_of_range;
        else ++hits[size_t(off)];
      });
      CHECK(mismatches == 0);
      CHECK(out_of_range == 0);
      int64_t bad = 0;
      for (int h : hits) bad += h != 1;
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("layout: named orders") {
  CHECK(Layout::row_major().order(3) == std::vector<int>{0, 1, 2});
  CHECK(Layout::col_major().order(3) == std::vector<int>{2, 1, 0});
  CHECK(Layout::expert_col_major().order(3) == std::vector<int>{0, 2, 1});
  CHECK(Layout::expert_col_major().order(4) == std::vector<int>{0, 3, 2, 1});
  CHECK(Layout::col_major().bind(2).view_strides(std::vector<int64_t>{4, 6}) == std::vector<int64_t>{1, 4});
  CHECK(Layout::expert_col_major().bind(3).view_strides(std::vector<int64_t>{2, 3, 5}) == std::vector<int64_t>{15, 1, 3});
  CHECK(Layout::permuted({0, 1, 2}) == Layout::row_major());  // one spelling per layout
  CHECK(Layout::linear() == Layout::row_major());
}

TEST_CASE("layout: parse(str()) round-trips") {
  const std::vector<Layout> layouts = {Layout::row_major(),       Layout::col_major(),
                                       Layout::expert_col_major(), Layout::permuted({0, 2, 1}),
                                       Layout::permuted({3, 0, 2, 1}), Layout::permuted({1, 0}),
                                       Layout::blocked_128x4(),    Layout::blocked_8x4()};
  for (const Layout& l : layouts) {
    INFO(l.str());
    CHECK(Layout::parse(l.str()) == l);
    CHECK(Layout::parse(l.str()).str() == l.str());
  }
  CHECK(Layout::parse("linear") == Layout::row_major());
  CHECK(Layout::parse("perm(0,1,2)").str() == "row_major");
  CHECK(Layout::blocked_128x4().str() == "blocked128x4");
  CHECK(Layout::permuted({0, 2, 1}).str() == "perm(0,2,1)");
  CHECK_THROWS_AS(Layout::parse("col-major"), UsageError);
}
