// Host cost of a Kernel launch besides the driver, on any machine (no GPU needed: kernels are compiled
// for sm_90a, not loaded). Per launch, median ns of 7 loops:
//   check_bindings   the binding checks every launch ran before launches were prepared
//   prepare          Kernel::prepare: checks, kernel lookup, grid and parameter words (an unprepared launch)
//   prepared         PreparedLaunch::fill_words: the pointer checks and words of a prepared launch
//
//   build/bench/mxjit_launch_host [iterations]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <vector>

#include "mxjit/mxjit.hpp"
#include "runtime/bindings.hpp"

using namespace mxjit;

namespace {

double median_ns(int iters, const std::function<void()>& f) {
  for (int i = 0; i < iters / 4; ++i) f();
  std::vector<double> per;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f();
    per.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

void* at(uint64_t a) { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); }

struct Case {
  const char* name;
  Pipeline p;
  std::vector<TensorView> in, out;
  uint64_t workspace = 0;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  c.push_back({"dim0 MXFP8 128x128 (bench_torch's)", pipeline({output("q", cast(e4m3, x / s0)), output("s", s0)}),
               {TensorView::contiguous(at(0x10000), DType::bf16, {128, 128}, DeviceKind::cuda)},
               {TensorView::contiguous(at(0x20000), DType::u8, {128, 128}, DeviceKind::cuda),
                TensorView::contiguous(at(0x30000), DType::u8, {128, 4}, DeviceKind::cuda)}});
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  c.push_back({"dim1 MXFP8 blocked 4096x2048",
               pipeline({output("q", cast(e4m3, x / s1), layout::col_major()), output("s", s1, layout::blocked_128x4())}),
               {TensorView::contiguous(at(0x1000000), DType::bf16, {4096, 2048}, DeviceKind::cuda)},
               {TensorView::strided(at(0x3000000), DType::u8, {4096, 2048}, {1, 4096}, DeviceKind::cuda),
                TensorView::contiguous(at(0x4000000), DType::u8, {2048 * 128}, DeviceKind::cuda)}});
  auto s4 = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  c.push_back({"NVFP4 (pre-pass) 256x1024", pipeline({output("q", cast(e2m1, x / s4)), output("s", s4)}),
               {TensorView::contiguous(at(0x100000), DType::bf16, {256, 1024}, DeviceKind::cuda)},
               {TensorView::contiguous(at(0x200000), DType::u8, {256, 512}, DeviceKind::cuda),
                TensorView::contiguous(at(0x300000), DType::u8, {256, 64}, DeviceKind::cuda)},
               0x400000});
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
  const Target t = gpu_available() ? current_target() : Target::parse("sm_90a");
  fmt::print("host ns per launch besides the driver ({}; {} per loop, median of 7)\n", t.arch, iters);
  fmt::print("  {:<38} {:>15} {:>10} {:>10}\n", "case", "check_bindings", "prepare", "prepared");
  for (const Case& c : cases()) {
    const Kernel k = jit(c.p, t);
    const PreparedLaunch pl = k.prepare(c.in, c.out);
    std::vector<uint64_t> ptrs;
    for (const auto* side : {&c.in, &c.out})
      for (const TensorView& v : *side) ptrs.push_back(uint64_t(reinterpret_cast<uintptr_t>(v.data)));
    std::vector<int64_t> words(pl.words());
    const double check = median_ns(iters, [&] { detail::check_bindings(c.p, c.in, c.out, DeviceKind::cuda); });
    const double prepare = median_ns(iters, [&] { (void)k.prepare(c.in, c.out); });
    const double prepared = median_ns(iters, [&] { pl.fill_words(ptrs, c.workspace, words); });
    fmt::print("  {:<38} {:>15.0f} {:>10.0f} {:>10.0f}\n", c.name, check, prepare, prepared);
  }
  return 0;
}
