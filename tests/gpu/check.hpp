#pragma once
// GPU-vs-reference comparison: every byte of every output, with differently poisoned buffers so
// that an unwritten byte on either side is a mismatch.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "backends/reference/executor.hpp"
#include "support/skip.hpp"
#include "support/tensors.hpp"

namespace mxjit::test {

/// Runs `k` on the GPU and the reference on the host for `inputs` (host tensors of the domain
/// `shape`), and compares every output byte, then checks that the GPU left the 64 guard bytes
/// after each output alone. `gpu_inputs`, when given, is what the GPU gets instead (e.g. offsets
/// it must clamp where the reference gets the clamped ones). `out_shift` places every GPU output
/// that many bytes past an aligned address (the kernels' unaligned-store paths), `in_shift` every GPU
/// input (unaligned loads). Returns the number of bad bytes.
inline int64_t check_against_reference(const Kernel& k, std::vector<HostTensor>& inputs, const std::string& label,
                                       std::vector<int64_t> shape = {}, int64_t groups = 0,
                                       std::vector<HostTensor>* gpu_inputs = nullptr, size_t out_shift = 0,
                                       size_t in_shift = 0) {
  const Pipeline& p = k.pipeline();
  std::vector<TensorView> host_in, dev_in;
  std::vector<DeviceTensor> dev_in_store;
  for (HostTensor& h : inputs) host_in.push_back(h.v);
  for (HostTensor& h : gpu_inputs ? *gpu_inputs : inputs) dev_in_store.push_back(DeviceTensor::of(h, in_shift));
  for (DeviceTensor& d : dev_in_store) dev_in.push_back(d.v);
  for (size_t i = 0; i < p.inputs().size() && shape.empty(); ++i)
    if (p.inputs()[i].kind == InputDecl::Kind::tensor) shape = inputs[i].v.shape;
  std::vector<HostTensor> ref_out, gpu_out;
  std::vector<DeviceTensor> dev_out_store;
  std::vector<TensorView> ref_views, dev_views;
  std::vector<size_t> storage;
  // Masked rows keep what the buffers held: then both sides start from one poison.
  const uint8_t poison = p.mask().active() ? 0xA5 : 0x5A;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    OutputGeometry g = output_geometry(p, int(o), shape, groups);
    storage.push_back(size_t(g.storage_bytes));
    ref_out.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    std::fill(ref_out.back().bytes.begin(), ref_out.back().bytes.end(), uint8_t(0xA5));
    gpu_out.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    std::fill(gpu_out.back().bytes.begin(), gpu_out.back().bytes.end(), poison);
    dev_out_store.push_back(DeviceTensor::of(gpu_out.back(), out_shift));
  }
  for (HostTensor& h : ref_out) ref_views.push_back(h.v);
  for (DeviceTensor& d : dev_out_store) dev_views.push_back(d.v);
  reference::run(p, host_in, ref_views);
  k(0, dev_in, dev_views);
  Stream::null().synchronize();
  int64_t bad = 0;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    dev_out_store[o].download(gpu_out[o]);
    const size_t n = storage[o];  // every byte the output owns; the rest (an empty view's element too) is a guard
    int shown = 0;
    for (size_t i = 0; i < n; ++i) {
      if (ref_out[o].bytes[i] != gpu_out[o].bytes[i]) {
        if (shown++ < 6)
          MESSAGE(fmt::format("{}: output '{}' byte {}: reference 0x{:02x} gpu 0x{:02x}", label, p.outputs()[o].name,
                              i, ref_out[o].bytes[i], gpu_out[o].bytes[i]));
        ++bad;
      }
    }
    for (size_t i = n; i < gpu_out[o].bytes.size(); ++i)
      if (gpu_out[o].bytes[i] != poison) {
        if (shown++ < 6) MESSAGE(fmt::format("{}: output '{}': guard byte {} written", label, p.outputs()[o].name, i - n));
        ++bad;
      }
  }
  return bad;
}

}  // namespace mxjit::test
