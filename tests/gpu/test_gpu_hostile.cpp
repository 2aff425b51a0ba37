// GPU kernels on hostile shapes (issue 36), every byte against the reference with poisoned
// outputs: rank-1 casts; blocks longer than their axis; empty domains with huge other extents.
// Skips (one line per test) without a GPU.
#include <doctest/doctest.h>

#include <cstring>
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "codegen/plan.hpp"
#include "gpu/check.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::test;

TEST_CASE("hostile gpu: rank-1 casts of every block size (the direct kernel's one row), with tails") {
  MXJIT_REQUIRE_GPU();
  int n = 0;
  for (int64_t block : {2, 8, 16, 32, 64, 256})
    for (ElemFormat f : {e4m3, e2m1, int8})
      for (DType dt : {DType::bf16, DType::f32}) {
        auto x = input("x", dt, rank(1));
        auto s = e8m0_scale(amax(blocks(x, 0, block)), f, ScaleRule::even);
        const Pipeline p = pipeline({output("q", cast(f, x / s)), output("s", s), output("a", amax(x))});
        for (int64_t len : {int64_t(2), int64_t(1000), int64_t(4098), int64_t(1) << 20}) {
          std::vector<HostTensor> in;
          in.emplace_back(dt, std::vector<int64_t>{len});
          fill_random(in.back(), uint64_t(len + block), true);
          CHECK(check_against_reference(jit(p), in, fmt::format("rank 1 block {} {} len {}", block, f.str(), len)) == 0);
          ++n;
        }
      }
  MESSAGE("rank-1 cases: " << n);
}

TEST_CASE("hostile gpu: a block longer than its axis is one block of the axis") {
  MXJIT_REQUIRE_GPU();
  for (const char* spec : {"bf16[2] -> mxfp8.e4m3 blocks(1,256)", "bf16[2] -> mxfp8.e4m3 blocks(0,128) q:col_major",
                           "f32[2] -> mxint8 blocks(1,512)", "bf16[2] -> mxfp8.e4m3 blocks(0,1,128x128)",
                           "bf16[3] -> mxfp8.e5m2 blocks(1,128) q:expert_col_major s:blocked128x4"}) {
    const Pipeline p = parse_pipeline(spec);
    for (const std::vector<int64_t>& shape : p.rank() == 2 ? std::vector<std::vector<int64_t>>{{5, 7}, {100, 60}, {33, 250}}
                                                            : std::vector<std::vector<int64_t>>{{3, 50, 64}}) {
      std::vector<HostTensor> in;
      in.emplace_back(p.inputs()[0].dtype, shape);
      fill_random(in.back(), 9, true);
      CHECK(check_against_reference(jit(p), in, fmt::format("{} [{}]", spec, fmt::join(shape, ","))) == 0);
    }
  }
  // Blocks whose tile outgrows shared memory are refused by name when the launch plans them.
  const Pipeline big = parse_pipeline("f32[2] -> mxint8 blocks(1,4096)");
  std::vector<HostTensor> in;
  in.emplace_back(DType::f32, std::vector<int64_t>{5, 7});
  fill_random(in.back(), 9, true);
  CHECK_THROWS_WITH_AS(check_against_reference(jit(big), in, "blocks(1,4096)"), doctest::Contains("at most 200 KiB fit"), UsageError);
}

TEST_CASE("hostile gpu: empty domains launch nothing and touch no output; jagged scales of empty groups") {
  MXJIT_REQUIRE_GPU();
  const Pipeline p = parse_pipeline("bf16[3] -> mxfp8.e4m3 ; mxfp8.e4m3 blocks(1,32) q:expert_col_major s:blocked128x4 amax");
  const int64_t huge = int64_t(1) << 62;
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{0, 64, 64}, {4, 0, 64}, {4, 64, 0}, {0, huge, huge}}) {
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, std::vector<int64_t>{0});
    in.back().v = TensorView::contiguous(in.back().bytes.data(), DType::bf16, shape);
    std::vector<DeviceTensor> dev_out;
    std::vector<TensorView> views;
    std::vector<HostTensor> host_out;
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      const OutputGeometry g = output_geometry(p, int(o), shape);
      CHECK(g.storage_bytes == (p.outputs()[o].kind == OutputKind::amax ? 4 : 0));
      // 64 guard bytes (and the amax word); the view has the geometry's (empty) shape.
      host_out.emplace_back(p.outputs()[o].dtype, std::vector<int64_t>{p.outputs()[o].kind == OutputKind::amax ? 1 : 0});
      host_out.back().v = TensorView::strided(host_out.back().bytes.data(), p.outputs()[o].dtype, g.view_shape, g.view_strides);
      std::fill(host_out.back().bytes.begin(), host_out.back().bytes.end(), uint8_t(0x5A));
      dev_out.push_back(DeviceTensor::of(host_out.back()));
      views.push_back(dev_out.back().v);
    }
    DeviceTensor x = DeviceTensor::of(in.back());
    const std::vector<TensorView> inputs = {x.v};
    jit(p)(0, inputs, views);
    Stream::null().synchronize();
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      HostTensor back = host_out[o];
      dev_out[o].download(back);
      if (p.outputs()[o].kind == OutputKind::amax) {
        uint32_t a = 1;
        std::memcpy(&a, back.bytes.data(), 4);
        CHECK(a == 0);  // the amax of no element
      } else {
        CHECK(back.bytes == host_out[o].bytes);  // untouched
      }
    }
  }
  // Jagged groups over zero rows: every group is empty, its scales are those of a zero block.
  auto x = input("x", DType::bf16, rank(2));
  for (bool fp32 : {false, true}) {
    auto s = fp32 ? f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3)
                  : e8m0_scale(amax(groups(x, 0, offsets("offs"))), e4m3, ScaleRule::rceil);
    const Pipeline pg = pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, std::vector<int64_t>{0, 96});
    in.emplace_back(DType::i32, std::vector<int64_t>{3});
    std::memset(in.back().bytes.data(), 0, 12);
    CHECK(check_against_reference(jit(pg), in, fp32 ? "empty groups fp32" : "empty groups e8m0", {0, 96}, 3) == 0);
  }
}

TEST_CASE("hostile gpu: scales without their codes, blocks along any axis of a rank-3 tensor (generator fuzzer seed 28)") {
  MXJIT_REQUIRE_GPU();
  for (int axis : {0, 1, 2})
    for (bool fp32 : {true, false}) {
      auto x = input("x", DType::f32, rank(3));
      auto v = x * 0.5;
      auto s = fp32 ? f32_scale(amax(blocks(v, axis, 32)), e5m2) : e8m0_scale(amax(blocks(v, axis, 32)), e4m3, ScaleRule::rceil);
      const Pipeline p = pipeline({output("s", s)});
      for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{128, 1, 128}, {64, 3, 96}, {33, 40, 70}}) {
        std::vector<HostTensor> in;
        in.emplace_back(DType::f32, shape);
        fill_random(in.back(), 28, true);
        CHECK(check_against_reference(jit(p), in, fmt::format("scales only, axis {} {} [{}]", axis, fp32 ? "fp32" : "e8m0",
                                                              fmt::join(shape, ","))) == 0);
      }
    }
}

TEST_CASE("hostile gpu: a tiled cast whose dynamic shared memory (48 KiB) and static shared memory pass 48 KiB (generator fuzzer seed 368)") {
  MXJIT_REQUIRE_GPU();
  // The launcher opted in above 48 KiB of dynamic shared memory only; the tensor amax's static
  // reduction array took the total past the default limit, and cuLaunchKernel refused.
  auto x = input("x", DType::bf16, rank(3));
  auto s = e8m0_scale(amax(blocks(x, 0, 8)), e2m1, ScaleRule::rceil);
  for (bool with_scales : {false, true}) {
    std::vector<Output> outs{output("q", cast(e2m1, x / s), Layout::permuted({1, 2, 0})), output("a", amax(x))};
    if (with_scales) outs.push_back(output("s", s));
    const Pipeline p = pipeline(outs);
    const detail::Plan plan = detail::make_plan(p, Target::parse("sm_90a"), detail::default_stride_class(p));
    CHECK(plan.kind == KernelKind::tiled);
    CHECK(plan.smem_bytes == 48 * 1024);
    std::vector<HostTensor> in;
    in.emplace_back(DType::bf16, std::vector<int64_t>{96, 63, 10});
    fill_random(in.back(), 368, true);
    CHECK(check_against_reference(jit(p), in, fmt::format("tiled, 48 KiB dynamic + static{}", with_scales ? ", scales" : "")) == 0);
  }
}
