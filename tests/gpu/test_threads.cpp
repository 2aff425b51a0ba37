// Kernels used from several host threads at once: one Kernel object launched by every thread (its
// per-object specialisation list and the process-wide caches), and jit() of one pipeline called by
// every thread. Each launch is compared byte for byte with the reference.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "gpu/check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

constexpr int kThreads = 4;

Pipeline dim0_blocked() {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::blocked_128x4())});
}

// Runs `body(t)` on kThreads threads; returns the bad byte count per thread (-1: it threw).
template <class Body>
std::vector<int64_t> on_threads(Body body, std::vector<std::string>& errors) {
  std::vector<int64_t> bad(kThreads, -1);
  errors.assign(kThreads, "");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        bad[size_t(t)] = body(t);
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  return bad;
}

// A fresh input per thread and shape: rows differ, so shape classes (and strides) differ too.
int64_t check_one(const Kernel& k, int t) {
  std::vector<HostTensor> in;
  in.emplace_back(DType::bf16, std::vector<int64_t>{int64_t(64 + 96 * t), 256});
  fill_random(in.back(), uint64_t(900 + t), t % 2 == 1);
  return check_against_reference(k, in, "thread " + std::to_string(t));
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("one Kernel launched from 4 threads, and jit() of one pipeline from 4 threads") {
  MXJIT_REQUIRE_GPU();
  const Pipeline p = dim0_blocked();
  std::vector<std::string> errors;
  const Kernel shared = jit(p);
  std::vector<int64_t> bad = on_threads([&](int t) { return check_one(shared, t); }, errors);
  for (int t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[size_t(t)].empty(), "shared Kernel, thread " << t << ": " << errors[size_t(t)]);
    CHECK(bad[size_t(t)] == 0);
  }
  bad = on_threads([&](int t) { return check_one(jit(p), t); }, errors);
  for (int t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[size_t(t)].empty(), "jit() per thread, thread " << t << ": " << errors[size_t(t)]);
    CHECK(bad[size_t(t)] == 0);
  }
}

}  // TEST_SUITE("gpu")
