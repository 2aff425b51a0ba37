#pragma once
// Test support: the FP32-edge adversarial sets (issue 36). Block maxima at and around FLT_MAX
// (including those that round past FLT_MAX under the EVEN rule), at 2^-126 and 2^-149, and
// subnormals; for f32 inputs and for the bf16 values nearest them. Shared by the reference, CPU
// backend and GPU tests.
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/tensors.hpp"

namespace mxjit::test {

inline float f32_bits(uint32_t u) { return std::bit_cast<float>(u); }

/// Block maxima at the edges of FP32 (f32 inputs).
inline std::vector<float> fp32_edge_amaxes() {
  return {
      std::numeric_limits<float>::max(),  // 0x7f7fffff: rounds to 2^128 under EVEN for every format
      f32_bits(0x7f7f0000),               // bf16 max: 2^128 under EVEN for every mantissa width <= 6
      f32_bits(0x7f7c0000),               // 1.96875 * 2^127: past FLT_MAX for mbits <= 4, not for 6
      f32_bits(0x7f700000),               // 1.875 * 2^127: a tie for mbits 3, carries for mbits <= 2
      f32_bits(0x7f600000),               // 1.75 * 2^127: a tie for mbits 1 (FP4), even: to 2^128
      f32_bits(0x7f000000),               // 2^127
      f32_bits(0x7effffff),               // just below 2^127
      f32_bits(0x00800000),               // 2^-126, the smallest normal
      f32_bits(0x007fffff),               // the largest subnormal: rounds to 2^-126 under EVEN
      f32_bits(0x00400000),               // 2^-127
      f32_bits(0x00300000),               // 1.5 * 2^-128: a tie for mbits 1
      f32_bits(0x00000003),               // 3 * 2^-149
      f32_bits(0x00000001),               // 2^-149, the smallest subnormal
      1.0f,
  };
}

/// The same edges as bf16 can hold them (bf16 inputs: FLT_MAX and 2^-149 are not bf16 values).
inline std::vector<float> bf16_edge_amaxes() {
  return {f32_bits(0x7f7f0000), f32_bits(0x7f7c0000), f32_bits(0x7f700000), f32_bits(0x7f600000),
          f32_bits(0x7f000000), f32_bits(0x7e800000), f32_bits(0x00800000), f32_bits(0x007f0000),
          f32_bits(0x00400000), f32_bits(0x00010000), f32_bits(0x00030000), 1.0f};
}

/// Fills `t` (f32 or bf16, any rank and strides) so that every element is at most `amax` in
/// magnitude and every 7th along the diagonals (logical index sum % 7 == 0) is +-amax: every
/// block of 8 or more elements along any axis has amax exactly `amax`; the others hold random
/// mantissas at 2^0..2^-24 of it (subnormals and zeros where those underflow).
inline void fill_edge(HostTensor& t, float amax, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mant(0.5f, 1.0f);
  std::uniform_int_distribution<int> shift(0, 24);
  const std::vector<int64_t>& shape = t.v.shape;
  const int rank = int(shape.size());
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t sum = 0;
    for (int64_t k : idx) sum += k;
    float v = sum % 7 == 0 ? amax : amax * mant(rng) * std::ldexp(1.0f, -shift(rng));
    if (v > amax) v = amax;  // amax * mant may round up past amax
    if (rng() & 1) v = -v;
    const int64_t off = t.at(idx);
    if (t.v.dtype == DType::f32) {
      std::memcpy(t.bytes.data() + size_t(off) * 4, &v, 4);
    } else {
      const uint16_t b = uint16_t(std::bit_cast<uint32_t>(v) >> 16);  // truncation keeps |b| <= amax
      std::memcpy(t.bytes.data() + size_t(off) * 2, &b, 2);
    }
    for (int a = rank - 1; a >= 0; --a) {
      if (++idx[size_t(a)] < shape[size_t(a)]) break;
      idx[size_t(a)] = 0;
    }
  }
}

}  // namespace mxjit::test
