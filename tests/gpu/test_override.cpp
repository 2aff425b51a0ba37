// MXJIT_OVERRIDE_DIR on the GPU: a dumped kernel, hand-edited, runs in place of the generated one
// and its output differs from the reference exactly as edited.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "check.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::test;
namespace fs = std::filesystem;

TEST_CASE("MXJIT_OVERRIDE_DIR: an edited kernel runs, and its codes differ from the reference as edited") {
  MXJIT_REQUIRE_GPU();
  // A cast no other GPU test jits (the in-process kernel cache would serve the generated one).
  const Pipeline p = parse_pipeline("bf16[2] -> mxfp8.e5m2 even blocks(1,64)");
  const Target t = current_target();
  const detail::CompiledKernel g = detail::compile(p, t, detail::default_stride_class(p));
  // The edit: bit 0 of the first code of every whole 8-code chunk flipped as it is stored.
  const std::string from = "make_uint2(wd[0], wd[1])", to = "make_uint2(wd[0] ^ 1u, wd[1])";
  std::string edited = g.source;
  const size_t at = edited.find(from);
  REQUIRE(at != std::string::npos);
  edited.replace(at, from.size(), to);
  const fs::path dir = fs::temp_directory_path() / fmt::format("mxjit_override_gpu_{}", ::getpid());
  fs::create_directories(dir);
  std::ofstream(dir / (g.plan.kernel_name + ".cu")) << edited;
  setenv("MXJIT_OVERRIDE_DIR", dir.string().c_str(), 1);
  const Kernel k = jit(p, t);
  unsetenv("MXJIT_OVERRIDE_DIR");
  CHECK(k.source() == edited);
  const std::vector<int64_t> shape = {64, 512};
  HostTensor x(DType::bf16, shape);
  fill_random(x, 11, false);
  OutputGeometry qg = output_geometry(p, 0, shape), sg = output_geometry(p, 1, shape);
  HostTensor ref_q(DType::u8, qg.view_shape), ref_s(DType::u8, sg.view_shape), gpu_q(DType::u8, qg.view_shape);
  std::vector<TensorView> host_in = {x.v}, host_out = {ref_q.v, ref_s.v};
  reference::run(p, host_in, host_out);
  DeviceTensor dx = DeviceTensor::of(x), dq = DeviceTensor::of(gpu_q), ds = DeviceTensor::of(ref_s);
  k(0, {dx.v}, {dq.v, ds.v});
  Stream::null().synchronize();
  dq.download(gpu_q);
  int64_t as_edited = 0, other = 0;
  for (int64_t i = 0; i < shape[0] * shape[1]; ++i) {
    const uint8_t want = uint8_t(ref_q.bytes[size_t(i)] ^ (i % 8 == 0 ? 1 : 0));
    (gpu_q.bytes[size_t(i)] == want ? as_edited : other) += 1;
  }
  CHECK(other == 0);
  CHECK(as_edited == shape[0] * shape[1]);
  fs::remove_all(dir);
}
