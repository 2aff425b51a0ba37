// draw_svg: every cell labelled with its storage offset, padding hatched, deterministic text,
// and errors for shapes that do not fit.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/layout.hpp"
#include "dsl/layout_svg.hpp"

using namespace mxjit;

namespace {

int64_t count(const std::string& s, const std::string& what) {
  int64_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("draw_svg: a row-major grid labels each cell with its offset") {
  const std::vector<int64_t> shape = {3, 4};
  const std::string svg = draw_svg(Layout::row_major(), shape);
  CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(svg.ends_with("</svg>\n"));
  for (int off = 0; off < 12; ++off) CHECK(svg.find(">" + std::to_string(off) + "</text>") != std::string::npos);
  CHECK(count(svg, "url(#pad)") == 0);
  CHECK(svg == draw_svg(Layout::row_major(), shape));  // deterministic
  CHECK(svg != draw_svg(Layout::col_major(), shape));
  // the strip names logical indices
  CHECK(svg.find(">2,3</text>") != std::string::npos);
}

TEST_CASE("draw_svg: blocked128x4 of [130,7] hatches exactly the padding, in the grid and the strip") {
  const std::vector<int64_t> shape = {130, 7};
  const std::string svg = draw_svg(Layout::blocked_128x4(), shape);
  const int64_t rp = 256, cp = 8, used = 130 * 7;
  CHECK(count(svg, "fill=\"url(#pad)\"") == 2 * (rp * cp - used));
  CHECK(svg.find("blocked128x4 of [130,7]: 2048 elements") != std::string::npos);
  // offset of (129, 6): atom (1, 1), line 1, group 0, column 2
  CHECK(svg.find(">" + std::to_string(3 * 512 + 16 + 2) + "</text>") != std::string::npos);
  const std::string no_strip = draw_svg(Layout::blocked_128x4(), shape, {.storage_strip = false});
  CHECK(count(no_strip, "fill=\"url(#pad)\"") == rp * cp - used);
}

TEST_CASE("draw_svg: batches, grouped layouts, 8x4 atoms and rank 1") {
  const std::vector<int64_t> shape3 = {2, 9, 5};
  const std::string b = draw_svg(Layout::blocked_8x4(), shape3);
  CHECK(b.find("axis 0 = 1") != std::string::npos);
  const std::vector<int64_t> g_shape = {135, 4};
  DrawOptions o;
  o.group_ends = {130, 130, 135};
  const std::string g = draw_svg(Layout::grouped_blocked_128x4("offs", 0), g_shape, o);
  CHECK(count(g, "stroke=\"#d00\"") == 3);
  CHECK(g.find("1536 elements") != std::string::npos);  // 384 padded rows x 4
  const std::vector<int64_t> shape1 = {5};
  CHECK_NOTHROW(draw_svg(Layout::row_major(), shape1));
}

TEST_CASE("draw_svg: the peers' layouts: MN-major TMA-aligned, packed UE8M0 (any layout of the algebra)") {
  const std::vector<int64_t> shape = {5, 3};  // 5 rows pad to 8; 3 columns
  const std::string m = draw_svg(Layout::mn_major_tma(), shape);
  CHECK(count(m, "fill=\"url(#pad)\"") == 2 * (8 * 3 - 15));
  CHECK(m.find(">12</text>") != std::string::npos);  // (4, 1) -> 1*8 + 4
  // Packed: [10, 9] scales in int32 words of 4; rows pad to 12, columns to 12 (3 words).
  const std::vector<int64_t> ps = {10, 9};
  const std::string p = draw_svg(Layout::mn_major_tma_packed(), ps);
  CHECK(count(p, "fill=\"url(#pad)\"") == 2 * (12 * 12 - 90));
  CHECK(p.find(">" + std::to_string(4 * (2 * 12 + 9) + 0) + "</text>") != std::string::npos);  // (9, 8): word 2*12+9
  const std::string g = draw_svg(Layout::parse("modes(*,r/16,c,r%16).align(c,3)"), std::vector<int64_t>{20, 2});
  CHECK(g.find("thick = 16x1 atoms") != std::string::npos);
}

TEST_CASE("draw_svg errors name the rule") {
  const std::vector<int64_t> shape = {130, 7};
  CHECK_THROWS_WITH_AS(draw_svg(Layout::blocked_128x4(), shape, {.max_cells = 100}), doctest::Contains("max_cells"),
                       UsageError);
  CHECK_THROWS_AS(draw_svg(Layout::row_major(), shape, {.rows_axis = 1, .cols_axis = 1}), UsageError);
  CHECK_THROWS_AS(draw_svg(Layout::row_major(), shape, {.rows_axis = 2}), UsageError);
  const std::vector<int64_t> shape1 = {7};
  CHECK_THROWS_AS(draw_svg(Layout::blocked_128x4(), shape1), UsageError);
  CHECK_THROWS_AS(draw_svg(Layout::row_major(), std::vector<int64_t>{}), UsageError);
  DrawOptions bad;
  bad.group_ends = {10, 5};
  CHECK_THROWS_AS(draw_svg(Layout::grouped_blocked_128x4("offs", 0), shape, bad), UsageError);
}

TEST_CASE("draw_svg on huge shapes is refused at once, never an overflowed size or a hang (issue 36)") {
  const int64_t top = std::numeric_limits<int64_t>::max(), huge = int64_t(1) << 62;
  // Once: (2^63-1)^2 overflowed the size check to a small number (a bogus SVG, exit 0), and
  // (2^62, 4) passed it and drew until memory ran out.
  for (const Layout& l : {Layout::blocked_128x4(), Layout::blocked_8x4(), Layout::row_major(), Layout::col_major()})
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
             {top, top}, {huge, 4}, {4, huge}, {huge, huge, 2}, {3, huge, 0}, {1 << 20, 1 << 20}}) {
      CAPTURE(l.str());
      CAPTURE(shape[0]);
      CAPTURE(shape[1]);
      CHECK_THROWS_WITH_AS(draw_svg(l, shape), doctest::Contains("needs more than max_cells 65536 cells"), UsageError);
    }
  DrawOptions groups;
  groups.group_ends = {huge, huge};
  CHECK_THROWS_WITH_AS(draw_svg(Layout::grouped_blocked_128x4("offs", 0), std::vector<int64_t>{huge, 4}, groups),
                       doctest::Contains("needs more than max_cells"), UsageError);
  // An empty shape draws (no cell); the cell size is checked.
  CHECK_NOTHROW(draw_svg(Layout::blocked_128x4(), std::vector<int64_t>{0, 4}));
  for (int cell : {-5, 0, 7, 257})
    CHECK_THROWS_WITH_AS(draw_svg(Layout::row_major(), std::vector<int64_t>{2, 2}, {.cell = cell}),
                         doctest::Contains("must be 8..256 pixels"), UsageError);
}
