// CPU backend compilation and caching: the SQLite entry (arch, toolchain, object blob), a disk hit
// that links the cached object without optimising, stride classes, concurrent callers.
#include <doctest/doctest.h>

#include <thread>

#include "cache/key.hpp"
#include "runtime/compile.hpp"
#include "backends/llvm/jit_engine.hpp"
#include "llvm/cpu_check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

Pipeline dim0(ElemFormat f, ScaleRule rule) {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), f, rule);
  return pipeline({output("q", cast(f, x / s)), output("s", s, layout::blocked_128x4())});
}

}  // namespace

TEST_SUITE("llvm") {

TEST_CASE("compile info, the SQLite entry and a disk hit without optimising") {
  MXJIT_REQUIRE_CPU_BACKEND();
  const Pipeline p = dim0(e3m2, ScaleRule::ceil);
  cpu::CpuKernel k = cpu::cpu_jit(p);
  const cpu::CpuCompileInfo& info = k.compile_info();
  CHECK(info.total_ms > 0);
  CHECK(info.content_key.size() == 32);
  CHECK(k.ir_text().find("define void @mxcpu_") != std::string::npos);
  MESSAGE("first compile: " << info.total_ms << " ms (" << std::string(info.from_disk ? "disk hit" : "cold") << ")");
  cache::DiskCache& disk = ::mxjit::detail::disk_cache();
  if (!disk.enabled()) {
    MESSAGE("disk cache disabled: the disk-hit check is skipped");
    return;
  }
  auto entry = disk.get(*cache::parse_hash128(info.content_key));
  REQUIRE(entry.has_value());
  CHECK(entry->arch == cpu::cpu_target_name());
  CHECK(entry->arch.rfind("host-", 0) == 0);
  CHECK(entry->toolchain_version.rfind("llvm-16", 0) == 0);
  CHECK(entry->blob.size() > 100);
  CHECK(entry->blob.compare(0, 4, "\x7f" "ELF") == 0);
  // Bypass the in-process cache: the object comes from SQLite and is linked again.
  auto f = cpu::detail::compile_function(p, {1}, /*memory_cache=*/false);
  CHECK(f->info.from_disk);
  CHECK(f->info.compile_ms == 0);
  CHECK(f->info.content_key == info.content_key);
  MESSAGE("disk hit: " << f->info.total_ms << " ms (IR " << f->info.lower_ms << " ms)");
  std::vector<HostTensor> in;
  in.push_back(random_input(DType::bf16, {64, 96}, 71, true));
  CHECK(check_cpu(k, in, "after a disk hit") == 0);
}

TEST_CASE("stride classes compile separately; concurrent callers get the same bits") {
  MXJIT_REQUIRE_CPU_BACKEND();
  cpu::CpuKernel k = cpu::cpu_jit(dim0(e4m3, ScaleRule::floor));
  std::vector<HostTensor> row, col;
  row.push_back(random_input(DType::bf16, {128, 96}, 81, true));
  col.push_back(random_input(DType::bf16, {128, 96}, 82, true, {1, 128}));
  CHECK(check_cpu(k, row, "row-major") == 0);
  CHECK(check_cpu(k, col, "column-major") == 0);
  int64_t bad[4] = {0, 0, 0, 0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<HostTensor> in;
      in.push_back(random_input(DType::bf16, {96 + 32 * t, 160}, uint64_t(90 + t), true));
      for (int rep = 0; rep < 3; ++rep) bad[t] += check_cpu(k, in, "concurrent", {}, 0, t % 3);
    });
  for (std::thread& t : threads) t.join();
  for (int64_t b : bad) CHECK(b == 0);
}

}  // TEST_SUITE
