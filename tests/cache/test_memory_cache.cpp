// Tier 1: the in-process map.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "cache/key.hpp"
#include "cache/memory_cache.hpp"

using namespace mxjit;
using namespace mxjit::cache;

TEST_CASE("MemoryCache: miss, insert, hit, counters, clear") {
  MemoryCache<std::string, int> c;
  CHECK(c.find("a") == nullptr);
  auto first = c.insert("a", 1);
  REQUIRE(first);
  CHECK(*first == 1);
  auto second = c.insert("a", 2);  // first insert wins
  CHECK(second == first);
  CHECK(*c.find("a") == 1);
  CHECK(c.size() == 1);
  CHECK(c.hits() == 1);
  CHECK(c.misses() == 1);
  c.clear();
  CHECK(c.size() == 0);
  CHECK(*first == 1);  // values held by callers survive clear()
}

TEST_CASE("MemoryCache: concurrent inserts of one key agree on one winner") {
  MemoryCache<Hash128, std::string, Hash128Hash> c;
  const Hash128 key = hash128("k");
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const std::string>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) c.find(hash128(std::to_string(i)));
      std::string value = "value from ";
      value += std::to_string(t);
      got[t] = c.insert(key, std::move(value));
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) CHECK(g == got[0]);
  CHECK(c.size() == 1);
  CHECK(c.misses() == kThreads * 1000);
}
