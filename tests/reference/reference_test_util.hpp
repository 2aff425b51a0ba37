#pragma once
// Helpers of the reference tests: run a pipeline on host vectors and read its outputs back.
#include <cstdint>
#include <cstring>
#include <vector>

#include "dsl/geometry.hpp"
#include "dsl/pipeline.hpp"
#include "backends/reference/executor.hpp"
#include "runtime/tensor.hpp"

namespace mxjit::test {

/// Host storage of one output, sized and shaped by output_geometry.
struct HostOutput {
  std::vector<uint8_t> bytes;
  OutputGeometry geometry;
  DType dtype;
  TensorView view() { return TensorView::strided(bytes.data(), dtype, geometry.view_shape, geometry.view_strides); }
  const uint8_t* u8() const { return bytes.data(); }
  const float* f32() const { return reinterpret_cast<const float*>(bytes.data()); }
};

/// Runs `p` on `inputs` (domain `shape`) and returns every output; bytes are pre-filled with
/// 0xCD so that unwritten bytes show.
inline std::vector<HostOutput> run_reference(const Pipeline& p, const std::vector<TensorView>& inputs,
                                             const std::vector<int64_t>& shape, int64_t groups = 0) {
  std::vector<HostOutput> outs(p.outputs().size());
  std::vector<TensorView> views;
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].geometry = output_geometry(p, int(i), shape, groups);
    outs[i].dtype = p.outputs()[i].dtype;
    outs[i].bytes.assign(size_t(outs[i].geometry.storage_bytes), 0xCD);
    views.push_back(outs[i].view());
  }
  reference::run(p, inputs, views);
  return outs;
}

/// A contiguous f32 view of `v` with `shape`.
inline TensorView f32_view(std::vector<float>& v, std::vector<int64_t> shape) {
  return TensorView::contiguous(v.data(), DType::f32, std::move(shape));
}

/// Quantizes one 1-D f32 vector (all one block when its size <= block) and returns scale bytes
/// (byte formats) followed by the element codes.
struct Quantized1d {
  std::vector<uint8_t> scales;
  std::vector<uint8_t> codes;
};
inline Quantized1d quantize_1d(std::vector<float> values, ElemFormat elem, ScaleRule rule,
                               NanPolicy policy = NanPolicy::nan_block, int64_t block = 32, bool flush = false) {
  auto x = input("x", DType::f32, rank(1));
  auto s = e8m0_scale(amax(blocks(x, 0, block)), elem, rule, policy);
  CastOptions o;
  o.flush_subnormals = flush;
  auto q = cast(elem, x / s, Round::nearest_even, Saturate::finite, o);
  auto p = pipeline({output("q", q), output("s", s)});
  const int64_t n = int64_t(values.size());
  auto outs = run_reference(p, {f32_view(values, {n})}, {n});
  Quantized1d r;
  r.scales = outs[1].bytes;
  r.codes = outs[0].bytes;
  return r;
}

}  // namespace mxjit::test
