#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "codegen/plan.hpp"
#include "dsl/errors.hpp"
#include "dsl/pipeline.hpp"
#include "runtime/device.hpp"
#include "runtime/compile.hpp"
#include "runtime/nvrtc.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

const char* kTimesTwo = R"(extern "C" __global__ void times_two(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * 2;
}
)";

bool is_elf(const std::string& s) { return s.size() > 4 && s.compare(0, 4, "\x7f" "ELF") == 0; }

}  // namespace

TEST_CASE("number_lines formats 1-based numbers as %5d| line") {
  CHECK(number_lines("a\nb") == "    1| a\n    2| b");
  CHECK(number_lines("x\n") == "    1| x");
  CHECK(number_lines("") == "    1| ");
  std::string many;
  for (int i = 0; i < 12; ++i) many += "l\n";
  std::string numbered = number_lines(many);
  CHECK(numbered.find("   10| l") != std::string::npos);
  CHECK(numbered.find("   12| l") != std::string::npos);
}

TEST_CASE("nvrtc_version") {
  CHECK(nvrtc_version() >= 12080);
  std::string s = nvrtc_version_string();
  CHECK(s.find('.') != std::string::npos);
  CHECK(nvrtc_version() == std::stoi(s.substr(0, s.find('.'))) * 1000 + std::stoi(s.substr(s.find('.') + 1)) * 10);
}

TEST_CASE("nvrtc_compile produces a cubin for sm_90a and sm_100a, and PTX when asked") {
  for (const char* arch : {"sm_90a", "sm_100a", "sm_120a", "sm_89", "sm_80"}) {
    CAPTURE(arch);
    NvrtcRequest req;
    req.source = kTimesTwo;
    req.file_name = "times_two.cu";
    req.arch = arch;
    NvrtcOutput out = nvrtc_compile(req);
    CHECK(is_elf(out.cubin));
    CHECK(out.ptx.empty());
    CHECK(out.compile_ms > 0);
    CHECK(out.options.size() >= 4);

    req.want_ptx = true;
    out = nvrtc_compile(req);
    CHECK(is_elf(out.cubin));
    CHECK(out.ptx.find(".entry times_two") != std::string::npos);
  }
}

TEST_CASE("nvrtc_compile: PTX only for compute_*, resource usage in the log") {
  NvrtcRequest req;
  req.source = kTimesTwo;
  req.arch = "compute_90a";
  req.want_cubin = false;
  req.want_ptx = true;
  NvrtcOutput out = nvrtc_compile(req);
  CHECK(out.cubin.empty());
  CHECK(out.ptx.find(".entry times_two") != std::string::npos);

  req.want_cubin = true;
  CHECK_THROWS_AS(nvrtc_compile(req), UsageError);

  req.arch = "sm_100a";
  req.resource_usage = true;
  out = nvrtc_compile(req);
  CHECK(out.log.find("registers") != std::string::npos);
}

TEST_CASE("nvrtc_compile throws CompileError with log, options and numbered source") {
  NvrtcRequest req;
  req.source = "extern \"C\" __global__ void broken(int* p) {\n  p[0] = 1\n}\n";
  req.file_name = "broken.cu";
  req.arch = "sm_90a";
  try {
    nvrtc_compile(req);
    FAIL("no CompileError");
  } catch (const CompileError& e) {
    std::string what = e.what();
    CHECK(what.find("broken.cu") != std::string::npos);
    CHECK(what.find("sm_90a") != std::string::npos);
    CHECK(what.find("NVRTC failed to compile") == 0);
    CHECK(what.find("error") != std::string::npos);
    CHECK(!e.log().empty());
    CHECK(e.options().find("--gpu-architecture=sm_90a") != std::string::npos);
    CHECK(e.numbered_source().find("    2|   p[0] = 1") != std::string::npos);
  }
}

TEST_CASE("MXJIT_DUMP_SOURCE writes the source before compiling") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("mxjit_dump_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("MXJIT_DUMP_SOURCE", dir.c_str(), 1);
  NvrtcRequest req;
  req.source = "extern \"C\" __global__ void broken( {\n";  // dumped even though it fails
  req.file_name = "dumped.cu";
  req.arch = "sm_90a";
  CHECK_THROWS_AS(nvrtc_compile(req), CompileError);
  ::unsetenv("MXJIT_DUMP_SOURCE");
  std::ifstream in(dir / "dumped.cu");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == req.source);
  fs::remove_all(dir);
}

TEST_CASE("nvrtc_arch maps compute capabilities to exact NVRTC archs") {
  CHECK(nvrtc_arch(9, 0) == "sm_90a");
  CHECK(nvrtc_arch(10, 0) == "sm_100a");
  CHECK(nvrtc_arch(10, 3) == "sm_103a");
  CHECK(nvrtc_arch(12, 0) == "sm_120a");
  CHECK(nvrtc_arch(12, 1) == "sm_121a");
  CHECK(nvrtc_arch(8, 9) == "sm_89");
  CHECK(nvrtc_arch(8, 0) == "sm_80");
  CHECK(nvrtc_arch(8, 6) == "sm_86");
  CHECK_THROWS_AS(nvrtc_arch(0, 0), UsageError);
}

TEST_CASE("MXJIT_NVRTC_OPTIONS: appended to every compile and to the options text of the cache key") {
  ::setenv("MXJIT_NVRTC_OPTIONS", "  -DMXJIT_TEST_FLAG=7 \t --Ofast-compile=min ", 1);
  CHECK(env_nvrtc_options() == std::vector<std::string>{"-DMXJIT_TEST_FLAG=7", "--Ofast-compile=min"});
  CHECK(nvrtc_options_text("sm_90a").ends_with(" --fmad=false -DMXJIT_TEST_FLAG=7 --Ofast-compile=min"));
  NvrtcRequest req;
  req.source = std::string("#if MXJIT_TEST_FLAG != 7\n#error the option did not arrive\n#endif\n") + kTimesTwo;
  req.arch = "sm_90a";
  NvrtcOutput out = nvrtc_compile(req);
  CHECK(is_elf(out.cubin));
  CHECK(out.options.back() == "--Ofast-compile=min");
  // An option NVRTC does not know fails the compile, and the error carries the options.
  ::setenv("MXJIT_NVRTC_OPTIONS", "--no-such-option", 1);
  try {
    nvrtc_compile(req);
    FAIL("no CompileError");
  } catch (const CompileError& e) {
    CHECK(e.options().find("--no-such-option") != std::string::npos);
  }
  ::unsetenv("MXJIT_NVRTC_OPTIONS");
  CHECK(env_nvrtc_options().empty());
  CHECK(nvrtc_options_text("sm_90a").ends_with(" --fmad=false"));
  req.source = kTimesTwo;
  CHECK(is_elf(nvrtc_compile(req).cubin));
}

TEST_CASE("a module of several kernels compiles them in parallel: NVRTC's --split-compile") {
  auto x = input("x", DType::bf16, rank(2)), y = input("x", DType::f32, rank(2));
  auto sc = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3),
       sy = f32_scale(amax(groups(y, 0, offsets("offs"))), e4m3);
  const Pipeline two =
      pipeline({output("q", cast(e4m3, x / sc)), output("s", sc)});  // a 2-byte input: two kernels on sm_90+
  const Pipeline one = pipeline({output("q", cast(e4m3, y / sy)), output("s", sy)});  // FP32: one
  const Target t = Target::parse("sm_90a");
  const StrideClass order{{1, 0}, {true, false}};
  const Plan p2 = make_plan(two, t, order), p1 = make_plan(one, t, order);
  REQUIRE(p2.entry_names().size() == 2);
  REQUIRE(p1.entry_names().size() == 1);
  CHECK(plan_nvrtc_options(p2) == std::vector<std::string>{"--split-compile=2"});
  CHECK(plan_nvrtc_options(p1).empty());  // one kernel: nothing to run in parallel
  CHECK(plan_nvrtc_options(make_plan(two, Target::parse("sm_89"), order)).empty());
  // Column-major codes: three kernels (JaggedPlan::small), three threads.
  const Plan p3 =
      make_plan(pipeline({output("q", cast(e4m3, x / sc), layout::col_major()), output("s", sc)}), t, order);
  REQUIRE(p3.entry_names().size() == 3);
  CHECK(plan_nvrtc_options(p3) == std::vector<std::string>{"--split-compile=3"});
  // Where MXJIT_NVRTC_OPTIONS says how, it stands alone.
  ::setenv("MXJIT_NVRTC_OPTIONS", "--split-compile=1", 1);
  CHECK(plan_nvrtc_options(p2).empty());
  ::unsetenv("MXJIT_NVRTC_OPTIONS");
  // The module compiles with it, both kernels in the cubin: the cubin MXJIT_NVRTC_OPTIONS's
  // --split-compile=2 gives, not the one of --split-compile=1 (NVVM lays out the split kernels'
  // blocks otherwise).
  CompileOptions o;
  o.resource_usage = true;  // an NVRTC compile, not a cache hit
  const CompiledKernel k = compile(two, t, order, o);
  CHECK(is_elf(k.cubin));
  for (const std::string& e : p2.entry_names()) CHECK(k.cubin.find(e + '\0') != std::string::npos);
  ::setenv("MXJIT_NVRTC_OPTIONS", "--split-compile=2", 1);
  const CompiledKernel k2 = compile(two, t, order, o);
  ::setenv("MXJIT_NVRTC_OPTIONS", "--split-compile=1", 1);
  const CompiledKernel k1 = compile(two, t, order, o);
  ::unsetenv("MXJIT_NVRTC_OPTIONS");
  CHECK(k2.cubin == k.cubin);
  CHECK(k1.cubin != k.cubin);
}
