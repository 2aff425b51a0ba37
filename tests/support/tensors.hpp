#pragma once
// Test support: host tensors that own their bytes, device copies, random and adversarial data.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "dsl/geometry.hpp"
#include "runtime/device.hpp"
#include "runtime/tensor.hpp"

namespace mxjit::test {

/// A host tensor owning its storage; `view()` has the requested strides.
struct HostTensor {
  std::vector<uint8_t> bytes;
  TensorView v;
  HostTensor() = default;
  HostTensor(DType dt, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
    if (strides.empty()) {
      strides.assign(shape.size(), 1);
      for (int a = int(shape.size()) - 2; a >= 0; --a) strides[size_t(a)] = strides[size_t(a) + 1] * shape[size_t(a) + 1];
    }
    int64_t span = 1;
    for (size_t a = 0; a < shape.size(); ++a) span += (shape[a] - 1) * strides[a];
    if (shape.empty()) span = 1;
    for (int64_t e : shape) if (e == 0) span = 0;
    bytes.assign(size_t(std::max<int64_t>(span, 1)) * dtype_size(dt) + 64, 0);
    v = TensorView::strided(bytes.data(), dt, std::move(shape), std::move(strides));
  }
  // Element storage index of a logical index.
  int64_t at(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t a = 0; a < idx.size(); ++a) o += idx[a] * v.strides[a];
    return o;
  }
};

/// Fills a bf16/f16/f32 tensor (every element of its span) with random values spanning many
/// binades, never all zero; `adversarial` mixes in zeros, subnormals, +-Inf, NaN, max values,
/// FP4/FP8 ties and single huge values among tiny ones.
inline void fill_random(HostTensor& t, uint64_t seed, bool adversarial, bool specials = true) {
  std::mt19937_64 rng(seed);
  const size_t n = (t.bytes.size() - 64) / dtype_size(t.v.dtype);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-12, 12), pick(0, 99);
  for (size_t i = 0; i < n; ++i) {
    float f = mant(rng) * std::ldexp(1.0f, ex(rng)) * (rng() & 1 ? -1.0f : 1.0f);
    if (adversarial) {
      int k = pick(rng);
      if (k < 4) f = 0.0f;
      else if (k < 6) f = -0.0f;
      else if (k < 9) f = std::ldexp(1.0f, -130 - int(rng() % 10)) * (rng() & 1 ? -1.f : 1.f);  // bf16/fp32 subnormal
      else if (k < 10 && specials) f = (rng() & 1) ? INFINITY : -INFINITY;
      else if (k < 11 && specials) f = NAN;
      else if (k < 13) f = (rng() & 1) ? 448.0f : -57344.0f;
      else if (k < 16) { const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.5f}; f = ties[rng() % 8]; }
      else if (k < 17) f = std::ldexp(1.0f, 100);
      else if (k < 25) f = std::ldexp(mant(rng), -40);
    }
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (t.v.dtype == DType::f32) {
      std::memcpy(t.bytes.data() + 4 * i, &f, 4);
    } else if (t.v.dtype == DType::bf16) {
      uint16_t h = uint16_t(u >> 16);  // truncation keeps the special values special
      std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    } else {
      // f16: convert via the value range of half; keep it simple and exact for small values.
      uint16_t h;
      float a = std::fabs(f);
      if (f != f) h = 0x7e00;
      else if (a >= 65520.0f) h = uint16_t((u >> 16 & 0x8000) | 0x7c00);
      else {
        int e;
        float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5,1)
        int he = e - 1 + 15;
        if (he <= 0) h = uint16_t(std::lround(a / std::ldexp(1.0f, -24)));
        else h = uint16_t((he << 10) | (int(std::lround((m * 2 - 1) * 1024)) & 0x3ff));
        h |= uint16_t((u >> 16) & 0x8000);
      }
      std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    }
  }
}

/// A device copy of a host tensor (same strides, same span).
struct DeviceTensor {
  DeviceBuffer buf;
  TensorView v;
  size_t shift = 0;  ///< the view starts this many bytes into the buffer (misaligned outputs)
  /// A device copy of `h`, its view `shift` bytes into the buffer (the bytes before it: 0x5A).
  static DeviceTensor of(const HostTensor& h, size_t shift = 0) {
    DeviceTensor d;
    d.shift = shift;
    std::vector<uint8_t> staged(shift, uint8_t(0x5A));
    staged.insert(staged.end(), h.bytes.begin(), h.bytes.end());
    d.buf = DeviceBuffer::alloc(staged.size());
    d.buf.upload(staged.data(), staged.size());
    d.v = h.v;
    d.v.data = reinterpret_cast<void*>(d.buf.ptr() + shift);
    d.v.device = DeviceKind::cuda;
    return d;
  }
  void download(HostTensor& h) const {
    std::vector<uint8_t> all(h.bytes.size() + shift);
    buf.download(all.data(), all.size());
    std::copy(all.begin() + std::ptrdiff_t(shift), all.end(), h.bytes.begin());
  }
};

}  // namespace mxjit::test
