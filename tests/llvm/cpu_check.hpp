#pragma once
// CPU-backend-vs-reference comparison: every byte of every output, with differently poisoned
// buffers so that an unwritten byte on either side is a mismatch.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "backends/llvm/cpu_backend.hpp"
#include "backends/reference/executor.hpp"
#include "support/skip.hpp"
#include "support/tensors.hpp"

namespace mxjit::test {

/// Skips the calling test case when LLVM cannot target this host.
#define MXJIT_REQUIRE_CPU_BACKEND()                                                                         \
  do {                                                                                                      \
    if (!::mxjit::cpu::cpu_backend_available()) MXJIT_SKIP(::mxjit::cpu::cpu_backend_unavailable_reason()); \
  } while (0)

/// Runs `k` and the reference on `inputs` (host tensors; the domain is `shape`, inferred from
/// the first tensor input when empty) and compares every output byte. Returns mismatching bytes.
inline int64_t check_cpu(const cpu::CpuKernel& k, std::vector<HostTensor>& inputs, const std::string& label,
                         std::vector<int64_t> shape = {}, int64_t groups = 0, int threads = 0) {
  const Pipeline& p = k.pipeline();
  std::vector<TensorView> in;
  for (HostTensor& h : inputs) in.push_back(h.v);
  if (shape.empty()) shape = reference::infer_domain(p, in);
  std::vector<HostTensor> ref_out, cpu_out;
  std::vector<size_t> storage;
  // Masked rows keep what the buffers held: then both sides start from one poison.
  const uint8_t poison = p.mask().active() ? 0xA5 : 0x5A;
  std::vector<TensorView> ref_views, cpu_views;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    OutputGeometry g = output_geometry(p, int(o), shape, groups);
    storage.push_back(size_t(g.storage_bytes));
    ref_out.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    std::fill(ref_out.back().bytes.begin(), ref_out.back().bytes.end(), uint8_t(0xA5));
    cpu_out.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    std::fill(cpu_out.back().bytes.begin(), cpu_out.back().bytes.end(), poison);
  }
  for (HostTensor& h : ref_out) ref_views.push_back(h.v);
  for (HostTensor& h : cpu_out) cpu_views.push_back(h.v);
  reference::run(p, in, ref_views);
  k(in, cpu_views, threads);
  int64_t bad = 0;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const size_t n = storage[o];  // every byte the output owns; the rest is a guard
    int shown = 0;
    for (size_t i = 0; i < n; ++i) {
      if (ref_out[o].bytes[i] != cpu_out[o].bytes[i]) {
        if (shown++ < 6)
          MESSAGE(fmt::format("{}: output '{}' byte {}: reference 0x{:02x} cpu 0x{:02x}", label, p.outputs()[o].name, i,
                              ref_out[o].bytes[i], cpu_out[o].bytes[i]));
        ++bad;
      }
    }
    // The guard tail must be untouched.
    for (size_t i = n; i < cpu_out[o].bytes.size(); ++i)
      if (cpu_out[o].bytes[i] != poison) ++bad;
  }
  return bad;
}

/// One random (or adversarial) input tensor of `dt` with `shape` and optional strides.
inline HostTensor random_input(DType dt, std::vector<int64_t> shape, uint64_t seed, bool adversarial,
                               std::vector<int64_t> strides = {}) {
  HostTensor t(dt, std::move(shape), std::move(strides));
  fill_random(t, seed, adversarial);
  return t;
}

}  // namespace mxjit::test
