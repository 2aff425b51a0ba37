// Timings of the disk cache (skipped by default). Run:
//   test_cache --no-skip -tc="bench*"
// The fresh-process number is measured in a newly exec'ed copy of this binary, from before the
// DiskCache constructor to after get() returns a verified ~20 KB blob.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cache/cache_file.hpp"
#include "cache_test_util.hpp"

using namespace mxjit;
using namespace mxjit::cache;
using namespace mxjit::cache::test;

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

/// Median and 90th percentile of `v`.
std::pair<double, double> med_p90(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 9 / 10]};
}

/// Execs this binary in child mode `n` times on `dir` and returns each open+get time (µs).
std::vector<double> fresh_process_times(const fs::path& dir, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const std::string cmd = "MXJIT_BENCH_CHILD='" + dir.string() +
                            "' /proc/" + std::to_string(::getpid()) +
                            "/exe --no-skip -tc='bench child*' 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    char line[512];
    while (std::fgets(line, sizeof line, p)) {
      double us = 0;
      if (std::sscanf(line, "open+get us=%lf", &us) == 1) out.push_back(us);
    }
    ::pclose(p);
  }
  return out;
}

}  // namespace

TEST_CASE("bench child: open + get in a fresh process" * doctest::skip()) {
  const char* dir = std::getenv("MXJIT_BENCH_CHILD");
  if (!dir) return;
  const auto t0 = Clock::now();
  DiskCache c{fs::path(dir)};
  auto e = c.get(test_key(0));
  const double us = us_since(t0);
  REQUIRE(e.has_value());
  std::printf("open+get us=%.1f\n", us);
}

TEST_CASE("bench: put, get, fresh-process open+get" * doctest::skip()) {
  TempDir tmp;
  constexpr int kN = 200;
  std::vector<double> put_us, get_us;
  {
    DiskCache c(tmp.path());
    for (int i = 0; i < kN; ++i) {
      const CacheEntry e = test_entry(i);
      const auto t0 = Clock::now();
      c.put(e);
      put_us.push_back(us_since(t0));
    }
    for (int i = 0; i < kN; ++i) {
      const auto t0 = Clock::now();
      auto e = c.get(test_key(i));
      get_us.push_back(us_since(t0));
      REQUIRE(e.has_value());
    }
    MESSAGE("journal: ", std::string(c.wal() ? "wal" : "delete"), ", file ", c.file_bytes() / 1024, " KiB");
  }
  auto [pm, p90] = med_p90(put_us);
  MESSAGE("put 20 KB (own transaction): median ", pm, " us, p90 ", p90, " us");
  auto [gm, g90] = med_p90(get_us);
  MESSAGE("get 20 KB, open connection: median ", gm, " us, p90 ", g90, " us");

  auto [fm, f90] = med_p90(fresh_process_times(tmp.path(), 21));
  MESSAGE("fresh process open+get, 200-entry file (no open quick_check): median ", fm,
          " us, p90 ", f90, " us");

  TempDir small;
  {
    DiskCache c(small.path());
    c.put(test_entry(0));
  }
  auto [sm, s90] = med_p90(fresh_process_times(small.path(), 21));
  MESSAGE("fresh process open+get, 1-entry file (quick_check at open): median ", sm, " us, p90 ",
          s90, " us");

  detail::Connection db(tmp / "kernels.sqlite");
  const auto t0 = Clock::now();
  CHECK(detail::quick_check(db).empty());
  MESSAGE("quick_check of the ", fs::file_size(tmp / "kernels.sqlite") / 1024, " KiB file: ",
          us_since(t0), " us");
}
