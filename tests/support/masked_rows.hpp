#pragma once
// Masked rows (Pipeline::mask()) for the tests: SGLang's masked casts, their counts, and the
// bytes a masked run must leave, derived from an unmasked run of the same cast.
#include <cstdint>
#include <cstring>
#include <vector>

#include "dsl/geometry.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/pipeline.hpp"
#include "support/tensors.hpp"

namespace mxjit::test {

/// SGLang's per_token_group_quant_8bit over x [E, T, K] (rank 3; `by`, `axis` pick the expert and
/// token axes, blocks of `block` along the last axis), scales in `layout`, plus the dequantized
/// values when `values` (a values output beside the casts). ue8m0: packed UE8M0 scales.
inline std::vector<Output> sglang_masked_cast(DType dt, Layout layout, bool ue8m0 = false, int rank = 3,
                                              int64_t block = 128, bool values = false) {
  auto x = input("x", dt, Rank{rank});
  ScaleDef d = recipes::sglang_group(e4m3, ue8m0);
  if (ue8m0) d.format = ScaleFormat::e8m0;  // powers of two, stored as their exponent bytes
  auto s = scale(amax(blocks(x, rank - 1, block)), e4m3, d);
  std::vector<Output> outs = {output("q", cast(e4m3, x / s, Round::nearest_even, Saturate::finite)),
                              output("s", s, std::move(layout))};
  if (values) outs.push_back(output("v", x * 2.0, DType::f32));
  return outs;
}

/// Counts for `n` experts over `extent` rows: full, empty, a third, one row, most of them.
inline std::vector<int32_t> mask_counts(int64_t n, int64_t extent) {
  std::vector<int32_t> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = i % 5;
    c[size_t(i)] = int32_t(k == 0 ? extent : k == 1 ? 0 : k == 2 ? extent / 3 : k == 3 ? 1 : (extent * 7 + i) / 9);
  }
  return c;
}

/// The bytes of output `o` of the masked pipeline `p` over `domain`: the unmasked run's bytes
/// (`plain`), except every masked position's, which keep `poison` (0 where the layout pads at this
/// shape: those outputs are zeroed whole first).
inline std::vector<uint8_t> masked_expectation(const Pipeline& p, size_t o, const std::vector<int64_t>& domain,
                                               const std::vector<int32_t>& counts, std::vector<uint8_t> plain,
                                               uint8_t poison) {
  const Output& out = p.outputs()[o];
  const Mask& m = p.mask();
  const bool scales = out.kind == OutputKind::scales;
  const std::vector<int64_t> shape = scales ? scale_shape(block_of(out.node), domain) : domain;
  const OutputGeometry g = output_geometry(p, int(o), domain);
  const uint8_t keep = g.padded ? 0 : poison;
  // Byte scales are addressed in bytes (a packed word's byte i is its value i); the rest in elements.
  const size_t unit = scales && (out.dtype == DType::u8 || out.dtype == DType::i32) ? 1 : dtype_size(out.dtype);
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  for (int64_t i = 0; i < n; ++i) {
    if (idx[size_t(m.axis)] >= counts[size_t(idx[size_t(m.by)])]) {
      int64_t off = 0;
      if (scales) off = out.bound.offset(idx, shape);
      else
        for (size_t a = 0; a < idx.size(); ++a) off += idx[a] * g.view_strides[a];
      std::memset(plain.data() + size_t(off) * unit, keep, unit);
    }
    for (int a = int(shape.size()) - 1; a >= 0; --a) {
      if (++idx[size_t(a)] < shape[size_t(a)]) break;
      idx[size_t(a)] = 0;
    }
  }
  return plain;
}

/// One masked cast of the tests: its outputs, mask and domain.
struct MaskCase {
  const char* name;
  std::vector<Output> outs;
  Mask mask;
  std::vector<int64_t> domain;
};

/// SGLang's masked casts in each scale layout, the masked axis outer and inner, rank 4.
inline std::vector<MaskCase> mask_cases() {
  return {
      {"sglang [E,T,K] linear", sglang_masked_cast(DType::bf16, layout::linear()), mask(1, 0, "masked_m"), {5, 37, 384}},
      {"sglang mn_major_tma", sglang_masked_cast(DType::bf16, layout::mn_major_tma()), mask(1, 0, "masked_m"), {5, 37, 384}},
      {"sglang mn_major_tma, no padding", sglang_masked_cast(DType::bf16, layout::mn_major_tma()), mask(1, 0, "masked_m"), {3, 40, 256}},
      {"sglang ue8m0 packed", sglang_masked_cast(DType::bf16, layout::mn_major_tma_packed(), true), mask(1, 0, "masked_m"), {5, 37, 640}},
      {"tokens outer [T,E,K]", sglang_masked_cast(DType::f16, layout::linear()), mask(0, 1, "masked_m"), {29, 5, 256}},
      {"rank 4 f32 blocks of 32 + values", sglang_masked_cast(DType::f32, layout::mn_major_tma(), false, 4, 32, true),
       mask(2, 0, "masked_m"), {5, 2, 19, 96}},
  };
}

/// An int32 host tensor of `c`.
inline HostTensor counts_tensor(const std::vector<int32_t>& c) {
  HostTensor t(DType::i32, {int64_t(c.size())});
  std::memcpy(t.bytes.data(), c.data(), c.size() * 4);
  return t;
}

}  // namespace mxjit::test
