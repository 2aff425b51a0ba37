// jit() for an architecture other than this host's GPUs compiles without loading (a kernel for another
// GPU does not load: CUDA_ERROR_NO_BINARY_FOR_GPU), e.g. mxjit.warmup(archs=[...]) filling a disk cache
// for another machine; launching it is a CudaError.
#include <doctest/doctest.h>

#include "check.hpp"
#include "dsl/errors.hpp"

using namespace mxjit;

TEST_CASE("jit for another GPU architecture compiles only; its launch is a CudaError") {
  MXJIT_REQUIRE_GPU();
  const std::string here = current_target().arch;
  const std::string other = here == "sm_90a" ? "sm_100a" : "sm_90a";
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  Kernel k;
  REQUIRE_NOTHROW(k = jit(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}), Target::parse(other)));
  CHECK(k.source().find("__global__") != std::string::npos);
  test::HostTensor hx(DType::bf16, {64, 64}), hq(DType::u8, {64, 64}), hs(DType::u8, {64, 2});
  test::DeviceTensor dx = test::DeviceTensor::of(hx), dq = test::DeviceTensor::of(hq), ds = test::DeviceTensor::of(hs);
  CHECK_THROWS_AS(k(0, {dx.v}, {dq.v, ds.v}), CudaError);
}
