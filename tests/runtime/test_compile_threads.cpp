// The compile pipeline from several threads at once (what a multi-threaded host does on its first
// calls): generation, NVRTC and the shared disk cache. No GPU needed; the TSan build runs it
// (scripts/test_dev.sh).
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "dsl/dsl.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

Pipeline dim0_cast(ScaleRule rule) {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, rule);
  return pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
}

}  // namespace

TEST_CASE("compile from 4 threads: two pipelines, the same key and cubin for each, one cache entry") {
  const std::vector<Pipeline> pipelines = {dim0_cast(ScaleRule::rceil), dim0_cast(ScaleRule::floor)};
  const Target target = Target::parse("sm_90a");
  constexpr int kThreads = 4;
  std::vector<CompiledKernel> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        const Pipeline& p = pipelines[size_t(t % 2)];
        got[size_t(t)] = compile(p, target, default_stride_class(p));
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    REQUIRE_MESSAGE(errors[size_t(t)].empty(), "thread " << t << ": " << errors[size_t(t)]);
  for (int t = 2; t < kThreads; ++t) {
    CHECK(got[size_t(t)].content_key == got[size_t(t - 2)].content_key);
    CHECK(got[size_t(t)].cubin == got[size_t(t - 2)].cubin);
  }
  CHECK(got[0].content_key != got[1].content_key);
  cache::DiskCache& disk = disk_cache();
  if (!disk.enabled()) return;
  for (int t = 0; t < 2; ++t) {
    auto entry = disk.get(got[size_t(t)].content_key);
    REQUIRE(entry.has_value());
    CHECK(entry->blob == got[size_t(t)].cubin);
  }
}
