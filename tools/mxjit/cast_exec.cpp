#include "tools/mxjit/cast_exec.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "runtime/bindings.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "backends/reference/executor.hpp"
#include "tools/mxjit/tool_util.hpp"
#if MXJIT_HAVE_LLVM
#include "backends/llvm/cpu_backend.hpp"
#endif

namespace mxjit::tool {
namespace {

/// Host buffers for every output of `p` over `in`'s domain, zero-filled.
std::vector<HostOutput> allocate_outputs(const Pipeline& p, const RunInputs& in) {
  std::vector<HostOutput> outs;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    HostOutput h;
    h.name = p.outputs()[o].name;
    h.dtype = p.outputs()[o].dtype;
    h.geometry = output_geometry(p, int(o), in.domain, in.groups);
    h.storage.assign(size_t(h.geometry.storage_bytes), 0);
    outs.push_back(std::move(h));
  }
  return outs;
}

/// Bytes spanned by a strided view (0 when empty).
size_t span_bytes(const TensorView& v) {
  int64_t last = 0;
  for (size_t a = 0; a < v.shape.size(); ++a) {
    if (v.shape[a] == 0) return 0;
    last += (v.shape[a] - 1) * v.strides[a];
  }
  return size_t(last + 1) * dtype_size(v.dtype);
}

}  // namespace

std::vector<HostOutput> run_on_cpu(const Pipeline& p, const RunInputs& in) {
  std::vector<HostOutput> outs = allocate_outputs(p, in);
  std::vector<TensorView> views;
  for (HostOutput& h : outs)
    views.push_back(TensorView::strided(h.storage.data(), h.dtype, h.geometry.view_shape, h.geometry.view_strides));
  reference::run(p, in.views, views);
  return outs;
}

std::vector<HostOutput> run_on_host(const Pipeline& p, const RunInputs& in, int threads, std::string& used) {
#if MXJIT_HAVE_LLVM
  if (cpu::cpu_backend_available()) {
    // The user's mistakes are errors on every device: check the binding before trying the JIT, so
    // that only "not lowered" reasons fall back to the reference.
    std::vector<HostOutput> outs = allocate_outputs(p, in);
    std::vector<TensorView> views;
    for (HostOutput& h : outs)
      views.push_back(TensorView::strided(h.storage.data(), h.dtype, h.geometry.view_shape, h.geometry.view_strides));
    detail::check_bindings(p, in.views, views, DeviceKind::cpu);
    reference::check_inputs(p, in.views);  // e.g. group ends out of order: an error, not a fallback
    try {
      const cpu::CpuKernel k = cpu::cpu_jit(p);
      k(in.views, views, threads);
      used = fmt::format("cpu (LLVM JIT, {})", cpu::cpu_target_name());
      return outs;
    } catch (const UsageError& e) {
      print_notice(fmt::format("{}; running the CPU reference", e.what()));
    }
  } else {
    print_notice(fmt::format("the LLVM CPU backend is unavailable ({}); running the CPU reference",
                             cpu::cpu_backend_unavailable_reason()));
  }
#else
  (void)threads;
  print_notice("this mxjit was built without the LLVM CPU backend; running the CPU reference");
#endif
  used = "cpu (reference)";
  return run_on_cpu(p, in);
}

bool gpu_accepts(const Pipeline& p, std::string& why) {
  try {
    jit(p, current_target());
    return true;
  } catch (const UsageError& e) {
    why = e.what();
    return false;
  }
}

std::vector<HostOutput> run_on_gpu(const Pipeline& p, const RunInputs& in) {
  const Kernel k = jit(p, current_target());
  std::vector<HostOutput> outs = allocate_outputs(p, in);
  std::vector<DeviceBuffer> buffers;
  std::vector<TensorView> dev_in, dev_out;
  for (const TensorView& v : in.views) {
    const size_t bytes = span_bytes(v);
    buffers.push_back(DeviceBuffer::alloc(std::max<size_t>(bytes, 1)));
    if (bytes) buffers.back().upload(v.data, bytes);
    TensorView d = v;
    d.data = reinterpret_cast<void*>(buffers.back().ptr());
    d.device = DeviceKind::cuda;
    dev_in.push_back(d);
  }
  for (HostOutput& h : outs) {
    buffers.push_back(DeviceBuffer::alloc(std::max<size_t>(h.storage.size(), 1)));
    buffers.back().fill(0);
    dev_out.push_back(TensorView::strided(reinterpret_cast<void*>(buffers.back().ptr()), h.dtype,
                                          h.geometry.view_shape, h.geometry.view_strides, DeviceKind::cuda));
  }
  k(0, dev_in, dev_out);
  Stream::null().synchronize();
  for (size_t o = 0; o < outs.size(); ++o)
    if (!outs[o].storage.empty()) buffers[in.views.size() + o].download(outs[o].storage.data(), outs[o].storage.size());
  return outs;
}

NpyArray to_npy(const HostOutput& out) {
  NpyArray a;
  switch (out.dtype) {
    case DType::u8: a.type = NpyType::u1; break;
    case DType::f32: a.type = NpyType::f4; break;
    case DType::bf16: a.type = NpyType::u2; break;
    case DType::f16: a.type = NpyType::f2; break;
    case DType::i32: a.type = NpyType::i4; break;
    case DType::i64:
      throw UsageError(fmt::format("output '{}': i64 outputs cannot be written as .npy by this tool", out.name));
  }
  const OutputGeometry& g = out.geometry;
  a.shape = g.view_shape;
  const size_t es = dtype_size(out.dtype);
  const int64_t n = element_count(g.view_shape).value_or(0);  // output_geometry checked the limit
  a.data.resize(size_t(n) * es);
  if (n == 0) return a;
  // Walk the view in C order (last index fastest), copying each element from its strided place.
  const size_t r = g.view_shape.size();
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(a.data.data() + size_t(i) * es, out.storage.data() + size_t(off) * es, es);
    for (size_t ax = r; ax-- > 0;) {
      off += g.view_strides[ax];
      if (++idx[ax] < g.view_shape[ax]) break;
      off -= g.view_strides[ax] * g.view_shape[ax];
      idx[ax] = 0;
    }
  }
  return a;
}

}  // namespace mxjit::tool
