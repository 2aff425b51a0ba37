// GPU swizzle / unswizzle kernels against the CPU functions, byte for byte, for shapes with
// tails, batches and strided linear views (poisoned buffers: every byte must be written).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "gpu/check.hpp"
#include "runtime/swizzle.hpp"

using namespace mxjit;

namespace {

struct Shape {
  std::vector<int64_t> shape, strides;  // strides empty: contiguous
};

const Shape kShapes[] = {
    {{1, 1}, {}},       {{130, 7}, {}},         {{128, 4}, {}},          {{1000, 33}, {}},
    {{3, 257, 9}, {}},  {{2, 2, 40, 3}, {}},    {{33, 5}, {1, 33}},      {{2, 300, 6}, {1, 2, 600}},
    {{4, 4096, 64}, {}}, {{7, 129, 1}, {}},
    // The tiled 128x4 kernel: whole and partial 32-column tiles, 16-byte loads and their fallbacks
    // (rows 41 bytes apart, a column stride of 2, a view starting 1 byte into its buffer).
    {{300, 512}, {}},   {{2, 130, 160}, {}},    {{257, 48}, {}},         {{129, 40}, {41, 1}},
    {{3, 128, 200}, {}}, {{70, 36}, {80, 2}},   {{2, 256, 64}, {64 * 260, 64, 1}},
};

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("gpu swizzle_scales / unswizzle_scales equal the CPU functions") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0, cases = 0;
  for (const Layout& l : {Layout::blocked_128x4(), Layout::blocked_8x4()})
    for (const Shape& s : kShapes) {
      INFO(l.str() << " rank " << s.shape.size() << " rows " << s.shape[s.shape.size() - 2] << " cols "
                   << s.shape.back() << std::string(s.strides.empty() ? "" : " strided"));
      test::HostTensor lin(DType::u8, s.shape, s.strides);
      std::mt19937_64 rng(uint64_t(s.shape.back() * 977 + s.shape.size()));
      for (uint8_t& b : lin.bytes) b = uint8_t(rng());
      const int64_t n = swizzled_size(s.shape, l);
      std::vector<uint8_t> cpu(size_t(n), 0xA5);
      swizzle_scales(lin.v, TensorView::contiguous(cpu.data(), DType::u8, {n}), l);
      test::DeviceTensor dlin = test::DeviceTensor::of(lin);
      test::HostTensor gblk(DType::u8, {n});
      std::fill(gblk.bytes.begin(), gblk.bytes.end(), uint8_t(0x5A));
      test::DeviceTensor dblk = test::DeviceTensor::of(gblk);
      swizzle_scales(dlin.v, dblk.v, l);
      Stream::null().synchronize();
      dblk.download(gblk);
      for (int64_t i = 0; i < n; ++i) bad += cpu[size_t(i)] != gblk.bytes[size_t(i)];
      // Unswizzle on the GPU into a poisoned contiguous linear tensor; compare with the CPU.
      test::HostTensor back(DType::u8, s.shape);
      std::fill(back.bytes.begin(), back.bytes.end(), uint8_t(0x5A));
      test::DeviceTensor dback = test::DeviceTensor::of(back);
      unswizzle_scales(dblk.v, dback.v, l);
      Stream::null().synchronize();
      dback.download(back);
      test::HostTensor cback(DType::u8, s.shape);
      std::fill(cback.bytes.begin(), cback.bytes.end(), uint8_t(0xA5));
      unswizzle_scales(TensorView::contiguous(cpu.data(), DType::u8, {n}), cback.v, l);
      const size_t data_bytes = back.bytes.size() - 64;  // the guard tail is not part of the view
      for (size_t i = 0; i < data_bytes; ++i) bad += back.bytes[i] != cback.bytes[i];
      ++cases;
    }
  MESSAGE("gpu swizzle: " << cases << " cases, mismatching bytes " << bad);
  CHECK(bad == 0);
}

}  // TEST_SUITE("gpu")
