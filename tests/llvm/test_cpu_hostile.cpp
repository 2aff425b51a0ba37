// The CPU backend on hostile shapes (issue 36): blocks longer than their axis, blocks longer than
// a tile, empty domains with huge other extents. Outputs are bit-identical with the reference
// (buffers poisoned differently first), or the pipeline is refused with a UsageError when it is
// compiled.
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_check.hpp"
#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "dsl/text.hpp"

using namespace mxjit;
using namespace mxjit::test;

TEST_CASE("hostile cpu: a block longer than its axis is one block of the axis, as on the reference") {
  MXJIT_REQUIRE_CPU_BACKEND();
  for (int64_t block : {int64_t(64), int64_t(128), int64_t(4096), int64_t(1) << 20, int64_t(1) << 22})
    for (int axis : {0, 1}) {
      const Pipeline p = parse_pipeline(fmt::format("f32[2] -> mxfp8.e4m3 rceil blocks({},{}) amax", axis, block));
      const cpu::CpuKernel k = cpu::cpu_jit(p);
      std::vector<HostTensor> in;
      in.push_back(random_input(DType::f32, {64, 50}, uint64_t(block) + uint64_t(axis), true));
      CHECK(check_cpu(k, in, fmt::format("block {} along {}", block, axis)) == 0);
    }
  // 2-D blocks longer than both axes.
  const Pipeline p2 = parse_pipeline("bf16[3] -> mxint8 blocks(1,2,1024x2048)");
  std::vector<HostTensor> in;
  in.push_back(random_input(DType::bf16, {3, 40, 70}, 5, true));
  CHECK(check_cpu(cpu::cpu_jit(p2), in, "2-D 1024x2048") == 0);
}

TEST_CASE("hostile cpu: blocks past its tile are refused when compiled, whatever the extents (issue 36)") {
  MXJIT_REQUIRE_CPU_BACKEND();
  // Once: 2^32 narrowed to an int tile of 0 (SIGFPE), 2^31 x 2 to a negative one (gigabytes).
  for (const char* spec : {"f32[2] -> mxfp8.e4m3 blocks(1,4294967296)", "f32[2] -> mxint8 blocks(0,1,2147483648x2)",
                           "f32[2] -> mxfp8.e4m3 blocks(0,1099511627776)", "bf16[1] -> mxfp8.e4m3 blocks(0,8388608)",
                           "f32[2] -> mxfp8.e4m3 blocks(0,1,4096x2048)"}) {
    CAPTURE(spec);
    std::string msg;
    try {
      cpu::cpu_jit(parse_pipeline(spec));
    } catch (const UsageError& e) {
      msg = e.what();
    }
    CHECK(msg.find("CPU backend: blocks of ") != std::string::npos);
    CHECK(msg.find("exceed its tile of 2^22 values") != std::string::npos);
  }
}

TEST_CASE("hostile cpu: an empty domain costs O(1) whatever its other extents (issue 36)") {
  MXJIT_REQUIRE_CPU_BACKEND();
  const Pipeline p = parse_pipeline("f32[3] -> mxfp8.e4m3 ; mxfp8.e5m2 blocks(1,32) q:col_major s:blocked128x4 amax");
  const cpu::CpuKernel k = cpu::cpu_jit(p);
  const int64_t huge = int64_t(1) << 62;
  // Once: a loop over 2^60 row tiles of an empty domain, overflowing sizes on the way.
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
           {0, huge, huge}, {huge, huge, 0}, {huge, 0, huge}, {0, 1000000000, 64}, {3, 0, 5}}) {
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    CAPTURE(shape[2]);
    std::vector<float> none(1);
    const TensorView x = TensorView::contiguous(none.data(), DType::f32, shape);
    std::vector<std::vector<uint8_t>> store;
    std::vector<TensorView> outs;
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      const OutputGeometry g = output_geometry(p, int(o), shape);
      CHECK(g.storage_bytes == (p.outputs()[o].kind == OutputKind::amax ? 4 : 0));
      store.emplace_back(8, uint8_t(0x5A));
      outs.push_back(TensorView::strided(store.back().data(), p.outputs()[o].dtype, g.view_shape, g.view_strides));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<TensorView> ins = {x};
    k(ins, outs);
    reference::run(p, ins, outs);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
    for (size_t o = 0; o < p.outputs().size(); ++o)
      CHECK(store[o] == (p.outputs()[o].kind == OutputKind::amax ? std::vector<uint8_t>{0, 0, 0, 0, 0x5A, 0x5A, 0x5A, 0x5A}
                                                                 : std::vector<uint8_t>(8, 0x5A)));
  }
  // Jagged groups over zero rows: every group is empty, its scales those of a zero block.
  for (const char* spec : {"bf16[2] -> fp8.e4m3 groups(0,offs)", "bf16[2] -> mxfp8.e4m3 rceil groups(0,offs)"}) {
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, std::vector<int64_t>{0, 96});
    in.emplace_back(DType::i32, std::vector<int64_t>{3});
    std::memset(in.back().bytes.data(), 0, 12);
    CHECK(check_cpu(cpu::cpu_jit(parse_pipeline(spec)), in, spec, {0, 96}, 3) == 0);
  }
}
