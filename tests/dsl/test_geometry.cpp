// output_geometry: shapes, packing and storage sizes of outputs for given extents.
#include <doctest/doctest.h>

#include <vector>

#include "dsl/errors.hpp"
#include "dsl/dsl.hpp"
#include "dsl/geometry.hpp"
#include "dsl/layout.hpp"
#include "dsl/text.hpp"

using namespace mxjit;

namespace {

OutputGeometry geo(const char* spec, int output, std::vector<int64_t> shape, int64_t groups = 0) {
  return output_geometry(parse_pipeline(spec), output, shape, groups);
}

}  // namespace

TEST_CASE("geometry: FP4 halves the packed (innermost stored) axis") {
  OutputGeometry q = geo("bf16[2] -> mxfp4.e2m1 blocks(1,32)", 0, {4, 64});
  CHECK(q.logical_shape == std::vector<int64_t>{4, 64});
  CHECK(q.view_shape == std::vector<int64_t>{4, 32});
  CHECK(q.view_strides == std::vector<int64_t>{32, 1});
  CHECK(q.packed_axis == 1);
  CHECK(q.storage_bytes == 4 * 32);

  // Column-major along dim0: axis 0 is innermost, so it is the packed one.
  OutputGeometry c = geo("bf16[2] -> mxfp4.e2m1 blocks(0,32) q:col_major", 0, {64, 6});
  CHECK(c.view_shape == std::vector<int64_t>{32, 6});
  CHECK(c.view_strides == std::vector<int64_t>{1, 32});
  CHECK(c.packed_axis == 0);
  CHECK(c.storage_bytes == 32 * 6);

  // 3-D per-expert: perm(0,2,1) stores axis 1 innermost.
  OutputGeometry e = geo("bf16[3] -> nvfp4 blocks(1,16) q:perm(0,2,1)", 0, {3, 48, 5});
  CHECK(e.view_shape == std::vector<int64_t>{3, 24, 5});
  CHECK(e.packed_axis == 1);
  CHECK(e.storage_bytes == 3 * 24 * 5);

  // A tail block is fine as long as the packed extent is even.
  CHECK(geo("bf16[2] -> mxfp4.e2m1", 0, {3, 50}).view_shape == std::vector<int64_t>{3, 25});
  // Byte formats are not packed.
  OutputGeometry b = geo("bf16[2] -> mxfp8.e4m3", 0, {4, 64});
  CHECK(b.view_shape == std::vector<int64_t>{4, 64});
  CHECK(b.packed_axis == -1);
  CHECK(b.storage_bytes == 256);
}

TEST_CASE("geometry: an odd FP4 packed extent is a UsageError") {
  const Pipeline p = parse_pipeline("bf16[2] -> mxfp4.e2m1 blocks(1,32)");
  CHECK_THROWS_WITH_AS(output_geometry(p, 0, std::vector<int64_t>{4, 63}),
                       "output 'q': FP4 packs two codes per byte along axis 1, whose extent 63 is odd", UsageError);
  CHECK_NOTHROW(output_geometry(p, 0, std::vector<int64_t>{5, 64}));  // odd non-packed extent is fine
  CHECK_THROWS_AS(output_geometry(p, 0, std::vector<int64_t>{4}), UsageError);  // wrong rank
}

TEST_CASE("geometry: linear scales") {
  OutputGeometry s = geo("bf16[2] -> mxfp8.e4m3 blocks(1,32)", 1, {130, 225});
  CHECK(s.logical_shape == std::vector<int64_t>{130, 8});  // ceil(225 / 32)
  CHECK(s.view_shape == std::vector<int64_t>{130, 8});
  CHECK(s.storage_bytes == 130 * 8);
  OutputGeometry f = geo("bf16[2] -> fp8.e4m3 blocks(0,32) s:col_major", 1, {64, 10});
  CHECK(f.logical_shape == std::vector<int64_t>{2, 10});
  CHECK(f.view_strides == std::vector<int64_t>{1, 2});
  CHECK(f.storage_bytes == 2 * 10 * 4);  // FP32 scales
  OutputGeometry g = geo("bf16[2] -> fp8.e4m3 groups(0,offs)", 1, {100, 10}, 4);
  CHECK(g.logical_shape == std::vector<int64_t>{4, 10});
  OutputGeometry b2 = geo("bf16[2] -> mxfp8.e4m3 blocks(0,1,32x32)", 1, {100, 70});
  CHECK(b2.logical_shape == std::vector<int64_t>{4, 3});
  OutputGeometry a = geo("bf16[2] -> mxfp8.e4m3 amax", 2, {100, 70});
  CHECK(a.view_shape == std::vector<int64_t>{1});
  CHECK(a.storage_bytes == 4);
}

TEST_CASE("geometry: blocked scale storage rounds rows to the atom and columns to 4, times the batch") {
  // dim1 cast: scales (130, 7): rows = axis 0 -> 256, cols = axis 1 -> 8.
  OutputGeometry s = geo("bf16[2] -> mxfp8.e4m3 blocks(1,32) s:blocked128x4", 1, {130, 224});
  CHECK(s.logical_shape == std::vector<int64_t>{130, 7});
  CHECK(s.row_axis == 0);
  CHECK(s.col_axis == 1);
  CHECK(s.view_shape == std::vector<int64_t>{256 * 8});
  CHECK(s.storage_bytes == 256 * 8);
  // Exact multiples add no padding.
  CHECK(geo("bf16[2] -> mxfp8.e4m3 blocks(1,32) s:blocked128x4", 1, {128, 128}).storage_bytes == 128 * 4);
  // dim0 cast: scales (7, 130): columns are the block axis 0 (7 -> 8), rows axis 1 (130 -> 256).
  OutputGeometry d = geo("bf16[2] -> mxfp8.e4m3 blocks(0,32) s:blocked128x4", 1, {224, 130});
  CHECK(d.logical_shape == std::vector<int64_t>{7, 130});
  CHECK(d.row_axis == 1);
  CHECK(d.col_axis == 0);
  CHECK(d.storage_bytes == 256 * 8);
  // Batched (per-expert): 3 x 256 x 8.
  OutputGeometry e = geo("bf16[3] -> mxfp8.e4m3 blocks(2,32) s:blocked128x4", 1, {3, 130, 224});
  CHECK(e.row_axis == 1);
  CHECK(e.col_axis == 2);
  CHECK(e.storage_bytes == 3 * 256 * 8);
  // 8x4 atoms: rows to 8.
  CHECK(geo("bf16[2] -> mxfp8.e4m3 blocks(1,32) s:blocked8x4", 1, {130, 224}).storage_bytes == 136 * 8);
  CHECK(geo("bf16[3] -> mxfp8.e4m3 blocks(2,32) s:blocked8x4", 1, {3, 9, 33}).storage_bytes == 3 * 16 * 4);
  // NVFP4's E4M3 scales are bytes too.
  CHECK(geo("bf16[2] -> nvfp4 s:blocked128x4", 1, {1, 16}).storage_bytes == 128 * 4);
}

TEST_CASE("geometry: padded says whether storage holds bytes no logical value fills, per shape") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 128)), e4m3, ScaleRule::ceil);
  const auto with = [&](Layout l) { return pipeline({output("q", cast(e4m3, x / s)), output("s", s, l)}); };
  // mn_major_tma aligns the rows to 4: padding only where the row count is not a multiple of 4.
  CHECK_FALSE(output_geometry(with(layout::mn_major_tma()), 1, std::vector<int64_t>{16, 256}).padded);
  CHECK(output_geometry(with(layout::mn_major_tma()), 1, std::vector<int64_t>{17, 256}).padded);
  // Packed UE8M0 (four scales a word, column blocks grouped by 4): 8 column blocks fill 2 words a
  // row; 5 leave three bytes of the second word, and 18 rows pad to 20.
  CHECK_FALSE(output_geometry(with(layout::mn_major_tma_packed()), 1, std::vector<int64_t>{16, 1024}).padded);
  CHECK(output_geometry(with(layout::mn_major_tma_packed()), 1, std::vector<int64_t>{16, 640}).padded);
  CHECK(output_geometry(with(layout::mn_major_tma_packed()), 1, std::vector<int64_t>{18, 1024}).padded);
  // Blocked 128x4 pads both roles; linear layouts and the codes never pad.
  CHECK_FALSE(output_geometry(with(layout::blocked_128x4()), 1, std::vector<int64_t>{128, 512}).padded);
  CHECK(output_geometry(with(layout::blocked_128x4()), 1, std::vector<int64_t>{100, 512}).padded);
  CHECK_FALSE(output_geometry(with(layout::linear()), 1, std::vector<int64_t>{17, 640}).padded);
  CHECK_FALSE(output_geometry(with(layout::linear()), 0, std::vector<int64_t>{17, 640}).padded);
  // FP4 codes, two a byte, are not padding.
  CHECK_FALSE(geo("bf16[2] -> mxfp4.e2m1 blocks(1,32)", 0, {4, 64}).padded);
}
