// MXJIT_DUMP_DIR writes every compiled kernel's source, PTX, cubin and plan by name;
// MXJIT_OVERRIDE_DIR compiles a hand-edited file of that name in place of the generated source
// (its own cache key). No GPU needed; tests/gpu/test_override.cpp runs an edited kernel.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/emit.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::detail;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const std::string& v) : name(n) { setenv(n, v.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name); }
};

fs::path fresh_dir(const char* tag) {
  const fs::path d = fs::temp_directory_path() / fmt::format("mxjit_{}_{}", tag, ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("MXJIT_DUMP_DIR: source, PTX, cubin and plan of every compiled kernel, by kernel name") {
  const fs::path dir = fresh_dir("dump");
  const Pipeline p = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4");
  const Target t = Target::parse("sm_90a");
  CompiledKernel k;
  {
    ScopedEnv env("MXJIT_DUMP_DIR", dir.string());
    k = compile(p, t, default_stride_class(p));
  }
  const std::string stem = k.plan.kernel_name;
  CHECK(stem.starts_with("mxjit_columns_dim1_e4m3_rceil_bf16_"));
  CHECK(read(dir / (stem + ".cu")) == k.source);
  CHECK(read(dir / (stem + ".cubin")) == k.cubin);
  CHECK(read(dir / (stem + ".ptx")).find(".entry " + stem) != std::string::npos);
  const std::string plan = read(dir / (stem + ".plan.txt"));
  CHECK(plan.find(k.plan.str()) != std::string::npos);
  CHECK(plan.find(k.content_key.hex()) != std::string::npos);
  // The dumped source is the kernel: it includes mxjit's headers by name, with its banner.
  CHECK(k.source.find("#include \"prelude.cuh\"") != std::string::npos);
  CHECK(k.source.find("// pipeline bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(0,32) q:col_major s:blocked128x4") != std::string::npos);
  CHECK(k.source.find("//   schedule: tune()") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("MXJIT_OVERRIDE_DIR: a hand-edited kernel file is compiled in place of the generated one") {
  const Pipeline p = parse_pipeline("bf16[2] -> mxfp8.e5m2 even blocks(1,64)");
  const Target t = Target::parse("sm_90a");
  const CompiledKernel plain = compile(p, t, default_stride_class(p));
  CHECK(!plain.overridden);
  // An edit that changes the code: the launch bounds' minimum CTAs per SM.
  const std::string from = fmt::format("__launch_bounds__({}, {})", plain.plan.threads, plain.plan.ctas_per_sm);
  const size_t at = plain.source.find(from);
  REQUIRE(at != std::string::npos);
  std::string edited = plain.source;
  edited.replace(at, from.size(), fmt::format("__launch_bounds__({}, 1)", plain.plan.threads));
  const fs::path dir = fresh_dir("override");
  std::ofstream(dir / (plain.plan.kernel_name + ".cu")) << edited;
  CompiledKernel over;
  {
    ScopedEnv env("MXJIT_OVERRIDE_DIR", dir.string());
    over = compile(p, t, default_stride_class(p));
  }
  CHECK(over.overridden);
  CHECK(over.source == edited);
  CHECK(over.content_key != plain.content_key);
  CHECK(over.cubin != plain.cubin);
  CHECK(over.plan.kernel_name == plain.plan.kernel_name);
  // Without the variable (or without a file of the kernel's name) the generated source compiles.
  CHECK(compile(p, t, default_stride_class(p)).source == plain.source);
  {
    ScopedEnv env("MXJIT_OVERRIDE_DIR", (dir / "elsewhere").string());
    CHECK(!compile(p, t, default_stride_class(p)).overridden);
  }
  fs::remove_all(dir);
}
