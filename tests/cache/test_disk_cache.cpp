// The SQLite store in one process: round trips, first-writer-wins, tools, stats, environment.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "cache/sqlite.hpp"
#include "cache_test_util.hpp"

using namespace mxjit;
using namespace mxjit::cache;
using namespace mxjit::cache::test;

TEST_CASE("DiskCache: put then get returns the same entry; a private dir and file") {
  TempDir tmp;
  WarningCapture warnings;
  const fs::path dir = tmp / "a" / "b";
  DiskCache c(dir);
  REQUIRE(c.enabled());
  CHECK(c.file() == dir / "kernels.sqlite");
  CHECK(mode_of(dir) == 0700);
  CHECK(mode_of(tmp / "a") == 0700);
  CHECK(mode_of(c.file()) == 0600);
  CHECK(c.wal() == detail::wal_is_safe(detail::sqlite_version_number()));
  CHECK(raw_sql(c.file(), "PRAGMA journal_mode") == (c.wal() ? "wal" : "delete"));
  CHECK(raw_sql(c.file(), "PRAGMA user_version") == std::to_string(kSchemaVersion));
  CHECK(raw_sql(c.file(), "PRAGMA application_id") == std::to_string(kApplicationId));

  const CacheEntry e = test_entry(1);
  CHECK_FALSE(c.get(e.key).has_value());
  c.put(e);
  auto got = c.get(e.key);
  REQUIRE(got.has_value());
  CHECK(got->key == e.key);
  CHECK(got->kernel_name == e.kernel_name);
  CHECK(got->arch == e.arch);
  CHECK(got->toolchain_version == e.toolchain_version);
  CHECK(got->blob == e.blob);
  CHECK(got->blob_bytes == static_cast<int64_t>(e.blob.size()));
  CHECK(got->meta == e.meta);
  CHECK(got->compile_ms == e.compile_ms);
  CHECK(got->created_unix > 0);
  CHECK(got->last_used_unix >= got->created_unix);
  CHECK(c.file_bytes() > static_cast<int64_t>(e.blob.size()));
  CHECK(warnings.count() == 0);
}

TEST_CASE("DiskCache: the first writer of a key wins; remove deletes") {
  TempDir tmp;
  DiskCache c(tmp.path());
  CacheEntry a = test_entry(7);
  CacheEntry b = a;
  b.blob = "other bytes";
  c.put(a);
  c.put(b);
  CHECK(c.get(a.key)->blob == a.blob);
  CHECK(c.stats().writes == 1);
  CHECK(row_count(c.file()) == 1);
  c.remove(a.key);
  CHECK_FALSE(c.get(a.key).has_value());
  c.put(b);  // replaced after a failed load
  CHECK(c.get(a.key)->blob == "other bytes");
}

TEST_CASE("DiskCache: an empty blob and empty strings round-trip") {
  TempDir tmp;
  DiskCache c(tmp.path());
  CacheEntry e;
  e.key = test_key(3);
  c.put(e);
  auto got = c.get(e.key);
  REQUIRE(got.has_value());
  CHECK(got->blob.empty());
  CHECK(got->kernel_name.empty());
}

TEST_CASE("DiskCache: tuned values are replaced, not ignored") {
  TempDir tmp;
  DiskCache c(tmp.path());
  CHECK_FALSE(c.get_tuned("shape-a").has_value());
  c.put_tuned("shape-a", "vec=4");
  c.put_tuned("shape-a", "vec=8");
  CHECK(c.get_tuned("shape-a") == "vec=8");
}

TEST_CASE("DiskCache tools: list, dump, verify, clear") {
  TempDir tmp;
  DiskCache c(tmp.path());
  for (int i = 0; i < 5; ++i) c.put(test_entry(i, 1000 + i));
  auto entries = c.list();
  REQUIRE(entries.size() == 5);
  for (const auto& e : entries) {
    CHECK(e.blob.empty());
    CHECK(e.blob_bytes >= 1000);
    CHECK(e.kernel_name.rfind("mx_cast_", 0) == 0);
  }
  auto full = c.list(true);
  REQUIRE(full.size() == 5);
  for (const auto& e : full) CHECK(static_cast<int64_t>(e.blob.size()) == e.blob_bytes);

  const fs::path out = tmp / "k2.cubin";
  CHECK(c.dump(test_key(2), out));
  std::ifstream f(out, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(bytes == test_entry(2, 1002).blob);
  CHECK_FALSE(c.dump(test_key(99), tmp / "none.cubin"));
  CHECK_THROWS_AS(c.dump(test_key(2), tmp / "no-such-dir" / "x.cubin"), Error);

  VerifyReport r = c.verify(false);
  CHECK(r.file_ok);
  CHECK(r.ok == 5);
  CHECK(r.bad == 0);

  c.put_tuned("t", "v");
  c.clear();
  CHECK(c.list().empty());
  CHECK_FALSE(c.get_tuned("t").has_value());
  CHECK(c.enabled());
}

TEST_CASE("DiskCache: stats are exact after a scripted sequence") {
  TempDir tmp;
  DiskCache c(tmp.path());
  CacheEntry a = test_entry(1), b = test_entry(2);
  a.compile_ms = 100.5;
  b.compile_ms = 20.25;
  c.get(a.key);            // disk miss
  c.put(a);                // write
  c.put(a);                // ignored
  c.get(a.key);            // hit, saves 100.5
  c.get(a.key);            // hit, saves 100.5
  c.put(b);                // write
  c.get(b.key);            // hit, saves 20.25
  c.get(test_key(42));     // miss
  c.count_memory_lookup(true);
  c.count_memory_lookup(true);
  c.count_memory_lookup(false);
  raw_sql(c.file(), "UPDATE kernels SET blob = x'00' WHERE key = '" + b.key.hex() + "'");
  {
    WarningCapture w;
    CHECK_FALSE(c.get(b.key).has_value());  // evicted, miss
    CHECK(w.count() == 1);
  }
  const CacheStats s = c.stats();
  CHECK(s.disk_hits == 3);
  CHECK(s.disk_misses == 3);
  CHECK(s.mem_hits == 2);
  CHECK(s.mem_misses == 1);
  CHECK(s.writes == 2);
  CHECK(s.evicted_bad == 1);
  CHECK(s.compile_ms_saved == doctest::Approx(221.25));
}

TEST_CASE("DiskCache: last_used is refreshed lazily, at most hourly") {
  TempDir tmp;
  const CacheEntry e = test_entry(5);
  {
    DiskCache c(tmp.path());
    c.put(e);
  }
  const fs::path file = tmp / "kernels.sqlite";
  raw_sql(file, "UPDATE kernels SET last_used = 1000");
  {
    DiskCache c(tmp.path());
    REQUIRE(c.get(e.key).has_value());
    CHECK(raw_sql(file, "SELECT last_used FROM kernels") == "1000");  // not on the hit path
  }
  CHECK(std::stoll(raw_sql(file, "SELECT last_used FROM kernels")) > 1000);  // flushed at close
}

TEST_CASE("DiskCache::default_dir resolution and MXJIT_CACHE") {
  {
    EnvVar a("MXJIT_CACHE_DIR", "/x/cache"), b("XDG_CACHE_HOME", "/y"), c("HOME", "/home/u");
    CHECK(DiskCache::default_dir() == fs::path("/x/cache"));
  }
  {
    EnvVar a("MXJIT_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", "/y"), c("HOME", "/home/u");
    CHECK(DiskCache::default_dir() == fs::path("/y/mxjit"));
  }
  {
    EnvVar a("MXJIT_CACHE_DIR", ""), b("XDG_CACHE_HOME", "relative/ignored"), c("HOME", "/home/u");
    CHECK(DiskCache::default_dir() == fs::path("/home/u/.cache/mxjit"));
  }
  {
    EnvVar a("MXJIT_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt),
        c("HOME", "/home/u");
    CHECK(DiskCache::default_dir() == fs::path("/home/u/.cache/mxjit"));
  }
  {
    EnvVar a("MXJIT_CACHE", "0");
    CHECK(DiskCache::disabled_by_env());
    TempDir tmp;
    EnvVar d("MXJIT_CACHE_DIR", tmp.path().string());
    WarningCapture w;
    auto c = DiskCache::open_default();
    CHECK_FALSE(c->enabled());
    c->put(test_entry(1));
    CHECK_FALSE(c->get(test_key(1)).has_value());
    CHECK(w.count() == 0);
    CHECK_FALSE(fs::exists(tmp / "kernels.sqlite"));
  }
  {
    EnvVar a("MXJIT_CACHE", "1");
    CHECK_FALSE(DiskCache::disabled_by_env());
    TempDir tmp;
    EnvVar d("MXJIT_CACHE_DIR", tmp.path().string());
    auto c = DiskCache::open_default();
    CHECK(c->enabled());
    CHECK(c->file() == tmp / "kernels.sqlite");
  }
  {
    EnvVar a("MXJIT_CACHE", std::nullopt);
    CHECK_FALSE(DiskCache::disabled_by_env());
  }
}
