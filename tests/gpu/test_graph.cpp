// Kernel launches captured into a CUDA graph: a launch on a cache hit queues only asynchronous
// work, so it can be captured, and the replay writes the same bytes as the direct launch.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "gpu/check.hpp"
#include "runtime/compile.hpp"
#include "runtime/graph.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

// Launches `p` directly on a stream, then captures the same launch, clears the outputs and replays
// the graph; the replayed outputs must equal the direct ones byte for byte.
void check_replay(const Pipeline& p, std::vector<int64_t> shape, uint64_t seed) {
  Kernel k = jit(p);
  HostTensor x(DType::bf16, shape);
  fill_random(x, seed, true);
  DeviceTensor dx = DeviceTensor::of(x);
  const std::vector<TensorView> in = {dx.v};
  std::vector<HostTensor> direct, replayed;
  std::vector<DeviceTensor> dev;
  std::vector<TensorView> views;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    OutputGeometry g = output_geometry(p, int(o), shape);
    direct.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    replayed.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    dev.push_back(DeviceTensor::of(direct.back()));
    views.push_back(dev.back().v);
  }
  Stream st = Stream::create();
  // The first launch on a stream may allocate (NVFP4's per-stream amax word): done outside capture.
  k(st.handle(), in, views);
  st.synchronize();
  for (size_t o = 0; o < dev.size(); ++o) dev[o].download(direct[o]);
  Graph g = Graph::capture(st, [&] { k(st.handle(), in, views); });
  for (DeviceTensor& d : dev) d.buf.fill(0x5A);
  g.launch(st);
  st.synchronize();
  for (size_t o = 0; o < dev.size(); ++o) {
    dev[o].download(replayed[o]);
    const size_t n = direct[o].bytes.size() - 64;  // the guard tail is never part of the view
    CHECK_MESSAGE(std::equal(direct[o].bytes.begin(), direct[o].bytes.begin() + long(n), replayed[o].bytes.begin()),
                  "output " << p.outputs()[o].name);
  }
}

// NVFP4 with caller-provided scratch: the very first launch of a fresh Kernel happens inside the
// capture (no allocation, so it is capturable); replays with new inputs match the reference.
void check_workspace_capture(Nvfp4Convention c, std::vector<int64_t> shape) {
  auto x = input("x", DType::bf16, rank(2));
  auto s = nvfp4_scale(amax(blocks(x, 1, 16)), c);
  Pipeline p = pipeline({output("q", cast(e2m1, x / s)), output("s", s, layout::blocked_128x4())});
  Kernel k = jit(p);
  REQUIRE(k.workspace_bytes() == 4);
  DeviceBuffer ws = DeviceBuffer::alloc(16);
  HostTensor x0(DType::bf16, shape);
  DeviceTensor dx = DeviceTensor::of(x0);
  std::vector<HostTensor> ref, got;
  std::vector<DeviceTensor> dev;
  std::vector<TensorView> views, ref_views;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    OutputGeometry g = output_geometry(p, int(o), shape);
    ref.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    got.emplace_back(p.outputs()[o].dtype, g.view_shape, g.view_strides);
    dev.push_back(DeviceTensor::of(got.back()));
    views.push_back(dev.back().v);
    ref_views.push_back(ref.back().v);
  }
  Stream st = Stream::create();
  Graph g = Graph::capture(st, [&] { k(st.handle(), {&dx.v, 1}, views, ws.ptr()); });
  for (uint64_t seed : {11, 12}) {
    HostTensor xs(DType::bf16, shape);
    fill_random(xs, seed, true);
    dx.buf.upload(xs.bytes.data(), xs.bytes.size() - 64);
    for (DeviceTensor& d : dev) d.buf.fill(0x5A);
    g.launch(st);
    st.synchronize();
    reference::run(p, {&xs.v, 1}, ref_views);
    for (size_t o = 0; o < dev.size(); ++o) {
      dev[o].download(got[o]);
      const size_t n = ref[o].bytes.size() - 64;
      CHECK_MESSAGE(std::equal(ref[o].bytes.begin(), ref[o].bytes.begin() + long(n), got[o].bytes.begin()),
                    "output " << p.outputs()[o].name << " seed " << seed);
    }
  }
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("NVFP4 with caller workspace: first launch inside a capture, replays with new inputs") {
  MXJIT_REQUIRE_GPU();
  check_workspace_capture(Nvfp4Convention::te, {96, 160});
  check_workspace_capture(Nvfp4Convention::torchao, {130, 64});
}


TEST_CASE("a Kernel launch captured into a Graph replays bit-exact (MXFP8, NVFP4)") {
  MXJIT_REQUIRE_GPU();
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
    Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::blocked_128x4())});
    check_replay(p, {128, 128}, 5);
    check_replay(p, {200, 96}, 6);
  }
  {
    auto x = input("x", DType::bf16, rank(2));
    auto s = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
    Pipeline p = pipeline({output("q", cast(e2m1, x / s)), output("s", s, layout::blocked_128x4())});
    check_replay(p, {96, 160}, 7);
  }
  {
    // Whole columns of 9000 rows: a cluster of 16 CTAs chosen at launch, past the portable 8, so
    // the captured launch opts into the non-portable size (a function attribute) during capture.
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 0, kWholeAxis)), e4m3, ScaleRule::rceil);
    Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
    const detail::Plan plan = detail::make_plan(p, current_target(), detail::contiguous_stride_class(p, {9000, 64}));
    if (current_target().max_cluster() >= 16) CHECK(plan.launch({9000, 64}, 0).cluster == 16u);
    check_replay(p, {9000, 64}, 8);
  }
}

}
