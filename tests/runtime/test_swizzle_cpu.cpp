// Standalone scale swizzle / unswizzle on the CPU: placement equals Layout::offset, padding is
// zero, unswizzle(swizzle(x)) == x, for tails, batches and strided linear views; launch checks.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/layout.hpp"
#include "runtime/swizzle.hpp"

#include "support/indices.hpp"

using namespace mxjit;
using test::for_each_index;

namespace {

/// Linear scales of `shape` with strides `strides` (empty: contiguous) over random bytes.
struct Linear {
  std::vector<uint8_t> bytes;
  TensorView v;
  Linear(std::vector<int64_t> shape, std::vector<int64_t> strides, uint64_t seed) {
    if (strides.empty()) {
      strides.assign(shape.size(), 1);
      for (int a = int(shape.size()) - 2; a >= 0; --a) strides[size_t(a)] = strides[size_t(a) + 1] * shape[size_t(a) + 1];
    }
    int64_t span = 1;
    for (size_t a = 0; a < shape.size(); ++a) span += (shape[a] - 1) * strides[a];
    bytes.resize(size_t(std::max<int64_t>(span, 1)));
    std::mt19937_64 rng(seed);
    for (uint8_t& b : bytes) b = uint8_t(1 + rng() % 255);  // never 0: padding shows
    v = TensorView::strided(bytes.data(), DType::u8, std::move(shape), std::move(strides));
  }
  uint8_t at(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t a = 0; a < idx.size(); ++a) o += idx[a] * v.strides[a];
    return bytes[size_t(o)];
  }
};

struct Case {
  std::vector<int64_t> shape, strides;
};

const Case kCases[] = {
    {{1, 1}, {}},          {{130, 7}, {}},        {{128, 4}, {}},       {{257, 9}, {}},     {{3, 130, 7}, {}},
    {{2, 2, 40, 3}, {}},   {{33, 5}, {1, 33}},    {{2, 9, 6}, {1, 2, 18}}, {{300, 2}, {4, 1}}, {{5, 0}, {}},
    {{0, 5}, {}},
};

void check_layout(const Layout& l) {
  for (const Case& c : kCases) {
    INFO(l.str() << " shape rank " << c.shape.size() << " rows " << c.shape[c.shape.size() - 2] << " cols "
                 << c.shape.back() << std::string(c.strides.empty() ? "" : " strided"));
    Linear lin(c.shape, c.strides, c.shape.size() * 131 + uint64_t(c.shape.back()));
    const int rank = int(c.shape.size());
    const int64_t n = swizzled_size(c.shape, l);
    const BoundLayout bl = l.bind(rank, rank - 2, rank - 1);
    REQUIRE(n == bl.size(c.shape));
    std::vector<uint8_t> blocked(size_t(n) + 1, 0xEE);
    const TensorView bv = TensorView::contiguous(blocked.data(), DType::u8, {n});
    swizzle_scales(lin.v, bv, l);
    CHECK(blocked[size_t(n)] == 0xEE);  // nothing written past the end
    // Placement equals Layout::offset; every other byte is zero padding.
    std::vector<uint8_t> want(size_t(n), 0);
    for_each_index(c.shape, [&](const std::vector<int64_t>& idx) {
      want[size_t(bl.offset(idx, c.shape))] = lin.at(idx);
    });
    CHECK(std::equal(want.begin(), want.end(), blocked.begin()));
    // Round trip into a differently strided (contiguous) view, pre-poisoned.
    Linear back(c.shape, {}, 7);
    swizzle_scales(lin.v, bv, l);
    unswizzle_scales(bv, back.v, l);
    int64_t bad = 0;
    for_each_index(c.shape, [&](const std::vector<int64_t>& idx) { bad += back.at(idx) != lin.at(idx); });
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("swizzle_scales (CPU) to blocked128x4: Layout::offset placement, zero padding, round trip") {
  check_layout(Layout::blocked_128x4());
}

TEST_CASE("swizzle_scales (CPU) to blocked8x4: Layout::offset placement, zero padding, round trip") {
  check_layout(Layout::blocked_8x4());
}

TEST_CASE("swizzle_scales (CPU) to any layout: packed UE8M0 words, split axes; placement, zero padding, round trip") {
  check_layout(Layout::mn_major_tma_packed());
  check_layout(Layout::mn_major_tma());
  check_layout(layout::modes({layout::rest, layout::rows / 16, layout::cols, layout::rows % 16}).align(layout::cols, 3));
}

TEST_CASE("swizzle launch checks name the argument and the rule") {
  std::vector<uint8_t> a(130 * 7), b(256 * 8);
  const TensorView lin = TensorView::contiguous(a.data(), DType::u8, {130, 7});
  const TensorView blk = TensorView::contiguous(b.data(), DType::u8, {256 * 8});
  CHECK_NOTHROW(swizzle_scales(lin, blk));
  // Host views take any layout (row_major is a copy of [130,7]); the GPU kernel writes the two atoms.
  CHECK_NOTHROW(swizzle_scales(lin, TensorView::contiguous(b.data(), DType::u8, {910}), Layout::row_major()));
  TensorView lin_gpu = lin, blk_gpu = TensorView::contiguous(b.data(), DType::u8, {910});
  lin_gpu.device = blk_gpu.device = DeviceKind::cuda;
  CHECK_THROWS_WITH_AS(swizzle_scales(lin_gpu, blk_gpu, Layout::row_major()),
                       doctest::Contains("on the GPU writes blocked128x4 or blocked8x4"), UsageError);
  CHECK_THROWS_WITH_AS(swizzle_scales(lin, blk, Layout::grouped_blocked_128x4("offs", 0)),
                       doctest::Contains("not a swizzle target"), UsageError);
  CHECK_THROWS_WITH_AS(swizzle_scales(lin, TensorView::contiguous(b.data(), DType::u8, {100})),
                       doctest::Contains("'blocked' must be 1-D with 2048 bytes"), UsageError);
  CHECK_THROWS_WITH_AS(swizzle_scales(TensorView::contiguous(a.data(), DType::f32, {10, 7}), blk),
                       doctest::Contains("'linear' must be u8"), UsageError);
  CHECK_THROWS_WITH_AS(swizzle_scales(TensorView::contiguous(a.data(), DType::u8, {910}), blk),
                       doctest::Contains("'linear' must have rank"), UsageError);
  CHECK_THROWS_WITH_AS(swizzle_scales(lin, TensorView::strided(b.data(), DType::u8, {2048}, {2})),
                       doctest::Contains("contiguous"), UsageError);
  CHECK_THROWS_WITH_AS(swizzle_scales(lin, TensorView::contiguous(a.data(), DType::u8, {2048})),
                       doctest::Contains("overlap"), UsageError);
  CHECK_THROWS_WITH_AS(unswizzle_scales(blk, TensorView::contiguous(b.data(), DType::u8, {130, 7})),
                       doctest::Contains("overlap"), UsageError);
  TensorView on_gpu = blk;
  on_gpu.device = DeviceKind::cuda;
  CHECK_THROWS_WITH_AS(swizzle_scales(lin, on_gpu), doctest::Contains("different devices"), UsageError);
  CHECK_THROWS_AS(swizzled_size(std::vector<int64_t>{5}), UsageError);
}
