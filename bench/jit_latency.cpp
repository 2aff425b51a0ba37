// JIT latencies (docs/design.md §8): cold compile of a cast kernel, a new process finding the kernel in
// SQLite and loading it, and the host overhead of one launch on an in-process cache hit, measured
// as a stream loop of launches against a CUDA graph replay of the same launches.
//
//   mxjit_latency            runs everything; uses a fresh cache folder under /tmp (no GPU: the
//                            compile rows only) and NVRTC's --no-cache: with a driver loaded,
//                            NVRTC (CUDA 12.9+) keeps its own cache of compiled programs in the
//                            driver's compute cache (~/.nv/ComputeCache), which made "cold" rows of
//                            kernels an earlier process compiled read 20-45 ms
//   mxjit_latency --child    (internal) the "new process": open the cache, jit(), report ms
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "mxjit/mxjit.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"
#include "runtime/graph.hpp"
#include "runtime/module.hpp"
#include "runtime/nvrtc.hpp"

using namespace mxjit;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

static Pipeline dim0(ElemFormat f) {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), f, ScaleRule::rceil);
  return pipeline({output("q", cast(f, x / s)), output("s", s, layout::blocked_128x4())});
}
static Pipeline dim1() {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("s", s)});
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// One row of the stream loop vs graph replay table (microseconds).
struct LoopVsGraph {
  int64_t dim = 0;
  double enqueue_us = 0;    ///< host time to enqueue one launch in the loop
  double drain_us = 0;      ///< wall time of the loop until the stream drained, per launch
  double loop_gpu_us = 0;   ///< GPU time of the loop (events), per launch
  double graph_gpu_us = 0;  ///< GPU time of the graph replay (events), per kernel
};

/// Stream loop vs CUDA graph replay of the same kLaunches launches of the bf16 -> MXFP8 dim0 cast
/// (jit() + Kernel launch, the users' path). In the graph the host issues nothing per kernel, so
/// its time per kernel is the GPU's; where the loop is host-bound, loop time per launch minus
/// graph time per kernel is what the host adds to each launch. Only the plain MXFP8 cast is
/// measured; NVFP4 launches are capturable too once one launch on the stream allocated its amax
/// word (tests/gpu/test_graph.cpp). False when a replay's outputs differ from the loop's.
static bool graph_comparison(const Target& t, const Stream& st, double raw_us) {
  constexpr int kLaunches = 1000;
  Pipeline p = dim0(e4m3);
  Kernel k = jit(p, t);
  std::vector<LoopVsGraph> rows;
  bool all_same = true;
  std::printf("\nstream loop vs CUDA graph replay, %d launches of bf16 -> MXFP8 e4m3 dim0 (blocked scales)\n",
              kLaunches);
  for (int64_t dim : {int64_t(128), int64_t(512), int64_t(2048)}) {
    const std::vector<int64_t> shape = {dim, dim};
    const OutputGeometry sg = output_geometry(p, 1, shape);
    DeviceBuffer xb = DeviceBuffer::alloc(size_t(dim * dim * 2)), qb = DeviceBuffer::alloc(size_t(dim * dim)),
                 sb = DeviceBuffer::alloc(size_t(sg.storage_bytes));
    xb.fill(0x3c);
    qb.fill(0);  // bytes no launch writes compare equal below
    sb.fill(0);
    const std::vector<TensorView> in = {
        TensorView::contiguous(reinterpret_cast<void*>(xb.ptr()), DType::bf16, shape, DeviceKind::cuda)};
    const std::vector<TensorView> out = {
        TensorView::contiguous(reinterpret_cast<void*>(qb.ptr()), DType::u8, shape, DeviceKind::cuda),
        TensorView::contiguous(reinterpret_cast<void*>(sb.ptr()), DType::u8, sg.view_shape, DeviceKind::cuda)};
    auto enqueue_all = [&] {
      for (int i = 0; i < kLaunches; ++i) k(st.handle(), in, out);
    };
    // Warm up: the first launch of a shape class looks up its kernel (and tuning); later ones hit.
    for (int i = 0; i < 100; ++i) k(st.handle(), in, out);
    st.synchronize();
    LoopVsGraph row;
    row.dim = dim;
    // (a) The stream loop: host time to enqueue, wall time until drained, GPU time from events.
    EventTimer ev;
    std::vector<double> enq, drain, loop_gpu;
    for (int rep = 0; rep < 5; ++rep) {
      ev.record_start(st);
      auto t0 = Clock::now();
      enqueue_all();
      const double e = ms_since(t0);
      ev.record_stop(st);
      st.synchronize();
      const double w = ms_since(t0);
      enq.push_back(e * 1000.0 / kLaunches);
      drain.push_back(w * 1000.0 / kLaunches);
      loop_gpu.push_back(double(ev.elapsed_ms()) * 1000.0 / kLaunches);
    }
    row.enqueue_us = median(enq);
    row.drain_us = median(drain);
    row.loop_gpu_us = median(loop_gpu);
    std::vector<uint8_t> q_loop(qb.bytes()), s_loop(sb.bytes()), q_graph(qb.bytes()), s_graph(sb.bytes());
    qb.download(q_loop.data(), q_loop.size());
    sb.download(s_loop.data(), s_loop.size());
    // (b) The same launches captured once into a graph, then replayed.
    auto t0 = Clock::now();
    Graph g = Graph::capture(st, enqueue_all);
    const double capture_ms = ms_since(t0);
    qb.fill(0);
    sb.fill(0);
    for (int i = 0; i < 3; ++i) g.launch(st);
    st.synchronize();
    qb.download(q_graph.data(), q_graph.size());
    sb.download(s_graph.data(), s_graph.size());
    const bool same = q_graph == q_loop && s_graph == s_loop;
    all_same = all_same && same;
    std::vector<double> graph_gpu, graph_host;
    for (int rep = 0; rep < 7; ++rep) {
      ev.record_start(st);
      auto t1 = Clock::now();
      g.launch(st);
      graph_host.push_back(ms_since(t1) * 1000.0);
      ev.record_stop(st);
      graph_gpu.push_back(double(ev.elapsed_ms()) * 1000.0 / kLaunches);
    }
    row.graph_gpu_us = median(graph_gpu);
    std::printf("  %lldx%lld: capture + instantiate %.2f ms, cuGraphLaunch %.1f us on the host, "
                "replayed outputs %s the loop's\n",
                (long long)dim, (long long)dim, capture_ms, median(graph_host), same ? "identical to" : "DIFFER from");
    rows.push_back(row);
  }
  std::printf("\n%-11s %12s %12s %12s %12s %14s %6s %14s\n", "shape", "loop enqueue", "loop drain", "loop GPU",
              "graph GPU", "host overhead", "bound", "empty kernel");
  std::printf("%-11s %12s %12s %12s %12s %14s %6s %14s\n", "", "us/launch", "us/launch", "us/launch", "us/kernel",
              "loop - graph", "", "cuLaunchKernel");
  for (const LoopVsGraph& r : rows) {
    // Host-bound: the host enqueues slower than the GPU runs the kernels back to back.
    const bool host_bound = r.enqueue_us > r.graph_gpu_us;
    const std::string shape = std::to_string(r.dim) + "x" + std::to_string(r.dim);
    std::printf("%-11s %12.2f %12.2f %12.2f %12.2f %14.2f %6s %14.2f\n", shape.c_str(), r.enqueue_us, r.drain_us,
                r.loop_gpu_us, r.graph_gpu_us, r.drain_us - r.graph_gpu_us, host_bound ? "host" : "GPU", raw_us);
  }
  std::printf("host overhead = loop drain per launch - graph GPU time per kernel: the time the host adds to each\n"
              "launch where the loop is host-bound; where it is GPU-bound the host's work hides behind the\n"
              "kernels (and enqueue may wait on a full launch queue), so loop enqueue is an upper bound of it.\n");
  if (!all_same) std::printf("ERROR: graph replay outputs differ from the stream loop's\n");
  return all_same;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) {
    if (gpu_available()) gpu_info(0);  // driver + context start-up is not the cache's cost
    Target t = gpu_available() ? current_target() : Target::parse("sm_90a");
    auto t0 = Clock::now();
    Kernel k = jit(dim0(e4m3), t);
    double ms = ms_since(t0);
    auto st = detail::disk_cache().stats();
    std::printf("%.3f %lld %lld\n", ms, (long long)st.disk_hits, (long long)st.disk_misses);
    return 0;
  }
  const std::string dir = "/tmp/mxjit_latency_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("MXJIT_CACHE_DIR", dir.c_str(), 1);
  const char* extra = std::getenv("MXJIT_NVRTC_OPTIONS");
  setenv("MXJIT_NVRTC_OPTIONS", (std::string("--no-cache ") + (extra ? extra : "")).c_str(), 1);
  const bool gpu = gpu_available();
  Target t = gpu ? current_target() : Target::parse("sm_90a");
  std::printf("target %s, %s\n", t.arch.c_str(), gpu ? gpu_info(0).name.c_str() : "no GPU (compile only)");

  // 1. Cold compile per kernel kind: generation + NVRTC into a fresh cache, NVRTC's own phases
  // (--time: front end, NVVM optimizer, ptxas), then warm: the same compile finding the cubin in
  // SQLite. The first compile of the process also pays NVRTC's start-up (and its precompiled
  // headers' creation), so it is repeated at the end.
  const std::vector<std::pair<const char*, Pipeline>> ps = {
      {"direct dim0 e4m3", dim0(e4m3)},
      {"direct dim0 e2m1", dim0(e2m1)},
      {"direct dim0 e5m2", dim0(e5m2)},
      {"columns dim1 e4m3", dim1()},
      {"columns dim0+dim1", parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4 ; "
                                           "mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4")},
      {"columns 3-D expert", parse_pipeline("bf16[3] -> mxfp8.e4m3 rceil blocks(1,32) q:expert_col_major s:blocked128x4")},
      {"tiled 32x32 blocks", parse_pipeline("bf16[2] -> mxfp8.e4m3 floor blocks(0,1,32x32)")},
      {"jagged fp8", parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs)")},
      {"direct nvfp4", parse_pipeline("bf16[2] -> nvfp4 s:blocked128x4")},
  };
  std::printf("%-20s %9s %9s %9s %9s %9s %9s\n", "cold compile", "total ms", "NVRTC ms", "front end", "optimizer", "ptxas",
              "warm ms");
  const std::string time_file = dir + "/nvrtc_time.csv";
  auto row = [&](const char* name, const Pipeline& p) {
    const detail::StrideClass sc = detail::default_stride_class(p);
    auto t0 = Clock::now();
    detail::CompiledKernel ck = detail::compile(p, t, sc);
    const double total = ms_since(t0);
    t0 = Clock::now();
    detail::compile(p, t, sc);  // warm: found in SQLite
    const double warm = ms_since(t0);
    // NVRTC's phases of the same source (--time writes them as CSV).
    detail::NvrtcRequest req;
    req.source = ck.source;
    req.headers = detail::kernel_header_texts(detail::generate(p, t, sc).headers);
    req.arch = t.arch;
    req.extra_options = {"--time=" + time_file};
    detail::nvrtc_compile(req);
    double fe = 0, opt = 0, ptxas = 0;
    if (FILE* f = std::fopen(time_file.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f)) {
        const std::string l = line;
        const size_t a = l.find(", "), b = l.find(", ", a + 2), c = l.find(", ", b + 2);
        if (a == std::string::npos || b == std::string::npos || c == std::string::npos) continue;
        const std::string phase = l.substr(a + 2, b - a - 2);
        const double v = std::atof(l.substr(b + 2, c - b - 2).c_str());
        (phase.find("Frontend") != std::string::npos ? fe : phase.find("Optimizer") != std::string::npos ? opt : ptxas) += v;
      }
      std::fclose(f);
      std::remove(time_file.c_str());
    }
    std::printf("%-20s %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f\n", name, total, ck.compile_ms, fe, opt, ptxas, warm);
  };
  for (auto& [name, p] : ps) row(name, p);
  row("direct dim0 e4m3 (again, a fresh cache key)", parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4 amax"));
  // warmup(): casts of the same kinds and sizes (other scale rules and recipes, so their keys are
  // new to this process's cache) compiled on every hardware thread at once.
  {
    const std::vector<Pipeline> fresh = {
        parse_pipeline("bf16[2] -> mxfp8.e4m3 ceil blocks(1,32) s:blocked128x4"),
        parse_pipeline("bf16[2] -> mxfp4.e2m1 ceil blocks(1,32) s:blocked128x4"),
        parse_pipeline("bf16[2] -> mxfp8.e5m2 ceil blocks(1,32) s:blocked128x4"),
        parse_pipeline("bf16[2] -> mxfp8.e4m3 ceil blocks(0,32) q:col_major"),
        parse_pipeline("bf16[2] -> mxfp8.e4m3 ceil blocks(1,32) s:blocked128x4 ; mxfp8.e4m3 ceil blocks(0,32) q:col_major s:blocked128x4"),
        parse_pipeline("bf16[3] -> mxfp8.e4m3 ceil blocks(1,32) q:expert_col_major s:blocked128x4"),
        parse_pipeline("bf16[2] -> mxfp8.e4m3 ceil blocks(0,1,32x32)"),
        parse_pipeline("bf16[2] -> fp8.e5m2 groups(0,offs)"),
        parse_pipeline("bf16[2] -> nvfp4 torchao s:blocked128x4")};
    auto t0 = Clock::now();
    warmup(fresh, t);
    std::printf("warmup() of %zu casts of the same kinds (fresh keys) on %u threads: %.1f ms (one after another: about the sum "
                "of the cold rows above)\n", fresh.size(), std::thread::hardware_concurrency(), ms_since(t0));
  }
  // 2. A new process that finds the kernel in SQLite.
  std::vector<double> child_ms;
  for (int i = 0; i < 7; ++i) {
    char buf[128] = {0};
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      execl("/proc/self/exe", argv[0], "--child", (char*)nullptr);
      _exit(127);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    double ms = 0;
    long long hits = 0, misses = 0;
    if (n > 0 && std::sscanf(buf, "%lf %lld %lld", &ms, &hits, &misses) == 3) {
      child_ms.push_back(ms);
      if (i == 0) std::printf("new process: disk hits %lld, misses %lld\n", hits, misses);
    }
  }
  if (!child_ms.empty())
    std::printf("new process, SQLite hit -> %s: median %.3f ms (min %.3f) over %zu processes\n",
                gpu ? "loaded kernel" : "cubin in hand", median(child_ms),
                *std::min_element(child_ms.begin(), child_ms.end()), child_ms.size());
  // 3. In-process dispatch on a cache hit: host time per launch; 4. stream loop vs graph replay.
  bool ok = true;
  if (gpu) {
    Pipeline p = dim0(e4m3);
    Kernel k = jit(p, t);
    const std::vector<int64_t> shape = {128, 128};
    DeviceBuffer xb = DeviceBuffer::alloc(128 * 128 * 2), qb = DeviceBuffer::alloc(128 * 128),
                 sb = DeviceBuffer::alloc(size_t(output_geometry(p, 1, shape).storage_bytes));
    xb.fill(0x3c);
    TensorView x = TensorView::contiguous(reinterpret_cast<void*>(xb.ptr()), DType::bf16, shape, DeviceKind::cuda);
    TensorView q = TensorView::contiguous(reinterpret_cast<void*>(qb.ptr()), DType::u8, shape, DeviceKind::cuda);
    TensorView s = TensorView::contiguous(reinterpret_cast<void*>(sb.ptr()), DType::u8,
                                          output_geometry(p, 1, shape).view_shape, DeviceKind::cuda);
    Stream st = Stream::create();
    for (int i = 0; i < 200; ++i) k(st.handle(), {x}, {q, s});
    st.synchronize();
    std::vector<double> per;
    for (int rep = 0; rep < 5; ++rep) {
      const int n = 2000;
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) k(st.handle(), {x}, {q, s});
      double us = ms_since(t0) * 1000.0 / n;
      st.synchronize();
      per.push_back(us);
    }
    std::printf("dispatch on an in-process hit (checks + lookup + cuLaunchKernel): median %.2f us per launch\n",
                median(per));
    // The driver's own share: cuLaunchKernel of an empty kernel in the same loop.
    detail::NvrtcRequest req;
    req.source = "extern \"C\" __global__ void empty(const long long* p) { (void)p; }";
    req.arch = t.arch;
    detail::LoadedKernel e = detail::LoadedKernel::load(detail::nvrtc_compile(req).cubin, "empty");
    long long dummy = 0;
    void* args[] = {&dummy};
    std::vector<double> raw;
    for (int rep = 0; rep < 5; ++rep) {
      const int n = 2000;
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) e.launch({1, 1, 1}, {32, 1, 1}, 0, st.handle(), args);
      raw.push_back(ms_since(t0) * 1000.0 / n);
      st.synchronize();
    }
    const double raw_us = median(raw);
    std::printf("raw cuLaunchKernel of an empty kernel, same loop: median %.2f us per launch\n", raw_us);
    ok = graph_comparison(t, st, raw_us);
  }
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;
}
