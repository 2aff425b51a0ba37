#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/pipeline.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/graph.hpp"
#include "runtime/kernel.hpp"
#include "runtime/module.hpp"
#include "runtime/nvrtc.hpp"
#include "support/skip.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE("without a GPU: clear reason, typed errors, no crash") {
  if (gpu_available()) MXJIT_SKIP("a GPU is present");
  CHECK_FALSE(gpu_available());
  CHECK_FALSE(gpu_unavailable_reason().empty());
  try {
    DeviceBuffer::alloc(1024);
    FAIL("no CudaError");
  } catch (const CudaError& e) {
    CHECK(!std::string(e.what()).empty());
    CHECK(!e.call().empty());
  }
  CHECK_THROWS_AS(gpu_info(0), CudaError);
  CHECK_THROWS_AS(make_current(0), CudaError);
  CHECK_THROWS_AS(Stream::create(), CudaError);
  CHECK_THROWS_AS(LoadedKernel::load(std::string("\x7f" "ELF...."), "k"), CudaError);
  CHECK_THROWS_WITH_AS(LoadedKernel::load(std::string("\x7f"
                                                      "ELF...."),
                                          std::vector<std::string>{}),
                       doctest::Contains("no entry name"), UsageError);
  bool enqueued = false;
  CHECK_THROWS_AS(Graph::capture(uint64_t(1), [&] { enqueued = true; }), CudaError);
  CHECK_FALSE(enqueued);
  CHECK_THROWS_AS(Graph::capture(Stream::null(), [] {}), UsageError);
  // Objects that own nothing are fine without a driver.
  DeviceBuffer empty;
  CHECK(empty.ptr() == 0);
  Stream s = Stream::null();
  CHECK(s.handle() == 0);
  EventTimer timer;
  LoadedKernel none;
  CHECK_FALSE(none);
  Graph no_graph;
  CHECK_FALSE(no_graph);
  CHECK_THROWS_AS(no_graph.launch(), UsageError);
}

TEST_SUITE("gpu") {
  namespace {
  const char* kTimesTwo = R"(extern "C" __global__ void times_two(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * 2;
}
extern "C" __global__ void smem_copy(int* out, int n) {
  extern __shared__ int tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = i + 7;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i];
}
)";

  std::string compile_for_device() {
    GpuInfo info = gpu_info(0);
    NvrtcRequest req;
    req.source = kTimesTwo;
    req.file_name = "times_two.cu";
    req.arch = nvrtc_arch(info.cc_major, info.cc_minor);
    return nvrtc_compile(req).cubin;
  }
  }  // namespace

  TEST_CASE("gpu_info and make_current") {
    MXJIT_REQUIRE_GPU();
    CHECK(gpu_unavailable_reason().empty());
    GpuInfo info = gpu_info(0);
    MESSAGE(info.name << " cc " << info.cc_major << "." << info.cc_minor << " SMs " << info.sm_count
                      << " L2 " << info.l2_bytes << " mem " << info.total_mem << " smem optin "
                      << info.max_smem_per_block_optin << " driver " << info.driver_version);
    CHECK(!info.name.empty());
    CHECK(info.cc_major >= 7);
    CHECK(info.sm_count > 0);
    CHECK(info.l2_bytes > 0);
    CHECK(info.total_mem > 0);
    CHECK(info.max_smem_per_block_optin >= 48 * 1024);
    CHECK(info.driver_version >= 12000);
    make_current(0);
    make_current(0);  // keeps the current context
    CHECK_THROWS_AS(gpu_info(1000), UsageError);
  }

  TEST_CASE("DeviceBuffer alloc/upload/download/fill round trip") {
    MXJIT_REQUIRE_GPU();
    const size_t n = 1 << 20;
    std::vector<uint8_t> host(n), back(n);
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<uint8_t>(i * 31 + 7);
    DeviceBuffer buf = DeviceBuffer::alloc(n);
    CHECK(buf.ptr() != 0);
    CHECK(buf.bytes() == n);
    buf.upload(host.data(), n);
    buf.download(back.data(), n);
    CHECK(back == host);
    buf.fill(0xAB);
    buf.download(back.data(), n);
    CHECK(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0xAB; }));
    CHECK_THROWS_AS(buf.upload(host.data(), n + 1), UsageError);
    DeviceBuffer moved = std::move(buf);
    CHECK(buf.ptr() == 0);
    CHECK(moved.bytes() == n);
    moved.reset();
    CHECK(moved.ptr() == 0);
  }

  TEST_CASE("load and launch an NVRTC-compiled kernel") {
    MXJIT_REQUIRE_GPU();
    std::string cubin = compile_for_device();
    LoadedKernel k = LoadedKernel::load(cubin, "times_two");
    CHECK(k);
    CHECK(k.name() == "times_two");
    int n = 100003;
    DeviceBuffer out = DeviceBuffer::alloc(n * sizeof(int));
    out.fill(0xFF);
    uint64_t p = out.ptr();
    void* args[] = {&p, &n};
    Stream stream = Stream::create();
    k.launch({static_cast<unsigned>((n + 255) / 256), 1, 1}, {256, 1, 1}, 0, stream.handle(), args);
    stream.synchronize();
    std::vector<int> host(n);
    out.download(host.data(), n * sizeof(int));
    bool ok = true;
    for (int i = 0; i < n; ++i) ok = ok && host[i] == i * 2;
    CHECK(ok);

    CHECK_THROWS_AS(LoadedKernel::load(cubin, "no_such_kernel"), CudaError);

    // Host time of launch vs a raw cuLaunchKernel of the same function (median of batches).
    Driver& d = Driver::get();
    CUkernel raw_kernel = nullptr;
    CUfunction raw_fn = nullptr;
    CUlibrary lib = nullptr;
    d.check(d.cuLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData");
    d.check(d.cuLibraryGetKernel(&raw_kernel, lib, "times_two"), "cuLibraryGetKernel");
    d.check(d.cuKernelGetFunction(&raw_fn, raw_kernel), "cuKernelGetFunction");
    auto cu_stream = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream.handle()));
    std::vector<double> wrapped, raw;
    for (int rep = 0; rep < 9; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 500; ++i) k.launch({1, 1, 1}, {32, 1, 1}, 0, stream.handle(), args);
      auto t1 = std::chrono::steady_clock::now();
      stream.synchronize();
      auto t2 = std::chrono::steady_clock::now();
      for (int i = 0; i < 500; ++i) d.cuLaunchKernel(raw_fn, 1, 1, 1, 32, 1, 1, 0, cu_stream, args, nullptr);
      auto t3 = std::chrono::steady_clock::now();
      stream.synchronize();
      wrapped.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 500);
      raw.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count() / 500);
    }
    std::sort(wrapped.begin(), wrapped.end());
    std::sort(raw.begin(), raw.end());
    MESSAGE("launch host time per call (median): LoadedKernel::launch " << wrapped[4]
            << " us, raw cuLaunchKernel " << raw[4] << " us, overhead " << wrapped[4] - raw[4] << " us");
    d.cuLibraryUnload(lib);
  }

  TEST_CASE("dynamic shared memory above 48 KiB is opted into") {
    MXJIT_REQUIRE_GPU();
    GpuInfo info = gpu_info(0);
    LoadedKernel k = LoadedKernel::load(compile_for_device(), "smem_copy");
    int n = static_cast<int>(std::min<size_t>(info.max_smem_per_block_optin, 96 * 1024) / sizeof(int));
    DeviceBuffer out = DeviceBuffer::alloc(n * sizeof(int));
    uint64_t p = out.ptr();
    void* args[] = {&p, &n};
    k.launch({1, 1, 1}, {256, 1, 1}, static_cast<unsigned>(n * sizeof(int)), 0, args);
    Stream::null().synchronize();
    std::vector<int> host(n);
    out.download(host.data(), n * sizeof(int));
    bool ok = true;
    for (int i = 0; i < n; ++i) ok = ok && host[i] == n - 1 - i + 7;
    CHECK(ok);
  }

  TEST_CASE("a module of two kernels: each entry launches its own, with its own shared memory") {
    MXJIT_REQUIRE_GPU();
    LoadedKernel k = LoadedKernel::load(compile_for_device(), std::vector<std::string>{"times_two", "smem_copy"});
    CHECK(k.name() == "times_two");
    int n = 20000;  // 80000 bytes of shared memory for smem_copy: opted into for entry 1 only
    DeviceBuffer out = DeviceBuffer::alloc(n * sizeof(int));
    uint64_t p = out.ptr();
    void* args[] = {&p, &n};
    std::vector<int> host(n);
    for (int entry : {1, 0, 1}) {
      out.fill(0xFF);
      if (entry == 1) k.launch({1, 1, 1}, {256, 1, 1}, static_cast<unsigned>(n * sizeof(int)), 0, args, 0, 1);
      else
        k.launch({unsigned((n + 255) / 256), 1, 1}, {256, 1, 1}, 0, 0, args);
      Stream::null().synchronize();
      out.download(host.data(), n * sizeof(int));
      bool ok = true;
      for (int i = 0; i < n; ++i) ok = ok && host[i] == (entry == 1 ? n - 1 - i + 7 : 2 * i);
      CHECK_MESSAGE(ok, "entry " << entry);
    }
    CHECK(k.function(0, 0, 1).second != k.function(0, 0, 0).second);
    CHECK_THROWS_WITH_AS(k.launch({1, 1, 1}, {32, 1, 1}, 0, 0, args, 0, 2),
                         doctest::Contains("entry 2 of a module of 2 kernels"), UsageError);
    CHECK_THROWS_AS(LoadedKernel::load(compile_for_device(), std::vector<std::string>{"times_two", "no_such_kernel"}),
                    CudaError);
  }

  TEST_CASE("Graph: capture launches once, replay them; uncapturable calls fail by name") {
    MXJIT_REQUIRE_GPU();
    Driver& d = Driver::get();
    CHECK((d.cuStreamBeginCapture_v2 != nullptr));
    CHECK((d.cuGraphInstantiateWithFlags != nullptr));
    LoadedKernel k = LoadedKernel::load(compile_for_device(), "times_two");
    int n = 4099;
    DeviceBuffer out = DeviceBuffer::alloc(n * sizeof(int));
    out.fill(0xFF);
    uint64_t p = out.ptr();
    void* args[] = {&p, &n};
    Stream stream = Stream::create();
    Graph g = Graph::capture(stream, [&] {
      for (int i = 0; i < 3; ++i)
        k.launch({static_cast<unsigned>((n + 255) / 256), 1, 1}, {256, 1, 1}, 0, stream.handle(), args);
    });
    CHECK(g);
    stream.synchronize();
    std::vector<int> host(n);
    out.download(host.data(), n * sizeof(int));
    CHECK(host[0] == -1);  // capture ran nothing
    g.launch(stream);
    g.launch(stream);
    stream.synchronize();
    out.download(host.data(), n * sizeof(int));
    bool ok = true;
    for (int i = 0; i < n; ++i) ok = ok && host[i] == i * 2;
    CHECK(ok);
    Graph moved = std::move(g);
    CHECK_FALSE(g);
    CHECK(moved);

    // A synchronous call during capture fails with the call's name; the stream stays usable.
    try {
      Graph::capture(stream, [&] { stream.synchronize(); });
      FAIL("no CudaError");
    } catch (const CudaError& e) {
      CHECK(e.call() == "cuStreamSynchronize");
    }
    CHECK_THROWS_AS(Graph::capture(stream, [] { throw UsageError("from enqueue"); }), UsageError);
    moved.launch(stream);
    stream.synchronize();
  }

  TEST_CASE("EventTimer times GPU work") {
    MXJIT_REQUIRE_GPU();
    LoadedKernel k = LoadedKernel::load(compile_for_device(), "times_two");
    int n = 1 << 24;
    DeviceBuffer out = DeviceBuffer::alloc(size_t(n) * sizeof(int));
    uint64_t p = out.ptr();
    void* args[] = {&p, &n};
    Stream stream = Stream::create();
    EventTimer timer;
    CHECK_THROWS_AS(timer.elapsed_ms(), UsageError);
    timer.record_start(stream);
    for (int i = 0; i < 10; ++i)
      k.launch({static_cast<unsigned>(n / 256), 1, 1}, {256, 1, 1}, 0, stream.handle(), args);
    timer.record_stop(stream);
    float ms = timer.elapsed_ms();
    MESSAGE("10 x times_two over 64 MiB: " << ms << " ms");
    CHECK(ms > 0);
    CHECK(ms < 10000);
  }
}

TEST_CASE("Kernel workspace: NVFP4 needs 4 bytes, 16-byte aligned; other casts take none") {
  auto x = input("x", DType::bf16, rank(2));
  auto s4 = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  Kernel nv = jit(pipeline({output("q", cast(e2m1, x / s4)), output("s", s4)}), Target::parse("sm_90a"));
  auto s8 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  Kernel mx = jit(pipeline({output("q", cast(e4m3, x / s8)), output("s", s8)}), Target::parse("sm_90a"));
  CHECK(nv.workspace_bytes() == 4);
  CHECK(mx.workspace_bytes() == 0);
  // The workspace is checked before anything touches a GPU (or allocates).
  std::vector<TensorView> none;
  CHECK_THROWS_WITH_AS(nv(0, none, none, 0), doctest::Contains("needs 4 bytes of 16-byte aligned device scratch"),
                       UsageError);
  CHECK_THROWS_WITH_AS(nv(0, none, none, 0x1008), doctest::Contains("workspace 0x1008"), UsageError);
  CHECK_THROWS_WITH_AS(mx(0, none, none, 0x1000), doctest::Contains("needs none"), UsageError);
}
