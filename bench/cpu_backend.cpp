// CPU backend measurements (issue 9): input GB/s of the LLVM-compiled kernels vs the CPU
// reference for a 4096x4096 bf16 -> MXFP8 dim0 and dim1 cast and an NVFP4 cast, the cold JIT
// compile time and the cache-hit load time in a fresh process.
//
//   mxjit_cpu_bench [--rows N] [--cols N] [--reps N] [--ref-rows N] [--threads N]
//
// The compile measurements use a private, empty cache directory (MXJIT_CACHE_DIR); the cache-hit
// load runs this program again as a child (--load) that finds every kernel in that SQLite file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <thread>
#include <unistd.h>
#include <string>
#include <vector>

#include "dsl/geometry.hpp"
#include "runtime/compile.hpp"
#include "backends/llvm/cpu_backend.hpp"
#include "backends/reference/executor.hpp"

using namespace mxjit;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

/// CPU time of the whole process (all threads), in ms: per-core throughput on a shared machine.
double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Case {
  const char* name;
  Pipeline p;
};

std::vector<Case> cases() {
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  auto s4 = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  return {{"dim0 mxfp8 e4m3 rceil", pipeline({output("q", cast(e4m3, x / s0)), output("s", s0, layout::blocked_128x4())})},
          {"dim1 mxfp8 e4m3 rceil", pipeline({output("q", cast(e4m3, x / s1), layout::col_major()),
                                              output("s", s1, layout::blocked_128x4())})},
          {"nvfp4 te (dim0, 16)", pipeline({output("q", cast(e2m1, x / s4)), output("s", s4, layout::blocked_128x4())})}};
}

/// Host buffers for one run: a random bf16 input (never zero) and outputs shaped by geometry.
struct Buffers {
  std::vector<uint16_t> x;
  std::vector<std::vector<uint8_t>> out;
  std::vector<TensorView> in_views, out_views;
  Buffers(const Pipeline& p, int64_t rows, int64_t cols) : x(size_t(rows * cols)) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> m(1.0f, 2.0f);
    std::uniform_int_distribution<int> e(-8, 8);
    for (uint16_t& h : x) {
      float f = std::ldexp(m(rng), e(rng)) * (rng() & 1 ? -1.0f : 1.0f);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      h = uint16_t(u >> 16);
    }
    in_views.push_back(TensorView::contiguous(x.data(), DType::bf16, {rows, cols}));
    const std::vector<int64_t> shape{rows, cols};
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      OutputGeometry g = output_geometry(p, int(o), shape);
      out.emplace_back(size_t(g.storage_bytes));
      out_views.push_back(TensorView::strided(out.back().data(), p.outputs()[o].dtype, g.view_shape, g.view_strides));
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int load_child() {
  // A fresh process: every kernel is in the SQLite file the parent filled.
  const auto t0 = Clock::now();
  const bool ok = cpu::cpu_backend_available();
  const double init_ms = ms_since(t0);
  if (!ok) return 2;
  const auto tdb = Clock::now();
  const bool disk = ::mxjit::detail::disk_cache().enabled();
  const double open_ms = ms_since(tdb);
  for (const Case& c : cases()) {
    const auto t1 = Clock::now();
    cpu::CpuKernel k = cpu::cpu_jit(c.p);
    const double ms = ms_since(t1);
    std::printf("  %-24s cache hit: %6.2f ms (IR %.2f ms, link %.2f ms), from_disk=%d\n", c.name, ms,
                k.compile_info().lower_ms, k.compile_info().total_ms - k.compile_info().lower_ms,
                k.compile_info().from_disk ? 1 : 0);
  }
  std::printf("  (once per process: LLJIT + host target %.2f ms, opening the SQLite cache %.2f ms%s)\n", init_ms, open_ms,
              disk ? "" : ", DISABLED");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 4096, cols = 4096, ref_rows = 4096;
  int reps = 10, threads = 0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoll(argv[++i]) : 0; };
    if (a == "--load") return load_child();
    if (a == "--rows") rows = next();
    else if (a == "--cols") cols = next();
    else if (a == "--reps") reps = int(next());
    else if (a == "--ref-rows") ref_rows = next();
    else if (a == "--threads") threads = int(next());
    else if (a == "--only") only = i + 1 < argc ? argv[++i] : "";
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("mxjit-cpu-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  ::setenv("MXJIT_CACHE_DIR", dir.c_str(), 1);
  if (!cpu::cpu_backend_available()) {
    std::printf("CPU backend unavailable: %s\n", cpu::cpu_backend_unavailable_reason().c_str());
    return 1;
  }
  std::printf("mxjit CPU backend: %s, %u hardware threads, input %lldx%lld bf16 (%.1f MiB)\n",
              cpu::cpu_target_name().c_str(), std::thread::hardware_concurrency(), (long long)rows, (long long)cols,
              double(rows * cols * 2) / (1 << 20));
  std::printf("\n%-24s %10s %10s %10s %10s %10s %10s %9s\n", "cast", "compile", "IR", "O3+obj", "GB/s", "GB/s/core",
              "ref GB/s", "speedup");
  for (const Case& c : cases()) {
    if (!only.empty() && std::string(c.name).find(only) == std::string::npos) continue;
    cpu::CpuKernel k = cpu::cpu_jit(c.p);
    if (std::getenv("MXJIT_BENCH_ADDR")) std::printf("  fn %p\n", reinterpret_cast<const void*>(k.compile_info().fn_address));
    const cpu::CpuCompileInfo& ci = k.compile_info();
    Buffers b(c.p, rows, cols);
    k(b.in_views, b.out_views, threads);  // warm-up (pages, pool)
    std::vector<double> t, ct;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      const double c0 = cpu_ms();
      k(b.in_views, b.out_views, threads);
      t.push_back(ms_since(t0));
      ct.push_back(cpu_ms() - c0);
    }
    const double cpu_gbs = double(rows * cols * 2) / (median(t) * 1e6);
    const double core_gbs = double(rows * cols * 2) / (median(ct) * 1e6);
    double ref_gbs = 0;
    if (ref_rows > 0) {
      Buffers rb(c.p, ref_rows, cols);
      const auto t1 = Clock::now();
      reference::run(c.p, rb.in_views, rb.out_views);
      ref_gbs = double(ref_rows * cols * 2) / (ms_since(t1) * 1e6);
    }
    std::printf("%-24s %8.1fms %8.1fms %8.1fms %10.2f %10.2f %10.4f %8.0fx\n", c.name, ci.total_ms, ci.lower_ms,
                ci.compile_ms, cpu_gbs, core_gbs, ref_gbs, cpu_gbs / ref_gbs);
  }
  std::printf("\n(median of %d runs, %s threads; GB/s = input bytes / wall time, GB/s/core = input bytes / process CPU\n"
              " time; ref: one run of %lldx%lld, wall time)\n", reps,
              threads ? std::to_string(threads).c_str() : "all", (long long)ref_rows, (long long)cols);
  std::printf("\nFresh process, same cache file:\n");
  std::fflush(stdout);
  const std::string cmd = std::string("\"") + argv[0] + "\" --load";
  const int rc = std::system(cmd.c_str());
  std::filesystem::remove_all(dir);
  return rc == 0 ? 0 : 1;
}
