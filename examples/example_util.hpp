#pragma once
// Shared plumbing for the examples: random bf16 input, run on the CPU reference and (when a GPU is
// present) on the GPU, compare every output byte. The lessons themselves are in the .cpp files.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "mxjit/mxjit.hpp"
#if MXJIT_HAVE_LLVM
#include "backends/llvm/cpu_backend.hpp"
#endif

namespace example {

/// Owns host bytes for one tensor and views them.
struct Host {
  std::vector<uint8_t> bytes;
  mxjit::TensorView view;
  Host(mxjit::DType dt, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    bytes.assign(size_t(n) * mxjit::dtype_size(dt), 0);
    view = strides.empty() ? mxjit::TensorView::contiguous(bytes.data(), dt, shape)
                           : mxjit::TensorView::strided(bytes.data(), dt, shape, strides);
  }
};

/// Random bf16 values over a few binades (never all zero).
inline Host random_bf16(std::vector<int64_t> shape, uint32_t seed) {
  Host h(mxjit::DType::bf16, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  for (size_t i = 0; i < h.bytes.size() / 2; ++i) {
    float f = d(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    uint16_t b = uint16_t(u >> 16);
    std::memcpy(h.bytes.data() + 2 * i, &b, 2);
  }
  return h;
}

/// The host's own JIT (LLVM ORC) runs `p` on `in`; every output byte must equal the reference's
/// `out` (exit status 1 otherwise). Nothing without the LLVM backend.
inline void check_cpu_backend(const mxjit::Pipeline& p, const std::vector<mxjit::TensorView>& in,
                              const std::vector<Host>& out) {
#if MXJIT_HAVE_LLVM
  if (!mxjit::cpu::cpu_backend_available()) return;
  std::vector<Host> got;
  std::vector<mxjit::TensorView> gotv;
  for (const Host& h : out) {
    got.emplace_back(h.view.dtype, h.view.shape, h.view.strides);
    std::fill(got.back().bytes.begin(), got.back().bytes.end(), uint8_t(0xA5));
    gotv.push_back(got.back().view);
  }
  mxjit::cpu::cpu_jit(p)(in, gotv);
  for (size_t o = 0; o < out.size(); ++o)
    if (got[o].bytes != out[o].bytes) {
      std::printf("MISMATCH in output '%s' between the LLVM CPU backend and the reference\n",
                  p.outputs()[o].name.c_str());
      std::exit(1);
    }
  std::printf("CPU backend (LLVM, %s): every output byte equals the CPU reference\n",
              mxjit::cpu::cpu_target_name().c_str());
#else
  (void)p, (void)in, (void)out;
#endif
}

/// The CPU reference's outputs of `p` on `inputs`, checked against the LLVM CPU backend: for
/// pipelines the GPU generator does not take yet.
inline std::vector<Host> run_cpu(const mxjit::Pipeline& p, std::vector<Host>& inputs, std::vector<int64_t> shape) {
  std::vector<mxjit::TensorView> in;
  for (Host& h : inputs) in.push_back(h.view);
  std::vector<Host> out;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    mxjit::OutputGeometry g = mxjit::output_geometry(p, int(o), shape);
    out.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    std::fill(out.back().bytes.begin(), out.back().bytes.end(), uint8_t(0xA5));  // what masked rows keep
  }
  std::vector<mxjit::TensorView> outv;
  for (Host& h : out) outv.push_back(h.view);
  mxjit::reference::run(p, in, outv);
  check_cpu_backend(p, in, out);
  return out;
}

/// Runs `p` on the CPU reference; if a GPU is present, also through jit() and checks that every
/// output byte matches. Without a GPU, compiles for sm_90a (NVRTC needs none; the kernel lands in
/// the SQLite cache). Returns the reference outputs. Exit status 1 on a mismatch.
inline std::vector<Host> run(const mxjit::Pipeline& p, std::vector<Host>& inputs, std::vector<int64_t> shape) {
  std::vector<mxjit::TensorView> in;
  for (Host& h : inputs) in.push_back(h.view);
  std::vector<Host> out;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    mxjit::OutputGeometry g = mxjit::output_geometry(p, int(o), shape);
    out.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    std::fill(out.back().bytes.begin(), out.back().bytes.end(), uint8_t(0xA5));  // what masked rows keep
  }
  std::vector<mxjit::TensorView> outv;
  for (Host& h : out) outv.push_back(h.view);
  mxjit::reference::run(p, in, outv);
  std::printf("CPU reference: done (%zu outputs)\n", out.size());
  if (!mxjit::gpu_available()) {
    mxjit::jit(p, mxjit::Target::parse("sm_90a"));
    std::printf("no GPU (%s): compiled for sm_90a and cached\n", mxjit::gpu_unavailable_reason().c_str());
    check_cpu_backend(p, in, out);
    return out;
  }
  mxjit::Kernel k = mxjit::jit(p);
  std::vector<mxjit::DeviceBuffer> bufs;
  std::vector<mxjit::TensorView> din, dout;
  for (Host& h : inputs) {
    bufs.push_back(mxjit::DeviceBuffer::alloc(h.bytes.size()));
    bufs.back().upload(h.bytes.data(), h.bytes.size());
    mxjit::TensorView v = h.view;
    v.data = reinterpret_cast<void*>(bufs.back().ptr());
    v.device = mxjit::DeviceKind::cuda;
    din.push_back(v);
  }
  for (Host& h : out) {
    bufs.push_back(mxjit::DeviceBuffer::alloc(h.bytes.size()));
    bufs.back().fill(0xA5);  // poison: an unwritten byte shows up as a mismatch
    mxjit::TensorView v = h.view;
    v.data = reinterpret_cast<void*>(bufs.back().ptr());
    v.device = mxjit::DeviceKind::cuda;
    dout.push_back(v);
  }
  k(0, din, dout);
  mxjit::Stream::null().synchronize();
  for (size_t o = 0; o < out.size(); ++o) {
    std::vector<uint8_t> got(out[o].bytes.size());
    bufs[inputs.size() + o].download(got.data(), got.size());
    if (got != out[o].bytes) {
      std::printf("MISMATCH in output '%s' between GPU and CPU reference\n", p.outputs()[o].name.c_str());
      std::exit(1);
    }
  }
  std::printf("GPU (%s): every output byte equals the CPU reference\n", k.target().arch.c_str());
  return out;
}

}  // namespace example
