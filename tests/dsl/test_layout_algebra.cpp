// The layout algebra (dsl/layout.hpp) in the manner of CuTe's tests: the offset is a bijection
// onto the non-padding storage, padding enumerated, the composition laws the code relies on,
// the text form round-trips, hashes are stable; each peer layout against its index formula
// written out here independently (research/blockwise_fp8_peers.md §1.2, §4, §9.2); misuse.
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/layout.hpp"
#include "dsl/pipeline.hpp"
#include "dsl/text.hpp"

#include "support/indices.hpp"

using namespace mxjit;
using test::for_each_index;
using layout::axis;
using layout::cols;
using layout::rest;
using layout::rows;

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// The bijection property: every logical index lands once in [0, size), index_at inverts it,
/// and the offsets no index takes are exactly the padding (index_at gives nullopt), as many as
/// size - numel. Returns the number of padding values.
int64_t check_bijection(const BoundLayout& l, const std::vector<int64_t>& shape) {
  const int64_t size = l.size(shape);
  std::vector<int> hits(size_t(size), 0);
  int64_t numel = 0, out_of_range = 0, inverse_bad = 0;
  for_each_index(shape, [&](const std::vector<int64_t>& idx) {
    ++numel;
    const int64_t off = l.offset(idx, shape);
    if (off < 0 || off >= size) return void(++out_of_range);
    ++hits[size_t(off)];
    const auto back = l.index_at(off, shape);
    if (!back || *back != idx) ++inverse_bad;
  });
  CHECK(out_of_range == 0);
  CHECK(inverse_bad == 0);
  int64_t twice = 0, padding = 0, padding_bad = 0;
  for (int64_t o = 0; o < size; ++o) {
    if (hits[size_t(o)] > 1) ++twice;
    if (hits[size_t(o)] == 0) {
      ++padding;
      if (l.index_at(o, shape)) ++padding_bad;
    }
  }
  CHECK(twice == 0);
  CHECK(padding_bad == 0);
  CHECK(padding == size - numel);
  CHECK_FALSE(l.index_at(size, shape));
  CHECK_FALSE(l.index_at(-1, shape));
  // Storage is compact: the padded extents multiply up to the size.
  const std::vector<int64_t> p = l.padded(shape);
  CHECK(std::accumulate(p.begin(), p.end(), int64_t(1), std::multiplies<>()) == size);
  return padding;
}

/// The message of the UsageError `f` throws, or "(no error)".
template <class F>
std::string msg(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A scale-matrix case: shape, the rows and columns axes (the others batch).
struct ScaleCase {
  std::vector<int64_t> shape;
  int row, col;
};
const ScaleCase kScaleCases[] = {
    {{1, 1}, 0, 1},  {{5, 3}, 0, 1},     {{130, 7}, 0, 1},  {{4, 8}, 0, 1},     {{7, 13}, 1, 0},
    {{3, 9, 6}, 1, 2}, {{2, 5, 11}, 2, 1}, {{2, 3, 6, 5}, 2, 3}, {{0, 5}, 0, 1},  {{6, 0}, 0, 1},
};

/// Batch index of `idx` (the axes other than row and col, row-major) and the batch count.
std::pair<int64_t, int64_t> batch_of(const ScaleCase& c, const std::vector<int64_t>& idx) {
  int64_t b = 0, n = 1;
  for (int a = 0; a < int(c.shape.size()); ++a)
    if (a != c.row && a != c.col) {
      b = b * c.shape[size_t(a)] + idx[size_t(a)];
      n *= c.shape[size_t(a)];
    }
  return {b, n};
}

}  // namespace

TEST_CASE("layout algebra: every named layout and general forms are bijections onto the non-padding storage") {
  const std::vector<Layout> scale_layouts = {
      Layout::blocked_128x4(), Layout::blocked_8x4(), Layout::mn_major_tma(), Layout::mn_major_tma_packed(),
      Layout::row_major(),     Layout::col_major(),
      layout::modes({rest, cols / 4, rows, cols % 4}),  // packed UE8M0's order, unpacked and unaligned
      layout::modes({rest, rows / 16, cols, rows % 16}).align(cols, 3),
      layout::modes({cols / 2, rest, rows, cols % 2}).align(rows, 8),
  };
  for (const Layout& l : scale_layouts)
    for (const ScaleCase& c : kScaleCases) {
      INFO(l.str() << " shape rank " << c.shape.size() << " row " << c.row << " col " << c.col);
      check_bijection(l.bind(int(c.shape.size()), c.row, c.col), c.shape);
    }
  const std::vector<std::vector<int64_t>> shapes = {{5, 7}, {1, 9}, {3, 4, 5}, {2, 3, 1, 4}, {0, 3}};
  for (const auto& shape : shapes) {
    const int rank = int(shape.size());
    std::vector<Layout> ls = {Layout::row_major(), Layout::col_major(), Layout::expert_col_major(),
                              Layout::gemm_ready_2d(), Layout::gemm_ready_2d_t(),
                              layout::modes({axis(-1) % 2, rest, axis(-1) / 2}),
                              layout::modes({axis(-1), ~rest}).align(axis(-1), 4), layout::modes({axis(0), ~rest}).align(axis(0), 2)};
    if (rank == 3) ls.push_back(Layout::permuted({2, 0, 1}));
    for (const Layout& l : ls) {
      INFO(l.str() << " rank " << rank);
      check_bijection(l.bind(rank), shape);
    }
  }
}

TEST_CASE("layout algebra: mn_major_tma is DeepGEMM's MN-major TMA-aligned FP32 layout (b,m,j) -> b*A*sf_k + j*A + m") {
  for (const ScaleCase& c : kScaleCases) {
    INFO("shape rank " << c.shape.size() << " row " << c.row << " col " << c.col);
    const int rank = int(c.shape.size());
    const BoundLayout l = Layout::mn_major_tma().bind(rank, c.row, c.col);
    const int64_t mn = c.shape[size_t(c.row)], sf_k = c.shape[size_t(c.col)], A = round_up(mn, 4);
    int64_t batches = 1;
    for (int a = 0; a < rank; ++a)
      if (a != c.row && a != c.col) batches *= c.shape[size_t(a)];
    CHECK(l.size(c.shape) == batches * A * sf_k);
    int64_t bad = 0;
    for_each_index(c.shape, [&](const std::vector<int64_t>& idx) {
      const int64_t b = batch_of(c, idx).first, m = idx[size_t(c.row)], j = idx[size_t(c.col)];
      bad += l.offset(idx, c.shape) != b * A * sf_k + j * A + m;
    });
    CHECK(bad == 0);
    CHECK(l.pads());  // rows align to 4 (padding for some shapes)
    CHECK(l.strided());
  }
  // Spot values: 5 rows pad to 8; (m=4, j=1) is at 1*8+4.
  const BoundLayout l = Layout::mn_major_tma().bind(2, 0, 1);
  CHECK(l.offset(std::vector<int64_t>{4, 1}, std::vector<int64_t>{5, 3}) == 12);
  CHECK(l.view_shape(std::vector<int64_t>{5, 3}) == std::vector<int64_t>{8, 3});
  CHECK(l.view_strides(std::vector<int64_t>{5, 3}) == std::vector<int64_t>{1, 8});
}

TEST_CASE("layout algebra: mn_major_tma_packed is DeepGEMM's packed UE8M0 (byte i of word w = scale 4w+i, zero padding)") {
  for (const ScaleCase& c : kScaleCases) {
    INFO("shape rank " << c.shape.size() << " row " << c.row << " col " << c.col);
    const int rank = int(c.shape.size());
    const BoundLayout l = Layout::mn_major_tma_packed().bind(rank, c.row, c.col);
    const int64_t mn = c.shape[size_t(c.row)], sf_k = c.shape[size_t(c.col)];
    const int64_t A = round_up(mn, 4), words = (sf_k + 3) / 4;  // packed_sf_k = ceil(sf_k / 4)
    int64_t batches = 1;
    for (int a = 0; a < rank; ++a)
      if (a != c.row && a != c.col) batches *= c.shape[size_t(a)];
    CHECK(l.pack == 4);
    CHECK(l.size(c.shape) == 4 * batches * A * words);  // in byte values: 4 per int32 word
    int64_t bad = 0;
    for_each_index(c.shape, [&](const std::vector<int64_t>& idx) {
      const int64_t b = batch_of(c, idx).first, m = idx[size_t(c.row)], k = idx[size_t(c.col)];
      const int64_t word = b * A * words + (k / 4) * A + m;
      bad += l.offset(idx, c.shape) != 4 * word + k % 4;
    });
    CHECK(bad == 0);
    CHECK(l.strided());  // a strided tensor of words: [.., A, words] with the rows innermost
    std::vector<int64_t> view = c.shape;
    view[size_t(c.row)] = A;
    view[size_t(c.col)] = words;
    CHECK(l.view_shape(c.shape) == view);
    if (batches * A * words > 0) {
      const std::vector<int64_t> s = l.view_strides(c.shape);
      CHECK(s[size_t(c.row)] == 1);
      CHECK(s[size_t(c.col)] == A);
    }
  }
}

TEST_CASE("layout algebra: Transformer Engine's GEMM_READY 2-D scales, rowwise and columnwise") {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 5}, {8, 4}, {1, 1}, {57, 9}, {2, 3, 6}}) {
    const int rank = int(shape.size());
    const int64_t MB = shape[size_t(rank - 2)], KB = shape[size_t(rank - 1)];
    const BoundLayout r = Layout::gemm_ready_2d().bind(rank), t = Layout::gemm_ready_2d_t().bind(rank);
    int64_t bad = 0;
    for_each_index(shape, [&](const std::vector<int64_t>& idx) {
      const int64_t b = rank == 3 ? idx[0] : 0, mb = idx[size_t(rank - 2)], kb = idx[size_t(rank - 1)];
      bad += r.offset(idx, shape) != b * MB * round_up(KB, 4) + mb * round_up(KB, 4) + kb;
      bad += t.offset(idx, shape) != b * KB * round_up(MB, 4) + kb * round_up(MB, 4) + mb;
    });
    CHECK(bad == 0);
  }
}

TEST_CASE("layout algebra: blocked_128x4 by definition equals the CUTLASS atom, MN-major for dim1 scales") {
  // The dim1 (MN-major) variant: rows and columns follow the block axis; with blocks along
  // axis 0 of [K, M] data the scale matrix [K/32, M] has rows = axis 1 and columns = axis 0.
  const BoundLayout l = Layout::blocked_128x4().bind(2, 1, 0);
  const std::vector<int64_t> shape = {9, 200};  // [K/32, M]
  int64_t bad = 0;
  for_each_index(shape, [&](const std::vector<int64_t>& idx) {
    const int64_t r = idx[1], c = idx[0], cp = 12;
    bad += l.offset(idx, shape) != ((r / 128) * (cp / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
  });
  CHECK(bad == 0);
  CHECK(l.size(shape) == 256 * 12);
  CHECK_FALSE(l.strided());
}

TEST_CASE("layout algebra: composition laws") {
  const Layout m = Layout::mn_major_tma();
  // align composes by lcm; aligning by a divisor of the existing alignment changes nothing.
  CHECK(m.align(rows, 2) == m);
  CHECK(m.align(rows, 6) == m.align(rows, 12));
  CHECK(m.align(rows, 6).alignments() == std::vector<std::pair<Axis, int64_t>>{{rows, 12}});
  CHECK(layout::modes({rest, cols, rows}).align(rows, 4) == m);
  // A split's own alignment is implied: blocked128x4 aligned to 128 rows / 4 columns is itself.
  CHECK(Layout::blocked_128x4().align(rows, 128).align(cols, 2) == Layout::blocked_128x4());
  CHECK(Layout::blocked_128x4().align(rows, 256) != Layout::blocked_128x4());
  // pack(1) is the identity; permuted's identity is row_major; linear is row_major.
  CHECK(m.pack(1) == m);
  CHECK(Layout::permuted({0, 1}) == Layout::row_major());
  CHECK(Layout::linear() == Layout::row_major());
  // The offset splits at any mode: outer offset * inner size + inner offset.
  const BoundLayout b = Layout::blocked_128x4().bind(3, 1, 2);
  const std::vector<int64_t> shape = {2, 300, 9};
  const std::vector<int64_t> ext = b.extents(shape);
  HostArith a;
  for (size_t k = 0; k <= b.modes.size(); ++k) {
    int64_t inner = 1;
    for (size_t j = k; j < ext.size(); ++j) inner *= ext[j];
    int64_t bad = 0;
    for_each_index(shape, [&](const std::vector<int64_t>& idx) {
      const int64_t outer = lower_offset(a, b, idx, shape, 0, k), in = lower_offset(a, b, idx, shape, k);
      bad += outer * inner + in != b.offset(idx, shape);
    });
    CHECK_MESSAGE(bad == 0, "split at mode " << k);
  }
  // Strided layouts: the offset is the dot product with the view strides (in words).
  const BoundLayout t = Layout::mn_major_tma().bind(3, 1, 2);
  const std::vector<int64_t> ts = {2, 5, 3}, st = t.view_strides(ts);
  int64_t bad = 0;
  for_each_index(ts, [&](const std::vector<int64_t>& idx) {
    bad += t.offset(idx, ts) != idx[0] * st[0] + idx[1] * st[1] + idx[2] * st[2];
  });
  CHECK(bad == 0);
}

TEST_CASE("layout algebra: text round-trips, names print by name, definitions parse") {
  std::vector<Layout> ls;
  for (const auto& [name, l] : named_layouts()) {
    CHECK(l.str() == name);
    CHECK(Layout::parse(name) == l);
    CHECK(Layout::parse(l.definition()) == l);  // the general form parses to the named layout
    CHECK(Layout::parse(l.definition()).str() == name);
    ls.push_back(l);
  }
  ls.push_back(Layout::permuted({2, 0, 1}));
  ls.push_back(Layout::grouped_blocked_128x4("offs", 1));
  ls.push_back(Layout::mn_major_tma().groups("ends", 0));
  ls.push_back(layout::modes({rest, rows / 16, cols, rows % 16}).align(cols, 3));
  ls.push_back(layout::modes({axis(-1) % 2, rest, axis(-1) / 2}));
  ls.push_back(layout::modes({rest, cols / 2, rows, cols % 2}).pack(2));
  for (const Layout& l : ls) {
    INFO(l.str());
    CHECK(Layout::parse(l.str()) == l);
    CHECK(Layout::parse(l.str()).str() == l.str());
    CHECK(Layout::parse(l.definition()) == l);
    CHECK(l.hash() == hash128(l.str()));
  }
  CHECK(Layout::mn_major_tma().definition() == "modes(*,c,r).align(r,4)");
  CHECK(Layout::mn_major_tma_packed().definition() == "modes(*,c/4,r,c%4).align(r,4).pack(4)");
  CHECK(Layout::blocked_128x4().definition() == "modes(*,r/128,c/4,r%32,r/32%4,c%4)");
  CHECK(Layout::parse(" modes( * , c , r ) . align( r , 4 ) ") == Layout::mn_major_tma());
  CHECK(Layout::parse("modes(~*)") == Layout::col_major());
  CHECK(Layout::parse("modes(2,0,1)").str() == "perm(2,0,1)");
  CHECK(Layout::mn_major_tma().groups("ends", 0).str() == "mn_major_tma.groups(0,ends)");
  // Hash stability: the names of today's layouts are their text, so pipeline hashes keep.
  CHECK(Layout::blocked_128x4().hash() == hash128("blocked128x4"));
  CHECK(Layout::row_major().hash() == hash128("row_major"));
  CHECK(Layout::mn_major_tma().hash() != Layout::mn_major_tma_packed().hash());
}

TEST_CASE("layout algebra: layouts in the pipeline text form and the pipeline hash") {
  const Pipeline a = parse_pipeline("f32[2] -> mxfp8.e4m3 rceil blocks(1,32) s:modes(*,c,r).align(r,4)");
  const Pipeline b = parse_pipeline("f32[2] -> mxfp8.e4m3 rceil blocks(1,32) s:mn_major_tma");
  CHECK(a.hash() == b.hash());
  CHECK(a.outputs()[1].layout == Layout::mn_major_tma());
  const Pipeline c = parse_pipeline("f32[2] -> mxfp8.e4m3 rceil blocks(1,32) s:mn_major_tma_packed");
  CHECK(c.hash() != b.hash());
  CHECK(c.outputs()[1].dtype == DType::i32);
  const Pipeline d = parse_pipeline("f32[2] -> mxfp8.e4m3 rceil blocks(1,32) s:modes(*,c,r).align(r,8)");
  CHECK(d.hash() != b.hash());
  CHECK(parse_pipeline(to_text(c)).hash() == c.hash());
}

TEST_CASE("layout algebra: pipelines bind layouts and size their outputs (padding included)") {
  auto x = input("x", DType::bf16, rank(2));
  auto s8 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s32 = f32_scale(amax(blocks(x, 1, 128)), e4m3);
  const std::vector<int64_t> shape = {10, 32 * 9};
  {
    const Pipeline p = pipeline({output("q", cast(e4m3, x / s8)), output("s", s8, layout::mn_major_tma_packed())});
    const OutputGeometry g = output_geometry(p, 1, shape);
    CHECK(p.outputs()[1].dtype == DType::i32);
    CHECK(g.logical_shape == std::vector<int64_t>{10, 9});
    CHECK(g.view_shape == std::vector<int64_t>{12, 3});  // rows to 12, 9 scales in 3 words
    CHECK(g.view_strides == std::vector<int64_t>{1, 12});
    CHECK(g.storage_bytes == 12 * 3 * 4);
  }
  {
    auto s = f32_scale(amax(blocks(x, 1, 128)), e4m3);
    const Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma())});
    const OutputGeometry g = output_geometry(p, 1, std::vector<int64_t>{10, 300});
    CHECK(p.outputs()[1].dtype == DType::f32);
    CHECK(g.view_shape == std::vector<int64_t>{12, 3});
    CHECK(g.view_strides == std::vector<int64_t>{1, 12});
    CHECK(g.storage_bytes == 12 * 3 * 4);
  }
  {
    auto s2 = f32_scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3);
    const Pipeline p = pipeline({output("q", cast(e4m3, x / s2)), output("s", s2, layout::gemm_ready_2d_t())});
    const OutputGeometry g = output_geometry(p, 1, std::vector<int64_t>{300, 1000});
    CHECK(g.logical_shape == std::vector<int64_t>{3, 8});
    CHECK(g.view_shape == std::vector<int64_t>{4, 8});  // MB padded to 4, stored KB-major
    CHECK(g.view_strides == std::vector<int64_t>{1, 4});
  }
  (void)s32;
}

TEST_CASE("layout algebra: misuse is a UsageError naming the layout and the rule") {
  // Splits that do not chain, an axis twice, rest twice, a split of rest, a whole mode inside.
  CHECK(msg([] { layout::modes({rest, rows / 64, rows % 32}); }).find("chain") != std::string::npos);
  CHECK(msg([] { layout::modes({rest, rows, rows}); }).find("twice") != std::string::npos);
  CHECK(msg([] { layout::modes({rest, ~rest}); }).find("at most once") != std::string::npos);
  CHECK_THROWS_AS(Mode(rest) / 2, UsageError);
  CHECK_THROWS_AS(Mode(rows) / 0, UsageError);
  CHECK_THROWS_AS(Mode(rows) % 0, UsageError);
  CHECK_THROWS_AS(rows % 4 % 2, UsageError);
  CHECK(msg([] { layout::modes({rest, rows / 4, rows % 4, cols}).pack(2); }).find("extent 2") != std::string::npos);
  CHECK(msg([] { layout::modes({rest, rows, rows / 4 % 2}); }).find("whole") != std::string::npos);
  CHECK_NOTHROW(layout::modes({rest, rows % 4, rows / 4}));  // a split's digits in any order
  CHECK_THROWS_AS(Layout::mn_major_tma_packed().pack(4), UsageError);
  CHECK(msg([] { Layout::mn_major_tma().align(axis(3), 4); }).find("does not place") != std::string::npos);
  CHECK_THROWS_AS(Layout::mn_major_tma().align(rows, 0), UsageError);
  CHECK_THROWS_AS(Layout::mn_major_tma().align(rest, 4), UsageError);
  // Binding: rank, roles.
  CHECK(msg([] { Layout::permuted({1, 0}).bind(3); }).find("rank") != std::string::npos);
  CHECK(msg([] { Layout::mn_major_tma().bind(2); }).find("scale layout") != std::string::npos);
  CHECK(msg([] { Layout::gemm_ready_2d().bind(1); }).find("rank") != std::string::npos);
  // Parsing names the text.
  CHECK(msg([] { Layout::parse("modes(*,c,r).align(r,x)"); }).find("'x' is not an alignment") != std::string::npos);
  CHECK(msg([] { Layout::parse("modes(*,c,r).shuffle(2)"); }).find("unknown '.shuffle'") != std::string::npos);
  CHECK_THROWS_AS(Layout::parse("modes()"), UsageError);
  CHECK_THROWS_AS(Layout::parse("modes(*,c,r"), UsageError);
  CHECK_THROWS_AS(Layout::parse("mn_major_tma junk"), UsageError);
}

TEST_CASE("layout algebra: a layout that does not fit the value is refused when the pipeline is built") {
  auto x = input("x", DType::bf16, rank(2));
  auto s8 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s32 = f32_scale(amax(blocks(x, 1, 128)), e4m3);
  auto q = cast(e4m3, x / s8);
  // A packed layout with the wrong element size: four FP32 scales are not one 32-bit word.
  CHECK(msg([&] { output("s", s32, layout::mn_major_tma_packed()); }).find("output('s')") != std::string::npos);
  CHECK(msg([&] { output("s", s32, layout::mn_major_tma_packed()); }).find("4 bytes") != std::string::npos);
  CHECK(msg([&] { output("s", s8, layout::modes({rest, cols / 2, rows, cols % 2}).pack(2)); }).find("2-byte")
        != std::string::npos);
  // Split axes hold byte scales; FP32 scales take a permuted layout, optionally aligned.
  CHECK_THROWS_AS(output("s", s32, layout::blocked_128x4()), UsageError);
  CHECK_NOTHROW(output("s", s32, layout::mn_major_tma()));
  // Elements and values take permutations only.
  CHECK(msg([&] { output("q", q, layout::mn_major_tma()); }).find("scale layout") != std::string::npos);
  CHECK_THROWS_AS(output("v", x * x, DType::f32, layout::gemm_ready_2d()), UsageError);
  // Rank: the value has rank 2.
  CHECK(msg([&] { pipeline({output("q", q), output("s", s8, layout::permuted({2, 0, 1}))}); }).find("output 's'")
        != std::string::npos);
  // A scale layout (rows/columns) needs the scales of 1-D blocks.
  auto s2 = f32_scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3);
  CHECK(msg([&] { pipeline({output("q", cast(e4m3, x / s2)), output("s", s2, layout::mn_major_tma())}); })
            .find("1-D fixed-size blocks") != std::string::npos);
  CHECK_NOTHROW(pipeline({output("q", cast(e4m3, x / s2)), output("s", s2, layout::gemm_ready_2d())}));
}
