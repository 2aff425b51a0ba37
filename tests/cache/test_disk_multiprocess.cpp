// Several processes on one cache file, and fork() with an open cache.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <vector>

#include "cache_test_util.hpp"

using namespace mxjit;
using namespace mxjit::cache;
using namespace mxjit::cache::test;

TEST_CASE("multiprocess: miss, another process puts, then hit") {
  TempDir tmp;
  DiskCache parent(tmp.path());
  const CacheEntry e = test_entry(11);
  CHECK_FALSE(parent.get(e.key).has_value());
  const int rc = run_in_child([&] {
    DiskCache child(tmp.path());
    child.put(e);
    return child.stats().writes == 1 ? 0 : 1;
  });
  REQUIRE(rc == 0);
  auto got = parent.get(e.key);
  REQUIRE(got.has_value());
  CHECK(got->blob == e.blob);
  CHECK(parent.stats().disk_misses == 1);
  CHECK(parent.stats().disk_hits == 1);
}

TEST_CASE("multiprocess: fork with an open cache, then use it in the child and the parent") {
  TempDir tmp;
  WarningCapture w;
  DiskCache c(tmp.path());
  c.put(test_entry(1));
  const int rc = run_in_child([&] {
    // The inherited object must notice the fork and reconnect rather than share the handle.
    auto got = c.get(test_key(1));
    if (!got || got->blob != test_entry(1).blob) return 1;
    c.put(test_entry(2));
    if (!c.get(test_key(2))) return 2;
    return c.enabled() ? 0 : 3;
  });
  CHECK(rc == 0);
  CHECK(c.get(test_key(2)).has_value());  // the parent's connection still works
  c.put(test_entry(3));
  CHECK(c.get(test_key(3)).has_value());
  CHECK(row_count(c.file()) == 3);
  CHECK(w.count() == 0);
}

TEST_CASE("multiprocess: 8 processes x 50 keys plus shared keys put at the same moment") {
  constexpr int kProcs = 8, kOwn = 50, kShared = 10;
  TempDir tmp;
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int rc = 0;
      try {
        ::close(gate[1]);
        WarningCapture w;
        char byte;
        // Every child blocks here until the parent closes the pipe: all start at once, and all
        // open (and race to initialize) the fresh file at the same moment.
        if (::read(gate[0], &byte, 1) != 0) rc = 10;
        DiskCache c(tmp.path());
        for (int s = 0; s < kShared; ++s) c.put(test_entry(100000 + s, 4096));
        for (int i = 0; i < kOwn; ++i) c.put(test_entry(p * 1000 + i, 4096));
        for (int i = 0; i < kOwn && rc == 0; ++i) {
          auto got = c.get(test_key(p * 1000 + i));
          if (!got || got->blob != test_entry(p * 1000 + i, 4096).blob) rc = 20;
        }
        for (int s = 0; s < kShared && rc == 0; ++s) {
          auto got = c.get(test_key(100000 + s));
          if (!got || got->blob != test_entry(100000 + s, 4096).blob) rc = 30;
        }
        for (const auto& l : w.lines()) std::fprintf(stderr, "child %d: %s\n", p, l.c_str());
        if (rc == 0 && (!c.enabled() || w.count() != 0)) rc = 40;
        if (rc == 0 && c.stats().writes < kOwn) rc = 50;
      } catch (...) {
        rc = 60;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  ::close(gate[0]);
  ::usleep(100 * 1000);  // let every child reach the gate
  ::close(gate[1]);
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  const fs::path file = tmp / "kernels.sqlite";
  CHECK(row_count(file) == kProcs * kOwn + kShared);
  CHECK(std::stoll(raw_sql(file, "SELECT count(DISTINCT key) FROM kernels")) ==
        kProcs * kOwn + kShared);
  DiskCache c(tmp.path());
  CHECK(c.verify(false).ok == kProcs * kOwn + kShared);
  CHECK(files_containing(tmp.path(), ".bad-").empty());
}

TEST_CASE("multiprocess: lock_key makes a second process wait for the first's compile, then hit") {
  TempDir tmp;
  DiskCache parent(tmp.path());
  const CacheEntry e = test_entry(21);
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  // The child claims the key, tells the parent, "compiles" for 300 ms, puts and releases.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    int rc = 0;
    {
      DiskCache child(tmp.path());
      std::unique_ptr<KeyLock> claim = child.lock_key(e.key);
      if (!claim) rc = 1;
      if (::write(ready[1], "x", 1) != 1) rc = 2;
      ::usleep(300 * 1000);
      child.put(e);
    }
    ::_exit(rc);
  }
  ::close(ready[1]);
  char byte;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  CHECK_FALSE(parent.get(e.key).has_value());  // still being compiled
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<KeyLock> claim = parent.lock_key(e.key);  // waits for the child
  const double waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(claim != nullptr);
  CHECK(waited_ms > 100);
  auto got = parent.get(e.key);
  REQUIRE(got.has_value());
  CHECK(got->blob == e.blob);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::close(ready[0]);
}
