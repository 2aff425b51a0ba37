// Measurement helpers for bench/python/bench_torch.py (underscore names: not API). They time, in a C++
// loop on the calling thread, what the Python-side loops are compared with:
//   _bench_raw_launch_us      cuLaunchKernel of an empty kernel (one pointer argument)
//   _bench_dispatch_us        mxjit::Kernel::operator() (checks + lookup + launch) on the same views
// Each returns the median over `reps` loops of `iters` launches, in microseconds per launch, after a
// warm-up loop; the stream is synchronized after each timed loop (not timed).
#include <algorithm>
#include <chrono>
#include <vector>

#include "bindings.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "runtime/module.hpp"
#include "runtime/nvrtc.hpp"

namespace mxjit::python {

namespace {

template <class F>
double median_us(int iters, int reps, uint64_t stream, F launch) {
  for (int i = 0; i < iters; ++i) launch();
  Stream::wrap(stream).synchronize();
  std::vector<double> per;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) launch();
    const auto t1 = std::chrono::steady_clock::now();
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
    Stream::wrap(stream).synchronize();
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

}  // namespace

void bind_bench(nb::module_& m) {
  m.def("_bench_raw_launch_us", [](int device, uint64_t stream, int iters, int reps) {
    nb::gil_scoped_release nogil;
    make_current(device);
    GpuInfo info = gpu_info(device);
    detail::NvrtcRequest req;
    req.source = "extern \"C\" __global__ void empty(const long long* p) { (void)p; }";
    req.arch = nvrtc_arch(info.cc_major, info.cc_minor);
    detail::LoadedKernel e = detail::LoadedKernel::load(detail::nvrtc_compile(req).cubin, "empty");
    long long dummy = 0;
    void* args[] = {&dummy};
    return median_us(iters, reps, stream, [&] { e.launch({1, 1, 1}, {32, 1, 1}, 0, stream, args); });
  }, nb::arg("device"), nb::arg("stream"), nb::arg("iters") = 2000, nb::arg("reps") = 5);
}

}  // namespace mxjit::python
